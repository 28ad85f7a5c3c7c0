//===- NNOps.cpp - nn op verifiers and folders ----------------------------===//
//
// Verifiers of the nn ops whose constraints are not a shape function
// (normalizations, reshape, cast) and their folders. Shape inference is in
// NNShapes.cpp.
//
//===----------------------------------------------------------------------===//
#include "dialects/nn/NNOps.h"

#include "rewire/Support/Shape.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::nn;

static LogicalResult verifyEpsilon(Operation *op, APFloat eps) {
  double e = eps.convertToDouble();
  if (!(e > 0.0) || !std::isfinite(e))
    return op->emitOpError() << "'epsilon' must be positive and finite, got "
                             << e;
  return success();
}

/// Checks that `param` (named `name`) has the shape of x's dimensions from
/// `axis` on, as LayerNormalization's scale and bias do.
static LogicalResult verifyNormParam(Operation *op, StringRef name, Value x,
                                     Value param, int64_t axis) {
  auto xt = cast<RankedTensorType>(x.getType());
  auto pt = cast<RankedTensorType>(param.getType());
  auto norm = normalizeAxis(axis, xt.getRank());
  if (!norm)
    return op->emitOpError() << "axis " << axis
                             << " is out of range for 'x' of rank "
                             << xt.getRank();
  ArrayRef<int64_t> want = xt.getShape().drop_front(*norm);
  bool ok = pt.getRank() == static_cast<int64_t>(want.size()) &&
            llvm::all_of(llvm::zip(pt.getShape(), want), [](auto p) {
              return dimsAgree(std::get<0>(p), std::get<1>(p));
            });
  if (!ok)
    return op->emitOpError()
           << "'" << name << "' must have the shape of the normalized "
           << "dimensions of 'x' (from axis " << *norm << "), got " << pt;
  if (pt.getElementType() != xt.getElementType())
    return op->emitOpError() << "'" << name << "' must have element type "
                             << xt.getElementType();
  return success();
}

LogicalResult ArgReduceOp::verify() {
  auto in = cast<RankedTensorType>(getX().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t axis = getAxis(), rank = in.getRank();
  if (axis < 0 || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for rank " << rank
                         << " (normalized, in [0, rank))";
  SmallVector<int64_t> want;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis)
      want.push_back(in.getDimSize(d));
    else if (getKeepdims())
      want.push_back(1);
  }
  if (out.getShape() != ArrayRef<int64_t>(want))
    return emitOpError() << "result type " << out << " does not match the reduced input "
                         << in;
  return success();
}

LogicalResult CumSumOp::verify() {
  auto type = cast<RankedTensorType>(getX().getType());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= type.getRank())
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << type.getRank() << " (normalized, in [0, rank))";
  Type elt = type.getElementType();
  if (!isa<FloatType>(elt) && !(elt.isSignlessInteger() && !elt.isInteger(1)))
    return emitOpError() << "expects a float or integer tensor, got " << type;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getX().getType().getRank();
  if (!normalizeAxis(static_cast<int64_t>(getAxis()), rank))
    return emitOpError() << "axis " << static_cast<int64_t>(getAxis())
                         << " is out of range for rank " << rank;
  return success();
}

/// The operand of nn.sinkhorn(_grad): square matrices in the last two axes.
static LogicalResult verifySinkhornOperand(Operation *op, RankedTensorType t) {
  if (t.getRank() < 2)
    return op->emitOpError() << "expects matrices in the last two axes, got rank " << t.getRank();
  int64_t r = t.getDimSize(t.getRank() - 2), c = t.getDimSize(t.getRank() - 1);
  if (!ShapedType::isDynamic(r) && !ShapedType::isDynamic(c) && r != c)
    return op->emitOpError() << "expects square matrices, got " << r << "x" << c;
  return success();
}

LogicalResult SinkhornOp::verify() { return verifySinkhornOperand(*this, getZ().getType()); }

LogicalResult SinkhornGradOp::verify() { return verifySinkhornOperand(*this, getZ().getType()); }

LogicalResult LayerNormOp::verify() {
  int64_t axis = static_cast<int64_t>(getAxis());
  if (failed(verifyNormParam(*this, "scale", getX(), getScale(), axis)))
    return failure();
  if (getBias() &&
      failed(verifyNormParam(*this, "bias", getX(), getBias(), axis)))
    return failure();
  return verifyEpsilon(*this, getEpsilon());
}

LogicalResult RMSNormOp::verify() {
  int64_t axis = static_cast<int64_t>(getAxis());
  if (failed(verifyNormParam(*this, "scale", getX(), getScale(), axis)))
    return failure();
  return verifyEpsilon(*this, getEpsilon());
}

