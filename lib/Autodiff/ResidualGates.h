//===- ResidualGates.h - The gates of residual ops in nn ops ----*- C++ -*-===//
//
// The gate of residual.gated_add (Review, Highway) written in nn ops: the
// reverse rule differentiates through it, residual-instrument reports its
// statistics, so both compute exactly the lowering's equations.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_AUTODIFF_RESIDUALGATES_H
#define REWIRE_AUTODIFF_RESIDUALGATES_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace rewire::autodiff {

/// rms(x) = x / sqrt(mean_d(x^2) + eps) over the last axis.
mlir::Value rmsNormalize(mlir::ImplicitLocOpBuilder &b, mlir::Value x, double eps);

/// r = sigmoid(z + bias), z = rms(h) W_h + rms(u) W_u (Review, W = [W_h; W_u]
/// of [2d, G]) or h W (Highway, W of [d, G]); shape [..., G], the feature
/// axis last.
mlir::Value gatedAddGate(mlir::ImplicitLocOpBuilder &b, mlir::Value h, mlir::Value u,
                         mlir::Value w, mlir::Value bias, bool review, double eps);

} // namespace rewire::autodiff

#endif // REWIRE_AUTODIFF_RESIDUALGATES_H
