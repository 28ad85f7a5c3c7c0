//===- OutlineKernels.cpp - Row groups of linalg ops into kernel functions ===//
//
// Implements rewire-outline-kernels (see Passes.td): consecutive linalg ops
// over the same rows x features become one private function
// `<fn>.kernel<N>` marked `rewire.row_kernel`, so that bufferization keeps
// them together and rewire-kernels-to-gpu emits one GPU kernel per group,
// with the intermediates kept in registers.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/GPU/KernelGroups.h"
#include "passes/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace rewire {
#define GEN_PASS_DEF_OUTLINEKERNELS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using rewire::gpu::RowRole;

namespace {

/// One row group under construction.
struct Group {
  SmallVector<int64_t> rows;
  int64_t width = 0;
  SmallVector<linalg::GenericOp> members;
  /// Values over rows x features, read back through the identity map.
  llvm::SmallPtrSet<Value, 8> full;
  /// Values with one element per row, and the map results they were written
  /// with (readers must use the same).
  DenseMap<Value, SmallVector<AffineExpr>> perRow;

  bool produces(Value v) const { return full.contains(v) || perRow.contains(v); }
};

/// Ops that neither join nor end a group: they compute nothing on the
/// device (or are cloned into the kernels that use them).
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

/// The role `op` plays in `group`, or none when it cannot join.
RowRole joinRole(const Group &group, linalg::GenericOp op) {
  RowRole role = rewire::gpu::classify(op);
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

void join(Group &group, linalg::GenericOp op, RowRole role) {
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

struct OutlineKernelsPass : rewire::impl::OutlineKernelsBase<OutlineKernelsPass> {
  void runOnOperation() override;
  void outline(func::FuncOp fn, Group &group, unsigned index, SymbolTable &symbols);
};

void OutlineKernelsPass::outline(func::FuncOp fn, Group &group, unsigned index,
                                 SymbolTable &symbols) {
  llvm::SmallPtrSet<Operation *, 8> memberSet;
  for (auto m : group.members)
    memberSet.insert(m);
  // What the members read from outside, and what the kernel clones in.
  llvm::SetVector<Value> args;
  llvm::SetVector<Operation *> cloned;
  std::function<void(Value)> use = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (def && memberSet.contains(def))
      return;
    // Scalar constants are cloned in; tensor constants stay buffers (the
    // host schedule uploads them once).
    if (def && (isa<tensor::EmptyOp>(def) ||
                (def->hasTrait<OpTrait::ConstantLike>() && !isa<ShapedType>(v.getType())))) {
      cloned.insert(def);
      return;
    }
    if (auto fill = dyn_cast_or_null<linalg::FillOp>(def); fill && fill.hasPureTensorSemantics()) {
      use(fill.getInputs()[0]);
      use(fill.getOutputs()[0]);
      cloned.insert(def);
      return;
    }
    if (auto extract = dyn_cast_or_null<tensor::ExtractOp>(def);
        extract && isTransparent(extract)) {
      for (Value i : extract.getIndices())
        use(i);
      use(extract.getTensor());
      cloned.insert(def);
      return;
    }
    args.insert(v);
  };
  for (linalg::GenericOp m : group.members) {
    for (OpOperand &operand : m->getOpOperands())
      use(operand.get());
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(m->getRegions(), captured);
    for (Value v : captured)
      use(v);
  }
  // What leaves the kernel.
  SmallVector<Value> results;
  for (linalg::GenericOp m : group.members)
    for (Value r : m->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *u) { return !memberSet.contains(u); }))
        results.push_back(r);

  OpBuilder b(fn);
  auto type = b.getFunctionType(ValueRange(args.getArrayRef()).getTypes(),
                                ValueRange(results).getTypes());
  std::string name = (fn.getSymName() + ".kernel" + Twine(index)).str();
  auto kernel = func::FuncOp::create(b, group.members.front().getLoc(), name, type);
  kernel.setPrivate();
  kernel->setAttr(rewire::kRowKernelAttrName, b.getUnitAttr());
  symbols.insert(kernel);
  Block *body = kernel.addEntryBlock();
  b.setInsertionPointToStart(body);
  IRMapping map;
  for (auto [v, arg] : llvm::zip(args, body->getArguments()))
    map.map(v, arg);
  // Cloned ops in their original order (operands first).
  SmallVector<Operation *> order(cloned.begin(), cloned.end());
  llvm::sort(order, [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  for (Operation *op : order)
    b.clone(*op, map);
  for (linalg::GenericOp m : group.members)
    b.clone(*m, map);
  SmallVector<Value> returned;
  for (Value r : results)
    returned.push_back(map.lookup(r));
  func::ReturnOp::create(b, kernel.getLoc(), returned);

  b.setInsertionPointAfter(group.members.back());
  auto call = func::CallOp::create(b, group.members.back().getLoc(), kernel,
                                   args.getArrayRef());
  for (auto [r, c] : llvm::zip(results, call.getResults()))
    r.replaceAllUsesWith(c);
  for (linalg::GenericOp m : llvm::reverse(group.members))
    m->erase();
}

void OutlineKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  // Named ops (transpose, broadcast, pooling, convolution, matmul) become
  // generics: one analysis for all; fills stay (they are kernel inits).
  IRRewriter rewriter(module.getContext());
  SmallVector<linalg::LinalgOp> named;
  module.walk([&](linalg::LinalgOp op) {
    if (!isa<linalg::GenericOp, linalg::FillOp>(op))
      named.push_back(op);
  });
  for (linalg::LinalgOp op : named) {
    rewriter.setInsertionPoint(op);
    (void)linalg::generalizeNamedOp(rewriter, op);
  }

  SymbolTable symbols(module);
  SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
  for (func::FuncOp fn : functions) {
    if (fn.isExternal() || !fn.getBody().hasOneBlock() || fn->hasAttr(rewire::kRowKernelAttrName))
      continue;
    SmallVector<Group> groups;
    Group current;
    auto close = [&] {
      if (!current.members.empty())
        groups.push_back(std::move(current));
      current = Group();
    };
    for (Operation &op : fn.getBody().front()) {
      auto generic = dyn_cast<linalg::GenericOp>(&op);
      if (generic && generic.hasPureTensorSemantics() && !rewire::gpu::isGemm(generic)) {
        RowRole role = current.members.empty() ? RowRole::none : joinRole(current, generic);
        if (role != RowRole::none) {
          join(current, generic, role);
          continue;
        }
        close();
        RowRole own = rewire::gpu::classify(generic);
        // Rows too wide for registers: each op gets a kernel of its own.
        if ((own == RowRole::full || own == RowRole::reduce) &&
            rewire::gpu::fitsRowKernel(generic.getStaticLoopRanges().back())) {
          // Start a group: its rows are this op's loops but the last.
          SmallVector<int64_t> loops = generic.getStaticLoopRanges();
          current.rows.assign(loops.begin(), loops.end() - 1);
          current.width = loops.back();
          if (joinRole(current, generic) == own) {
            join(current, generic, own);
            continue;
          }
          current = Group();
        }
        continue; // left for a kernel of its own
      }
      bool readsGroup = llvm::any_of(op.getOperands(), [&](Value v) { return current.produces(v); });
      if (isTransparent(&op) && !readsGroup)
        continue;
      close();
    }
    close();
    for (auto [i, group] : llvm::enumerate(groups))
      outline(fn, group, i, symbols);
  }
}

} // namespace
