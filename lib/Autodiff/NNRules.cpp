//===- NNRules.cpp - Reverse rules of the nn ops --------------------------===//
//
// Vector-Jacobian products of the nn ops, built from nn ops (so backward IR
// lowers, fuses and exports like forward IR). Broadcast operands get their
// gradient summed back to their shape (sumToShape). Convolution, pooling and
// batch normalization are in NNConvRules.cpp. nn.attention's rule is
// nn.attention_grad (weights computed again, no [Tq, Tk] tensor kept); a
// bias gets its gradient from the attention expanded in nn ops, which is
// dead, and erased, when the bias depends on no differentiated value. Ops
// without a rule (scatter_add) make rewire-autodiff stop with an error
// naming the op.
//
//===----------------------------------------------------------------------===//
#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNDialect.h"
#include "dialects/nn/NNOps.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::autodiff;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }
Type eltOf(Value v) { return typeOf(v).getElementType(); }

Value mul(ImplicitLocOpBuilder &b, Value x, Value y) { return nn::MulOp::create(b, x, y); }
Value add(ImplicitLocOpBuilder &b, Value x, Value y) { return nn::AddOp::create(b, x, y); }
Value sub(ImplicitLocOpBuilder &b, Value x, Value y) { return nn::SubOp::create(b, x, y); }
Value div(ImplicitLocOpBuilder &b, Value x, Value y) { return nn::DivOp::create(b, x, y); }
Value neg(ImplicitLocOpBuilder &b, Value x) { return nn::NegOp::create(b, x); }
Value num(ImplicitLocOpBuilder &b, Value like, double v) { return scalar(b, eltOf(like), v); }

/// Axes [from, rank) of a normalization with (possibly negative) `axis`.
SmallVector<int64_t> trailingAxes(int64_t axis, int64_t rank) {
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

Value meanKeep(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> axes) {
  return nn::ReduceMeanOp::create(b, x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true));
}

Value sumKeep(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> axes) {
  return nn::ReduceSumOp::create(b, x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true));
}

template <typename Derived, typename Op>
struct Rule : ReverseModeOpInterface::ExternalModel<Derived, Op> {};

#define RULE(NAME, OP)                                                                       \
  struct NAME : Rule<NAME, OP> {                                                             \
    LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g, \
                                SmallVectorImpl<Value> &out) const {                         \
      auto op = cast<OP>(raw);                                                               \
      (void)op;

#define END_RULE                                                                             \
  return success();                                                                          \
  }                                                                                          \
  };

RULE(AddRule, nn::AddOp)
  out.push_back(sumToShape(b, g[0], typeOf(op.getLhs())));
  out.push_back(sumToShape(b, g[0], typeOf(op.getRhs())));
END_RULE

RULE(SubRule, nn::SubOp)
  out.push_back(sumToShape(b, g[0], typeOf(op.getLhs())));
  out.push_back(sumToShape(b, neg(b, g[0]), typeOf(op.getRhs())));
END_RULE

RULE(MulRule, nn::MulOp)
  out.push_back(sumToShape(b, mul(b, g[0], op.getRhs()), typeOf(op.getLhs())));
  out.push_back(sumToShape(b, mul(b, g[0], op.getLhs()), typeOf(op.getRhs())));
END_RULE

RULE(DivRule, nn::DivOp)
  // d(x/y) = g/y dx - g (x/y)/y dy
  out.push_back(sumToShape(b, div(b, g[0], op.getRhs()), typeOf(op.getLhs())));
  out.push_back(sumToShape(b, neg(b, div(b, mul(b, g[0], op.getResult()), op.getRhs())),
                           typeOf(op.getRhs())));
END_RULE

RULE(PowRule, nn::PowOp)
  // d(x^y)/dx = y x^(y-1); the exponent must be a constant (x^2, x^3 in
  // exported GELU and variance computations).
  Value y = op.getRhs();
  if (!y.getDefiningOp<nn::ConstantOp>())
    return raw->emitError("rewire-autodiff: nn.pow needs a constant exponent (no log op for "
                          "d/dy yet)");
  Value ym1 = sub(b, y, num(b, y, 1.0));
  Value dx = mul(b, g[0], mul(b, y, nn::PowOp::create(b, op.getLhs(), ym1)));
  out.push_back(sumToShape(b, dx, typeOf(op.getLhs())));
  out.push_back(Value());
END_RULE

RULE(NegRule, nn::NegOp)
  out.push_back(neg(b, g[0]));
END_RULE

