//===- KernelsToGPU.cpp - Row kernels and host linalg ops to gpu.func -----===//
//
// Implements rewire-kernels-to-gpu (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/GPU/KernelEmit.h"
#include "passes/Conversion/GPU/KernelGroups.h"
#include "passes/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace rewire {
#define GEN_PASS_DEF_KERNELSTOGPU
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {

constexpr const char *kModuleName = "kernels";

/// `v` with the most static type: through memref.cast to its source.
Value staticSource(Value v) {
  while (auto cast = v.getDefiningOp<memref::CastOp>())
    v = cast.getSource();
  return v;
}

bool hasStaticLayout(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.hasStaticShape())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         !ShapedType::isDynamic(offset) && llvm::none_of(strides, ShapedType::isDynamic);
}

/// The allocation under `v`'s views (subview, cast, reshapes).
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// A constant fill folded into the next op's kernel: which output of which
/// generic starts from which value.
struct FoldedFill {
  linalg::GenericOp next;
  unsigned output;
  TypedAttr value;
};

/// The output of the generic right after `fill` that starts from the
/// filled constant, where the kernel can start from the constant instead:
/// a generated kernel (not cuBLAS, not a guarded reduction) that writes
/// every point of that output and reads the buffer through no other operand
/// or view of it.
std::optional<FoldedFill> foldableFill(linalg::FillOp fill) {
  auto next = dyn_cast_or_null<linalg::GenericOp>(fill->getNextNode());
  TypedAttr value;
  if (!next || !fill.hasPureBufferSemantics() || !next.hasPureBufferSemantics() ||
      !matchPattern(fill.getInputs()[0], m_Constant(&value)) ||
      rewire::gpu::isGemm(next) || rewire::gpu::matchGuardedReduction(next))
    return std::nullopt;
  Value target = fill.getOutputs()[0];
  if (value.getType() != cast<MemRefType>(target.getType()).getElementType())
    return std::nullopt;
  std::optional<unsigned> found;
  for (OpOperand &init : next.getDpsInitsMutable())
    if (init.get() == target) {
      if (found)
        return std::nullopt;
      found = init.getOperandNumber() - next.getNumDpsInputs();
    }
  if (!found)
    return std::nullopt;
  Value root = rootOf(target);
  for (OpOperand &use : next->getOpOperands())
    if (use.get() != target && isa<MemRefType>(use.get().getType()) && rootOf(use.get()) == root)
      return std::nullopt;
  bool captured = false;
  next.getRegion().walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (isa<MemRefType>(v.getType()) && rootOf(v) == root)
        captured = true;
  });
  if (captured)
    return std::nullopt;
  return FoldedFill{next, *found, value};
}

/// A symbol PTX accepts: letters, digits and '_'.
std::string kernelName(StringRef fn, unsigned index) {
  std::string s;
  for (char c : fn)
    s += llvm::isAlnum(c) ? c : '_';
  return s + "_k" + std::to_string(index);
}

struct KernelsToGPUPass : rewire::impl::KernelsToGPUBase<KernelsToGPUPass> {
  void runOnOperation() override;
  LogicalResult entryLayouts(func::FuncOp fn);
};

/// Entry points take contiguous buffers: their arguments get identity
/// layouts (bufferization inferred fully dynamic ones), so every view of
/// them has a static layout once casts fold.
LogicalResult KernelsToGPUPass::entryLayouts(func::FuncOp fn) {
  Block &entry = fn.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  SmallVector<Type> inputs;
  for (BlockArgument arg : entry.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || type.getLayout().isIdentity()) {
      inputs.push_back(arg.getType());
      continue;
    }
    if (!type.hasStaticShape())
      return fn.emitError() << "rewire-kernels-to-gpu: argument " << arg.getArgNumber()
                            << " of '" << fn.getSymName() << "' has a dynamic shape";
    auto identity = MemRefType::get(type.getShape(), type.getElementType());
    arg.setType(identity);
    auto cast = memref::CastOp::create(b, fn.getLoc(), type, arg);
    arg.replaceAllUsesExcept(cast.getResult(), cast);
    inputs.push_back(identity);
  }
  fn.setType(FunctionType::get(fn.getContext(), inputs, fn.getResultTypes()));
  return success();
}

void KernelsToGPUPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isExternal() && failed(entryLayouts(fn)))
      return signalPassFailure();
  // Fold the casts into the views and calls that follow them.
  {
    RewritePatternSet patterns(ctx);
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }

  module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto gpuModule = module.lookupSymbol<mlir::gpu::GPUModuleOp>(kModuleName);
  if (!gpuModule)
    gpuModule = mlir::gpu::GPUModuleOp::create(mb, module.getLoc(), kModuleName);
  SymbolTable symbols(gpuModule);

  auto launch = [&](Operation *at, const rewire::gpu::Launch &l, ValueRange operands) {
    OpBuilder b(at);
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, at->getLoc(), v).getResult(); };
    mlir::gpu::KernelDim3 grid{c(l.grid[0]), c(l.grid[1]), c(l.grid[2])};
    mlir::gpu::KernelDim3 block{c(l.block[0]), c(l.block[1]), c(l.block[2])};
    mlir::gpu::LaunchFuncOp::create(b, at->getLoc(), l.func, grid, block, Value(), operands);
  };

  SmallVector<func::FuncOp> hosts;
  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal() && !fn->hasAttr(rewire::kRowKernelAttrName))
      hosts.push_back(fn);
  llvm::SmallPtrSet<Operation *, 8> rowKernels;
  // Per generic kernel: its outputs' values at the start (folded fills).
  DenseMap<Operation *, SmallVector<TypedAttr>> initValues;
  for (func::FuncOp fn : hosts) {
    unsigned counter = 0;
    // memref.copy is a linalg.copy to the kernels.
    // Top-level ops only: host loops (scatter_add's) are refused by the
    // schedule, by name.
    SmallVector<memref::CopyOp> copies(fn.getBody().front().getOps<memref::CopyOp>());
    IRRewriter rewriter(ctx);
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
    SmallVector<Operation *> work;
    for (Operation &op : fn.getBody().front())
      if (isa<func::CallOp, linalg::LinalgOp>(op))
        work.push_back(&op);
    for (Operation *op : work) {
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
        if (!callee || !callee->hasAttr(rewire::kRowKernelAttrName))
          continue;
        SmallVector<Value> operands;
        SmallVector<MemRefType> types;
        for (Value v : call.getOperands()) {
          Value s = staticSource(v);
          if (!hasStaticLayout(s)) {
            call.emitError() << "rewire-kernels-to-gpu: operand of type " << v.getType()
                             << " has no static layout";
            return signalPassFailure();
          }
          operands.push_back(s);
          types.push_back(cast<MemRefType>(s.getType()));
        }
        auto l = rewire::gpu::emitRowKernel(callee, types, gpuModule,
                                            kernelName(fn.getSymName(), counter++));
        if (failed(l))
          return signalPassFailure();
        launch(call, *l, operands);
        rowKernels.insert(callee);
        call.erase();
        continue;
      }
      auto linalgOp = cast<linalg::LinalgOp>(op);
      if (!linalgOp.hasPureBufferSemantics())
        continue;
      // A zero fill right before the GEMM that accumulates into it is the
      // GEMM's beta = 0: one pass over C less.
      if (auto fill = dyn_cast<linalg::FillOp>(op)) {
        auto gemm = dyn_cast_or_null<linalg::GenericOp>(fill->getNextNode());
        FloatAttr value;
        if (gemm && rewire::gpu::isGemm(gemm) && gemm.getDpsInits()[0] == fill.getOutputs()[0] &&
            matchPattern(fill.getInputs()[0], m_Constant(&value)) && value.getValue().isZero()) {
          gemm->setAttr(rewire::kBetaZeroAttrName, UnitAttr::get(ctx));
          fill.erase();
          continue;
        }
        // A constant fill right before the generic kernel that starts from
        // it (a reduction's init): the kernel starts from the constant, one
        // launch and one pass over the output less.
        if (std::optional<FoldedFill> folded = foldableFill(fill)) {
          SmallVector<TypedAttr> &values = initValues[folded->next];
          values.resize(folded->next.getNumDpsInits());
          values[folded->output] = folded->value;
          fill.erase();
          continue;
        }
      }
      linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(op);
      if (!generic) {
        rewriter.setInsertionPoint(op);
        auto g = linalg::generalizeNamedOp(rewriter, linalgOp);
        if (failed(g)) {
          op->emitError("rewire-kernels-to-gpu: cannot generalize this op");
          return signalPassFailure();
        }
        generic = *g;
      }
      if (rewire::gpu::isGemm(generic))
        continue; // cuBLAS
      SmallVector<Value> operands;
      for (Value v : generic->getOperands())
        if (isa<MemRefType>(v.getType()))
          operands.push_back(staticSource(v));
      llvm::SetVector<Value> captured;
      generic.getRegion().walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          if (!generic.getRegion().isAncestor(v.getParentRegion()))
            captured.insert(v);
      });
      for (Value v : captured)
        if (isa<MemRefType>(v.getType()))
          operands.push_back(staticSource(v));
      for (Value v : operands)
        if (!hasStaticLayout(v)) {
          generic.emitError() << "rewire-kernels-to-gpu: operand of type " << v.getType()
                              << " has no static layout";
          return signalPassFailure();
        }
      // The kernel reads the static types: retype the op's view of them.
      auto l = rewire::gpu::emitGenericKernel(generic, operands, gpuModule,
                                              kernelName(fn.getSymName(), counter++),
                                              initValues.lookup(generic));
      if (failed(l))
        return signalPassFailure();
      launch(generic, *l, operands);
      generic.erase();
    }
  }
  for (Operation *k : rowKernels)
    k->erase();

  // Warp reductions to shuffles (shfl.sync.bfly) before the NVVM conversion.
  RewritePatternSet patterns(ctx);
  mlir::populateGpuLowerSubgroupReduceToShufflePatterns(patterns, /*subgroupSize=*/32,
                                                          /*shuffleBitwidth=*/32);
  if (failed(applyPatternsGreedily(gpuModule, std::move(patterns))))
    return signalPassFailure();
}

} // namespace
