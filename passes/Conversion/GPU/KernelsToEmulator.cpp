//===- KernelsToEmulator.cpp - GPU kernels as host functions --------------===//
//
// Implements rewire-kernels-to-emulator (see Passes.td): every kernel of the
// module's gpu.modules becomes a host function whose thread and block ids,
// barriers and warp shuffles are calls into the CUDA emulator
// (runtime/cuda/emulator), which runs each block's threads as fibers. The
// host functions are dropped: the artifact's schedule is the host side.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace rewire {
#define GEN_PASS_DEF_KERNELSTOEMULATOR
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;

namespace {

/// The emulator's entry points the kernels call (runtime/cuda/emulator).
constexpr const char *kThreadId = "rewire_emu_thread_id";
constexpr const char *kBlockId = "rewire_emu_block_id";
constexpr const char *kBlockDim = "rewire_emu_block_dim";
constexpr const char *kGridDim = "rewire_emu_grid_dim";
constexpr const char *kBarrier = "rewire_emu_barrier";
constexpr const char *kShuffleF32 = "rewire_emu_shuffle_f32";
constexpr const char *kShuffleI32 = "rewire_emu_shuffle_i32";
constexpr const char *kShuffleValid = "rewire_emu_shuffle_valid";
constexpr const char *kCheck = "rewire_emu_check";

/// `memref` without a gpu address space (host memory is one space).
Type hostType(Type t) {
  auto m = dyn_cast<MemRefType>(t);
  if (!m || !isa_and_nonnull<gpu::AddressSpaceAttr>(m.getMemorySpace()))
    return t;
  return MemRefType::get(m.getShape(), m.getElementType(), m.getLayout());
}

struct KernelsToEmulator
    : public rewire::impl::KernelsToEmulatorBase<KernelsToEmulator> {
  void runOnOperation() override;

  func::FuncOp declare(ModuleOp module, StringRef name, TypeRange args, TypeRange results) {
    if (auto f = module.lookupSymbol<func::FuncOp>(name))
      return f;
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    auto f = func::FuncOp::create(b, module.getLoc(), name,
                                  b.getFunctionType(args, results));
    f.setPrivate();
    return f;
  }

  LogicalResult convert(ModuleOp module, gpu::GPUFuncOp kernel, unsigned &globals);
};

LogicalResult KernelsToEmulator::convert(ModuleOp module, gpu::GPUFuncOp kernel,
                                         unsigned &globals) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Type index = b.getIndexType(), i32 = b.getI32Type(), f32 = b.getF32Type(),
       i1 = b.getI1Type();
  SmallVector<Type> inputs;
  for (Type t : kernel.getFunctionType().getInputs()) {
    // The emulator passes each argument as a buffer pointer (the runtime's
    // launch ABI: one device pointer per buffer).
    if (kernel.isKernel() && !isa<MemRefType>(t))
      return kernel.emitError() << "rewire-kernels-to-emulator: kernel argument of type " << t
                                << " is not a buffer";
    inputs.push_back(hostType(t));
  }
  b.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> results;
  for (Type t : kernel.getFunctionType().getResults())
    results.push_back(hostType(t));
  auto fn = func::FuncOp::create(b, kernel.getLoc(), kernel.getName(),
                                 b.getFunctionType(inputs, results));
  if (!kernel.isKernel())
    fn.setPrivate();
  fn.getBody().takeBody(kernel.getBody());
  Block &entry = fn.getBody().front();

