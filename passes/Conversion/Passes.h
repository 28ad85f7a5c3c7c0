//===- Passes.h - Conversions of Rewire's dialects --------------*- C++ -*-===//
//
// Declarations and registration of the conversion passes (Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_PASSES_H
#define REWIRE_PASSES_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace rewire {

/// rewire-check-indices{record-inputs}: the checks of a function's inputs,
/// on the function.
constexpr llvm::StringLiteral kInputChecksAttrName = "rewire.input_checks";
/// rewire-record-entry-points: the entry points, on the module.
constexpr llvm::StringLiteral kEntryPointsAttrName = "rewire.entry_points";
/// rewire-outline-kernels: a kernel function of one row group.
constexpr llvm::StringLiteral kRowKernelAttrName = "rewire.row_kernel";
/// rewire-kernels-to-gpu: a contraction whose output starts at zero (its
/// GEMM runs with beta = 0).
constexpr llvm::StringLiteral kBetaZeroAttrName = "rewire.beta_zero";

#define GEN_PASS_DECL
#include "passes/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Conversion/Passes.h.inc"

} // namespace rewire

#endif // REWIRE_PASSES_CONVERSION_PASSES_H
