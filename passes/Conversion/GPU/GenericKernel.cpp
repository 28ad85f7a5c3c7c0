//===- GenericKernel.cpp - A kernel for any one linalg op -----------------===//
//
// The fallback of rewire-kernels-to-gpu (see KernelEmit.h): a thread per
// point of the parallel loops (the innermost fastest, so neighbouring
// threads touch neighbouring elements of row-major buffers), the reduction
// loops as scf.for nests carrying the outputs. Long reductions are split
// across threads: along the innermost loop a block per output (row split),
// otherwise 16 threads per output through shared memory.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/GPU/KernelEmit.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace rewire::gpu {

namespace {
constexpr int64_t kThreads = 256;
/// Split reductions: 32 outputs per block (a warp: coalesced along the
/// innermost parallel loop), 16 threads per output along the reduction.
constexpr int64_t kSplitX = 32, kSplitY = 16;
constexpr int64_t kSplitMinExtent = 64, kSplitMaxOutputs = 65536;
/// Long reductions along the innermost loop (a row too wide for a row
/// kernel: a vocabulary-wide softmax): a block of kThreads per output,
/// reading the row coalesced, combined with gpu.all_reduce.
constexpr int64_t kRowSplitMinExtent = 1024;
/// A thread-per-point kernel's blocks: kThreads threads, or fewer (down to
/// a warp) while that leaves fewer than kMinBlocks blocks, so a few
/// thousand points of long per-point work (mHC's Sinkhorn: a matrix and 40
/// normalizations per thread) spread over more of the multiprocessors (132
/// on an H200) instead of filling 8 of them.
constexpr int64_t kMinBlocks = 264;
int64_t threadsPerBlock(int64_t points) {
  int64_t threads = kThreads;
  while (threads > 32 && points < threads * kMinBlocks)
    threads /= 2;
  return threads;
}
} // namespace

FailureOr<KernelFrame> beginKernel(linalg::GenericOp op, ArrayRef<Value> operands,
                                   mlir::gpu::GPUModuleOp module, StringRef name,
                                   ArrayRef<Type> shared, std::array<int64_t, 3> block,
                                   OpBuilder &b) {
  Location loc = op.getLoc();
  b.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> params;
  for (Value v : operands)
    params.push_back(v.getType());
  auto func = mlir::gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(params, {}), shared);
  func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({static_cast<int32_t>(block[0]),
                                                     static_cast<int32_t>(block[1]),
                                                     static_cast<int32_t>(block[2])}));
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  auto ret = mlir::gpu::ReturnOp::create(b, loc);
  b.setInsertionPoint(ret);

  // Parameters: the op's memref operands in order, then the buffers its
  // body reads (`operands` follows the same order).
  KernelFrame frame;
  frame.func = func;
  IRMapping &mapping = frame.mapping;
  unsigned next = 0;
  SmallVector<Value> &operandParams = frame.operandParams;
  for (OpOperand &operand : op->getOpOperands()) {
    if (isa<MemRefType>(operand.get().getType()))
      operandParams.push_back(entry.getArgument(next++));
    else
      operandParams.push_back(Value());
  }
  llvm::SetVector<Value> captured;
  op.getRegion().walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (!op.getRegion().isAncestor(v.getParentRegion()))
        captured.insert(v);
  });
  for (Value v : captured) {
    if (isa<MemRefType>(v.getType())) {
      if (next >= entry.getNumArguments()) {
        func.erase();
        return op.emitError("rewire-kernels-to-gpu: internal: too few kernel operands");
      }
      mapping.map(v, entry.getArgument(next++));
    } else if (Operation *def = v.getDefiningOp(); def && def->hasTrait<OpTrait::ConstantLike>()) {
      b.clone(*def, mapping);
    } else {
      func.erase();
      return op.emitError("rewire-kernels-to-gpu: the body reads a value computed on the host");
    }
  }
  // Scalar (non-buffer) operands must be constants: cloned in.
  for (auto [operand, p] : llvm::zip(op->getOpOperands(), operandParams)) {
    if (p)
      continue;
    Operation *def = operand.get().getDefiningOp();
    if (!def || !def->hasTrait<OpTrait::ConstantLike>()) {
      func.erase();
      return op.emitError("rewire-kernels-to-gpu: a scalar operand computed on the host");
    }
    b.clone(*def, mapping);
  }

  return frame;
}

