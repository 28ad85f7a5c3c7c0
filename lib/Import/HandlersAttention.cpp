//===- HandlersAttention.cpp - ONNX Attention, RMSNormalization, Rotary ---===//
//
// The opset 23+ transformer ops. Attention maps to nn.attention (the fused
// op residual-detect and the kernels know) when it is plain scaled
// dot-product attention, causal or not, with or without a KV cache; with
// a mask, a sliding window, padding lengths, softcap, a softmax precision
// or the QK output it is written out as ONNX's reference computes it:
// Q sqrt(scale) (K sqrt(scale))^T, softcap, + bias (mask, causal, window,
// padding), softmax (0 for fully masked rows), x V. Grouped-query
// attention repeats each KV head. RMSNormalization is nn.rms_norm;
// RotaryEmbedding rotates the first rotary_embedding_dim features of each
// head (halves, or interleaved pairs) by cos/sin caches, gathered at
// position_ids when given.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {

using P = nn::ComparePredicate;

/// [B, S, heads * D] as [B, heads, S, D].
Value splitHeads(Expr &e, Value x, int64_t heads) {
  auto t = typeOf(x);
  int64_t b = t.getDimSize(0), s = t.getDimSize(1), d = t.getDimSize(2) / heads;
  return e.transpose(e.reshape(x, {b, s, heads, d}), {0, 2, 1, 3});
}

