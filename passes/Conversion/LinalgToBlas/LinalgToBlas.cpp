//===- LinalgToBlas.cpp - f32 contractions on buffers to SGEMM calls ------===//
//
// Implements rewire-linalg-to-blas (see Passes.td). The call convention of
// `rewire_sgemm` (all index-typed, i.e. int64_t in C, except beta):
//   (transA, transB, M, N, K, A, offsetA, lda, B, offsetB, ldb,
//    C, offsetC, ldc, beta)
// with A/B/C the aligned base pointers and offsets in elements; row-major.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

namespace rewire {
#define GEN_PASS_DEF_LINALGTOBLAS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {

constexpr const char *kSgemm = "rewire_sgemm";

/// How one GEMM operand is read: which memref dimension carries each loop
/// dimension, and whether its two matrix dimensions are swapped.
struct OperandPlan {
  bool transposed = false;
  /// For each memref batch dimension: the loop dimension, or -1 (broadcast).
  SmallVector<int64_t> batchLoops;
};

/// Matches `map` = [batch..., x, y] with {x, y} = {row, col}; fills `plan`
/// (transposed when x == col). Batch results must be loop dims in
/// `batchDims` or the constant 0.
bool planOperand(AffineMap map, MemRefType type, unsigned row, unsigned col,
                 ArrayRef<unsigned> batchDims, OperandPlan &plan) {
  unsigned n = map.getNumResults();
  if (n < 2 || n != static_cast<unsigned>(type.getRank()))
    return false;
  auto dimOf = [&](unsigned i) -> int64_t {
    if (auto d = dyn_cast<AffineDimExpr>(map.getResult(i)))
      return d.getPosition();
    if (auto c = dyn_cast<AffineConstantExpr>(map.getResult(i)))
      return c.getValue() == 0 ? -1 : -2;
    return -2;
  };
  int64_t x = dimOf(n - 2), y = dimOf(n - 1);
  if (x == row && y == col)
    plan.transposed = false;
  else if (x == col && y == row)
    plan.transposed = true;
  else
    return false;
  for (unsigned i = 0; i + 2 < n; ++i) {
    int64_t d = dimOf(i);
    if (d == -2 || (d >= 0 && !llvm::is_contained(batchDims, static_cast<unsigned>(d))))
      return false;
    plan.batchLoops.push_back(d);
  }
  // BLAS needs unit stride along the innermost dimension.
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return false;
  return true;
}

/// Whether `type`'s batch dimensions (read as `plan` says, none broadcast,
/// in the order of `batchDims`) continue its rows: static strides with
/// stride(batch i) = size(i + 1) x stride(i + 1) down to the row dimension,
/// so [batch..., M, K] is the matrix [batch x M, K] with the same leading
/// dimension.
bool rowsStack(MemRefType type, const OperandPlan &plan, ArrayRef<unsigned> batchDims) {
  SmallVector<int64_t> strides;
  int64_t offset;
  int64_t rank = type.getRank();
  if (!type.hasStaticShape() || failed(type.getStridesAndOffset(strides, offset)) ||
      plan.batchLoops.size() != batchDims.size())
    return false;
  for (auto [i, d] : llvm::enumerate(plan.batchLoops))
    if (d != static_cast<int64_t>(batchDims[i]))
      return false;
  for (int64_t i = rank - 3; i >= 0; --i)
    if (ShapedType::isDynamic(strides[i]) || ShapedType::isDynamic(strides[i + 1]) ||
        strides[i] != type.getDimSize(i + 1) * strides[i + 1])
      return false;
  return true;
}

/// Below this many FLOPs a GEMM repeated `kManyCalls` times or more is left
/// to the loop pipeline (a 32 x 32 x 16 product).
constexpr int64_t kTinyGemmFlops = 32768;
constexpr int64_t kManyCalls = 64;

struct LinalgToBlasPass : public rewire::impl::LinalgToBlasBase<LinalgToBlasPass> {
  void runOnOperation() override;
  LogicalResult rewrite(linalg::LinalgOp op, func::FuncOp callee);
};

LogicalResult LinalgToBlasPass::rewrite(linalg::LinalgOp op, func::FuncOp callee) {
  if (!op.hasPureBufferSemantics() || !rewire::isMultiplyAccumulate(op))
    return failure();
  Value a = op.getDpsInputOperand(0)->get(), b = op.getDpsInputOperand(1)->get();
  Value c = op.getDpsInitOperand(0)->get();
  auto at = dyn_cast<MemRefType>(a.getType()), bt = dyn_cast<MemRefType>(b.getType()),
       ct = dyn_cast<MemRefType>(c.getType());
  if (!at || !bt || !ct || !at.getElementType().isF32() || !bt.getElementType().isF32() ||
      !ct.getElementType().isF32() || ct.getRank() < 2)
    return failure();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap om = maps[2];
  if (!om.isProjectedPermutation(/*allowZeroInResults=*/false) ||
      om.getNumResults() != op.getNumLoops() - 1)
    return failure();
  unsigned k = 0;
  for (auto [i, it] : llvm::enumerate(op.getIteratorTypesArray()))
    if (it == utils::IteratorType::reduction)
      k = i;
  unsigned rank = om.getNumResults();
  unsigned m = om.getDimPosition(rank - 2), n = om.getDimPosition(rank - 1);
  SmallVector<unsigned> batchDims;
  for (unsigned i = 0; i + 2 < rank; ++i)
    batchDims.push_back(om.getDimPosition(i));
  OperandPlan pa, pb, pc;
  if (!planOperand(maps[0], at, m, k, batchDims, pa) ||
      !planOperand(maps[1], bt, k, n, batchDims, pb) ||
      !planOperand(om, ct, m, n, batchDims, pc) || pc.transposed)
    return failure();

  // A zero fill of C right before the contraction becomes beta = 0.
  float beta = 1.0f;
  Operation *prev = op->getPrevNode();
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(prev)) {
    FloatAttr value;
    if (fill.hasPureBufferSemantics() && fill.getOutputs()[0] == c &&
        matchPattern(fill.getInputs()[0], m_Constant(&value)) && value.getValue().isZero())
      beta = 0.0f;
    else
      prev = nullptr;
  } else {
    prev = nullptr;
  }

