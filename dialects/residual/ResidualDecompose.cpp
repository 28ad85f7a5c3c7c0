//===- ResidualDecompose.cpp - Residual forms in nn ops -------------------===//
//
// StreamOpInterface::decompose of every stream op: the one definition of
// each form's arithmetic (docs/papers.md), term by term. Differentiation,
// the ONNX export and the instrumentation build on these; the fused
// linalg lowering computes the same values (decompose-parity tests).
//
//===----------------------------------------------------------------------===//
#include "dialects/residual/ResidualDecompose.h"

#include "dialects/nn/NNDecompose.h"
#include "dialects/nn/NNOps.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::residual;

namespace {

int64_t lastAxis(Value x) { return cast<RankedTensorType>(x.getType()).getRank() - 1; }

/// `body` on `v` with the op's feature axis moved last: the gated and NAG
/// forms normalize rows over the last axis, so the stream-shaped operands
/// (those of the state's rank) are transposed there and the result back.
template <class Body>
Value onFeatureAxisLast(ImplicitLocOpBuilder &b, Operation *op, ValueRange v, Body body) {
  int64_t rank = cast<RankedTensorType>(op->getOperand(0).getType()).getRank();
  int64_t axis = cast<StreamOpInterface>(op).getFeatureAxisIndex();
  if (axis == rank - 1)
    return body(v);
  SmallVector<int64_t> perm, inverse;
  featureAxisLastPermutation(rank, axis, perm, inverse);
  auto permute = [&](Value x, ArrayRef<int64_t> p) -> Value {
    auto t = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape;
    for (int64_t d : p)
      shape.push_back(t.getDimSize(d));
    return nn::TransposeOp::create(b, RankedTensorType::get(shape, t.getElementType()), x,
                                   b.getDenseI64ArrayAttr(p));
  };
  SmallVector<Value> moved;
  for (Value x : v)
    moved.push_back(cast<RankedTensorType>(x.getType()).getRank() == rank ? permute(x, perm) : x);
  return permute(body(moved), inverse);
}

/// rho = sqrt(mean_d(R^2)) per row (keepdims) and Rbar = R / rho.
std::pair<Value, Value> normalizeRows(ImplicitLocOpBuilder &b, Value r) {
  Value rho = nn::SqrtOp::create(b, nn::ReduceMeanOp::create(b, nn::MulOp::create(b, r, r),
                                                             b.getDenseI64ArrayAttr({lastAxis(r)}),
                                                             b.getBoolAttr(true)));
  return {rho, nn::DivOp::create(b, r, rho)};
}

Value sumLast(ImplicitLocOpBuilder &b, Value x) {
  return nn::ReduceSumOp::create(b, x, b.getDenseI64ArrayAttr({lastAxis(x)}), b.getBoolAttr(true));
}

} // namespace

Value residual::rmsNormalize(ImplicitLocOpBuilder &b, Value x, double eps) {
  auto t = cast<RankedTensorType>(x.getType());
  Value ms = nn::ReduceMeanOp::create(b, nn::MulOp::create(b, x, x),
                                      b.getDenseI64ArrayAttr({lastAxis(x)}), b.getBoolAttr(true));
  Value s = nn::SqrtOp::create(b, nn::AddOp::create(b, ms, nn::scalar(b, t.getElementType(), eps)));
  return nn::DivOp::create(b, x, s);
}

Value residual::rmsScale(ImplicitLocOpBuilder &b, Value x, double eps) {
  Type elt = cast<RankedTensorType>(x.getType()).getElementType();
  Value ms = nn::ReduceMeanOp::create(b, nn::MulOp::create(b, x, x),
                                      b.getDenseI64ArrayAttr({lastAxis(x)}), b.getBoolAttr(true));
  return nn::DivOp::create(b, nn::scalar(b, elt, 1.0),
                           nn::SqrtOp::create(b, nn::AddOp::create(b, ms, nn::scalar(b, elt, eps))));
}

