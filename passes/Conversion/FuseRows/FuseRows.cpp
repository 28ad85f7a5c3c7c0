//===- FuseRows.cpp - Row groups as one loop over row tiles (CPU) ---------===//
//
// Implements rewire-fuse-rows (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/GPU/KernelGroups.h"
#include "passes/Conversion/Passes.h"

#include "mlir/IR/IRMapping.h"

namespace rewire {
#define GEN_PASS_DEF_FUSEROWS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using rewire::gpu::RowGroup;

namespace {

struct FuseRowsPass : rewire::impl::FuseRowsBase<FuseRowsPass> {
  void runOnOperation() override;
};

/// At most this many bytes of a tile's row of one value (16 rows of 256
/// floats): a tile's values stay in the core's L1 cache.
constexpr int64_t kTileValueBytes = 16 * 1024;
/// At most this many bytes of stack for a tile's intermediates (an OpenMP
/// worker's stack is 4 MiB or more).
constexpr int64_t kTileStackBytes = 128 * 1024;
/// Rows wider than this stay unfused: one row of each intermediate would
/// not fit the L1 cache (a vocabulary-wide softmax).
constexpr int64_t kMaxWidth = 8192;
/// At most this many rows in a tile, and tiles no larger than needed to
/// leave at least kMinTiles of them (work for every thread).
constexpr int64_t kMaxTileRows = 16, kMinTiles = 8;

/// Bytes of an element (index and other non-scalar types count as 8).
int64_t byteSize(Type t) {
  return t.isIntOrFloat() ? std::max<int64_t>(1, (t.getIntOrFloatBitWidth() + 7) / 8) : 8;
}

/// The slice of a value read or written through `map` (an in-order
/// projection of the group's loops: rows, then the feature) in the tile at
/// `rowOffsets` of `rowSizes` rows per dimension.
struct Slice {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  SmallVector<int64_t> shape;
};

Slice sliceOf(OpBuilder &b, AffineMap map, ArrayRef<Value> rowOffsets, ArrayRef<int64_t> rowSizes,
              int64_t width) {
  Slice s;
  for (AffineExpr e : map.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (d && d.getPosition() < rowOffsets.size()) {
      s.offsets.push_back(rowOffsets[d.getPosition()]);
      s.sizes.push_back(b.getIndexAttr(rowSizes[d.getPosition()]));
      s.shape.push_back(rowSizes[d.getPosition()]);
    } else {
      int64_t n = d ? width : 1; // the feature, or a unit dimension
      s.offsets.push_back(b.getIndexAttr(0));
      s.sizes.push_back(b.getIndexAttr(n));
      s.shape.push_back(n);
    }
    s.strides.push_back(b.getIndexAttr(1));
  }
  return s;
}

/// The group's results that something outside it reads.
SmallVector<OpResult> escaping(const RowGroup &group,
                               const llvm::SmallPtrSetImpl<Operation *> &members) {
  SmallVector<OpResult> out;
  for (linalg::GenericOp m : group.members)
    for (OpResult r : m->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *u) { return !members.contains(u); }))
        out.push_back(r);
  return out;
}

