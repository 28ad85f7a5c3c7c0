//===- ResidualMod.cpp - Mixture-of-Depths skipping for NAG ---------------===//
//
// Implements residual-mod. Threshold mode routes each NAG update's
// modulator through residual.route (the skipped rows' update is masked).
// Rate mode with `skip` (the default) saves the compute: the rows each
// sequence keeps (residual.route_select) are gathered, the sublayer branch
// runs on them only (RowGather.h), and their update is scattered back; a
// branch that cannot run on a subset of rows keeps the masked form, with a
// warning that names the op.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"
#include "passes/Transforms/RowGather.h"

#include "dialects/nn/NNOps.h"
#include "dialects/residual/ResidualOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

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

/// Rewrites `op` (R' = nag_add(R, f, alpha, m)) to run f's branch on the
/// rows routed at `rate` only:
///   idx = route_select(m);  rows = gather(R, idx);  f' = branch(rows)
///   R'  = scatter_add(nag_add(rows, f', alpha, gather(m, idx)) - rows, idx) into R
/// Returns false, with `why` set, where the branch cannot be cloned.
bool skipBranch(residual::NagAddOp op, double rate, std::string &why) {
  auto rt = dyn_cast<RankedTensorType>(op.getR().getType());
  auto stream = cast<residual::StreamOpInterface>(op.getOperation());
  if (!rt || rt.getRank() != 3 || !rt.hasStaticShape() || stream.getFeatureAxisIndex() != 2) {
    why = "the stream is not a static [batch, tokens, features] tensor";
    return false;
  }
  if (!op.getF().hasOneUse()) {
    why = "the sublayer's output has other users than its update";
    return false;
  }
  int64_t b = rt.getDimSize(0), t = rt.getDimSize(1), d = rt.getDimSize(2);
  int64_t k = residual::RouteSelectOp::keptRows(t, rate);
  if (k == t) // floor(rate * T) = 0: every row runs, as without routing
    return true;
  SmallVector<Operation *> ops = branchOps(op.getR(), op.getF());
  if (ops.empty()) {
    why = "the sublayer's output is not computed from the stream state";
    return false;
  }
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Type elt = rt.getElementType();
  auto flatType = RankedTensorType::get({b * t, d}, elt);
  auto rowsType = RankedTensorType::get({b, k, d}, elt);
  auto mRowsType = RankedTensorType::get({b, k, 1}, elt);
  Value m = op.getM();
  auto idx = residual::RouteSelectOp::create(builder, loc, RankedTensorType::get({b, k}, builder.getI64Type()),
                                             m, builder.getF64FloatAttr(rate));
  Value flat = nn::ReshapeOp::create(builder, loc, flatType, op.getR());
  Value rows = nn::GatherOp::create(builder, loc, rowsType, flat, idx, builder.getI64IntegerAttr(0));
  Value mFlat = nn::ReshapeOp::create(builder, loc, RankedTensorType::get({b * t, 1}, elt), m);
  Value mRows = nn::GatherOp::create(builder, loc, mRowsType, mFlat, idx, builder.getI64IntegerAttr(0));
  FailureOr<Value> f = cloneBranchOnRows(builder, ops, op.getR(), op.getF(), rows, idx, why);
  if (failed(f)) {
    for (Value v : SmallVector<Value>{mRows, mFlat, rows, flat, idx.getResult()})
      v.getDefiningOp()->erase();
    return false;
  }
  auto update = residual::NagAddOp::create(builder, loc, rowsType, rows, *f, op.getAlpha(), mRows,
                                           op.getEpsAttr(), op.getAxisAttr(), op.getStreamAttr(),
                                           op.getLayerAttr());
  update->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  Value delta = nn::SubOp::create(builder, loc, rowsType, update, rows);
  // Into the stream itself: one pass over the kept rows (no zero table
  // added to the stream after).
  Value back = nn::ScatterAddOp::create(builder, loc, flatType, delta, idx, flat);
  Value next = nn::ReshapeOp::create(builder, loc, rt, back);
  op.replaceAllUsesWith(next);
  op.erase();
  // The branch's constants that only it used (a causal mask replaced by
  // the kept rows' one) go with it.
  llvm::SetVector<Operation *> constants;
  for (Operation *dead : ops)
    for (Value v : dead->getOperands())
      if (auto c = v.getDefiningOp<nn::ConstantOp>())
        constants.insert(c);
  for (Operation *dead : llvm::reverse(ops))
    dead->erase();
  for (Operation *c : constants)
    if (c->use_empty())
      c->erase();
  return true;
}

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
    if (byRate && skip) {
      std::string why;
      if (skipBranch(op, r, why))
        continue;
      op.emitWarning() << "residual-mod: this sublayer keeps computing every row (its skipped "
                          "rows are masked): "
                       << why;
    }
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