void residual::featureAxisLastPermutation(int64_t rank, int64_t axis,
                                          SmallVectorImpl<int64_t> &perm,
                                          SmallVectorImpl<int64_t> &inverse) {
  perm.clear();
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis)
      perm.push_back(i);
  perm.push_back(axis);
  inverse.assign(rank, 0);
  for (int64_t i = 0; i < rank; ++i)
    inverse[perm[i]] = i;
}

ArrayRef<std::string> residual::unfusedStreamOps() {
  static const std::string names[] = {LaurelOp::getOperationName().str(),
                                      HyperCoeffsOp::getOperationName().str(),
                                      ValueMixOp::getOperationName().str(),
                                      HyperWriteGradOp::getOperationName().str(),
                                      HyperProjectGradOp::getOperationName().str()};
  return names;
}

namespace {

/// Replaces each `OpT` under `root` that `named` admits by the values
/// `decompose` builds for its results (before it, in order).
template <typename OpT>
LogicalResult decomposeEach(
    Operation *root, function_ref<bool(Operation *)> named,
    function_ref<FailureOr<SmallVector<Value, 3>>(ImplicitLocOpBuilder &, OpT)> decompose) {
  SmallVector<OpT> ops;
  root->walk([&](OpT op) {
    if (named(op))
      ops.push_back(op);
  });
  for (OpT op : ops) {
    ImplicitLocOpBuilder b(op->getLoc(), op);
    FailureOr<SmallVector<Value, 3>> values = decompose(b, op);
    if (failed(values))
      return failure();
    op->replaceAllUsesWith(ValueRange(*values));
    op->erase();
  }
  return success();
}

} // namespace

LogicalResult residual::decomposeStreamOps(Operation *root, ArrayRef<std::string> names) {
  auto named = [&](Operation *op) {
    return names.empty() || llvm::is_contained(names, op->getName().getStringRef());
  };
  // The reverse rules' op first: its decomposition writes a hyper_read,
  // which a whole decomposition then decomposes too.
  if (failed(decomposeEach<HyperWriteGradOp>(
          root, named,
          [](ImplicitLocOpBuilder &b, HyperWriteGradOp op) -> FailureOr<SmallVector<Value, 3>> {
            SmallVector<Value, 3> values = decomposeHyperWriteGrad(b, op);
            for (auto [result, value] : llvm::zip(op->getResults(), values))
              if (result.getType() != value.getType())
                return op->emitOpError("internal error: the decomposition's type ")
                       << value.getType() << " for " << result.getType();
            return values;
          })))
    return failure();
  if (failed(decomposeEach<HyperProjectGradOp>(
          root, named,
          [](ImplicitLocOpBuilder &b, HyperProjectGradOp op) -> FailureOr<SmallVector<Value, 3>> {
            auto [dx, dw] = decomposeHyperProjectGrad(b, op);
            if (dx.getType() != op.getDX().getType() || dw.getType() != op.getDW().getType())
              return op->emitOpError("internal error: the decomposition's types ")
                     << dx.getType() << ", " << dw.getType();
            return SmallVector<Value, 3>{dx, dw};
          })))
    return failure();
  return decomposeEach<StreamOpInterface>(
      root, named,
      [](ImplicitLocOpBuilder &b, StreamOpInterface op) -> FailureOr<SmallVector<Value, 3>> {
        FailureOr<Value> value = op.decompose(b, op->getOperands());
        if (failed(value))
          return failure();
        return SmallVector<Value, 3>{*value};
      });
}

