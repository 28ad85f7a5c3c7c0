//===- ResidualTruncate.cpp - Keep the first N blocks ---------------------===//
//
// Implements residual-truncate: rewires the shared head to the state after
// block N, then removes what no longer contributes (later blocks, their
// parameters, readouts of deeper depths).
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"
#include "dialects/nn/NNParameters.h"
#include "passes/Transforms/StreamForms.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"

namespace rewire {
#define GEN_PASS_DEF_RESIDUALTRUNCATE
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {
struct ResidualTruncatePass
    : public rewire::impl::ResidualTruncateBase<ResidualTruncatePass> {
  using ResidualTruncateBase::ResidualTruncateBase;
  void runOnOperation() override;
  LogicalResult truncate(func::FuncOp func);
};
} // namespace

LogicalResult ResidualTruncatePass::truncate(func::FuncOp func) {
  auto streams = collectStreamUpdates(func);
  if (streams.empty())
    return success();
  if (streams.size() != 1)
    return func.emitError() << "residual-truncate: '" << func.getName()
                            << "' has " << streams.size()
                            << " residual streams; only one can be truncated";
  SmallVector<Operation *> ends =
      blockEnds(streams.begin()->second, granularity);
  int64_t blocks = ends.size();
  if (depth < 1 || depth > blocks)
    return func.emitError() << "residual-truncate: depth must be between 1 and "
                            << blocks << " (the blocks of '" << func.getName()
                            << "'), got " << static_cast<int64_t>(depth);
  Value kept = stateAfter(ends[depth - 1]);
  Value last = stateAfter(ends.back());
  if (kept.getType() != last.getType())
    return func.emitError() << "residual-truncate: the state after block "
                            << static_cast<int64_t>(depth) << " has type "
                            << kept.getType() << ", but the head reads "
                            << last.getType()
                            << " (the stream changes shape after it)";
  if (kept != last)
    last.replaceAllUsesWith(kept);

  // Per-depth readouts of depths >= depth (LPA outputs) go away.
  llvm::BitVector drop(func.getNumResults());
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto name = func.getResultAttrOfType<StringAttr>(i, nn::kNameAttrName)) {
      StringRef s = name.getValue();
      size_t pos = s.rfind("_depth");
      int64_t k;
      if (pos != StringRef::npos && !s.drop_front(pos + 6).getAsInteger(10, k) &&
          k >= depth)
        drop.set(i);
    }
  if (drop.any()) {
    Operation *ret = func.getBody().front().getTerminator();
    ret->eraseOperands(drop);
    if (failed(func.eraseResults(drop)))
      return failure();
  }

  // Remove what no longer contributes, last op first.
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  return success();
}

void ResidualTruncatePass::runOnOperation() {
  ModuleOp module = getOperation();
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && func.getBody().hasOneBlock() &&
        failed(truncate(func)))
      return signalPassFailure();
  // Parameters of the removed blocks.
  for (auto global :
       llvm::make_early_inc_range(module.getOps<ml_program::GlobalOp>()))
    if (global.isPrivate() &&
        SymbolTable::symbolKnownUseEmpty(global, module))
      global.erase();
}
