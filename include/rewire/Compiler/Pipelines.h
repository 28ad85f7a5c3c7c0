//===- Pipelines.h - The lowering pipelines, typed and named -----*- C++ -*-===//
//
// The pass pipelines behind rewire-compile's stages, built from the passes'
// generated constructors and option structs (no pipeline strings). Each is
// also registered under a name, so that `rewire-opt --rewire-cpu-pipeline`
// runs exactly what `rewire-compile --emit=llvm-dialect` runs:
//
//   rewire-lower-to-linalg        nn/residual -> linalg on tensors, fused
//   rewire-lower-to-llvm-dialect  linalg on tensors -> MLIR's LLVM dialect
//   rewire-cpu-pipeline           both (rewire-compile --target=cpu)
//   rewire-lower-to-gpu           nn/residual -> kernels + host (--target=cuda)
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_COMPILER_PIPELINES_H
#define REWIRE_COMPILER_PIPELINES_H

#include "rewire/Compiler/Compiler.h"

#include "mlir/Pass/PassManager.h"

namespace rewire::compiler {

/// Index checks, parameters to arguments, the entry-point record
/// (rewire-record-entry-points), nn and residual to linalg, fusion and
/// (at -O2 without precise math) polynomial math.
void buildLinalgPipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// Bufferization, BLAS calls, loops (OpenMP with threads != 1), the LLVM
/// dialect.
void buildLLVMDialectPipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// buildLinalgPipeline then buildLLVMDialectPipeline: the CPU target.
void buildCpuPipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// --target=cuda after buildLinalgPipeline: row groups outlined,
/// bufferized, kernels in `gpu.module @kernels`.
void buildGpuPipeline(mlir::OpPassManager &pm);

/// The kernels through NVVM to PTX for `chip` (libdevice from `toolkit`
/// when not empty).
void buildNvvmPipeline(mlir::OpPassManager &pm, llvm::StringRef chip, llvm::StringRef toolkit);

/// The kernels of a lowerToGPU module lowered for this CPU (the emulator).
void buildEmulatorKernelPipeline(mlir::OpPassManager &pm);

/// Registers the named pipelines above (rewire-opt).
void registerPipelines();

/// Runs the pipeline `build` makes on `module`, with pass timing when
/// enabled (setPassTiming); the passes report their own errors.
mlir::LogicalResult runPipeline(mlir::ModuleOp module,
                                llvm::function_ref<void(mlir::OpPassManager &)> build);

} // namespace rewire::compiler

#endif // REWIRE_COMPILER_PIPELINES_H
