//===- ResidualDecompose.h - Residual forms in nn ops ------------*- C++ -*-===//
//
// The residual ops written in nn ops (StreamOpInterface::decompose,
// ResidualDecompose.cpp): all of a function's at once (the ONNX export,
// residual-decompose), and the piece other code needs alone, the gate of a
// gated update, which the instrumentation reports.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_DIALECTS_RESIDUAL_RESIDUALDECOMPOSE_H
#define REWIRE_DIALECTS_RESIDUAL_RESIDUALDECOMPOSE_H

#include "dialects/residual/ResidualOps.h"

namespace rewire::residual {

/// Replaces every stream op under `root` (only those named in `ops`, e.g.
/// "residual.laurel", when it is not empty) by its decomposition into nn ops
/// (StreamOpInterface::decompose; residual.hyper_write_grad, which reverse
/// rules write, likewise); residual.route stays. Fails, with the
/// op's error, on one that cannot be decomposed.
mlir::LogicalResult decomposeStreamOps(mlir::Operation *root, llvm::ArrayRef<std::string> ops = {});

/// The stream ops without a fused lowering: the pipelines decompose them
/// before the lowering to linalg.
llvm::ArrayRef<std::string> unfusedStreamOps();

/// The permutation moving `axis` of a rank-`rank` tensor last (the others
/// in order), and its inverse: how the forms that normalize rows treat a
/// feature axis that is not the last (the decompositions and the fused
/// lowering alike).
void featureAxisLastPermutation(int64_t rank, int64_t axis,
                                llvm::SmallVectorImpl<int64_t> &perm,
                                llvm::SmallVectorImpl<int64_t> &inverse);

/// `x / sqrt(mean(x^2) + eps)` over the last axis, per row (no gain): the
/// `rms` of the dialect's conventions, in nn ops.
mlir::Value rmsNormalize(mlir::ImplicitLocOpBuilder &b, mlir::Value x, double eps);

/// `1 / sqrt(mean(x^2) + eps)` over the last axis, kept as a unit axis: the
/// factor rmsNormalize divides by, for products `(x . W) r` that need not
/// write the normalized rows.
mlir::Value rmsScale(mlir::ImplicitLocOpBuilder &b, mlir::Value x, double eps);

/// residual.hyper_coeffs in two pieces, which its decomposition chains as
/// `hyperCoeffsMap((rows . W) rmsScale(rows))` with `rows =
/// hyperCoeffsRows(X)` (the projection of the normalized rows, without
/// writing them) and its reverse rule
/// (lib/Autodiff/ResidualRules.cpp) uses apart: the rows that are normalized
/// and projected (`X`'s stream rows for `tanh`, each token's streams
/// flattened for the mHC maps), and the map from the projection `z` to the
/// coefficients (`alpha`, `bias`: the op's operands or values of their types).
mlir::Value hyperCoeffsRows(mlir::ImplicitLocOpBuilder &b, HyperCoeffsOp op, mlir::Value x);
mlir::FailureOr<mlir::Value> hyperCoeffsMap(mlir::ImplicitLocOpBuilder &b, HyperCoeffsOp op,
                                            mlir::Value z, mlir::Value alpha, mlir::Value bias);

/// The sums of residual.hyper_write's reverse that read its adjoint `g`,
/// in nn ops: `du` (of type `duType`) as a residual.hyper_read of `g` by
/// `post` (which has a fused lowering), `dpost = sum_d g u` and
/// `dres = g . X^T` per token. The definition of residual.hyper_write_grad
/// (decomposeHyperWriteGrad), and the reverse rule's arithmetic where that
/// op does not apply (dynamic shapes).
llvm::SmallVector<mlir::Value, 3> hyperWriteGradSums(mlir::ImplicitLocOpBuilder &b, mlir::Value g,
                                                     mlir::Value x, mlir::Value u,
                                                     mlir::Value post, mlir::Type duType,
                                                     mlir::IntegerAttr axis,
                                                     mlir::IntegerAttr stream,
                                                     mlir::IntegerAttr layer);
llvm::SmallVector<mlir::Value, 3> decomposeHyperWriteGrad(mlir::ImplicitLocOpBuilder &b,
                                                          HyperWriteGradOp op);

/// The reverse of residual.hyper_coeffs' projection `z = r (rows . W)`
/// (`r` the rows' rms scale, `p = rows . W`) given `z`'s adjoint `dz`: the
/// adjoint of the stream (`rows` is `stream` itself or its tokens' streams
/// flattened; the result has `stream`'s type) and of `W`, summed over the
/// tokens. The definition of residual.hyper_project_grad
/// (decomposeHyperProjectGrad) and the reverse rule's arithmetic where that
/// op does not apply (per-stream rows, dynamic shapes).
std::pair<mlir::Value, mlir::Value> hyperProjectGradSums(mlir::ImplicitLocOpBuilder &b,
                                                         mlir::Value dz, mlir::Value p,
                                                         mlir::Value r, mlir::Value rows,
                                                         mlir::Value stream, mlir::Value w);
std::pair<mlir::Value, mlir::Value> decomposeHyperProjectGrad(mlir::ImplicitLocOpBuilder &b,
                                                              HyperProjectGradOp op);

/// The gate `r` of `op` in nn ops, on `h`, `u`, `weight`, `bias` (the op's
/// operands or values of their types): `sigmoid(concat[rms(h), rms(u)] W +
/// b)` for a review gate, `sigmoid(h W + b)` for a highway gate. The
/// feature axis must be the last.
mlir::Value buildGate(mlir::ImplicitLocOpBuilder &b, GatedAddOp op, mlir::Value h,
                      mlir::Value u, mlir::Value weight, mlir::Value bias);

} // namespace rewire::residual

#endif // REWIRE_DIALECTS_RESIDUAL_RESIDUALDECOMPOSE_H