HandlerResult attention(NodeContext &c) {
  auto q = c.tensorInput(0), k = c.tensorInput(1), v = c.tensorInput(2);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  auto qt = typeOf(*q), kt = typeOf(*k), vt = typeOf(*v);
  int64_t rank = qt.getRank();
  if (!qt.hasStaticShape() || !kt.hasStaticShape() || !vt.hasStaticShape() ||
      (rank != 3 && rank != 4) || kt.getRank() != rank || vt.getRank() != rank ||
      !isa<FloatType>(qt.getElementType()))
    return c.error() << "expects static float Q, K, V of one rank (3 or 4), got " << qt << ", "
                     << kt << ", " << vt;
  Expr e{c};
  Value Q = *q, K = *k, V = *v;
  if (rank == 3) {
    auto qh = c.intAttr("q_num_heads"), kvh = c.intAttr("kv_num_heads");
    if (!qh || !kvh || *qh < 1 || *kvh < 1 || qt.getDimSize(2) % *qh || kt.getDimSize(2) % *kvh ||
        vt.getDimSize(2) % *kvh)
      return c.error() << "3-D inputs need q_num_heads and kv_num_heads that divide the hidden sizes";
    Q = splitHeads(e, Q, *qh);
    K = splitHeads(e, K, *kvh);
    V = splitHeads(e, V, *kvh);
    if (!Q || !K || !V)
      return failure();
  }
  int64_t batch = typeOf(Q).getDimSize(0), qHeads = typeOf(Q).getDimSize(1),
          qLen = typeOf(Q).getDimSize(2), headDim = typeOf(Q).getDimSize(3);
  int64_t kvHeads = typeOf(K).getDimSize(1);
  if (typeOf(K).getDimSize(0) != batch || typeOf(V).getDimSize(0) != batch ||
      typeOf(V).getDimSize(1) != kvHeads || typeOf(K).getDimSize(3) != headDim ||
      typeOf(V).getDimSize(2) != typeOf(K).getDimSize(2) || qHeads % kvHeads)
    return c.error() << "Q [B, Hq, S, D], K [B, Hkv, T, D] and V [B, Hkv, T, Dv] do not match "
                        "(Hq must be a multiple of Hkv)";
  Value mask = c.input(3), pastK = c.input(4), pastV = c.input(5), nonpad = c.input(6);
  if (!pastK != !pastV)
    return c.error() << "past_key and past_value must be given together";
  if (pastK) {
    K = e.concat({pastK, K}, 2);
    V = e.concat({pastV, V}, 2);
    if (!K || !V)
      return c.error() << "past_key/past_value must be [B, Hkv, P, D] like K and V";
  }
  int64_t past = pastK ? typeOf(pastK).getDimSize(2) : 0;
  int64_t kvLen = typeOf(K).getDimSize(2);
  Value presentK = K, presentV = V;
  double scale = c.floatAttrOr("scale", 1.0 / std::sqrt(double(headDim)));
  bool causal = c.intAttrOr("is_causal", 0) != 0;
  double softcap = c.floatAttrOr("softcap", 0.0);
  int64_t mode = c.intAttrOr("qk_matmul_output_mode", 0);
  int64_t left = c.intAttrOr("left_window_size", -1), right = c.intAttrOr("right_window_size", -1);
  auto precision = c.intAttr("softmax_precision");
  Type elt = qt.getElementType();
  Type softmaxType = elt;
  if (precision) {
    softmaxType = elementTypeOf(c.b.getContext(), static_cast<int32_t>(*precision));
    if (!softmaxType || !isa<FloatType>(softmaxType))
      return c.error() << "softmax_precision " << *precision << " is not a float type";
  }
  if (qHeads != kvHeads) {
    // Grouped-query attention: query head h reads KV head h / (Hq / Hkv).
    Value heads = groupedHeads(c, qHeads, kvHeads);
    K = make<nn::GatherOp>(c, {K, heads}, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(1))});
    V = make<nn::GatherOp>(c, {V, heads}, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(1))});
  }
  Value Y, qkOut;
  // nn.attention's causal mask is aligned at the end (offset kvLen - qLen);
  // ONNX's at the past length.
  bool plain = !mask && !nonpad && softcap <= 0 && left < 0 && right < 0 &&
               c.node->getNumResults() <= 3 && softmaxType == elt &&
               (!causal || kvLen - qLen == past);
  if (plain) {
    auto op = nn::AttentionOp::create(
        c.b, c.loc(), RankedTensorType::get({batch, qHeads, qLen, typeOf(V).getDimSize(3)}, elt), Q,
        K, V, /*bias=*/Value(), causal ? c.b.getUnitAttr() : UnitAttr(),
        /*zero_masked_rows=*/UnitAttr(), c.b.getF32FloatAttr(scale));
    if (failed(op.verify())) {
      op.erase();
      return failure();
    }
    Y = op;
  } else {
    Value root = e.num(Q, std::sqrt(scale));
    Value qk = e.matmul(e.mul(Q, root), e.transpose(e.mul(K, root), {0, 1, 3, 2}));
    if (softcap > 0)
      qk = e.mul(e.un<nn::TanhOp>(e.div(qk, e.num(qk, softcap))), e.num(qk, softcap));
    // The additive bias [.., qLen, kvLen]: 0 where a key is attended, -inf not.
    Value zero = e.num(Q, 0), ninf = e.num(Q, -INFINITY);
    Value bias;
    if (mask) {
      auto mt = typeOf(mask);
      if (mt.getRank() < 1)
        return c.error() << "attn_mask must have a key dim";
      int64_t short_ = kvLen - mt.getDimSize(mt.getRank() - 1);
      bool isBool = mt.getElementType().isInteger(1);
      if (!isBool && mt.getElementType() != elt)
        mask = e.cast(mask, elt);
      if (short_ > 0) {
        SmallVector<int64_t> side(mt.getShape());
        side.back() = short_;
        Value fill = isBool ? splatConstant(c, RankedTensorType::get(side, mt.getElementType()), 0)
                            : splatConstant(c, RankedTensorType::get(side, elt), -INFINITY);
        mask = e.concat({mask, fill}, mt.getRank() - 1);
      } else if (short_ < 0) {
        return c.error() << "attn_mask covers " << mt.getDimSize(mt.getRank() - 1) << " keys, more than "
                         << kvLen;
      }
      bias = isBool ? e.where(mask, zero, ninf) : mask;
    }
    // Key j is visible from query i when j <= i + offset (causal) and within
    // the window; offset = past length, or per batch nonpad - qLen.
    SmallVector<int64_t> iota_i, iota_j;
    for (int64_t i = 0; i < qLen; ++i)
      iota_i.push_back(i);
    for (int64_t j = 0; j < kvLen; ++j)
      iota_j.push_back(j);
    auto i64 = c.b.getI64Type();
    Value qi = i64Constant(c, {qLen, 1}, iota_i), kj = i64Constant(c, {1, kvLen}, iota_j);
    Value lens;
    if (nonpad) {
      if (typeOf(nonpad).getNumElements() != batch)
        return c.error() << "nonpad_kv_seqlen needs one length per batch entry";
      lens = e.reshape(e.cast(nonpad, i64), {batch, 1, 1, 1});
    }
    Value offset = lens ? e.sub(lens, e.num(lens, double(qLen))) : e.num(qi, double(past));
    Value pos = e.add(qi, offset); // the query's absolute position
    auto addBias = [&](Value allowed) {
      Value b = e.where(allowed, zero, ninf);
      bias = bias ? e.add(bias, b) : b;
    };
    if (causal)
      addBias(e.cmp(P::le, kj, pos));
    if (left >= 0)
      addBias(e.cmp(P::le, e.sub(pos, kj), e.num(kj, double(left))));
    if (right >= 0)
      addBias(e.cmp(P::le, e.sub(kj, pos), e.num(kj, double(right))));
    if (lens)
      addBias(e.cmp(P::lt, kj, lens));
    Value scores = bias ? e.add(qk, bias) : qk;
    Value out3 = mode == 2 ? scores : qk;
    Value s = softmaxType == elt ? scores : e.cast(scores, softmaxType);
    Value m = e.reduce<nn::ReduceMaxOp>(s, {-1});
    // A fully masked row (max -inf) gives 0, not NaN.
    Value dead = e.cmp(P::eq, m, e.num(s, -INFINITY));
    Value ex = e.un<nn::ExpOp>(e.sub(s, e.where(dead, e.num(s, 0), m)));
    Value sum = e.reduce<nn::ReduceSumOp>(ex, {-1});
    Value probs = e.where(dead, e.num(s, 0), e.div(ex, e.where(dead, e.num(s, 1), sum)));
    if (softmaxType != elt)
      probs = e.cast(probs, elt);
    if (mode == 3)
      out3 = probs;
    Y = e.matmul(probs, V);
    qkOut = out3;
  }
  if (rank == 3)
    Y = e.reshape(e.transpose(Y, {0, 2, 1, 3}), {batch, qLen, qHeads * typeOf(V).getDimSize(3)});
  SmallVector<Value> out = {Y, presentK, presentV, qkOut};
  out.resize(std::min<size_t>(out.size(), c.node->getNumResults()));
  if (llvm::any_of(out, [](Value r) { return !r; }))
    return failure();
  return out;
}