/// Rows per tile (of the last row dimension; the others are tiled by one):
/// a power of two dividing it, small enough for kTileValueBytes, for all
/// intermediates on the stack and for kMinTiles tiles; 0 when even one row
/// is too much.
int64_t tileRows(const RowGroup &group, ArrayRef<OpResult> out) {
  int64_t stackPerRow = 0, widest = 1;
  for (linalg::GenericOp m : group.members)
    for (OpOperand &init : m.getDpsInitsMutable()) {
      AffineMap map = m.getMatchingIndexingMap(&init);
      bool perFeature = llvm::any_of(map.getResults(), [&](AffineExpr e) {
        auto d = dyn_cast<AffineDimExpr>(e);
        return d && d.getPosition() == group.rows.size();
      });
      int64_t bytes = (perFeature ? group.width : 1) *
                      byteSize(rewire::gpu::elementTypeOf(init.get()));
      widest = std::max(widest, bytes);
      if (!llvm::is_contained(out, m.getTiedOpResult(&init)))
        stackPerRow += bytes;
    }
  if (stackPerRow > kTileStackBytes || widest > kTileValueBytes)
    return 0;
  int64_t last = group.rows.back(), others = 1, rows = 1;
  for (int64_t n : ArrayRef(group.rows).drop_back())
    others *= n;
  while (rows * 2 <= kMaxTileRows && last % (rows * 2) == 0 &&
         rows * 2 * widest <= kTileValueBytes && rows * 2 * stackPerRow <= kTileStackBytes &&
         others * (last / (rows * 2)) >= kMinTiles)
    rows *= 2;
  return rows;
}