  // Batch dimensions that only stack rows: with B the same matrix for
  // every batch (a weight) and A, C dense across their batch dimensions,
  // the batch is one product with M' = batch x M (one call, a better
  // shape: [4, 128, 256] . [256, 1024] is a 512 x 256 x 1024 GEMM).
  bool stackRows = !batchDims.empty() && !pa.transposed &&
                   llvm::all_of(pb.batchLoops, [](int64_t d) { return d < 0; }) &&
                   rowsStack(at, pa, batchDims) && rowsStack(ct, pc, batchDims);

  // Many tiny products (a hyper-connection's [n, n] . [n, d] per token) stay
  // loops: a call per product costs more than its arithmetic, and the loop
  // nest vectorizes along d and runs in parallel over the batch. Products
  // that stack into one call ([B, T, n, d] . [d, k]) are not tiny.
  if (!stackRows && ct.hasStaticShape() && at.hasStaticShape()) {
    int64_t calls = 1;
    for (unsigned i = 0; i + 2 < rank; ++i)
      calls *= ct.getDimSize(i);
    int64_t kExtent = 1;
    for (auto [i, it] : llvm::enumerate(op.getStaticLoopRanges()))
      if (i == k)
        kExtent = it;
    int64_t flops = 2 * ct.getDimSize(rank - 2) * ct.getDimSize(rank - 1) * kExtent;
    if (calls >= kManyCalls && flops < kTinyGemmFlops)
      return failure();
  }

  OpBuilder bld(op);
  Location loc = op.getLoc();
  rewire::BufferView ma = rewire::describeBuffer(bld, loc, a),
                     mb = rewire::describeBuffer(bld, loc, b),
                     mc = rewire::describeBuffer(bld, loc, c);
  Value zero = arith::ConstantIndexOp::create(bld, loc, 0);
  Value one = arith::ConstantIndexOp::create(bld, loc, 1);

  Value mSize = mc.sizes[rank - 2], nSize = mc.sizes[rank - 1];
  if (stackRows) {
    for (unsigned i = 0; i + 2 < rank; ++i)
      mSize = arith::MulIOp::create(bld, loc, mSize, mc.sizes[i]);
    pa.batchLoops.assign(pa.batchLoops.size(), -1);
    pc.batchLoops.assign(pc.batchLoops.size(), -1);
    batchDims.clear();
  }
  // One scf.for per batch dimension of C; ivs indexed by loop dimension.
  DenseMap<unsigned, Value> ivs;
  OpBuilder::InsertionGuard guard(bld);
  for (auto [i, d] : llvm::enumerate(batchDims)) {
    auto loop = scf::ForOp::create(bld, loc, zero, mc.sizes[i], one);
    bld.setInsertionPoint(loop.getBody()->getTerminator());
    ivs[d] = loop.getInductionVar();
  }
  auto offsetOf = [&](const rewire::BufferView &mt, const OperandPlan &plan) {
    Value off = mt.offset;
    for (auto [i, d] : llvm::enumerate(plan.batchLoops)) {
      if (d < 0)
        continue;
      Value step = arith::MulIOp::create(bld, loc, ivs[d], mt.strides[i]);
      off = arith::AddIOp::create(bld, loc, off, step);
    }
    return off;
  };
  auto lead = [](const rewire::BufferView &mt) { return mt.strides[mt.strides.size() - 2]; };
  Value kSize = pa.transposed ? ma.sizes[ma.sizes.size() - 2] : ma.sizes.back();
  Value ta = arith::ConstantIndexOp::create(bld, loc, pa.transposed);
  Value tb = arith::ConstantIndexOp::create(bld, loc, pb.transposed);
  Value betaV = arith::ConstantOp::create(bld, loc, bld.getF32FloatAttr(beta));
  func::CallOp::create(bld, loc, callee,
                       ValueRange{ta, tb, mSize, nSize, kSize, ma.ptr, offsetOf(ma, pa),
                                  lead(ma), mb.ptr, offsetOf(mb, pb), lead(mb), mc.ptr,
                                  offsetOf(mc, pc), lead(mc), betaV});
  if (prev)
    prev->erase();
  op->erase();
  return success();
}

void LinalgToBlasPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<linalg::LinalgOp> candidates;
  module.walk([&](linalg::LinalgOp op) {
    if (op.hasPureBufferSemantics() && rewire::isMultiplyAccumulate(op))
      candidates.push_back(op);
  });
  if (candidates.empty())
    return;
  Builder b(module.getContext());
  SmallVector<Type> args(14, b.getIndexType());
  args.push_back(b.getF32Type());
  func::FuncOp callee = rewire::declareRuntimeFunction(module, kSgemm, args);
  for (linalg::LinalgOp op : candidates)
    (void)rewrite(op, callee);
}

} // namespace
