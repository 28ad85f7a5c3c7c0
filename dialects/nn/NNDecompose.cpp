//===- NNDecompose.cpp - nn ops written as simpler nn ops -----------------===//
#include "dialects/nn/NNDecompose.h"

#include "dialects/nn/NNOps.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::nn;

namespace {
/// [1, C, 1, ...] for `x` = [N, C, ...], and the axes other than 1.
RankedTensorType channelType(RankedTensorType xt, SmallVectorImpl<int64_t> &axes) {
  SmallVector<int64_t> shape(xt.getRank(), 1);
  shape[1] = xt.getDimSize(1);
  for (int64_t i = 0; i < xt.getRank(); ++i)
    if (i != 1)
      axes.push_back(i);
  return RankedTensorType::get(shape, xt.getElementType());
}

/// Mean and biased variance over `axes`, kept as [1, C, 1, ...].
std::pair<Value, Value> momentsKeep(ImplicitLocOpBuilder &b, Value x, RankedTensorType chType,
                                    ArrayRef<int64_t> axes) {
  Value m = ReduceMeanOp::create(b, chType, x, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true));
  Value c = SubOp::create(b, x, m);
  Value v = ReduceMeanOp::create(b, chType, MulOp::create(b, c, c), b.getDenseI64ArrayAttr(axes),
                                 b.getBoolAttr(true));
  return {m, v};
}
} // namespace

Value nn::splat(ImplicitLocOpBuilder &b, RankedTensorType type, double value) {
  auto attr = DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), value));
  return ConstantOp::create(b, type, attr);
}

Value nn::scalar(ImplicitLocOpBuilder &b, Type elementType, double value) {
  return splat(b, RankedTensorType::get({}, elementType), value);
}

Value nn::decomposeBatchNorm(ImplicitLocOpBuilder &b, Value x, Value scale, Value bias,
                             Value mean, Value var, double epsilon, bool training,
                             BatchStatistics *stats) {
  auto xt = cast<RankedTensorType>(x.getType());
  auto vt = cast<RankedTensorType>(scale.getType());
  Type elt = xt.getElementType();
  // [C] <-> [1, C, 1, ...] so per-channel vectors broadcast over x.
  SmallVector<int64_t> axes;
  auto chType = channelType(xt, axes);
  auto toChannels = [&](Value v) -> Value { return ReshapeOp::create(b, chType, v); };
  auto constant = [&](double v) -> Value {
    auto t = RankedTensorType::get({}, elt);
    return ConstantOp::create(b, t, DenseElementsAttr::get(t, b.getFloatAttr(elt, v)));
  };
  Value m, v;
  if (training) {
    std::tie(m, v) = momentsKeep(b, x, chType, axes);
    if (stats) {
      stats->mean = ReshapeOp::create(b, vt, m);
      stats->var = ReshapeOp::create(b, vt, v);
    }
  } else {
    m = toChannels(mean);
    v = toChannels(var);
  }
  Value rstd = DivOp::create(b, constant(1.0),
                             SqrtOp::create(b, AddOp::create(b, v, constant(epsilon))));
  Value y = MulOp::create(b, SubOp::create(b, x, m), MulOp::create(b, rstd, toChannels(scale)));
  return AddOp::create(b, y, toChannels(bias));
}
