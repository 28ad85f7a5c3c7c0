//===- NNDialect.cpp - The nn dialect -------------------------------------===//
//
// Registers the nn ops and attributes, and materializes folded constants as
// nn.constant.
//
//===----------------------------------------------------------------------===//
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/NNOps.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"

using namespace mlir;
using namespace rewire::nn;

#include "dialects/nn/NNDialect.cpp.inc"
#include "dialects/nn/NNEnums.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/nn/NNOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *NNDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
