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

/// [..., n, n] -> [n, n, ...] (perm) and back (inverse); empty for rank 2.
void matrixAxesFirst(int64_t rank, SmallVectorImpl<int64_t> &perm,
                     SmallVectorImpl<int64_t> &inverse) {
  if (rank <= 2)
    return;
  perm.append({rank - 2, rank - 1});
  for (int64_t i = 0; i + 2 < rank; ++i)
    perm.push_back(i);
  for (int64_t i = 0; i + 2 < rank; ++i)
    inverse.push_back(i + 2);
  inverse.append({0, 1});
}

Value permuted(ImplicitLocOpBuilder &b, Value x, ArrayRef<int64_t> perm) {
  return perm.empty() ? x : Value(TransposeOp::create(b, x, b.getDenseI64ArrayAttr(perm)));
}

Value sumKeep(ImplicitLocOpBuilder &b, Value x, int64_t axis) {
  return ReduceSumOp::create(b, x, b.getDenseI64ArrayAttr({axis}), b.getBoolAttr(true));
}

/// One normalization of the rounds: its result, its divisor and the axis
/// it summed over.
struct SinkhornStep {
  Value y, s;
  int64_t axis;
};

/// `iters` rounds of row (axis 1) then column (axis 0) normalization of `m`
/// ([n, n, ...]), each step kept in `steps` when given.
Value sinkhornRounds(ImplicitLocOpBuilder &b, Value m, int64_t iters,
                     SmallVectorImpl<SinkhornStep> *steps) {
  for (int64_t i = 0; i < iters; ++i)
    for (int64_t axis : {1, 0}) {
      Value s = sumKeep(b, m, axis);
      m = DivOp::create(b, m, s);
      if (steps)
        steps->push_back({m, s, axis});
    }
  return m;
}

/// exp(z - max z) per matrix, with the matrix axes first ([n, n, ...]).
Value sinkhornStart(ImplicitLocOpBuilder &b, Value z, bool stopGradient) {
  Value top = ReduceMaxOp::create(b, z, b.getDenseI64ArrayAttr({0, 1}), b.getBoolAttr(true));
  if (stopGradient) // the result does not depend on the shift
    top = StopGradientOp::create(b, top);
  return ExpOp::create(b, SubOp::create(b, z, top));
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

Value nn::decomposeSinkhorn(ImplicitLocOpBuilder &b, Value z, int64_t iters) {
  SmallVector<int64_t> perm, inverse;
  matrixAxesFirst(cast<RankedTensorType>(z.getType()).getRank(), perm, inverse);
  Value m = sinkhornStart(b, permuted(b, z, perm), /*stopGradient=*/true);
  return permuted(b, sinkhornRounds(b, m, iters, nullptr), inverse);
}

Value nn::decomposeSinkhornGrad(ImplicitLocOpBuilder &b, Value z, Value dm, int64_t iters) {
  SmallVector<int64_t> perm, inverse;
  matrixAxesFirst(cast<RankedTensorType>(z.getType()).getRank(), perm, inverse);
  Value m0 = sinkhornStart(b, permuted(b, z, perm), /*stopGradient=*/false);
  SmallVector<SinkhornStep> steps;
  sinkhornRounds(b, m0, iters, &steps);
  Value g = permuted(b, dm, perm);
  for (const SinkhornStep &st : llvm::reverse(steps))
    g = DivOp::create(b, SubOp::create(b, g, sumKeep(b, MulOp::create(b, g, st.y), st.axis)), st.s);
  return permuted(b, MulOp::create(b, g, m0), inverse);
}
