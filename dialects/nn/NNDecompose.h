//===- NNDecompose.h - nn ops written as simpler nn ops ---------*- C++ -*-===//
//
// Decompositions shared by the lowering and the reverse rules, so both see
// the same arithmetic: batch normalization with batch statistics (training
// mode) or running statistics; and the constants decompositions are built
// with.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_DIALECTS_NN_NNDECOMPOSE_H
#define REWIRE_DIALECTS_NN_NNDECOMPOSE_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace rewire::nn {

/// A splat nn.constant of `type` (any shape, float elements) holding `value`.
mlir::Value splat(mlir::ImplicitLocOpBuilder &b, mlir::RankedTensorType type, double value);

/// A 0-d nn.constant holding `value`, of the float `elementType`.
mlir::Value scalar(mlir::ImplicitLocOpBuilder &b, mlir::Type elementType, double value);

/// The batch statistics of a training-mode batch normalization, as `[C]`
/// vectors: the mean and the biased variance over every axis but 1.
struct BatchStatistics {
  mlir::Value mean, var;
};

/// `(x - m) / sqrt(v + eps) * scale + bias` in nn ops, with `m`, `v` the
/// `[C]` operands `mean`, `var` or, when `training`, the batch statistics
/// (returned in `stats` when given). `x` is `[N, C, ...]`.
mlir::Value decomposeBatchNorm(mlir::ImplicitLocOpBuilder &b, mlir::Value x, mlir::Value scale,
                               mlir::Value bias, mlir::Value mean, mlir::Value var,
                               double epsilon, bool training, BatchStatistics *stats = nullptr);

/// nn.sinkhorn's arithmetic in nn ops: exp(z - max) over each matrix of the
/// last two axes, then `iters` rounds of row and column normalization. The
/// rounds run with the matrix axes first, so every op's innermost loop is
/// over the matrices (long and contiguous: it vectorizes).
mlir::Value decomposeSinkhorn(mlir::ImplicitLocOpBuilder &b, mlir::Value z, int64_t iters);

/// nn.sinkhorn_grad's arithmetic in nn ops: the forward again, keeping each
/// round's sums and results, then from the last round back
/// `dx = (dy - sum(dy * y)) / s` per normalization and `dz = dm0 * m0`.
mlir::Value decomposeSinkhornGrad(mlir::ImplicitLocOpBuilder &b, mlir::Value z, mlir::Value dm,
                                  int64_t iters);

} // namespace rewire::nn

#endif // REWIRE_DIALECTS_NN_NNDECOMPOSE_H
