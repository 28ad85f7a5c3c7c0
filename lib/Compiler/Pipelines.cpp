//===- Pipelines.cpp - The lowering pipelines, typed and named ------------===//
//
// Built from the passes' generated constructors and option structs; the
// named registrations map pipeline options onto CompileOptions, so a named
// pipeline and rewire-compile build the same pass manager.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Pipelines.h"

#include "dialects/residual/ResidualDecompose.h"
#include "passes/Conversion/Passes.h"
#include "passes/Transforms/Passes.h"
#include "rewire/Support/TrainStepAbi.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace rewire::compiler;

namespace {

bool passTiming = false;

/// Identity layouts at the boundary of the functions the runtime calls.
bufferization::OneShotBufferizePassOptions bufferizeOptions(bufferization::LayoutMapOption layout) {
  bufferization::OneShotBufferizePassOptions o;
  o.bufferizeFunctionBoundaries = true;
  o.functionBoundaryTypeConversion = layout;
  return o;
}

/// The LLVM dialect from memrefs, scf, math and func (the CPU code and the
/// emulator's kernels).
struct ToLLVMOptions {
  bool genericAllocFunctions = false; ///< _mlir_memref_to_llvm_alloc and free
  bool outlineLoopNests = false;      ///< rewire-outline-loop-nests
  bool openmp = false;                ///< convert-openmp-to-llvm
};
void addToLLVMTail(OpPassManager &pm, const ToLLVMOptions &options) {
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = options.genericAllocFunctions;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  if (options.outlineLoopNests)
    pm.addPass(rewire::createOutlineLoopNests());
  pm.nest<func::FuncOp>().addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  if (options.openmp)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

} // namespace

void rewire::compiler::buildLinalgPipeline(OpPassManager &pm, const CompileOptions &options) {
  // Index values, labels and divisors are checked at run time (the checks
  // name the inputs, so this runs before their names are dropped): in the
  // CPU code; for CUDA, whose kernels have no error path, the checks of
  // function inputs are recorded for the runtime to apply on the host
  // (computed indices are clamped).
  if (options.checkIndices)
    pm.addPass(rewire::createCheckIndices(CheckIndicesOptions{/*recordInputs=*/options.cuda}));
  pm.addPass(rewire::createParametersToArguments());
  pm.addPass(rewire::createRecordEntryPoints(RecordEntryPointsOptions{/*elideEmpty=*/!options.cuda}));
  // No cse here: it merges the `tensor.empty` + zero `linalg.fill` inits of
  // different ops, and one-shot bufferization then copies the shared buffer
  // for every writer (25 copies instead of 7 in a 2-layer GPT-2 stack).
  // The CPU takes an mHC write with the next site's coefficient projection
  // in one pass, the sums of a hyper stream write's reverse that read the
  // stream's adjoint in one pass, and so the reverse of each mHC site's
  // coefficient projections (runtime/HyperKernels.c); CUDA, and what the
  // kernels do not take, run their decomposition.
  if (options.hyperKernels && !options.cuda)
    pm.addPass(rewire::createHyperToKernel(
        HyperToKernelOptions{static_cast<int64_t>(options.threads)}));
  OpPassManager &fn = pm.nest<func::FuncOp>();
  // Forms without a fused lowering run as their decomposition.
  ResidualDecomposeOptions unfused;
  unfused.unfused = true;
  fn.addPass(rewire::createResidualDecompose(unfused));
  // On nn ops (no tensor.empty inits yet) cse is safe, and it merges what
  // the forms' decompositions and reverse rules compute alike: a hyper
  // stream's rms scale, once per coefficient set and again in the backward,
  // and the projections the backward recomputes. Then products sharing a
  // left operand (the three projections of one stream) become one, and on
  // the CPU so do products summed into one gradient (their input
  // gradients; on CUDA the concatenations would add launches: the tiny
  // GPT's mHC step 346 -> 362, for a gain not measured there).
  if (options.optLevel > 0) {
    fn.addPass(createCSEPass());
    fn.addPass(rewire::createFuseSiblingMatmuls());
    if (!options.cuda)
      fn.addPass(rewire::createFuseMatmulSums());
  }
  // The CPU runs attention as one kernel (runtime/Attention.c); CUDA
  // expands it (its kernels come from the linalg ops).
  if (options.fusedAttention && !options.cuda) {
    fn.addPass(rewire::createFuseAttention());
    pm.addPass(rewire::createAttentionToKernel(
        AttentionToKernelOptions{static_cast<int64_t>(options.threads)}));
  }
  OpPassManager &lower = pm.nest<func::FuncOp>();
  lower.addPass(rewire::createConvertNNToLinalg(ConvertNNToLinalgOptions{/*scatterAsReduction=*/options.cuda}));
  lower.addPass(rewire::createConvertResidualToLinalg());
  lower.addPass(createCanonicalizerPass());
  if (options.optLevel > 0) {
    // Sums of a few terms (a hyper stream's mix) as elementwise ops first,
    // so they fuse; CUDA's kernels stream them already.
    if (!options.cuda)
      lower.addPass(rewire::createUnrollShortReductions());
    lower.addPass(rewire::createFuseElementwise());
    lower.addPass(createCanonicalizerPass());
  }
  // GPUs have exp/tanh in hardware (MUFU) and libdevice: no polynomials.
  if (options.optLevel > 1 && !options.preciseMath && !options.cuda)
    lower.addPass(rewire::createMathApproximation());
  // Row groups (norms, softmaxes, their backward) as one loop over row
  // tiles, on as many threads as the other loops (its stack buffers need
  // the OpenMP lowering's per-iteration scope).
  if (options.optLevel > 0 && !options.cuda && options.threads != 1)
    lower.addPass(rewire::createFuseRows());
  // Long sums to a few values (a scalar weight's gradient: no parallel
  // loop) as partial sums of consecutive runs the threads share; with one
  // thread too, so that a model's results do not depend on --threads.
  if (options.optLevel > 0 && !options.cuda) {
    SplitLongReductionsOptions split;
    split.minLength = 65536;
    split.maxOutputs = 4;
    split.partials = 64;
    split.interleave = false;
    lower.addPass(rewire::createSplitLongReductions(split));
  }
}

void rewire::compiler::buildLLVMDialectPipeline(OpPassManager &pm, const CompileOptions &options) {
  pm.addPass(bufferization::createOneShotBufferizePass(
      bufferizeOptions(bufferization::LayoutMapOption::IdentityLayoutMap)));
  // Each result its own buffer first: hoisting erases a returned alloc, and
  // upstream cannot take one alloc returned twice.
  pm.addNestedPass<func::FuncOp>(rewire::createDistinctResultBuffers());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  if (options.blas)
    pm.addPass(rewire::createLinalgToBlas());
  pm.addPass(createCanonicalizerPass());
  // A split train step's gradients, handed out as each is final (the
  // data-parallel trainer sums them over the ranks meanwhile).
  pm.addPass(rewire::createOutputReadyCalls(
      OutputReadyCallsOptions{{std::string(rewire::trainstep::kGradFunction)}}));
  // Views with gaps are copied by loops, not by the runtime's row-by-row call.
  pm.nest<func::FuncOp>().addPass(rewire::createStridedCopiesToLoops());
  // Parallel loop dimensions become OpenMP work-sharing loops (threads > 1);
  // the alloca scopes scf-to-openmp creates must be lowered (by
  // finalize-memref-to-llvm) before scf-to-cf splits their regions.
  if (options.threads != 1) {
    pm.nest<func::FuncOp>().addPass(createForallToParallelLoopPass());
    pm.nest<func::FuncOp>().addPass(createConvertLinalgToParallelLoopsPass());
    pm.nest<func::FuncOp>().addPass(rewire::createParallelOuterLoops());
    pm.nest<func::FuncOp>().addPass(rewire::createPromoteAccumulators());
    pm.addPass(createConvertSCFToOpenMPPass(ConvertSCFToOpenMPPassOptions{options.threads}));
  } else {
    pm.nest<func::FuncOp>().addPass(createConvertLinalgToLoopsPass());
    pm.nest<func::FuncOp>().addPass(rewire::createPromoteAccumulators());
  }
  addToLLVMTail(pm, ToLLVMOptions{/*genericAllocFunctions=*/true, /*outlineLoopNests=*/true,
                                /*openmp=*/true});
}

void rewire::compiler::buildCpuPipeline(OpPassManager &pm, const CompileOptions &options) {
  buildLinalgPipeline(pm, options);
  buildLLVMDialectPipeline(pm, options);
}

void rewire::compiler::buildGpuPipeline(OpPassManager &pm) {
  // Reductions to a few values (a scalar gate's gradient) first get
  // partial sums: thousands of threads instead of 16 per output.
  pm.addNestedPass<func::FuncOp>(rewire::createSplitLongReductions());
  // Private kernel functions take views as they are (inferred layouts, no
  // copies); rewire-kernels-to-gpu gives the entry points identity layouts.
  pm.addPass(rewire::createOutlineKernels());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createOneShotBufferizePass(
      bufferizeOptions(bufferization::LayoutMapOption::InferLayoutMap)));
  // Kernels return fresh buffers, copied into the out-params:
  // rewire-kernels-to-gpu keeps a kernel's intermediates (its allocs) in
  // registers and stores only what is copied out (no hoisting here).
  pm.addPass(bufferization::createBufferResultsToOutParamsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(rewire::createKernelsToGPU());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void rewire::compiler::buildNvvmPipeline(OpPassManager &pm, StringRef chip, StringRef toolkit) {
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = chip.str();
  target.features = "+ptx80";
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = toolkit.str();
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void rewire::compiler::buildEmulatorKernelPipeline(OpPassManager &pm) {
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  pm.addPass(rewire::createKernelsToEmulator());
  pm.addPass(createCanonicalizerPass());
  addToLLVMTail(pm, ToLLVMOptions{});
}

void rewire::compiler::setPassTiming(bool enable) { passTiming = enable; }
bool rewire::compiler::passTimingEnabled() { return passTiming; }

LogicalResult rewire::compiler::runPipeline(ModuleOp module,
                                            function_ref<void(OpPassManager &)> build) {
  PassManager manager(module.getContext());
  if (passTiming)
    manager.enableTiming();
  build(manager);
  return manager.run(module);
}

namespace {

/// The options of the named CPU pipelines, as rewire-compile's flags.
struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  Option<unsigned> optLevel{*this, "opt-level", llvm::cl::desc("0-3, as rewire-compile -O"),
                            llvm::cl::init(2)};
  Option<bool> preciseMath{*this, "precise-math",
                           llvm::cl::desc("libm calls instead of polynomial approximations"),
                           llvm::cl::init(false)};
  Option<bool> checkIndices{*this, "check-indices",
                            llvm::cl::desc("check index values at run time"),
                            llvm::cl::init(true)};
  Option<bool> blas{*this, "blas", llvm::cl::desc("GEMMs through the runtime's BLAS"),
                    llvm::cl::init(true)};
  Option<bool> fusedAttention{*this, "fused-attention",
                              llvm::cl::desc("attention as the runtime's fused kernel"),
                              llvm::cl::init(true)};
  Option<bool> hyperKernels{*this, "hyper-kernels",
                            llvm::cl::desc("a hyper stream's fused passes (mHC write and projection, reverse sums) as the runtime's kernels"),
                            llvm::cl::init(true)};
  Option<unsigned> threads{*this, "loop-threads",
                           llvm::cl::desc("OpenMP threads of the generated loops (0: OpenMP's default, 1: none)"),
                           llvm::cl::init(0)};

  CompileOptions compileOptions() const {
    CompileOptions o;
    o.optLevel = optLevel;
    o.preciseMath = preciseMath;
    o.checkIndices = checkIndices;
    o.blas = blas;
    o.fusedAttention = fusedAttention;
    o.hyperKernels = hyperKernels;
    o.threads = threads;
    return o;
  }
};

} // namespace

void rewire::compiler::registerPipelines() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "rewire-lower-to-linalg",
      "nn/residual to linalg on tensors, fused (rewire-compile --emit=linalg)",
      [](OpPassManager &pm, const CpuPipelineOptions &o) {
        buildLinalgPipeline(pm, o.compileOptions());
      });
  PassPipelineRegistration<CpuPipelineOptions>(
      "rewire-lower-to-llvm-dialect", "linalg on tensors to MLIR's LLVM dialect (CPU)",
      [](OpPassManager &pm, const CpuPipelineOptions &o) {
        buildLLVMDialectPipeline(pm, o.compileOptions());
      });
  PassPipelineRegistration<CpuPipelineOptions>(
      "rewire-cpu-pipeline",
      "nn/residual to MLIR's LLVM dialect for the CPU (rewire-compile --emit=llvm-dialect)",
      [](OpPassManager &pm, const CpuPipelineOptions &o) {
        buildCpuPipeline(pm, o.compileOptions());
      });
  PassPipelineRegistration<>(
      "rewire-lower-to-gpu",
      "--target=cuda: nn/residual to kernels in the gpu dialect and a host on buffers "
      "(rewire-compile --target=cuda --emit=gpu)",
      [](OpPassManager &pm) {
        CompileOptions o;
        o.cuda = true;
        buildLinalgPipeline(pm, o);
        buildGpuPipeline(pm);
      });
}
