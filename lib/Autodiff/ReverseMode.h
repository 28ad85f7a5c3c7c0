//===- ReverseMode.h - Reverse-mode differentiation rules --------*- C++ -*-===//
//
// The ReverseModeOpInterface (generated from ReverseMode.td), the shared
// helpers its rules use (reducing a broadcast gradient back to an operand's
// shape, splat constants), and the registration of the rules of the nn and
// residual ops as external models.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_AUTODIFF_REVERSEMODE_H
#define REWIRE_AUTODIFF_REVERSEMODE_H

#include "dialects/nn/NNDecompose.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"

#include "lib/Autodiff/ReverseMode.h.inc"

namespace rewire::autodiff {

/// Sums `grad` over the dimensions that broadcasting stretched to produce it
/// from a value of type `target` (ONNX/NumPy rules), returning `target`'s type.
mlir::Value sumToShape(mlir::ImplicitLocOpBuilder &b, mlir::Value grad,
                       mlir::RankedTensorType target);

/// `x` with its last two dimensions swapped (nn.transpose).
mlir::Value transposeLast(mlir::ImplicitLocOpBuilder &b, mlir::Value x);

/// The adjoint of `rhs` (of type `rhs`) in `lhs . rhs` (nn.matmul) given the
/// result's adjoint `g`: `lhs^T . g`, summed over broadcast batch dimensions;
/// a 2-D weight shared by a static batch gets one product over all rows.
mlir::Value matmulRhsAdjoint(mlir::ImplicitLocOpBuilder &b, mlir::Value lhs, mlir::Value g,
                             mlir::RankedTensorType rhs);

/// `v` broadcast to `target` (materialized: v + zeros).
mlir::Value broadcastTo(mlir::ImplicitLocOpBuilder &b, mlir::Value v,
                        mlir::RankedTensorType target);

/// Splat and 0-d nn.constants (dialects/nn/NNDecompose.h).
using nn::scalar;
using nn::splat;

/// Attaches the reverse rules of the nn and residual ops.
void registerReverseModeExternalModels(mlir::DialectRegistry &registry);
void registerNNReverseRules(mlir::DialectRegistry &registry);
void registerNNConvReverseRules(mlir::DialectRegistry &registry);
void registerResidualReverseRules(mlir::DialectRegistry &registry);

} // namespace rewire::autodiff

#endif // REWIRE_AUTODIFF_REVERSEMODE_H
