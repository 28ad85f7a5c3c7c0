//===- Signedness.cpp - Unsigned integers in convert-nn-to-linalg ---------===//
//
// The nn dialect keeps ONNX's unsigned element types (ui8 ... ui64) so that
// an op's meaning is in its types; arith and linalg take signless integers
// only. Before the patterns run, convert-nn-to-linalg notes on every nn op
// whether its operands or results were unsigned, then gives every value of
// the function the signless type of the same width. The patterns read the
// note to pick arith's unsigned forms (divui, maxui, cmpi ult, uitofp,
// extui, fptoui) where signedness changes the result; add, sub, mul and data
// movement are the same on the bits. This is how StableHLO's linalg lowering
// treats unsigned types, without a type converter threaded through every
// pattern (most of which take floats only).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/NNToLinalg/NNToLinalgPatterns.h"

#include "dialects/nn/NNDialect.h"
#include "dialects/nn/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kUnsignedOperands = "nn.unsigned_operands";
constexpr llvm::StringLiteral kUnsignedResults = "nn.unsigned_results";

bool isUnsignedType(Type t) {
  return getElementTypeOrSelf(t).isUnsignedInteger();
}

/// `t` with an unsigned element type made signless; other types unchanged.
Type signless(Type t) {
  auto elt = dyn_cast<IntegerType>(getElementTypeOrSelf(t));
  if (!elt || !elt.isUnsigned())
    return t;
  auto s = IntegerType::get(t.getContext(), elt.getWidth());
  if (auto shaped = dyn_cast<ShapedType>(t))
    return shaped.clone(s);
  return s;
}

} // namespace

bool rewire::hasUnsignedOperands(Operation *op) { return op->hasAttr(kUnsignedOperands); }
bool rewire::hasUnsignedResults(Operation *op) { return op->hasAttr(kUnsignedResults); }

void rewire::eraseUnsignedIntegers(func::FuncOp fn) {
  MLIRContext *ctx = fn.getContext();
  fn.walk([&](Operation *op) {
    if (!isa<nn::NNDialect>(op->getDialect()))
      return;
    if (llvm::any_of(op->getOperandTypes(), isUnsignedType))
      op->setAttr(kUnsignedOperands, UnitAttr::get(ctx));
    if (llvm::any_of(op->getResultTypes(), isUnsignedType))
      op->setAttr(kUnsignedResults, UnitAttr::get(ctx));
  });
  fn.walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(signless(arg.getType()));
    for (OpResult r : op->getResults())
      r.setType(signless(r.getType()));
    // The bits of an unsigned constant, retyped.
    if (auto c = dyn_cast<nn::ConstantOp>(op)) {
      Attribute v = c.getValue();
      if (auto dense = dyn_cast<DenseElementsAttr>(v); dense && isUnsignedType(dense.getType()))
        c.setValueAttr(dense.bitcast(signless(dense.getElementType())));
      else if (auto res = dyn_cast<DenseResourceElementsAttr>(v);
               res && isUnsignedType(res.getType()))
        c.setValueAttr(DenseResourceElementsAttr::get(cast<ShapedType>(signless(res.getType())),
                                                      res.getRawHandle()));
    }
  });
  FunctionType type = fn.getFunctionType();
  SmallVector<Type> ins, outs;
  for (Type t : type.getInputs())
    ins.push_back(signless(t));
  for (Type t : type.getResults())
    outs.push_back(signless(t));
  fn.setFunctionType(FunctionType::get(ctx, ins, outs));
}
