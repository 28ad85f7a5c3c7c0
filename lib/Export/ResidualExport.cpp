//===- ResidualExport.cpp - Residual ops as standard ONNX ops -------------===//
//
// Decomposes each residual op into standard ONNX operators (opset 17), so a
// rewritten model runs in ONNX Runtime and other tools. The decompositions
// follow the op definitions (docs/dialects.md, papers.md) term by term;
// test/Export checks them numerically against a NumPy reference.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "dialects/residual/ResidualOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_export;

namespace {

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

/// mean over the feature axis of x*x, keeping the axis.
std::string meanSquare(GraphBuilder &g, const std::string &x, int64_t axis) {
  return g.reduce("ReduceMean", g.node1("Mul", {x, x}), {axis});
}

/// rms(x) = x / sqrt(mean_d(x^2) + eps).
std::string rms(GraphBuilder &g, const std::string &x, int64_t axis,
                double eps) {
  std::string denom = g.node1(
      "Sqrt", {g.node1("Add", {meanSquare(g, x, axis),
                               g.constF32(static_cast<float>(eps))})});
  return g.node1("Div", {x, denom});
}

LogicalResult requireLastAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis == rank - 1)
    return success();
  return op->emitError() << "exporting '" << op->getName()
                         << "' with feature axis " << axis
                         << " (not the last) is not supported yet";
}

LogicalResult exportScaleAdd(residual::ScaleAddOp op, GraphBuilder &g) {
  int64_t rank = rankOf(op.getH());
  int64_t axis =
      cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
  std::string alpha = g.name(op.getAlpha());
  auto at = op.getAlpha().getType();
  bool perChannel = at.getRank() == 1 && at.getDimSize(0) != 1;
  if (perChannel && axis != rank - 1) {
    SmallVector<int64_t> shape = {at.getDimSize(0)};
    shape.append(rank - 1 - axis, 1);
    alpha = g.node1("Reshape", {alpha, g.constI64(shape)});
  }
  std::string scaled = g.node1("Mul", {alpha, g.name(op.getU())});
  g.node("Add", {g.name(op.getH()), scaled}, {g.name(op.getResult())});
  return success();
}

LogicalResult exportGatedAdd(residual::GatedAddOp op, GraphBuilder &g) {
  int64_t rank = rankOf(op.getH());
  int64_t axis =
      cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
  if (failed(requireLastAxis(op, axis, rank)))
    return failure();
  std::string h = g.name(op.getH()), u = g.name(op.getU());
  std::string x = h;
  if (op.getGate() == residual::GateKind::review) {
    double eps = op.getEpsOrDefault();
    onnx::NodeProto *cat;
    x = g.node1("Concat", {rms(g, h, axis, eps), rms(g, u, axis, eps)}, &cat);
    GraphBuilder::attr(cat, "axis", axis);
  }
  std::string z = g.node1(
      "Add", {g.node1("MatMul", {x, g.name(op.getWeight())}),
              g.name(op.getBias())});
  std::string r = g.node1("Sigmoid", {z});
  std::string out = g.name(op.getResult());
  if (op.getCombine() == residual::Combine::additive) {
    g.node("Add", {h, g.node1("Mul", {r, u})}, {out});
  } else {
    // (1 - r) h + r u, written with the same two products.
    std::string one = g.constF32(1.0f);
    std::string keep = g.node1("Mul", {g.node1("Sub", {one, r}), h});
    g.node("Add", {keep, g.node1("Mul", {r, u})}, {out});
  }
  return success();
}

LogicalResult exportMix(residual::MixOp op, GraphBuilder &g) {
  std::string p = g.name(op.getWeights());
  bool softmax = op.getWeightsKind() == residual::MixWeights::softmax;
  if (softmax) {
    std::string logits = g.node1(
        "Div", {p, g.constF32(static_cast<float>(op.getTau()->convertToDouble()))});
    onnx::NodeProto *sm;
    p = g.node1("Softmax", {logits}, &sm);
    GraphBuilder::attr(sm, "axis", int64_t(0));
  }
  auto weight = [&](int64_t j) {
    onnx::NodeProto *n;
    std::string w = g.node1("Gather", {p, g.constI64({j}, /*scalar=*/true)}, &n);
    GraphBuilder::attr(n, "axis", int64_t(0));
    return w;
  };
  int64_t k = op.getStates().size();
  std::string acc = g.name(op.getY());
  if (!softmax)
    acc = g.node1("Mul", {acc, weight(k)});
  for (int64_t j = 0; j < k; ++j) {
    std::string term = g.node1("Mul", {g.name(op.getStates()[j]), weight(j)});
    acc = g.node1("Add", {acc, term});
  }
  g.node("Identity", {acc}, {g.name(op.getResult())});
  return success();
}

