//===- RowKernel.cpp - One GPU kernel per row group -----------------------===//
//
// Emits the kernel of an outlined row group (see KernelEmit.h). Every value
// of the group lives in registers: a thread holds K chunks of V features of
// its row (chunk k starts at feature (tx + k * threadsX) * V), per-row
// values are uniform across the row's threads. Buffers are touched only to
// read the group's inputs and write what it returns.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/GPU/KernelEmit.h"
#include "passes/Conversion/GPU/KernelGroups.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>

using namespace mlir;

namespace rewire::gpu {

SmallVector<Value> clonePayload(OpBuilder &b, Block &body, IRMapping &m,
                                llvm::function_ref<Value(unsigned)> index) {
  for (Operation &inner : body.without_terminator()) {
    if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
      m.map(idx.getResult(), index(idx.getDim()));
      continue;
    }
    b.clone(inner, m);
  }
  SmallVector<Value> out;
  for (Value y : body.getTerminator()->getOperands())
    out.push_back(m.lookupOrDefault(y));
  return out;
}

FailureOr<Combiner> findCombiner(Block &body, unsigned output) {
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  unsigned numInputs = body.getNumArguments() - yield.getNumOperands();
  BlockArgument acc = body.getArgument(numInputs + output);
  Operation *op = yield.getOperand(output).getDefiningOp();
  if (!op || op->getNumOperands() != 2 || op->getBlock() != &body ||
      !llvm::is_contained(op->getOperands(), Value(acc)) || !acc.hasOneUse())
    return failure();
  using K = mlir::gpu::AllReduceOperation;
  std::optional<K> kind =
      llvm::TypeSwitch<Operation *, std::optional<K>>(op)
          .Case<arith::AddFOp, arith::AddIOp>([](auto) { return K::ADD; })
          .Case<arith::MulFOp, arith::MulIOp>([](auto) { return K::MUL; })
          .Case<arith::MaximumFOp>([](auto) { return K::MAXIMUMF; })
          .Case<arith::MinimumFOp>([](auto) { return K::MINIMUMF; })
          .Case<arith::MaxNumFOp>([](auto) { return K::MAXNUMF; })
          .Case<arith::MinNumFOp>([](auto) { return K::MINNUMF; })
          .Case<arith::MaxSIOp>([](auto) { return K::MAXSI; })
          .Case<arith::MinSIOp>([](auto) { return K::MINSI; })
          .Case<arith::OrIOp>([](auto) { return K::OR; })
          .Case<arith::AndIOp>([](auto) { return K::AND; })
          .Default([](Operation *) { return std::nullopt; });
  if (!kind)
    return failure();
  return Combiner{op, *kind};
}

TypedAttr neutralElement(mlir::gpu::AllReduceOperation kind, Type type) {
  using K = mlir::gpu::AllReduceOperation;
  if (auto ft = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = ft.getFloatSemantics();
    switch (kind) {
    case K::ADD: return FloatAttr::get(type, APFloat::getZero(sem));
    case K::MUL: return FloatAttr::get(type, APFloat::getOne(sem));
    case K::MAXIMUMF: case K::MAXNUMF: return FloatAttr::get(type, APFloat::getInf(sem, true));
    case K::MINIMUMF: case K::MINNUMF: return FloatAttr::get(type, APFloat::getInf(sem, false));
    default: return {};
    }
  }
  auto it = dyn_cast<IntegerType>(type);
  if (!it)
    return {};
  unsigned w = it.getWidth();
  switch (kind) {
  case K::ADD: case K::OR: return IntegerAttr::get(type, APInt::getZero(w));
  case K::MUL: return IntegerAttr::get(type, APInt(w, 1));
  case K::AND: return IntegerAttr::get(type, APInt::getAllOnes(w));
  case K::MAXSI: return IntegerAttr::get(type, APInt::getSignedMinValue(w));
  case K::MINSI: return IntegerAttr::get(type, APInt::getSignedMaxValue(w));
  default: return {};
  }
}