Value residual::buildGate(ImplicitLocOpBuilder &b, GatedAddOp op, Value h, Value u, Value w,
                          Value bias) {
  int64_t d = cast<RankedTensorType>(h.getType()).getShape().back();
  Value z;
  if (op.getGate() == GateKind::review) {
    // concat[rms(h), rms(u)] W = rms(h) W[:d] + rms(u) W[d:].
    double eps = op.getEpsOrDefault();
    auto wt = cast<RankedTensorType>(w.getType());
    auto halfType = RankedTensorType::get({d, wt.getDimSize(1)}, wt.getElementType());
    auto halves = nn::SplitOp::create(b, TypeRange{halfType, halfType}, w, b.getI64IntegerAttr(0),
                                      b.getDenseI64ArrayAttr({d, d}));
    z = nn::AddOp::create(b, nn::MatMulOp::create(b, rmsNormalize(b, h, eps), halves.getResult(0)),
                          nn::MatMulOp::create(b, rmsNormalize(b, u, eps), halves.getResult(1)));
  } else {
    z = nn::MatMulOp::create(b, h, w);
  }
  return nn::SigmoidOp::create(b, nn::AddOp::create(b, z, bias));
}

/// h + u.
FailureOr<Value> AddOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  return Value(nn::AddOp::create(b, v[0], v[1]));
}

/// h itself (a tap only names the state for readouts).
FailureOr<Value> TapOp::decompose(ImplicitLocOpBuilder &, ValueRange v) { return v[0]; }

/// h + alpha (.) u, alpha a scalar or one per channel of the feature axis.
FailureOr<Value> ScaleAddOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  Value alpha = v[2];
  auto at = cast<RankedTensorType>(alpha.getType());
  int64_t rank = cast<RankedTensorType>(v[0].getType()).getRank();
  int64_t axis = cast<StreamOpInterface>(getOperation()).getFeatureAxisIndex();
  if (at.getRank() == 1 && at.getDimSize(0) != 1 && axis != rank - 1) {
    // [C] -> [C, 1, ..., 1]: broadcast along the feature axis.
    SmallVector<int64_t> shape = {at.getDimSize(0)};
    shape.append(rank - 1 - axis, 1);
    alpha = nn::ReshapeOp::create(b, RankedTensorType::get(shape, at.getElementType()), alpha);
  }
  return Value(nn::AddOp::create(b, v[0], nn::MulOp::create(b, alpha, v[1])));
}

/// alpha u + beta h (+ (h A) B).
FailureOr<Value> LaurelOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  Value out =
      nn::AddOp::create(b, nn::MulOp::create(b, v[2], v[1]), nn::MulOp::create(b, v[3], v[0]));
  if (getA())
    out = nn::AddOp::create(b, out,
                            nn::MatMulOp::create(b, nn::MatMulOp::create(b, v[0], v[4]), v[5]));
  return out;
}

/// lambda1 v_1 + lambda2 v.
FailureOr<Value> ValueMixOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  return Value(
      nn::AddOp::create(b, nn::MulOp::create(b, v[2], v[1]), nn::MulOp::create(b, v[3], v[0])));
}

/// h + r u (additive) or h + r (u - h) (convex), r the gate.
FailureOr<Value> GatedAddOp::decompose(ImplicitLocOpBuilder &b, ValueRange operands) {
  return onFeatureAxisLast(b, *this, operands, [&](ValueRange v) -> Value {
    Value h = v[0], u = v[1];
    Value r = buildGate(b, *this, h, u, v[2], v[3]);
    Value delta = getCombine() == Combine::convex ? nn::SubOp::create(b, u, h).getResult() : u;
    return nn::AddOp::create(b, h, nn::MulOp::create(b, r, delta));
  });
}

/// ANCRe: y + sum_j softmax(c / tau)_j x_j; DenseFormer: c_k y + sum_j c_j x_j;
/// LAuReL-PA: y + sum_j c_j x_j.
FailureOr<Value> MixOp::decompose(ImplicitLocOpBuilder &b, ValueRange v) {
  bool softmax = getWeightsKind() == MixWeights::softmax;
  bool free = getWeightsKind() == MixWeights::free;
  double tau = getTau() ? getTau()->convertToDouble() : 1.0;
  size_t k = getStates().size();
  Value y = v[0], c = v.back();
  auto ct = cast<RankedTensorType>(c.getType());
  Type elt = ct.getElementType();
  Value p = softmax ? nn::SoftmaxOp::create(b, nn::MulOp::create(b, c, nn::scalar(b, elt, 1.0 / tau)),
                                            b.getI64IntegerAttr(-1))
                          .getResult()
                    : c;
  int64_t n = ct.getDimSize(0);
  auto one = RankedTensorType::get({1}, elt);
  auto parts = nn::SplitOp::create(b, SmallVector<Type>(n, one), p, b.getI64IntegerAttr(0),
                                   b.getDenseI64ArrayAttr(SmallVector<int64_t>(n, 1)));
  auto weight = [&](size_t j) {
    return nn::ReshapeOp::create(b, RankedTensorType::get({}, elt), parts.getResult(j)).getResult();
  };
  Value acc = free ? nn::MulOp::create(b, y, weight(k)).getResult() : y;
  for (size_t j = 0; j < k; ++j)
    acc = nn::AddOp::create(b, acc, nn::MulOp::create(b, v[1 + j], weight(j)));
  return acc;
}

