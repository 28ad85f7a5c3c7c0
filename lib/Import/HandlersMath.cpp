//===- HandlersMath.cpp - Legalization of ONNX math ops -------------------===//
//
// Handlers for elementwise arithmetic and activations, MatMul and Gemm,
// Softmax, the normalizations and reductions, and the identity-like ops
// (Identity, Dropout in inference). Integer arithmetic on constants (shape
// computations) is folded here so that Reshape and friends see constants.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

#include "rewire/Support/Checked.h"
#include "rewire/Support/Shape.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {

/// Folds integer arithmetic on constant operands of equal size or where one
/// side has a single element (the shape computations exporters emit).
/// Returns a null Value when the operands are not foldable constants, and
/// failure (with an error naming the node and the operands) when the exact
/// result does not fit the element type or a divisor is zero: a model whose
/// shape arithmetic overflows is rejected, never silently wrapped.
FailureOr<Value> foldIntBinaryAs(NodeContext &c, Value lhs, Value rhs, StringRef op);

FailureOr<Value> foldIntBinary(NodeContext &c, Value lhs, Value rhs) {
  return foldIntBinaryAs(c, lhs, rhs, c.node.getOpType());
}

/// foldIntBinary for the ONNX op `op` (Add, Sub, Mul or Div).
FailureOr<Value> foldIntBinaryAs(NodeContext &c, Value lhs, Value rhs, StringRef op) {
  auto a = c.constantInts(lhs), bb = c.constantInts(rhs);
  if (!a || !bb)
    return Value();
  auto lt = cast<RankedTensorType>(lhs.getType());
  auto rt = cast<RankedTensorType>(rhs.getType());
  auto elt = dyn_cast<IntegerType>(lt.getElementType());
  if (!elt || lt.getElementType() != rt.getElementType() ||
      elt.getWidth() < 2)
    return Value();
  size_t n = std::max(a->size(), bb->size());
  if ((a->size() != n && a->size() != 1) || (bb->size() != n && bb->size() != 1))
    return Value();
  unsigned width = elt.getWidth();
  bool isUnsigned = elt.isUnsigned();
  SmallVector<int64_t> out;
  for (size_t i = 0; i < n; ++i) {
    int64_t x = (*a)[a->size() == 1 ? 0 : i];
    int64_t y = (*bb)[bb->size() == 1 ? 0 : i];
    std::optional<int64_t> r;
    if (op == "Add")
      r = checkedAdd(x, y);
    else if (op == "Sub")
      r = checkedSub(x, y);
    else if (op == "Mul")
      r = checkedMul(x, y);
    else if (op == "Div")
      r = checkedDiv(x, y);
    else
      return Value();
    bool fits = r && (isUnsigned ? (*r >= 0 && (width >= 64 || *r < (int64_t(1) << width)))
                                 : fitsSignedBits(*r, width));
    if (!fits) {
      auto diag = c.error() << "constant " << (isUnsigned ? "u" : "") << "int"
                            << width << " arithmetic " << x << " "
                            << (op == "Add" ? "+" : op == "Sub" ? "-" : op == "Mul" ? "*" : "/")
                            << " " << y << " (element " << i << ") ";
      if (op == "Div" && y == 0)
        diag << "divides by zero";
      else
        diag << "overflows the " << (isUnsigned ? "u" : "") << "int" << width
             << " range";
      diag << "; the model's shape computation is invalid (re-export it, or "
              "check the constants feeding this node)";
      return failure();
    }
    out.push_back(*r);
  }
  auto shape = broadcastShapes(
      std::vector<int64_t>(lt.getShape().begin(), lt.getShape().end()),
      std::vector<int64_t>(rt.getShape().begin(), rt.getShape().end()));
  if (!shape)
    return Value();
  auto type = RankedTensorType::get(*shape, lt.getElementType());
  if (!type.hasStaticShape() ||
      type.getNumElements() != static_cast<int64_t>(out.size()))
    return Value();
  SmallVector<APInt> bits;
  for (int64_t v : out)
    bits.push_back(APInt(width, static_cast<uint64_t>(v), /*isSigned=*/!isUnsigned,
                         /*implicitTrunc=*/true));
  return nn::ConstantOp::create(c.b, c.loc(), type,
                                DenseIntElementsAttr::get(type, bits))
      .getResult();
}

