//===- KernelGroups.h - Which linalg ops share a row kernel -------*- C++ -*-===//
//
// The shape analysis shared by rewire-outline-kernels (which groups ops on
// tensors) and rewire-kernels-to-gpu (which emits the kernels on buffers):
// a "row op" iterates over rows x features, features last, reading every
// operand through an in-order projection of its loops.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_GPU_KERNELGROUPS_H
#define REWIRE_PASSES_CONVERSION_GPU_KERNELGROUPS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace rewire::gpu {

/// How a linalg.generic takes part in a row kernel.
enum class RowRole {
  none,    ///< not a row op (any other loop structure or map)
  full,    ///< all loops parallel: rows x features
  reduce,  ///< rows parallel, the last (feature) loop a reduction
  rowwise, ///< all loops parallel, over the rows only (one value per row)
};

/// Whether `map`'s results are loop dimensions in increasing order or the
/// constant 0 (a unit dimension): what a row kernel can address.
bool isInOrderProjection(mlir::AffineMap map);

/// The role `op` could play (row shape free); `none` when its maps or
/// iterators do not fit. A full op could also be rowwise in a group whose
/// rows are its loops: RowGroup::role decides.
RowRole classify(mlir::linalg::GenericOp op);

/// Whether rows of `width` features fit a row kernel's registers: at most
/// 16 chunks of V-wide vectors (V = 4, 2 or 1, the largest dividing the
/// width) for each of up to 1024 threads. Wider rows (a vocabulary-wide
/// softmax) are left to generic kernels.
bool fitsRowKernel(int64_t width);
constexpr int64_t kRowKernelMaxChunks = 16, kRowKernelMaxThreads = 1024;

/// Whether `op` reduces the contraction of two operands (GEMM-like): left to
/// BLAS (cuBLAS on the GPU), never a generated kernel. A contraction of at
/// most kShortContraction terms is not: a generated kernel streams it.
bool isGemm(mlir::linalg::GenericOp op);
constexpr int64_t kShortContraction = 8;

/// The element type of a value's shaped type.
mlir::Type elementTypeOf(mlir::Value v);

} // namespace rewire::gpu

#endif // REWIRE_PASSES_CONVERSION_GPU_KERNELGROUPS_H
