//===- HandlersActivations.cpp - Activations and norms as nn expressions -===//
//
// ONNX activations, normalizations and layout ops that are exact
// expressions of existing nn ops (their ONNX function bodies, written out):
// LeakyRelu, PRelu, ThresholdedRelu, Elu, Selu, Celu, Softplus, Softsign,
// Mish, Shrink, Sign, Round, Sum, Mean, LogSoftmax, GlobalMaxPool,
// InstanceNormalization, GroupNormalization, MeanVarianceNormalization,
// LpNormalization, DepthToSpace and SpaceToDepth. They lower, differentiate
// and export through the ops they are made of.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

#include "rewire/Support/Shape.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {


FailureOr<Value> floatInput(NodeContext &c, unsigned i = 0) {
  auto x = c.tensorInput(i);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(typeOf(*x).getElementType()))
    return c.error() << "expects a floating-point input, got " << x->getType();
  return *x;
}

using P = nn::ComparePredicate;

HandlerResult activation(NodeContext &c) {
  auto xv = floatInput(c);
  if (failed(xv))
    return failure();
  Value x = *xv;
  Expr e{c};
  StringRef op = c.node.getOpType();
  Value zero = e.num(x, 0.0), one = e.num(x, 1.0);
  if (op == "LeakyRelu") {
    double alpha = c.floatAttrOr("alpha", 0.01);
    return e.done(e.where(e.cmp(P::lt, x, zero), e.mul(x, e.num(x, alpha)), x));
  }
  if (op == "ThresholdedRelu")
    return e.done(e.where(e.cmp(P::gt, x, e.num(x, c.floatAttrOr("alpha", 1.0))), x, zero));
  if (op == "Elu") {
    double alpha = c.floatAttrOr("alpha", 1.0);
    Value neg = e.mul(e.num(x, alpha), e.sub(e.un<nn::ExpOp>(x), one));
    return e.done(e.where(e.cmp(P::lt, x, zero), neg, x));
  }
  if (op == "Selu") {
    double alpha = c.floatAttrOr("alpha", 1.67326319217681884765625);
    double gamma = c.floatAttrOr("gamma", 1.05070102214813232421875);
    Value neg = e.mul(e.num(x, alpha), e.sub(e.un<nn::ExpOp>(x), one));
    return e.done(e.mul(e.num(x, gamma), e.where(e.cmp(P::le, x, zero), neg, x)));
  }
  if (op == "Celu") {
    double alpha = c.floatAttrOr("alpha", 1.0);
    Value inner = e.sub(e.un<nn::ExpOp>(e.div(x, e.num(x, alpha))), one);
    return e.done(e.add(e.max(x, zero), e.min(zero, e.mul(e.num(x, alpha), inner))));
  }
  if (op == "Softplus")
    return e.done(e.softplus(x));
  if (op == "Softsign")
    return e.done(e.div(x, e.add(one, e.un<nn::AbsOp>(x))));
  if (op == "Mish")
    return e.done(e.mul(x, e.un<nn::TanhOp>(e.softplus(x))));
  if (op == "Swish")
    return e.done(e.mul(x, e.un<nn::SigmoidOp>(e.mul(x, e.num(x, c.floatAttrOr("alpha", 1.0))))));
  if (op == "SwiGLU") {
    auto b = c.tensorInput(1);
    if (failed(b))
      return failure();
    if (b->getType() != x.getType())
      return c.error() << "A and B must have one type, got " << x.getType() << " and " << b->getType();
    Value gate = e.mul(x, e.un<nn::SigmoidOp>(e.mul(x, e.num(x, c.floatAttrOr("alpha", 1.0)))));
    return e.done(e.mul(gate, *b));
  }
  if (op == "Sign") {
    auto t = typeOf(x);
    auto asFloat = [&](Value m) -> Value {
      return m ? nn::CastOp::create(c.b, c.loc(), RankedTensorType::get(t.getShape(), t.getElementType()), m)
                     .getResult()
               : Value();
    };
    return e.done(e.sub(asFloat(e.cmp(P::gt, x, zero)), asFloat(e.cmp(P::lt, x, zero))));
  }
  if (op == "Round")
    return e.done(e.un<nn::RoundOp>(x));
  // Shrink: x - bias where x > lambd, x + bias where x < -lambd, else 0.
  double lambd = c.floatAttrOr("lambd", 0.5), bias = c.floatAttrOr("bias", 0.0);
  Value hi = e.where(e.cmp(P::gt, x, e.num(x, lambd)), e.sub(x, e.num(x, bias)), zero);
  return e.done(e.where(e.cmp(P::lt, x, e.num(x, -lambd)), e.add(x, e.num(x, bias)), hi));
}

/// PRelu(x, slope): x < 0 ? slope * x : x, slope broadcasting to x.
HandlerResult prelu(NodeContext &c) {
  auto x = floatInput(c), slope = floatInput(c, 1);
  if (failed(x) || failed(slope))
    return failure();
  Expr e{c};
  return e.done(e.where(e.cmp(P::lt, *x, e.num(*x, 0.0)), e.mul(*x, *slope), *x));
}

