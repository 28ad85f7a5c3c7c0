//===- CudaEmulation.cpp - The kernels of --target=cuda for the emulator ===//
//
// `rewire-compile --target=cuda --emulator-kernels=FILE`: the same kernels
// the artifact carries as PTX/cubin, compiled for this CPU as a shared
// object the CUDA emulator (runtime/cuda/emulator) loads in place of the
// image. Each kernel `K` is exported as `rewire_call_K(void **buffers)`
// with its buffer count in `rewire_emu_argc_K` and whether its threads
// synchronize (barriers, shuffles) in `rewire_emu_sync_K`; `rewire_emu_image_hashes`
// holds {count, FNV-1a of each image (PTX text, cubin)} so the emulator
// picks the kernels that belong to the image the runtime loads.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"
#include "rewire/Compiler/Pipelines.h"
#include "rewire/Support/Hash.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"

using namespace mlir;
using namespace rewire::compiler;

uint64_t rewire::compiler::imageHash(llvm::StringRef bytes) {
  return rewire::fnv1a(bytes.data(), bytes.size());
}

llvm::Error rewire::compiler::writeEmulatorKernels(OwningOpRef<ModuleOp> copy,
                                                   const CompileOptions &options,
                                                   llvm::ArrayRef<std::string> images,
                                                   const std::string &outputPath,
                                                   const std::string &runtimeLibDir) {
  std::string emulator = runtimeLibDir + "/librewire_cuda_emu.so";
  if (!llvm::sys::fs::exists(emulator))
    return compileError(
        Failure::codegen,
        "the CUDA emulator '" + emulator +
            "' is missing; build the `rewire_cuda_emu` target or pass --runtime-lib-dir");
  std::vector<EntryPoint> kernels;
  std::vector<bool> synchronizing;
  for (auto gpuModule : copy->getOps<gpu::GPUModuleOp>())
    for (auto fn : gpuModule.getOps<gpu::GPUFuncOp>())
      if (fn.isKernel()) {
        EntryPoint e;
        e.name = fn.getName().str();
        e.inputs.resize(fn.getFunctionType().getNumInputs(), TensorSpec{"buffer", "f32", {}});
        kernels.push_back(std::move(e));
        // Threads of kernels without barriers or shuffles never wait for
        // each other: the emulator runs them as plain calls, no fibers.
        bool sync = fn.walk([](Operation *op) {
                        return isa<gpu::BarrierOp, gpu::ShuffleOp, gpu::AllReduceOp,
                                   gpu::SubgroupReduceOp>(op)
                                   ? WalkResult::interrupt()
                                   : WalkResult::advance();
                      }).wasInterrupted();
        synchronizing.push_back(sync);
      }
  if (failed(runPipeline(*copy, [](OpPassManager &pm) { buildEmulatorKernelPipeline(pm); })))
    return compileError(Failure::codegen,
                        "lowering the kernels for the emulator failed (see above)");
  llvm::LLVMContext llvmContext;
  // Kernels may get one buffer twice (read and written in place).
  auto llvmModule = translateAndOptimize(*copy, kernels, "", options, llvmContext,
                                         /*distinctBuffers=*/false);
  if (!llvmModule)
    return compileError(Failure::codegen, "translating the emulator kernels failed (see above)");
  auto *i32 = llvm::Type::getInt32Ty(llvmContext);
  for (auto [k, sync] : llvm::zip(kernels, synchronizing)) {
    new llvm::GlobalVariable(*llvmModule, i32, true, llvm::GlobalValue::ExternalLinkage,
                             llvm::ConstantInt::get(i32, k.inputs.size()),
                             "rewire_emu_argc_" + k.name);
    new llvm::GlobalVariable(*llvmModule, i32, true, llvm::GlobalValue::ExternalLinkage,
                             llvm::ConstantInt::get(i32, sync ? 1 : 0),
                             "rewire_emu_sync_" + k.name);
  }
  auto *i64 = llvm::Type::getInt64Ty(llvmContext);
  std::vector<llvm::Constant *> hashes = {llvm::ConstantInt::get(i64, 0)};
  for (const std::string &image : images)
    if (!image.empty())
      hashes.push_back(llvm::ConstantInt::get(i64, imageHash(image)));
  hashes[0] = llvm::ConstantInt::get(i64, hashes.size() - 1);
  auto *hashType = llvm::ArrayType::get(i64, hashes.size());
  new llvm::GlobalVariable(*llvmModule, hashType, true, llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantArray::get(hashType, hashes), "rewire_emu_image_hashes");
  std::string object;
  if (llvm::Error err = emitObject(*llvmModule, options, object))
    return compileError(Failure::codegen,
                        "emitting the emulator kernels failed: " + llvm::toString(std::move(err)));
  return linkSharedObject(object, outputPath,
                          {"-L" + runtimeLibDir, "-Wl,-rpath," + runtimeLibDir,
                           "-lrewire_cuda_emu", "-lm"});
}