/// Replaces the group's ops by one scf.forall over tiles of rows that
/// computes each op on the tile: the values only the group reads live in
/// tile-sized stack buffers, the ones read outside are written into their
/// full tensors (the loop's shared outputs).
void fuse(RowGroup &group) {
  llvm::SmallPtrSet<Operation *, 16> members;
  for (linalg::GenericOp m : group.members)
    members.insert(m);
  SmallVector<OpResult> out = escaping(group, members);
  int64_t tile = tileRows(group, out);
  if (tile == 0 || out.empty())
    return;
  linalg::GenericOp last = group.members.back();
  Location loc = last.getLoc();
  OpBuilder b(last);
  int64_t nRows = group.rows.size();
  SmallVector<int64_t> rowSizes(nRows, 1);
  rowSizes.back() = tile;
  int64_t tiles = group.rows.back() / tile;
  for (int64_t i = 0; i + 1 < nRows; ++i)
    tiles *= group.rows[i];

  SmallVector<Value> sharedInits;
  for (OpResult r : out)
    sharedInits.push_back(cast<linalg::GenericOp>(r.getOwner()).getDpsInits()[r.getResultNumber()]);
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(tiles)},
                                      sharedInits, std::nullopt);
  Block *body = forall.getBody();
  b.setInsertionPointToStart(body);
  // The tile's first row in each row dimension, the last one fastest.
  SmallVector<Value> rowOffsets(nRows);
  Value t = forall.getInductionVars()[0];
  for (int64_t i = nRows - 1; i >= 0; --i) {
    int64_t count = i == nRows - 1 ? group.rows[i] / tile : group.rows[i];
    Value n = i == 0 ? Value() : arith::ConstantIndexOp::create(b, loc, count).getResult();
    Value index = i == 0 ? t : arith::RemUIOp::create(b, loc, t, n).getResult();
    rowOffsets[i] = i == nRows - 1
                        ? arith::MulIOp::create(b, loc, index,
                                                arith::ConstantIndexOp::create(b, loc, tile))
                              .getResult()
                        : index;
    if (i > 0)
      t = arith::DivUIOp::create(b, loc, t, n);
  }

  IRMapping tiled;
  DenseMap<Value, Value> sharedArg;
  for (auto [r, arg] : llvm::zip(out, forall.getRegionIterArgs()))
    sharedArg[r] = arg;
  auto isMember = [&](Value v) { return tiled.contains(v); };
  DenseMap<std::pair<Value, AffineMap>, Value> readSlices;
  for (linalg::GenericOp m : group.members) {
    SmallVector<AffineMap> maps = m.getIndexingMapsArray();
    SmallVector<Value> inputs, inits;
    for (OpOperand *in : m.getDpsInputOperands()) {
      Value v = in->get();
      if (isMember(v)) {
        inputs.push_back(tiled.lookup(v));
        continue;
      }
      // One slice of each value read the same way, whichever ops read it.
      AffineMap map = maps[in->getOperandNumber()];
      Value &slice = readSlices[{v, map}];
      if (!slice) {
        Slice s = sliceOf(b, map, rowOffsets, rowSizes, group.width);
        slice = tensor::ExtractSliceOp::create(b, loc, v, s.offsets, s.sizes, s.strides);
      }
      inputs.push_back(slice);
    }
    for (OpOperand &init : m.getDpsInitsMutable()) {
      OpResult r = m.getTiedOpResult(&init);
      Value v = init.get();
      Slice s = sliceOf(b, maps[init.getOperandNumber()], rowOffsets, rowSizes, group.width);
      if (auto it = sharedArg.find(r); it != sharedArg.end()) {
        inits.push_back(
            tensor::ExtractSliceOp::create(b, loc, it->second, s.offsets, s.sizes, s.strides));
      } else if (isMember(v)) {
        inits.push_back(tiled.lookup(v));
      } else if (isa_and_nonnull<tensor::EmptyOp, linalg::FillOp>(v.getDefiningOp())) {
        // A fresh tile on the stack (filled as the original init was).
        Type element = rewire::gpu::elementTypeOf(v);
        auto buffer = memref::AllocaOp::create(b, loc, MemRefType::get(s.shape, element),
                                               b.getI64IntegerAttr(64));
        Value fresh = bufferization::ToTensorOp::create(b, loc, RankedTensorType::get(s.shape, element),
                                                        buffer, /*restrict=*/true,
                                                        /*writable=*/true);
        if (auto fill = v.getDefiningOp<linalg::FillOp>())
          fresh = linalg::FillOp::create(b, loc, fill.getInputs()[0], fresh).getResult(0);
        inits.push_back(fresh);
      } else {
        inits.push_back(tensor::ExtractSliceOp::create(b, loc, v, s.offsets, s.sizes, s.strides));
      }
    }
    SmallVector<Type> types;
    for (Value v : inits)
      types.push_back(v.getType());
    auto op = linalg::GenericOp::create(b, loc, types, inputs, inits, maps,
                                        m.getIteratorTypesArray());
    IRMapping bodyMap;
    m.getRegion().cloneInto(&op.getRegion(), bodyMap);
    // Row indices are the tile's: offset them back to the whole tensor's.
    SmallVector<linalg::IndexOp> indices;
    op.getRegion().walk([&](linalg::IndexOp i) { indices.push_back(i); });
    for (linalg::IndexOp i : indices) {
      if (i.getDim() >= static_cast<uint64_t>(nRows))
        continue;
      OpBuilder ib(i.getContext());
      ib.setInsertionPointAfter(i);
      auto shifted = arith::AddIOp::create(ib, i.getLoc(), i, rowOffsets[i.getDim()]);
      i.getResult().replaceAllUsesExcept(shifted, shifted);
    }
    for (auto [r, v] : llvm::zip(m->getResults(), op->getResults()))
      tiled.map(r, v);
  }
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (OpResult r : out) {
    auto m = cast<linalg::GenericOp>(r.getOwner());
    Slice s = sliceOf(b, m.getIndexingMapsArray()[m.getNumDpsInputs() + r.getResultNumber()],
                      rowOffsets, rowSizes, group.width);
    tensor::ParallelInsertSliceOp::create(b, loc, tiled.lookup(r), sharedArg[r], s.offsets,
                                          s.sizes, s.strides);
  }

  for (auto [r, result] : llvm::zip(out, forall.getResults()))
    r.replaceUsesWithIf(result, [&](OpOperand &use) { return !members.contains(use.getOwner()); });
  for (linalg::GenericOp m : llvm::reverse(group.members))
    m->erase();
}

void FuseRowsPass::runOnOperation() {
  func::FuncOp fn = getOperation();
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return;
  SmallVector<RowGroup> groups = rewire::gpu::collectRowGroups(
      fn.getBody().front(), [](int64_t width) { return width <= kMaxWidth; });
  for (RowGroup &group : groups)
    if (group.members.size() > 1 && !group.rows.empty())
      fuse(group);
}

} // namespace