/// Sum and Mean of one or more broadcasting inputs.
HandlerResult sumOrMean(NodeContext &c) {
  auto inputs = c.tensorInputs();
  if (failed(inputs))
    return failure();
  SmallVector<Value> xs = *inputs;
  Expr e{c};
  Value acc = xs[0];
  for (Value x : ArrayRef<Value>(xs).drop_front())
    acc = e.add(acc, x);
  if (c.node.getOpType() == "Mean" && xs.size() > 1) {
    if (!isa<FloatType>(typeOf(xs[0]).getElementType()))
      return c.error() << "Mean expects floating-point inputs";
    acc = e.div(acc, e.num(acc, static_cast<double>(xs.size())));
  }
  return e.done(acc);
}

/// LogSoftmax(x) = (x - m) - log(sum(exp(x - m))), m the max over `axis`
/// (over dims [axis, rank) together before opset 13).
HandlerResult logSoftmax(NodeContext &c) {
  auto xv = floatInput(c);
  if (failed(xv))
    return failure();
  Value x = *xv;
  int64_t rank = typeOf(x).getRank();
  bool coerced = c.opset() < 13;
  int64_t axis = c.intAttrOr("axis", coerced ? 1 : -1);
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << axis << " is out of range for rank " << rank;
  SmallVector<int64_t> axes = {axis};
  if (coerced)
    for (int64_t d = axis + 1; d < rank; ++d)
      axes.push_back(d);
  return single(logSoftmaxOf(c, x, axes));
}

} // namespace

FailureOr<Value> rewire::onnx_import::logSoftmaxOf(NodeContext &c, Value x,
                                                   ArrayRef<int64_t> axes) {
  Expr e{c};
  Value shifted = e.sub(x, e.reduce<nn::ReduceMaxOp>(x, axes));
  Value lse = e.un<nn::LogOp>(e.reduce<nn::ReduceSumOp>(e.un<nn::ExpOp>(shifted), axes));
  Value y = e.sub(shifted, lse);
  if (!y)
    return failure();
  return y;
}

namespace {

HandlerResult globalMaxPool(NodeContext &c) {
  auto x = floatInput(c);
  if (failed(x))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  if (rank < 3)
    return c.error() << "expects [N, C, D...], got " << x->getType();
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  Expr e{c};
  return e.done(e.reduce<nn::ReduceMaxOp>(*x, axes));
}

/// (x - mean) / sqrt(var + eps) over `axes` (biased variance, as ONNX).
Value normalize(Expr &e, Value x, ArrayRef<int64_t> axes, double eps) {
  Value centered = e.sub(x, e.reduce<nn::ReduceMeanOp>(x, axes));
  Value var = e.reduce<nn::ReduceMeanOp>(e.mul(centered, centered), axes);
  return e.div(centered, e.un<nn::SqrtOp>(e.add(var, e.num(x, eps))));
}

/// A per-channel [C] vector as [C, 1, ..., 1] for an [N, C, D...] input.
Value channelShaped(Expr &e, Value v, int64_t rank) {
  SmallVector<int64_t> shape = {typeOf(v).getNumElements()};
  shape.append(rank - 2, 1);
  return e.reshape(v, shape);
}

HandlerResult instanceNorm(NodeContext &c) {
  auto x = floatInput(c), scale = floatInput(c, 1), bias = floatInput(c, 2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto t = typeOf(*x);
  int64_t rank = t.getRank();
  if (rank < 3 || !t.hasStaticShape() || typeOf(*scale).getNumElements() != t.getDimSize(1) ||
      typeOf(*bias).getNumElements() != t.getDimSize(1))
    return c.error() << "expects a static [N, C, D...] input and [C] scale and bias";
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  Expr e{c};
  Value y = normalize(e, *x, axes, c.floatAttrOr("epsilon", 1e-5));
  return e.done(e.add(e.mul(y, channelShaped(e, *scale, rank)), channelShaped(e, *bias, rank)));
}

/// GroupNormalization: statistics over each group of C/G channels and all
/// spatial positions; scale and bias per channel (opset 21) or per group
/// (opset 18, deprecated).
HandlerResult groupNorm(NodeContext &c) {
  auto x = floatInput(c), scale = floatInput(c, 1), bias = floatInput(c, 2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  auto t = typeOf(*x);
  auto groups = c.intAttr("num_groups");
  if (!groups || t.getRank() < 3 || !t.hasStaticShape())
    return c.error() << "expects num_groups and a static [N, C, D...] input";
  int64_t n = t.getDimSize(0), ch = t.getDimSize(1), g = *groups, rank = t.getRank();
  if (g < 1 || ch % g != 0)
    return c.error() << "num_groups " << g << " does not divide the " << ch << " channels";
  int64_t rest = t.getNumElements() / (n * ch);
  Expr e{c};
  Value grouped = e.reshape(*x, {n, g, (ch / g) * rest});
  Value y = e.reshape(normalize(e, grouped, {2}, c.floatAttrOr("epsilon", 1e-5)), t.getShape());
  int64_t per = typeOf(*scale).getNumElements();
  Value s = *scale, b = *bias;
  if (per == g && g != ch) {
    // Opset 18: one scale per group, repeated over its channels.
    SmallVector<int64_t> idx;
    for (int64_t i = 0; i < ch; ++i)
      idx.push_back(i / (ch / g));
    auto it = RankedTensorType::get({ch}, c.b.getI64Type());
    Value index = nn::ConstantOp::create(c.b, c.loc(), it, DenseIntElementsAttr::get(it, idx));
    auto gs = createInferred<nn::GatherOp>(c, {s, index}, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(0))});
    auto gb = createInferred<nn::GatherOp>(c, {b, index}, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(0))});
    if (failed(gs) || failed(gb))
      return failure();
    s = gs->getResult();
    b = gb->getResult();
  } else if (per != ch) {
    return c.error() << "scale has " << per << " elements, expected " << ch << " or " << g;
  }
  return e.done(e.add(e.mul(y, channelShaped(e, s, rank)), channelShaped(e, b, rank)));
}

