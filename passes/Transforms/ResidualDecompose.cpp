//===- ResidualDecompose.cpp - Residual ops as nn ops ---------------------===//
//
// Implements residual-decompose (see Passes.td) over the dialect's own
// decompositions (dialects/residual/ResidualDecompose.h).
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "dialects/residual/ResidualDecompose.h"

namespace rewire {
#define GEN_PASS_DEF_RESIDUALDECOMPOSE
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {
struct ResidualDecomposePass
    : public rewire::impl::ResidualDecomposeBase<ResidualDecomposePass> {
  using ResidualDecomposeBase::ResidualDecomposeBase;
  void runOnOperation() override {
    SmallVector<std::string> names(ops.begin(), ops.end());
    if (unfused) {
      if (!names.empty()) {
        getOperation().emitError("residual-decompose: give 'ops' or 'unfused', not both");
        return signalPassFailure();
      }
      llvm::append_range(names, rewire::residual::unfusedStreamOps());
    }
    if (failed(rewire::residual::decomposeStreamOps(getOperation(), names)))
      signalPassFailure();
  }
};
} // namespace
