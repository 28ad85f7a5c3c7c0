//===- FuseAttention.cpp - nn.attention from matmul/softmax/matmul --------===//
//
// Implements nn-fuse-attention (see Passes.td): a pattern rooted at the
// final product `softmax(...) . v`, walking up through the mask and the
// scale to `q . k^T`.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "dialects/nn/NNOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <functional>

namespace rewire {
#define GEN_PASS_DEF_FUSEATTENTION
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

/// Masked scores at or below this get exactly zero weight next to any real
/// score (exp underflows): -inf, or transformers' finfo(float32).min.
constexpr double kMaskedAtMost = -1e30;

/// A static rank-4 tensor type, or null.
RankedTensorType rank4(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() && t.getRank() == 4 ? t : RankedTensorType();
}

/// The value of a splat float constant, if `v` is one.
std::optional<double> splatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// What a mask element says: the key is kept, masked, or neither (not a mask).
enum class Mask { kept, masked, invalid };

/// Whether constant `attr`, of shape [1.., tq, tk] or [tq, tk], is the
/// causal mask: `classify(element)` is kept exactly where j <= i + tk - tq
/// and masked elsewhere.
template <typename Elt, typename Classify>
bool isCausal(DenseElementsAttr attr, int64_t tq, int64_t tk, Classify classify) {
  auto type = cast<ShapedType>(attr.getType());
  int64_t rank = type.getRank();
  if (rank < 2 || type.getDimSize(rank - 2) != tq || type.getDimSize(rank - 1) != tk)
    return false;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (type.getDimSize(i) != 1)
      return false;
  int64_t shift = tk - tq;
  auto values = attr.getValues<Elt>();
  auto it = values.begin();
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t j = 0; j < tk; ++j, ++it)
      if (classify(*it) != (j <= i + shift ? Mask::kept : Mask::masked))
        return false;
  return true;
}

/// A splat float constant of the scores' element type, as a rank-0 tensor.
Value scalar(PatternRewriter &rw, Location loc, Type elt, double value) {
  auto type = RankedTensorType::get({}, elt);
  return nn::ConstantOp::create(rw, loc, type, DenseElementsAttr::get(type, rw.getFloatAttr(elt, value)));
}

/// Whether `t`'s shape broadcasts to `scores` (NumPy rules, rank <= 4).
bool broadcastsTo(Type t, RankedTensorType scores) {
  auto r = dyn_cast<RankedTensorType>(t);
  if (!r || !r.hasStaticShape() || r.getRank() > 4)
    return false;
  int64_t lead = 4 - r.getRank();
  for (int64_t i = 0; i < r.getRank(); ++i)
    if (r.getDimSize(i) != 1 && r.getDimSize(i) != scores.getDimSize(lead + i))
      return false;
  return true;
}

/// A mask peeled off the scores: the causal pattern (a constant), or an
/// additive bias (`bias` builds it, called once the match has succeeded).
struct PeeledMask {
  bool causal = false;
  std::function<Value(PatternRewriter &)> bias;
};

