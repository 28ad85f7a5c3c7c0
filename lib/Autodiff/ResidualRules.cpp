//===- ResidualRules.cpp - Reverse rules of the residual ops --------------===//
//
// add, scale_add and tap directly; gated_add (Review, Highway) and mix
// (ANCRe, DenseFormer), nag_gate and nag_add (NAG) through their
// decomposition into nn ops (differentiateDecomposition).
//
//===----------------------------------------------------------------------===//
#include "lib/Autodiff/Differentiate.h"
#include "lib/Autodiff/ResidualGates.h"
#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNOps.h"
#include "dialects/residual/ResidualDialect.h"
#include "dialects/residual/ResidualOps.h"

#include <cmath>

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

/// Review and Highway gates, additive and convex, per channel or per row:
/// differentiated through their decomposition into nn ops.
struct GatedAddRule : ReverseModeOpInterface::ExternalModel<GatedAddRule, residual::GatedAddOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<residual::GatedAddOp>(raw);
    auto ht = cast<RankedTensorType>(op.getH().getType());
    auto iface = cast<residual::StreamOpInterface>(raw);
    if (iface.getFeatureAxisIndex() != ht.getRank() - 1)
      return raw->emitError("rewire-autodiff: residual.gated_add is differentiated with the "
                            "feature axis last only");
    bool review = op.getGate() == residual::GateKind::review;
    bool convex = op.getCombine() == residual::Combine::convex;
    double eps = op.getEpsOrDefault();
    return differentiateDecomposition(
        b, raw->getOperands(),
        [&](ImplicitLocOpBuilder &fb, ValueRange v) -> Value {
          Value h = v[0], u = v[1];
          Value r = gatedAddGate(fb, h, u, v[2], v[3], review, eps);
          Value delta = convex ? nn::SubOp::create(fb, u, h).getResult() : u;
          return nn::AddOp::create(fb, h, nn::MulOp::create(fb, r, delta));
        },
        g[0], out);
  }
};

/// ANCRe (softmax over c / tau) and DenseFormer (free weights) mixes.
struct MixRule : ReverseModeOpInterface::ExternalModel<MixRule, residual::MixOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<residual::MixOp>(raw);
    bool softmax = op.getWeightsKind() == residual::MixWeights::softmax;
    double tau = op.getTau() ? op.getTau()->convertToDouble() : 1.0;
    size_t k = op.getStates().size();
    return differentiateDecomposition(
        b, raw->getOperands(),
        [&](ImplicitLocOpBuilder &fb, ValueRange v) -> Value {
          Value y = v[0], c = v.back();
          auto ct = cast<RankedTensorType>(c.getType());
          Type elt = ct.getElementType();
          Value p = softmax ? nn::SoftmaxOp::create(
                                  fb, nn::MulOp::create(fb, c, scalar(fb, elt, 1.0 / tau)),
                                  fb.getI64IntegerAttr(-1))
                                  .getResult()
                            : c;
          int64_t n = ct.getDimSize(0);
          auto one = RankedTensorType::get({1}, elt);
          auto parts = nn::SplitOp::create(fb, SmallVector<Type>(n, one), p, fb.getI64IntegerAttr(0),
                                           fb.getDenseI64ArrayAttr(SmallVector<int64_t>(n, 1)));
          auto weight = [&](size_t j) {
            return nn::ReshapeOp::create(fb, RankedTensorType::get({}, elt), parts.getResult(j)).getResult();
          };
          Value acc = softmax ? y : nn::MulOp::create(fb, y, weight(k)).getResult();
          for (size_t j = 0; j < k; ++j)
            acc = nn::AddOp::create(fb, acc, nn::MulOp::create(fb, v[1 + j], weight(j)));
          return acc;
        },
        g[0], out);
  }
};

/// rho = sqrt(mean_d(R^2)) per row (keepdims) and Rbar = R / rho.
std::pair<Value, Value> normalizeRows(ImplicitLocOpBuilder &b, Value r) {
  int64_t last = cast<RankedTensorType>(r.getType()).getRank() - 1;
  Value rho = nn::SqrtOp::create(b, nn::ReduceMeanOp::create(b, nn::MulOp::create(b, r, r),
                                                             b.getDenseI64ArrayAttr({last}),
                                                             b.getBoolAttr(true)));
  return {rho, nn::DivOp::create(b, r, rho)};
}