HandlerResult meanVarianceNorm(NodeContext &c) {
  auto x = floatInput(c);
  if (failed(x))
    return failure();
  SmallVector<int64_t> axes = c.intsAttr("axes").value_or(SmallVector<int64_t>{0, 2, 3});
  Expr e{c};
  return e.done(normalize(e, *x, axes, 1e-9));
}

HandlerResult lpNorm(NodeContext &c) {
  auto x = floatInput(c);
  if (failed(x))
    return failure();
  int64_t axis = c.intAttrOr("axis", -1), p = c.intAttrOr("p", 2);
  if (!normalizeAxisInPlace(axis, typeOf(*x).getRank()))
    return c.error() << "axis out of range";
  if (p != 1 && p != 2)
    return c.error() << "p must be 1 or 2, got " << p;
  Expr e{c};
  Value norm = p == 1 ? e.reduce<nn::ReduceSumOp>(e.un<nn::AbsOp>(*x), {axis})
                      : e.un<nn::SqrtOp>(e.reduce<nn::ReduceSumOp>(e.mul(*x, *x), {axis}));
  return e.done(e.div(*x, norm));
}

/// DepthToSpace / SpaceToDepth as reshape -> transpose -> reshape.
HandlerResult depthSpace(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  int64_t bs = c.intAttrOr("blocksize", 0);
  if (t.getRank() != 4 || !t.hasStaticShape() || bs < 1)
    return c.error() << "expects a static [N, C, H, W] input and blocksize >= 1";
  int64_t n = t.getDimSize(0), ch = t.getDimSize(1), h = t.getDimSize(2), w = t.getDimSize(3);
  Expr e{c};
  if (c.node.getOpType() == "SpaceToDepth") {
    if (h % bs || w % bs)
      return c.error() << "H and W must be multiples of blocksize " << bs;
    Value r = e.reshape(*x, {n, ch, h / bs, bs, w / bs, bs});
    Value p = e.transpose(r, {0, 3, 5, 1, 2, 4});
    return e.done(e.reshape(p, {n, ch * bs * bs, h / bs, w / bs}));
  }
  if (ch % (bs * bs))
    return c.error() << "C must be a multiple of blocksize^2";
  int64_t oc = ch / (bs * bs);
  bool crd = c.stringAttr("mode").value_or("DCR") == "CRD";
  Value r = crd ? e.reshape(*x, {n, oc, bs, bs, h, w}) : e.reshape(*x, {n, bs, bs, oc, h, w});
  Value p = crd ? e.transpose(r, {0, 1, 4, 2, 5, 3}) : e.transpose(r, {0, 3, 4, 1, 5, 2});
  return e.done(e.reshape(p, {n, oc, h * bs, w * bs}));
}

const Handler kHandlers[] = {
    {"LeakyRelu", 6, 28, activation},
    {"ThresholdedRelu", 10, 28, activation},
    {"Elu", 6, 28, activation},
    {"Selu", 6, 28, activation},
    {"Celu", 12, 28, activation},
    {"Softplus", 1, 28, activation},
    {"Softsign", 1, 28, activation},
    {"Mish", 18, 28, activation},
    {"Swish", 24, 28, activation},
    {"SwiGLU", 28, 28, activation},
    {"Sign", 9, 28, activation},
    {"Round", 11, 28, activation},
    {"Shrink", 9, 28, activation},
    {"PRelu", 7, 28, prelu},
    {"Sum", 8, 28, sumOrMean},
    {"Mean", 8, 28, sumOrMean},
    {"LogSoftmax", 1, 28, logSoftmax},
    {"GlobalMaxPool", 1, 28, globalMaxPool},
    {"InstanceNormalization", 6, 28, instanceNorm},
    {"GroupNormalization", 18, 28, groupNorm},
    {"MeanVarianceNormalization", 9, 28, meanVarianceNorm},
    {"LpNormalization", 1, 28, lpNorm},
    {"DepthToSpace", 1, 28, depthSpace},
    {"SpaceToDepth", 1, 28, depthSpace},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::activationHandlers() { return kHandlers; }
