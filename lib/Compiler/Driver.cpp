//===- Driver.cpp - One compile, from a model file to an artifact ---------===//
//
// The sequence of rewire-compile's stages (Driver.h): the tool is its
// flags, this is what they do.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Driver.h"

#include "dialects/nn/NNParameters.h"
#include "rewire/Import/OnnxImport.h"
#include "rewire/Support/Nesting.h"
#include "rewire/Support/ReadFile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <unistd.h>

#include <chrono>

using namespace llvm;
using namespace rewire::compiler;


namespace {

/// Writes text to `path` ("-" = stdout).
Error writeText(const std::string &path, function_ref<void(raw_ostream &)> fn) {
  std::string err;
  auto out = mlir::openOutputFile(path, &err);
  if (!out)
    return compileError(Failure::io, err);
  fn(out->os());
  out->keep();
  return Error::success();
}

bool isCpuOnly(Stage s) {
  return s == Stage::llvmDialect || s == Stage::llvm || s == Stage::object;
}
bool isBinary(Stage s) { return s == Stage::artifact || s == Stage::object; }

/// The output path: the job's, else next to the input.
std::string outputOf(const CompileJob &job) {
  if (!job.output.empty())
    return job.output;
  if (!isBinary(job.emit))
    return "-";
  SmallString<256> p(job.input);
  sys::path::replace_extension(
      p, job.emit == Stage::artifact ? (job.options.cuda ? ".rwcu" : ".rwx") : ".o");
  return p.str().str();
}

/// Reads the job's model, its ONNX parameters into `importedParams` (a
/// temporary file beside the output) unless the job stops before needing
/// them.
Expected<mlir::OwningOpRef<mlir::ModuleOp>> readJobModel(mlir::MLIRContext &context,
                                                         llvm::SourceMgr &sourceMgr,
                                                         const CompileJob &job,
                                                         const std::string &output,
                                                         SmallString<256> &importedParams) {
  rewire::onnx_import::ImportOptions importOptions;
  for (const auto &[name, size] : job.dims)
    importOptions.dimBindings[name] = size;
  importOptions.inputShapes = job.inputShapes;
  if (StringRef(job.input).ends_with(".onnx") && job.emit != Stage::nn &&
      job.emit != Stage::residual) {
    int fd;
    SmallString<256> dir(output == "-" ? "." : sys::path::parent_path(output));
    if (dir.empty())
      dir = ".";
    sys::path::append(dir, ".rewire-import-%%%%%%.safetensors");
    if (auto ec = sys::fs::createUniqueFile(dir, fd, importedParams))
      return compileError(Failure::io, "cannot create a temporary file: " + ec.message());
    ::close(fd);
    // Removed on return (compile's scope_exit) and on SIGINT or SIGTERM too.
    sys::RemoveFileOnSignal(importedParams);
    SmallString<256> abs(importedParams);
    sys::fs::make_absolute(abs);
    importOptions.parameterFile = importedParams.str().str();
    importOptions.parameterFileRef = abs.str().str();
  }
  return readModel(context, sourceMgr, job.input, importOptions);
}

/// Prints the wall time since the previous stage (with --timing).
class StageClock {
public:
  explicit StageClock(bool enabled) : enabled(enabled) {}
  void operator()(const char *name) {
    auto now = std::chrono::steady_clock::now();
    if (enabled)
      errs() << "rewire-compile: " << name << ": "
             << format("%.2f", std::chrono::duration<double>(now - last).count()) << " s\n";
    last = now;
  }

private:
  bool enabled;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};

/// The CUDA target after lowerToLinalg: kernels, PTX, cubin, the artifact.
Error compileCuda(mlir::ModuleOp module, const CompileJob &job, const ModuleInfo &info,
                  const std::string &output, const std::string &paramsRef,
                  StageClock &stage) {
  const CompileOptions &options = job.options;
  if (failed(lowerToGPU(module, options)))
    return compileError(Failure::unsupported);
  stage("lower to GPU kernels");
  if (job.emit == Stage::gpu)
    return writeText(output, [&](raw_ostream &os) { module.print(os); });
  // The emulator's copy of the kernels, before NVVM consumes them.
  mlir::OwningOpRef<mlir::ModuleOp> kernels;
  if (!job.emulatorKernels.empty())
    kernels = mlir::cast<mlir::ModuleOp>(module->clone());
  std::string ptx, cubin;
  if (failed(serializeKernels(module, options, ptx)))
    return compileError(Failure::codegen);
  stage("NVVM and PTX");
  if (job.emit == Stage::ptx)
    return writeText(output, [&](raw_ostream &os) { os << ptx; });
  if (!ptx.empty()) {
    // Without ptxas the driver JIT-compiles the PTX at load time.
    if (Error err = assembleCubin(ptx, options, cubin))
      errs() << "rewire-compile: warning: " << toString(std::move(err)) << "\n";
    stage("ptxas");
  }
  if (kernels) {
    if (Error err = writeEmulatorKernels(std::move(kernels), options, {ptx, cubin},
                                         job.emulatorKernels, job.runtimeLibDir))
      return err;
    stage("emulator kernels");
  }
  if (failed(writeCudaArtifact(module, info, ptx, cubin, paramsRef, options, output)))
    return compileError(Failure::codegen);
  return Error::success();
}

/// The CPU target after lowerToLinalg: the LLVM dialect, LLVM IR, object
/// code, the linked artifact.
Error compileCpu(mlir::ModuleOp module, const CompileJob &job, const ModuleInfo &info,
                 const std::string &output, const std::string &paramsRef, StageClock &stage) {
  const CompileOptions &options = job.options;
  std::vector<EntryPoint> entries = info.entries;
  if (failed(lowerToLLVMDialect(module, options, &entries)))
    return compileError(Failure::unsupported);
  stage("lower to the LLVM dialect");
  if (job.emit == Stage::llvmDialect)
    return writeText(output, [&](raw_ostream &os) { module.print(os); });
  LLVMContext llvmContext;
  auto llvmModule = translateAndOptimize(module, entries, paramsRef, options, llvmContext);
  if (!llvmModule)
    return compileError(Failure::codegen);
  stage("translate and optimize (LLVM)");
  if (job.emit == Stage::llvm)
    return writeText(output, [&](raw_ostream &os) { llvmModule->print(os, nullptr); });
  std::string object;
  if (Error err = emitObject(*llvmModule, options, object))
    return err;
  stage("code generation");
  if (job.emit == Stage::object)
    return writeText(output, [&](raw_ostream &os) { os << object; });
  if (Error err = linkArtifact(object, output, job.runtimeLibDir))
    return err;
  stage("link");
  return Error::success();
}

} // namespace

