//===- ResidualReport.cpp - Describe residual streams ---------------------===//
//
// Implements residual-report: collects every residual op by stream and layer
// with its form, branch, skip, parameters and added FLOPs per token, and
// prints the result as text, JSON (llvm::json) or Graphviz dot.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

namespace rewire {
#define GEN_PASS_DEF_RESIDUALREPORT
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

struct Update {
  int64_t layer;
  std::string kind, branch, skip;
  int64_t params = 0;
  int64_t flops = 0;
  SmallVector<int64_t> mixedFrom; ///< for mix: layers of the earlier states
};

/// Elements held by the learned operands of `op` that are parameters.
int64_t parameterElements(Operation *op) {
  int64_t n = 0;
  for (Value v : op->getOperands().drop_front())
    if (v.getDefiningOp<ml_program::GlobalLoadConstOp>())
      if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && t.hasStaticShape())
        n += t.getNumElements();
  return n;
}

/// Elements of the parameters residual-rewrite added, which it names
/// `stream<S>.layer<L>.<form>.<name>`: those the forms' ops read and those
/// their nn ops read (Gemma 3n's low-rank path).
int64_t addedParameterElements(ModuleOp module) {
  static const llvm::Regex name("^stream[0-9]+\\.layer[0-9]+\\.");
  int64_t n = 0;
  for (auto global : module.getOps<ml_program::GlobalOp>())
    if (name.match(global.getSymName()))
      if (auto t = dyn_cast<RankedTensorType>(global.getType()); t && t.hasStaticShape())
        n += t.getNumElements();
  return n;
}

Update describe(residual::StreamOpInterface op) {
  Update u;
  u.layer = op.getLayerIndex();
  Operation *raw = op.getOperation();
  auto str = [&](StringRef name, StringRef dflt) {
    auto a = raw->getAttrOfType<StringAttr>(name);
    return (a ? a.getValue() : dflt).str();
  };
  u.branch = str(residual::kBranchAttrName, "other");
  u.skip = str(residual::kSkipAttrName, "identity");
  u.params = parameterElements(raw);
  auto type = cast<RankedTensorType>(op.getStreamInput().getType());
  int64_t axis = op.getFeatureAxisIndex();
  int64_t d = axis >= 0 && !type.isDynamicDim(axis) ? type.getDimSize(axis) : 0;
  llvm::TypeSwitch<Operation *>(raw)
      .Case([&](residual::AddOp) { u.kind = "add"; })
      .Case([&](residual::ScaleAddOp s) {
        bool perChannel = s.getAlpha().getType().getRank() == 1 &&
                          s.getAlpha().getType().getDimSize(0) != 1;
        u.kind = perChannel ? "scale (per channel)" : "scale (scalar)";
        u.flops = d;
      })
      .Case([&](residual::GatedAddOp g) {
        int64_t gw = g.getWeight().getType().getDimSize(1);
        bool review = g.getGate() == residual::GateKind::review;
        bool convex = g.getCombine() == residual::Combine::convex;
        u.kind = llvm::formatv("{0} ({1}, {2})", review ? "review" : "highway",
                               convex ? "convex" : "additive",
                               gw == 1 ? "per row" : "per channel")
                     .str();
        u.flops = (review ? 4 * d * gw + 6 * d : 2 * d * gw) + 5 * gw + d +
                  (convex ? 2 * d : 0);
      })
      .Case([&](residual::MixOp m) {
        bool free = m.getWeightsKind() == residual::MixWeights::free;
        u.kind = m.getWeightsKind() == residual::MixWeights::softmax ? "ancre"
                 : free                                             ? "denseformer"
                                                                    : "laurel pa";
        int64_t k = m.getStates().size();
        u.flops = 2 * k * d + (free ? d : 0);
        for (Value s : m.getStates())
          if (auto prev = s.getDefiningOp<residual::StreamOpInterface>())
            u.mixedFrom.push_back(prev.getLayerIndex());
          else
            u.mixedFrom.push_back(-1); // the stream's input
      })
      .Case([&](residual::NagGateOp g) {
        int64_t c = g.getW().getType().getDimSize(1);
        u.kind = "nag gate";
        u.flops = 3 * d + 2 * d * c + 6 * c;
      })
      .Case([&](residual::NagAddOp n) {
        u.kind = "nag";
        u.flops = 12 * d;
        if (auto route = n.getM().getDefiningOp<residual::RouteOp>())
          u.kind = llvm::formatv("nag, skip {0} {1}",
                                 stringifyRouteMode(route.getMode()),
                                 route.getValue().convertToDouble())
                       .str();
      })
      .Case([&](residual::HyperExpandOp e) {
        u.kind = llvm::formatv("hyper expand ({0} streams)", e.getStreams()).str();
      })
      .Case([&](residual::HyperCoeffsOp c) {
        auto x = c.getX().getType();
        int64_t n = x.getShape().drop_back().back();
        auto w = c.getWeight().getType();
        int64_t rows = c.getMap() == residual::HyperMap::tanh ? n : 1; // per-stream W
        u.kind = ("hyper coeffs " + residual::stringifyHyperMap(c.getMap())).str();
        u.flops = rows * 2 * w.getDimSize(0) * w.getDimSize(1) + 3 * n * d +
                  (c.getIters() ? 4 * n * n * static_cast<int64_t>(*c.getIters()) : 0);
      })
      .Case([&](residual::HyperReadOp r) {
        u.kind = "hyper read (H^pre)";
        u.flops = 2 * r.getX().getType().getShape().drop_back().back() * d;
      })
      .Case([&](residual::HyperWriteOp w) {
        int64_t n = w.getX().getType().getShape().drop_back().back();
        u.kind = "hyper write (H^res, H^post)";
        u.flops = 2 * n * n * d + 2 * n * d;
      })
      .Case([&](residual::HyperReduceOp r) {
        u.kind = "hyper reduce (mean)";
        u.flops = r.getX().getType().getShape().drop_back().back() * d;
      })
      .Case([&](residual::ValueMixOp m) {
        u.kind = "value residual (lambda1 V_1 + lambda2 V)";
        u.branch = "attention";
        // Per token: H * Dv values of [B, H, T, Dv], or the features.
        auto v = m.getV().getType();
        int64_t perToken = v.getRank() == 4 ? v.getDimSize(1) * v.getDimSize(3) : d;
        u.flops = ShapedType::isDynamic(perToken) ? 0 : 3 * perToken;
      })
      .Case([&](residual::TapOp) { u.kind = "tap"; })
      .Default([&](Operation *) { u.kind = "other"; });
  return u;
}

