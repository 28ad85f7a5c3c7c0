//===- RowGather.h - Run a branch on a subset of its rows --------*- C++ -*-===//
//
// Mixture-of-Depths that saves compute (residual-mod): a sublayer branch
// computed from a stream state [B, T, d] is cloned onto the routed rows
// [B, K, d], every shape along the token axis retyped from T to K.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_TRANSFORMS_ROWGATHER_H
#define REWIRE_PASSES_TRANSFORMS_ROWGATHER_H

#include "mlir/IR/Builders.h"

#include <string>

namespace rewire {

/// The ops computing `output` from `input` (the forward slice of `input`
/// that `output` depends on), in block order, all in `output`'s block; null
/// values and other blocks give an empty list.
llvm::SmallVector<mlir::Operation *> branchOps(mlir::Value input, mlir::Value output);

/// Clones the branch `ops` (from branchOps) at `b`'s insertion point with
/// `input` replaced by `rows`, which has `input`'s type except K instead of
/// T on axis 1 (the rows at the flat indices `indices`, [B, K], of
/// residual.route_select), and returns the clone of `output`. The branch sees the rows
/// as its whole sequence: a reduction or an attention over the token axis
/// covers the routed rows only. Fails, with the clones erased and `why` set
/// to a sentence naming the op, where that cannot be done exactly: an
/// intermediate value used outside the branch, an op outside the nn dialect
/// or with a position-dependent shape (a slice, split, concat or gather
/// along a token axis, a reshape that splits one, a convolution or pool),
/// or a tensor from outside the branch that has a token axis (a mask or a
/// position table).
mlir::FailureOr<mlir::Value> cloneBranchOnRows(mlir::OpBuilder &b,
                                               llvm::ArrayRef<mlir::Operation *> ops,
                                               mlir::Value input, mlir::Value output,
                                               mlir::Value rows, mlir::Value indices,
                                               std::string &why);

} // namespace rewire

#endif // REWIRE_PASSES_TRANSFORMS_ROWGATHER_H
