//===- GuardedReduction.cpp - Reductions whose terms are mostly skipped ---===//
//
// A reduction whose payload is `select(cond, x, acc)` with `cond` the same
// at every point of the innermost parallel loop is an embedding gradient
// (convert-nn-to-linalg{scatter-as-reduction}: table[v, f] = the sum over
// positions n of (ids[n] == v ? upd[n, f] : 0)). As a generic kernel it
// evaluates `cond` rows x features x positions times. Here a block takes a
// row (the outer parallel loops) and its threads the features; the block
// checks 256 positions at a time, one per thread, and counts the hits with
// a block reduction. Only tiles with a hit are walked, position by position
// in order (the same branch for the whole block), adding into each thread's
// accumulators: rows x positions condition checks, and terms are summed in
// the sequential order (positions ascending), as on the CPU.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/GPU/KernelEmit.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace rewire::gpu {

namespace {
constexpr int64_t kThreads = 256;
/// Features per thread at most (registers), and the fewest positions for
/// which skipping pays.
constexpr int64_t kMaxChunks = 16, kMinPositions = 256;
} // namespace

std::optional<Guard> matchGuardedReduction(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumDpsInputs() == 0)
    return std::nullopt;
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  if (llvm::any_of(loops, ShapedType::isDynamic))
    return std::nullopt;
  Guard g;
  SmallVector<unsigned> parallel;
  bool reduction = false;
  for (auto [i, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (it == utils::IteratorType::parallel) {
      parallel.push_back(i);
    } else {
      if (reduction)
        return std::nullopt;
      reduction = true;
      g.reduction = i;
    }
  }
  if (!reduction || parallel.size() < 2)
    return std::nullopt;
  g.feature = parallel.back();
  g.rows.assign(parallel.begin(), parallel.end() - 1);
  if (loops[g.reduction] < kMinPositions || loops[g.feature] > kThreads * kMaxChunks)
    return std::nullopt;

  Block &body = op.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  auto sel = body.getTerminator()->getOperand(0).getDefiningOp<arith::SelectOp>();
  if (!sel || sel.getFalseValue() != body.getArgument(numInputs))
    return std::nullopt;
  g.cond = sel.getCondition();
  // `cond` may read only inputs indexed without the feature loop, indices
  // other than the feature loop's, and pure ops of those.
  SmallVector<Value> work = {g.cond};
  llvm::SmallPtrSet<Value, 16> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &body)
        continue;
      if (arg.getArgNumber() >= numInputs)
        return std::nullopt;
      if (op.getMatchingIndexingMap(op.getDpsInputOperand(arg.getArgNumber()))
              .isFunctionOfDim(g.feature))
        return std::nullopt;
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body)
      continue; // a constant from outside
    if (auto idx = dyn_cast<linalg::IndexOp>(def)) {
      if (idx.getDim() == g.feature)
        return std::nullopt;
      continue;
    }
    if (def->getNumRegions() != 0 || !isPure(def))
      return std::nullopt;
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  return g;
}

