//===- NNToLinalgPatterns.h - Pattern groups of convert-nn-to-linalg -*- C++ -*-===//
//
// convert-nn-to-linalg is split by concern: math and normalization in
// NNToLinalg.cpp, data movement in DataMovement.cpp, attention in Attention.cpp, Sinkhorn in Sinkhorn.cpp, training
// losses in Training.cpp, gradients of windowed ops in WindowGradients.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_NNTOLINALG_PATTERNS_H
#define REWIRE_PASSES_CONVERSION_NNTOLINALG_PATTERNS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace rewire {

/// Notes on each nn op of `fn` whether its operands or results are unsigned
/// integers, then makes every unsigned type of `fn` signless (Signedness.cpp).
void eraseUnsignedIntegers(mlir::func::FuncOp fn);
/// Whether `op`'s operands (results) were unsigned before the erasure.
bool hasUnsignedOperands(mlir::Operation *op);
bool hasUnsignedResults(mlir::Operation *op);

/// Converts scalar `v` from element type `from` to `to` (signless or float),
/// reading `from` as unsigned when `fromUnsigned` and writing `to` as
/// unsigned when `toUnsigned` (ONNX Cast).
mlir::Value convertElement(mlir::OpBuilder &b, mlir::Location l, mlir::Value v, mlir::Type from,
                           mlir::Type to, bool fromUnsigned = false, bool toUnsigned = false);

/// tensor.reshape of `x` to the static `type`.
mlir::Value reshapeStatic(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                          mlir::RankedTensorType type);

/// Pads the spatial dimensions of NCHW `x` by `pads` (begin values, then end
/// values) with `value`.
mlir::Value padSpatial(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       llvm::ArrayRef<int64_t> pads, double value);

/// slice, concat, squeeze, unsqueeze, cast.
void populateNNDataMovementLowerings(mlir::RewritePatternSet &patterns);

/// cross_entropy, cross_entropy_grad, scatter_add.
void populateNNTrainingLowerings(mlir::RewritePatternSet &patterns,
                                 bool scatterAsReduction = false);

/// conv_input_grad, conv_weight_grad, max_pool_grad.
void populateNNWindowGradientLowerings(mlir::RewritePatternSet &patterns);

/// attention (scores contraction, scale + causal mask, nn.softmax, nn.matmul).
void populateNNAttentionLowering(mlir::RewritePatternSet &patterns);

/// sinkhorn, sinkhorn_grad (one fused generic per op, Sinkhorn.cpp).
void populateNNSinkhornLowering(mlir::RewritePatternSet &patterns);

} // namespace rewire

#endif // REWIRE_PASSES_CONVERSION_NNTOLINALG_PATTERNS_H