template <typename OpTy>
HandlerResult binary(NodeContext &c) {
  auto lhs = c.tensorInput(0), rhs = c.tensorInput(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  FailureOr<Value> folded = foldIntBinary(c, *lhs, *rhs);
  if (failed(folded))
    return failure();
  if (*folded)
    return SmallVector<Value>{*folded};
  Value r = *rhs;
  // Pow's exponent may have another type than its base (x^2 with an
  // integer 2). A float base takes the exponent in its type; an integer base
  // with a float exponent is raised in f64 and truncated back to its type
  // (ONNX Runtime's std::pow + cast); integer exponents take the base's type.
  auto lt = cast<RankedTensorType>(lhs->getType()), rt = cast<RankedTensorType>(r.getType());
  Type baseElt = lt.getElementType(), expElt = rt.getElementType();
  if (std::is_same_v<OpTy, nn::PowOp> && baseElt != expElt) {
    if (!isa<FloatType>(baseElt) && isa<FloatType>(expElt)) {
      Type f64 = c.b.getF64Type();
      Value base = nn::CastOp::create(c.b, c.loc(), RankedTensorType::get(lt.getShape(), f64), *lhs);
      Value e = nn::CastOp::create(c.b, c.loc(), RankedTensorType::get(rt.getShape(), f64), r);
      auto p = createInferred<OpTy>(c, {base, e});
      if (failed(p))
        return failure();
      auto pt = cast<RankedTensorType>(p->getType());
      return SmallVector<Value>{nn::CastOp::create(
          c.b, c.loc(), RankedTensorType::get(pt.getShape(), baseElt), p->getResult())};
    }
    r = nn::CastOp::create(c.b, c.loc(), RankedTensorType::get(rt.getShape(), baseElt), r);
  }
  return single(createInferred<OpTy>(c, {*lhs, r}));
}

template <typename OpTy>
HandlerResult unary(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
    return c.error() << "expects a floating-point input, got "
                     << x->getType();
  return SmallVector<Value>{OpTy::create(c.b, c.loc(), *x)};
}

/// Neg: nn.neg on floats; on integers folded when constant, else 0 - x.
HandlerResult neg(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto t = cast<RankedTensorType>(x->getType());
  if (isa<FloatType>(t.getElementType()))
    return SmallVector<Value>{nn::NegOp::create(c.b, c.loc(), *x)};
  auto elt = dyn_cast<IntegerType>(t.getElementType());
  if (!elt || elt.getWidth() < 2 || elt.isUnsigned())
    return c.error() << "expects a float or signed integer input, got " << t;
  Value zero = nn::ConstantOp::create(
      c.b, c.loc(), RankedTensorType::get({}, elt),
      DenseElementsAttr::get(RankedTensorType::get({}, elt), IntegerAttr::get(elt, 0)));
  // Sub folds integer constants exactly (an overflow is an error).
  FailureOr<Value> folded = foldIntBinaryAs(c, zero, *x, "Sub");
  if (failed(folded))
    return failure();
  if (*folded)
    return SmallVector<Value>{*folded};
  return single(createInferred<nn::SubOp>(c, {zero, *x}));
}

/// Reciprocal(x) = 1 / x, as nn.div of a scalar one (broadcast).
HandlerResult reciprocal(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  Type elt = cast<RankedTensorType>(x->getType()).getElementType();
  auto ft = dyn_cast<FloatType>(elt);
  if (!ft)
    return c.error() << "expects a floating-point input, got " << x->getType();
  auto scalar = RankedTensorType::get({}, elt);
  Value one = nn::ConstantOp::create(c.b, c.loc(), scalar,
                                     DenseElementsAttr::get(scalar, FloatAttr::get(ft, 1.0)));
  return single(createInferred<nn::DivOp>(c, {one, *x}));
}

HandlerResult gelu(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  std::string approx = c.stringAttr("approximate").value_or("none");
  auto kind = nn::symbolizeGeluApproximation(approx);
  if (!kind)
    return c.error() << "approximate must be 'none' or 'tanh', got '"
                     << approx << "'";
  return SmallVector<Value>{nn::GeluOp::create(c.b, c.loc(), *x, *kind)};
}

HandlerResult identity(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  return SmallVector<Value>{*x};
}

HandlerResult dropout(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  // Training mode drops nothing when the ratio is 0; otherwise it draws
  // random numbers, which a compiled inference graph does not.
  if (Value training = c.input(2)) {
    auto cst = training.getDefiningOp<nn::ConstantOp>();
    auto bits = cst ? dyn_cast<DenseIntElementsAttr>(cst.getValue()) : DenseIntElementsAttr();
    if (!bits)
      return c.error() << "training_mode must be a constant";
    SmallVector<int64_t> t;
    for (const APInt &v : bits.getValues<APInt>())
      t.push_back(v.isZero() ? 0 : 1);
    auto ratio = c.input(1) ? c.constantFloats(c.input(1)) : std::nullopt;
    bool noDrop = ratio && llvm::all_of(*ratio, [](double r) { return r == 0; });
    if (llvm::any_of(t, [](int64_t v) { return v != 0; }) && !noDrop)
      return c.error() << "training mode with a nonzero ratio is not supported (only inference, "
                          "or ratio = 0)";
  }
  SmallVector<Value> out = {*x};
  // The mask keeps everything.
  if (c.node->getNumResults() > 1)
    out.push_back(splatConstant(
        c, RankedTensorType::get(typeOf(*x).getShape(), c.b.getI1Type()), 1));
  return out;
}

/// MatMul with NumPy's 1-D rules: a 1-D lhs is a row [1, K] and a 1-D rhs a
/// column [K, 1], their unit dims dropped from the result.
HandlerResult matmul(NodeContext &c) {
  auto a = c.tensorInput(0), bb = c.tensorInput(1);
  if (failed(a) || failed(bb))
    return failure();
  bool rowVector = typeOf(*a).getRank() == 1, columnVector = typeOf(*bb).getRank() == 1;
  if (!rowVector && !columnVector)
    return single(createInferred<nn::MatMulOp>(c, {*a, *bb}));
  Expr e{c};
  Value lhs = rowVector ? e.unsqueeze(*a, 0) : *a, rhs = columnVector ? e.unsqueeze(*bb, 1) : *bb;
  Value y = make<nn::MatMulOp>(c, {lhs, rhs});
  if (columnVector)
    y = y ? e.squeeze(y, typeOf(y).getRank() - 1) : y;
  if (rowVector)
    y = y ? e.squeeze(y, typeOf(y).getRank() - (columnVector ? 1 : 2)) : y;
  return e.done(y);
}

HandlerResult gemm(NodeContext &c) {
  auto a = c.tensorInput(0), bb = c.tensorInput(1);
  if (failed(a) || failed(bb))
    return failure();
  SmallVector<Value> operands = {*a, *bb};
  if (Value cc = c.input(2))
    operands.push_back(cc);
  SmallVector<NamedAttribute> attrs = {
      c.b.getNamedAttr("alpha", c.b.getF32FloatAttr(c.floatAttrOr("alpha", 1.0))),
      c.b.getNamedAttr("beta", c.b.getF32FloatAttr(c.floatAttrOr("beta", 1.0)))};
  if (c.intAttrOr("transA", 0))
    attrs.push_back(c.b.getNamedAttr("transA", c.b.getUnitAttr()));
  if (c.intAttrOr("transB", 0))
    attrs.push_back(c.b.getNamedAttr("transB", c.b.getUnitAttr()));
  return single(createInferred<nn::GemmOp>(c, operands, attrs));
}

HandlerResult softmax(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  int64_t rank = type.getRank();
  bool coerced = c.opset() < 13;
  int64_t axis = c.intAttrOr("axis", coerced ? 1 : -1);
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << axis << " is out of range for rank "
                     << rank;
  if (!coerced || axis == rank - 1)
    return SmallVector<Value>{
        nn::SoftmaxOp::create(c.b, c.loc(), *x, c.b.getI64IntegerAttr(axis))};
  // Opsets 11 and 12: the input is coerced to 2-D at `axis`, and the
  // softmax runs over all of dims [axis, rank) together.
  if (!type.hasStaticShape())
    return c.error() << "softmax over several trailing dims needs static shapes";
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= type.getDimSize(d);
  auto flat = RankedTensorType::get({outer, inner}, type.getElementType());
  Value r = nn::ReshapeOp::create(c.b, c.loc(), flat, *x);
  Value s = nn::SoftmaxOp::create(c.b, c.loc(), r, c.b.getI64IntegerAttr(1));
  return SmallVector<Value>{nn::ReshapeOp::create(c.b, c.loc(), type, s)};
}

HandlerResult batchNorm(NodeContext &c) {
  // training_mode = 1 (PyTorch's export of a model in train mode): batch
  // statistics; the running-statistics outputs are not computed here, the
  // training step updates them (nn.batch_norm's description).
  int64_t training = c.intAttrOr("training_mode", 0);
  if (c.opset() < 9 && c.intAttrOr("spatial", 1) != 1)
    return c.error() << "spatial = 0 (per-activation statistics) is not supported";
  if (training != 0 && training != 1)
    return c.error() << "training_mode must be 0 or 1, got " << training;
  SmallVector<Value> in;
  for (unsigned i = 0; i < 5; ++i) {
    auto v = c.tensorInput(i);
    if (failed(v))
      return failure();
    in.push_back(*v);
  }
  if (in[1].getType() != in[2].getType() ||
      in[1].getType() != in[3].getType() || in[1].getType() != in[4].getType())
    return c.error() << "scale, B, input_mean and input_var must have the "
                        "same type";
  auto op = nn::BatchNormOp::create(
      c.b, c.loc(), in[0].getType(), in[0], in[1], in[2], in[3], in[4],
      c.b.getF32FloatAttr(c.floatAttrOr("epsilon", 1e-5)),
      c.b.getF32FloatAttr(c.floatAttrOr("momentum", 0.9)),
      training ? c.b.getUnitAttr() : nullptr);
  if (failed(op.verify())) {
    op.erase();
    return failure();
  }
  SmallVector<Value> out = {op};
  if (training && c.node->getNumResults() > 1) {
    // running = input * momentum + batch * (1 - momentum), the batch
    // variance biased (ONNX's definition; nn.batch_norm's training step
    // keeps its own running statistics).
    Expr e{c};
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < typeOf(in[0]).getRank(); ++d)
      if (d != 1)
        axes.push_back(d);
    double momentum = c.floatAttrOr("momentum", 0.9);
    Value mean = e.reduce<nn::ReduceMeanOp>(in[0], axes);
    Value centered = e.sub(in[0], mean);
    Value var = e.reduce<nn::ReduceMeanOp>(e.mul(centered, centered), axes, /*keepdims=*/false);
    Value m = e.num(in[3], momentum), rest = e.num(in[3], 1.0 - momentum);
    out.push_back(e.add(e.mul(in[3], m), e.mul(e.reshape(mean, typeOf(in[3]).getShape()), rest)));
    out.push_back(e.add(e.mul(in[4], m), e.mul(var, rest)));
    if (!out[1] || !out[2])
      return failure();
  }
  return out;
}