Value sumLast(ImplicitLocOpBuilder &b, Value x) {
  int64_t last = cast<RankedTensorType>(x.getType()).getRank() - 1;
  return nn::ReduceSumOp::create(b, x, b.getDenseI64ArrayAttr({last}), b.getBoolAttr(true));
}

/// NAG's modulator: m = (sum_c softmax(pi)_c sigmoid(Rbar w_c + b_c))^beta.
struct NagGateRule : ReverseModeOpInterface::ExternalModel<NagGateRule, residual::NagGateOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<residual::NagGateOp>(raw);
    double beta = op.getBeta().convertToDouble();
    return differentiateDecomposition(
        b, raw->getOperands(),
        [&](ImplicitLocOpBuilder &fb, ValueRange v) -> Value {
          Value rbar = normalizeRows(fb, v[0]).second;
          Value s = nn::SigmoidOp::create(fb, nn::AddOp::create(fb, nn::MatMulOp::create(fb, rbar, v[1]), v[2]));
          Value p = nn::SoftmaxOp::create(fb, v[3], fb.getI64IntegerAttr(-1));
          Value m = sumLast(fb, nn::MulOp::create(fb, s, p));
          if (beta != 1.0) {
            Type elt = cast<RankedTensorType>(m.getType()).getElementType();
            m = nn::PowOp::create(fb, m, scalar(fb, elt, beta));
          }
          return m;
        },
        g[0], out);
  }
};

/// NAG's update: R + rho a m sqrt(d) fperp / max(||fperp||, eps), with f
/// centred and its component along Rbar removed.
struct NagAddRule : ReverseModeOpInterface::ExternalModel<NagAddRule, residual::NagAddOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<residual::NagAddOp>(raw);
    double eps = op.getEps().convertToDouble();
    auto rt = cast<RankedTensorType>(op.getR().getType());
    int64_t last = rt.getRank() - 1;
    double d = static_cast<double>(rt.getShape().back());
    Type elt = rt.getElementType();
    return differentiateDecomposition(
        b, raw->getOperands(),
        [&](ImplicitLocOpBuilder &fb, ValueRange v) -> Value {
          Value r = v[0], f = v[1], a = v[2], m = v[3];
          auto [rho, rbar] = normalizeRows(fb, r);
          Value mean = nn::ReduceMeanOp::create(fb, f, fb.getDenseI64ArrayAttr({last}), fb.getBoolAttr(true));
          Value fc = nn::SubOp::create(fb, f, mean);
          Value along = nn::MulOp::create(
              fb, nn::MulOp::create(fb, sumLast(fb, nn::MulOp::create(fb, fc, rbar)), scalar(fb, elt, 1.0 / d)),
              rbar);
          Value fp = nn::SubOp::create(fb, fc, along);
          Value norm = nn::SqrtOp::create(fb, sumLast(fb, nn::MulOp::create(fb, fp, fp)));
          // max(norm, eps) with nn ops: [relu(norm - eps) != 0] selects.
          auto nt = cast<RankedTensorType>(norm.getType());
          Value above = nn::CastOp::create(
              fb, RankedTensorType::get(nt.getShape(), fb.getI1Type()),
              nn::ReluOp::create(fb, nn::SubOp::create(fb, norm, scalar(fb, elt, eps))));
          Value safe = nn::WhereOp::create(fb, above, norm, splat(fb, nt, eps));
          Value u = nn::DivOp::create(fb, nn::MulOp::create(fb, fp, scalar(fb, elt, std::sqrt(d))), safe);
          Value scale = nn::MulOp::create(fb, nn::MulOp::create(fb, rho, a), m);
          return nn::AddOp::create(fb, r, nn::MulOp::create(fb, scale, u));
        },
        g[0], out);
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

} // namespace

void rewire::autodiff::registerResidualReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, residual::ResidualDialect *) {
    residual::AddOp::attachInterface<AddRule>(*ctx);
    residual::TapOp::attachInterface<TapRule>(*ctx);
    residual::ScaleAddOp::attachInterface<ScaleAddRule>(*ctx);
    residual::GatedAddOp::attachInterface<GatedAddRule>(*ctx);
    residual::MixOp::attachInterface<MixRule>(*ctx);
    residual::NagGateOp::attachInterface<NagGateRule>(*ctx);
    residual::NagAddOp::attachInterface<NagAddRule>(*ctx);
    residual::RouteOp::attachInterface<RouteRule>(*ctx);
  });
}
