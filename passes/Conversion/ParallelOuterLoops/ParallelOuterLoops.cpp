//===- ParallelOuterLoops.cpp - Parallel outer dimensions, sequential last ===//
//
// Implements rewire-parallel-outer-loops (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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

/// The iterations of `op` and the loops inside it, multiplied.
uint64_t nestIterations(scf::ParallelOp op) {
  uint64_t total = innerIterations(op);
  for (unsigned d = 0; d < op.getNumLoops(); ++d)
    total = llvm::SaturatingMultiply(
        total, tripCount(op.getLowerBound()[d], op.getUpperBound()[d], op.getStep()[d])
                   .value_or(kUnknownTrips));
  return total;
}

/// Operations of a typical loop body: a fused elementwise operation's
/// loads, a few arithmetic operations and a store.
constexpr uint64_t kOpsPerIteration = 16;

/// The work of `op`'s nest in iterations of a typical body: its iterations,
/// times its body's operations over kOpsPerIteration where that is more
/// than one. A body that unrolls a whole small problem (nn.sinkhorn's 20
/// rounds on a 4 x 4 matrix, ~4000 operations in its gradient) is worth a
/// parallel region at far fewer iterations than a sum or a product.
uint64_t nestWork(scf::ParallelOp op) {
  uint64_t ops = 0;
  op.getBody()->walk([&](Operation *inner) {
    if (!isa<scf::ForOp, scf::YieldOp, scf::ReduceOp, scf::ReduceReturnOp>(inner))
      ++ops;
  });
  return llvm::SaturatingMultiply(nestIterations(op), std::max<uint64_t>(1, ops / kOpsPerIteration));
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

/// Columns per chunk when a parallel dimension moves out of the sequential
/// loops around it (chunkOutward): four cache lines of f32, four AVX-512
/// vectors (column sums of [512, 1024] and [512, 256] on two threads: 75 us
/// serial, 90 in chunks of 16, 59 of 32, 53 of 64, 56 of 128).
constexpr int64_t kChunk = 64;

/// The perfect nest of `scf.for` loops around `op` (outermost first): loops
/// without results and with constant bounds, each holding only the next.
SmallVector<scf::ForOp> enclosingLoops(scf::ParallelOp op) {
  SmallVector<scf::ForOp> loops;
  Operation *inner = op;
  while (auto loop = dyn_cast_or_null<scf::ForOp>(inner->getParentOp())) {
    if (loop.getNumResults() != 0 || loop.getBody()->getOperations().size() != 2 ||
        !tripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
      break;
    loops.push_back(loop);
    inner = loop;
  }
  std::reverse(loops.begin(), loops.end());
  return loops;
}

/// Rewrites `scf.for (reductions) { scf.parallel (.., d) { body } }` -- a
/// sum over leading dimensions, as a bias gradient sums [b, t, d] over b
/// and t -- into `scf.parallel (.., chunk of d) { scf.for (reductions) {
/// scf.for d in chunk { body } } }`: forked once, each thread sweeping its
/// columns of every row (contiguous, vectorizable), each output summed in
/// the same order as before. Left nested, the parallel loop forks once per
/// row, or (below min-iterations) the whole nest runs on one thread. The
/// interchange is valid for what linalg lowers to: an iteration of the
/// parallel loop reads and writes only its own outputs. Returns the new
/// loop, or null when `op` does not fit (bounds not constant).
scf::ParallelOp chunkOutward(scf::ParallelOp op, ArrayRef<scf::ForOp> loops) {
  unsigned last = op.getNumLoops() - 1;
  SmallVector<int64_t> lb, ub, step;
  for (unsigned d = 0; d <= last; ++d) {
    std::optional<int64_t> l = getConstantIntValue(op.getLowerBound()[d]),
                           u = getConstantIntValue(op.getUpperBound()[d]),
                           s = getConstantIntValue(op.getStep()[d]);
    if (!l || !u || !s || *s <= 0 || *u <= *l)
      return nullptr;
    lb.push_back(*l);
    ub.push_back(*u);
    step.push_back(*s);
  }
  OpBuilder b(loops.front());
  Location loc = op.getLoc();
  auto index = [&](OpBuilder &ib, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ib, loc, v);
  };
  int64_t trips = (ub[last] - lb[last] + step[last] - 1) / step[last];
  int64_t chunks = (trips + kChunk - 1) / kChunk;
  SmallVector<Value> plb, pub, pstep;
  for (unsigned d = 0; d < last; ++d) {
    plb.push_back(index(b, lb[d]));
    pub.push_back(index(b, ub[d]));
    pstep.push_back(index(b, step[d]));
  }
  plb.push_back(index(b, 0));
  pub.push_back(index(b, chunks));
  pstep.push_back(index(b, 1));
  // Every bound a constant made here, outside the nest.
  struct Bounds {
    Value lb, ub, step;
  };
  SmallVector<Bounds> forBounds;
  for (scf::ForOp loop : loops)
    forBounds.push_back({index(b, *getConstantIntValue(loop.getLowerBound())),
                         index(b, *getConstantIntValue(loop.getUpperBound())),
                         index(b, *getConstantIntValue(loop.getStep()))});
  Value first = index(b, lb[last]), end = index(b, ub[last]), stride = index(b, step[last]),
        span = index(b, kChunk * step[last]);
  IRMapping map;
  std::function<void(OpBuilder &, size_t, Value)> nest = [&](OpBuilder &nb, size_t i, Value chunk) {
    if (i < loops.size()) {
      scf::ForOp::create(nb, loc, forBounds[i].lb, forBounds[i].ub, forBounds[i].step,
                         ValueRange{}, [&](OpBuilder &fb, Location, Value iv, ValueRange) {
                           map.map(scf::ForOp(loops[i]).getInductionVar(), iv);
                           nest(fb, i + 1, chunk);
                           scf::YieldOp::create(fb, loc);
                         });
      return;
    }
    // This chunk's part of the last dimension.
    Value lo = arith::AddIOp::create(nb, loc, first, arith::MulIOp::create(nb, loc, chunk, span));
    Value hi = arith::MinSIOp::create(nb, loc, arith::AddIOp::create(nb, loc, lo, span), end);
    scf::ForOp::create(nb, loc, lo, hi, stride, ValueRange{},
                       [&](OpBuilder &fb, Location, Value iv, ValueRange) {
                         map.map(op.getInductionVars()[last], iv);
                         for (Operation &inner : op.getBody()->without_terminator())
                           fb.clone(inner, map);
                         scf::YieldOp::create(fb, loc);
                       });
  };
  auto chunked = scf::ParallelOp::create(
      b, loc, plb, pub, pstep, [&](OpBuilder &pb, Location, ValueRange ivs) {
        for (unsigned d = 0; d < last; ++d)
          map.map(op.getInductionVars()[d], ivs[d]);
        nest(pb, 0, ivs[last]);
      });
  scf::ForOp outer = loops.front();
  outer.erase();
  return chunked;
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
  const uint64_t enough = static_cast<uint64_t>(std::max<int64_t>(minIterations, 0));
  // A parallel loop inside sequential ones with enough work in all moves
  // out of them, in chunks (chunkOutward).
  for (scf::ParallelOp &op : outermost) {
    SmallVector<scf::ForOp> loops = enclosingLoops(op);
    if (loops.empty())
      continue;
    uint64_t total = nestIterations(op);
    for (scf::ForOp loop : loops)
      total = llvm::SaturatingMultiply(
          total, *tripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()));
    std::optional<uint64_t> width = tripCount(op.getLowerBound().back(),
                                              op.getUpperBound().back(), op.getStep().back());
    if (total < enough || !width || *width < 2 * kChunk)
      continue;
    if (scf::ParallelOp chunked = chunkOutward(op, loops))
      op = chunked;
  }
  for (scf::ParallelOp op : outermost) {
    // The dimensions with more than one iteration (unknown: many).
    SmallVector<unsigned> wide;
    for (unsigned d = 0; d < op.getNumLoops(); ++d)
      if (tripCount(op.getLowerBound()[d], op.getUpperBound()[d], op.getStep()[d])
              .value_or(kUnknownTrips) > 1)
        wide.push_back(d);
    if (wide.empty() || nestWork(op) < enough) {
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
