//===- Differentiate.h - Reverse-mode differentiation of a function -*- C++ -*-===//
#ifndef REWIRE_AUTODIFF_DIFFERENTIATE_H
#define REWIRE_AUTODIFF_DIFFERENTIATE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <string>

namespace rewire::autodiff {

/// Rewrites `fn` (single block; first result a scalar float loss) in place to
/// return the loss followed by the gradients with respect to the selected
/// arguments: those with `nn.parameter` (`wrt` = "parameters") or every
/// float argument (`wrt` = "all"), minus parameters whose name starts with
/// one of `frozenPrefixes`. Each gradient result gets nn.name "grad:<arg>".
/// `gradArgs`, when given, receives the differentiated arguments' numbers.
/// Arguments numbered in `buffers` (batch-norm running statistics) are never
/// differentiated.
mlir::LogicalResult differentiate(mlir::func::FuncOp fn, llvm::StringRef wrt,
                                  llvm::ArrayRef<std::string> frozenPrefixes,
                                  llvm::SmallVectorImpl<unsigned> *gradArgs = nullptr,
                                  llvm::ArrayRef<unsigned> buffers = {});

/// The reverse walk: for `ops` (in forward order) from last to first, every
/// op with an adjoint on a result and a varied operand gets its rule's
/// operand adjoints, summed into `adjoint`. Backward ops go at `b`.
mlir::LogicalResult backpropagate(mlir::ImplicitLocOpBuilder &b,
                                  llvm::ArrayRef<mlir::Operation *> ops,
                                  llvm::DenseMap<mlir::Value, mlir::Value> &adjoint,
                                  llvm::function_ref<bool(mlir::Value)> isVaried);

/// A rule by decomposition: builds `forward(b, operands)` (nn ops computing
/// the op's result again) at `b`, then backpropagates `resultAdjoint`
/// through those ops; `operandAdjoints` gets one adjoint (or null) per
/// operand. Composite ops (gated residual updates, mixes) use it.
mlir::LogicalResult
differentiateDecomposition(mlir::ImplicitLocOpBuilder &b, mlir::ValueRange operands,
                           llvm::function_ref<mlir::FailureOr<mlir::Value>(
                               mlir::ImplicitLocOpBuilder &, mlir::ValueRange)>
                               forward,
                           mlir::Value resultAdjoint,
                           llvm::SmallVectorImpl<mlir::Value> &operandAdjoints);

} // namespace rewire::autodiff

#endif // REWIRE_AUTODIFF_DIFFERENTIATE_H
