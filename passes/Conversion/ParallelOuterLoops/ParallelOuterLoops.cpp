//===- ParallelOuterLoops.cpp - Parallel outer dimensions, sequential last ===//
//
// Implements rewire-parallel-outer-loops (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/MathExtras.h"

#include <functional>

namespace rewire {
#define GEN_PASS_DEF_PARALLELOUTERLOOPS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {

struct ParallelOuterLoopsPass
    : rewire::impl::ParallelOuterLoopsBase<ParallelOuterLoopsPass> {
  using ParallelOuterLoopsBase::ParallelOuterLoopsBase;
  void runOnOperation() override;
};

/// The static trip count of [lb, ub) by step, or nullopt.
std::optional<uint64_t> tripCount(Value lb, Value ub, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb), u = getConstantIntValue(ub),
                         s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return *u > *l ? static_cast<uint64_t>((*u - *l + *s - 1) / *s) : 0;
}

/// What a trip count that is not a constant counts as.
constexpr uint64_t kUnknownTrips = uint64_t(1) << 20;

/// The iterations of the loops inside `op`'s body, multiplied (an upper
/// bound for sibling loops; unknown trip counts count as many).
uint64_t innerIterations(scf::ParallelOp op) {
  uint64_t total = 1;
  op.getBody()->walk([&](scf::ForOp loop) {
    std::optional<uint64_t> n =
        tripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    total = llvm::SaturatingMultiply(total, n.value_or(kUnknownTrips));
  });
  return total;
}

/// Replaces `op` by an scf.parallel over the dimensions `parallel` (none:
/// no scf.parallel) around scf.for loops over the others, in order.
void rebuild(scf::ParallelOp op, ArrayRef<unsigned> parallel) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<unsigned> sequential;
  for (unsigned d = 0; d < op.getNumLoops(); ++d)
    if (!llvm::is_contained(parallel, d))
      sequential.push_back(d);
  SmallVector<Value> lbs(op.getLowerBound()), ubs(op.getUpperBound()), steps(op.getStep());
  SmallVector<Value> ivs = op.getInductionVars();
  IRMapping map;
  std::function<void(OpBuilder &, size_t)> loops = [&](OpBuilder &nb, size_t i) {
    if (i == sequential.size()) {
      for (Operation &inner : op.getBody()->without_terminator())
        nb.clone(inner, map);
      return;
    }
    unsigned d = sequential[i];
    scf::ForOp::create(nb, loc, lbs[d], ubs[d], steps[d], ValueRange{},
                       [&](OpBuilder &fb, Location, Value iv, ValueRange) {
                         map.map(ivs[d], iv);
                         loops(fb, i + 1);
                         scf::YieldOp::create(fb, loc);
                       });
  };
  if (parallel.empty()) {
    loops(b, 0);
  } else {
    SmallVector<Value> plb, pub, pstep;
    for (unsigned d : parallel) {
      plb.push_back(lbs[d]);
      pub.push_back(ubs[d]);
      pstep.push_back(steps[d]);
    }
    scf::ParallelOp::create(b, loc, plb, pub, pstep,
                            [&](OpBuilder &pb, Location, ValueRange newIvs) {
                              for (auto [d, iv] : llvm::zip(parallel, newIvs))
                                map.map(ivs[d], iv);
                              loops(pb, 0);
                            });
  }
  op.erase();
}

void ParallelOuterLoopsPass::runOnOperation() {
  // A parallel loop inside another runs sequentially: the threads share the
  // outer one, and a nested region would fork (and join) once per outer
  // iteration. The walk is post-order, so inner ones are rebuilt first.
  // (A reduction over [b, t, n] with the features innermost lowers to
  // scf.parallel (b, t) { scf.for n { scf.parallel d } }: left nested, the
  // d loop forked b * t * n times per call.)
  SmallVector<scf::ParallelOp> nested;
  getOperation().walk([&](scf::ParallelOp op) {
    if (op.getNumResults() == 0 && op->getParentOfType<scf::ParallelOp>())
      nested.push_back(op);
  });
  for (scf::ParallelOp op : nested)
    rebuild(op, {});

  SmallVector<scf::ParallelOp> outermost;
  getOperation().walk([&](scf::ParallelOp op) {
    if (op.getNumResults() == 0 && !op->getParentOfType<scf::ParallelOp>())
      outermost.push_back(op);
  });
  for (scf::ParallelOp op : outermost) {
    // The dimensions with more than one iteration (unknown: many).
    SmallVector<unsigned> wide;
    uint64_t total = innerIterations(op);
    for (unsigned d = 0; d < op.getNumLoops(); ++d) {
      std::optional<uint64_t> n =
          tripCount(op.getLowerBound()[d], op.getUpperBound()[d], op.getStep()[d]);
      total = llvm::SaturatingMultiply(total, n.value_or(kUnknownTrips));
      if (n.value_or(kUnknownTrips) > 1)
        wide.push_back(d);
    }
    if (wide.empty() || total < static_cast<uint64_t>(std::max<int64_t>(minIterations, 0))) {
      rebuild(op, {});
      continue;
    }
    // The last wide dimension stays a loop unless it is the only one.
    if (wide.size() > 1)
      wide.pop_back();
    if (wide.size() == op.getNumLoops())
      continue;
    rebuild(op, wide);
  }
}

} // namespace
