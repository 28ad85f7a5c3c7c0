//===- OnnxImport.h - Import ONNX models into the nn dialect ----*- C++ -*-===//
//
// The public API of the ONNX importer: read an untrusted .onnx file with
// explicit limits, build the faithful generic form of every node
// (nn.onnx_node), legalize each into nn ops with the handler registered for
// its (domain, op type, opset), and write the weights to a safetensors file
// next to the IR (parameters are ml_program.global symbols named after the
// initializers).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_IMPORT_ONNXIMPORT_H
#define REWIRE_IMPORT_ONNXIMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rewire::onnx_import {

/// Limits on untrusted model files; every one is a command-line flag of
/// rewire-import. See SECURITY.md.
struct ImportLimits {
  int64_t maxFileBytes = int64_t(2) << 30;   ///< protobuf's own hard limit
  int64_t maxNodes = 1000000;                ///< nodes in the main graph
  int64_t maxRank = 16;                      ///< rank of any tensor
  int64_t maxTensorElements = int64_t(1) << 32; ///< elements of one tensor
  int64_t maxRecursionDepth = 64;            ///< protobuf message nesting
};

struct ImportOptions {
  ImportLimits limits;
  /// Keep unsupported nodes as generic nn.onnx_node ops instead of failing.
  bool allowUnsupported = false;
  /// Sizes for symbolic dimensions (dim_param); unbound ones stay dynamic.
  llvm::StringMap<int64_t> dimBindings;
  /// The shapes of the inputs the model will be called with, in graph-input
  /// order (empty: not given): each dynamic dimension of input i takes the
  /// size at its position; a static one must equal it.
  std::vector<std::vector<int64_t>> inputShapes;
  /// Where to write parameter values (safetensors); empty: do not write.
  std::string parameterFile;
  /// Name recorded in the module's nn.parameter_file attribute.
  std::string parameterFileRef;
  /// Float initializers with more elements than this become parameters;
  /// smaller ones (scalars such as attention scales) stay constants.
  int64_t maxConstantElements = 1;
};

/// What went wrong, for the tool's exit code.
/// Why an import failed; `inputMismatch`: a shape given in
/// ImportOptions::inputShapes does not fit the graph input it is for.
enum class ImportStatus { ok, invalid, unsupported, io, inputMismatch };

struct ImportResult {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  ImportStatus status = ImportStatus::ok;
};

/// Imports `path`. Diagnostics go to the context's diagnostic handler; on
/// failure `module` is null and `status` says why.
ImportResult importOnnxFile(llvm::StringRef path, mlir::MLIRContext *context,
                            const ImportOptions &options);

/// Imports a model held in memory (`name` labels diagnostics; external data
/// is looked up relative to `modelDir`, or refused when it is empty). Used by
/// the fuzzer and by tools that already hold the bytes.
ImportResult importOnnxBuffer(llvm::StringRef bytes, llvm::StringRef name,
                              llvm::StringRef modelDir,
                              mlir::MLIRContext *context,
                              const ImportOptions &options);

/// One ONNX operator the importer handles, for the opsets [minOpset, maxOpset].
struct SupportedOp {
  std::string opType;
  int64_t minOpset, maxOpset;
  std::string domain; ///< "" for ai.onnx
};

/// Every operator the importer handles, by domain (its handler
/// tables: the one list; rewire-import --list-ops prints it).
std::vector<SupportedOp> supportedOps();

/// Parses an --input-shape value ("2x8", "scalar" for rank 0) into
/// `shape`; returns what is wrong.
std::optional<std::string> parseInputShape(llvm::StringRef spec, std::vector<int64_t> &shape);

/// Parses a --dim value ("batch=2") into `options.dimBindings`; returns what
/// is wrong.
std::optional<std::string> parseDimBinding(llvm::StringRef spec, ImportOptions &options);

} // namespace rewire::onnx_import

#endif // REWIRE_IMPORT_ONNXIMPORT_H
