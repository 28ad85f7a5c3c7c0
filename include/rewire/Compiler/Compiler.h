//===- Compiler.h - From nn/residual IR to a CPU artifact --------*- C++ -*-===//
//
// The stages of `rewire-compile` as a library: the residual rewrite, the
// lowering to linalg, to the LLVM dialect, to optimized LLVM IR and object
// code, and the link of the artifact (a shared object the runtime loads,
// carrying the entry points and their parameter layout as JSON metadata).
// See docs/compiling.md for the artifact format and calling convention.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_COMPILER_COMPILER_H
#define REWIRE_COMPILER_COMPILER_H

#include "rewire/Support/CpuArtifact.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace rewire::compiler {

/// Why a compile failed: rewire-compile's exit codes (docs/compiling.md).
enum class Failure {
  usage = 1,        ///< the job's settings do not fit together
  invalidModel = 2, ///< the model could not be read, imported or verified
  unsupported = 3,  ///< an op, a dynamic shape, a residual or --train option
  io = 4,           ///< a file could not be read or written
  codegen = 5,      ///< code generation or the link failed
  inputMismatch = 6 ///< an input shape does not fit the model's inputs
};

/// The one error type of the compiler libraries: a failed stage with its
/// category. `message` is empty when the reason was reported as MLIR
/// diagnostics already (through the context's handler).
class CompileError : public llvm::ErrorInfo<CompileError> {
public:
  static char ID;
  CompileError(Failure failure, std::string message)
      : failure(failure), message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }
  Failure failure;
  std::string message;
};

/// A CompileError of `failure` with `message`.
llvm::Error compileError(Failure failure, const llvm::Twine &message = "");
/// compileError for a message, success for none (Support's optional errors).
llvm::Error compileErrorIf(Failure failure, const std::optional<std::string> &message);

/// The artifact format version the compiler writes and the runtime accepts.
constexpr int kArtifactFormatVersion = rewire::cpu::kFormatVersion;

/// Where compilation stops (`--emit=`).
enum class Stage { nn, residual, linalg, gpu, ptx, llvmDialect, llvm, object, artifact };

struct CompileOptions {
  /// `KIND[:option=value,...]` for residual-detect + residual-rewrite (empty:
  /// none). Options are those of residual-rewrite.
  std::string residual;
  /// Accept a model in which `residual` finds no residual add (it is then
  /// compiled unchanged); by default that is an error.
  bool allowNoResidual = false;
  /// 0-3: the LLVM optimization level; 0 also skips linalg fusion.
  unsigned optLevel = 2;
  /// Target CPU for code generation ("native" = this machine, "generic",
  /// or an LLVM CPU name such as "znver4", "x86-64-v3").
  std::string cpu = "native";
  /// Call the runtime's BLAS for GEMMs (else generated loops).
  bool blas = true;
  /// CPU: form nn.attention from the exporters' matmul/softmax/matmul
  /// subgraph (nn-fuse-attention) and run it as the runtime's fused kernel
  /// (rewire-attention-to-kernel) instead of expanding it into loops over a
  /// [Tq, Tk] score tensor.
  bool fusedAttention = true;
  /// CPU: run the per-token sums of a hyper stream write's reverse as the
  /// runtime's kernel (rewire-hyper-to-kernel) instead of their
  /// decomposition's loops.
  bool hyperKernels = true;
  /// Call libm for exp/tanh/erf/... instead of vectorizable polynomial
  /// approximations (which -O2 and above use otherwise on the CPU; the CUDA
  /// target always uses the hardware's and libdevice's).
  bool preciseMath = false;
  /// Check index values, class labels and integer divisors at run time
  /// (rewire-check-indices; CPU target only).
  bool checkIndices = true;
  /// Threads for the generated (non-GEMM) loops: 1 = sequential code, 0 = as
  /// many as OpenMP's default (OMP_NUM_THREADS, else the cores the process
  /// may run on), N = N. The loops and oneDNN's GEMMs share one OpenMP
  /// runtime (LLVM's libomp serves oneDNN's GOMP calls), so their threads
  /// do not fight (docs/performance.md, "One thread pool").
  unsigned threads = 0;
  /// Seed for parameters initialized by rule (#nn.init).
  uint64_t seed = 0;
  /// --target=cuda: the GPU architecture and the CUDA toolkit (empty: found
  /// by findCudaToolkit).
  std::string gpuChip = "sm_90";
  /// Lowering for the CUDA target (no host loops: scatter_add as a reduction).
  bool cuda = false;
  std::string cudaPath;
};

