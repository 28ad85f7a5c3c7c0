//===- FuseElementwise.cpp - Elementwise fusion with Rewire's cost rule ---===//
//
// Implements rewire-fuse-elementwise (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"
#include "passes/Conversion/LinalgBuilders.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/SmallBitVector.h"

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

/// Whether elementwise `producer` can be computed inside `consumer`'s loop:
/// both all-parallel over the same space, element for element (the
/// producer's outputs and the consumer's reads of them identity maps, so
/// nothing is computed twice in the loop), and the producer's body does not
/// read its outputs.
bool sameSpace(linalg::GenericOp producer, linalg::GenericOp consumer) {
  if (producer->getBlock() != consumer->getBlock() || !producer.hasPureTensorSemantics() ||
      !consumer.hasPureTensorSemantics() || producer.getNumReductionLoops() != 0 ||
      consumer.getNumReductionLoops() != 0 || producer.getNumLoops() != consumer.getNumLoops())
    return false;
  for (OpOperand &init : producer.getDpsInitsMutable())
    if (!producer.getMatchingIndexingMap(&init).isIdentity() ||
        producer.payloadUsesValueFromOperand(&init))
      return false;
  for (OpOperand &init : consumer.getDpsInitsMutable())
    if (init.get().getDefiningOp() == producer)
      return false;
  for (OpOperand *input : consumer.getDpsInputOperands())
    if (input->get().getDefiningOp() == producer &&
        !consumer.getMatchingIndexingMap(input).isIdentity())
      return false;
  return true;
}

/// Whether every other user of the producer's results comes after the
/// consumer in their block, so the merged op (in the consumer's place) can
/// return the results they read: computed once, stored once, read once
/// fewer. The consumer may read several of them, which upstream's
/// one-operand fusion cannot take without recomputing.
bool otherUsersLater(linalg::GenericOp producer, linalg::GenericOp consumer) {
  Block *block = consumer->getBlock();
  for (Operation *user : producer->getUsers()) {
    if (user == consumer.getOperation())
      continue;
    Operation *at = block->findAncestorOpInBlock(*user);
    if (!at || at == consumer.getOperation() || !consumer->isBeforeInBlock(at))
      return false;
  }
  return true;
}

/// The op computing `producer` and then `consumer` in one loop (`sameSpace`):
/// the producer's inputs, then the consumer's other inputs; with `keep`, the
/// producer's results still used elsewhere (into `kept`), then the
/// consumer's results.
linalg::GenericOp merge(RewriterBase &rewriter, linalg::GenericOp producer,
                        linalg::GenericOp consumer, bool keep,
                        SmallVectorImpl<OpResult> &kept) {
  SmallVector<Value> inputs, outputs;
  SmallVector<AffineMap> maps;
  SmallVector<Type> types;
  for (OpOperand *input : producer.getDpsInputOperands()) {
    inputs.push_back(input->get());
    maps.push_back(producer.getMatchingIndexingMap(input));
  }
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    if (input->get().getDefiningOp() == producer)
      continue;
    inputs.push_back(input->get());
    maps.push_back(consumer.getMatchingIndexingMap(input));
  }
  for (OpResult result : producer->getResults()) {
    if (!keep || llvm::all_of(result.getUsers(),
                     [&](Operation *user) { return user == consumer.getOperation(); }))
      continue;
    kept.push_back(result);
    outputs.push_back(producer.getDpsInits()[result.getResultNumber()]);
    maps.push_back(producer.getIndexingMapMatchingResult(result));
    types.push_back(result.getType());
  }
  for (OpOperand &init : consumer.getDpsInitsMutable()) {
    outputs.push_back(init.get());
    maps.push_back(consumer.getMatchingIndexingMap(&init));
    types.push_back(init.get().getType());
  }
  auto body = [&](OpBuilder &b, Location loc, ValueRange args) {
    IRMapping map;
    Block &first = producer.getRegion().front();
    unsigned next = 0;
    for (unsigned i = 0; i < producer.getNumDpsInputs(); ++i)
      map.map(first.getArgument(i), args[next++]);
    for (Operation &op : first.without_terminator())
      b.clone(op, map);
    auto firstYield = cast<linalg::YieldOp>(first.getTerminator());
    Block &second = consumer.getRegion().front();
    for (OpOperand *input : consumer.getDpsInputOperands()) {
      BlockArgument arg = second.getArgument(input->getOperandNumber());
      if (auto result = dyn_cast<OpResult>(input->get());
          result && result.getOwner() == producer.getOperation())
        map.map(arg, map.lookupOrDefault(firstYield.getOperand(result.getResultNumber())));
      else
        map.map(arg, args[next++]);
    }
    next += kept.size();
    for (unsigned i = 0; i < consumer.getNumDpsInits(); ++i)
      map.map(second.getArgument(consumer.getNumDpsInputs() + i), args[next++]);
    for (Operation &op : second.without_terminator())
      b.clone(op, map);
    SmallVector<Value> yields;
    for (OpResult result : kept)
      yields.push_back(map.lookupOrDefault(firstYield.getOperand(result.getResultNumber())));
    for (Value v : second.getTerminator()->getOperands())
      yields.push_back(map.lookupOrDefault(v));
    linalg::YieldOp::create(b, loc, yields);
  };
  rewriter.setInsertionPoint(consumer);
  return linalg::GenericOp::create(rewriter, consumer.getLoc(), types, inputs, outputs, maps,
                                   consumer.getIteratorTypesArray(), body);
}

