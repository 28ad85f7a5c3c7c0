//===- HandlersRecurrent.cpp - ONNX RNN, GRU and LSTM, unrolled -----------===//
//
// The recurrent ops with a static sequence length, unrolled into nn ops:
// the input projection of every step is one matmul, X [seq, batch, in] x
// W^T (+ the biases that sit outside a gate product); each step then adds
// H R^T, applies the gate activations and carries H (and LSTM's C). Gates
// follow ONNX's order (GRU z, r, h; LSTM i, o, f, c), directions forward,
// reverse and bidirectional, layout 0 and 1, optional initial states,
// sequence_lens (steps past a batch entry's length keep its state and
// output 0), clip, LSTM peepholes and input_forget, GRU
// linear_before_reset, and the activations Sigmoid, Tanh, Relu,
// HardSigmoid, LeakyRelu, ThresholdedRelu, Elu, Softsign and Softplus.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {

using P = nn::ComparePredicate;

/// The longest sequence x directions unrolled (each step is ~10-20 ops).
constexpr int64_t kMaxSteps = 2048;

/// One of ONNX's recurrent activations, with its alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

Value apply(Expr &e, const Activation &a, Value x) {
  Value zero = e.num(x, 0), one = e.num(x, 1);
  if (a.name == "Sigmoid")
    return e.un<nn::SigmoidOp>(x);
  if (a.name == "Tanh")
    return e.un<nn::TanhOp>(x);
  if (a.name == "Relu")
    return e.un<nn::ReluOp>(x);
  if (a.name == "HardSigmoid")
    return e.max(e.min(e.add(e.mul(x, e.num(x, a.alpha)), e.num(x, a.beta)), one), zero);
  if (a.name == "LeakyRelu")
    return e.where(e.cmp(P::lt, x, zero), e.mul(x, e.num(x, a.alpha)), x);
  if (a.name == "ThresholdedRelu")
    return e.where(e.cmp(P::gt, x, e.num(x, a.alpha)), x, zero);
  if (a.name == "Elu")
    return e.where(e.cmp(P::lt, x, zero),
                   e.mul(e.num(x, a.alpha), e.sub(e.un<nn::ExpOp>(x), one)), x);
  if (a.name == "Softsign")
    return e.div(x, e.add(one, e.un<nn::AbsOp>(x)));
  return e.softplus(x); // Softplus
}

/// The activations of the node: `perDirection` per direction, the defaults
/// where the attribute is absent.
FailureOr<SmallVector<Activation>> activations(NodeContext &c, ArrayRef<StringRef> defaults,
                                               int64_t dirs) {
  SmallVector<Activation> out;
  auto names = c.node.getAttrs().getAs<ArrayAttr>("activations");
  auto alphas = c.floatsAttr("activation_alpha").value_or(SmallVector<double>());
  auto betas = c.floatsAttr("activation_beta").value_or(SmallVector<double>());
  size_t want = defaults.size() * dirs;
  for (size_t i = 0; i < want; ++i) {
    Activation a;
    if (names) {
      if (names.size() != want)
        return c.error() << "activations lists " << names.size() << " functions, expected " << want;
      auto s = dyn_cast<StringAttr>(names[i]);
      if (!s)
        return c.error() << "activations must be strings";
      a.name = s.str();
    } else {
      a.name = defaults[i % defaults.size()].str();
    }
    // ONNX's default alpha/beta per function where the lists give none.
    double da = a.name == "HardSigmoid" ? 0.2 : a.name == "LeakyRelu" ? 0.01 : 1.0;
    double db = a.name == "HardSigmoid" ? 0.5 : 0.0;
    a.alpha = i < alphas.size() ? alphas[i] : da;
    a.beta = i < betas.size() ? betas[i] : db;
    static const char *known[] = {"Sigmoid", "Tanh", "Relu", "HardSigmoid", "LeakyRelu",
                                  "ThresholdedRelu", "Elu", "Softsign", "Softplus"};
    if (llvm::none_of(known, [&](const char *k) { return a.name == k; }))
      return c.error() << "activation '" << a.name << "' is not supported";
    out.push_back(a);
  }
  return out;
}