/// Axes and keepdims of a Reduce* node (axes from an attribute before the
/// opset that made them an input: 13 for ReduceSum, 18 for the others).
struct ReduceSpec {
  SmallVector<int64_t> axes;
  bool keepdims = true;
  bool noop = false; // empty axes with noop_with_empty_axes: the identity
};

FailureOr<ReduceSpec> reduceSpec(NodeContext &c) {
  ReduceSpec spec;
  bool axesAsInput = c.node.getOpType() == "ReduceSum" ? c.opset() >= 13
                                                       : c.opset() >= 18;
  if (axesAsInput) {
    if (c.input(1)) {
      auto a = c.constantIntsInput(1, "axes");
      if (failed(a))
        return failure();
      spec.axes = *a;
    }
  } else if (auto a = c.intsAttr("axes")) {
    spec.axes = *a;
  }
  spec.noop = spec.axes.empty() && c.intAttrOr("noop_with_empty_axes", 0);
  spec.keepdims = c.intAttrOr("keepdims", 1) != 0;
  return spec;
}

template <typename OpTy>
FailureOr<Value> reduceWith(NodeContext &c, Value x, const ReduceSpec &spec) {
  if (spec.noop)
    return x;
  auto op = createInferred<OpTy>(
      c, {x},
      {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(spec.axes)),
       c.b.getNamedAttr("keepdims", c.b.getBoolAttr(spec.keepdims))});
  if (failed(op))
    return failure();
  return op->getResult();
}