  // Attributions are trailing entry arguments: shared memory becomes a
  // global (the emulator runs one block at a time), private memory a
  // stack allocation (one per fiber).
  unsigned numInputs = inputs.size();
  unsigned numWorkgroup = kernel.getNumWorkgroupAttributions();
  b.setInsertionPointToStart(&entry);
  for (unsigned i = entry.getNumArguments(); i > numInputs; --i) {
    BlockArgument arg = entry.getArgument(i - 1);
    auto type = cast<MemRefType>(hostType(arg.getType()));
    Value replacement;
    if (i - 1 < numInputs + numWorkgroup) {
      std::string name = (kernel.getName() + "_shared" + Twine(globals++)).str();
      OpBuilder gb(ctx);
      gb.setInsertionPointToStart(module.getBody());
      memref::GlobalOp::create(gb, kernel.getLoc(), name, gb.getStringAttr("private"), type,
                               Attribute(), /*constant=*/false, IntegerAttr());
      replacement = memref::GetGlobalOp::create(b, kernel.getLoc(), type, name);
    } else {
      replacement = memref::AllocaOp::create(b, kernel.getLoc(), type);
    }
    arg.replaceAllUsesWith(replacement);
    entry.eraseArgument(i - 1);
  }

  auto threadId = declare(module, kThreadId, {i32}, {index});
  auto blockId = declare(module, kBlockId, {i32}, {index});
  auto blockDim = declare(module, kBlockDim, {i32}, {index});
  auto gridDim = declare(module, kGridDim, {i32}, {index});
  auto barrier = declare(module, kBarrier, {}, {});
  auto shuffleF32 = declare(module, kShuffleF32, {f32, i32, i32, i32}, {f32});
  auto shuffleI32 = declare(module, kShuffleI32, {i32, i32, i32, i32}, {i32});
  auto shuffleValid = declare(module, kShuffleValid, {i32, i32, i32}, {i1});