/// LinearAttention (opset 27) unrolled over the static sequence, in f32 as
/// ONNX's reference: per step the state S [B, Hkv, dk, dv] decays by
/// exp(g_t) (gated rules), takes k_t (x) v_t -- v_t corrected to
/// beta_t (v_t - S^T k_t) by the delta rules -- and o_t = scale q_t^T S
/// (query head h reads KV head h / (Hq / Hkv)).
HandlerResult linearAttention(NodeContext &c) {
  auto q = c.tensorInput(0), k = c.tensorInput(1), v = c.tensorInput(2);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  std::string rule = c.stringAttr("update_rule").value_or("gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    return c.error() << "update_rule '" << rule << "' is not linear, gated, delta or gated_delta";
  bool gating = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  auto qh = c.intAttr("q_num_heads"), kvh = c.intAttr("kv_num_heads");
  auto qt = typeOf(*q), kt = typeOf(*k), vt = typeOf(*v);
  if (!qh || !kvh || *qh < 1 || *kvh < 1 || *qh % *kvh || qt.getRank() != 3 || kt.getRank() != 3 ||
      vt.getRank() != 3 || !qt.hasStaticShape() || !kt.hasStaticShape() || !vt.hasStaticShape() ||
      qt.getDimSize(2) % *qh || kt.getDimSize(2) % *kvh || vt.getDimSize(2) % *kvh ||
      !isa<FloatType>(qt.getElementType()))
    return c.error() << "expects static float query/key/value [B, T, H*D] and q_num_heads a multiple "
                        "of kv_num_heads dividing their last dims";
  Value decay = c.input(4), beta = c.input(5), past = c.input(3);
  if (gating != bool(decay) || delta != bool(beta))
    return c.error() << "update_rule '" << rule << "' " << (gating ? "needs" : "takes no")
                     << " decay and " << (delta ? "needs" : "takes no") << " beta";
  int64_t batch = qt.getDimSize(0), steps = qt.getDimSize(1), dk = qt.getDimSize(2) / *qh,
          dv = vt.getDimSize(2) / *kvh;
  constexpr int64_t kMaxSteps = 2048;
  if (steps > kMaxSteps)
    return c.error() << "a sequence of " << steps << " steps is over the " << kMaxSteps
                     << " Rewire unrolls";
  Expr e{c};
  Type f32 = c.b.getF32Type(), elt = qt.getElementType();
  auto f = [&](Value x) { return x && typeOf(x).getElementType() != f32 ? e.cast(x, f32) : x; };
  Value Q = splitHeads(e, f(*q), *qh), K = splitHeads(e, f(*k), *kvh), V = splitHeads(e, f(*v), *kvh);
  // decay [B, T, Hkv or Hkv*dk] -> [B, Hkv, T, 1 or dk]; beta [B, T, Hkv or 1] -> [B, H, T, 1].
  Value G, Bt;
  if (decay) {
    auto dt = typeOf(decay);
    int64_t last = dt.getRank() == 3 ? dt.getDimSize(2) : -1;
    if (last != *kvh && last != *kvh * dk)
      return c.error() << "decay must be [B, T, kv_num_heads] or [B, T, kv_num_heads * d_k], got "
                       << dt;
    G = last == *kvh ? e.transpose(e.reshape(f(decay), {batch, steps, *kvh, 1}), {0, 2, 1, 3})
                     : splitHeads(e, f(decay), *kvh);
  }
  if (beta) {
    auto bt = typeOf(beta);
    int64_t last = bt.getRank() == 3 ? bt.getDimSize(2) : -1;
    if (last != *kvh && last != 1)
      return c.error() << "beta must be [B, T, kv_num_heads] or [B, T, 1], got " << bt;
    Bt = e.transpose(e.reshape(f(beta), {batch, steps, last, 1}), {0, 2, 1, 3});
  }
  SmallVector<int64_t> stateShape = {batch, *kvh, dk, dv};
  Type stateElt = past ? typeOf(past).getElementType() : elt;
  if (past && typeOf(past).getShape() != ArrayRef<int64_t>(stateShape))
    return c.error() << "past_state must be [B, kv_num_heads, d_k, d_v], got " << past.getType();
  Value S = past ? f(past) : splatConstant(c, RankedTensorType::get(stateShape, f32), 0);
  double scale = c.floatAttrOr("scale", 0);
  if (scale == 0)
    scale = 1 / std::sqrt(double(dk));
  Value heads;
  if (*qh != *kvh)
    heads = groupedHeads(c, *qh, *kvh);
  auto axis1 = c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(1));
  SmallVector<Value> outs;
  for (int64_t t = 0; t < steps; ++t) {
    auto at = [&](Value x) { return e.slice(x, 2, t, t + 1); };
    Value qs = at(Q), ks = at(K), vs = at(V);
    if (gating)
      S = e.mul(S, e.transpose(e.un<nn::ExpOp>(at(G)), {0, 1, 3, 2}));
    if (delta)
      vs = e.mul(at(Bt), e.sub(vs, e.matmul(ks, S)));
    S = e.add(S, e.matmul(e.transpose(ks, {0, 1, 3, 2}), vs));
    Value read = heads ? make<nn::GatherOp>(c, {S, heads}, {axis1}) : S;
    outs.push_back(e.mul(e.matmul(qs, read), e.num(qs, scale)));
    if (!outs.back())
      return failure();
  }
  Value y = e.reshape(e.transpose(e.concat(outs, 2), {0, 2, 1, 3}), {batch, steps, *qh * dv});
  if (y && elt != f32)
    y = e.cast(y, elt);
  if (S && stateElt != f32)
    S = e.cast(S, stateElt);
  if (!y || !S)
    return failure();
  SmallVector<Value> out = {y, S};
  out.resize(std::min<size_t>(2, c.node->getNumResults()));
  return out;
}

