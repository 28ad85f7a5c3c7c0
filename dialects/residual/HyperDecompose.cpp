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

/// `x` with its last two dimensions swapped.
Value transposeLastTwo(ImplicitLocOpBuilder &b, Value x) {
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rankOf(x); ++i)
    perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return nn::TransposeOp::create(b, x, b.getDenseI64ArrayAttr(perm));
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
  Value dres = nn::MatMulOp::create(b, g, transposeLastTwo(b, x));
  return {du, dpost, dres};
}

SmallVector<Value, 3> residual::decomposeHyperWriteGrad(ImplicitLocOpBuilder &b,
                                                        HyperWriteGradOp op) {
  return hyperWriteGradSums(b, op.getG(), op.getX(), op.getU(), op.getPost(),
                            op.getDu().getType(), op.getAxisAttr(), op.getStreamAttr(),
                            op.getLayerAttr());
}

std::pair<Value, Value> residual::hyperProjectGradSums(ImplicitLocOpBuilder &b, Value dz, Value p,
                                                       Value r, Value rows, Value stream,
                                                       Value w) {
  auto xt = typeOf(rows), wt = typeOf(w);
  Type elt = xt.getElementType();
  int64_t last = xt.getRank() - 1, features = xt.getDimSize(last);
  Value dp = nn::MulOp::create(b, dz, r);
  // r dz W^T: with one output column an outer product, elementwise.
  Value direct;
  if (wt.getDimSize(1) == 1)
    direct = nn::MulOp::create(
        b, dp, nn::ReshapeOp::create(b, RankedTensorType::get({features}, elt), w));
  else
    direct = nn::MatMulOp::create(b, dp, transposeLastTwo(b, w));
  Value dot = nn::ReduceSumOp::create(b, nn::MulOp::create(b, dz, p),
                                      b.getDenseI64ArrayAttr({last}), b.getBoolAttr(true));
  Value r3 = nn::MulOp::create(b, r, nn::MulOp::create(b, r, r));
  Value coef = nn::MulOp::create(
      b, dot, nn::MulOp::create(b, r3, nn::scalar(b, elt, -1.0 / static_cast<double>(features))));
  // mHC's rows are the token's n streams flattened, [.., n d]: the sum is
  // taken in the stream's own shape [.., n, d], reading the product through
  // a reshape (a view) and the stream itself, so it fuses with the stream's
  // other gradients (res^T g, pre g) into one pass instead of being written
  // flat and read back.
  Value dx;
  auto streamType = typeOf(stream);
  if (xt != streamType && streamType.hasStaticShape()) {
    SmallVector<int64_t> perToken(streamType.getShape());
    perToken[perToken.size() - 1] = perToken[perToken.size() - 2] = 1;
    Value coefs = reshape(b, coef, perToken);
    dx = nn::AddOp::create(b, nn::ReshapeOp::create(b, streamType, direct),
                           nn::MulOp::create(b, coefs, stream));
  } else {
    dx = nn::AddOp::create(b, direct, nn::MulOp::create(b, coef, rows));
    if (dx.getType() != streamType)
      dx = nn::ReshapeOp::create(b, streamType, dx);
  }
  // dW = rows^T (r dz), summed over the tokens: with static shapes one
  // [K, tokens] . [tokens, k] product.
  Value dw;
  if (xt.hasStaticShape() && typeOf(dp).hasStaticShape()) {
    int64_t tokens = 1;
    for (int64_t s : xt.getShape().drop_back())
      tokens *= s;
    Value flatRows = reshape(b, rows, {tokens, features});
    Value flatDp = reshape(b, dp, {tokens, wt.getDimSize(1)});
    dw = nn::MatMulOp::create(b, transposeLastTwo(b, flatRows), flatDp);
  } else {
    dw = nn::MatMulOp::create(b, transposeLastTwo(b, rows), dp);
    if (rankOf(dw) > 2) {
      SmallVector<int64_t> lead;
      for (int64_t i = 0; i + 2 < rankOf(dw); ++i)
        lead.push_back(i);
      dw = nn::ReduceSumOp::create(b, dw, b.getDenseI64ArrayAttr(lead), b.getBoolAttr(false));
    }
  }
  return {dx, dw};
}

std::pair<Value, Value> residual::decomposeHyperProjectGrad(ImplicitLocOpBuilder &b,
                                                            HyperProjectGradOp op) {
  auto xt = typeOf(op.getX());
  ArrayRef<int64_t> shape = xt.getShape();
  SmallVector<int64_t> flat(shape.drop_back(2));
  flat.push_back(shape[shape.size() - 2] * shape.back());
  return hyperProjectGradSums(b, op.getDz(), op.getP(), op.getR(), reshape(b, op.getX(), flat),
                              op.getX(), op.getW());
}

/// The mean over the stream axis.
FailureOr<Value> HyperReduceOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  return Value(nn::ReduceMeanOp::create(b, v[0], b.getDenseI64ArrayAttr({rankOf(v[0]) - 2}),
                                        b.getBoolAttr(false)));
}
