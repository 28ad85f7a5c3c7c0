//===- HyperToLinalg.h - Hyper stream ops to linalg --------------*- C++ -*-===//
//
// Internal to convert-residual-to-linalg: the fused lowering of
// residual.hyper_expand, hyper_read, hyper_write and hyper_reduce.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_HYPERTOLINALG_H
#define REWIRE_PASSES_CONVERSION_HYPERTOLINALG_H

#include "mlir/IR/PatternMatch.h"

namespace rewire {

/// Adds the hyper stream ops' lowerings to linalg on tensors (static shapes).
void populateHyperToLinalgPatterns(mlir::RewritePatternSet &patterns);

} // namespace rewire

#endif // REWIRE_PASSES_CONVERSION_HYPERTOLINALG_H