namespace {

constexpr int64_t kMaxChunks = kRowKernelMaxChunks;
constexpr int64_t kWarp = 32;
constexpr int64_t kRowsPerWarpBlock = 8;

struct PerRow {
  Value value;
  SmallVector<AffineExpr> map; ///< the map it was written with (for stores)
};

class RowEmitter {
public:
  RowEmitter(func::FuncOp kernel, ArrayRef<MemRefType> argTypes, mlir::gpu::GPUModuleOp module,
             StringRef name)
      : kernel(kernel), argTypes(argTypes), module(module), name(name),
        b(kernel.getContext()), loc(kernel.getLoc()) {}
  FailureOr<Launch> run();

private:
  LogicalResult geometry();
  void prologue();
  LogicalResult emit(Operation *op);
  LogicalResult emitGeneric(linalg::GenericOp op);
  /// The operand's value for chunk k, lane v (full), or per row.
  FailureOr<SmallVector<Value>> fullOperand(Value memref, AffineMap map, unsigned numLoops);
  FailureOr<Value> rowOperand(Value memref, AffineMap map);
  SmallVector<Value> indices(ArrayRef<AffineExpr> results, Value col);
  bool vectorizable(MemRefType type, AffineMap map, unsigned numLoops) const;
  void storeFull(Value memref, ArrayRef<Value> lanes);
  void storeRow(Value memref, Value value, ArrayRef<AffineExpr> map);
  Value param(Value memref) const { return mapping.lookupOrNull(memref); }
  Value constIndex(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  /// Runs `body` only for valid chunk k (all chunks but the last are).
  void guarded(unsigned k, llvm::function_ref<void()> body);

  func::FuncOp kernel;
  ArrayRef<MemRefType> argTypes;
  mlir::gpu::GPUModuleOp module;
  std::string name;
  OpBuilder b;
  Location loc;

  SmallVector<int64_t> rows;
  int64_t width = 0, numRows = 1, V = 1, K = 1, threadsX = 1, rowsPerBlock = 1;
  bool warp = false;

  mlir::gpu::GPUFuncOp func;
  IRMapping mapping; ///< kernel function values -> gpu.func values
  Value tx;
  SmallVector<Value> rowIndex, cols, valid;

  DenseMap<Value, SmallVector<Value>> full;
  DenseMap<Value, PerRow> perRow;
  llvm::SmallPtrSet<Value, 8> virtualBuffers;
  std::map<std::pair<const void *, const void *>, SmallVector<Value>> loadedFull;
};

LogicalResult RowEmitter::geometry() {
  for (auto op : kernel.getBody().front().getOps<linalg::GenericOp>()) {
    RowRole role = classify(op);
    if (role != RowRole::full && role != RowRole::reduce)
      continue;
    SmallVector<int64_t> loops = op.getStaticLoopRanges();
    rows.assign(loops.begin(), loops.end() - 1);
    width = loops.back();
    break;
  }
  if (width <= 0)
    return kernel.emitError() << "rewire-kernels-to-gpu: row kernel '" << kernel.getSymName()
                              << "' has no op over rows x features";
  for (int64_t r : rows)
    numRows *= r;
  V = width % 4 == 0 ? 4 : width % 2 == 0 ? 2 : 1;
  int64_t vectors = width / V;
  if (vectors <= 4 * kWarp) {
    warp = true;
    threadsX = kWarp;
    rowsPerBlock = std::min<int64_t>(kRowsPerWarpBlock, numRows);
  } else {
    threadsX = std::min<int64_t>(1024, llvm::alignTo((vectors + 3) / 4, kWarp));
  }
  K = llvm::divideCeil(vectors, threadsX);
  if (K > kMaxChunks)
    return kernel.emitError() << "rewire-kernels-to-gpu: rows of " << width
                              << " features exceed a row kernel's registers (at most "
                              << kMaxChunks * 1024 * V << ")";
  return success();
}

void RowEmitter::prologue() {
  Value bid = mlir::gpu::BlockIdOp::create(b, loc, mlir::gpu::Dimension::x);
  tx = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::x);
  Value row = bid;
  if (warp) {
    Value ty = mlir::gpu::ThreadIdOp::create(b, loc, mlir::gpu::Dimension::y);
    row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, bid, constIndex(rowsPerBlock)), ty);
    if (numRows % rowsPerBlock != 0) {
      Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                           constIndex(numRows));
      auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    }
  }
  rowIndex.assign(rows.size(), Value());
  Value rest = row;
  for (int i = static_cast<int>(rows.size()) - 1; i >= 0; --i) {
    rowIndex[i] = i == 0 ? rest : arith::RemUIOp::create(b, loc, rest, constIndex(rows[i]));
    if (i > 0)
      rest = arith::DivUIOp::create(b, loc, rest, constIndex(rows[i]));
  }
  int64_t vectors = width / V;
  for (int64_t k = 0; k < K; ++k) {
    Value j = arith::AddIOp::create(b, loc, tx, constIndex(k * threadsX));
    cols.push_back(arith::MulIOp::create(b, loc, j, constIndex(V)));
    valid.push_back((k + 1) * threadsX <= vectors
                        ? Value()
                        : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j,
                                                constIndex(vectors)).getResult());
  }
}