LogicalResult BatchNormOp::verify() {
  auto x = getX().getType();
  if (x.getRank() < 2)
    return emitOpError() << "'x' must be [N, C, ...] with rank >= 2, got "
                         << x;
  auto p = getScale().getType();
  if (p.getRank() != 1 || !dimsAgree(p.getDimSize(0), x.getDimSize(1)) ||
      p.getElementType() != x.getElementType())
    return emitOpError() << "'scale', 'bias', 'mean' and 'var' must be "
                            "vectors of C = "
                         << x.getDimSize(1) << " elements of "
                         << x.getElementType() << ", got " << p;
  float m = getMomentum().convertToFloat();
  if (!(m >= 0.0f && m <= 1.0f))
    return emitOpError() << "'momentum' must be in [0, 1], got " << m;
  return verifyEpsilon(*this, getEpsilon());
}

LogicalResult ReshapeOp::verify() {
  auto in = getX().getType();
  auto out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "result element type " << out.getElementType()
                         << " must match the operand's, "
                         << in.getElementType();
  if (out.getNumDynamicDims() > 1)
    return emitOpError() << "result may have at most one dynamic dimension, "
                            "got "
                         << out;
  std::vector<int64_t> a(in.getShape().begin(), in.getShape().end());
  std::vector<int64_t> b(out.getShape().begin(), out.getShape().end());
  auto na = checkedNumElements(a), nb = checkedNumElements(b);
  if (in.hasStaticShape() && !na)
    return emitOpError() << "operand element count overflows";
  if (out.hasStaticShape() && !nb)
    return emitOpError() << "result element count overflows";
  if (na && nb && *na != *nb)
    return emitOpError() << "cannot reshape " << *na << " elements ("
                         << in << ") into " << *nb << " (" << out << ")";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getX().getType() == getResult().getType())
    return getX();
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getX().getType() == getResult().getType())
    return getX();
  return {};
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult BitcastOp::verify() {
  Type from = getElementTypeOrSelf(getX().getType()), to = getElementTypeOrSelf(getType());
  auto width = [](Type t) -> unsigned {
    if (t.isInteger(1))
      return 8; // ONNX stores a bool in a byte
    return t.isIntOrFloat() ? t.getIntOrFloatBitWidth() : 0;
  };
  if (!width(from) || width(from) != width(to))
    return emitOpError() << "reinterprets " << from << " as " << to
                         << "; both must be integer or float types of one bit width";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/nn/NNOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

namespace rewire::nn {

LogicalResult ScatterAddOp::verify() {
  auto u = cast<RankedTensorType>(getUpdates().getType());
  auto i = cast<RankedTensorType>(getIndices().getType());
  auto r = cast<RankedTensorType>(getResult().getType());
  if (r.getRank() < 1)
    return emitOpError() << "result must have rank >= 1, got " << r;
  if (u.getElementType() != r.getElementType())
    return emitOpError() << "'updates' and the result must have the same element type";
  if (Value base = getBase(); base && base.getType() != r)
    return emitOpError() << "'base' must have the result type " << r << ", got " << base.getType();
  SmallVector<int64_t> want(i.getShape());
  want.append(r.getShape().begin() + 1, r.getShape().end());
  bool ok = u.getRank() == static_cast<int64_t>(want.size()) &&
            llvm::all_of(llvm::zip(u.getShape(), want), [](auto p) {
              return dimsAgree(std::get<0>(p), std::get<1>(p));
            });
  if (!ok)
    return emitOpError() << "'updates' must have shape indices.shape + result.shape[1:], got "
                         << u << " for indices " << i << " and result " << r;
  return success();
}

/// logits [..., C] and labels [...] agree on the leading dimensions.
static LogicalResult verifyRows(Operation *op, Value logits, Value labels) {
  auto l = cast<RankedTensorType>(logits.getType());
  auto y = cast<RankedTensorType>(labels.getType());
  if (l.getRank() < 1 || y.getRank() != l.getRank() - 1 ||
      !llvm::all_of(llvm::zip(y.getShape(), l.getShape().drop_back()),
                    [](auto p) { return dimsAgree(std::get<0>(p), std::get<1>(p)); }))
    return op->emitOpError() << "'labels' must have the shape of 'logits' without its last "
                             << "(class) dimension, got " << y << " for " << l;
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyRows(*this, getLogits(), getLabels())))
    return failure();
  auto r = cast<RankedTensorType>(getResult().getType());
  if (r.getRank() != 0 || r.getElementType() != getLogits().getType().getElementType())
    return emitOpError() << "result must be a 0-d tensor of the logits' element type, got " << r;
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyRows(*this, getLogits(), getLabels())))
    return failure();
  auto g = cast<RankedTensorType>(getGrad().getType());
  if (g.getRank() != 0)
    return emitOpError() << "'grad' must be a 0-d tensor, got " << g;
  if (getResult().getType() != getLogits().getType())
    return emitOpError() << "result must have the logits' type";
  return success();
}

} // namespace rewire::nn
