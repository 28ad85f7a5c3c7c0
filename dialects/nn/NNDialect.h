//===- NNDialect.h - The nn dialect -----------------------------*- C++ -*-===//
//
// The `nn` dialect class, its enums and attributes (#nn.init).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_DIALECTS_NN_NNDIALECT_H
#define REWIRE_DIALECTS_NN_NNDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/nn/NNDialect.h.inc"
#include "dialects/nn/NNEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/nn/NNAttrs.h.inc"

#endif // REWIRE_DIALECTS_NN_NNDIALECT_H