FailureOr<Launch> emitGenericKernel(linalg::GenericOp op, ArrayRef<Value> operands,
                                    mlir::gpu::GPUModuleOp module, StringRef name,
                                    ArrayRef<TypedAttr> initValues) {
  if (std::optional<Guard> g = matchGuardedReduction(op)) {
    if (llvm::any_of(initValues, [](TypedAttr a) { return a; }))
      return op.emitError("rewire-kernels-to-gpu: internal error: a fill folded into a guarded "
                          "reduction");
    return emitGuardedReduction(op, *g, operands, module, name);
  }
  Location loc = op.getLoc();
  OpBuilder b(op.getContext());
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  if (llvm::any_of(loops, ShapedType::isDynamic))
    return op.emitError("rewire-kernels-to-gpu: dynamic loop ranges");
  auto iters = op.getIteratorTypesArray();
  SmallVector<unsigned> parallel, reduction;
  int64_t total = 1;
  for (auto [i, it] : llvm::enumerate(iters)) {
    if (it == utils::IteratorType::parallel) {
      parallel.push_back(i);
      total *= loops[i];
    } else {
      reduction.push_back(i);
    }
  }

  // Few outputs with long reductions (a bias gradient: a sum over all rows
  // per column) would leave most of the GPU idle with a thread per output:
  // split each reduction over kSplitY threads, combined in shared memory.
  int64_t reductionExtent = 1;
  for (unsigned d : reduction)
    reductionExtent *= loops[d];
  Block &body = op.getRegion().front();
  SmallVector<Combiner> combiners;
  SmallVector<TypedAttr> neutrals;
  bool rowSplit = reduction.size() == 1 && reduction[0] + 1 == loops.size() &&
                  reductionExtent >= kRowSplitMinExtent;
  bool split = !rowSplit && !reduction.empty() && reductionExtent >= kSplitMinExtent &&
               total <= kSplitMaxOutputs;
  bool combinable = split || rowSplit;
  for (unsigned i = 0; combinable && i < op.getNumDpsInits(); ++i) {
    auto c = findCombiner(body, i);
    Type elem = cast<ShapedType>(op.getDpsInits()[i].getType()).getElementType();
    TypedAttr neutral = failed(c) ? TypedAttr() : neutralElement(c->kind, elem);
    combinable = succeeded(c) && neutral;
    if (combinable) {
      combiners.push_back(*c);
      neutrals.push_back(neutral);
    }
  }
  split &= combinable;
  rowSplit &= combinable;
  SmallVector<Type> shared;
  if (split)
    for (Value init : op.getDpsInits())
      shared.push_back(MemRefType::get(
          {kSplitY, kSplitX}, cast<ShapedType>(init.getType()).getElementType(), AffineMap(),
          mlir::gpu::AddressSpaceAttr::get(op.getContext(), mlir::gpu::AddressSpace::Workgroup)));
  int64_t threadsX = split ? kSplitX : rowSplit ? kThreads : threadsPerBlock(total);
  int64_t threadsY = split ? kSplitY : 1;

  auto frame = beginKernel(op, operands, module, name, shared, {threadsX, threadsY, 1}, b);
  if (failed(frame))
    return failure();
  mlir::gpu::GPUFuncOp func = frame->func;
  IRMapping &mapping = frame->mapping;
  SmallVector<Value> &operandParams = frame->operandParams;

  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  Value bid = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
  Value tid = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  // A block per output point in row-split mode, else a thread per point.
  Value id = rowSplit ? bid
                      : arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, bid, cst(threadsX)), tid)
                            .getResult();
  Value inside;
  if (!rowSplit && total % threadsX != 0) {
    inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id, cst(total));
    if (split) {
      // Every thread reaches the barrier: out-of-range ones work on point 0
      // and store nothing.
      id = arith::SelectOp::create(b, loc, inside, id, cst(0));
    } else {
      auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    }
  }
  SmallVector<Value> ivs(loops.size());
  Value rest = id;
  for (int i = static_cast<int>(parallel.size()) - 1; i >= 0; --i) {
    unsigned d = parallel[i];
    ivs[d] = i == 0 ? rest : arith::RemUIOp::create(b, loc, rest, cst(loops[d])).getResult();
    if (i > 0)
      rest = arith::DivUIOp::create(b, loc, rest, cst(loops[d]));
  }
  // Outputs never read the reduction loops: a placeholder until the loops
  // bind them.
  for (unsigned d : reduction)
    ivs[d] = cst(0);
  auto at = [&](OpOperand &operand) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<Value> idx;
    for (AffineExpr e : map.getResults())
      idx.push_back(affine::AffineApplyOp::create(
          b, loc, AffineMap::get(map.getNumDims(), 0, e), ivs));
    return idx;
  };
  auto valueOf = [&](OpOperand &operand, Value p) -> Value {
    if (!p)
      return mapping.lookup(operand.get());
    return memref::LoadOp::create(b, loc, p, at(operand));
  };
  unsigned numInputs = op.getNumDpsInputs();
  // Output i's value when the kernel starts: a folded fill's constant, or
  // the buffer's.
  auto initialValue = [&](unsigned i) -> Value {
    if (i < initValues.size() && initValues[i])
      return arith::ConstantOp::create(b, loc, initValues[i]);
    OpOperand &init = op.getDpsInitsMutable()[i];
    return valueOf(init, operandParams[init.getOperandNumber()]);
  };

  SmallVector<Value> inits;
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    bool needed = !split && (!reduction.empty() || op.payloadUsesValueFromOperand(&init));
    inits.push_back(needed ? initialValue(i) : Value());
  }

  // The payload at the current ivs, given the outputs so far.
  auto payload = [&](ArrayRef<Value> accs) {
    IRMapping m = mapping;
    for (unsigned i = 0; i < numInputs; ++i) {
      OpOperand &in = op->getOpOperand(i);
      if (!body.getArgument(i).use_empty())
        m.map(body.getArgument(i), valueOf(in, operandParams[i]));
    }
    for (unsigned i = 0; i < accs.size(); ++i)
      if (accs[i])
        m.map(body.getArgument(numInputs + i), accs[i]);
    return clonePayload(b, body, m, [&](unsigned d) { return ivs[d]; });
  };

  // Output i's combiner applied to `acc` and a partial result.
  auto fold = [&](unsigned i, Value acc, Value part) {
    Operation *comb = combiners[i].op;
    BlockArgument accArg = body.getArgument(numInputs + i);
    IRMapping cm;
    for (Value x : comb->getOperands())
      cm.map(x, x == accArg ? acc : part);
    return b.clone(*comb, cm)->getResult(0);
  };

  SmallVector<Value> results;
  if (rowSplit) {
    // Thread t folds points t, t + kThreads, ... of the row; the block's
    // partials are combined by gpu.all_reduce, and thread 0 folds the
    // total into the initial value with the body's own combiner.
    unsigned d = reduction[0];
    SmallVector<Value> neutral;
    for (TypedAttr attr : neutrals)
      neutral.push_back(arith::ConstantOp::create(b, loc, attr));
    auto loop = scf::ForOp::create(b, loc, tid, cst(reductionExtent), cst(kThreads), neutral);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      ivs[d] = loop.getInductionVar();
      SmallVector<Value> accs(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      scf::YieldOp::create(b, loc, payload(accs));
    }
    ivs[d] = cst(0);
    SmallVector<Value> totals;
    for (auto [i, part] : llvm::enumerate(loop.getResults()))
      totals.push_back(mlir::gpu::AllReduceOp::create(
                           b, loc, part,
                           mlir::gpu::AllReduceOperationAttr::get(b.getContext(), combiners[i].kind),
                           /*uniform=*/true)
                           .getResult());
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, cst(0));
    auto ifOp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    for (unsigned i = 0; i < op.getNumDpsInits(); ++i)
      results.push_back(fold(i, initialValue(i), totals[i]));
  } else if (split) {
    // Thread (x, y) folds reduction points y, y + kSplitY, ... of output x
    // (the reduction loops flattened), then row y of shared memory holds
    // the partials that thread y = 0 folds into the initial value.
    Value ty = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::y);
    SmallVector<Value> neutral;
    for (auto [i, attr] : llvm::enumerate(neutrals))
      neutral.push_back(arith::ConstantOp::create(b, loc, attr));
    auto loop = scf::ForOp::create(b, loc, ty, cst(reductionExtent), cst(kSplitY), neutral);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      Value r = loop.getInductionVar();
      for (int i = static_cast<int>(reduction.size()) - 1; i >= 0; --i) {
        unsigned d = reduction[i];
        ivs[d] = i == 0 ? r : arith::RemUIOp::create(b, loc, r, cst(loops[d])).getResult();
        if (i > 0)
          r = arith::DivUIOp::create(b, loc, r, cst(loops[d]));
      }
      SmallVector<Value> accs(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
      scf::YieldOp::create(b, loc, payload(accs));
    }
    for (unsigned d : reduction)
      ivs[d] = cst(0);
    for (auto [i, part] : llvm::enumerate(loop.getResults()))
      memref::StoreOp::create(b, loc, part, func.getWorkgroupAttributions()[i], ValueRange{ty, tid});
    mlir::gpu::BarrierOp::create(b, loc);
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ty, cst(0));
    if (inside)
      first = arith::AndIOp::create(b, loc, first, inside);
    auto ifOp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    for (unsigned i = 0; i < op.getNumDpsInits(); ++i) {
      Value acc = initialValue(i);
      for (int64_t y = 0; y < kSplitY; ++y)
        acc = fold(i, acc, memref::LoadOp::create(b, loc, func.getWorkgroupAttributions()[i],
                                                  ValueRange{cst(y), tid}));
      results.push_back(acc);
    }
  } else if (reduction.empty()) {
    results = payload(inits);
  } else {
    // Nested loops over the reduction dimensions, carrying the outputs.
    std::function<SmallVector<Value>(unsigned, ValueRange)> nest =
        [&](unsigned level, ValueRange accs) -> SmallVector<Value> {
      if (level == reduction.size())
        return payload(SmallVector<Value>(accs.begin(), accs.end()));
      auto loop = scf::ForOp::create(b, loc, cst(0), cst(loops[reduction[level]]), cst(1), accs);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      ivs[reduction[level]] = loop.getInductionVar();
      SmallVector<Value> inner = nest(level + 1, loop.getRegionIterArgs());
      scf::YieldOp::create(b, loc, inner);
      return SmallVector<Value>(loop.getResults().begin(), loop.getResults().end());
    };
    results = nest(0, inits);
    for (unsigned d : reduction)
      ivs[d] = cst(0); // outputs do not read reduction loops
  }
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
    memref::StoreOp::create(b, loc, results[i], operandParams[init.getOperandNumber()],
                            at(init));

  Launch launch;
  launch.func = func;
  launch.block = {threadsX, threadsY, 1};
  launch.grid = {rowSplit ? total : std::max<int64_t>(1, llvm::divideCeil(total, threadsX)), 1, 1};
  return launch;
}

} // namespace rewire::gpu