void RowEmitter::guarded(unsigned k, llvm::function_ref<void()> body) {
  if (!valid[k])
    return body();
  auto ifOp = scf::IfOp::create(b, loc, valid[k], /*withElseRegion=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

SmallVector<Value> RowEmitter::indices(ArrayRef<AffineExpr> results, Value col) {
  SmallVector<Value> idx;
  for (AffineExpr e : results) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      unsigned p = d.getPosition();
      idx.push_back(p < rows.size() ? rowIndex[p] : col);
    } else {
      idx.push_back(constIndex(0));
    }
  }
  return idx;
}

bool RowEmitter::vectorizable(MemRefType type, AffineMap map, unsigned numLoops) const {
  if (V == 1 || type.getElementTypeBitWidth() != 32 || map.getNumResults() == 0)
    return false;
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  if (!last || last.getPosition() != numLoops - 1)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1 ||
      offset % V != 0)
    return false;
  return llvm::all_of(ArrayRef(strides).drop_back(), [&](int64_t s) { return s % V == 0; });
}

FailureOr<SmallVector<Value>> RowEmitter::fullOperand(Value memref, AffineMap map,
                                                      unsigned numLoops) {
  if (auto it = full.find(memref); it != full.end())
    return it->second;
  auto key = std::make_pair(static_cast<const void *>(memref.getAsOpaquePointer()),
                            static_cast<const void *>(map.getAsOpaquePointer()));
  if (auto it = loadedFull.find(key); it != loadedFull.end())
    return it->second;
  Value p = param(memref);
  if (!p)
    return kernel.emitError() << "rewire-kernels-to-gpu: '" << kernel.getSymName()
                              << "' reads a buffer it never wrote";
  auto type = cast<MemRefType>(p.getType());
  Type elem = type.getElementType();
  bool vec = vectorizable(type, map, numLoops);
  SmallVector<Value> lanes;
  for (int64_t k = 0; k < K; ++k) {
    SmallVector<Value> idx = indices(map.getResults(), cols[k]);
    if (vec) {
      auto vt = VectorType::get({V}, elem);
      Value loaded;
      auto load = [&] {
        return vector::LoadOp::create(b, loc, vt, p, idx, /*nontemporal=*/false,
                                      llvm::MaybeAlign(V * 4)).getResult();
      };
      if (!valid[k]) {
        loaded = load();
      } else {
        auto ifOp = scf::IfOp::create(b, loc, vt, valid[k], /*withElseRegion=*/true);
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        scf::YieldOp::create(b, loc, load());
        b.setInsertionPointToStart(ifOp.elseBlock());
        Value zero = arith::ConstantOp::create(b, loc, vt, b.getZeroAttr(vt));
        scf::YieldOp::create(b, loc, zero);
        loaded = ifOp.getResult(0);
      }
      for (int64_t v = 0; v < V; ++v)
        lanes.push_back(vector::ExtractOp::create(b, loc, loaded, v));
      continue;
    }
    for (int64_t v = 0; v < V; ++v) {
      Value col = arith::AddIOp::create(b, loc, cols[k], constIndex(v));
      SmallVector<Value> vi = indices(map.getResults(), col);
      if (!valid[k]) {
        lanes.push_back(memref::LoadOp::create(b, loc, p, vi));
        continue;
      }
      auto ifOp = scf::IfOp::create(b, loc, elem, valid[k], /*withElseRegion=*/true);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      scf::YieldOp::create(b, loc, memref::LoadOp::create(b, loc, p, vi).getResult());
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc,
                           arith::ConstantOp::create(b, loc, elem, b.getZeroAttr(elem)).getResult());
      lanes.push_back(ifOp.getResult(0));
    }
  }
  loadedFull[key] = lanes;
  return lanes;
}