/// A tensor an entry point takes or returns.
struct TensorSpec {
  std::string name;
  std::string dtype; ///< "f32", "i64", "i1", ...
  std::vector<int64_t> shape;
};

/// Whether `spec` has no elements: the compiled CPU function neither takes
/// nor returns such a tensor, and its call wrapper skips the pointer.
bool isEmptySpec(const TensorSpec &spec);

/// One entry point: inputs, then parameters, then outputs, passed as one
/// array of pointers to `rewire_call_<name>(void **)`.
/// A run-time check of an entry point's input values that the target's
/// code cannot make itself (CUDA): the runtime applies it to the host input
/// before the call (rewire-check-indices record-inputs).
struct InputCheck {
  std::string input; ///< the input's name
  std::string what;  ///< "nn.gather 'embed': index (from input 'ids')"
  int64_t lo = 0, hi = 0;
  std::optional<int64_t> also;
  bool nonzero = false;
};

struct EntryPoint {
  std::string name;
  std::vector<TensorSpec> inputs, parameters, outputs;
  std::vector<InputCheck> inputChecks;
  /// The outputs in the order the code finishes them, when it tells
  /// (rewire-output-ready-calls); empty otherwise.
  std::vector<int64_t> readyOrder;
};

/// Where a parameter's initial value comes from (recorded before lowering
/// removes the ml_program globals).
struct ParameterSource {
  bool external = true; ///< in the module's nn.parameter_file
  int initRule = 0;     ///< rewire::InitRule when not external
  double a = 0, b = 0;  ///< the rule's arguments
  /// Initial values given in the IR (dense elements, f32), when not empty.
  std::vector<float> dense;
};

/// Print MLIR's pass timing report after every pipeline (rewire-compile
/// --timing).
void setPassTiming(bool enable);
bool passTimingEnabled();

/// Appends per-layer statistics of the residual streams to the public
/// functions' results (residual-instrument; rewire-compile --instrument).
mlir::LogicalResult instrumentResidualStreams(mlir::ModuleOp module);

/// What lowerToLinalg learns about the module.
struct ModuleInfo {
  std::vector<EntryPoint> entries;
  std::map<std::string, ParameterSource> parameters;
  /// The module's nn.parameter_file attribute (may be empty).
  std::string parameterFile;
  /// Whether the sources were collected (before globals became arguments).
  bool collected = false;
};

/// Records where every parameter's initial value comes from; must run while
/// the ml_program globals still exist (lowerToLinalg and addTrainingSteps
/// call it).
void collectParameterSources(mlir::ModuleOp module, ModuleInfo &info);

/// Adds eval_step and train_step (rewire-train-step) for
/// `OPTIMIZER[:option=value,...]`, e.g. `adamw:weight-decay=0.01`; frozen
/// parameter prefixes are joined with '+' (`frozen=wte+wpe`). For the CPU
/// with `options.fusedAttention`, attention is formed (nn-fuse-attention)
/// before differentiation, so the step runs the fused kernels forward and
/// backward (nn.attention's reverse rule is nn.attention_grad).
mlir::LogicalResult addTrainingSteps(mlir::ModuleOp module, llvm::StringRef spec,
                                     const CompileOptions &options, ModuleInfo &info);

/// Runs residual-detect and residual-rewrite for `spec` (see CompileOptions).
/// Fails with an error saying why when the model has no residual stream to
/// rewrite, unless `allowNone`.
mlir::LogicalResult applyResidualRewrite(mlir::ModuleOp module, llvm::StringRef spec,
                                         bool allowNone = false);

/// Parameters to arguments, nn/residual to linalg on tensors, fusion.
/// Records the entry points (public functions) and parameter sources.
mlir::LogicalResult lowerToLinalg(mlir::ModuleOp module, const CompileOptions &options,
                                  ModuleInfo &info);

/// Bufferization, BLAS calls, loops, LLVM dialect. With `entries` (read by
/// lowerToLinalg), records what this stage adds to them (ready_order).
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module, const CompileOptions &options,
                                       std::vector<EntryPoint> *entries = nullptr);

/// Translates to LLVM IR, adds the entry wrappers and the metadata, and
/// optimizes for the target CPU. Emits an error on `module` on failure.
/// `distinctBuffers`: the entries' pointer arguments never alias (true for
/// artifacts: the runtime passes distinct buffers).
std::unique_ptr<llvm::Module> translateAndOptimize(mlir::ModuleOp module,
                                                   const std::vector<EntryPoint> &entries,
                                                   const std::string &parametersFile,
                                                   const CompileOptions &options,
                                                   llvm::LLVMContext &llvmContext,
                                                   bool distinctBuffers = true);

