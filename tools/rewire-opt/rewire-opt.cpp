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
#include "rewire/Version.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/PrettyStackTrace.h"
#include "llvm/Support/raw_ostream.h"

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

  rewire::registerRewirePasses();
  mlir::DialectRegistry registry;
  rewire::registerRewireDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "rewire-opt: run Rewire and MLIR passes on residual-stream IR\n",
      registry));
}