/// rho = sqrt(mean_d(R^2)) per row (keeps the axis) and Rbar = R / rho.
std::pair<std::string, std::string> normalizeStream(GraphBuilder &g,
                                                    const std::string &r,
                                                    int64_t axis) {
  std::string rho = g.node1("Sqrt", {meanSquare(g, r, axis)});
  return {rho, g.node1("Div", {r, rho})};
}

LogicalResult exportNagGate(residual::NagGateOp op, GraphBuilder &g) {
  int64_t rank = rankOf(op.getR());
  int64_t axis =
      cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
  if (failed(requireLastAxis(op, axis, rank)))
    return failure();
  auto [rho, rbar] = normalizeStream(g, g.name(op.getR()), axis);
  (void)rho;
  std::string s = g.node1(
      "Sigmoid", {g.node1("Add", {g.node1("MatMul", {rbar, g.name(op.getW())}),
                                  g.name(op.getB())})});
  onnx::NodeProto *sm;
  std::string mixw = g.node1("Softmax", {g.name(op.getPi())}, &sm);
  GraphBuilder::attr(sm, "axis", int64_t(0));
  std::string m = g.reduce("ReduceSum", g.node1("Mul", {s, mixw}), {axis});
  double beta = op.getBeta().convertToDouble();
  if (beta != 1.0)
    m = g.node1("Pow", {m, g.constF32(static_cast<float>(beta))});
  g.node("Identity", {m}, {g.name(op.getM())});
  return success();
}

LogicalResult exportNagAdd(residual::NagAddOp op, GraphBuilder &g) {
  auto type = op.getR().getType();
  int64_t rank = type.getRank();
  int64_t axis =
      cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
  if (failed(requireLastAxis(op, axis, rank)))
    return failure();
  int64_t d = type.getDimSize(axis);
  if (ShapedType::isDynamic(d))
    return op.emitError() << "exporting residual.nag_add needs a static "
                             "feature size";
  std::string r = g.name(op.getR());
  auto [rho, rbar] = normalizeStream(g, r, axis);
  std::string f = g.name(op.getF());
  f = g.node1("Sub", {f, g.reduce("ReduceMean", f, {axis})});
  std::string dot = g.reduce("ReduceMean", g.node1("Mul", {f, rbar}), {axis});
  std::string fperp = g.node1("Sub", {f, g.node1("Mul", {dot, rbar})});
  std::string norm = g.node1(
      "Sqrt", {g.reduce("ReduceSum", g.node1("Mul", {fperp, fperp}), {axis})});
  norm = g.node1(
      "Max", {norm, g.constF32(static_cast<float>(op.getEps().convertToDouble()))});
  std::string u = g.node1(
      "Mul", {g.node1("Div", {fperp, norm}),
              g.constF32(static_cast<float>(std::sqrt(static_cast<double>(d))))});
  std::string scale = g.node1(
      "Mul", {g.node1("Mul", {rho, g.name(op.getAlpha())}), g.name(op.getM())});
  g.node("Add", {r, g.node1("Mul", {scale, u})}, {g.name(op.getResult())});
  return success();
}

LogicalResult exportRoute(residual::RouteOp op, GraphBuilder &g) {
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

} // namespace

LogicalResult rewire::onnx_export::exportResidualOp(Operation *op,
                                                    GraphBuilder &g) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](residual::AddOp a) {
        g.node("Add", {g.name(a.getH()), g.name(a.getU())},
               {g.name(a.getResult())});
        return success();
      })
      .Case([&](residual::TapOp t) {
        g.node("Identity", {g.name(t.getH())}, {g.name(t.getResult())});
        return success();
      })
      .Case([&](residual::ScaleAddOp s) { return exportScaleAdd(s, g); })
      .Case([&](residual::GatedAddOp s) { return exportGatedAdd(s, g); })
      .Case([&](residual::MixOp s) { return exportMix(s, g); })
      .Case([&](residual::NagGateOp s) { return exportNagGate(s, g); })
      .Case([&](residual::NagAddOp s) { return exportNagAdd(s, g); })
      .Case([&](residual::RouteOp s) { return exportRoute(s, g); })
      .Default([](Operation *other) {
        return other->emitError() << "no ONNX decomposition for '"
                                  << other->getName() << "'";
      });
}
