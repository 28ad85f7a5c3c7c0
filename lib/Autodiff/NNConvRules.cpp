//===- NNConvRules.cpp - Reverse rules of the convolutional-network ops ---===//
//
// conv (nn.conv_input_grad, nn.conv_weight_grad, the bias gradient as a
// channel sum), conv_input_grad itself (ConvTranspose: a conv and a weight
// gradient), max_pool (nn.max_pool_grad, first maximum of each window),
// global_average_pool (the gradient spread evenly) and batch_norm (through
// its decomposition, with batch statistics in training mode, so the
// statistics' own dependence on x is differentiated too).
//
//===----------------------------------------------------------------------===//
#include "lib/Autodiff/Differentiate.h"
#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNDecompose.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/NNOps.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::autodiff;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

template <typename Derived, typename Op>
struct Rule : ReverseModeOpInterface::ExternalModel<Derived, Op> {};

struct ConvRule : Rule<ConvRule, nn::ConvOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<nn::ConvOp>(raw);
    auto xt = typeOf(op.getX()), wt = typeOf(op.getW());
    if (xt.getRank() != 4 || !xt.hasStaticShape() || !wt.hasStaticShape())
      return raw->emitError("rewire-autodiff: nn.conv is differentiated for static 2-D "
                            "convolutions only, got ")
             << xt;
    out.push_back(nn::ConvInputGradOp::create(b, xt, g[0], op.getW(), op.getStridesAttr(),
                                              op.getPadsAttr(), op.getDilationsAttr(),
                                              op.getGroupAttr()));
    out.push_back(nn::ConvWeightGradOp::create(b, wt, op.getX(), g[0], op.getStridesAttr(),
                                               op.getPadsAttr(), op.getDilationsAttr(),
                                               op.getGroupAttr()));
    if (Value bias = op.getB())
      out.push_back(nn::ReduceSumOp::create(b, typeOf(bias), g[0],
                                            b.getDenseI64ArrayAttr({0, 2, 3}),
                                            b.getBoolAttr(false)));
    return success();
  }
};

/// y = conv_input_grad(u, w), a transposed convolution (ONNX ConvTranspose):
/// y is the adjoint map of conv(., w) applied to u, so du = conv(g, w) and
/// dw = conv_weight_grad(g, u) -- the convolution's weight gradient with g
/// as its input and u as its output gradient.
struct ConvInputGradRule : Rule<ConvInputGradRule, nn::ConvInputGradOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<nn::ConvInputGradOp>(raw);
    auto ut = typeOf(op.getDy()), wt = typeOf(op.getW()), yt = typeOf(op.getResult());
    if (yt.getRank() != 4 || !yt.hasStaticShape() || !ut.hasStaticShape() || !wt.hasStaticShape())
      return raw->emitError("rewire-autodiff: nn.conv_input_grad is differentiated for static "
                            "2-D convolutions only, got ")
             << yt;
    out.push_back(nn::ConvOp::create(b, ut, g[0], op.getW(), Value(), op.getStridesAttr(),
                                     op.getPadsAttr(), op.getDilationsAttr(), op.getGroupAttr()));
    out.push_back(nn::ConvWeightGradOp::create(b, wt, g[0], op.getDy(), op.getStridesAttr(),
                                               op.getPadsAttr(), op.getDilationsAttr(),
                                               op.getGroupAttr()));
    return success();
  }
};

struct MaxPoolRule : Rule<MaxPoolRule, nn::MaxPoolOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<nn::MaxPoolOp>(raw);
    auto xt = typeOf(op.getX());
    if (xt.getRank() != 4 || !xt.hasStaticShape())
      return raw->emitError("rewire-autodiff: nn.max_pool is differentiated for static 2-D "
                            "pooling only, got ")
             << xt;
    out.push_back(nn::MaxPoolGradOp::create(b, xt, op.getX(), g[0], op.getKernelShapeAttr(),
                                            op.getStridesAttr(), op.getPadsAttr()));
    return success();
  }
};

struct GlobalAveragePoolRule : Rule<GlobalAveragePoolRule, nn::GlobalAveragePoolOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<nn::GlobalAveragePoolOp>(raw);
    auto xt = typeOf(op.getX());
    if (!xt.hasStaticShape())
      return raw->emitError("rewire-autodiff: nn.global_average_pool needs static shapes");
    double n = 1;
    for (int64_t i = 2; i < xt.getRank(); ++i)
      n *= static_cast<double>(xt.getDimSize(i));
    Value scaled = nn::MulOp::create(b, g[0], scalar(b, xt.getElementType(), 1.0 / n));
    out.push_back(broadcastTo(b, scaled, xt));
    return success();
  }
};

struct BatchNormRule : Rule<BatchNormRule, nn::BatchNormOp> {
  LogicalResult buildAdjoints(Operation *raw, ImplicitLocOpBuilder &b, ArrayRef<Value> g,
                              SmallVectorImpl<Value> &out) const {
    auto op = cast<nn::BatchNormOp>(raw);
    double eps = op.getEpsilon().convertToDouble();
    bool training = op.getTraining();
    return differentiateDecomposition(
        b, raw->getOperands(),
        [&](ImplicitLocOpBuilder &fb, ValueRange v) {
          return nn::decomposeBatchNorm(fb, v[0], v[1], v[2], v[3], v[4], eps, training);
        },
        g[0], out);
  }
};

} // namespace

void rewire::autodiff::registerNNConvReverseRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, nn::NNDialect *) {
    nn::ConvOp::attachInterface<ConvRule>(*ctx);
    nn::ConvInputGradOp::attachInterface<ConvInputGradRule>(*ctx);
    nn::MaxPoolOp::attachInterface<MaxPoolRule>(*ctx);
    nn::GlobalAveragePoolOp::attachInterface<GlobalAveragePoolRule>(*ctx);
    nn::BatchNormOp::attachInterface<BatchNormRule>(*ctx);
  });
}