RULE(ReluRule, nn::ReluOp)
  // step(x) = [relu(x) != 0], through casts to i1 and back.
  auto t = typeOf(op.getResult());
  Value nz = nn::CastOp::create(b, RankedTensorType::get(t.getShape(), b.getI1Type()), op.getResult());
  out.push_back(mul(b, g[0], nn::CastOp::create(b, t, nz)));
END_RULE

RULE(SigmoidRule, nn::SigmoidOp)
  Value y = op.getResult();
  out.push_back(mul(b, g[0], mul(b, y, sub(b, num(b, y, 1.0), y))));
END_RULE

RULE(TanhRule, nn::TanhOp)
  Value y = op.getResult();
  out.push_back(mul(b, g[0], sub(b, num(b, y, 1.0), mul(b, y, y))));
END_RULE

RULE(ExpRule, nn::ExpOp)
  out.push_back(mul(b, g[0], op.getResult()));
END_RULE

RULE(SqrtRule, nn::SqrtOp)
  out.push_back(div(b, mul(b, g[0], num(b, g[0], 0.5)), op.getResult()));
END_RULE

RULE(ErfRule, nn::ErfOp)
  Value x = op.getX();
  Value e = nn::ExpOp::create(b, neg(b, mul(b, x, x)));
  out.push_back(mul(b, g[0], mul(b, e, num(b, x, 2.0 / std::sqrt(M_PI)))));
END_RULE

RULE(GeluRule, nn::GeluOp)
  Value x = op.getX();
  Value half = num(b, x, 0.5), one = num(b, x, 1.0);
  Value d;
  if (op.getApproximate() == nn::GeluApproximation::tanh) {
    // u = c (x + k x^3); d = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) c (1 + 3k x^2)
    double c = std::sqrt(2.0 / M_PI), k = 0.044715;
    Value x2 = mul(b, x, x);
    Value u = mul(b, num(b, x, c), add(b, x, mul(b, num(b, x, k), mul(b, x2, x))));
    Value t = nn::TanhOp::create(b, u);
    Value du = mul(b, num(b, x, c), add(b, one, mul(b, num(b, x, 3 * k), x2)));
    d = add(b, mul(b, half, add(b, one, t)),
            mul(b, mul(b, half, x), mul(b, sub(b, one, mul(b, t, t)), du)));
  } else {
    // d = Phi(x) + x phi(x)
    Value cdf = mul(b, half, add(b, one, nn::ErfOp::create(b, mul(b, x, num(b, x, 1.0 / std::sqrt(2.0))))));
    Value pdf = mul(b, num(b, x, 1.0 / std::sqrt(2.0 * M_PI)),
                    nn::ExpOp::create(b, mul(b, num(b, x, -0.5), mul(b, x, x))));
    d = add(b, cdf, mul(b, x, pdf));
  }
  out.push_back(mul(b, g[0], d));
END_RULE

/// `x : [..., R, C]` (static) as the matrix [prod(...) x R, C].
Value rowsOf(ImplicitLocOpBuilder &b, Value x) {
  auto t = typeOf(x);
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < t.getRank(); ++i)
    rows *= t.getDimSize(i);
  return nn::ReshapeOp::create(
      b, RankedTensorType::get({rows, t.getDimSize(t.getRank() - 1)}, t.getElementType()), x);
}

RULE(MatMulRule, nn::MatMulOp)
  Value lhs = op.getLhs(), rhs = op.getRhs();
  if (typeOf(lhs).getRank() < 2 || typeOf(rhs).getRank() < 2)
    return raw->emitError("rewire-autodiff: nn.matmul of a vector is not differentiated yet");
  out.push_back(sumToShape(b, nn::MatMulOp::create(b, g[0], transposeLast(b, rhs)), typeOf(lhs)));
  out.push_back(matmulRhsAdjoint(b, lhs, g[0], typeOf(rhs)));
END_RULE

RULE(GemmRule, nn::GemmOp)
  // Y = alpha op(A) op(B) + beta C, with op(X) = X or X^T.
  Value a = op.getA(), bb = op.getB();
  Value ga = mul(b, g[0], num(b, g[0], op.getAlpha().convertToDouble()));
  Value opA = op.getTransA() ? transposeLast(b, a) : a;
  Value opB = op.getTransB() ? transposeLast(b, bb) : bb;
  Value dOpA = nn::MatMulOp::create(b, ga, transposeLast(b, opB));
  Value dOpB = nn::MatMulOp::create(b, transposeLast(b, opA), ga);
  out.push_back(op.getTransA() ? transposeLast(b, dOpA) : dOpA);
  out.push_back(op.getTransB() ? transposeLast(b, dOpB) : dOpB);
  if (op.getC())
    out.push_back(sumToShape(b, mul(b, g[0], num(b, g[0], op.getBeta().convertToDouble())),
                             typeOf(op.getC())));
