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

/// A producer whose every use is a non-contraction linalg.generic, and whose
/// body is arithmetic only (no math.exp, tanh, ...), with at most
/// kMaxCheapUses uses: recomputing it in each consumer costs less than
/// writing and reading its tensor (attention's scale + causal mask, read by
/// softmax's max and exp passes).
constexpr unsigned kMaxCheapUses = 3;
bool isCheapToRecompute(Operation *producer) {
  auto generic = dyn_cast<linalg::GenericOp>(producer);
  if (!generic || generic.getNumReductionLoops() != 0 || generic->getNumResults() != 1)
    return false;
  unsigned uses = 0;
  for (Operation *user : generic->getUsers()) {
    if (!isa<linalg::GenericOp>(user) || isContraction(user) || ++uses > kMaxCheapUses)
      return false;
  }
  for (Operation &op : generic.getBody()->without_terminator())
    if (!isa<arith::ArithDialect>(op.getDialect()) && !isa<linalg::IndexOp>(op))
      return false;
  return true;
}

struct FuseElementwisePass
    : public rewire::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && !isContraction(operand->getOwner()) &&
             (producer->hasOneUse() || isCheapToRecompute(producer));
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
