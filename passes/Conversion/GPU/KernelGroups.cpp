//===- KernelGroups.cpp - Which linalg ops share a row kernel -------------===//
#include "passes/Conversion/GPU/KernelGroups.h"
#include "passes/Conversion/LinalgBuilders.h"

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

Type elementTypeOf(Value v) {
  if (auto s = dyn_cast<ShapedType>(v.getType()))
    return s.getElementType();
  return v.getType();
}

} // namespace rewire::gpu