struct ResidualReportPass
    : public rewire::impl::ResidualReportBase<ResidualReportPass> {
  using ResidualReportBase::ResidualReportBase;
  void runOnOperation() override;
};

} // namespace

void ResidualReportPass::runOnOperation() {
  if (format != "text" && format != "json" && format != "dot") {
    getOperation().emitError() << "residual-report: format must be text, json "
                                  "or dot, got '"
                               << format << "'";
    return signalPassFailure();
  }
  std::map<int64_t, std::vector<Update>> streams;
  getOperation().walk([&](residual::StreamOpInterface op) {
    streams[op.getStreamId()].push_back(describe(op));
  });
  int64_t params = addedParameterElements(getOperation()), flops = 0;
  for (auto &[id, updates] : streams)
    for (const Update &u : updates)
      flops += u.flops;

  std::string error;
  auto file = openOutputFile(output, &error);
  if (!file) {
    getOperation().emitError() << "residual-report: " << error;
    return signalPassFailure();
  }
  llvm::raw_ostream &os = file->os();
  if (format == "json") {
    llvm::json::Array jsonStreams;
    for (auto &[id, updates] : streams) {
      llvm::json::Array ups;
      for (const Update &u : updates) {
        llvm::json::Object o{{"layer", u.layer},     {"kind", u.kind},
                             {"branch", u.branch},   {"skip", u.skip},
                             {"params", u.params},   {"flops_per_token", u.flops}};
        if (!u.mixedFrom.empty())
          o["mixes_layers"] = llvm::json::Array(u.mixedFrom);
        ups.push_back(std::move(o));
      }
      jsonStreams.push_back(llvm::json::Object{{"id", id}, {"updates", std::move(ups)}});
    }
    llvm::json::Object root{{"streams", std::move(jsonStreams)},
                            {"params_added", params},
                            {"flops_added_per_token", flops}};
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  } else if (format == "dot") {
    os << "digraph residual_streams {\n  rankdir=LR;\n  node [shape=box];\n";
    for (auto &[id, updates] : streams) {
      os << llvm::formatv("  s{0}_in [label=\"stream {0} input\"];\n", id);
      std::string prev = llvm::formatv("s{0}_in", id).str();
      for (const Update &u : updates) {
        std::string node = llvm::formatv("s{0}_l{1}", id, u.layer).str();
        os << llvm::formatv("  {0} [label=\"layer {1}\\n{2}\\n{3}\"];\n", node,
                            u.layer, u.kind, u.branch);
        os << llvm::formatv("  {0} -> {1} [label=\"{2}\"];\n", prev, node, u.skip);
        for (int64_t from : u.mixedFrom)
          os << llvm::formatv("  {0} -> {1} [style=dashed];\n",
                              from < 0 ? llvm::formatv("s{0}_in", id).str()
                                       : llvm::formatv("s{0}_l{1}", id, from).str(),
                              node);
        prev = node;
      }
    }
    os << "}\n";
  } else {
    if (streams.empty())
      os << "no residual streams found\n";
    for (auto &[id, updates] : streams) {
      os << llvm::formatv("stream {0}: {1} updates\n", id, updates.size());
      os << "  layer  branch     skip        form                              params  flops/token\n";
      for (const Update &u : updates)
        os << llvm::formatv("  {0,5}  {1,-9}  {2,-10}  {3,-32}  {4,6}  {5,11}\n",
                            u.layer, u.branch, u.skip, u.kind, u.params,
                            u.flops);
    }
    os << llvm::formatv("parameters in residual forms: {0}\nFLOPs added per "
                        "token: {1}\n",
                        params, flops);
  }
  file->keep();
  markAllAnalysesPreserved();
}