END_RULE

/// The gradient of nn.attention's bias: ds = p * (dp - rowsum(g * out))
/// with the weights p expanded in nn ops, summed to the bias's shape.
FailureOr<Value> attentionBiasAdjoint(ImplicitLocOpBuilder &b, nn::AttentionOp op, Value g,
                                      double scale) {
  Value q = op.getQ(), k = op.getK(), bias = op.getBias();
  auto qt = typeOf(q), kt = typeOf(k);
  Value s = mul(b, nn::MatMulOp::create(b, q, transposeLast(b, k)), num(b, q, scale));
  s = add(b, s, bias);
  auto st = typeOf(s);
  if (op.getCausal()) {
    if (!qt.hasStaticShape() || !kt.hasStaticShape())
      return op.emitError("rewire-autodiff: the bias gradient of a causal nn.attention needs "
                          "static shapes");
    int64_t tq = qt.getDimSize(2), tk = kt.getDimSize(2);
    SmallVector<bool> kept;
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j)
        kept.push_back(j <= i + tk - tq);
    auto maskType = RankedTensorType::get({tq, tk}, b.getI1Type());
    Value mask = nn::ConstantOp::create(b, maskType, DenseElementsAttr::get(maskType, kept));
    s = nn::WhereOp::create(b, mask, s, num(b, s, -INFINITY));
  }
  Value p = nn::SoftmaxOp::create(b, st, s, b.getI64IntegerAttr(-1));
  if (op.getZeroMaskedRows()) {
    Value nan = nn::CompareOp::create(b, b.getAttr<nn::ComparePredicateAttr>(nn::ComparePredicate::ne),
                                      p, p);
    p = nn::WhereOp::create(b, nan, num(b, p, 0.0), p);
  }
  Value dp = nn::MatMulOp::create(b, g, transposeLast(b, op.getV()));
  Value delta = sumKeep(b, mul(b, g, op.getResult()), {3});
  return sumToShape(b, mul(b, p, sub(b, dp, delta)), typeOf(bias));
}

RULE(AttentionRule, nn::AttentionOp)
  double scale = op.getScale() ? op.getScale()->convertToDouble()
                               : 1.0 / std::sqrt(static_cast<double>(typeOf(op.getQ()).getDimSize(3)));
  auto grad = nn::AttentionGradOp::create(b, op.getQ(), op.getK(), op.getV(), op.getResult(), g[0],
                                          op.getBias(), op.getCausalAttr(),
                                          op.getZeroMaskedRowsAttr(), op.getScaleAttr());
  out.push_back(grad.getDq());
  out.push_back(grad.getDk());
  out.push_back(grad.getDv());
  if (op.getBias()) {
    FailureOr<Value> db = attentionBiasAdjoint(b, op, g[0], scale);
    if (failed(db))
      return failure();
    out.push_back(*db);
  }
END_RULE

RULE(SoftmaxRule, nn::SoftmaxOp)
  Value y = op.getResult();
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += typeOf(y).getRank();
  Value dot = sumKeep(b, mul(b, g[0], y), {axis});
  out.push_back(mul(b, y, sub(b, g[0], dot)));
END_RULE

/// Sinkhorn's backward by recomputation: one fused op, not the 2 * iters
/// rounds of its decomposition differentiated op by op.
RULE(SinkhornRule, nn::SinkhornOp)
  out.push_back(nn::SinkhornGradOp::create(b, op.getZ(), g[0], op.getItersAttr()));
END_RULE

RULE(LayerNormRule, nn::LayerNormOp)
  Value x = op.getX();
  auto axes = trailingAxes(static_cast<int64_t>(op.getAxis()), typeOf(x).getRank());
  Value mean = meanKeep(b, x, axes);
  Value xc = sub(b, x, mean);
  Value var = meanKeep(b, mul(b, xc, xc), axes);
  Value rstd = div(b, num(b, x, 1.0),
                   nn::SqrtOp::create(b, add(b, var, num(b, x, op.getEpsilon().convertToDouble()))));
  Value xhat = mul(b, xc, rstd);
  Value dxhat = mul(b, g[0], op.getScale());
  Value dx = mul(b, rstd, sub(b, sub(b, dxhat, meanKeep(b, dxhat, axes)),
                              mul(b, xhat, meanKeep(b, mul(b, dxhat, xhat), axes))));
  out.push_back(dx);
  out.push_back(sumToShape(b, mul(b, g[0], xhat), typeOf(op.getScale())));
  if (op.getBias())
    out.push_back(sumToShape(b, g[0], typeOf(op.getBias())));
