//===- ResidualRules.cpp - Reverse rules of the residual ops --------------===//
//
// add, scale_add, tap, route and route_select directly, and hyper_coeffs'
// normalization and projection (its map through the decomposition),
// hyper_read and hyper_write. The other stream ops (gated_add, mix,
// nag_gate, nag_add, hyper_expand, ...) need no rule here: backpropagate
// differentiates them through their decomposition into nn ops
// (StreamOpInterface::decompose).
//
//===----------------------------------------------------------------------===//
#include "lib/Autodiff/Differentiate.h"
#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNOps.h"
#include "dialects/residual/ResidualDecompose.h"
#include "dialects/residual/ResidualDialect.h"
#include "dialects/residual/ResidualOps.h"


using namespace mlir;
using namespace rewire;
using namespace rewire::autodiff;

namespace {

struct AddRule : ReverseModeOpInterface::ExternalModel<AddRule, residual::AddOp> {
  LogicalResult buildAdjoints(Operation *, ImplicitLocOpBuilder &, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    out.push_back(g[0]);
    out.push_back(g[0]);
    return success();
  }
};

struct TapRule : ReverseModeOpInterface::ExternalModel<TapRule, residual::TapOp> {
  LogicalResult buildAdjoints(Operation *, ImplicitLocOpBuilder &, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    out.push_back(g[0]);
    return success();
  }
};

/// h + alpha (.) u with a scalar alpha or one per channel of the last axis.
struct ScaleAddRule : ReverseModeOpInterface::ExternalModel<ScaleAddRule, residual::ScaleAddOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<residual::ScaleAddOp>(raw);
    auto ht = cast<RankedTensorType>(op.getH().getType());
    auto at = cast<RankedTensorType>(op.getAlpha().getType());
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += ht.getRank();
    if (at.getRank() == 1 && axis != ht.getRank() - 1)
      return raw->emitError("rewire-autodiff: residual.scale_add with per-channel scales on a "
                            "non-final axis is not differentiated yet");
    out.push_back(g[0]);
    out.push_back(nn::MulOp::create(b, g[0], op.getAlpha()));
    out.push_back(sumToShape(b, nn::MulOp::create(b, g[0], op.getU()), at));
    return success();
  }
};

/// Mixture-of-Depths routing zeroes the modulator of skipped rows: the
/// gradient passes where the routed value is kept (nonzero) and stops where
/// it was zeroed.
struct RouteRule : ReverseModeOpInterface::ExternalModel<RouteRule, residual::RouteOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<residual::RouteOp>(raw);
    auto t = cast<RankedTensorType>(op.getType());
    Value kept = nn::CastOp::create(b, RankedTensorType::get(t.getShape(), b.getI1Type()), op.getResult());
    out.push_back(nn::MulOp::create(b, g[0], nn::CastOp::create(b, t, kept)));
    return success();
  }
};

/// The routed rows' indices are integers: nothing flows back to m through
/// them (the router trains through the gathered modulator instead).
struct RouteSelectRule
    : ReverseModeOpInterface::ExternalModel<RouteSelectRule, residual::RouteSelectOp> {
  LogicalResult buildAdjoints(Operation *, ImplicitLocOpBuilder &, ArrayRef<Value>,
                              SmallVectorImpl<Value> &out) const {
    out.push_back(Value());
    return success();
  }
};

/// The coefficients of a hyper stream. The map (tanh, sigmoid, Sinkhorn), on
/// small per-token tensors, is differentiated through its decomposition; the
/// costly part, the rms normalization and projection of rows `x : [..., D]`
/// (HyperDecompose.cpp), by hand: with `r = (mean(x^2) + eps)^(-1/2)`
/// (rmsScale), `P = x . W` and `z = P r` (as the decomposition computes it),
///
///   dW = x^T (r dz),   dx = r (dz W^T) - (r^3 / D) (sum_k dz P) x
///
/// so the backward reads the stream three times (r and P again, dW, dx)
/// where differentiating the normalization op by op took about ten passes;
/// with static mHC shapes the last two are one residual.hyper_project_grad,
/// which the CPU runs, merged per site, in one pass (rewire-hyper-to-kernel).
struct HyperCoeffsRule
    : ReverseModeOpInterface::ExternalModel<HyperCoeffsRule, residual::HyperCoeffsOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<residual::HyperCoeffsOp>(raw);
    Value x = residual::hyperCoeffsRows(b, op, op.getX());
    Value w = op.getWeight();
    auto xt = cast<RankedTensorType>(x.getType());
    auto wt = cast<RankedTensorType>(w.getType());
    int64_t features = xt.getDimSize(xt.getRank() - 1);
    if (ShapedType::isDynamic(features) || wt.getRank() != 2) // the general way
      return differentiateDecomposition(
          b, raw->getOperands(),
          [&](ImplicitLocOpBuilder &fb, ValueRange v) { return op.decompose(fb, v); }, g[0], out);
    Value r = residual::rmsScale(b, x, op.getEps().convertToDouble());
    Value p = nn::MatMulOp::create(b, x, w);
    Value z = nn::MulOp::create(b, p, r);
    SmallVector<Value> mapAdjoints;
    if (failed(differentiateDecomposition(
            b, {z, op.getAlpha(), op.getBias()},
            [&](ImplicitLocOpBuilder &fb, ValueRange v) {
              return residual::hyperCoeffsMap(fb, op, v[0], v[1], v[2]);
            },
            g[0], mapAdjoints)))
      return failure();
    Value dz = mapAdjoints[0] ? mapAdjoints[0] : splat(b, cast<RankedTensorType>(z.getType()), 0.0);
    // mHC's flattened rows with static shapes: one op, which the CPU merges
    // with the site's other coefficient sets and runs in one pass over the
    // stream (rewire-hyper-to-kernel); its decomposition is the same
    // arithmetic as the general way here.
    auto streamType = cast<RankedTensorType>(op.getX().getType());
    Value dx, dw;
    if (xt != streamType && streamType.hasStaticShape() && wt.hasStaticShape()) {
      auto grad = residual::HyperProjectGradOp::create(b, streamType, wt, dz, p, r, op.getX(), w);
      dx = grad.getDX();
      dw = grad.getDW();
    } else {
      std::tie(dx, dw) = residual::hyperProjectGradSums(b, dz, p, r, x, op.getX(), w);
    }
    out.push_back(dx);
    out.push_back(mapAdjoints[1]);
    out.push_back(dw);
    out.push_back(mapAdjoints[2]);
    return success();
  }
};

