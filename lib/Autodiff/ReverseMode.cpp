//===- ReverseMode.cpp - The interface and the rules' shared helpers ------===//
#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNOps.h"

#include "lib/Autodiff/ReverseMode.cpp.inc"

using namespace mlir;

namespace rewire::autodiff {

Value broadcastTo(ImplicitLocOpBuilder &b, Value v, RankedTensorType target) {
  if (v.getType() == target)
    return v;
  return nn::AddOp::create(b, target, v, splat(b, target, 0.0));
}

Value sumToShape(ImplicitLocOpBuilder &b, Value grad, RankedTensorType target) {
  auto type = cast<RankedTensorType>(grad.getType());
  if (type == target)
    return grad;
  int64_t r = type.getRank(), t = target.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < r; ++i) {
    int64_t ti = i - (r - t);
    if (ti < 0 || (target.getDimSize(ti) == 1 && type.getDimSize(i) != 1))
      axes.push_back(i);
  }
  Value sum = grad;
  if (!axes.empty())
    sum = nn::ReduceSumOp::create(b, grad, b.getDenseI64ArrayAttr(axes), b.getBoolAttr(true));
  if (sum.getType() != target)
    sum = nn::ReshapeOp::create(b, target, sum);
  return sum;
}

void registerReverseModeExternalModels(DialectRegistry &registry) {
  registerNNReverseRules(registry);
  registerNNConvReverseRules(registry);
  registerResidualReverseRules(registry);
}

} // namespace rewire::autodiff
