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
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

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

/// Consecutive row ops over the same rows x features: elementwise ops,
/// per-row reductions over the features and per-row scalar computations
/// between them (a layer norm, a softmax, a residual form's gate). One GPU
/// kernel each (rewire-outline-kernels); one loop over row tiles each on
/// the CPU (rewire-fuse-rows).
struct RowGroup {
  llvm::SmallVector<int64_t> rows;
  int64_t width = 0;
  llvm::SmallVector<mlir::linalg::GenericOp> members;
  /// Values over rows x features, read back through the identity map.
  llvm::SmallPtrSet<mlir::Value, 8> full;
  /// Values with one element per row, and the map results they were written
  /// with (readers use the same).
  llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::AffineExpr>> perRow;

  bool produces(mlir::Value v) const { return full.contains(v) || perRow.contains(v); }
};

/// Ops that neither join nor end a group: they compute nothing per element
/// (`tensor.empty`, constants, fills on tensors, constant-index
/// `tensor.extract`s); a group's users clone them where needed.
bool isTransparent(mlir::Operation *op);

/// The row groups of `block`, in order. Only ops with pure tensor semantics
/// that are not GEMMs take part; a group starts at a full or reduce op
/// whose feature width `fits`, and ends at the first op that cannot join
/// (anything but a transparent op that does not read the group).
llvm::SmallVector<RowGroup> collectRowGroups(mlir::Block &block,
                                             llvm::function_ref<bool(int64_t)> fits);

} // namespace rewire::gpu

#endif // REWIRE_PASSES_CONVERSION_GPU_KERNELGROUPS_H