template <typename OpTy>
HandlerResult reduce(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto spec = reduceSpec(c);
  if (failed(x) || failed(spec))
    return failure();
  return single(reduceWith<OpTy>(c, *x, *spec));
}

Value scalarOf(NodeContext &c, Value like, double v) {
  return scalarConstant(c, cast<RankedTensorType>(like.getType()).getElementType(), v);
}

/// The reductions written with the others: L1 = sum |x|, L2 = sqrt(sum x^2),
/// SumSquare = sum x^2, LogSum = log(sum x), LogSumExp = m + log(sum exp(x - m))
/// with m the (kept) max, so large inputs do not overflow; Prod as exp(sum
/// log x) would lose signs, so it is not offered.
HandlerResult composedReduce(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto spec = reduceSpec(c);
  if (failed(x) || failed(spec))
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
    return c.error() << "expects a floating-point input, got " << x->getType();
  StringRef op = c.node.getOpType();
  auto sq = [&]() -> FailureOr<Value> {
    auto m = createInferred<nn::MulOp>(c, {*x, *x});
    if (failed(m))
      return failure();
    return m->getResult();
  };
  if (op == "ReduceL1")
    return single(reduceWith<nn::ReduceSumOp>(c, nn::AbsOp::create(c.b, c.loc(), *x), *spec));
  if (op == "ReduceSumSquare" || op == "ReduceL2") {
    auto s2 = sq();
    if (failed(s2))
      return failure();
    auto r = reduceWith<nn::ReduceSumOp>(c, *s2, *spec);
    if (failed(r) || op == "ReduceSumSquare")
      return single(r);
    return SmallVector<Value>{nn::SqrtOp::create(c.b, c.loc(), *r)};
  }
  if (op == "ReduceLogSum") {
    auto r = reduceWith<nn::ReduceSumOp>(c, *x, *spec);
    if (failed(r))
      return failure();
    return SmallVector<Value>{nn::LogOp::create(c.b, c.loc(), *r)};
  }
  // ReduceLogSumExp
  ReduceSpec kept = *spec;
  kept.keepdims = true;
  auto m = reduceWith<nn::ReduceMaxOp>(c, *x, kept);
  if (failed(m))
    return failure();
  // A row of -inf keeps m finite-free: exp(x - m) would be NaN; use 0 there.
  Value mSafe = *m;
  auto isInf = createInferred<nn::CompareOp>(
      c, {*m, scalarOf(c, *m, -INFINITY)},
      {c.b.getNamedAttr("predicate", c.b.getAttr<nn::ComparePredicateAttr>(nn::ComparePredicate::eq))});
  if (failed(isInf))
    return failure();
  auto safe = createInferred<nn::WhereOp>(c, {isInf->getResult(), scalarOf(c, *m, 0.0), *m});
  if (failed(safe))
    return failure();
  mSafe = safe->getResult();
  auto d = createInferred<nn::SubOp>(c, {*x, mSafe});
  if (failed(d))
    return failure();
  auto s = reduceWith<nn::ReduceSumOp>(c, nn::ExpOp::create(c.b, c.loc(), d->getResult()), kept);
  if (failed(s))
    return failure();
  auto lse = createInferred<nn::AddOp>(c, {nn::LogOp::create(c.b, c.loc(), *s), mSafe});
  if (failed(lse))
    return failure();
  Value y = lse->getResult();
  if (!spec->keepdims && !spec->noop) {
    auto t = cast<RankedTensorType>(y.getType());
    int64_t rank = t.getRank();
    SmallVector<int64_t> axes;
    for (int64_t a : spec->axes)
      axes.push_back(a < 0 ? a + rank : a);
    SmallVector<int64_t> shape;
    for (int64_t i = 0; i < rank; ++i)
      if (!axes.empty() && !llvm::is_contained(axes, i))
        shape.push_back(t.getDimSize(i));
    y = nn::ReshapeOp::create(c.b, c.loc(), RankedTensorType::get(shape, t.getElementType()), y);
  }
  return SmallVector<Value>{y};
}