END_RULE

RULE(RMSNormRule, nn::RMSNormOp)
  Value x = op.getX();
  auto axes = trailingAxes(static_cast<int64_t>(op.getAxis()), typeOf(x).getRank());
  Value ms = meanKeep(b, mul(b, x, x), axes);
  Value rinv = div(b, num(b, x, 1.0),
                   nn::SqrtOp::create(b, add(b, ms, num(b, x, op.getEpsilon().convertToDouble()))));
  Value xhat = mul(b, x, rinv);
  Value dxhat = mul(b, g[0], op.getScale());
  out.push_back(mul(b, rinv, sub(b, dxhat, mul(b, xhat, meanKeep(b, mul(b, dxhat, xhat), axes)))));
  out.push_back(sumToShape(b, mul(b, g[0], xhat), typeOf(op.getScale())));
END_RULE

/// A reduction's axes normalized (all axes when none are named), the shape
/// of its result with them kept as size 1, and how many elements each
/// result element reduces.
struct Reduced {
  SmallVector<int64_t> axes;
  RankedTensorType kept;
  int64_t count = 1;
};

Reduced reducedOf(RankedTensorType xt, ArrayRef<int64_t> given) {
  Reduced r;
  int64_t rank = xt.getRank();
  for (int64_t a : given)
    r.axes.push_back(a < 0 ? a + rank : a);
  if (r.axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      r.axes.push_back(i);
  SmallVector<int64_t> kept(xt.getShape());
  for (int64_t a : r.axes) {
    r.count *= kept[a];
    kept[a] = 1;
  }
  r.kept = RankedTensorType::get(kept, xt.getElementType());
  return r;
}

/// `v` reshaped to `type` (a reduction's result with its axes kept).
Value keptAs(ImplicitLocOpBuilder &b, Value v, RankedTensorType type) {
  return typeOf(v) == type ? v : nn::ReshapeOp::create(b, type, v).getResult();
}

/// Reductions: the gradient broadcasts back over the reduced axes.
template <typename Derived, typename Op, bool isMean>
struct ReduceRule : Rule<Derived, Op> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<Op>(raw);
    auto xt = typeOf(op.getX());
    Reduced red = reducedOf(xt, op.getAxes());
    Value gk = keptAs(b, g[0], red.kept);
    int64_t count = red.count;
    if (isMean)
      gk = mul(b, gk, num(b, gk, 1.0 / static_cast<double>(count)));
    out.push_back(broadcastTo(b, gk, xt));
    return success();
  }
};
struct ReduceSumRule : ReduceRule<ReduceSumRule, nn::ReduceSumOp, false> {};
struct ReduceMeanRule : ReduceRule<ReduceMeanRule, nn::ReduceMeanOp, true> {};

RULE(TransposeRule, nn::TransposeOp)
  int64_t r = typeOf(op.getX()).getRank();
  SmallVector<int64_t> perm;
  if (auto p = op.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = r - 1; i >= 0; --i)
      perm.push_back(i);
  SmallVector<int64_t> inverse(r);
  for (int64_t i = 0; i < r; ++i)
    inverse[perm[i]] = i;
  out.push_back(nn::TransposeOp::create(b, g[0], b.getDenseI64ArrayAttr(inverse)));
END_RULE

/// Shape-only ops: the gradient is reshaped back.
template <typename Derived, typename Op>
struct ReshapeRule : Rule<Derived, Op> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    Value x = raw->getOperand(0);
    out.push_back(nn::ReshapeOp::create(b, typeOf(x), g[0]));
    for (unsigned i = 1; i < raw->getNumOperands(); ++i)
      out.push_back(Value());
    return success();
  }
};
struct ReshapeOpRule : ReshapeRule<ReshapeOpRule, nn::ReshapeOp> {};
struct SqueezeRule : ReshapeRule<SqueezeRule, nn::SqueezeOp> {};
struct UnsqueezeRule : ReshapeRule<UnsqueezeRule, nn::UnsqueezeOp> {};

