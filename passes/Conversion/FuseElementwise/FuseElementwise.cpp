//===- FuseElementwise.cpp - Elementwise fusion with Rewire's cost rule ---===//
//
// Implements rewire-fuse-elementwise (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"
#include "passes/Conversion/LinalgBuilders.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace rewire {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {
bool isContraction(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  return linalgOp && rewire::isMultiplyAccumulate(linalgOp);
}

struct FuseElementwisePass
    : public rewire::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && producer->hasOneUse() && !isContraction(operand->getOwner());
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
