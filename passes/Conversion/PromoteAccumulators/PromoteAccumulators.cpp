//===- PromoteAccumulators.cpp - Reduction accumulators in registers ------===//
//
// Implements rewire-promote-accumulators (see Passes.td): a loop that loads
// and stores one element at indices it does not vary (a linalg reduction
// lowered to loops: `out[i] = out[i] + x[i, k]` over k) carries the element
// as an iter_arg instead, loaded before the loop and stored after it.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace rewire {
#define GEN_PASS_DEF_PROMOTEACCUMULATORS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {

/// The buffer `v` views (through subviews, casts, reshapes), or `v`.
Value baseBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// One element the loop reads and then writes at loop-invariant indices.
struct Accumulator {
  memref::LoadOp load;
  memref::StoreOp store;
};

/// Whether `op` (and everything nested in it) touches memory only through
/// memref.load / memref.store, or not at all.
bool onlyLoadsAndStores(Operation *op) {
  WalkResult r = op->walk([](Operation *inner) {
    if (isa<memref::LoadOp, memref::StoreOp>(inner))
      return WalkResult::advance();
    if (inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
    if (!effects)
      return WalkResult::interrupt(); // unknown: a call, an unregistered op
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (auto &e : list)
      if (isa<MemoryEffects::Read, MemoryEffects::Write, MemoryEffects::Free>(e.getEffect()) &&
          !isa<SideEffects::AutomaticAllocationScopeResource>(e.getResource()))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !r.wasInterrupted();
}

/// The accumulators of `loop`: a load and a later store in its body (not
/// nested) at the same invariant indices of one buffer that nothing else
/// in the loop reads or writes, through any view of it.
SmallVector<Accumulator> findAccumulators(scf::ForOp loop) {
  SmallVector<Accumulator> found;
  if (!onlyLoadsAndStores(loop))
    return found;
  Block *body = loop.getBody();
  // Every access in the loop, by the buffer it reaches.
  DenseMap<Value, SmallVector<Operation *>> accesses;
  loop.getBody()->walk([&](Operation *op) {
    if (auto l = dyn_cast<memref::LoadOp>(op))
      accesses[baseBuffer(l.getMemRef())].push_back(op);
    else if (auto s = dyn_cast<memref::StoreOp>(op))
      accesses[baseBuffer(s.getMemRef())].push_back(op);
  });
  auto invariant = [&](Value v) { return loop.isDefinedOutsideOfLoop(v); };
  for (auto &[base, ops] : accesses) {
    if (ops.size() != 2)
      continue;
    auto load = dyn_cast<memref::LoadOp>(ops[0]);
    auto store = dyn_cast<memref::StoreOp>(ops[1]);
    if (!load || !store || load->getBlock() != body || store->getBlock() != body ||
        load.getMemRef() != store.getMemRef() || !invariant(load.getMemRef()) ||
        load.getIndices() != store.getIndices() || !llvm::all_of(load.getIndices(), invariant) ||
        !load->isBeforeInBlock(store))
      continue;
    found.push_back({load, store});
  }
  // A deterministic order (the map's is not): the loads' order in the body.
  llvm::sort(found, [](Accumulator a, Accumulator b) {
    return a.load->isBeforeInBlock(b.load);
  });
  return found;
}

/// Loads the accumulators before `loop`, carries them through it and stores
/// them after; the combining arithmetic may then be reassociated (see
/// Passes.td), so LLVM vectorizes the reduction.
void promote(scf::ForOp loop, MutableArrayRef<Accumulator> accs) {
  IRRewriter rw(loop.getContext());
  rw.setInsertionPoint(loop);
  SmallVector<Value> inits;
  for (Accumulator &a : accs)
    inits.push_back(memref::LoadOp::create(rw, a.load.getLoc(), a.load.getMemRef(),
                                           a.load.getIndices()));
  auto yieldValues = [&](OpBuilder &, Location, ArrayRef<BlockArgument> newArgs)
      -> SmallVector<Value> {
    SmallVector<Value> values;
    for (auto [a, arg] : llvm::zip(accs, newArgs)) {
      values.push_back(a.store.getValueToStore());
      rw.replaceAllUsesWith(a.load.getResult(), arg);
    }
    return values;
  };
  auto grown = cast<scf::ForOp>(*loop.replaceWithAdditionalYields(rw, inits, true, yieldValues));
  rw.setInsertionPointAfter(grown);
  unsigned first = grown.getNumResults() - accs.size();
  for (auto [i, a] : llvm::enumerate(accs)) {
    Value carried = grown.getRegionIterArgs()[first + i];
    memref::StoreOp::create(rw, a.store.getLoc(), grown.getResult(first + i), a.store.getMemRef(),
                            a.store.getIndices());
    // The combining step `acc + x` (or `x + acc`) may be reordered.
    if (auto add = a.store.getValueToStore().getDefiningOp<arith::AddFOp>())
      if (add.getLhs() == carried || add.getRhs() == carried)
        add.setFastmath(add.getFastmath() | arith::FastMathFlags::reassoc);
    rw.eraseOp(a.store);
    rw.eraseOp(a.load);
  }
}

struct PromoteAccumulators : rewire::impl::PromoteAccumulatorsBase<PromoteAccumulators> {
  void runOnOperation() override {
    // Post-order: an inner loop's accumulator, once promoted, is loaded and
    // stored in its parent's body, which may promote it again.
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops) {
      SmallVector<Accumulator> accs = findAccumulators(loop);
      if (!accs.empty())
        promote(loop, accs);
    }
  }
};

} // namespace