FailureOr<Launch> emitGuardedReduction(linalg::GenericOp op, const Guard &g,
                                       ArrayRef<Value> operands, mlir::gpu::GPUModuleOp module,
                                       StringRef name) {
  Location loc = op.getLoc();
  OpBuilder b(op.getContext());
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  int64_t features = loops[g.feature], positions = loops[g.reduction];
  int64_t chunks = llvm::divideCeil(features, kThreads), rows = 1;
  for (unsigned d : g.rows)
    rows *= loops[d];
  auto frame = beginKernel(op, operands, module, name, {}, {kThreads, 1, 1}, b);
  if (failed(frame))
    return failure();

  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  SmallVector<Value> ivs(loops.size());
  Value rest = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
  for (int i = static_cast<int>(g.rows.size()) - 1; i >= 0; --i) {
    unsigned d = g.rows[i];
    ivs[d] = i == 0 ? rest : arith::RemUIOp::create(b, loc, rest, cst(loops[d])).getResult();
    if (i > 0)
      rest = arith::DivUIOp::create(b, loc, rest, cst(loops[d]));
  }
  Value tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  // Thread t holds features t, t + 256, ...; a partial last chunk reads
  // feature 0 and stores nothing.
  SmallVector<Value> feature, inside;
  for (int64_t c = 0; c < chunks; ++c) {
    Value f = arith::AddIOp::create(b, loc, tid, cst(c * kThreads));
    Value in;
    if ((c + 1) * kThreads > features) {
      in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, f, cst(features));
      f = arith::SelectOp::create(b, loc, in, f, cst(0));
    }
    feature.push_back(f);
    inside.push_back(in);
  }
  ivs[g.reduction] = cst(0);

  Block &body = op.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  auto at = [&](OpOperand &operand) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<Value> idx;
    for (AffineExpr e : map.getResults())
      idx.push_back(affine::AffineApplyOp::create(b, loc, AffineMap::get(map.getNumDims(), 0, e),
                                                  ivs));
    return idx;
  };
  auto valueOf = [&](OpOperand &operand) -> Value {
    Value p = frame->operandParams[operand.getOperandNumber()];
    if (!p)
      return frame->mapping.lookup(operand.get());
    return memref::LoadOp::create(b, loc, p, at(operand));
  };
  // The payload at `ivs` for accumulator `acc`; `m` then maps `g.cond`.
  auto payload = [&](Value acc, IRMapping &m) {
    m = frame->mapping;
    for (unsigned i = 0; i < numInputs; ++i)
      if (!body.getArgument(i).use_empty())
        m.map(body.getArgument(i), valueOf(op->getOpOperand(i)));
    m.map(body.getArgument(numInputs), acc);
    return clonePayload(b, body, m, [&](unsigned d) { return ivs[d]; })[0];
  };
  auto condAt = [&](Value acc) {
    IRMapping m;
    ivs[g.feature] = feature[0];
    payload(acc, m);
    return m.lookup(g.cond);
  };

  OpOperand &init = op.getDpsInitsMutable()[0];
  SmallVector<Value> accs;
  for (int64_t c = 0; c < chunks; ++c) {
    ivs[g.feature] = feature[c];
    accs.push_back(valueOf(init));
  }
  Type accType = accs[0].getType();

  auto tiles = scf::ForOp::create(b, loc, cst(0), cst(positions), cst(kThreads), accs);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tiles.getBody());
    Value n0 = tiles.getInductionVar();
    SmallVector<Value> carried(tiles.getRegionIterArgs().begin(), tiles.getRegionIterArgs().end());
    Value n = arith::AddIOp::create(b, loc, n0, tid);
    Value valid;
    if (positions % kThreads != 0) {
      valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, n, cst(positions));
      n = arith::SelectOp::create(b, loc, valid, n, cst(0));
    }
    ivs[g.reduction] = n;
    Value hit = condAt(carried[0]);
    if (valid)
      hit = arith::AndIOp::create(b, loc, hit, valid);
    Value one = arith::ExtUIOp::create(b, loc, b.getI32Type(), hit);
    Value count = mlir::gpu::AllReduceOp::create(
                      b, loc, one,
                      mlir::gpu::AllReduceOperationAttr::get(b.getContext(),
                                                             mlir::gpu::AllReduceOperation::ADD),
                      /*uniform=*/true)
                      .getResult();
    Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, count,
                                      arith::ConstantIntOp::create(b, loc, 0, 32));
    SmallVector<Type> types(chunks, accType);
    auto ifAny = scf::IfOp::create(b, loc, types, any, /*withElseRegion=*/true);
    b.setInsertionPointToStart(ifAny.elseBlock());
    scf::YieldOp::create(b, loc, carried);
    b.setInsertionPointToStart(ifAny.thenBlock());
    // The tile's positions in order; every thread takes the same branch.
    Value upper = positions % kThreads == 0
                      ? cst(kThreads)
                      : arith::MinUIOp::create(b, loc, cst(kThreads),
                                               arith::SubIOp::create(b, loc, cst(positions), n0))
                            .getResult();
    auto walk = scf::ForOp::create(b, loc, cst(0), upper, cst(1), carried);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(walk.getBody());
      SmallVector<Value> cur(walk.getRegionIterArgs().begin(), walk.getRegionIterArgs().end());
      ivs[g.reduction] = arith::AddIOp::create(b, loc, n0, walk.getInductionVar());
      Value taken = condAt(cur[0]);
      auto ifHit = scf::IfOp::create(b, loc, types, taken, /*withElseRegion=*/true);
      b.setInsertionPointToStart(ifHit.elseBlock());
      scf::YieldOp::create(b, loc, cur);
      b.setInsertionPointToStart(ifHit.thenBlock());
      SmallVector<Value> next;
      for (int64_t c = 0; c < chunks; ++c) {
        ivs[g.feature] = feature[c];
        IRMapping m;
        next.push_back(payload(cur[c], m));
      }
      scf::YieldOp::create(b, loc, next);
      b.setInsertionPointAfter(ifHit);
      scf::YieldOp::create(b, loc, ifHit.getResults());
    }
    b.setInsertionPointAfter(walk);
    scf::YieldOp::create(b, loc, walk.getResults());
    b.setInsertionPointAfter(ifAny);
    scf::YieldOp::create(b, loc, ifAny.getResults());
  }
  ivs[g.reduction] = cst(0);
  Value out = frame->operandParams[init.getOperandNumber()];
  for (int64_t c = 0; c < chunks; ++c) {
    OpBuilder::InsertionGuard guard(b);
    if (inside[c]) {
      auto ifIn = scf::IfOp::create(b, loc, inside[c], /*withElseRegion=*/false);
      b.setInsertionPoint(ifIn.thenBlock()->getTerminator());
    }
    ivs[g.feature] = feature[c];
    memref::StoreOp::create(b, loc, tiles.getResult(c), out, at(init));
  }

  Launch launch;
  launch.func = frame->func;
  launch.block = {kThreads, 1, 1};
  launch.grid = {rows, 1, 1};
  return launch;
}

} // namespace rewire::gpu
