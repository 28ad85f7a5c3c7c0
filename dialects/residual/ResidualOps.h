//===- ResidualOps.h - Residual stream ops ----------------------*- C++ -*-===//
//
// The ops of the `residual` dialect and the StreamOpInterface they implement.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_DIALECTS_RESIDUAL_RESIDUALOPS_H
#define REWIRE_DIALECTS_RESIDUAL_RESIDUALOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/residual/ResidualDialect.h"

#include "dialects/residual/ResidualInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/residual/ResidualOps.h.inc"

#endif // REWIRE_DIALECTS_RESIDUAL_RESIDUALOPS_H