/// If `scores` is some `inner` under a mask (`inner + bias`, or
/// `where(cond, inner, fill)` / `where(cond, fill, inner)` with a splat
/// fill at most kMaskedAtMost), sets `inner` and `mask`. A constant mask
/// that is exactly causal becomes the causal flag.
bool peelMask(Value scores, RankedTensorType st, Value &inner, PeeledMask &mask) {
  int64_t tq = st.getDimSize(2), tk = st.getDimSize(3);
  Operation *def = scores.getDefiningOp();
  Location loc = scores.getLoc();
  Type elt = st.getElementType();
  if (auto where = dyn_cast_or_null<nn::WhereOp>(def)) {
    for (bool keptFirst : {true, false}) {
      Value x = keptFirst ? where.getX() : where.getY();
      Value fillValue = keptFirst ? where.getY() : where.getX();
      std::optional<double> fill = splatValue(fillValue);
      if (!fill || !(*fill <= kMaskedAtMost) || rank4(x) != st ||
          !broadcastsTo(where.getCond().getType(), st))
        continue;
      inner = x;
      DenseElementsAttr cond;
      // Some rows would have no key when tk < tq: the fill value matters
      // there, so the pattern is kept as a bias.
      if (tk >= tq && matchPattern(where.getCond(), m_Constant(&cond)) &&
          isCausal<bool>(cond, tq, tk, [keptFirst](bool c) {
            return c == keptFirst ? Mask::kept : Mask::masked;
          })) {
        mask.causal = true;
        return true;
      }
      Value c = where.getCond();
      double f = *fill;
      mask.bias = [=](PatternRewriter &rw) -> Value {
        Value zero = scalar(rw, loc, elt, 0.0), fv = scalar(rw, loc, elt, f);
        return keptFirst ? nn::WhereOp::create(rw, loc, c, zero, fv).getResult()
                         : nn::WhereOp::create(rw, loc, c, fv, zero).getResult();
      };
      return true;
    }
    return false;
  }
  auto add = dyn_cast_or_null<nn::AddOp>(def);
  if (!add)
    return false;
  for (auto [x, bias] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
    // The scores are the operand with the scores' shape that comes from a
    // product (possibly scaled); the other one is the bias.
    Value probe = x;
    if (Operation *d = probe.getDefiningOp(); d && isa<nn::MulOp, nn::DivOp>(d))
      probe = d->getOperand(isa<nn::MulOp>(d) && splatValue(d->getOperand(0)) ? 1 : 0);
    if (rank4(x) != st || !probe.getDefiningOp<nn::MatMulOp>() ||
        !broadcastsTo(bias.getType(), st) ||
        cast<RankedTensorType>(bias.getType()).getElementType() != elt)
      continue;
    inner = x;
    DenseElementsAttr values;
    auto classify = [](const APFloat &b) {
      double v = b.convertToDouble();
      return v == 0.0 ? Mask::kept : v <= kMaskedAtMost ? Mask::masked : Mask::invalid;
    };
    if (tk >= tq && matchPattern(bias, m_Constant(&values)) &&
        isCausal<APFloat>(values, tq, tk, classify)) {
      mask.causal = true;
      return true;
    }
    Value b = bias;
    mask.bias = [b](PatternRewriter &) { return b; };
    return true;
  }
  return false;
}

/// If `v` is `inner * c` or `inner / c` for a positive finite scalar
/// constant `c`, sets `inner` and multiplies `scale` by the factor.
bool peelScale(Value v, Value &inner, double &scale) {
  Operation *def = v.getDefiningOp();
  auto accept = [&](Value x, std::optional<double> c, bool divide) {
    if (!c || !(*c > 0.0) || !std::isfinite(*c) || !isa<RankedTensorType>(x.getType()) ||
        x.getType() != v.getType())
      return false;
    double factor = divide ? 1.0 / *c : *c;
    if (!std::isfinite(factor) || !(factor > 0.0))
      return false;
    inner = x;
    scale *= factor;
    return true;
  };
  if (auto div = dyn_cast_or_null<nn::DivOp>(def))
    return accept(div.getLhs(), splatValue(div.getRhs()), /*divide=*/true);
  if (auto mul = dyn_cast_or_null<nn::MulOp>(def))
    return accept(mul.getLhs(), splatValue(mul.getRhs()), false) ||
           accept(mul.getRhs(), splatValue(mul.getLhs()), false);
  return false;
}