/// `v` with a unit axis inserted at `axis` (negative: from the end of the result).
Value unsqueezeAt(ImplicitLocOpBuilder &b, Value v, int64_t axis) {
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank() + 1;
  return nn::UnsqueezeOp::create(b, v, b.getDenseI64ArrayAttr({axis < 0 ? axis + rank : axis}));
}

Value sumAxis(ImplicitLocOpBuilder &b, Value v, int64_t axis) {
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  return nn::ReduceSumOp::create(b, v, b.getDenseI64ArrayAttr({axis < 0 ? axis + rank : axis}),
                                 b.getBoolAttr(false));
}

/// x = sum_i pre_i X_i: dX_i = pre_i g (a broadcast product, never
/// materialized first) and dpre_i = sum_d X_i g.
struct HyperReadRule : ReverseModeOpInterface::ExternalModel<HyperReadRule, residual::HyperReadOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<residual::HyperReadOp>(raw);
    Value gi = unsqueezeAt(b, g[0], -2); // [..., 1, d]
    Value dx = nn::MulOp::create(b, unsqueezeAt(b, op.getPre(), -1), gi);
    if (dx.getType() != op.getX().getType()) // a static pre against dynamic batch dims
      dx = broadcastTo(b, dx, op.getX().getType());
    out.push_back(dx);
    Value dpre = sumAxis(b, nn::MulOp::create(b, op.getX(), gi), -1);
    out.push_back(sumToShape(b, dpre, op.getPre().getType()));
    return success();
  }
};

/// X' = res . X + post^T u: dX = res^T . g, du = sum_i post_i g_i (a
/// hyper_read of the adjoint), dpost_i = sum_d g_i u and dres = g . X^T,
/// summed over the tokens when static. With static shapes the last three
/// are one residual.hyper_write_grad (its decomposition is this same
/// arithmetic).
struct HyperWriteRule
    : ReverseModeOpInterface::ExternalModel<HyperWriteRule, residual::HyperWriteOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<residual::HyperWriteOp>(raw);
    Value res = op.getRes();
    Value dx = nn::MatMulOp::create(b, transposeLast(b, res), g[0]);
    if (dx.getType() != op.getX().getType())
      dx = broadcastTo(b, dx, op.getX().getType());
    out.push_back(dx);
    // The three sums that read g: one op with static shapes (one pass over
    // each token's rows where it has a fused lowering,
    // rewire-hyper-to-kernel), its arithmetic in nn ops otherwise.
    auto xt = cast<RankedTensorType>(op.getX().getType());
    SmallVector<Value, 3> sums;
    if (xt.hasStaticShape() && g[0].getType() == xt) {
      SmallVector<int64_t> perStream(xt.getShape().drop_back());
      SmallVector<int64_t> resShape(perStream);
      resShape.push_back(xt.getShape()[xt.getRank() - 2]);
      auto grad = residual::HyperWriteGradOp::create(
          b, op.getU().getType(), RankedTensorType::get(perStream, xt.getElementType()),
          RankedTensorType::get(resShape, xt.getElementType()), g[0], op.getX(), op.getU(),
          op.getPost(), op.getAxisAttr(), op.getStreamAttr(), op.getLayerAttr());
      sums.append(grad->result_begin(), grad->result_end());
    } else {
      sums = residual::hyperWriteGradSums(b, g[0], op.getX(), op.getU(), op.getPost(),
                                          op.getU().getType(), op.getAxisAttr(),
                                          op.getStreamAttr(), op.getLayerAttr());
    }
    out.push_back(sums[0]);
    out.push_back(sumToShape(b, sums[1], op.getPost().getType()));
    out.push_back(sumToShape(b, sums[2], cast<RankedTensorType>(res.getType())));
    return success();
  }
};

} // namespace

void rewire::autodiff::registerResidualReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, residual::ResidualDialect *) {
    residual::AddOp::attachInterface<AddRule>(*ctx);
    residual::TapOp::attachInterface<TapRule>(*ctx);
    residual::ScaleAddOp::attachInterface<ScaleAddRule>(*ctx);
    residual::RouteOp::attachInterface<RouteRule>(*ctx);
    residual::RouteSelectOp::attachInterface<RouteSelectRule>(*ctx);
    residual::HyperCoeffsOp::attachInterface<HyperCoeffsRule>(*ctx);
    residual::HyperReadOp::attachInterface<HyperReadRule>(*ctx);
    residual::HyperWriteOp::attachInterface<HyperWriteRule>(*ctx);
  });
}