HandlerResult rmsNormalization(NodeContext &c) {
  auto x = c.tensorInput(0), scale = c.tensorInput(1);
  if (failed(x) || failed(scale))
    return failure();
  auto xt = typeOf(*x);
  if (!isa<FloatType>(xt.getElementType()))
    return c.error() << "expects a float input, got " << xt;
  int64_t axis = c.intAttrOr("axis", -1), rank = xt.getRank();
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << c.intAttrOr("axis", -1) << " is out of range for rank " << rank;
  double eps = c.floatAttrOr("epsilon", 1e-5);
  Value s = *scale;
  ArrayRef<int64_t> normShape = xt.getShape().drop_front(axis);
  if (typeOf(s).getShape() != normShape) {
    // A scale that broadcasts to the normalized dims.
    Expr e{c};
    SmallVector<int64_t> axes;
    for (int64_t d = axis; d < rank; ++d)
      axes.push_back(d);
    Value ms = e.reduce<nn::ReduceMeanOp>(e.mul(*x, *x), axes);
    return e.done(e.mul(e.mul(*x, e.un<nn::SqrtOp>(e.div(e.num(*x, 1), e.add(ms, e.num(*x, eps))))), s));
  }
  auto op = nn::RMSNormOp::create(c.b, c.loc(), xt, *x, s, c.b.getI64IntegerAttr(axis),
                                  c.b.getF32FloatAttr(eps));
  if (failed(op.verify())) {
    op.erase();
    return failure();
  }
  return SmallVector<Value>{op};
}

