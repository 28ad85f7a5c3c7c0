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
#include "dialects/nn/NNParameters.h"
#include "rewire/Compiler/Compiler.h"
#include "rewire/Import/OnnxImport.h"
#include "rewire/InitAll.h"
#include "rewire/Support/Nesting.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Version.h"
#include "tools/common/OutOfMemory.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <unistd.h>

#include <chrono>

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
    cl::desc("Threads for the generated (non-GEMM) loops through OpenMP: 1 = sequential (default; "
             "faster here, see docs/performance.md), 0 = all cores, N = N"),
    cl::init(1), cl::cat(category));
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

/// Writes text to `path` ("-" = stdout).
int writeText(const std::string &path, function_ref<void(raw_ostream &)> fn) {
  std::string err;
  auto out = mlir::openOutputFile(path, &err);
  if (!out)
    return error(err, 4);
  fn(out->os());
  out->keep();
  return 0;
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
  bool cuda = target == "cuda";
  if (cuda && (emit == Stage::llvmDialect || emit == Stage::llvm || emit == Stage::object))
    return error("--emit=llvm-dialect/llvm/obj are CPU stages; with --target=cuda use "
                 "--emit=gpu or --emit=ptx",
                 1);
  if (!cuda && (emit == Stage::gpu || emit == Stage::ptx))
    return error("--emit=gpu and --emit=ptx need --target=cuda", 1);
  if (!cuda && !emulatorKernels.empty())
    return error("--emulator-kernels needs --target=cuda", 1);
  if (optLevel > 3)
    return error("-O" + Twine(optLevel) + " is not a level; use -O0 to -O3", 1);
  CompileOptions options;
  options.residual = residual;
  options.allowNoResidual = allowNoResidual;
  options.optLevel = optLevel;
  options.cpu = cpu;
  options.blas = !noBlas;
  options.preciseMath = preciseMath;
  options.checkIndices = checkIndices;
  options.threads = threads;
  options.seed = seed;
  options.gpuChip = gpuChip;
  // GPUs have exp/tanh in hardware (MUFU) and libdevice: no polynomials.
  if (cuda)
    options.preciseMath = true;
  options.cuda = cuda;
  options.cudaPath = cudaPath;

  std::string output = outputPath;
  if (output.empty()) {
    if (emit == Stage::artifact || emit == Stage::object) {
      SmallString<256> p(inputPath);
      sys::path::replace_extension(p, emit == Stage::artifact ? (cuda ? ".rwcu" : ".rwx") : ".o");
      output = p.str().str();
    } else {
      output = "-";
    }
  }
  if ((emit == Stage::artifact || emit == Stage::object) && output == "-")
    return error("binary output needs a file: give -o FILE", 1);

  mlir::DialectRegistry registry;
  rewire::registerRewireDialects(registry);
  rewire::registerRewirePasses();
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Errors name the op and location; the whole module is not printed.
  context.printOpOnDiagnostic(false);
  SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  // Where the parameters of an imported model go until the artifact's file
  // is written.
  SmallString<256> importedParams;
  llvm::scope_exit cleanup([&] {
    if (!importedParams.empty())
      sys::fs::remove(importedParams);
  });
  std::string inputDir = sys::path::parent_path(inputPath).str();
  if (inputDir.empty())
    inputDir = ".";

  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (StringRef(inputPath).ends_with(".onnx")) {
    rewire::onnx_import::ImportOptions importOptions;
    for (const std::string &d : dims) {
      auto [name, size] = StringRef(d).split('=');
      int64_t value;
      if (name.empty() || size.getAsInteger(10, value) || value < 0)
        return error("--dim expects NAME=SIZE, got '" + d + "'", 1);
      importOptions.dimBindings[name] = value;
    }
    for (const std::string &spec : inputShapes) {
      std::vector<int64_t> shape;
      if (auto err = rewire::onnx_import::parseInputShape(spec, shape))
        return error(*err, 1);
      importOptions.inputShapes.push_back(std::move(shape));
    }
    if (emit != Stage::nn && emit != Stage::residual) {
      int fd;
      SmallString<256> model(output == "-" ? "." : sys::path::parent_path(output));
      if (model.empty())
        model = ".";
      sys::path::append(model, ".rewire-import-%%%%%%.safetensors");
      if (auto ec = sys::fs::createUniqueFile(model, fd, importedParams))
        return error("cannot create a temporary file: " + ec.message(), 4);
      ::close(fd);
      SmallString<256> abs(importedParams);
      sys::fs::make_absolute(abs);
      importOptions.parameterFile = importedParams.str().str();
      importOptions.parameterFileRef = abs.str().str();
    }
    auto result = rewire::onnx_import::importOnnxFile(inputPath, &context, importOptions);
    if (!result.module) {
      using rewire::onnx_import::ImportStatus;
      return result.status == ImportStatus::unsupported     ? 3
             : result.status == ImportStatus::io            ? 4
             : result.status == ImportStatus::inputMismatch ? 6
                                                            : 2;
    }
    module = std::move(result.module);
  } else {
    std::string err;
    if (inputPath != "-")
      if (auto bad = rewire::checkRegularFile(inputPath.getValue(), /*allowPipes=*/true))
        return error(*bad, 4);
    auto file = mlir::openInputFile(inputPath, &err);
    if (!file)
      return error(err, 4);
    if (auto deep = rewire::checkNestingDepth(file->getBuffer(), inputPath.getValue())) {
      errs() << *deep << "\n";
      return 2;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
    module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (!module)
      return 2;
    if (failed(rewire::nn::checkParameterFileRef(*module, inputPath)))
      return 2;
  }
  if (failed(mlir::verify(*module)))
    return 2;
  if (emit == Stage::nn)
    return writeText(output, [&](raw_ostream &os) { module->print(os); });

  rewire::compiler::setPassTiming(timing);
  auto last = std::chrono::steady_clock::now();
  auto stage = [&](const char *name) {
    auto now = std::chrono::steady_clock::now();
    if (timing)
      errs() << "rewire-compile: " << name << ": "
             << format("%.2f", std::chrono::duration<double>(now - last).count()) << " s\n";
    last = now;
  };
  stage("read");
  if (!options.residual.empty() && failed(applyResidualRewrite(*module, options.residual, options.allowNoResidual)))
    return 3;
  if (instrument && failed(instrumentResidualStreams(*module)))
    return 3;
  ModuleInfo info;
  if (!train.empty() && failed(addTrainingSteps(*module, train, info)))
    return 3;
  stage("residual rewrite and train step");
  if (emit == Stage::residual)
    return writeText(output, [&](raw_ostream &os) { module->print(os); });
  if (failed(lowerToLinalg(*module, options, info)))
    return 3;
  stage("lower to linalg");
  if (emit == Stage::linalg)
    return writeText(output, [&](raw_ostream &os) { module->print(os); });

  // Parameters next to the artifact, named relative to it when beside it.
  std::string params = paramsPath;
  if (params.empty()) {
    SmallString<256> p(output);
    if (sys::path::extension(p) == ".rwx" || sys::path::extension(p) == ".rwcu")
      sys::path::replace_extension(p, "");
    params = (p + ".params.safetensors").str();
  }
  std::string paramsRef = sys::path::parent_path(params) == sys::path::parent_path(output)
                              ? sys::path::filename(params).str()
                              : params;
  if (cuda) {
    if (failed(lowerToGPU(*module, options)))
      return 3;
    stage("lower to GPU kernels");
    if (emit == Stage::gpu)
      return writeText(output, [&](raw_ostream &os) { module->print(os); });
    // The emulator's copy of the kernels, before NVVM consumes them.
    mlir::OwningOpRef<mlir::ModuleOp> kernels;
    if (!emulatorKernels.empty())
      kernels = mlir::cast<mlir::ModuleOp>((*module)->clone());
    std::string ptx, cubin;
    if (failed(serializeKernels(*module, options, ptx)))
      return 5;
    stage("NVVM and PTX");
    if (emit == Stage::ptx)
      return writeText(output, [&](raw_ostream &os) { os << ptx; });
    if (!ptx.empty()) {
      // Without ptxas the driver JIT-compiles the PTX at load time.
      if (auto err = assembleCubin(ptx, options, cubin))
        errs() << "rewire-compile: warning: " << *err << "\n";
      stage("ptxas");
    }
    if (kernels) {
      std::string libDir = runtimeLibDir.empty() ? defaultRuntimeLibDir(argv[0]) : runtimeLibDir;
      if (auto err = writeEmulatorKernels(std::move(kernels), options, {ptx, cubin},
                                             emulatorKernels, libDir))
        return error(*err, 5);
      stage("emulator kernels");
    }
    if (failed(writeCudaArtifact(*module, info, ptx, cubin, paramsRef, options, output)))
      return 5;
    if (auto err = writeParameters(info, inputDir, options.seed, params))
      return error(*err, 4);
    return 0;
  }
  if (failed(lowerToLLVMDialect(*module, options)))
    return 3;
  stage("lower to the LLVM dialect");
  if (emit == Stage::llvmDialect)
    return writeText(output, [&](raw_ostream &os) { module->print(os); });
  LLVMContext llvmContext;
  auto llvmModule = translateAndOptimize(*module, info.entries, paramsRef, options, llvmContext);
  if (!llvmModule)
    return 5;
  stage("translate and optimize (LLVM)");
  if (emit == Stage::llvm)
    return writeText(output, [&](raw_ostream &os) { llvmModule->print(os, nullptr); });
  std::string object;
  if (auto err = emitObject(*llvmModule, options, object))
    return error(*err, 5);
  stage("code generation");
  if (emit == Stage::object)
    return writeText(output, [&](raw_ostream &os) { os << object; });

  std::string libDir = runtimeLibDir.empty() ? defaultRuntimeLibDir(argv[0]) : runtimeLibDir;
  if (auto err = linkArtifact(object, output, libDir))
    return error(*err, 5);
  stage("link");
  if (auto err = writeParameters(info, inputDir, options.seed, params))
    return error(*err, 4);
  return 0;
}
