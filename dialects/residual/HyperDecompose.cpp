//===- HyperDecompose.cpp - Hyper stream ops in nn ops --------------------===//
//
// StreamOpInterface::decompose of the hyper stream ops (HyperOps.td): the
// one definition of Hyper-Connections' and mHC's arithmetic (papers.md 6.1,
// 6.2), which differentiation, the ONNX export and the CPU and CUDA
// pipelines use.
//
//===----------------------------------------------------------------------===//
#include "dialects/residual/ResidualDecompose.h"

#include "dialects/nn/NNDecompose.h"
#include "dialects/nn/NNOps.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::residual;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

int64_t rankOf(Value v) { return typeOf(v).getRank(); }

Value reshape(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> shape) {
  return nn::ReshapeOp::create(b, RankedTensorType::get(shape, typeOf(x).getElementType()), x);
}

Value unsqueezeLast(ImplicitLocOpBuilder &b, Value x) {
  return nn::UnsqueezeOp::create(b, x, b.getDenseI64ArrayAttr({rankOf(x)}));
}

Value sumOver(ImplicitLocOpBuilder &b, Value x, int64_t axis, bool keep) {
  return nn::ReduceSumOp::create(b, x, b.getDenseI64ArrayAttr({axis}), b.getBoolAttr(keep));
}


} // namespace

/// [..., d] -> [..., n, d]: n copies along a new stream axis.
FailureOr<Value> HyperExpandOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  int64_t n = getStreams();
  Value h = nn::UnsqueezeOp::create(b, v[0], b.getDenseI64ArrayAttr({rankOf(v[0]) - 1}));
  if (n == 1)
    return h;
  return Value(nn::ConcatOp::create(b, typeOf(getResult()), SmallVector<Value>(n, h),
                                    b.getI64IntegerAttr(rankOf(v[0]) - 1)));
}

/// The rows hyper_coeffs normalizes and projects: each stream's row of `X`
/// for `tanh`, each token's `n` streams flattened for the mHC maps.
Value residual::hyperCoeffsRows(ImplicitLocOpBuilder &b, HyperCoeffsOp op, Value x) {
  if (op.getMap() == HyperMap::tanh)
    return x;
  ArrayRef<int64_t> shape = typeOf(x).getShape();
  SmallVector<int64_t> flat(shape.drop_back(2));
  int64_t n = shape[shape.size() - 2], d = shape.back();
  flat.push_back(ShapedType::isDynamic(d) ? ShapedType::kDynamic : n * d);
  return reshape(b, x, flat);
}

/// HC: alpha tanh(z) + b, per stream; mHC: alpha z + b through sigmoid,
/// 2 sigmoid or Sinkhorn(exp(.)).
FailureOr<Value> residual::hyperCoeffsMap(ImplicitLocOpBuilder &b, HyperCoeffsOp op, Value z,
                                          Value alpha, Value bias) {
  auto rt = typeOf(op.getResult());
  Type elt = rt.getElementType();
  if (alpha.getType() != RankedTensorType::get({}, elt))
    alpha = reshape(b, alpha, {});
  if (op.getMap() == HyperMap::tanh) {
    // [..., n, k]; k = 1 drops the unit axis.
    if (typeOf(z).getShape() != rt.getShape())
      z = nn::SqueezeOp::create(b, rt, z, b.getDenseI64ArrayAttr({rankOf(z) - 1}));
    return Value(nn::AddOp::create(b, nn::MulOp::create(b, alpha, nn::TanhOp::create(b, z)), bias));
  }
  if (typeOf(z).getShape() != rt.getShape())
    z = reshape(b, z, rt.getShape()); // [..., n * n] -> [..., n, n]
  z = nn::AddOp::create(b, nn::MulOp::create(b, alpha, z), bias);
  switch (op.getMap()) {
  case HyperMap::sigmoid:
    return Value(nn::SigmoidOp::create(b, z));
  case HyperMap::double_sigmoid:
    return Value(nn::MulOp::create(b, nn::scalar(b, elt, 2.0), nn::SigmoidOp::create(b, z)));
  case HyperMap::sinkhorn:
    return Value(nn::SinkhornOp::create(b, z, b.getI64IntegerAttr(*op.getIters())));
  case HyperMap::tanh:
    break;
  }
  return op.emitOpError("unknown map");
}

/// The map of rms(rows) . W, computed as (rows . W) r: the normalized rows
/// are never written.
FailureOr<Value> HyperCoeffsOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  Value rows = hyperCoeffsRows(b, *this, v[0]);
  Value z = nn::MulOp::create(b, nn::MatMulOp::create(b, rows, v[2]),
                              rmsScale(b, rows, getEps().convertToDouble()));
  return hyperCoeffsMap(b, *this, z, v[1], v[3]);
}

/// sum_i pre_i X_i over the stream axis.
FailureOr<Value> HyperReadOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  Value weighted = nn::MulOp::create(b, unsqueezeLast(b, v[1]), v[0]);
  return sumOver(b, weighted, rankOf(v[0]) - 2, false);
}

/// res . X + post^T u.
FailureOr<Value> HyperWriteOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  Value x = v[0], u = v[1], post = v[2], res = v[3];
  Value mixed = nn::MatMulOp::create(b, res, x); // [.., n, n] . [.., n, d]
  Value added = nn::MulOp::create(
      b, unsqueezeLast(b, post),
      nn::UnsqueezeOp::create(b, u, b.getDenseI64ArrayAttr({rankOf(u) - 1})));
  Value out = nn::AddOp::create(b, mixed, added);
  if (out.getType() != x.getType()) // a static [n, n] res against dynamic batch dims
    return emitOpError("internal error: the decomposition's type ") << out.getType();
  return out;
}

SmallVector<Value, 3> residual::hyperWriteGradSums(ImplicitLocOpBuilder &b, Value g, Value x,
                                                   Value u, Value post, Type duType,
                                                   IntegerAttr axis, IntegerAttr stream,
                                                   IntegerAttr layer) {
  int64_t rank = rankOf(g);
  Value du = HyperReadOp::create(b, duType, g, post, axis, stream, layer);
  Value uRow = nn::UnsqueezeOp::create(b, u, b.getDenseI64ArrayAttr({rank - 2}));
  Value dpost = sumOver(b, nn::MulOp::create(b, g, uRow), rank - 1, false);
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  Value xT = nn::TransposeOp::create(b, x, b.getDenseI64ArrayAttr(perm));
  Value dres = nn::MatMulOp::create(b, g, xT);
  return {du, dpost, dres};
}

SmallVector<Value, 3> residual::decomposeHyperWriteGrad(ImplicitLocOpBuilder &b,
                                                        HyperWriteGradOp op) {
  return hyperWriteGradSums(b, op.getG(), op.getX(), op.getU(), op.getPost(),
                            op.getDu().getType(), op.getAxisAttr(), op.getStreamAttr(),
                            op.getLayerAttr());
}

/// The mean over the stream axis.
FailureOr<Value> HyperReduceOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  return Value(nn::ReduceMeanOp::create(b, v[0], b.getDenseI64ArrayAttr({rankOf(v[0]) - 2}),
                                        b.getBoolAttr(false)));
}
