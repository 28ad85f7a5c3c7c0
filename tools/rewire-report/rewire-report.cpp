//===- rewire-report.cpp - Report a model's residual streams --------------===//
//
// Prints the residual streams of a model (.mlir, or .onnx imported on the
// fly) as text, JSON or Graphviz dot. When the IR has no residual ops yet,
// residual-detect runs first.
//
//   rewire-report model.onnx --format=json
//
//   rewire-report model.onnx --layer-stats --residual=review --params trained.safetensors \
//       --inputs x.npy [--targets y.npy] -o report.html
//
// --layer-stats compiles the model with per-layer instrumentation, runs it, and
// writes PNG plots of stream norms, update sizes, gate values, connection
// weights and the loss at every depth into one self-contained HTML page.
//
// Exit codes: 0 reported; 1 bad command line; 2 the model or data could not
// be read, imported or verified; 3 a pass failed or nothing to report; 4
// compile, load or file I/O.
//
//===----------------------------------------------------------------------===//
#include "dialects/residual/ResidualOps.h"
#include "passes/Transforms/Passes.h"
#include "rewire/Compiler/Driver.h"
#include "rewire/InitAll.h"
#include "rewire/Support/Nesting.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Version.h"
#include "tools/common/OutOfMemory.h"
#include "tools/rewire-report/Stats.h"

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
static cl::opt<bool> stats("layer-stats",
                           cl::desc("Run the model and report per-layer statistics (stream norms, "
                                    "update sizes, gates, connection weights, loss at every depth) "
                                    "as PNG plots in one HTML page (-o)"),
                           cl::init(false), cl::cat(category));
static cl::opt<std::string> statsInputs("inputs", cl::desc("--layer-stats: input examples (.npy)"),
                                        cl::init(""), cl::cat(category));
static cl::opt<std::string> statsTargets("targets",
                                         cl::desc("--layer-stats: targets (.npy) for the loss at every depth"),
                                         cl::init(""), cl::cat(category));
static cl::opt<std::string> statsParams("params",
                                        cl::desc("--layer-stats: parameters (.safetensors, e.g. rewire-train --output)"),
                                        cl::init(""), cl::cat(category));
static cl::opt<std::string> statsResidual("residual",
                                          cl::desc("--layer-stats: the residual rewrite the parameters belong to"),
                                          cl::init(""), cl::cat(category));
static cl::opt<std::string> statsPlots("plots", cl::desc("--layer-stats: also keep the PNGs in this folder"),
                                       cl::init(""), cl::cat(category));
static cl::opt<int64_t> statsBatches("batches", cl::desc("--layer-stats: batches to average over"),
                                     cl::init(8), cl::cat(category));
static cl::opt<double> statsTau("tau", cl::desc("--layer-stats: ANCRe temperature for the connection plot"),
                                cl::init(0.01), cl::cat(category));

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  rewire::tools::exitOnOutOfMemory("rewire-report", 4);
  llvm::setBugReportMsg("PLEASE report this crash at " REWIRE_BUG_REPORT_URL
                        " with the model and the command line above.\n");
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "rewire-report: residual streams of a model\n");
  if (stats) {
    if (outputPath == "-" || statsBatches < 1 || !(statsTau > 0)) {
      errs() << "rewire-report: error: --layer-stats needs -o PAGE.html, --batches >= 1 and --tau > 0\n";
      return 1;
    }
    rewire::report::StatsOptions o;
    o.model = inputPath;
    o.residual = statsResidual;
    o.params = statsParams;
    o.inputs = statsInputs;
    o.targets = statsTargets;
    o.output = outputPath;
    o.plotsDir = statsPlots;
    o.batches = statsBatches;
    o.tau = statsTau;
    return rewire::report::runStats(o);
  }
  if (::format != "text" && ::format != "json" && ::format != "dot") {
    errs() << "rewire-report: error: --format must be text, json or dot\n";
    return 1;
  }
  mlir::DialectRegistry registry;
  rewire::registerRewireDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  // Errors (and their notes: every unsupported op of an import) name the
  // location; the module is not printed.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  auto module = rewire::compiler::readModel(context, sourceMgr, inputPath);
  if (!module) {
    rewire::compiler::reportError(module.takeError(), "rewire-report");
    return 2;
  }

  bool hasStreams = false;
  (*module)->walk([&](rewire::residual::StreamOpInterface) { hasStreams = true; });
  mlir::PassManager pm(&context);
  if (!hasStreams)
    pm.addNestedPass<mlir::func::FuncOp>(rewire::createResidualDetect());
  rewire::ResidualReportOptions reportOptions;
  reportOptions.format = ::format;
  reportOptions.output = outputPath;
  pm.addPass(rewire::createResidualReport(reportOptions));
  if (failed(pm.run(**module)))
    return 3;
  return 0;
}
