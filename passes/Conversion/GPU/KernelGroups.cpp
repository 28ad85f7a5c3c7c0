//===- KernelGroups.cpp - Which linalg ops share a row kernel -------------===//
#include "passes/Conversion/GPU/KernelGroups.h"
#include "passes/Conversion/LinalgBuilders.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace rewire::gpu {

bool isInOrderProjection(AffineMap map) {
  int64_t last = -1;
  for (AffineExpr e : map.getResults()) {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      if (c.getValue() != 0)
        return false;
      continue;
    }
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || static_cast<int64_t>(d.getPosition()) <= last)
      return false;
    last = d.getPosition();
  }
  return true;
}

namespace {

/// Whether `op` multiplies two f32 operands into a matrix product: the
/// output's last two loops m, n; A reads m and not n, B reads n and not m
/// (a per-row dot product reads both from each input).
bool isMatrixProduct(linalg::GenericOp op) {
  if (!rewire::isMultiplyAccumulate(op) || !elementTypeOf(op.getDpsInits()[0]).isF32() ||
      op.getNumDpsInputs() != 2)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap out = maps[2];
  if (out.getNumResults() < 2 || !out.isProjectedPermutation())
    return false;
  unsigned m = out.getDimPosition(out.getNumResults() - 2);
  unsigned n = out.getDimPosition(out.getNumResults() - 1);
  auto reads = [](AffineMap map, unsigned d) { return map.isFunctionOfDim(d); };
  return reads(maps[0], m) && !reads(maps[0], n) && reads(maps[1], n) && !reads(maps[1], m);
}

/// A matrix product of at most kShortContraction terms per output (static
/// shapes): a hyper-connection's gradient res^T . g, 2048 products of
/// [4, 4] . [4, 768], or dz . W^T with W [768, 4]. Streaming work, 2k flops
/// per output, for a generic kernel with a thread per output: cuBLAS's
/// batched call took 82 us on an H200 for what streams in 12, and a row
/// kernel (the reduction is the last loop) gave each output a warp with
/// one lane busy: 626 us.
bool isShortContraction(linalg::GenericOp op) {
  if (!isMatrixProduct(op))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return false;
  int64_t k = 1;
  for (auto [range, type] : llvm::zip(ranges, op.getIteratorTypesArray()))
    if (type == utils::IteratorType::reduction)
      k = std::min<int64_t>(k * range, kShortContraction + 1);
  return k <= kShortContraction;
}

} // namespace

RowRole classify(linalg::GenericOp op) {
  unsigned n = op.getNumLoops();
  if (n == 0 || (!op.hasPureTensorSemantics() && !op.hasPureBufferSemantics()) ||
      isShortContraction(op))
    return RowRole::none;
  for (AffineMap m : op.getIndexingMapsArray())
    if (!isInOrderProjection(m))
      return RowRole::none;
  // Every static loop range: the kernels are specialized to the shapes.
  for (int64_t r : op.getStaticLoopRanges())
    if (ShapedType::isDynamic(r))
      return RowRole::none;
  auto iters = op.getIteratorTypesArray();
  for (unsigned i = 0; i + 1 < n; ++i)
    if (iters[i] != utils::IteratorType::parallel)
      return RowRole::none;
  if (iters[n - 1] == utils::IteratorType::parallel)
    return RowRole::full;
  // A reduction's results are per row: no output reads the feature loop.
  for (OpOperand &init : op.getDpsInitsMutable())
    for (AffineExpr e : op.getMatchingIndexingMap(&init).getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == n - 1)
        return RowRole::none;
  // Warp shuffles move 32 bits: a 64-bit accumulator (an i64 cumulative
  // sum) reduces in a generic kernel instead.
  for (OpOperand &init : op.getDpsInitsMutable())
    if (getElementTypeOrSelf(init.get().getType()).getIntOrFloatBitWidth() > 32)
      return RowRole::none;
  return RowRole::reduce;
}

bool fitsRowKernel(int64_t width) {
  int64_t v = width % 4 == 0 ? 4 : width % 2 == 0 ? 2 : 1;
  return width > 0 && width / v <= kRowKernelMaxChunks * kRowKernelMaxThreads;
}

bool isGemm(linalg::GenericOp op) { return isMatrixProduct(op) && !isShortContraction(op); }

