//===- CudaEmulation.cpp - The kernels of --target=cuda for the emulator ===//
//
// `rewire-compile --target=cuda --emulator-kernels=FILE`: the same kernels
// the artifact carries as PTX/cubin, compiled for this CPU as a shared
// object the CUDA emulator (runtime/cuda/emulator) loads in place of the
// image. Each kernel `K` is exported as `rewire_call_K(void **buffers)`
// with its buffer count in `rewire_emu_argc_K`.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"

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

std::optional<std::string>
rewire::compiler::writeEmulatorKernels(ModuleOp module, const CompileOptions &options,
                                       const std::string &outputPath,
                                       const std::string &runtimeLibDir) {
  std::string emulator = runtimeLibDir + "/librewire_cuda_emu.so";
  if (!llvm::sys::fs::exists(emulator))
    return "the CUDA emulator '" + emulator +
           "' is missing; build the `rewire_cuda_emu` target or pass --runtime-lib-dir";
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  std::vector<EntryPoint> kernels;
  for (auto gpuModule : copy->getOps<gpu::GPUModuleOp>())
    for (auto fn : gpuModule.getOps<gpu::GPUFuncOp>())
      if (fn.isKernel()) {
        EntryPoint e;
        e.name = fn.getName().str();
        e.inputs.resize(fn.getFunctionType().getNumInputs(), TensorSpec{"buffer", "f32", {}});
        kernels.push_back(std::move(e));
      }
  if (failed(runPipeline(
          *copy,
          "rewire-kernels-to-emulator,canonicalize,expand-strided-metadata,lower-affine,"
          "finalize-memref-to-llvm,func.func(convert-scf-to-cf),convert-math-to-llvm,"
          "convert-math-to-libm,convert-func-to-llvm{use-bare-ptr-memref-call-conv},"
          "convert-to-llvm,reconcile-unrealized-casts",
          "emulator kernel")))
    return std::string("lowering the kernels for the emulator failed (see above)");
  llvm::LLVMContext llvmContext;
  // Kernels may get one buffer twice (read and written in place).
  auto llvmModule = translateAndOptimize(*copy, kernels, "", options, llvmContext,
                                         /*distinctBuffers=*/false);
  if (!llvmModule)
    return std::string("translating the emulator kernels failed (see above)");
  auto *i32 = llvm::Type::getInt32Ty(llvmContext);
  for (const EntryPoint &k : kernels)
    new llvm::GlobalVariable(*llvmModule, i32, true, llvm::GlobalValue::ExternalLinkage,
                             llvm::ConstantInt::get(i32, k.inputs.size()),
                             "rewire_emu_argc_" + k.name);
  std::string object;
  if (auto err = emitObject(*llvmModule, options, object))
    return "emitting the emulator kernels failed: " + *err;
  return linkSharedObject(object, outputPath,
                          {"-L" + runtimeLibDir, "-Wl,-rpath," + runtimeLibDir,
                           "-lrewire_cuda_emu", "-lm"});
}
