//===- HyperOps.cpp - Hyper stream op verifiers ---------------------------===//
//
// Verifiers of the hyper stream ops (HyperOps.td): the `[..., n, d]` layout,
// the coefficient shapes each op accepts, element types. Each message names
// the operand and gives the expected against the actual type.
//
//===----------------------------------------------------------------------===//
#include "dialects/residual/ResidualOps.h"

#include "rewire/Support/Shape.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using rewire::dimsAgree;
using namespace rewire::residual;

namespace {

/// The hyper stream operand's shape facts.
struct HyperInfo {
  RankedTensorType type;
  int64_t n = 0; ///< Streams (static).
  int64_t d = 0; ///< Features (may be dynamic).
  /// The shape without the stream axis (the state a branch reads).
  SmallVector<int64_t> stateShape;
  /// The shape without the feature axis (per-token, per-stream coefficients).
  SmallVector<int64_t> perStream;
};

bool shapesAgree(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto p) {
           return dimsAgree(std::get<0>(p), std::get<1>(p));
         });
}

std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleave(
      shape, os, [&](int64_t d) { ShapedType::isDynamic(d) ? os << "?" : os << d; }, ", ");
  os << "]";
  return s;
}

/// The feature axis of a hyper op must be the last one of operand 0.
LogicalResult verifyAxisLast(Operation *op) {
  int64_t rank = cast<RankedTensorType>(op->getOperand(0).getType()).getRank();
  int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
  if (auto iface = dyn_cast<StreamOpInterface>(op))
    axis = iface.getFeatureAxisIndex();
  else if (axis < 0) // hyper_write_grad: the axis of its stream operands
    axis += rank;
  if (axis != rank - 1)
    return op->emitOpError() << "a hyper stream needs the feature axis last (axis -1 or "
                             << rank - 1 << "), got axis "
                             << op->getAttrOfType<IntegerAttr>("axis").getInt();
  return success();
}

FailureOr<HyperInfo> verifyHyperStream(Operation *op, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() < 2)
    return op->emitOpError() << "hyper stream 'X' must be [..., n, d] (rank >= 2), got " << type;
  if (failed(verifyAxisLast(op)))
    return failure();
  HyperInfo info;
  info.type = type;
  ArrayRef<int64_t> shape = type.getShape();
  info.n = shape[shape.size() - 2];
  info.d = shape.back();
  if (ShapedType::isDynamic(info.n) || info.n < 1)
    return op->emitOpError() << "hyper stream 'X' : " << type
                             << " needs a static stream count n >= 1 (its second-to-last dimension)";
  info.stateShape.assign(shape.begin(), shape.end() - 2);
  info.stateShape.push_back(info.d);
  info.perStream.assign(shape.begin(), shape.end() - 1);
  return info;
}

LogicalResult verifySameElement(Operation *op, StringRef name, Value v, const HyperInfo &info) {
  Type elt = cast<RankedTensorType>(v.getType()).getElementType();
  if (elt != info.type.getElementType())
    return op->emitOpError() << "'" << name << "' element type " << elt
                             << " must match the hyper stream's " << info.type.getElementType();
  return success();
}

/// `v` is either `fixed` (shared by all tokens) or `perToken`.
LogicalResult verifyCoefficient(Operation *op, StringRef name, Value v, ArrayRef<int64_t> fixed,
                                ArrayRef<int64_t> perToken, const HyperInfo &info) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  if (!shapesAgree(shape, fixed) && !shapesAgree(shape, perToken))
    return op->emitOpError() << "'" << name << "' must be " << shapeText(fixed) << " or "
                             << shapeText(perToken) << " for the hyper stream " << info.type
                             << ", got " << v.getType();
  return verifySameElement(op, name, v, info);
}

/// `result` (named in the message when the op has several) is `expected`
/// of `elt`.
LogicalResult verifyResult(Operation *op, ArrayRef<int64_t> expected, Type elt,
                           Value result = {}, StringRef name = {}) {
  auto type = cast<RankedTensorType>((result ? result : op->getResult(0)).getType());
  if (!shapesAgree(type.getShape(), expected) || type.getElementType() != elt)
    return op->emitOpError() << "result " << (name.empty() ? "" : "'" + name.str() + "' ")
                             << "must be " << shapeText(expected) << " of " << elt << ", got "
                             << type;
  return success();
}

} // namespace

