//===- ResidualDialect.h - The residual dialect -----------------*- C++ -*-===//
//
// The `residual` dialect class and its enums (GateKind, Combine, MixWeights).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_DIALECTS_RESIDUAL_RESIDUALDIALECT_H
#define REWIRE_DIALECTS_RESIDUAL_RESIDUALDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dialect.h"

#include "dialects/residual/ResidualDialect.h.inc"
#include "dialects/residual/ResidualEnums.h.inc"

namespace rewire::residual {

/// Set by residual-detect on each raised op: what its branch is ("attention",
/// "mlp", "conv", ...) and what the skip carries ("identity", "projection").
/// Read by residual-report and the forms that differ by branch.
constexpr llvm::StringLiteral kBranchAttrName = "residual.branch";
constexpr llvm::StringLiteral kSkipAttrName = "residual.skip";

} // namespace rewire::residual

#endif // REWIRE_DIALECTS_RESIDUAL_RESIDUALDIALECT_H
