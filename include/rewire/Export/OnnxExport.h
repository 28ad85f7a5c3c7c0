//===- OnnxExport.h - Export nn/residual IR to ONNX -------------*- C++ -*-===//
//
// Writes a module's `forward` function as a standard ONNX model: nn ops map
// to their ONNX operators, residual ops are decomposed into standard ONNX ops
// (so a rewritten model runs in ONNX Runtime), parameters become initializers
// with their values from the parameter file or their #nn.init rule.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_EXPORT_ONNXEXPORT_H
#define REWIRE_EXPORT_ONNXEXPORT_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>

namespace rewire::onnx_export {

struct ExportOptions {
  /// Folder the module's nn.parameter_file is relative to.
  std::string parameterDir = ".";
  /// Overrides nn.parameter_file.
  std::string parameterFile;
  /// Seed for parameters initialized by a random #nn.init rule.
  uint64_t seed = 0;
  /// The function to export.
  std::string function = "forward";
};

/// Serializes `module` to `outputPath` (written atomically). Diagnostics go
/// to the context's handler.
/// Writes `options.function` of `module` as an ONNX model to `outputPath`
/// (atomically). The function's residual stream ops are replaced by their
/// nn decompositions on the way (the module is changed).
mlir::LogicalResult exportOnnxFile(mlir::ModuleOp module,
                                   llvm::StringRef outputPath,
                                   const ExportOptions &options);

} // namespace rewire::onnx_export

#endif // REWIRE_EXPORT_ONNXEXPORT_H
