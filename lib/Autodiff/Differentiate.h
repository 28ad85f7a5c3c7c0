//===- Differentiate.h - Reverse-mode differentiation of a function -*- C++ -*-===//
#ifndef REWIRE_AUTODIFF_DIFFERENTIATE_H
#define REWIRE_AUTODIFF_DIFFERENTIATE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace rewire::autodiff {

/// Rewrites `fn` (single block; first result a scalar float loss) in place to
/// return the loss followed by the gradients with respect to the selected
/// arguments: those with `nn.parameter` (`wrt` = "parameters") or every
/// float argument (`wrt` = "all"), minus parameters whose name starts with
/// one of `frozenPrefixes`. Each gradient result gets nn.name "grad:<arg>".
/// `gradArgs`, when given, receives the differentiated arguments' numbers.
mlir::LogicalResult differentiate(mlir::func::FuncOp fn, llvm::StringRef wrt,
                                  llvm::ArrayRef<std::string> frozenPrefixes,
                                  llvm::SmallVectorImpl<unsigned> *gradArgs = nullptr);

} // namespace rewire::autodiff

#endif // REWIRE_AUTODIFF_DIFFERENTIATE_H