/// k ([B, H, Tk, D]) from k^T ([B, H, D, Tk]) as exporters write it: an
/// nn.transpose swapping the last two dimensions (folded into a new
/// permutation of its source), or the dynamo exporter's reshape to
/// [B*H, Tk, D] -> transpose -> reshape back, whose source is k reshaped
/// (itself, or the grouped-query expansion [B, Hkv, H/Hkv, Tk, D] that
/// LLaMA's repeat_kv writes). Anything else: k^T transposed, keys the
/// kernel reads strided by Tk (LLaMA's dynamo export, before: its attention
/// loop 3.9% of a forward's samples, 0.4% with rows of keys).
Value keysFrom(PatternRewriter &rw, Location loc, Value kt) {
  SmallVector<int64_t> perm = {0, 1, 3, 2};
  Value source = kt;
  if (auto t = kt.getDefiningOp<nn::TransposeOp>(); t && t.getPerm()) {
    ArrayRef<int64_t> inner = *t.getPerm();
    perm = {inner[0], inner[1], inner[3], inner[2]};
    source = t.getX();
  } else if (auto outer = kt.getDefiningOp<nn::ReshapeOp>()) {
    auto t = outer.getX().getDefiningOp<nn::TransposeOp>();
    auto in = t ? t.getX().getDefiningOp<nn::ReshapeOp>() : nn::ReshapeOp();
    RankedTensorType ktt = rank4(kt);
    auto mid = in ? dyn_cast<RankedTensorType>(in.getType()) : RankedTensorType();
    auto x = in ? dyn_cast<RankedTensorType>(in.getX().getType()) : RankedTensorType();
    if (t && t.getPerm() && ArrayRef<int64_t>(*t.getPerm()) == ArrayRef<int64_t>{0, 2, 1} && ktt &&
        x && x.hasStaticShape() && mid && mid.getRank() == 3 && mid.hasStaticShape() &&
        mid.getDimSize(0) == ktt.getDimSize(0) * ktt.getDimSize(1) &&
        mid.getDimSize(1) == ktt.getDimSize(3) && mid.getDimSize(2) == ktt.getDimSize(2)) {
      // k[b, h, t, d] = mid[b*H + h, t, d]: mid (and its source) reshaped.
      auto keys = RankedTensorType::get({ktt.getDimSize(0), ktt.getDimSize(1), ktt.getDimSize(3),
                                         ktt.getDimSize(2)},
                                        ktt.getElementType());
      if (x == keys)
        return in.getX();
      return nn::ReshapeOp::create(rw, loc, keys, in.getX()).getResult();
    }
  }
  if (perm == SmallVector<int64_t>{0, 1, 2, 3})
    return source;
  return nn::TransposeOp::create(rw, loc, source, rw.getDenseI64ArrayAttr(perm));
}

/// The softmax whose weights `probs` are, used by nothing else: `probs`
/// itself, or the dynamo exporter's `where(p != p, 0, p)` around it (NaN
/// weights of fully masked rows set to 0; sets `zeroMaskedRows`).
nn::SoftmaxOp softmaxBehindNanGuard(Value probs, bool &zeroMaskedRows) {
  if (auto softmax = probs.getDefiningOp<nn::SoftmaxOp>())
    return softmax.getResult().hasOneUse() ? softmax : nn::SoftmaxOp();
  auto where = probs.getDefiningOp<nn::WhereOp>();
  auto softmax = where ? where.getY().getDefiningOp<nn::SoftmaxOp>() : nn::SoftmaxOp();
  auto isNan = where ? where.getCond().getDefiningOp<nn::CompareOp>() : nn::CompareOp();
  std::optional<double> zero = where ? splatValue(where.getX()) : std::nullopt;
  if (!softmax || !isNan || !zero || *zero != 0.0 || !probs.hasOneUse() ||
      !isNan.getResult().hasOneUse() || isNan.getPredicate() != nn::ComparePredicate::ne ||
      isNan.getLhs() != softmax.getResult() || isNan.getRhs() != softmax.getResult() ||
      where.getType() != softmax.getType())
    return nn::SoftmaxOp();
  for (Operation *user : softmax.getResult().getUsers())
    if (user != isNan.getOperation() && user != where.getOperation())
      return nn::SoftmaxOp();
  zeroMaskedRows = true;
  return softmax;
}

