//===- RouteExport.cpp - Mixture-of-Depths routing as ONNX ops ------------===//
//
// residual.route, which has no decomposition into nn ops (it selects rows
// by rank): Less/Where for a threshold, TopK/ScatterElements for a rate.
// The stream ops are exported through their nn decompositions
// (OnnxExporter.cpp, dialects/residual/ResidualDecompose.cpp).
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "dialects/residual/ResidualOps.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_export;

LogicalResult rewire::onnx_export::exportRoute(residual::RouteOp op, GraphBuilder &g) {
  std::string m = g.name(op.getM());
  std::string out = g.name(op.getResult());
  double v = op.getValue().convertToDouble();
  if (op.getMode() == residual::RouteMode::threshold) {
    std::string skip = g.node1("Less", {m, g.constF32(static_cast<float>(v))});
    g.node("Where", {skip, g.constF32(0.0f), m}, {out});
    return success();
  }
  auto type = op.getM().getType();
  if (!type.hasStaticShape())
    return op.emitError() << "exporting residual.route by rate needs a static "
                             "shape";
  int64_t n = type.getNumElements();
  int64_t k = static_cast<int64_t>(std::floor(v * static_cast<double>(n)));
  if (k == 0) {
    g.node("Identity", {m}, {out});
    return success();
  }
  // The k smallest rows (TopK breaks ties by index) are set to 0.
  std::string flat = g.node1("Reshape", {m, g.constI64({n})});
  onnx::NodeProto *topk;
  std::string values = g.fresh("topk_values"), indices = g.fresh("topk_indices");
  topk = g.node("TopK", {flat, g.constI64({k})}, {values, indices});
  GraphBuilder::attr(topk, "largest", int64_t(0));
  GraphBuilder::attr(topk, "sorted", int64_t(1));
  std::string zeros = g.node1(
      "Expand", {g.constF32(0.0f), g.constI64({k})});
  onnx::NodeProto *scatter;
  std::string routed = g.node1("ScatterElements", {flat, indices, zeros}, &scatter);
  GraphBuilder::attr(scatter, "axis", int64_t(0));
  SmallVector<int64_t> shape(type.getShape());
  g.node("Reshape", {routed, g.constI64(shape)}, {out});
  return success();
}