FailureOr<Value> RowEmitter::rowOperand(Value memref, AffineMap map) {
  if (auto it = perRow.find(memref); it != perRow.end())
    return it->second.value;
  Value p = param(memref);
  if (!p)
    return kernel.emitError() << "rewire-kernels-to-gpu: '" << kernel.getSymName()
                              << "' reads a buffer it never wrote";
  return memref::LoadOp::create(b, loc, p, indices(map.getResults(), Value()))
      .getResult();
}

void RowEmitter::storeFull(Value memref, ArrayRef<Value> lanes) {
  Value p = param(memref);
  auto type = cast<MemRefType>(p.getType());
  unsigned n = type.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(n, b.getContext());
  bool vec = vectorizable(type, id, n);
  for (int64_t k = 0; k < K; ++k) {
    guarded(k, [&] {
      if (vec) {
        auto vt = VectorType::get({V}, type.getElementType());
        Value v = vector::FromElementsOp::create(b, loc, vt, lanes.slice(k * V, V));
        vector::StoreOp::create(b, loc, v, p, indices(id.getResults(), cols[k]),
                                /*nontemporal=*/false, llvm::MaybeAlign(V * 4));
        return;
      }
      for (int64_t v = 0; v < V; ++v) {
        Value col = arith::AddIOp::create(b, loc, cols[k], constIndex(v));
        memref::StoreOp::create(b, loc, lanes[k * V + v], p, indices(id.getResults(), col));
      }
    });
  }
}

void RowEmitter::storeRow(Value memref, Value value, ArrayRef<AffineExpr> map) {
  Value p = param(memref);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tx, constIndex(0));
  auto ifOp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  memref::StoreOp::create(b, loc, value, p, indices(map, Value()));
}