RULE(WhereRule, nn::WhereOp)
  Value zeros = splat(b, typeOf(g[0]), 0.0);
  out.push_back(Value());
  out.push_back(sumToShape(b, nn::WhereOp::create(b, op.getCond(), g[0], zeros), typeOf(op.getX())));
  out.push_back(sumToShape(b, nn::WhereOp::create(b, op.getCond(), zeros, g[0]), typeOf(op.getY())));
END_RULE

RULE(SplitRule, nn::SplitOp)
  out.push_back(nn::ConcatOp::create(b, typeOf(op.getX()), g, op.getAxisAttr()));
END_RULE

RULE(ConcatRule, nn::ConcatOp)
  int64_t r = typeOf(op.getResult()).getRank();
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += r;
  int64_t at = 0;
  for (Value in : op.getInputs()) {
    int64_t size = typeOf(in).getDimSize(axis);
    out.push_back(nn::SliceOp::create(b, typeOf(in), g[0], b.getDenseI64ArrayAttr({at}),
                                      b.getDenseI64ArrayAttr({at + size}),
                                      b.getDenseI64ArrayAttr({axis}), DenseI64ArrayAttr()));
    at += size;
  }
END_RULE

RULE(CastRule, nn::CastOp)
  Type from = eltOf(op.getX()), to = eltOf(op.getResult());
  if (isa<FloatType>(from) && isa<FloatType>(to))
    out.push_back(nn::CastOp::create(b, typeOf(op.getX()), g[0]));
  else
    out.push_back(Value());
END_RULE

RULE(ConstantRule, nn::ConstantOp)
END_RULE

RULE(GatherRule, nn::GatherOp)
  // Embedding tables: rows summed back at their indices (axis 0).
  if (op.getAxis() != 0)
    return raw->emitError("rewire-autodiff: nn.gather is differentiated along axis 0 only");
  out.push_back(nn::ScatterAddOp::create(b, typeOf(op.getData()), g[0], op.getIndices()));
  out.push_back(Value());
END_RULE

RULE(ScatterAddRule, nn::ScatterAddOp)
  // The adjoint of a scatter-add is the gather of its cotangent at the same
  // indices (Mixture-of-Depths puts the routed rows' updates back with it).
  out.push_back(nn::GatherOp::create(b, typeOf(op.getUpdates()), g[0], op.getIndices(),
                                     b.getI64IntegerAttr(0)));
  out.push_back(Value());
  if (op.getBase()) // result = base + the sums
    out.push_back(g[0]);
END_RULE

RULE(CrossEntropyRule, nn::CrossEntropyOp)
  out.push_back(nn::CrossEntropyGradOp::create(b, typeOf(op.getLogits()), op.getLogits(),
                                               op.getLabels(), g[0], op.getIgnoreIndexAttr()));
  out.push_back(Value());
END_RULE

RULE(SliceRule, nn::SliceOp)
  // Unit steps: the gradient padded back with zeros along each sliced axis
  // (a concat with zero blocks before and after).
  auto xt = typeOf(op.getX());
  int64_t rank = xt.getRank();
  ArrayRef<int64_t> starts = op.getStarts();
  size_t n = starts.size();
  SmallVector<int64_t> axes, steps(n, 1);
  if (auto a = op.getAxes())
    axes.assign(a->begin(), a->end());
  else
    for (size_t i = 0; i < n; ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (auto st = op.getSteps())
    steps.assign(st->begin(), st->end());
  if (!xt.hasStaticShape() || llvm::any_of(steps, [](int64_t s) { return s != 1; }))
    return raw->emitError("rewire-autodiff: nn.slice is differentiated with unit steps and "
                          "static shapes only");
  Value grad = g[0];
  for (size_t i = 0; i < n; ++i) {
    int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    int64_t dim = xt.getDimSize(ax);
    int64_t start = starts[i];
    if (start < 0)
      start = start < -dim ? 0 : start + dim;
    start = std::min(start, dim);
    auto gt = typeOf(grad);
    int64_t size = gt.getDimSize(ax), after = dim - start - size;
    SmallVector<Value> parts;
    auto zeros = [&](int64_t len) {
      SmallVector<int64_t> shape(gt.getShape());
      shape[ax] = len;
      return splat(b, RankedTensorType::get(shape, gt.getElementType()), 0.0);
    };
    if (start > 0)
      parts.push_back(zeros(start));
    parts.push_back(grad);
    if (after > 0)
      parts.push_back(zeros(after));
    if (parts.size() > 1) {
      SmallVector<int64_t> shape(gt.getShape());
      shape[ax] = dim;
      grad = nn::ConcatOp::create(b, RankedTensorType::get(shape, gt.getElementType()), parts,
                                  b.getI64IntegerAttr(ax));
    }
  }
  out.push_back(grad);
END_RULE

/// `pred(lhs, rhs)` as 0/1 in the element type of `like`, at `like`'s shape.
Value maskOf(ImplicitLocOpBuilder &b, nn::ComparePredicate pred, Value lhs, Value rhs,
             Value like) {
  auto t = typeOf(like);
  Value m = nn::CompareOp::create(b, b.getAttr<nn::ComparePredicateAttr>(pred), lhs, rhs);
  auto mt = typeOf(m);
  return nn::CastOp::create(b, RankedTensorType::get(mt.getShape(), t.getElementType()), m);
}

template <typename Derived, typename OpTy, nn::ComparePredicate Pred>
struct ExtremumRule : Rule<Derived, OpTy> {
  // max: the gradient goes to lhs where lhs >= rhs, else to rhs (min: <=),
  // so a tie sends it to lhs alone, as ONNX Runtime's and PyTorch's
  // torch.maximum send it to one side.
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<OpTy>(raw);
    Value m = maskOf(b, Pred, op.getLhs(), op.getRhs(), g[0]);
    Value gl = mul(b, g[0], m);
    out.push_back(sumToShape(b, gl, typeOf(op.getLhs())));
    out.push_back(sumToShape(b, sub(b, g[0], gl), typeOf(op.getRhs())));
    return success();
  }
};
struct MaxRule : ExtremumRule<MaxRule, nn::MaxOp, nn::ComparePredicate::ge> {};
struct MinRule : ExtremumRule<MinRule, nn::MinOp, nn::ComparePredicate::le> {};

