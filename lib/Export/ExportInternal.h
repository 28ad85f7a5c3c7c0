//===- ExportInternal.h - Exporter internals --------------------*- C++ -*-===//
//
// The graph builder shared by the nn and residual emitters: value naming,
// node creation and constant helpers over an onnx::GraphProto.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_LIB_EXPORT_EXPORTINTERNAL_H
#define REWIRE_LIB_EXPORT_EXPORTINTERNAL_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include "dialects/residual/ResidualOps.h"

#include "onnx/onnx.pb.h"

#include <string>

namespace rewire::onnx_export {

class GraphBuilder {
public:
  GraphBuilder(onnx::GraphProto &graph, int64_t opset)
      : graph(graph), opset(opset) {}

  onnx::GraphProto &graph;
  int64_t opset;

  /// The ONNX name of `v` (assigned on first use).
  std::string name(mlir::Value v);
  /// Binds `v` to an existing ONNX name.
  void bind(mlir::Value v, const std::string &n) { names[v] = n; }
  /// A fresh value name.
  std::string fresh(llvm::StringRef hint = "t");

  /// Appends a node; returns it for attributes.
  onnx::NodeProto *node(llvm::StringRef op,
                        llvm::ArrayRef<std::string> inputs,
                        llvm::ArrayRef<std::string> outputs);
  /// Appends a node with one fresh output and returns that output's name.
  std::string node1(llvm::StringRef op, llvm::ArrayRef<std::string> inputs,
                    onnx::NodeProto **out = nullptr);

  std::string constI64(llvm::ArrayRef<int64_t> values, bool scalar = false);
  std::string constF32(float value);

  static void attr(onnx::NodeProto *n, llvm::StringRef key, int64_t v);
  static void attr(onnx::NodeProto *n, llvm::StringRef key, float v);
  static void attr(onnx::NodeProto *n, llvm::StringRef key, llvm::StringRef v);
  static void attr(onnx::NodeProto *n, llvm::StringRef key,
                   llvm::ArrayRef<int64_t> v);

  /// Reduces over `axes` with keepdims, in the form `opset` requires.
  std::string reduce(llvm::StringRef op, const std::string &x,
                     llvm::ArrayRef<int64_t> axes, bool keepdims = true);

private:
  llvm::DenseMap<mlir::Value, std::string> names;
  unsigned counter = 0;
};

/// Emits residual.route (Mixture-of-Depths) as ONNX nodes; fails (with a
/// diagnostic) for a rate over a dynamic shape.
mlir::LogicalResult exportRoute(rewire::residual::RouteOp op, GraphBuilder &g);
mlir::LogicalResult exportRouteSelect(rewire::residual::RouteSelectOp op, GraphBuilder &g);

/// The ONNX data type of `t`, or 0 when it has none.
int32_t onnxDataType(mlir::Type t);

} // namespace rewire::onnx_export

#endif // REWIRE_LIB_EXPORT_EXPORTINTERNAL_H
