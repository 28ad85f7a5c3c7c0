//===- NodeExpr.h - nn expressions built by the ONNX handlers --*- C++ -*-===//
//
// The handlers that decompose an ONNX op into several nn ops (Mod, BitShift,
// the activations, the losses, LRN, the RNNs ...) write them as expressions:
// each builder returns a null Value once anything failed (the shape
// function's message is already emitted), so a handler checks once.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_LIB_IMPORT_NODEEXPR_H
#define REWIRE_LIB_IMPORT_NODEEXPR_H

#include "OnnxInternal.h"

#include "dialects/nn/NNOps.h"

namespace rewire::onnx_import {

using mlir::ArrayRef;
using mlir::Type;
using mlir::Value;
using mlir::RankedTensorType;

/// An nn op with inferred result type; null when an operand is null or
/// inference fails.
template <typename OpTy>
Value make(NodeContext &c, mlir::ValueRange operands,
           ArrayRef<mlir::NamedAttribute> attrs = {}) {
  if (llvm::any_of(operands, [](Value v) { return !v; }))
    return {};
  auto op = createInferred<OpTy>(c, operands, attrs);
  return mlir::succeeded(op) ? op->getResult() : Value();
}

/// Builds nn expressions at the node; any failure (already reported) turns
/// every later result null, checked once by the handler.
struct Expr {
  NodeContext &c;

  template <typename OpTy>
  Value bin(Value a, Value b) {
    return make<OpTy>(c, {a, b});
  }
  Value add(Value a, Value b) { return bin<nn::AddOp>(a, b); }
  Value sub(Value a, Value b) { return bin<nn::SubOp>(a, b); }
  Value mul(Value a, Value b) { return bin<nn::MulOp>(a, b); }
  Value div(Value a, Value b) { return bin<nn::DivOp>(a, b); }
  Value max(Value a, Value b) { return bin<nn::MaxOp>(a, b); }
  Value min(Value a, Value b) { return bin<nn::MinOp>(a, b); }
  template <typename OpTy>
  Value un(Value x) {
    return x ? OpTy::create(c.b, c.loc(), x).getResult() : Value();
  }
  Value pow(Value a, Value b) { return bin<nn::PowOp>(a, b); }
  Value cmp(nn::ComparePredicate p, Value a, Value b) {
    return make<nn::CompareOp>(
        c, {a, b}, {c.b.getNamedAttr("predicate", c.b.getAttr<nn::ComparePredicateAttr>(p))});
  }
  Value logical(nn::LogicalKind k, Value a, Value b) {
    return make<nn::LogicalOp>(
        c, {a, b}, {c.b.getNamedAttr("kind", c.b.getAttr<nn::LogicalKindAttr>(k))});
  }
  Value where(Value m, Value a, Value b) { return make<nn::WhereOp>(c, {m, a, b}); }
  /// `x` converted to element type `elt`.
  Value cast(Value x, Type elt) {
    if (!x)
      return {};
    return nn::CastOp::create(c.b, c.loc(), RankedTensorType::get(typeOf(x).getShape(), elt), x)
        .getResult();
  }
  /// A rank-0 constant `v` of `like`'s element type (null when `like` is).
  Value num(Value like, double v) {
    return like ? scalarConstant(c, typeOf(like).getElementType(), v) : Value();
  }
  template <typename OpTy>
  Value reduce(Value x, ArrayRef<int64_t> axes, bool keepdims = true) {
    return make<OpTy>(c, {x},
                      {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(axes)),
                       c.b.getNamedAttr("keepdims", c.b.getBoolAttr(keepdims))});
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (!x)
      return {};
    return nn::ReshapeOp::create(c.b, c.loc(),
                                 RankedTensorType::get(shape, typeOf(x).getElementType()), x)
        .getResult();
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return make<nn::TransposeOp>(c, {x},
                                 {c.b.getNamedAttr("perm", c.b.getDenseI64ArrayAttr(perm))});
  }
  /// x[begin:end] along `axis`.
  Value slice(Value x, int64_t axis, int64_t begin, int64_t end) {
    return make<nn::SliceOp>(c, {x},
                             {c.b.getNamedAttr("starts", c.b.getDenseI64ArrayAttr({begin})),
                              c.b.getNamedAttr("ends", c.b.getDenseI64ArrayAttr({end})),
                              c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({axis}))});
  }
  /// `x` without its size-1 dim `axis`.
  Value squeeze(Value x, int64_t axis) {
    return make<nn::SqueezeOp>(c, {x}, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({axis}))});
  }
  /// `x` with a size-1 dim inserted at `axis`.
  Value unsqueeze(Value x, int64_t axis) {
    return make<nn::UnsqueezeOp>(c, {x},
                                 {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({axis}))});
  }
  Value concat(mlir::ValueRange xs, int64_t axis) {
    if (xs.size() == 1)
      return xs[0];
    return make<nn::ConcatOp>(c, xs, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(axis))});
  }
  Value matmul(Value a, Value b) { return bin<nn::MatMulOp>(a, b); }
  /// softplus(x) = max(x, 0) + log(1 + exp(-|x|)), which does not overflow.
  Value softplus(Value x) {
    Value e = un<nn::ExpOp>(un<nn::NegOp>(un<nn::AbsOp>(x)));
    return add(max(x, num(x, 0.0)), un<nn::LogOp>(add(num(x, 1.0), e)));
  }
  mlir::FailureOr<llvm::SmallVector<Value>> done(Value y) {
    if (!y)
      return mlir::failure();
    return llvm::SmallVector<Value>{y};
  }
};

} // namespace rewire::onnx_import

#endif // REWIRE_LIB_IMPORT_NODEEXPR_H