HandlerResult rotaryEmbedding(NodeContext &c) {
  auto x = c.tensorInput(0), cosC = c.tensorInput(1), sinC = c.tensorInput(2);
  if (failed(x) || failed(cosC) || failed(sinC))
    return failure();
  auto xt = typeOf(*x);
  int64_t rank = xt.getRank();
  if (!xt.hasStaticShape() || (rank != 3 && rank != 4) || !isa<FloatType>(xt.getElementType()))
    return c.error() << "expects a static float input of rank 3 or 4, got " << xt;
  Expr e{c};
  // As [B, S, heads, D].
  Value h = *x;
  int64_t batch = xt.getDimSize(0);
  if (rank == 4) {
    h = e.transpose(h, {0, 2, 1, 3});
  } else {
    int64_t heads = c.intAttrOr("num_heads", 0);
    if (heads < 1 || xt.getDimSize(2) % heads)
      return c.error() << "a 3-D input needs num_heads dividing its hidden size " << xt.getDimSize(2);
    h = e.reshape(h, {batch, xt.getDimSize(1), heads, xt.getDimSize(2) / heads});
  }
  if (!h)
    return failure();
  auto ht = typeOf(h);
  int64_t seq = ht.getDimSize(1), heads = ht.getDimSize(2), dim = ht.getDimSize(3);
  int64_t rot = c.intAttrOr("rotary_embedding_dim", 0);
  if (rot == 0)
    rot = dim;
  if (rot < 2 || rot > dim || rot % 2)
    return c.error() << "rotary_embedding_dim " << rot << " must be even and at most the head size "
                     << dim;
  bool interleaved = c.intAttrOr("interleaved", 0) != 0;
  Value cosV = *cosC, sinV = *sinC;
  if (Value pos = c.input(3)) {
    cosV = make<nn::GatherOp>(c, {cosV, pos}, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(0))});
    sinV = make<nn::GatherOp>(c, {sinV, pos}, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(0))});
  }
  if (!cosV || !sinV)
    return failure();
  auto ct = typeOf(cosV);
  if (ct.getRank() < 2 || ct.getShape().back() != rot / 2 || typeOf(sinV).getShape() != ct.getShape())
    return c.error() << "cos_cache and sin_cache must end in rotary_embedding_dim / 2 = " << rot / 2
                     << ", got " << ct;
  // [.., S, 1, rot/2] against [B, S, heads, rot/2].
  cosV = e.unsqueeze(cosV, ct.getRank() - 1);
  sinV = e.unsqueeze(sinV, ct.getRank() - 1);
  Value part = e.slice(h, 3, 0, rot), rest = rot < dim ? e.slice(h, 3, rot, dim) : Value();
  Value x1, x2;
  if (interleaved) {
    Value pairs = e.reshape(part, {batch, seq, heads, rot / 2, 2});
    x1 = e.squeeze(e.slice(pairs, 4, 0, 1), 4);
    x2 = e.squeeze(e.slice(pairs, 4, 1, 2), 4);
  } else {
    x1 = e.slice(part, 3, 0, rot / 2);
    x2 = e.slice(part, 3, rot / 2, rot);
  }
  Value re = e.sub(e.mul(cosV, x1), e.mul(sinV, x2));
  Value im = e.add(e.mul(sinV, x1), e.mul(cosV, x2));
  Value rotated = interleaved
                      ? e.reshape(e.concat({e.unsqueeze(re, 4), e.unsqueeze(im, 4)}, 4),
                                  {batch, seq, heads, rot})
                      : e.concat({re, im}, 3);
  Value y = rest ? e.concat({rotated, rest}, 3) : rotated;
  if (!y)
    return failure();
  y = rank == 4 ? e.transpose(y, {0, 2, 1, 3}) : e.reshape(y, xt.getShape());
  return e.done(y);
}

const Handler kHandlers[] = {
    {"Attention", 23, 28, attention},
    {"RMSNormalization", 23, 28, rmsNormalization},
    {"RotaryEmbedding", 23, 28, rotaryEmbedding},
    {"LinearAttention", 27, 28, linearAttention},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::attentionHandlers() { return kHandlers; }
