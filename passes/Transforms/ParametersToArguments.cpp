//===- ParametersToArguments.cpp - Parameters as entry-point arguments ----===//
//
// Implements nn-parameters-to-arguments (see Passes.td): the calling
// convention of compiled artifacts, where the runtime passes parameters.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"
#include "dialects/nn/NNParameters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"

namespace rewire {
#define GEN_PASS_DEF_PARAMETERSTOARGUMENTS
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {
struct ParametersToArgumentsPass
    : public rewire::impl::ParametersToArgumentsBase<ParametersToArgumentsPass> {
  void runOnOperation() override;
};
} // namespace

void ParametersToArgumentsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  MLIRContext *ctx = module.getContext();
  bool failed = false;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    llvm::MapVector<ml_program::GlobalOp, SmallVector<ml_program::GlobalLoadConstOp>> uses;
    func.walk([&](ml_program::GlobalLoadConstOp load) {
      auto global = symbols.lookup<ml_program::GlobalOp>(load.getGlobal().getRootReference());
      if (!global) {
        load.emitError() << "nn-parameters-to-arguments: '" << load.getGlobal()
                         << "' is not an ml_program.global of this module";
        failed = true;
        return;
      }
      uses[global].push_back(load);
    });
    if (failed)
      break;
    for (auto &[global, loads] : uses) {
      if (func.isPrivate()) {
        loads.front().emitError()
            << "nn-parameters-to-arguments: private function '" << func.getSymName()
            << "' loads parameter '" << global.getSymName()
            << "'; only public functions receive parameters";
        failed = true;
        break;
      }
      unsigned index = func.getNumArguments();
      NamedAttrList attrs;
      attrs.set(nn::kParameterAttrName, StringAttr::get(ctx, global.getSymName()));
      attrs.set(bufferization::BufferizationDialect::kWritableAttrName,
                BoolAttr::get(ctx, false));
      if (::mlir::failed(func.insertArgument(index, global.getType(),
                                             attrs.getDictionary(ctx), global.getLoc()))) {
        func.emitError() << "nn-parameters-to-arguments: cannot add an argument for '"
                         << global.getSymName() << "'";
        failed = true;
        break;
      }
      Value arg = func.getArgument(index);
      for (auto load : loads) {
        if (load.getType() != arg.getType()) {
          load.emitError() << "nn-parameters-to-arguments: load type " << load.getType()
                           << " differs from the parameter's " << arg.getType();
          failed = true;
          break;
        }
        load.replaceAllUsesWith(arg);
        load.erase();
      }
    }
    if (failed)
      break;
  }
  if (failed)
    return signalPassFailure();
  for (auto global : llvm::make_early_inc_range(module.getOps<ml_program::GlobalOp>()))
    if (global.isPrivate() && SymbolTable::symbolKnownUseEmpty(global, module))
      global.erase();
}