HandlerResult recurrent(NodeContext &c) {
  StringRef op = c.node.getOpType();
  bool gru = op == "GRU", lstm = op == "LSTM";
  int64_t gates = lstm ? 4 : gru ? 3 : 1;
  auto x = c.tensorInput(0), w = c.tensorInput(1), r = c.tensorInput(2);
  if (failed(x) || failed(w) || failed(r))
    return failure();
  auto xt = typeOf(*x), wt = typeOf(*w), rt = typeOf(*r);
  if (!xt.hasStaticShape() || xt.getRank() != 3 || !isa<FloatType>(xt.getElementType()))
    return c.error() << "expects a static float X of rank 3, got " << xt;
  std::string direction = c.stringAttr("direction").value_or("forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return c.error() << "direction '" << direction << "' is not forward, reverse or bidirectional";
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t layout = c.intAttrOr("layout", 0);
  if (layout != 0 && layout != 1)
    return c.error() << "layout must be 0 or 1, got " << layout;
  Expr e{c};
  // [seq, batch, in] whatever the layout.
  Value xs = layout ? e.transpose(*x, {1, 0, 2}) : *x;
  if (!xs)
    return failure();
  int64_t seq = typeOf(xs).getDimSize(0), batch = typeOf(xs).getDimSize(1),
          in = typeOf(xs).getDimSize(2);
  if (wt.getRank() != 3 || wt.getDimSize(0) != dirs || wt.getDimSize(1) % gates ||
      wt.getDimSize(2) != in)
    return c.error() << "W must be [" << dirs << ", " << gates << " x hidden, " << in << "], got "
                     << wt;
  int64_t hidden = c.intAttrOr("hidden_size", wt.getDimSize(1) / gates);
  if (hidden < 1 || wt.getDimSize(1) != gates * hidden || rt.getRank() != 3 ||
      rt.getDimSize(0) != dirs || rt.getDimSize(1) != gates * hidden || rt.getDimSize(2) != hidden)
    return c.error() << "W " << wt << " and R " << rt << " do not match hidden_size " << hidden;
  if (seq * dirs > kMaxSteps)
    return c.error() << "a sequence of " << seq << " steps x " << dirs
                     << " directions is over the " << kMaxSteps
                     << " Rewire unrolls (recurrent ops compile to straight-line code)";
  if (seq < 1 || batch < 1)
    return c.error() << "empty sequences are not supported";
  double clip = c.floatAttrOr("clip", 0);
  bool clipped = c.floatAttr("clip").has_value();
  if (clipped && !(clip > 0))
    return c.error() << "clip must be positive, got " << clip;
  bool linearBeforeReset = gru && c.intAttrOr("linear_before_reset", 0) != 0;
  bool inputForget = lstm && c.intAttrOr("input_forget", 0) != 0;
  SmallVector<StringRef> defaults = lstm  ? SmallVector<StringRef>{"Sigmoid", "Tanh", "Tanh"}
                                    : gru ? SmallVector<StringRef>{"Sigmoid", "Tanh"}
                                          : SmallVector<StringRef>{"Tanh"};
  auto acts = activations(c, defaults, dirs);
  if (failed(acts))
    return failure();
  Value bias = c.input(3), lens = c.input(4), h0 = c.input(5), c0 = lstm ? c.input(6) : Value(),
        peep = lstm ? c.input(7) : Value();
  auto expect = [&](Value v, ArrayRef<int64_t> shape, StringRef what) -> LogicalResult {
    if (v && typeOf(v).getShape() != shape) {
      auto d = c.error() << what << " must be [";
      llvm::interleaveComma(shape, d);
      return d << "], got " << v.getType();
    }
    return success();
  };
  SmallVector<int64_t> stateShape = layout ? SmallVector<int64_t>{batch, dirs, hidden}
                                           : SmallVector<int64_t>{dirs, batch, hidden};
  if (failed(expect(bias, {dirs, 2 * gates * hidden}, "B")) ||
      failed(expect(lens, {batch}, "sequence_lens")) ||
      failed(expect(h0, stateShape, "initial_h")) || failed(expect(c0, stateShape, "initial_c")) ||
      failed(expect(peep, {dirs, 3 * hidden}, "P")))
    return failure();
  if (layout) {
    h0 = h0 ? e.transpose(h0, {1, 0, 2}) : h0;
    c0 = c0 ? e.transpose(c0, {1, 0, 2}) : c0;
  }
  Type elt = xt.getElementType();
  auto state = RankedTensorType::get({batch, hidden}, elt);
  // Steps at or past a batch entry's length leave it alone.
  Value lensCol = lens ? e.reshape(e.cast(lens, c.b.getI64Type()), {batch, 1}) : Value();

  SmallVector<Value> ys, lastH, lastC;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const Activation *f = &(*acts)[d * defaults.size()];
    auto pick = [&](Value v) { return v ? e.squeeze(e.slice(v, 0, d, d + 1), 0) : Value(); };
    Value wd = pick(*w), rd = pick(*r), bd = pick(bias), pd = pick(peep);
    Value rT = e.transpose(rd, {1, 0});
    // Gate k's columns [k*h, (k+1)*h) of a [.., G*h] value.
    auto gate = [&](Value v, int64_t k) {
      return v ? e.slice(v, typeOf(v).getRank() - 1, k * hidden, (k + 1) * hidden) : Value();
    };
    // X W^T + Wb (+ Rb, except GRU's h gate when the reset multiplies it).
    Value xw = e.matmul(xs, e.transpose(wd, {1, 0}));
    Value rbH;
    if (bd) {
      Value wb = e.slice(bd, 0, 0, gates * hidden), rb = e.slice(bd, 0, gates * hidden, 2 * gates * hidden);
      if (linearBeforeReset) {
        rbH = gate(rb, 2);
        Value zeros = splatConstant(c, RankedTensorType::get({hidden}, elt), 0);
        rb = e.concat({gate(rb, 0), gate(rb, 1), zeros}, 0);
      }
      xw = e.add(xw, e.add(wb, rb));
    }
    Value h = h0 ? pick(h0) : splatConstant(c, state, 0);
    Value cell = lstm ? (c0 ? pick(c0) : splatConstant(c, state, 0)) : Value();
    SmallVector<Value> steps(seq);
    for (int64_t s = 0; s < seq; ++s) {
      int64_t t = reverse ? seq - 1 - s : s;
      Value pre = e.squeeze(e.slice(xw, 0, t, t + 1), 0);
      auto clipTo = [&](Value v) {
        return clipped ? e.max(e.min(v, e.num(v, clip)), e.num(v, -clip)) : v;
      };
      Value hNew, cNew;
      if (gru) {
        Value hr = e.matmul(h, rT);
        Value z = apply(e, f[0], clipTo(e.add(gate(pre, 0), gate(hr, 0))));
        Value rg = apply(e, f[0], clipTo(e.add(gate(pre, 1), gate(hr, 1))));
        Value hh;
        if (linearBeforeReset) {
          Value lin = gate(hr, 2);
          if (rbH)
            lin = e.add(lin, rbH);
          hh = e.add(gate(pre, 2), e.mul(rg, lin));
        } else {
          hh = e.add(gate(pre, 2), e.matmul(e.mul(rg, h), gate(rT, 2)));
        }
        Value cand = apply(e, f[1], clipTo(hh));
        hNew = e.add(e.mul(e.sub(e.num(z, 1), z), cand), e.mul(z, h));
      } else if (lstm) {
        Value g = e.add(pre, e.matmul(h, rT));
        Value gi = gate(g, 0), go = gate(g, 1), gf = gate(g, 2), gc = gate(g, 3);
        if (pd) {
          gi = e.add(gi, e.mul(e.slice(pd, 0, 0, hidden), cell));
          gf = e.add(gf, e.mul(e.slice(pd, 0, 2 * hidden, 3 * hidden), cell));
        }
        Value i = apply(e, f[0], clipTo(gi));
        Value fg = inputForget ? e.sub(e.num(i, 1), i) : apply(e, f[0], clipTo(gf));
        Value cc = apply(e, f[1], clipTo(gc));
        cNew = e.add(e.mul(fg, cell), e.mul(i, cc));
        if (pd)
          go = e.add(go, e.mul(e.slice(pd, 0, hidden, 2 * hidden), cNew));
        Value o = apply(e, f[0], clipTo(go));
        hNew = e.mul(o, apply(e, f[2], cNew));
      } else {
        hNew = apply(e, f[0], clipTo(e.add(pre, e.matmul(h, rT))));
      }
      Value y = hNew;
      if (lensCol) {
        Value live = e.cmp(P::lt, e.num(lensCol, double(t)), lensCol);
        y = e.where(live, hNew, e.num(hNew, 0));
        hNew = e.where(live, hNew, h);
        if (lstm)
          cNew = e.where(live, cNew, cell);
      }
      h = hNew;
      cell = cNew;
      steps[t] = e.unsqueeze(y, 0);
      if (!h)
        return failure();
    }
    ys.push_back(e.unsqueeze(e.concat(steps, 0), 1)); // [seq, 1, batch, h]
    lastH.push_back(e.unsqueeze(h, 0));
    if (lstm)
      lastC.push_back(e.unsqueeze(cell, 0));
  }
  Value y = e.concat(ys, 1), yh = e.concat(lastH, 0);
  Value yc = lstm ? e.concat(lastC, 0) : Value();
  if (layout) {
    y = e.transpose(y, {2, 0, 1, 3});
    yh = e.transpose(yh, {1, 0, 2});
    yc = yc ? e.transpose(yc, {1, 0, 2}) : yc;
  }
  SmallVector<Value> out = {y, yh};
  if (lstm)
    out.push_back(yc);
  out.resize(std::min<size_t>(out.size(), c.node->getNumResults()));
  if (llvm::any_of(out, [](Value v) { return !v; }))
    return failure();
  return out;
}

const Handler kHandlers[] = {
    {"RNN", 7, 28, recurrent},
    {"GRU", 7, 28, recurrent},
    {"LSTM", 7, 28, recurrent},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::recurrentHandlers() { return kHandlers; }