char CompileError::ID = 0;

Expected<mlir::OwningOpRef<mlir::ModuleOp>>
rewire::compiler::readModel(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr,
                            const std::string &path,
                            const rewire::onnx_import::ImportOptions &importOptions) {
  if (StringRef(path).ends_with(".onnx")) {
    auto result = rewire::onnx_import::importOnnxFile(path, &context, importOptions);
    if (!result.module) {
      using rewire::onnx_import::ImportStatus;
      return compileError(result.status == ImportStatus::unsupported     ? Failure::unsupported
                          : result.status == ImportStatus::io            ? Failure::io
                          : result.status == ImportStatus::inputMismatch ? Failure::inputMismatch
                                                                         : Failure::invalidModel);
    }
    return std::move(result.module);
  }
  if (path != "-")
    if (auto bad = rewire::checkRegularFile(path, /*allowPipes=*/true))
      return compileError(Failure::io, *bad);
  std::string err;
  auto file = mlir::openInputFile(path, &err);
  if (!file)
    return compileError(Failure::io, err);
  if (auto deep = rewire::checkNestingDepth(file->getBuffer(), path)) {
    errs() << *deep << "\n"; // "FILE:LINE: error: ..."
    return compileError(Failure::invalidModel);
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module || failed(rewire::nn::checkParameterFileRef(*module, path)))
    return compileError(Failure::invalidModel);
  return std::move(module);
}

Error rewire::compiler::compileError(Failure failure, const Twine &message) {
  return make_error<CompileError>(failure, message.str());
}

Error rewire::compiler::compileErrorIf(Failure failure, const std::optional<std::string> &message) {
  return message ? compileError(failure, *message) : Error::success();
}