RULE(AbsRule, nn::AbsOp)
  // sign(x): 0 at 0, as PyTorch's abs backward.
  Value x = op.getX(), zero = num(b, x, 0.0);
  Value sign = sub(b, maskOf(b, nn::ComparePredicate::gt, x, zero, x),
                   maskOf(b, nn::ComparePredicate::lt, x, zero, x));
  out.push_back(mul(b, g[0], sign));
END_RULE

template <typename Derived, typename OpTy>
struct ExtremumReduceRule : Rule<Derived, OpTy> {
  // The gradient goes to the elements equal to the extremum, split evenly
  // among ties (as torch.amax / amin).
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<OpTy>(raw);
    Reduced red = reducedOf(typeOf(op.getX()), op.getAxes());
    Value y = keptAs(b, op.getResult(), red.kept), gk = keptAs(b, g[0], red.kept);
    ArrayRef<int64_t> axes = red.axes;
    Value m = maskOf(b, nn::ComparePredicate::eq, op.getX(), y, op.getX());
    Value count = sumKeep(b, m, axes);
    out.push_back(mul(b, m, div(b, gk, count)));
    return success();
  }
};
struct ReduceMaxRule : ExtremumReduceRule<ReduceMaxRule, nn::ReduceMaxOp> {};

RULE(ReduceProdRule, nn::ReduceProdOp)
  // d(prod x)/dx_i = prod / x_i: exact where no element of the reduced
  // slice is 0 (where one is, this gives inf or NaN; documented).
  Reduced red = reducedOf(typeOf(op.getX()), op.getAxes());
  Value y = keptAs(b, op.getResult(), red.kept), gk = keptAs(b, g[0], red.kept);
  out.push_back(div(b, mul(b, gk, y), op.getX()));
END_RULE
struct ReduceMinRule : ExtremumReduceRule<ReduceMinRule, nn::ReduceMinOp> {};

RULE(LogRule, nn::LogOp)
  out.push_back(div(b, g[0], op.getX()));
END_RULE

RULE(SinRule, nn::SinOp)
  out.push_back(mul(b, g[0], nn::CosOp::create(b, op.getX())));
END_RULE

RULE(CosRule, nn::CosOp)
  out.push_back(neg(b, mul(b, g[0], nn::SinOp::create(b, op.getX()))));
END_RULE

RULE(CumSumRule, nn::CumSumOp)
  // The adjoint of a prefix sum is the suffix sum of g (and vice versa).
  out.push_back(nn::CumSumOp::create(b, g[0].getType(), g[0], op.getAxisAttr(),
                                     op.getExclusiveAttr(),
                                     op.getReverse() ? UnitAttr() : b.getUnitAttr()));
END_RULE