LogicalResult RowEmitter::emitGeneric(linalg::GenericOp op) {
  RowRole role = classify(op);
  unsigned n = op.getNumLoops();
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  if (role == RowRole::full && loops.size() == rows.size())
    role = RowRole::rowwise;
  if (role == RowRole::none)
    return op.emitError("rewire-kernels-to-gpu: not a row op");
  Block &body = op.getRegion().front();
  unsigned numInputs = op.getNumDpsInputs();
  bool lanesWise = role != RowRole::rowwise;

  // Operand values: per lane (K*V) or per row (one, replicated).
  SmallVector<SmallVector<Value>> operands;
  for (OpOperand &operand : op->getOpOperands()) {
    SmallVector<Value> vals;
    bool isInit = op.isDpsInit(&operand);
    if (isInit && !op.payloadUsesValueFromOperand(&operand) && role != RowRole::reduce) {
      operands.push_back({});
      continue;
    }
    Value v = operand.get();
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!isa<MemRefType>(v.getType())) {
      Value s = mapping.lookupOrDefault(v);
      vals.assign(lanesWise ? K * V : 1, s);
    } else if (lanesWise && map.isFunctionOfDim(n - 1)) {
      auto lanes = fullOperand(v, map, n);
      if (failed(lanes))
        return failure();
      vals = *lanes;
    } else {
      auto s = rowOperand(v, map);
      if (failed(s))
        return failure();
      vals.assign(lanesWise ? K * V : 1, *s);
    }
    operands.push_back(std::move(vals));
  }

  // One copy of the payload per lane; values from outside the op (constants,
  // scalar loads) come through `mapping`.
  auto cloneBody = [&](unsigned lane, int64_t k, int64_t v, ArrayRef<Value> accs) {
    IRMapping m = mapping;
    for (unsigned i = 0; i < body.getNumArguments(); ++i) {
      if (i >= numInputs && role == RowRole::reduce) {
        m.map(body.getArgument(i), accs[i - numInputs]);
        continue;
      }
      if (!operands[i].empty())
        m.map(body.getArgument(i), operands[i][lane]);
    }
    // A chunk past the row's end computes on feature 0 (its results are
    // never stored or reduced): loads in the payload (gathers) stay in
    // bounds.
    return clonePayload(b, body, m, [&](unsigned d) -> Value {
      if (d < rows.size())
        return rowIndex[d];
      Value col = arith::AddIOp::create(b, loc, cols[k], constIndex(v));
      return valid[k] ? arith::SelectOp::create(b, loc, valid[k], col, constIndex(0)).getResult()
                      : col;
    });
  };

  unsigned numOutputs = op.getNumDpsInits();
  if (role == RowRole::reduce) {
    SmallVector<Combiner> combiners;
    SmallVector<Value> partial;
    for (unsigned i = 0; i < numOutputs; ++i) {
      auto c = findCombiner(body, i);
      Type t = op.getDpsInits()[i].getType();
      Type elem = cast<ShapedType>(t).getElementType();
      TypedAttr neutral = failed(c) ? TypedAttr() : neutralElement(c->kind, elem);
      if (failed(c) || !neutral)
        return op.emitError("rewire-kernels-to-gpu: a reduction that is not a sum, product, "
                            "minimum, maximum, and or or of its elements");
      combiners.push_back(*c);
      partial.push_back(arith::ConstantOp::create(b, loc, elem, neutral));
    }
    for (int64_t k = 0; k < K; ++k)
      for (int64_t v = 0; v < V; ++v) {
        SmallVector<Value> next = cloneBody(k * V + v, k, v, partial);
        for (unsigned i = 0; i < numOutputs; ++i)
          partial[i] = valid[k] ? arith::SelectOp::create(b, loc, valid[k], next[i], partial[i])
                                      .getResult()
                                : next[i];
      }
    for (unsigned i = 0; i < numOutputs; ++i) {
      Value reduced =
          warp ? mlir::gpu::SubgroupReduceOp::create(b, loc, partial[i], combiners[i].kind,
                                                     /*uniform=*/true)
                     .getResult()
               : mlir::gpu::AllReduceOp::create(
                     b, loc, partial[i],
                     mlir::gpu::AllReduceOperationAttr::get(b.getContext(), combiners[i].kind),
                     /*uniform=*/true)
                     .getResult();
      // Fold in the initial value, with the body's own combiner.
      Value init = operands[numInputs + i].front();
      IRMapping cm;
      Operation *comb = combiners[i].op;
      for (Value x : comb->getOperands())
        cm.map(x, isa<BlockArgument>(x) && cast<BlockArgument>(x).getOwner() == &body &&
                          cast<BlockArgument>(x).getArgNumber() == numInputs + i
                      ? init
                      : reduced);
      Value result = b.clone(*comb, cm)->getResult(0);
      Value out = op.getDpsInits()[i];
      OpOperand *initOperand = op.getDpsInitOperand(i);
      PerRow pr{result, llvm::to_vector(op.getMatchingIndexingMap(initOperand).getResults())};
      perRow[out] = pr;
      full.erase(out);
      if (!virtualBuffers.contains(out))
        storeRow(out, result, pr.map);
    }
    return success();
  }

  if (role == RowRole::rowwise) {
    SmallVector<Value> res = cloneBody(0, 0, 0, {});
    for (unsigned i = 0; i < numOutputs; ++i) {
      Value out = op.getDpsInits()[i];
      PerRow pr{res[i],
                llvm::to_vector(op.getMatchingIndexingMap(op.getDpsInitOperand(i)).getResults())};
      perRow[out] = pr;
      full.erase(out);
      if (!virtualBuffers.contains(out))
        storeRow(out, res[i], pr.map);
    }
    return success();
  }

  SmallVector<SmallVector<Value>> results(numOutputs);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t v = 0; v < V; ++v) {
      SmallVector<Value> res = cloneBody(k * V + v, k, v, {});
      for (unsigned i = 0; i < numOutputs; ++i)
        results[i].push_back(res[i]);
    }
  for (unsigned i = 0; i < numOutputs; ++i) {
    Value out = op.getDpsInits()[i];
    full[out] = results[i];
    perRow.erase(out);
    loadedFull.clear(); // a buffer written here may be read again
    if (!virtualBuffers.contains(out))
      storeFull(out, results[i]);
  }
  return success();
}