Error rewire::compiler::validate(const CompileJob &job) {
  bool cuda = job.options.cuda;
  if (cuda && isCpuOnly(job.emit))
    return compileError(Failure::usage, "--emit=llvm-dialect/llvm/obj are CPU stages; with "
                                        "--target=cuda use --emit=gpu or --emit=ptx");
  if (!cuda && (job.emit == Stage::gpu || job.emit == Stage::ptx))
    return compileError(Failure::usage, "--emit=gpu and --emit=ptx need --target=cuda");
  if (!cuda && !job.emulatorKernels.empty())
    return compileError(Failure::usage, "--emulator-kernels needs --target=cuda");
  if (job.options.optLevel > 3)
    return compileError(Failure::usage,
                        "-O" + Twine(job.options.optLevel) + " is not a level; use -O0 to -O3");
  if (isBinary(job.emit) && outputOf(job) == "-")
    return compileError(Failure::usage, "binary output needs a file: give -o FILE");
  return Error::success();
}

Error rewire::compiler::compile(mlir::MLIRContext &context, const CompileJob &job) {
  if (Error e = validate(job))
    return e;
  std::string output = outputOf(job);
  // Errors name the op and location; the whole module is not printed.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context,
                                               job.diagnostics ? *job.diagnostics : llvm::errs());

  // Where the parameters of an imported model go until the artifact's file
  // is written.
  SmallString<256> importedParams;
  llvm::scope_exit cleanup([&] {
    if (!importedParams.empty()) {
      sys::fs::remove(importedParams);
      sys::DontRemoveFileOnSignal(importedParams);
    }
  });
  auto module = readJobModel(context, sourceMgr, job, output, importedParams);
  if (!module)
    return module.takeError();
  if (failed(mlir::verify(**module)))
    return compileError(Failure::invalidModel);
  if (job.emit == Stage::nn)
    return writeText(output, [&](raw_ostream &os) { (*module)->print(os); });

  setPassTiming(job.timing);
  StageClock stage(job.timing);
  stage("read");
  mlir::ModuleOp m = **module;
  if (!job.options.residual.empty() &&
      failed(applyResidualRewrite(m, job.options.residual, job.options.allowNoResidual)))
    return compileError(Failure::unsupported);
  if (job.instrument && failed(instrumentResidualStreams(m)))
    return compileError(Failure::unsupported);
  // Parameters next to the artifact, named relative to it when beside it.
  std::string params = job.params;
  if (params.empty()) {
    SmallString<256> p(output);
    if (sys::path::extension(p) == ".rwx" || sys::path::extension(p) == ".rwcu")
      sys::path::replace_extension(p, "");
    params = (p + ".params.safetensors").str();
  }
  auto relativeTo = [&](const std::string &file) {
    return sys::path::parent_path(params) == sys::path::parent_path(file)
               ? sys::path::filename(params).str()
               : params;
  };
  std::string paramsRef = relativeTo(output);
  if (!job.rewrittenIR.empty()) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = mlir::cast<mlir::ModuleOp>(m->clone());
    (*copy)->setAttr(rewire::nn::kParameterFileAttrName,
                     mlir::StringAttr::get(&context, relativeTo(job.rewrittenIR)));
    if (Error e = writeText(job.rewrittenIR, [&](raw_ostream &os) { copy->print(os); }))
      return e;
  }
  ModuleInfo info;
  if (!job.train.empty() && failed(addTrainingSteps(m, job.train, job.options, info)))
    return compileError(Failure::unsupported);
  stage("residual rewrite and train step");
  if (job.emit == Stage::residual)
    return writeText(output, [&](raw_ostream &os) { m.print(os); });
  if (failed(lowerToLinalg(m, job.options, info)))
    return compileError(Failure::unsupported);
  stage("lower to linalg");
  if (job.emit == Stage::linalg)
    return writeText(output, [&](raw_ostream &os) { m.print(os); });

  Error built = job.options.cuda ? compileCuda(m, job, info, output, paramsRef, stage)
                                 : compileCpu(m, job, info, output, paramsRef, stage);
  if (built || job.emit != Stage::artifact)
    return built;
  std::string inputDir = sys::path::parent_path(job.input).str();
  return writeParameters(info, inputDir.empty() ? "." : inputDir, job.options.seed, params);
}

Failure rewire::compiler::reportError(Error error, StringRef tool) {
  Failure failure = Failure::codegen;
  handleAllErrors(std::move(error), [&](const CompileError &e) {
    failure = e.failure;
    if (!e.message.empty())
      errs() << tool << ": error: " << e.message << "\n";
  });
  return failure;
}