namespace {

/// The role `op` plays in `group`, or none when it cannot join.
RowRole joinRole(const RowGroup &group, linalg::GenericOp op) {
  RowRole role = classify(op);
  if (role == RowRole::none)
    return role;
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  ArrayRef<int64_t> l(loops);
  if (l.size() == group.rows.size() + 1 && l.drop_back() == ArrayRef(group.rows) &&
      l.back() == group.width) {
    // full or reduce as classified
  } else if (role == RowRole::full && l == ArrayRef(group.rows)) {
    role = RowRole::rowwise;
  } else {
    return RowRole::none;
  }
  for (OpOperand &operand : op->getOpOperands()) {
    Value v = operand.get();
    if (op.isDpsInit(&operand) && !op.payloadUsesValueFromOperand(&operand))
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (group.full.contains(v)) {
      if (role == RowRole::rowwise || !map.isIdentity())
        return RowRole::none;
    } else if (auto it = group.perRow.find(v); it != group.perRow.end()) {
      if (ArrayRef(it->second) != map.getResults())
        return RowRole::none;
    }
  }
  // A scalar read from the group's own results would need the group done.
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  for (Value v : captured)
    if (auto extract = v.getDefiningOp<tensor::ExtractOp>(); extract && group.produces(extract.getTensor()))
      return RowRole::none;
  // Full ops write every feature of every row.
  if (role == RowRole::full)
    for (OpOperand &init : op.getDpsInitsMutable())
      if (!op.getMatchingIndexingMap(&init).isIdentity())
        return RowRole::none;
  if (role == RowRole::rowwise)
    for (OpOperand &init : op.getDpsInitsMutable())
      if (op.getMatchingIndexingMap(&init).getNumResults() == 0)
        return RowRole::none;
  return role;
}

void join(RowGroup &group, linalg::GenericOp op, RowRole role) {
  if (group.members.empty()) {
    SmallVector<int64_t> loops = op.getStaticLoopRanges();
    group.rows.assign(loops.begin(), loops.end() - 1);
    group.width = loops.back();
  }
  group.members.push_back(op);
  for (OpOperand &init : op.getDpsInitsMutable()) {
    Value result = op.getTiedOpResult(&init);
    if (role == RowRole::full)
      group.full.insert(result);
    else
      group.perRow[result] = llvm::to_vector(op.getMatchingIndexingMap(&init).getResults());
  }
}

} // namespace

bool isTransparent(Operation *op) {
  if (isa<tensor::EmptyOp>(op) || op->hasTrait<OpTrait::ConstantLike>())
    return true;
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.hasPureTensorSemantics();
  if (auto extract = dyn_cast<tensor::ExtractOp>(op))
    return llvm::all_of(extract.getIndices(),
                        [](Value i) { return matchPattern(i, m_Constant()); });
  return false;
}

SmallVector<RowGroup> collectRowGroups(Block &block, llvm::function_ref<bool(int64_t)> fits) {
  SmallVector<RowGroup> groups;
  RowGroup current;
  auto close = [&] {
    if (!current.members.empty())
      groups.push_back(std::move(current));
    current = RowGroup();
  };
  for (Operation &op : block) {
    auto generic = dyn_cast<linalg::GenericOp>(&op);
    if (generic && generic.hasPureTensorSemantics() && !isGemm(generic)) {
      RowRole role = current.members.empty() ? RowRole::none : joinRole(current, generic);
      if (role != RowRole::none) {
        join(current, generic, role);
        continue;
      }
      close();
      RowRole own = classify(generic);
      if ((own == RowRole::full || own == RowRole::reduce) &&
          fits(generic.getStaticLoopRanges().back())) {
        // Start a group: its rows are this op's loops but the last.
        SmallVector<int64_t> loops = generic.getStaticLoopRanges();
        current.rows.assign(loops.begin(), loops.end() - 1);
        current.width = loops.back();
        if (joinRole(current, generic) == own) {
          join(current, generic, own);
          continue;
        }
        current = RowGroup();
      }
      continue; // in no group
    }
    bool readsGroup = llvm::any_of(op.getOperands(), [&](Value v) { return current.produces(v); });
    if (isTransparent(&op) && !readsGroup)
      continue;
    close();
  }
  close();
  return groups;
}

Type elementTypeOf(Value v) {
  if (auto s = dyn_cast<ShapedType>(v.getType()))
    return s.getElementType();
  return v.getType();
}

} // namespace rewire::gpu
