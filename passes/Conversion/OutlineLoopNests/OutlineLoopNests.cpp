//===- OutlineLoopNests.cpp - One function per top-level loop nest --------===//
//
// Implements rewire-outline-loop-nests (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace rewire {
#define GEN_PASS_DEF_OUTLINELOOPNESTS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {

struct OutlineLoopNestsPass : rewire::impl::OutlineLoopNestsBase<OutlineLoopNestsPass> {
  void runOnOperation() override;
};

/// Whether `op` is a constant that can be cloned into the outlined function.
bool isClonableConstant(Operation *op) {
  return op && op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
         op->hasTrait<OpTrait::ConstantLike>();
}

void OutlineLoopNestsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
  for (func::FuncOp fn : functions) {
    if (fn.isExternal() || !fn.isPublic() || !fn.getBody().hasOneBlock())
      continue;
    SmallVector<scf::ForOp> nests(fn.getBody().front().getOps<scf::ForOp>());
    unsigned counter = 0;
    for (scf::ForOp loop : nests) {
      // What the nest reads from outside: its operands and the values its
      // regions use; constants are cloned in instead of passed.
      llvm::SetVector<Value> used;
      for (Value v : loop->getOperands())
        used.insert(v);
      getUsedValuesDefinedAbove(loop->getRegions(), used);
      SmallVector<Value> args;
      SmallVector<Operation *> constants;
      for (Value v : used) {
        if (isClonableConstant(v.getDefiningOp()))
          constants.push_back(v.getDefiningOp());
        else
          args.push_back(v);
      }
      OpBuilder b(module.getContext());
      b.setInsertionPoint(fn);
      auto type = b.getFunctionType(ValueRange(args).getTypes(), loop->getResultTypes());
      std::string name = (fn.getSymName() + ".loop" + Twine(counter++)).str();
      auto outlined = func::FuncOp::create(b, loop.getLoc(), name, type);
      outlined.setPrivate();
      symbols.insert(outlined);
      Block *body = outlined.addEntryBlock();
      b.setInsertionPointToStart(body);
      IRMapping map;
      for (auto [v, arg] : llvm::zip(args, body->getArguments()))
        map.map(v, arg);
      for (Operation *c : constants)
        b.clone(*c, map);
      Operation *copy = b.clone(*loop, map);
      func::ReturnOp::create(b, loop.getLoc(), copy->getResults());
      // The call takes the nest's place.
      b.setInsertionPoint(loop);
      auto call = func::CallOp::create(b, loop.getLoc(), outlined, args);
      loop->replaceAllUsesWith(call.getResults());
      loop->erase();
    }
  }
}

} // namespace