/// NAG's modulator m = (sum_c softmax(pi)_c sigmoid(Rbar w_c + b_c))^beta.
FailureOr<Value> NagGateOp::decompose(ImplicitLocOpBuilder &b, ValueRange operands) {
  double beta = getBeta().convertToDouble();
  return onFeatureAxisLast(b, *this, operands, [&](ValueRange v) -> Value {
    Value rbar = normalizeRows(b, v[0]).second;
    Value s = nn::SigmoidOp::create(b, nn::AddOp::create(b, nn::MatMulOp::create(b, rbar, v[1]), v[2]));
    Value p = nn::SoftmaxOp::create(b, v[3], b.getI64IntegerAttr(-1));
    Value m = sumLast(b, nn::MulOp::create(b, s, p));
    if (beta != 1.0) {
      Type elt = cast<RankedTensorType>(m.getType()).getElementType();
      m = nn::PowOp::create(b, m, nn::scalar(b, elt, beta));
    }
    return m;
  });
}

/// NAG's update R + rho a m sqrt(d) fperp / max(||fperp||, eps), with f
/// centred and its component along Rbar removed.
FailureOr<Value> NagAddOp::decompose(ImplicitLocOpBuilder &b, ValueRange operands) {
  double eps = getEps().convertToDouble();
  return onFeatureAxisLast(b, *this, operands, [&](ValueRange v) -> Value {
    auto rt = cast<RankedTensorType>(v[0].getType());
    int64_t last = rt.getRank() - 1;
    double d = static_cast<double>(rt.getShape().back());
    Type elt = rt.getElementType();
    Value r = v[0], f = v[1], a = v[2], m = v[3];
    auto [rho, rbar] = normalizeRows(b, r);
    Value mean = nn::ReduceMeanOp::create(b, f, b.getDenseI64ArrayAttr({last}), b.getBoolAttr(true));
    Value fc = nn::SubOp::create(b, f, mean);
    Value along = nn::MulOp::create(
        b,
        nn::MulOp::create(b, sumLast(b, nn::MulOp::create(b, fc, rbar)), nn::scalar(b, elt, 1.0 / d)),
        rbar);
    Value fp = nn::SubOp::create(b, fc, along);
    Value norm = nn::SqrtOp::create(b, sumLast(b, nn::MulOp::create(b, fp, fp)));
    // max(norm, eps) as [relu(norm - eps) != 0] ? norm : eps, whose gradient
    // is exactly 0 or 1.
    auto nt = cast<RankedTensorType>(norm.getType());
    Value above = nn::CastOp::create(
        b, RankedTensorType::get(nt.getShape(), b.getI1Type()),
        nn::ReluOp::create(b, nn::SubOp::create(b, norm, nn::scalar(b, elt, eps))));
    Value safe = nn::WhereOp::create(b, above, norm, nn::splat(b, nt, eps));
    Value u = nn::DivOp::create(b, nn::MulOp::create(b, fp, nn::scalar(b, elt, std::sqrt(d))), safe);
    Value scale = nn::MulOp::create(b, nn::MulOp::create(b, rho, a), m);
    return nn::AddOp::create(b, r, nn::MulOp::create(b, scale, u));
  });
}
