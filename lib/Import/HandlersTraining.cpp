//===- HandlersTraining.cpp - ONNX's training-domain optimizer ops --------===//
//
// Adagrad, Momentum and Adam of `ai.onnx.preview.training` (opset 1): one
// update of every (X, G, state...) group from the learning rate R and the
// update count T, as ONNX's reference writes them, in nn elementwise ops
// (T > 0 decides at run time where the formulas branch on it). Rewire's own
// training builds its optimizer into the train step; these let a model that
// contains such nodes import and run.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {

using P = nn::ComparePredicate;
constexpr const char *kTraining = "ai.onnx.preview.training";

/// R, T and the groups: inputs 2.. are `states` lists of n tensors each.
struct Groups {
  Value r, t;
  int64_t n = 0;
  SmallVector<SmallVector<Value>> lists;
};

FailureOr<Groups> groups(NodeContext &c, int64_t lists) {
  Groups g;
  unsigned total = c.numInputs();
  if (total < 2 || (total - 2) % lists || total == 2)
    return c.error() << "expects R, T and " << lists << " lists of one length, got " << total
                     << " inputs";
  auto r = c.tensorInput(0), t = c.tensorInput(1);
  if (failed(r) || failed(t))
    return failure();
  if (typeOf(*r).getNumElements() != 1 || typeOf(*t).getNumElements() != 1)
    return c.error() << "R and T must be scalars";
  g.n = (total - 2) / lists;
  g.lists.resize(lists);
  for (int64_t l = 0; l < lists; ++l)
    for (int64_t i = 0; i < g.n; ++i) {
      auto v = c.tensorInput(static_cast<unsigned>(2 + l * g.n + i));
      if (failed(v))
        return failure();
      if (!isa<FloatType>(typeOf(*v).getElementType()))
        return c.error() << "expects float tensors, got " << v->getType();
      g.lists[l].push_back(*v);
    }
  Expr e{c};
  Type elt = typeOf(g.lists[0][0]).getElementType();
  g.r = e.reshape(e.cast(*r, elt), {});
  g.t = e.reshape(e.cast(*t, elt), {});
  return g;
}

HandlerResult adagrad(NodeContext &c) {
  auto g = groups(c, 3);
  if (failed(g))
    return failure();
  Expr e{c};
  double decay = c.floatAttrOr("decay_factor", 0), eps = c.floatAttrOr("epsilon", 1e-6),
         norm = c.floatAttrOr("norm_coefficient", 0);
  Value rate = e.div(g->r, e.add(e.num(g->r, 1), e.mul(g->t, e.num(g->t, decay))));
  SmallVector<Value> xs, hs;
  for (int64_t i = 0; i < g->n; ++i) {
    Value x = g->lists[0][i], grad = g->lists[1][i], h = g->lists[2][i];
    Value gr = e.add(e.mul(x, e.num(x, norm)), grad);
    Value hn = e.add(h, e.mul(gr, gr));
    Value adaptive = e.add(e.un<nn::SqrtOp>(hn), e.num(hn, eps));
    xs.push_back(e.sub(x, e.div(e.mul(gr, rate), adaptive)));
    hs.push_back(hn);
  }
  xs.append(hs.begin(), hs.end());
  if (llvm::any_of(xs, [](Value v) { return !v; }))
    return failure();
  return xs;
}

HandlerResult momentum(NodeContext &c) {
  auto g = groups(c, 3);
  if (failed(g))
    return failure();
  Expr e{c};
  double alpha = c.floatAttrOr("alpha", 0), beta = c.floatAttrOr("beta", 0),
         norm = c.floatAttrOr("norm_coefficient", 0);
  std::string mode = c.stringAttr("mode").value_or("standard");
  if (mode != "standard" && mode != "nesterov")
    return c.error() << "mode '" << mode << "' is not standard or nesterov";
  // beta applies from the second update on (T > 0); the first takes 1.
  Value b = e.where(e.cmp(P::gt, g->t, e.num(g->t, 0)), e.num(g->t, beta), e.num(g->t, 1));
  SmallVector<Value> xs, vs;
  for (int64_t i = 0; i < g->n; ++i) {
    Value x = g->lists[0][i], grad = g->lists[1][i], v = g->lists[2][i];
    Value gr = e.add(e.mul(x, e.num(x, norm)), grad);
    Value vn = e.add(e.mul(v, e.num(v, alpha)), e.mul(gr, b));
    Value step = mode == "standard" ? vn : e.add(gr, e.mul(vn, e.num(vn, alpha)));
    xs.push_back(e.sub(x, e.mul(step, g->r)));
    vs.push_back(vn);
  }
  xs.append(vs.begin(), vs.end());
  if (llvm::any_of(xs, [](Value v) { return !v; }))
    return failure();
  return xs;
}

HandlerResult adam(NodeContext &c) {
  auto g = groups(c, 4);
  if (failed(g))
    return failure();
  Expr e{c};
  double alpha = c.floatAttrOr("alpha", 0.9), beta = c.floatAttrOr("beta", 0.999),
         eps = c.floatAttrOr("epsilon", 1e-6), norm = c.floatAttrOr("norm_coefficient", 0),
         post = c.floatAttrOr("norm_coefficient_post", 0);
  // R sqrt(1 - beta^T) / (1 - alpha^T) once T > 0, else R.
  Value t = g->t;
  Value corrected = e.div(e.mul(g->r, e.un<nn::SqrtOp>(e.sub(e.num(t, 1), e.pow(e.num(t, beta), t)))),
                          e.sub(e.num(t, 1), e.pow(e.num(t, alpha), t)));
  Value rate = e.where(e.cmp(P::gt, t, e.num(t, 0)), corrected, g->r);
  SmallVector<Value> xs, vs, hs;
  for (int64_t i = 0; i < g->n; ++i) {
    Value x = g->lists[0][i], grad = g->lists[1][i], v = g->lists[2][i], h = g->lists[3][i];
    Value gr = e.add(e.mul(x, e.num(x, norm)), grad);
    Value vn = e.add(e.mul(v, e.num(v, alpha)), e.mul(gr, e.num(gr, 1 - alpha)));
    Value hn = e.add(e.mul(h, e.num(h, beta)), e.mul(e.mul(gr, gr), e.num(gr, 1 - beta)));
    Value denom = e.add(e.un<nn::SqrtOp>(hn), e.num(hn, eps));
    Value xn = e.sub(x, e.mul(rate, e.div(vn, denom)));
    xs.push_back(e.mul(xn, e.num(xn, 1 - post)));
    vs.push_back(vn);
    hs.push_back(hn);
  }
  xs.append(vs.begin(), vs.end());
  xs.append(hs.begin(), hs.end());
  if (llvm::any_of(xs, [](Value v) { return !v; }))
    return failure();
  return xs;
}

const Handler kHandlers[] = {
    {"Adagrad", 1, 1, adagrad, kTraining},
    {"Momentum", 1, 1, momentum, kTraining},
    {"Adam", 1, 1, adam, kTraining},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::trainingHandlers() { return kHandlers; }