HandlerResult layerNorm(NodeContext &c) {
  auto x = c.tensorInput(0), scale = c.tensorInput(1);
  if (failed(x) || failed(scale))
    return failure();
  int64_t axis = c.intAttrOr("axis", -1);
  double eps = c.floatAttrOr("epsilon", 1e-5);
  auto op = nn::LayerNormOp::create(
      c.b, c.loc(), x->getType(), *x, *scale, c.input(2),
      c.b.getI64IntegerAttr(axis), c.b.getF32FloatAttr(eps));
  if (failed(op.verify())) {
    op.erase();
    return failure();
  }
  SmallVector<Value> results = {op};
  if (c.node.getNumResults() == 1)
    return results;
  // Mean and InvStdDev (kept dims) when the node names them: computed
  // apart from the fused norm; unused ones are dropped after import.
  auto t = cast<RankedTensorType>(x->getType());
  int64_t rank = t.getRank();
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << axis << " is out of range for rank " << rank;
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d)
    axes.push_back(d);
  ReduceSpec spec;
  spec.axes = axes;
  auto mean = reduceWith<nn::ReduceMeanOp>(c, *x, spec);
  if (failed(mean))
    return failure();
  results.push_back(*mean);
  if (c.node.getNumResults() > 2) {
    auto centered = createInferred<nn::SubOp>(c, {*x, *mean});
    if (failed(centered))
      return failure();
    auto sq = createInferred<nn::MulOp>(c, {centered->getResult(), centered->getResult()});
    if (failed(sq))
      return failure();
    auto var = reduceWith<nn::ReduceMeanOp>(c, sq->getResult(), spec);
    if (failed(var))
      return failure();
    auto plus = createInferred<nn::AddOp>(c, {*var, scalarOf(c, *var, eps)});
    if (failed(plus))
      return failure();
    auto inv = createInferred<nn::DivOp>(
        c, {scalarOf(c, *var, 1.0), nn::SqrtOp::create(c.b, c.loc(), plus->getResult())});
    if (failed(inv))
      return failure();
    results.push_back(inv->getResult());
  }
  return results;
}

