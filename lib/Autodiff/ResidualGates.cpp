//===- ResidualGates.cpp - The gates of residual ops in nn ops ------------===//
#include "lib/Autodiff/ResidualGates.h"
#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNOps.h"

using namespace mlir;
using namespace rewire;

Value autodiff::rmsNormalize(ImplicitLocOpBuilder &b, Value x, double eps) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t last = t.getRank() - 1;
  Value ms = nn::ReduceMeanOp::create(b, nn::MulOp::create(b, x, x), b.getDenseI64ArrayAttr({last}),
                                      b.getBoolAttr(true));
  Value s = nn::SqrtOp::create(b, nn::AddOp::create(b, ms, scalar(b, t.getElementType(), eps)));
  return nn::DivOp::create(b, x, s);
}

Value autodiff::gatedAddGate(ImplicitLocOpBuilder &b, Value h, Value u, Value w, Value bias,
                             bool review, double eps) {
  int64_t d = cast<RankedTensorType>(h.getType()).getShape().back();
  Value z;
  if (review) {
    auto wt = cast<RankedTensorType>(w.getType());
    auto halfType = RankedTensorType::get({d, wt.getDimSize(1)}, wt.getElementType());
    auto halves = nn::SplitOp::create(b, TypeRange{halfType, halfType}, w, b.getI64IntegerAttr(0),
                                      b.getDenseI64ArrayAttr({d, d}));
    z = nn::AddOp::create(b, nn::MatMulOp::create(b, rmsNormalize(b, h, eps), halves.getResult(0)),
                          nn::MatMulOp::create(b, rmsNormalize(b, u, eps), halves.getResult(1)));
  } else {
    z = nn::MatMulOp::create(b, h, w);
  }
  return nn::SigmoidOp::create(b, nn::AddOp::create(b, z, bias));
}
