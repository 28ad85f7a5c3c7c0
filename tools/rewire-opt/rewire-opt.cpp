//===- rewire-opt.cpp - Rewire's opt-style driver -------------------------===//
//
// mlir-opt for Rewire: parses .mlir files, runs any pipeline of Rewire's and
// the registered upstream passes, and prints the result. Every mlir-opt flag
// works (--split-input-file, --verify-diagnostics, --pass-pipeline, ...).
//
// Exit codes: 0 on success, 1 when parsing, verification or a pass fails
// (the diagnostic says which and where).
//
//===----------------------------------------------------------------------===//
#include "rewire/InitAll.h"
#include "rewire/Support/Nesting.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Version.h"
#include "tools/common/OutOfMemory.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/PrettyStackTrace.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/stat.h>

static void printVersion(llvm::raw_ostream &os) {
  os << "Rewire " << REWIRE_VERSION_STRING
     << " (residual-stream compiler, built on MLIR "
     << REWIRE_LLVM_VERSION_STRING << ")\n"
     << "  dialects: nn, residual\n"
     << "  report bugs: " << REWIRE_BUG_REPORT_URL << "\n";
}

int main(int argc, char **argv) {
  llvm::setBugReportMsg("PLEASE report this crash at " REWIRE_BUG_REPORT_URL
                        " with the input file and the command line above.\n");
  llvm::cl::AddExtraVersionPrinter(printVersion);

  llvm::InitLLVM init(argc, argv);
  rewire::registerRewirePasses();
  mlir::DialectRegistry registry;
  rewire::registerRewireDialects(registry);
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "rewire-opt: run Rewire and MLIR passes on residual-stream IR\n", registry);
  rewire::tools::exitOnOutOfMemory("rewire-opt", 1);
  // What MLIR's parser cannot take without a crash is refused first: a
  // directory or device as input, IR nested deeper than the stack allows.
  // (Pipes are read as usual: that is how IR flows between tools.)
  if (input != "-") {
    if (auto err = rewire::checkRegularFile(input, /*allowPipes=*/true)) {
      llvm::errs() << "rewire-opt: error: " << *err << "\n";
      return 1;
    }
    std::string text;
    struct stat st;
    if (::stat(input.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (auto err = rewire::readRegularFile(input, text)) {
        llvm::errs() << "rewire-opt: error: " << *err << "\n";
        return 1;
      }
      if (auto deep = rewire::checkNestingDepth(text, input)) {
        llvm::errs() << *deep << "\n";
        return 1;
      }
    }
  }
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, input, output, registry));
}