/// Object code for `module` (Failure::codegen on failure).
llvm::Error emitObject(llvm::Module &module, const CompileOptions &options, std::string &object);

/// Links `object` with the CPU kernels of `runtimeLibDir` into the shared
/// object `outputPath` (written atomically; Failure::codegen on failure).
llvm::Error linkArtifact(const std::string &object, const std::string &outputPath,
                         const std::string &runtimeLibDir);

/// Links `object` and `libraries` (linker arguments) into the shared object
/// `outputPath` (written atomically; unresolved symbols fail the link).
llvm::Error linkSharedObject(const std::string &object, const std::string &outputPath,
                             llvm::ArrayRef<std::string> libraries);

/// Writes every parameter the entry points take to the safetensors file
/// `outputPath` (atomically; 8-byte types first so every tensor is aligned
/// for zero-copy mapping): external values from `info.parameterFile`
/// (relative to `inputDir`), rule-initialized ones materialized with `seed`.
llvm::Error writeParameters(const ModuleInfo &info, const std::string &inputDir, uint64_t seed,
                            const std::string &outputPath);

// --target=cuda (lib/Compiler/Cuda*.cpp, docs/cuda.md).

/// The CUDA toolkit to use: `hint`, else $CUDA_ROOT, $CUDA_PATH,
/// /usr/local/cuda; empty when none has libdevice.
std::string findCudaToolkit(const std::string &hint);

/// Row groups outlined, bufferized, kernels emitted in `gpu.module
/// @kernels` (rewire-outline-kernels, rewire-kernels-to-gpu); the host
/// functions are left as launches, cuBLAS contractions and views.
mlir::LogicalResult lowerToGPU(mlir::ModuleOp module, const CompileOptions &options);

/// The kernels through NVVM to PTX for `options.gpuChip` (libdevice linked
/// from the toolkit); `ptx` is empty when there are no kernels.
mlir::LogicalResult serializeKernels(mlir::ModuleOp module, const CompileOptions &options,
                                     std::string &ptx);

/// Assembles `ptx` with the toolkit's ptxas into a cubin for
/// `options.gpuChip`. Fails with ptxas's log (the caller may go on with PTX only).
llvm::Error assembleCubin(const std::string &ptx, const CompileOptions &options,
                          std::string &cubin);

/// Builds every entry point's host schedule (launches, cuBLAS GEMMs, the
/// buffer plan) and writes the CUDA artifact `outputPath` atomically.
/// Emits errors on `module` for host code it cannot schedule.
mlir::LogicalResult writeCudaArtifact(mlir::ModuleOp module, const ModuleInfo &info,
                                      const std::string &ptx, const std::string &cubin,
                                      const std::string &parametersFile,
                                      const CompileOptions &options,
                                      const std::string &outputPath);

/// Compiles the kernels of `module` (a copy made after lowerToGPU, which
/// this consumes) for this CPU with rewire-kernels-to-emulator into the shared object
/// `outputPath` that the CUDA emulator (librewire_cuda_emu.so in
/// `runtimeLibDir`) runs in place of the GPU (docs/cuda.md). The hashes of
/// `images` (the artifact's PTX and cubin) are recorded, so the emulator
/// runs these kernels for that artifact only.
llvm::Error writeEmulatorKernels(mlir::OwningOpRef<mlir::ModuleOp> module,
                                 const CompileOptions &options, llvm::ArrayRef<std::string> images,
                                 const std::string &outputPath, const std::string &runtimeLibDir);

/// FNV-1a (64 bits) of `bytes`: how the emulator recognizes an image.
uint64_t imageHash(llvm::StringRef bytes);

/// The x86 features of CpuArtifact.h that code generation for `options`
/// (--cpu) may use: what an artifact records as its `cpu_features`, and
/// part of the compile cache's key. Empty with `error` set for a bad --cpu.
std::vector<std::string> targetCpuFeatures(const CompileOptions &options, std::string &error);

/// The artifact metadata JSON.
std::string artifactMetadata(const std::vector<EntryPoint> &entries,
                             const std::string &parametersFile, const CompileOptions &options);

} // namespace rewire::compiler

#endif // REWIRE_COMPILER_COMPILER_H
