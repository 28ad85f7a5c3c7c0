//===- rewire-export.cpp - nn/residual MLIR to ONNX -----------------------===//
//
// Exports a module's `forward` function to a standard ONNX model that ONNX
// Runtime and other tools accept: residual ops become standard operators,
// parameters become initializers (values from the module's parameter file,
// or from their #nn.init rule with --seed).
//
//   rewire-export model.mlir -o model.onnx
//
// Exit codes: 0 exported; 1 bad command line; 2 the IR could not be read or
// does not verify; 3 it contains something the exporter cannot express;
// 4 a file could not be read or written.
//
//===----------------------------------------------------------------------===//
#include "dialects/nn/NNParameters.h"
#include "rewire/Export/OnnxExport.h"
#include "rewire/InitAll.h"
#include "rewire/Support/Nesting.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Version.h"
#include "tools/common/OutOfMemory.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace llvm;

static cl::OptionCategory category("rewire-export options");
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.mlir>"), cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::Required,
                                       cl::desc("Output .onnx file"),
                                       cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> paramsPath(
    "params", cl::desc("Parameter file (default: the module's nn.parameter_file, "
                       "relative to the input)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed for random #nn.init parameters"),
                              cl::init(0), cl::cat(category));
static cl::opt<std::string> function("function", cl::desc("Function to export"),
                                     cl::init("forward"), cl::cat(category));

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  rewire::tools::exitOnOutOfMemory("rewire-export", 4);
  llvm::setBugReportMsg("PLEASE report this crash at " REWIRE_BUG_REPORT_URL
                        " with the input file and the command line above.\n");
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "rewire-export: nn/residual MLIR -> ONNX\n");
  mlir::DialectRegistry registry;
  rewire::registerRewireDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  bool sawError = false;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    sawError |= d.getSeverity() == mlir::DiagnosticSeverity::Error;
    errs() << d.getLocation() << ": "
           << (d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
                                                                  : "note")
           << ": " << d.str() << "\n";
    return mlir::success();
  });
  llvm::SourceMgr sourceMgr;
  if (auto bad = rewire::checkRegularFile(inputPath, /*allowPipes=*/true)) {
    errs() << "rewire-export: error: " << *bad << "\n";
    return 4;
  }
  auto file = llvm::MemoryBuffer::getFile(inputPath);
  if (!file) {
    errs() << "rewire-export: error: cannot read '" << inputPath
           << "': " << file.getError().message() << "\n";
    return 4;
  }
  if (auto deep = rewire::checkNestingDepth((*file)->getBuffer(), inputPath)) {
    errs() << *deep << "\n";
    return 2;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*file), SMLoc());
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return 2;
  if (paramsPath.empty() && failed(rewire::nn::checkParameterFileRef(*module, inputPath)))
    return 2;
  rewire::onnx_export::ExportOptions options;
  SmallString<256> dir(inputPath);
  sys::path::remove_filename(dir);
  options.parameterDir = dir.empty() ? "." : std::string(dir);
  options.parameterFile = paramsPath;
  options.seed = seed;
  options.function = function;
  if (failed(rewire::onnx_export::exportOnnxFile(*module, outputPath, options)))
    return 3;
  return 0;
}