LogicalResult RowEmitter::emit(Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>()) {
    b.clone(*op, mapping);
    return success();
  }
  if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
    virtualBuffers.insert(alloc.getResult());
    return success();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Value out = fill.getOutputs()[0];
    if (!virtualBuffers.contains(out))
      return fill.emitError("rewire-kernels-to-gpu: a row kernel fills a buffer it returns");
    Value v = mapping.lookupOrDefault(fill.getInputs()[0]);
    perRow[out] = PerRow{v, {}};
    full[out] = SmallVector<Value>(K * V, v);
    return success();
  }
  if (auto load = dyn_cast<memref::LoadOp>(op)) {
    if (!param(load.getMemRef()))
      return load.emitError("rewire-kernels-to-gpu: a scalar read of a group intermediate");
    b.clone(*op, mapping);
    return success();
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return emitGeneric(generic);
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    Value src = copy.getSource(), dst = copy.getTarget();
    if (virtualBuffers.contains(dst) || !param(dst))
      return copy.emitError("rewire-kernels-to-gpu: a row kernel copies into a temporary");
    if (auto it = full.find(src); it != full.end() && !perRow.contains(src)) {
      storeFull(dst, it->second);
      return success();
    }
    if (auto it = perRow.find(src); it != perRow.end()) {
      storeRow(dst, it->second.value, it->second.map);
      return success();
    }
    return copy.emitError("rewire-kernels-to-gpu: a row kernel copies a buffer it did not compute");
  }
  if (isa<func::ReturnOp, memref::DeallocOp>(op))
    return success();
  return op->emitError() << "rewire-kernels-to-gpu: '" << op->getName()
                         << "' in a row kernel is not supported";
}

FailureOr<Launch> RowEmitter::run() {
  if (failed(geometry()))
    return failure();
  b.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> params(argTypes.begin(), argTypes.end());
  func = mlir::gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(params, {}));
  func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(threadsX), static_cast<int32_t>(warp ? rowsPerBlock : 1), 1}));
  Block &entry = func.getBody().front();
  for (auto [arg, p] : llvm::zip(kernel.getArguments(), entry.getArguments()))
    mapping.map(arg, p);
  b.setInsertionPointToStart(&entry);
  auto ret = mlir::gpu::ReturnOp::create(b, loc);
  b.setInsertionPoint(ret);
  prologue();
  for (Operation &op : kernel.getBody().front())
    if (failed(emit(&op))) {
      func.erase();
      return failure();
    }
  Launch launch;
  launch.func = func;
  launch.block = {threadsX, warp ? rowsPerBlock : 1, 1};
  launch.grid = {warp ? static_cast<int64_t>(llvm::divideCeil(numRows, rowsPerBlock)) : numRows,
                 1, 1};
  return launch;
}

} // namespace

FailureOr<Launch> emitRowKernel(func::FuncOp kernel, ArrayRef<MemRefType> argTypes,
                                mlir::gpu::GPUModuleOp module, StringRef name) {
  return RowEmitter(kernel, argTypes, module, name).run();
}

} // namespace rewire::gpu
