//===- MathApproximation.cpp - Vectorizable transcendental functions ------===//
//
// Implements rewire-math-approximation (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace rewire {
#define GEN_PASS_DEF_MATHAPPROXIMATION
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {
struct MathApproximationPass
    : public rewire::impl::MathApproximationBase<MathApproximationPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
