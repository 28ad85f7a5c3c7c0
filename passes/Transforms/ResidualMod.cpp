//===- ResidualMod.cpp - Mixture-of-Depths skipping for NAG ---------------===//
//
// Implements residual-mod: inserts residual.route between each NAG gate and
// its update, by threshold or by target skip rate.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "dialects/residual/ResidualOps.h"

#include "mlir/IR/Builders.h"

namespace rewire {
#define GEN_PASS_DEF_RESIDUALMOD
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {
struct ResidualModPass : public rewire::impl::ResidualModBase<ResidualModPass> {
  using ResidualModBase::ResidualModBase;
  void runOnOperation() override;
};
} // namespace

void ResidualModPass::runOnOperation() {
  ModuleOp module = getOperation();
  double t = threshold, r = rate;
  bool byThreshold = t >= 0.0, byRate = r >= 0.0;
  if (byThreshold == byRate) {
    module.emitError() << "residual-mod: give exactly one of threshold (>= 0) "
                          "and rate (in [0, 1))";
    return signalPassFailure();
  }
  if (byRate && !(r < 1.0)) {
    module.emitError() << "residual-mod: rate must be in [0, 1), got " << r;
    return signalPassFailure();
  }
  SmallVector<residual::NagAddOp> updates;
  module.walk([&](residual::NagAddOp op) {
    if (op.getM().getDefiningOp<residual::NagGateOp>())
      updates.push_back(op);
  });
  if (updates.empty()) {
    module.emitError() << "residual-mod: no NAG updates to route; run "
                          "residual-rewrite{kind=nag} first";
    return signalPassFailure();
  }
  OpBuilder b(&getContext());
  for (residual::NagAddOp op : updates) {
    b.setInsertionPoint(op);
    auto route = residual::RouteOp::create(
        b, op.getLoc(), op.getM().getType(), op.getM(),
        residual::RouteModeAttr::get(&getContext(),
                                     byRate ? residual::RouteMode::rate
                                            : residual::RouteMode::threshold),
        b.getF64FloatAttr(byRate ? r : t));
    op.getMMutable().assign(route.getResult());
  }
}
