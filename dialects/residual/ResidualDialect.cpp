//===- ResidualDialect.cpp - The residual dialect -------------------------===//
//
// Registers the residual ops and emits the generated dialect, enum and
// interface definitions.
//
//===----------------------------------------------------------------------===//
#include "dialects/residual/ResidualDialect.h"
#include "dialects/residual/ResidualOps.h"
#include "dialects/nn/NNDialect.h"

using namespace mlir;
using namespace rewire::residual;

#include "dialects/residual/ResidualDialect.cpp.inc"
#include "dialects/residual/ResidualEnums.cpp.inc"
#include "dialects/residual/ResidualInterfaces.cpp.inc"

void ResidualDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/residual/ResidualOps.cpp.inc"
      >();
}
