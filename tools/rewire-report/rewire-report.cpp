//===- rewire-report.cpp - Report a model's residual streams --------------===//
//
// Prints the residual streams of a model (.mlir, or .onnx imported on the
// fly) as text, JSON or Graphviz dot. When the IR has no residual ops yet,
// residual-detect runs first.
//
//   rewire-report model.onnx --format=json
//
// Exit codes: 0 reported; 1 bad command line; 2 the model could not be read,
// imported or verified; 3 a pass failed.
//
//===----------------------------------------------------------------------===//
#include "dialects/residual/ResidualOps.h"
#include "passes/Transforms/Passes.h"
#include "rewire/Import/OnnxImport.h"
#include "rewire/InitAll.h"
#include "rewire/Version.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"

using namespace llvm;

static cl::OptionCategory category("rewire-report options");
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model.mlir|model.onnx>"),
                                      cl::cat(category));
static cl::opt<std::string> format("format", cl::desc("text, json or dot"),
                                   cl::init("text"), cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::init("-"), cl::cat(category));

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  llvm::setBugReportMsg("PLEASE report this crash at " REWIRE_BUG_REPORT_URL
                        " with the model and the command line above.\n");
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "rewire-report: residual streams of a model\n");
  if (format != "text" && format != "json" && format != "dot") {
    errs() << "rewire-report: error: --format must be text, json or dot\n";
    return 1;
  }
  mlir::DialectRegistry registry;
  rewire::registerRewireDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (StringRef(inputPath).ends_with(".onnx")) {
    rewire::onnx_import::ImportOptions options;
    auto result = rewire::onnx_import::importOnnxFile(inputPath, &context, options);
    if (!result.module)
      return 2;
    module = std::move(result.module);
  } else {
    llvm::SourceMgr sourceMgr;
    auto file = MemoryBuffer::getFile(inputPath);
    if (!file) {
      errs() << "rewire-report: error: cannot read '" << inputPath
             << "': " << file.getError().message() << "\n";
      return 2;
    }
    sourceMgr.AddNewSourceBuffer(std::move(*file), SMLoc());
    module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (!module)
      return 2;
  }

  bool hasStreams = false;
  module->walk([&](rewire::residual::StreamOpInterface) { hasStreams = true; });
  mlir::PassManager pm(&context);
  if (!hasStreams)
    pm.addNestedPass<mlir::func::FuncOp>(rewire::createResidualDetect());
  rewire::ResidualReportOptions reportOptions;
  reportOptions.format = format;
  reportOptions.output = outputPath;
  pm.addPass(rewire::createResidualReport(reportOptions));
  if (failed(pm.run(*module)))
    return 3;
  return 0;
}
