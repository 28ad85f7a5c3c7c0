//===- NNOps.h - nn dialect ops ---------------------------------*- C++ -*-===//
//
// The ops of the `nn` dialect.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_DIALECTS_NN_NNOPS_H
#define REWIRE_DIALECTS_NN_NNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/nn/NNDialect.h"
#include "dialects/nn/NNShapes.h"

#define GET_OP_CLASSES
#include "dialects/nn/NNOps.h.inc"

#endif // REWIRE_DIALECTS_NN_NNOPS_H
