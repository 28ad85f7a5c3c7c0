//===- CudaPipeline.cpp - The kernels of --target=cuda --------------------===//
//
// Lowering to GPU kernels, NVVM, PTX and cubin (see Compiler.h).
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"
#include "rewire/Compiler/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace mlir;
using namespace rewire::compiler;

namespace {

bool hasLibdevice(const std::string &root) {
  llvm::SmallString<256> p(root);
  llvm::sys::path::append(p, "nvvm", "libdevice", "libdevice.10.bc");
  return llvm::sys::fs::exists(p);
}

} // namespace

std::string rewire::compiler::findCudaToolkit(const std::string &hint) {
  std::vector<std::string> candidates;
  if (!hint.empty())
    return hasLibdevice(hint) ? hint : "";
  for (const char *var : {"CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"})
    if (const char *v = std::getenv(var); v && *v)
      candidates.push_back(v);
  candidates.push_back("/usr/local/cuda");
  for (const std::string &c : candidates)
    if (hasLibdevice(c))
      return c;
  return "";
}

LogicalResult rewire::compiler::lowerToGPU(ModuleOp module, const CompileOptions &options) {
  (void)options;
  return runPipeline(module, [](OpPassManager &pm) { buildGpuPipeline(pm); });
}

LogicalResult rewire::compiler::serializeKernels(ModuleOp module, const CompileOptions &options,
                                                 std::string &ptx) {
  ptx.clear();
  if (module.getOps<gpu::GPUModuleOp>().empty())
    return success();
  for (char c : options.gpuChip)
    if (!llvm::isAlnum(c) && c != '_')
      return module.emitError() << "rewire-compile: --gpu-chip='" << options.gpuChip
                                << "' is not an architecture name such as sm_90";
  std::string toolkit = findCudaToolkit(options.cudaPath);
  if (toolkit.empty() && !options.cudaPath.empty())
    return module.emitError() << "rewire-compile: --cuda-path='" << options.cudaPath
                              << "' has no nvvm/libdevice/libdevice.10.bc";
  if (failed(runPipeline(module, [&](OpPassManager &pm) {
        buildNvvmPipeline(pm, options.gpuChip, toolkit);
      })))
    return failure();
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (Attribute a : binary.getObjects()) {
      auto object = dyn_cast<gpu::ObjectAttr>(a);
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      ptx += object.getObject().getValue().str();
    }
  if (ptx.empty())
    return module.emitError() << "rewire-compile: the NVVM pipeline produced no PTX";
  // Without libdevice, math functions stay calls the driver cannot resolve.
  if (size_t at = ptx.find("__nv_"); at != std::string::npos) {
    size_t end = ptx.find_first_of(" (;,\n", at);
    return module.emitError() << "rewire-compile: the kernels call the libdevice function '"
                              << ptx.substr(at, end - at)
                              << "' but no CUDA toolkit with libdevice was found; install "
                                 "it or pass --cuda-path (or set CUDA_ROOT)";
  }
  return success();
}

llvm::Error rewire::compiler::assembleCubin(const std::string &ptx, const CompileOptions &options,
                                            std::string &cubin) {
  cubin.clear();
  std::string toolkit = findCudaToolkit(options.cudaPath);
  llvm::SmallString<256> ptxas(toolkit);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (toolkit.empty() || !llvm::sys::fs::can_execute(ptxas))
    return compileError(Failure::codegen,
                        "no ptxas (CUDA toolkit) found; the artifact would carry PTX only");
  llvm::SmallString<128> in, out, log;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("rewire-kernels", "ptx", fd, in) ||
      llvm::sys::fs::createTemporaryFile("rewire-kernels", "cubin", out) ||
      llvm::sys::fs::createTemporaryFile("rewire-ptxas", "log", log))
    return compileError(Failure::codegen, "cannot create temporary files for ptxas");
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << ptx;
  }
  auto cleanup = [&] {
    llvm::sys::fs::remove(in);
    llvm::sys::fs::remove(out);
    llvm::sys::fs::remove(log);
  };
  std::string arch = "-arch=" + options.gpuChip;
  std::string outPath = out.str().str();
  llvm::SmallVector<llvm::StringRef> args = {ptxas, arch, "-O3", in, "-o", outPath};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string err;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &err);
  if (rc != 0) {
    std::string message = "ptxas failed (" + (err.empty() ? "exit " + std::to_string(rc) : err) + ")";
    if (auto buf = llvm::MemoryBuffer::getFile(log))
      message += ": " + (*buf)->getBuffer().trim().str();
    cleanup();
    return compileError(Failure::codegen, message);
  }
  auto buf = llvm::MemoryBuffer::getFile(out, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf) {
    cleanup();
    return compileError(Failure::codegen, "cannot read ptxas's output");
  }
  cubin = (*buf)->getBuffer().str();
  cleanup();
  return llvm::Error::success();
}