/// d/dx of the inverse and hyperbolic trigonometric functions, as
/// `g * f'(x)` from the op's input x (and result y where simpler).
template <typename Derived, typename OpTy>
struct TrigRule : Rule<Derived, OpTy> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<OpTy>(raw);
    Value x = op.getX(), y = op.getResult(), one = num(b, x, 1.0);
    Value d;
    auto rsqrt = [&](Value v) { return div(b, one, nn::SqrtOp::create(b, v)); };
    if constexpr (std::is_same_v<OpTy, nn::TanOp>)
      d = add(b, one, mul(b, y, y));
    else if constexpr (std::is_same_v<OpTy, nn::AsinOp>)
      d = rsqrt(sub(b, one, mul(b, x, x)));
    else if constexpr (std::is_same_v<OpTy, nn::AcosOp>)
      d = neg(b, rsqrt(sub(b, one, mul(b, x, x))));
    else if constexpr (std::is_same_v<OpTy, nn::AtanOp>)
      d = div(b, one, add(b, one, mul(b, x, x)));
    else if constexpr (std::is_same_v<OpTy, nn::SinhOp>)
      d = nn::CoshOp::create(b, x);
    else if constexpr (std::is_same_v<OpTy, nn::CoshOp>)
      d = nn::SinhOp::create(b, x);
    else if constexpr (std::is_same_v<OpTy, nn::AsinhOp>)
      d = rsqrt(add(b, mul(b, x, x), one));
    else if constexpr (std::is_same_v<OpTy, nn::AcoshOp>)
      d = rsqrt(sub(b, mul(b, x, x), one));
    else
      d = div(b, one, sub(b, one, mul(b, x, x)));
    out.push_back(mul(b, g[0], d));
    return success();
  }
};
#define TRIG_RULE(NAME, OP) struct NAME : TrigRule<NAME, OP> {};
TRIG_RULE(TanRule, nn::TanOp)
TRIG_RULE(AsinRule, nn::AsinOp)
TRIG_RULE(AcosRule, nn::AcosOp)
TRIG_RULE(AtanRule, nn::AtanOp)
TRIG_RULE(SinhRule, nn::SinhOp)
TRIG_RULE(CoshRule, nn::CoshOp)
TRIG_RULE(AsinhRule, nn::AsinhOp)
TRIG_RULE(AcoshRule, nn::AcoshOp)
TRIG_RULE(AtanhRule, nn::AtanhOp)
#undef TRIG_RULE

/// Piecewise-constant or boolean results: no gradient reaches the operands.
template <typename OpTy>
struct NoGradientRule : Rule<NoGradientRule<OpTy>, OpTy> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &, ArrayRef<Value>,
                              SmallVectorImpl<Value> &out) const {
    out.append(raw->getNumOperands(), Value());
    return success();
  }
};

RULE(StopGradientRule, nn::StopGradientOp)
  out.push_back(Value());
END_RULE

#undef RULE
#undef END_RULE

} // namespace

