//===- RouteExport.cpp - Mixture-of-Depths routing as ONNX ops ------------===//
//
// residual.route and residual.route_select, which have no decomposition
// into nn ops (they select rows by rank within each sequence): Less/Where
// for a threshold, TopK/ScatterElements for a rate, TopK over a kept-first
// score for the kept rows' indices.
// The stream ops are exported through their nn decompositions
// (OnnxExporter.cpp, dialects/residual/ResidualDecompose.cpp).
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "dialects/residual/ResidualOps.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_export;

namespace {

/// `m` as [S, N] (S the leading axis for rank >= 3, else 1), as the lowering
/// ranks it.
std::string asSequences(GraphBuilder &g, const std::string &m, RankedTensorType type,
                        int64_t &seqs, int64_t &n) {
  seqs = type.getRank() >= 3 ? type.getDimSize(0) : 1;
  n = type.getNumElements() / std::max<int64_t>(seqs, 1);
  return g.node1("Reshape", {m, g.constI64({seqs, n})});
}

/// The indices [S, k] of each sequence's k smallest rows.
std::string skippedRows(GraphBuilder &g, const std::string &flat, int64_t k) {
  std::string values = g.fresh("topk_values"), indices = g.fresh("topk_indices");
  onnx::NodeProto *topk = g.node("TopK", {flat, g.constI64({k})}, {values, indices});
  GraphBuilder::attr(topk, "axis", int64_t(1));
  GraphBuilder::attr(topk, "largest", int64_t(0));
  GraphBuilder::attr(topk, "sorted", int64_t(1));
  return indices;
}

} // namespace

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
  int64_t seqs, n;
  std::string flat = asSequences(g, m, type, seqs, n);
  int64_t k = n - residual::RouteSelectOp::keptRows(n, v);
  if (k == 0) {
    g.node("Identity", {m}, {out});
    return success();
  }
  // The k smallest rows of each sequence (TopK breaks ties by index, as
  // the lowering does) are set to 0.
  std::string indices = skippedRows(g, flat, k);
  std::string zeros = g.node1("Expand", {g.constF32(0.0f), g.constI64({seqs, k})});
  onnx::NodeProto *scatter;
  std::string routed = g.node1("ScatterElements", {flat, indices, zeros}, &scatter);
  GraphBuilder::attr(scatter, "axis", int64_t(1));
  SmallVector<int64_t> shape(type.getShape());
  g.node("Reshape", {routed, g.constI64(shape)}, {out});
  return success();
}

LogicalResult rewire::onnx_export::exportRouteSelect(residual::RouteSelectOp op, GraphBuilder &g) {
  auto type = op.getM().getType();
  int64_t seqs, n;
  std::string flat = asSequences(g, g.name(op.getM()), type, seqs, n);
  int64_t skip = n - residual::RouteSelectOp::keptRows(n, op.getRate().convertToDouble());
  int64_t k = n - skip;
  // kept (1 or 0) * 2n + (n - t): the kept rows score above the others, an
  // earlier row above a later one, so TopK(largest) lists the kept rows in
  // increasing t.
  std::string kept = g.node1("Expand", {g.constF32(1.0f), g.constI64({seqs, n})});
  if (skip > 0) {
    std::string zeros = g.node1("Expand", {g.constF32(0.0f), g.constI64({seqs, skip})});
    onnx::NodeProto *scatter;
    kept = g.node1("ScatterElements", {kept, skippedRows(g, flat, skip), zeros}, &scatter);
    GraphBuilder::attr(scatter, "axis", int64_t(1));
  }
  SmallVector<int64_t> later, offsets;
  for (int64_t t = 0; t < n; ++t)
    later.push_back(n - t);
  for (int64_t s = 0; s < seqs; ++s)
    offsets.push_back(s * n);
  onnx::NodeProto *cast;
  std::string order = g.node1("Cast", {g.constI64(later)}, &cast);
  GraphBuilder::attr(cast, "to", int64_t(onnx::TensorProto::FLOAT));
  std::string score = g.node1(
      "Add", {g.node1("Mul", {kept, g.constF32(static_cast<float>(2 * n))}), order});
  std::string values = g.fresh("kept_values"), indices = g.fresh("kept_rows");
  onnx::NodeProto *topk = g.node("TopK", {score, g.constI64({k})}, {values, indices});
  GraphBuilder::attr(topk, "axis", int64_t(1));
  GraphBuilder::attr(topk, "largest", int64_t(1));
  GraphBuilder::attr(topk, "sorted", int64_t(1));
  std::string base = g.node1("Reshape", {g.constI64(offsets), g.constI64({seqs, 1})});
  g.node("Add", {indices, base}, {g.name(op.getIndices())});
  return success();
}