/// Whether `op`'s body is at most 48 ops of arithmetic on its operands: no
/// gathers (a tensor.extract reads memory its operands do not show) and no
/// positions (linalg.index).
bool pureArithmetic(linalg::GenericOp op) {
  constexpr unsigned kMaxRecomputed = 48;
  Block &body = op.getRegion().front();
  if (body.getOperations().size() > kMaxRecomputed + 1)
    return false;
  for (Operation &inner : body.without_terminator())
    if (inner.getNumRegions() != 0 || !isPure(&inner) ||
        !llvm::isa<arith::ArithDialect, math::MathDialect>(inner.getDialect()))
      return false;
  return true;
}

/// Whether `map` reads a different element at every point of its loop space
/// (every loop dimension is one of its results): a full-size read. A map
/// without some loop dimension broadcasts (a per-row statistic, a bias, a
/// per-token coefficient) and reads what the loop reuses from cache.
bool fullSize(AffineMap map) {
  llvm::SmallBitVector seen(map.getNumDims());
  for (AffineExpr e : map.getResults())
    if (auto d = dyn_cast<AffineDimExpr>(e))
      seen.set(d.getPosition());
  return seen.all();
}

/// Whether computing `producer` again inside `consumer` (which cannot take
/// it whole: it has users before the consumer, as a forward value the
/// backward reads) makes the consumer read fewer tensors at full size: the
/// producer's inputs instead of several of its results. A GELU's backward
/// then reads the pre-activation instead of the four values its forward
/// stored, and the forward stops writing them (canonicalization drops the
/// dead results). The producer's body is a few dozen arithmetic ops at most
/// (`pureArithmetic`), so the work added stays below the traffic saved.
/// Reads are counted per operand and map (`fullSize`), not per tensor: a
/// hyper stream's read `sum_i pre_i X_i` reads its `[.., n, d]` stream
/// through n maps, n full-size reads where its result is one, so a layer
/// norm after it reads the result instead of the stream n times over.
bool worthRecomputing(linalg::GenericOp producer, linalg::GenericOp consumer) {
  if (!pureArithmetic(producer))
    return false;
  llvm::SmallDenseSet<std::pair<Value, AffineMap>> before, after;
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    AffineMap map = consumer.getMatchingIndexingMap(in);
    if (!fullSize(map))
      continue;
    before.insert({in->get(), map});
    if (in->get().getDefiningOp() != producer)
      after.insert({in->get(), map});
  }
  // sameSpace: the consumer reads the producer's results element for
  // element, so the producer's maps are maps of the consumer's loops.
  for (OpOperand *in : producer.getDpsInputOperands()) {
    AffineMap map = producer.getMatchingIndexingMap(in);
    if (fullSize(map))
      after.insert({in->get(), map});
  }
  return after.size() < before.size();
}

/// Fuses an elementwise producer that upstream's fusion leaves alone (it
/// has other users, or several of its results feed the consumer; upstream
/// would compute it again inside the consumer), where both walk the same
/// space (`sameSpace`): merged into its first consumer, its results kept for
/// later users, where `otherUsersLater`; else computed again inside the
/// consumer where `worthRecomputing`.
struct FuseSharedProducer : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand *input : consumer.getDpsInputOperands()) {
      auto producer = input->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || producer->hasOneUse() || !sameSpace(producer, consumer))
        continue;
      bool keep = otherUsersLater(producer, consumer);
      if (!keep && !worthRecomputing(producer, consumer))
        continue;
      SmallVector<OpResult> kept;
      linalg::GenericOp merged = merge(rewriter, producer, consumer, keep, kept);
      for (auto [i, result] : llvm::enumerate(kept))
        rewriter.replaceAllUsesWith(result, merged->getResult(i));
      rewriter.replaceOp(consumer, merged->getResults().drop_front(kept.size()));
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }
};

struct FuseElementwisePass
    : public rewire::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && producer->hasOneUse() && !isContraction(operand->getOwner());
    });
    patterns.add<FuseSharedProducer>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
