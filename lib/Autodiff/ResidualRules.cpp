//===- ResidualRules.cpp - Reverse rules of the residual ops --------------===//
//
// add, scale_add, tap, route and route_select directly. The other stream ops (gated_add,
// mix, nag_gate, nag_add, and any new form) need no rule here: backpropagate
// differentiates them through their decomposition into nn ops
// (StreamOpInterface::decompose).
//
//===----------------------------------------------------------------------===//
#include "lib/Autodiff/Differentiate.h"
#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNOps.h"
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

} // namespace

void rewire::autodiff::registerResidualReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, residual::ResidualDialect *) {
    residual::AddOp::attachInterface<AddRule>(*ctx);
    residual::TapOp::attachInterface<TapRule>(*ctx);
    residual::ScaleAddOp::attachInterface<ScaleAddRule>(*ctx);
    residual::RouteOp::attachInterface<RouteRule>(*ctx);
    residual::RouteSelectOp::attachInterface<RouteSelectRule>(*ctx);
  });
}