  IRRewriter rewriter(ctx);
  auto dimCall = [&](Operation *op, func::FuncOp callee, gpu::Dimension d) {
    rewriter.setInsertionPoint(op);
    Value dim = arith::ConstantIntOp::create(rewriter, op->getLoc(), static_cast<int>(d), 32);
    rewriter.replaceOpWithNewOp<func::CallOp>(op, callee, ValueRange{dim});
  };
  WalkResult walk = fn.walk([&](Operation *op) -> WalkResult {
    if (auto o = dyn_cast<gpu::ThreadIdOp>(op))
      dimCall(op, threadId, o.getDimension());
    else if (auto o = dyn_cast<gpu::BlockIdOp>(op))
      dimCall(op, blockId, o.getDimension());
    else if (auto o = dyn_cast<gpu::BlockDimOp>(op))
      dimCall(op, blockDim, o.getDimension());
    else if (auto o = dyn_cast<gpu::GridDimOp>(op))
      dimCall(op, gridDim, o.getDimension());
    else if (isa<gpu::BarrierOp>(op)) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOpWithNewOp<func::CallOp>(op, barrier, ValueRange{});
    } else if (auto s = dyn_cast<gpu::ShuffleOp>(op)) {
      Type t = s.getValue().getType();
      if (t != f32 && t != i32)
        return op->emitError() << "rewire-kernels-to-emulator: shuffles of " << t
                               << " are not emulated (f32 and i32 are)";
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      Value mode = arith::ConstantIntOp::create(rewriter, loc,
                                                static_cast<int>(s.getMode()), 32);
      Value value = func::CallOp::create(rewriter, loc, t == f32 ? shuffleF32 : shuffleI32,
                                         ValueRange{s.getValue(), s.getOffset(), s.getWidth(),
                                                    mode})
                        .getResult(0);
      Value valid = func::CallOp::create(rewriter, loc, shuffleValid,
                                         ValueRange{s.getOffset(), s.getWidth(), mode})
                        .getResult(0);
      rewriter.replaceOp(op, ValueRange{value, valid});
    } else if (auto r = dyn_cast<gpu::ReturnOp>(op)) {
      rewriter.setInsertionPoint(op);
      rewriter.replaceOpWithNewOp<func::ReturnOp>(op, r.getOperands());
    } else if (op->getDialect() && isa<gpu::GPUDialect>(op->getDialect())) {
      return op->emitError() << "rewire-kernels-to-emulator: '" << op->getName()
                             << "' is not emulated";
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // Shared and private memory views lose their address space everywhere.
  fn.walk([](Operation *op) {
    for (Value v : op->getResults())
      v.setType(hostType(v.getType()));
    for (Region &r : op->getRegions())
      for (Block &block : r)
        for (BlockArgument a : block.getArguments())
          a.setType(hostType(a.getType()));
  });

  // Every access is bounds-checked against its view's shape first (a
  // vector access: its last element); the emulator fails the launch with
  // CUDA_ERROR_ILLEGAL_ADDRESS, naming the access by its order in the kernel.
  auto check = declare(module, kCheck, {i1, i32}, {});
  int site = 0;
  fn.walk([&](Operation *op) {
    Value memref;
    ValueRange indices;
    int64_t width = 1;
    if (auto l = dyn_cast<memref::LoadOp>(op)) {
      memref = l.getMemref();
      indices = l.getIndices();
    } else if (auto st = dyn_cast<memref::StoreOp>(op)) {
      memref = st.getMemref();
      indices = st.getIndices();
    } else if (auto l = dyn_cast<vector::LoadOp>(op)) {
      memref = l.getBase();
      indices = l.getIndices();
      width = l.getVectorType().getShape().back();
    } else if (auto st = dyn_cast<vector::StoreOp>(op)) {
      memref = st.getBase();
      indices = st.getIndices();
      width = st.getVectorType().getShape().back();
    } else {
      return;
    }
    auto type = cast<MemRefType>(memref.getType());
    if (!type.hasStaticShape() || indices.empty())
      return;
    OpBuilder cb(op);
    Location loc = op->getLoc();
    Value ok = arith::ConstantIntOp::create(cb, loc, 1, 1);
    for (auto [k, index] : llvm::enumerate(indices)) {
      int64_t bound = type.getDimSize(k) - (k + 1 == indices.size() ? width - 1 : 0);
      Value in = bound <= 0 ? arith::ConstantIntOp::create(cb, loc, 0, 1).getResult()
                            : arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::ult, index,
                                                    arith::ConstantIndexOp::create(cb, loc, bound))
                                  .getResult();
      ok = arith::AndIOp::create(cb, loc, ok, in);
    }
    Value id = arith::ConstantIntOp::create(cb, loc, site++, 32);
    func::CallOp::create(cb, loc, check, ValueRange{ok, id});
  });
  return success();
}

void KernelsToEmulator::runOnOperation() {
  ModuleOp module = getOperation();
  // All-reduces, global ids and 64-bit shuffles as the NVVM path expands
  // them (convert-gpu-to-nvvm applies the same patterns first).
  for (auto gpuModule : llvm::to_vector(module.getOps<gpu::GPUModuleOp>())) {
    RewritePatternSet patterns(&getContext());
    populateGpuRewritePatterns(patterns);
    if (failed(applyPatternsGreedily(gpuModule, std::move(patterns))))
      return signalPassFailure();
  }
  // The host side is the artifact's schedule: only kernels remain.
  for (Operation &op : llvm::make_early_inc_range(module.getBody()->getOperations()))
    if (!isa<gpu::GPUModuleOp>(op))
      op.erase();
  unsigned globals = 0;
  for (auto gpuModule : llvm::to_vector(module.getOps<gpu::GPUModuleOp>())) {
    for (Operation &op : gpuModule.getBody()->getOperations())
      if (!isa<gpu::GPUFuncOp>(op)) {
        op.emitError() << "rewire-kernels-to-emulator: '" << op.getName()
                       << "' in a gpu.module is not emulated";
        return signalPassFailure();
      }
    for (auto kernel : llvm::to_vector(gpuModule.getOps<gpu::GPUFuncOp>())) {
      if (module.lookupSymbol(kernel.getName())) {
        kernel.emitError() << "rewire-kernels-to-emulator: two kernels are named '"
                           << kernel.getName() << "'";
        return signalPassFailure();
      }
      if (failed(convert(module, kernel, globals)))
        return signalPassFailure();
    }
    gpuModule.erase();
  }
  module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
}

} // namespace
