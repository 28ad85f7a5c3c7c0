//===- rewire-compile.cpp - Compile a model to a CPU artifact -------------===//
//
// Compiles an ONNX model or nn/residual MLIR to a Rewire artifact (a shared
// object with the entry points and their parameter layout) and its
// parameter file, or stops at a stage to show the IR:
//
//   rewire-compile gpt.onnx --residual=review -o gpt.rwx   # + gpt.params.safetensors
//   rewire-compile gpt.mlir --emit=linalg
//
// Exit codes: 0 compiled; 1 bad command line; 2 the model could not be read,
// imported or verified; 3 it uses something the compiler does not support
// (an op, a dynamic shape, a residual option); 4 a file could not be read or
// written; 5 code generation or the link failed; 6 an --input-shape does not
// fit the model's inputs.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Driver.h"
#include "rewire/Import/OnnxImport.h"
#include "rewire/InitAll.h"
#include "rewire/Version.h"
#include "tools/common/OutOfMemory.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"

using namespace llvm;
using namespace rewire::compiler;

static cl::OptionCategory category("rewire-compile options");
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx|model.mlir>"), cl::cat(category));
static cl::opt<std::string> outputPath(
    "o", cl::desc("Output file (default: the input with .rwx, or stdout for IR stages)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> paramsPath(
    "params",
    cl::desc("Where to write the parameters (default: OUTPUT without .rwx + .params.safetensors)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<Stage> emit(
    "emit", cl::desc("Stop after a stage and write it:"), cl::init(Stage::artifact),
    cl::values(clEnumValN(Stage::nn, "nn", "the nn IR (imported, before rewriting)"),
               clEnumValN(Stage::residual, "residual", "after --residual (and --train's steps)"),
               clEnumValN(Stage::linalg, "linalg", "linalg on tensors, fused"),
               clEnumValN(Stage::gpu, "gpu", "--target=cuda: kernels in the gpu dialect, host on buffers"),
               clEnumValN(Stage::ptx, "ptx", "--target=cuda: the PTX of every kernel"),
               clEnumValN(Stage::llvmDialect, "llvm-dialect", "MLIR's LLVM dialect, before translation"),
               clEnumValN(Stage::llvm, "llvm", "optimized LLVM IR"),
               clEnumValN(Stage::object, "obj", "an object file"),
               clEnumValN(Stage::artifact, "artifact", "the artifact (default)")),
    cl::cat(category));
static cl::opt<std::string> target("target",
                                   cl::desc("Target: cpu (a shared object, .rwx) or cuda (kernel "
                                            "images and a host schedule, .rwcu)"),
                                   cl::init("cpu"), cl::cat(category));
static cl::opt<std::string> gpuChip("gpu-chip",
                                    cl::desc("--target=cuda: GPU architecture (default sm_90)"),
                                    cl::init("sm_90"), cl::cat(category));
static cl::opt<std::string> cudaPath(
    "cuda-path",
    cl::desc("--target=cuda: the CUDA toolkit for libdevice and ptxas (default: $CUDA_ROOT, "
             "$CUDA_PATH, /usr/local/cuda)"),
    cl::cat(category));
static cl::opt<unsigned> optLevel("O", cl::desc("Optimization level 0-3 (default 2)"),
                                  cl::Prefix, cl::init(2), cl::cat(category));
static cl::opt<std::string> residual(
    "residual",
    cl::desc("Detect residual adds and rewrite them: KIND[:option=value,...] with the kinds "
             "and options of residual-rewrite, e.g. review:init=identity"),
    cl::value_desc("spec"), cl::cat(category));
static cl::opt<bool> allowNoResidual(
    "allow-no-residual",
    cl::desc("With --residual: compile a model in which no residual add is found unchanged "
             "(default: that is an error, exit 3)"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> train(
    "train",
    cl::desc("Also compile eval_step and train_step for OPTIMIZER[:option=value,...]: sgd or "
             "adamw; options loss=mse|cross_entropy, ignore-index, momentum, weight-decay, beta1, "
             "beta2, eps, frozen=PREFIX+PREFIX"),
    cl::value_desc("spec"), cl::cat(category));
static cl::opt<std::string> cpu("cpu", cl::desc("Target CPU: native (default), generic, znver4, ..."),
                                cl::init("native"), cl::cat(category));
static cl::opt<bool> noBlas("no-blas", cl::desc("Generate GEMM loops instead of calling BLAS"),
                            cl::cat(category));
static cl::opt<bool> fusedAttention(
    "fused-attention",
    cl::desc("CPU: run attention (ONNX Attention, or the exporters' MatMul/Softmax/MatMul "
             "subgraph) as the runtime's fused kernel (default on; =false expands it into loops)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> hyperKernels(
    "hyper-kernels",
    cl::desc("CPU: run an mHC write with the next site's coefficient projection, and the "
             "per-token sums of a hyper stream's reverse (HC, mHC training), as the runtime's "
             "kernels (default on; =false runs their decomposition's loops)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> preciseMath(
    "precise-math",
    cl::desc("Call libm for exp/tanh/erf instead of vectorizable polynomial approximations"),
    cl::cat(category));
static cl::opt<bool> checkIndices(
    "check-indices",
    cl::desc("Check index values, class labels and integer divisors at run time: an out-of-range "
             "value is an error of the call (default on; CPU target)"),
    cl::init(true), cl::cat(category));
static cl::opt<unsigned> threads(
    "loop-threads",
    cl::desc("Threads for the generated (non-GEMM) loops through OpenMP, shared with the GEMMs: "
             "0 = OpenMP's default, OMP_NUM_THREADS or all cores (default), 1 = sequential "
             "code, N = N"),
    cl::init(0), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed for rule-initialized parameters"),
                              cl::init(0), cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Shape of the i-th input the model will be called with (e.g. 2x8; one per input, "
             "in order): binds the ONNX model's symbolic dimensions; rewire-run passes them"),
    cl::value_desc("DxD..."), cl::cat(category));
static cl::list<std::string> dims("dim", cl::desc("Size of a symbolic ONNX dimension"),
                                  cl::value_desc("NAME=SIZE"), cl::cat(category));
static cl::opt<bool> instrument(
    "instrument",
    cl::desc("Return per-layer residual-stream statistics as extra results (residual-instrument)"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> saveRewritten(
    "save-rewritten",
    cl::desc("Also write the model after --residual (before --train's steps) as IR, naming the "
             "artifact's parameter file: rewire-export exports it with trained parameters"),
    cl::value_desc("file.mlir"), cl::cat(category));
static cl::opt<bool> timing("timing",
                            cl::desc("Print the wall time of each stage and MLIR's pass timing"),
                            cl::init(false), cl::cat(category));
static cl::opt<std::string> runtimeLibDir(
    "runtime-lib-dir",
    cl::desc("Folder of librewire_kernels.a and librewire_cuda_emu.so (default: ../lib beside "
             "this tool)"),
    cl::cat(category));
static cl::opt<std::string> emulatorKernels(
    "emulator-kernels",
    cl::desc("--target=cuda: also write the kernels compiled for this CPU, for the CUDA emulator "
             "(runs the artifact without a GPU; docs/cuda.md)"),
    cl::value_desc("file.so"), cl::cat(category));

namespace {
int error(const Twine &message, int code) {
  errs() << "rewire-compile: error: " << message << "\n";
  return code;
}

std::string defaultRuntimeLibDir(const char *argv0) {
  std::string exe = sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&error));
  SmallString<256> dir(exe);
  sys::path::remove_filename(dir);
  sys::path::append(dir, "..", "lib");
  return dir.str().str();
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  rewire::tools::exitOnOutOfMemory("rewire-compile", 4);
  setBugReportMsg("PLEASE report this crash at " REWIRE_BUG_REPORT_URL
                  " with the model and the command line above.\n");
  cl::HideUnrelatedOptions(category);
  cl::AddExtraVersionPrinter([](raw_ostream &os) {
    os << "rewire-compile " REWIRE_VERSION_STRING " (MLIR " REWIRE_LLVM_VERSION_STRING ")\n";
  });
  cl::ParseCommandLineOptions(argc, argv, "rewire-compile: models to CPU artifacts\n");
  if (target != "cpu" && target != "cuda")
    return error("--target=" + target + " is not a target; use --target=cpu or --target=cuda", 1);

  CompileJob job;
  job.input = inputPath;
  job.output = outputPath;
  job.params = paramsPath;
  job.emit = emit;
  job.train = train;
  job.instrument = instrument;
  job.rewrittenIR = saveRewritten;
  job.timing = timing;
  job.emulatorKernels = emulatorKernels;
  job.runtimeLibDir = runtimeLibDir.empty() ? defaultRuntimeLibDir(argv[0]) : runtimeLibDir;
  rewire::onnx_import::ImportOptions dimOptions;
  for (const std::string &d : dims)
    if (auto err = rewire::onnx_import::parseDimBinding(d, dimOptions))
      return error(*err, 1);
  for (const auto &binding : dimOptions.dimBindings)
    job.dims[binding.getKey().str()] = binding.getValue();
  for (const std::string &spec : inputShapes) {
    std::vector<int64_t> shape;
    if (auto err = rewire::onnx_import::parseInputShape(spec, shape))
      return error(*err, 1);
    job.inputShapes.push_back(std::move(shape));
  }
  CompileOptions &options = job.options;
  options.residual = residual;
  options.allowNoResidual = allowNoResidual;
  options.optLevel = optLevel;
  options.cpu = cpu;
  options.blas = !noBlas;
  options.fusedAttention = fusedAttention;
  options.hyperKernels = hyperKernels;
  options.checkIndices = checkIndices;
  options.threads = threads;
  options.seed = seed;
  options.gpuChip = gpuChip;
  options.cuda = target == "cuda";
  options.preciseMath = preciseMath;
  options.cudaPath = cudaPath;

  mlir::DialectRegistry registry;
  rewire::registerRewireDialects(registry);
  rewire::registerRewirePasses();
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  if (Error e = compile(context, job))
    return static_cast<int>(reportError(std::move(e), "rewire-compile"));
  return 0;
}
