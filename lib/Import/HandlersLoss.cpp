//===- HandlersLoss.cpp - The ONNX loss ops ------------------------------===//
//
// The two loss ops of ONNX (opset 12+) as nn expressions, as their function
// bodies define them:
//   NLL(x [N, C, d...], t [N, d...], w [C]?) per element = -x[n, t, d...] *
//   w[t] (0 where t == ignore_index), reduced by `none`, `sum` or `mean`
//   (the sum divided by the sum of the weights that applied);
//   SCE(scores, labels, w?) = NLL(LogSoftmax(scores, axis 1), labels, w), and
//   the log-probabilities as the optional second output.
// The class is read with GatherElements along axis 1; an ignored target is
// first replaced by class 0 so that no index goes out of range.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {


FailureOr<Value> nll(NodeContext &c, Value logp, Value target, Value weight) {
  auto lt = typeOf(logp), tt = typeOf(target);
  if (!isa<FloatType>(lt.getElementType()) || !isa<IntegerType>(tt.getElementType()) ||
      lt.getRank() < 2 || tt.getRank() != lt.getRank() - 1 || !lt.hasStaticShape() ||
      !tt.hasStaticShape())
    return c.error() << "expects input [N, C, d...] (float) and target [N, d...] (integer), got "
                     << lt << " and " << tt;
  Type elt = lt.getElementType(), it = tt.getElementType();
  std::string reduction = c.stringAttr("reduction").value_or("mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return c.error() << "reduction must be none, sum or mean, got '" << reduction << "'";
  auto pred = [&](nn::ComparePredicate p) {
    return c.b.getNamedAttr("predicate", c.b.getAttr<nn::ComparePredicateAttr>(p));
  };
  Value t = target, keep;
  if (auto ignore = c.intAttr("ignore_index")) {
    Value ig = scalarConstant(c, it, static_cast<double>(*ignore));
    keep = make<nn::CompareOp>(c, {target, ig}, {pred(nn::ComparePredicate::ne)});
    t = make<nn::WhereOp>(c, {keep, target, scalarConstant(c, it, 0)});
  }
  Value t1 = make<nn::UnsqueezeOp>(c, {t}, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({1}))});
  if (!t1)
    return failure();
  auto picked = gatherElementsOf(c, logp, t1, 1);
  if (failed(picked))
    return failure();
  Value squeezed =
      make<nn::SqueezeOp>(c, {*picked}, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({1}))});
  if (!squeezed)
    return failure();
  Value loss = nn::NegOp::create(c.b, c.loc(), squeezed);
  // The weight of each element's class (1 without weights), 0 if ignored.
  Value w;
  if (weight) {
    auto g = createInferred<nn::GatherOp>(c, {weight, t},
                                          {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(0))});
    if (failed(g))
      return failure();
    w = g->getResult();
  }
  if (keep) {
    Value k = nn::CastOp::create(c.b, c.loc(), RankedTensorType::get(tt.getShape(), elt), keep);
    w = w ? make<nn::MulOp>(c, {w, k}) : k;
  }
  if (w)
    loss = make<nn::MulOp>(c, {loss, w});
  if (!loss)
    return failure();
  if (reduction == "none")
    return loss;
  auto sumAll = [&](Value v) {
    return make<nn::ReduceSumOp>(c, {v}, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({})),
                                          c.b.getNamedAttr("keepdims", c.b.getBoolAttr(false))});
  };
  Value total = sumAll(loss);
  if (reduction == "sum")
    return total ? FailureOr<Value>(total) : FailureOr<Value>(failure());
  Value count = w ? sumAll(w) : scalarConstant(c, elt, static_cast<double>(tt.getNumElements()));
  Value mean = make<nn::DivOp>(c, {total, count});
  return mean ? FailureOr<Value>(mean) : FailureOr<Value>(failure());
}

HandlerResult nllLoss(NodeContext &c) {
  auto x = c.tensorInput(0), t = c.tensorInput(1);
  if (failed(x) || failed(t))
    return failure();
  return single(nll(c, *x, *t, c.input(2)));
}

HandlerResult softmaxCrossEntropy(NodeContext &c) {
  auto x = c.tensorInput(0), t = c.tensorInput(1);
  if (failed(x) || failed(t))
    return failure();
  if (!isa<FloatType>(typeOf(*x).getElementType()) || typeOf(*x).getRank() < 2)
    return c.error() << "expects scores [N, C, d...], got " << x->getType();
  auto logp = logSoftmaxOf(c, *x, {1});
  if (failed(logp))
    return failure();
  auto loss = nll(c, *logp, *t, c.input(2));
  if (failed(loss))
    return failure();
  return SmallVector<Value>{*loss, *logp};
}

const Handler kHandlers[] = {
    {"NegativeLogLikelihoodLoss", 12, 28, nllLoss},
    {"SoftmaxCrossEntropyLoss", 12, 28, softmaxCrossEntropy},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::lossHandlers() { return kHandlers; }
