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

#endif // REWIRE_DIALECTS_RESIDUAL_RESIDUALDIALECT_H