struct FuseAttentionPattern : OpRewritePattern<nn::MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(nn::MatMulOp out, PatternRewriter &rw) const override {
    bool zeroMaskedRows = false;
    auto softmax = softmaxBehindNanGuard(out.getLhs(), zeroMaskedRows);
    RankedTensorType pt = softmax ? rank4(softmax.getResult()) : RankedTensorType();
    RankedTensorType vt = rank4(out.getRhs()), ot = rank4(out.getResult());
    int64_t axis = softmax ? static_cast<int64_t>(softmax.getAxis()) : 0;
    if (!pt || !vt || !ot || (axis != -1 && axis != 3))
      return rw.notifyMatchFailure(out, "not softmax(rank-4 scores over keys) . v");
    int64_t b = pt.getDimSize(0), h = pt.getDimSize(1), tk = pt.getDimSize(3);
    if (vt.getDimSize(0) != b || vt.getDimSize(1) != h || vt.getDimSize(2) != tk)
      return rw.notifyMatchFailure(out, "v does not match the scores (broadcast batch or heads)");

    // Walk up: mask and scale (either order), then q . k^T; each op of the
    // chain used once (a backward pass reading one keeps the ops).
    Value s = softmax.getX();
    PeeledMask mask;
    bool masked = false, scaled = false;
    double scale = 1.0, biasFactor = 1.0; // biasFactor: a scale outside the mask
    for (int step = 0; step < 2; ++step) {
      Value inner;
      if (!s.hasOneUse())
        break;
      if (!masked && peelMask(s, pt, inner, mask)) {
        masked = true;
        s = inner;
      } else if (!scaled && peelScale(s, inner, scale)) {
        scaled = true;
        if (!masked)
          biasFactor = scale;
        s = inner;
      }
    }
    auto qk = s.getDefiningOp<nn::MatMulOp>();
    if (!qk || !s.hasOneUse())
      return rw.notifyMatchFailure(out, "the scores are not a product q . k^T used once");
    // PyTorch's SDPA decomposition scales q and k^T by sqrt(scale) each.
    Value q = qk.getLhs(), kt = qk.getRhs(), inner;
    if (peelScale(q, inner, scale))
      q = inner;
    if (peelScale(kt, inner, scale))
      kt = inner;
    RankedTensorType qt = rank4(q), ktt = rank4(kt);
    if (!qt || !ktt || qt.getDimSize(0) != b || qt.getDimSize(1) != h || ktt.getDimSize(0) != b ||
        ktt.getDimSize(1) != h || ktt.getDimSize(3) != tk || ktt.getElementType() != qt.getElementType() ||
        vt.getElementType() != qt.getElementType())
      return rw.notifyMatchFailure(out, "q or k^T is not [B, H, T, D] like the scores");
    if (!std::isfinite(scale) || !(scale > 0.0))
      return rw.notifyMatchFailure(out, "the combined scale is not positive and finite");

    Location loc = out.getLoc();
    Value k = keysFrom(rw, loc, kt);
    Value bias;
    if (mask.bias) {
      bias = mask.bias(rw);
      // softmax(c * (q.k + bias)): the kernel adds the bias after scaling.
      if (biasFactor != 1.0)
        bias = nn::MulOp::create(rw, loc, bias, scalar(rw, loc, pt.getElementType(), biasFactor))
                   .getResult();
    }
    auto attention = nn::AttentionOp::create(rw, loc, ot, q, k, out.getRhs(), bias,
                                             mask.causal ? rw.getUnitAttr() : UnitAttr(),
                                             zeroMaskedRows ? rw.getUnitAttr() : UnitAttr(),
                                             rw.getF32FloatAttr(static_cast<float>(scale)));
    rw.replaceOp(out, attention.getResult());
    return success();
  }
};

struct FuseAttentionPass : rewire::impl::FuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttentionPattern>(&getContext());
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