const Handler kHandlers[] = {
    {"Add", 7, 28, binary<nn::AddOp>},
    {"Sub", 7, 28, binary<nn::SubOp>},
    {"Mul", 7, 28, binary<nn::MulOp>},
    {"Div", 7, 28, binary<nn::DivOp>},
    {"Pow", 7, 28, binary<nn::PowOp>},
    {"Relu", 6, 28, unary<nn::ReluOp>},
    {"Sigmoid", 6, 28, unary<nn::SigmoidOp>},
    {"Tanh", 6, 28, unary<nn::TanhOp>},
    {"Erf", 9, 28, unary<nn::ErfOp>},
    {"Exp", 6, 28, unary<nn::ExpOp>},
    {"Sqrt", 6, 28, unary<nn::SqrtOp>},
    {"Neg", 6, 28, neg},
    {"Reciprocal", 6, 28, reciprocal},
    {"Gelu", 20, 28, gelu},
    {"Identity", 1, 28, identity},
    {"Dropout", 7, 28, dropout},
    {"MatMul", 1, 28, matmul},
    {"Gemm", 7, 28, gemm},
    {"Softmax", 1, 28, softmax},
    {"LayerNormalization", 17, 28, layerNorm},
    {"BatchNormalization", 7, 28, batchNorm},
    {"ReduceMean", 1, 28, reduce<nn::ReduceMeanOp>},
    {"ReduceSum", 1, 28, reduce<nn::ReduceSumOp>},
    {"ReduceMax", 1, 28, reduce<nn::ReduceMaxOp>},
    {"ReduceMin", 1, 28, reduce<nn::ReduceMinOp>},
    {"ReduceProd", 1, 28, reduce<nn::ReduceProdOp>},
    {"ReduceL1", 1, 25, composedReduce},
    {"ReduceL2", 1, 25, composedReduce},
    {"ReduceSumSquare", 1, 28, composedReduce},
    {"ReduceLogSum", 1, 28, composedReduce},
    {"ReduceLogSumExp", 1, 28, composedReduce},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::mathHandlers() { return kHandlers; }
