//===- rewire-import.cpp - ONNX to nn-dialect MLIR ------------------------===//
//
// Imports an ONNX model into the nn dialect and writes the IR and, next to
// it, the weights as safetensors. Model files are untrusted: every limit is a
// flag (see SECURITY.md), every rejection is one line on stderr.
//
//   rewire-import model.onnx -o model.mlir     # also writes model.safetensors
//
// Exit codes: 0 imported; 1 bad command line; 2 the model is malformed or
// exceeds a limit; 3 the model uses an unsupported op or opset; 4 a file could
// not be read or written.
//
//===----------------------------------------------------------------------===//
#include "rewire/Import/OnnxImport.h"
#include "rewire/InitAll.h"
#include "rewire/Version.h"
#include "tools/common/OutOfMemory.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;
using namespace rewire::onnx_import;

static cl::OptionCategory category("rewire-import options");
static cl::opt<std::string> inputPath(cl::Positional,
                                      cl::desc("<model.onnx>"),
                                      cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output .mlir file ('-' for stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<std::string> paramsPath(
    "params",
    cl::desc("Where to write the weights (safetensors); default: the output "
             "path with extension .safetensors"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<bool> listOps(
    "list-ops",
    cl::desc("Print the ONNX operators the importer handles (OP MIN-OPSET MAX-OPSET) and exit"),
    cl::cat(category));
static cl::opt<bool> allowUnsupported(
    "allow-unsupported",
    cl::desc("Keep unsupported nodes as generic nn.onnx_node ops"),
    cl::cat(category));
static cl::list<std::string>
    dims("dim", cl::desc("Size of a symbolic dimension, e.g. --dim batch=2"),
         cl::value_desc("NAME=SIZE"), cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Shape of the i-th graph input (e.g. 2x8; one per input, in order): binds the "
             "model's symbolic dimensions"),
    cl::value_desc("DxD..."), cl::cat(category));
static cl::opt<int64_t> maxFileBytes("max-file-bytes",
                                     cl::desc("Largest model file accepted"),
                                     cl::init(int64_t(2) << 30),
                                     cl::cat(category));
static cl::opt<int64_t> maxNodes("max-nodes", cl::desc("Most graph nodes accepted"),
                                 cl::init(1000000), cl::cat(category));
static cl::opt<int64_t> maxRank("max-rank", cl::desc("Highest tensor rank accepted"),
                                cl::init(16), cl::cat(category));
static cl::opt<int64_t> maxTensorElements(
    "max-tensor-elements", cl::desc("Most elements in one tensor"),
    cl::init(int64_t(1) << 32), cl::cat(category));
static cl::opt<int64_t> maxRecursionDepth(
    "max-recursion-depth", cl::desc("Deepest protobuf nesting accepted"),
    cl::init(64), cl::cat(category));

enum ExitCode { kOk = 0, kUsage = 1, kInvalid = 2, kUnsupported = 3, kIO = 4 };

/// "file: at 'name'" for node and tensor locations, the file otherwise.
static std::string describe(mlir::Location loc) {
  if (auto name = dyn_cast<mlir::NameLoc>(loc)) {
    std::string inner = describe(name.getChildLoc());
    return inner + ": at '" + name.getName().str() + "'";
  }
  if (auto file = dyn_cast<mlir::FileLineColLoc>(loc))
    return file.getFilename().str();
  return "rewire-import";
}

/// Model files name their nodes and tensors; a hostile name must not put
/// control characters or invalid UTF-8 on the user's terminal.
static std::string printable(StringRef s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

static void printVersion(raw_ostream &os) {
  os << "rewire-import (Rewire " << REWIRE_VERSION_STRING << ", MLIR "
     << REWIRE_LLVM_VERSION_STRING << "); ONNX opsets 13-21\n";
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  rewire::tools::exitOnOutOfMemory("rewire-import", 4);
  llvm::setBugReportMsg("PLEASE report this crash at " REWIRE_BUG_REPORT_URL
                        " with the model file and the command line above.\n");
  cl::AddExtraVersionPrinter(printVersion);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "rewire-import: ONNX model -> nn-dialect MLIR\n");
  if (listOps) {
    for (const SupportedOp &op : supportedOps())
      outs() << op.opType << " " << op.minOpset << " " << op.maxOpset
             << (op.domain.empty() ? "" : " " + op.domain) << "\n";
    return 0;
  }
  if (inputPath.empty()) {
    errs() << "rewire-import: error: no model given (rewire-import MODEL.onnx -o OUT.mlir; "
              "--help)\n";
    return 1;
  }

  ImportOptions options;
  options.allowUnsupported = allowUnsupported;
  options.limits.maxFileBytes = maxFileBytes;
  options.limits.maxNodes = maxNodes;
  options.limits.maxRank = maxRank;
  options.limits.maxTensorElements = maxTensorElements;
  options.limits.maxRecursionDepth = maxRecursionDepth;
  for (const std::string &d : dims)
    if (auto err = rewire::onnx_import::parseDimBinding(d, options)) {
      errs() << "rewire-import: error: " << *err << "\n";
      return kUsage;
    }
  for (const std::string &spec : inputShapes) {
    std::vector<int64_t> shape;
    if (auto err = rewire::onnx_import::parseInputShape(spec, shape)) {
      errs() << "rewire-import: error: " << *err << "\n";
      return kUsage;
    }
    options.inputShapes.push_back(std::move(shape));
  }
  if (!paramsPath.empty()) {
    options.parameterFile = paramsPath;
  } else if (outputPath != "-") {
    SmallString<256> p(outputPath);
    sys::path::replace_extension(p, "safetensors");
    options.parameterFile = std::string(p);
  }
  if (!options.parameterFile.empty())
    options.parameterFileRef =
        sys::path::filename(options.parameterFile).str();

  mlir::DialectRegistry registry;
  rewire::registerRewireDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::ScopedDiagnosticHandler handler(&context, [](mlir::Diagnostic &diag) {
    const char *kind = diag.getSeverity() == mlir::DiagnosticSeverity::Error
                           ? "error"
                           : diag.getSeverity() ==
                                     mlir::DiagnosticSeverity::Warning
                                 ? "warning"
                                 : "note";
    errs() << printable(describe(diag.getLocation())) << ": " << kind << ": "
           << printable(diag.str()) << "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      errs() << printable(describe(note.getLocation())) << ": note: "
             << printable(note.str()) << "\n";
    return mlir::success();
  });

  ImportResult result = importOnnxFile(inputPath, &context, options);
  if (!result.module) {
    switch (result.status) {
    case ImportStatus::unsupported:
      return kUnsupported;
    case ImportStatus::inputMismatch:
      return kUsage; // an --input-shape that does not fit the model
    case ImportStatus::io:
      return kIO;
    default:
      return kInvalid;
    }
  }
  std::string error;
  auto output = mlir::openOutputFile(outputPath, &error);
  if (!output) {
    errs() << "rewire-import: error: " << error << "\n";
    return kIO;
  }
  result.module->print(output->os());
  output->keep();
  if (options.parameterFile.empty())
    errs() << "rewire-import: warning: weights not written (give -o FILE or "
              "--params FILE)\n";
  return kOk;
}
