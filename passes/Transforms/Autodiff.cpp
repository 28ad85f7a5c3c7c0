//===- Autodiff.cpp - Reverse-mode differentiation of a loss --------------===//
//
// Implements rewire-autodiff (see Passes.td): clones the loss function into
// `<name>_grad`, then walks its ops backwards from the loss, asking each
// op's ReverseModeOpInterface rule for its operands' adjoints and summing
// adjoints that reach a value from several uses.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "lib/Autodiff/Differentiate.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

namespace rewire {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

struct AutodiffPass : public rewire::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;
  void runOnOperation() override;
  LogicalResult differentiate(func::FuncOp grad);
};

LogicalResult AutodiffPass::differentiate(func::FuncOp fn) {
  SmallVector<std::string> frozenPrefixes;
  for (const std::string &p : frozen)
    if (!StringRef(p).trim().empty())
      frozenPrefixes.push_back(StringRef(p).trim().str());
  return autodiff::differentiate(fn, wrt, frozenPrefixes);
}

void AutodiffPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fn = module.lookupSymbol<func::FuncOp>(function);
  if (!fn || fn.isExternal()) {
    module.emitError("rewire-autodiff: no function '") << function << "' with a body";
    return signalPassFailure();
  }
  if (wrt != "parameters" && wrt != "all") {
    module.emitError("rewire-autodiff: wrt must be 'parameters' or 'all', got '") << wrt << "'";
    return signalPassFailure();
  }
  std::string name = function + "_grad";
  if (module.lookupSymbol(name)) {
    module.emitError("rewire-autodiff: '") << name << "' exists already";
    return signalPassFailure();
  }
  auto grad = fn.clone();
  grad.setSymName(name);
  SymbolTable(module).insert(grad, std::next(Block::iterator(fn)));
  if (failed(differentiate(grad)))
    return signalPassFailure();
}

} // namespace