void rewire::autodiff::registerNNReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, nn::NNDialect *) {
    nn::AddOp::attachInterface<AddRule>(*ctx);
    nn::SubOp::attachInterface<SubRule>(*ctx);
    nn::MulOp::attachInterface<MulRule>(*ctx);
    nn::DivOp::attachInterface<DivRule>(*ctx);
    nn::PowOp::attachInterface<PowRule>(*ctx);
    nn::NegOp::attachInterface<NegRule>(*ctx);
    nn::ReluOp::attachInterface<ReluRule>(*ctx);
    nn::SigmoidOp::attachInterface<SigmoidRule>(*ctx);
    nn::TanhOp::attachInterface<TanhRule>(*ctx);
    nn::ExpOp::attachInterface<ExpRule>(*ctx);
    nn::SqrtOp::attachInterface<SqrtRule>(*ctx);
    nn::ErfOp::attachInterface<ErfRule>(*ctx);
    nn::GeluOp::attachInterface<GeluRule>(*ctx);
    nn::MatMulOp::attachInterface<MatMulRule>(*ctx);
    nn::GemmOp::attachInterface<GemmRule>(*ctx);
    nn::SoftmaxOp::attachInterface<SoftmaxRule>(*ctx);
    nn::SinkhornOp::attachInterface<SinkhornRule>(*ctx);
    nn::LayerNormOp::attachInterface<LayerNormRule>(*ctx);
    nn::RMSNormOp::attachInterface<RMSNormRule>(*ctx);
    nn::ReduceSumOp::attachInterface<ReduceSumRule>(*ctx);
    nn::ReduceMeanOp::attachInterface<ReduceMeanRule>(*ctx);
    nn::TransposeOp::attachInterface<TransposeRule>(*ctx);
    nn::ReshapeOp::attachInterface<ReshapeOpRule>(*ctx);
    nn::SqueezeOp::attachInterface<SqueezeRule>(*ctx);
    nn::UnsqueezeOp::attachInterface<UnsqueezeRule>(*ctx);
    nn::WhereOp::attachInterface<WhereRule>(*ctx);
    nn::SplitOp::attachInterface<SplitRule>(*ctx);
    nn::ConcatOp::attachInterface<ConcatRule>(*ctx);
    nn::CastOp::attachInterface<CastRule>(*ctx);
    nn::ConstantOp::attachInterface<ConstantRule>(*ctx);
    nn::GatherOp::attachInterface<GatherRule>(*ctx);
    nn::ScatterAddOp::attachInterface<ScatterAddRule>(*ctx);
    nn::CrossEntropyOp::attachInterface<CrossEntropyRule>(*ctx);
    nn::StopGradientOp::attachInterface<StopGradientRule>(*ctx);
    nn::MaxOp::attachInterface<MaxRule>(*ctx);
    nn::CumSumOp::attachInterface<CumSumRule>(*ctx);
    nn::AttentionOp::attachInterface<AttentionRule>(*ctx);
    nn::MinOp::attachInterface<MinRule>(*ctx);
    nn::AbsOp::attachInterface<AbsRule>(*ctx);
    nn::LogOp::attachInterface<LogRule>(*ctx);
    nn::SinOp::attachInterface<SinRule>(*ctx);
    nn::CosOp::attachInterface<CosRule>(*ctx);
    nn::FloorOp::attachInterface<NoGradientRule<nn::FloorOp>>(*ctx);
    nn::CeilOp::attachInterface<NoGradientRule<nn::CeilOp>>(*ctx);
    nn::RoundOp::attachInterface<NoGradientRule<nn::RoundOp>>(*ctx);
    nn::ArgReduceOp::attachInterface<NoGradientRule<nn::ArgReduceOp>>(*ctx);
    nn::TanOp::attachInterface<TanRule>(*ctx);
    nn::AsinOp::attachInterface<AsinRule>(*ctx);
    nn::AcosOp::attachInterface<AcosRule>(*ctx);
    nn::AtanOp::attachInterface<AtanRule>(*ctx);
    nn::SinhOp::attachInterface<SinhRule>(*ctx);
    nn::CoshOp::attachInterface<CoshRule>(*ctx);
    nn::AsinhOp::attachInterface<AsinhRule>(*ctx);
    nn::AcoshOp::attachInterface<AcoshRule>(*ctx);
    nn::AtanhOp::attachInterface<AtanhRule>(*ctx);
    nn::ReduceMaxOp::attachInterface<ReduceMaxRule>(*ctx);
    nn::ReduceMinOp::attachInterface<ReduceMinRule>(*ctx);
    nn::ReduceProdOp::attachInterface<ReduceProdRule>(*ctx);
    nn::CompareOp::attachInterface<NoGradientRule<nn::CompareOp>>(*ctx);
    nn::LogicalOp::attachInterface<NoGradientRule<nn::LogicalOp>>(*ctx);
    nn::NotOp::attachInterface<NoGradientRule<nn::NotOp>>(*ctx);
    nn::BitcastOp::attachInterface<NoGradientRule<nn::BitcastOp>>(*ctx);
    nn::SliceOp::attachInterface<SliceRule>(*ctx);
  });
}

Value rewire::autodiff::matmulRhsAdjoint(ImplicitLocOpBuilder &b, Value lhs, Value g,
                                         RankedTensorType rhs) {
  if (rhs.getRank() == 2 && typeOf(lhs).getRank() > 2 && typeOf(lhs).hasStaticShape() &&
      typeOf(g).hasStaticShape()) {
    // A weight shared by the batch: x^T . g over all rows at once (one
    // [K, rows] . [rows, N] product) instead of a product per batch summed.
    return nn::MatMulOp::create(b, transposeLast(b, rowsOf(b, lhs)), rowsOf(b, g));
  }
  return sumToShape(b, nn::MatMulOp::create(b, transposeLast(b, lhs), g), rhs);
}

Value rewire::autodiff::transposeLast(ImplicitLocOpBuilder &b, Value x) {
  int64_t r = typeOf(x).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    perm.push_back(i);
  std::swap(perm[r - 1], perm[r - 2]);
  return nn::TransposeOp::create(b, x, b.getDenseI64ArrayAttr(perm));
}