LogicalResult HyperExpandOp::verify() {
  auto h = cast<RankedTensorType>(getH().getType());
  if (failed(verifyAxisLast(*this)))
    return failure();
  auto x = cast<RankedTensorType>(getResult().getType());
  auto info = verifyHyperStream(*this, getResult());
  if (failed(info))
    return failure();
  SmallVector<int64_t> expected(h.getShape().drop_back());
  expected.push_back(info->n);
  expected.push_back(h.getShape().back());
  if (!shapesAgree(x.getShape(), expected) || x.getElementType() != h.getElementType())
    return emitOpError() << "result must be 'h' : " << h << " with a stream axis before its feature axis ("
                         << shapeText(expected) << "), got " << x;
  return success();
}

LogicalResult HyperCoeffsOp::verify() {
  auto info = verifyHyperStream(*this, getX());
  if (failed(info))
    return failure();
  auto alpha = cast<RankedTensorType>(getAlpha().getType());
  if (!(alpha.getRank() == 0 || (alpha.getRank() == 1 && alpha.getDimSize(0) == 1)))
    return emitOpError() << "'alpha' must be a scalar (tensor<T> or tensor<1xT>), got " << alpha;
  if (failed(verifySameElement(*this, "alpha", getAlpha(), *info)) ||
      failed(verifySameElement(*this, "weight", getWeight(), *info)) ||
      failed(verifySameElement(*this, "bias", getBias(), *info)))
    return failure();
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError() << "eps must be positive, got " << getEps().convertToDouble();
  bool sinkhorn = getMap() == HyperMap::sinkhorn;
  if (sinkhorn != getIters().has_value())
    return emitOpError() << (sinkhorn ? "map sinkhorn needs 'iters'"
                                      : "'iters' applies only to map sinkhorn");
  int64_t n = info->n, d = info->d;
  auto w = cast<RankedTensorType>(getWeight().getType());
  bool perStream = getMap() == HyperMap::tanh;
  int64_t in = perStream || ShapedType::isDynamic(d) ? d : n * d;
  // How many columns W may have, and whether each gives a [.., n, n] result.
  SmallVector<int64_t> columns =
      perStream ? SmallVector<int64_t>{1, n} : SmallVector<int64_t>{sinkhorn ? n * n : n};
  if (w.getRank() != 2 || !dimsAgree(w.getDimSize(0), in) ||
      !llvm::is_contained(columns, w.getDimSize(1)))
    return emitOpError() << "'weight' must be [" << (perStream ? "d" : "n * d") << ", "
                         << (perStream ? "1 or n" : sinkhorn ? "n * n" : "n") << "] = "
                         << shapeText({in, columns.back()}) << (perStream ? " or " : "")
                         << (perStream ? shapeText({in, 1}) : "") << " for map "
                         << stringifyHyperMap(getMap()) << ", got " << w;
  bool square = sinkhorn || (perStream && w.getDimSize(1) == n && n != 1);
  SmallVector<int64_t> bias = square ? SmallVector<int64_t>{n, n} : SmallVector<int64_t>{n};
  if (!shapesAgree(cast<RankedTensorType>(getBias().getType()).getShape(), bias))
    return emitOpError() << "'bias' must be " << shapeText(bias) << ", got " << getBias().getType();
  SmallVector<int64_t> result = info->perStream;
  if (square)
    result.push_back(n);
  return verifyResult(*this, result, info->type.getElementType());
}

LogicalResult HyperReadOp::verify() {
  auto info = verifyHyperStream(*this, getX());
  if (failed(info))
    return failure();
  if (failed(verifyCoefficient(*this, "pre", getPre(), {info->n}, info->perStream, *info)))
    return failure();
  return verifyResult(*this, info->stateShape, info->type.getElementType());
}

