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
using rewire::gpu::RowGroup;

namespace {

struct OutlineKernelsPass : rewire::impl::OutlineKernelsBase<OutlineKernelsPass> {
  void runOnOperation() override;
  void outline(func::FuncOp fn, RowGroup &group, unsigned index, SymbolTable &symbols);
};

void OutlineKernelsPass::outline(func::FuncOp fn, RowGroup &group, unsigned index,
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
        extract && rewire::gpu::isTransparent(extract)) {
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
    SmallVector<RowGroup> groups =
        rewire::gpu::collectRowGroups(fn.getBody().front(), rewire::gpu::fitsRowKernel);
    for (auto [i, group] : llvm::enumerate(groups))
      outline(fn, group, i, symbols);
  }
}

} // namespace