LogicalResult HyperWriteOp::verify() {
  auto info = verifyHyperStream(*this, getX());
  if (failed(info))
    return failure();
  auto u = cast<RankedTensorType>(getU().getType());
  if (!shapesAgree(u.getShape(), info->stateShape) || u.getElementType() != info->type.getElementType())
    return emitOpError() << "'u' must be the hyper stream " << info->type << " without its stream axis ("
                         << shapeText(info->stateShape) << "), got " << u;
  SmallVector<int64_t> resPerToken = info->perStream;
  resPerToken.push_back(info->n);
  if (failed(verifyCoefficient(*this, "post", getPost(), {info->n}, info->perStream, *info)) ||
      failed(verifyCoefficient(*this, "res", getRes(), {info->n, info->n}, resPerToken, *info)))
    return failure();
  return success();
}

LogicalResult HyperReduceOp::verify() {
  auto info = verifyHyperStream(*this, getX());
  if (failed(info))
    return failure();
  return verifyResult(*this, info->stateShape, info->type.getElementType());
}

LogicalResult HyperWriteGradOp::verify() {
  auto info = verifyHyperStream(*this, getX());
  if (failed(info))
    return failure();
  if (getG().getType() != getX().getType())
    return emitOpError() << "'g' (the adjoint of the write's result) must have the type of 'X', "
                         << info->type << ", got " << getG().getType();
  if (!info->type.hasStaticShape())
    return emitOpError() << "needs static shapes, got 'X' : " << info->type;
  auto u = cast<RankedTensorType>(getU().getType());
  if (!shapesAgree(u.getShape(), info->stateShape) || u.getElementType() != info->type.getElementType())
    return emitOpError() << "'u' must be the hyper stream " << info->type << " without its stream axis ("
                         << shapeText(info->stateShape) << "), got " << u;
  if (failed(verifyCoefficient(*this, "post", getPost(), {info->n}, info->perStream, *info)))
    return failure();
  SmallVector<int64_t> resShape = info->perStream;
  resShape.push_back(info->n);
  Type elt = info->type.getElementType();
  return failure(failed(verifyResult(*this, info->stateShape, elt, getDu(), "du")) ||
                 failed(verifyResult(*this, info->perStream, elt, getDpost(), "dpost")) ||
                 failed(verifyResult(*this, resShape, elt, getDres(), "dres")));
}

LogicalResult HyperProjectGradOp::verify() {
  auto x = cast<RankedTensorType>(getX().getType());
  if (!x.hasStaticShape() || x.getRank() < 2)
    return emitOpError() << "'X' must be a static hyper stream [..., n, d], got " << x;
  ArrayRef<int64_t> shape = x.getShape();
  int64_t n = shape[shape.size() - 2], d = shape.back();
  auto w = cast<RankedTensorType>(getW().getType());
  if (w.getRank() != 2 || !w.hasStaticShape() || w.getDimSize(0) != n * d)
    return emitOpError() << "'W' must be [n * d, k] = [" << n * d << ", k], got " << w;
  int64_t k = w.getDimSize(1);
  Type elt = x.getElementType();
  SmallVector<int64_t> perToken(shape.drop_back(2));
  perToken.push_back(k);
  SmallVector<int64_t> scale(shape.drop_back(2));
  scale.push_back(1);
  auto expect = [&](Value v, StringRef name, ArrayRef<int64_t> want) -> LogicalResult {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getShape() != want || t.getElementType() != elt)
      return emitOpError() << "'" << name << "' must be " << RankedTensorType::get(want, elt)
                           << ", got " << t;
    return success();
  };
  if (failed(expect(getDz(), "dz", perToken)) || failed(expect(getP(), "p", perToken)) ||
      failed(expect(getR(), "r", scale)))
    return failure();
  if (w.getElementType() != elt)
    return emitOpError() << "'W' must have 'X''s element type " << elt << ", got " << w;
  if (getDX().getType() != x || getDW().getType() != w)
    return emitOpError() << "results must have the types of 'X' and 'W' (" << x << ", " << w
                         << "), got " << getDX().getType() << ", " << getDW().getType();
  return success();
}
