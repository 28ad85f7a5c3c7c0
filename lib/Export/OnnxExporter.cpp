//===- OnnxExporter.cpp - nn IR to an ONNX model --------------------------===//
//
// Walks the exported function in order and emits one ONNX node per nn op
// (nn.attention and nn.rms_norm, which have no ONNX operator at opset 17, as
// small decompositions), residual stream ops through their decomposition
// into nn ops (the dialect's one definition of each form), residual.route
// through RouteExport.cpp, generic
// nn.onnx_node ops as the node they came from, and parameters as initializers
// in the order the function loads them, so import -> export -> import gives
// the same IR.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "rewire/Export/OnnxExport.h"

#include "dialects/nn/NNDecompose.h"
#include "dialects/nn/NNOps.h"
#include "dialects/nn/NNParameters.h"
#include "dialects/residual/ResidualDecompose.h"
#include "rewire/Support/AtomicFile.h"
#include "rewire/Support/InitRules.h"
#include "rewire/Support/Safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_export;


//===----------------------------------------------------------------------===//
// Exporter
//===----------------------------------------------------------------------===//

namespace {

class Exporter {
public:
  Exporter(ModuleOp module, const ExportOptions &opts)
      : module(module), opts(opts) {}
  LogicalResult run(StringRef outputPath);

private:
  LogicalResult exportOp(Operation *op);
  LogicalResult exportParameter(ml_program::GlobalLoadConstOp load);
  LogicalResult exportGeneric(nn::OnnxNodeOp op);
  LogicalResult setValueInfo(onnx::ValueInfoProto *info, StringRef name,
                             Type type, Location loc);
  LogicalResult fillTensor(onnx::TensorProto *t, ElementsAttr attr,
                           Location loc);

  ModuleOp module;
  const ExportOptions &opts;
  onnx::ModelProto model;
  std::unique_ptr<GraphBuilder> g;
  std::optional<SafetensorsFile> params;
  std::string paramsPath;
  llvm::StringSet<> exportedParams;
};

} // namespace

LogicalResult Exporter::setValueInfo(onnx::ValueInfoProto *info,
                                     StringRef name, Type type,
                                     Location loc) {
  info->set_name(name.str());
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return emitError(loc) << "cannot export a value of type " << type
                          << " as a graph input or output";
  int32_t dt = onnxDataType(t.getElementType());
  if (!dt)
    return emitError(loc) << "element type " << t.getElementType()
                          << " has no ONNX data type";
  auto *tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dt);
  auto *shape = tt->mutable_shape();
  for (int64_t d : t.getShape()) {
    auto *dim = shape->add_dim();
    if (ShapedType::isDynamic(d))
      dim->set_dim_param(("d" + Twine(shape->dim_size() - 1)).str());
    else
      dim->set_dim_value(d);
  }
  return success();
}

LogicalResult Exporter::fillTensor(onnx::TensorProto *t, ElementsAttr attr,
                                   Location loc) {
  auto type = cast<ShapedType>(attr.getType());
  int32_t dt = onnxDataType(type.getElementType());
  if (!dt)
    return emitError(loc) << "constant of element type "
                          << type.getElementType() << " cannot be exported";
  t->set_data_type(dt);
  for (int64_t d : type.getShape())
    t->add_dims(d);
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return emitError(loc) << "only dense constants can be exported";
  if (type.getElementType().isInteger(1)) {
    std::string raw;
    for (bool b : dense.getValues<bool>())
      raw.push_back(b ? 1 : 0);
    t->set_raw_data(raw);
    return success();
  }
  if (dense.isSplat()) {
    // Splat constants store one element; expand it.
    ArrayRef<char> one = dense.getRawData();
    std::string raw;
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      raw.append(one.data(), one.size());
    t->set_raw_data(raw);
    return success();
  }
  ArrayRef<char> raw = dense.getRawData();
  t->set_raw_data(std::string(raw.data(), raw.size()));
  return success();
}

LogicalResult Exporter::exportParameter(ml_program::GlobalLoadConstOp load) {
  auto global = SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
      load, load.getGlobalAttr());
  if (!global)
    return load.emitError() << "parameter '" << load.getGlobal()
                            << "' is not defined";
  StringRef name = global.getSymName();
  g->bind(load.getResult(), name.str());
  if (!exportedParams.insert(name).second)
    return success();
  auto type = dyn_cast<RankedTensorType>(global.getType());
  if (!type || !type.hasStaticShape())
    return load.emitError() << "parameter '" << name
                            << "' must have a static tensor type to export";
  onnx::TensorProto *t = g->graph.add_initializer();
  t->set_name(name.str());
  int32_t dt = onnxDataType(type.getElementType());
  if (!dt)
    return load.emitError() << "parameter '" << name << "' has element type "
                            << type.getElementType()
                            << ", which has no ONNX data type";
  t->set_data_type(dt);
  for (int64_t d : type.getShape())
    t->add_dims(d);
  Attribute value = global.getValue().value_or(Attribute());
  if (auto init = dyn_cast_or_null<nn::InitAttr>(value)) {
    if (!type.getElementType().isF32())
      return load.emitError() << "parameter '" << name
                              << "': #nn.init is exported for f32 only";
    auto values = materializeInit(
        static_cast<InitRule>(static_cast<int>(init.getKind())),
        init.getA().convertToDouble(), init.getB().convertToDouble(),
        type.getNumElements(), opts.seed, name.str());
    t->set_raw_data(std::string(reinterpret_cast<const char *>(values.data()),
                                values.size() * sizeof(float)));
    return success();
  }
  if (auto elements = dyn_cast_or_null<ElementsAttr>(value)) {
    t->clear_dims(); // fillTensor writes type and dims itself
    return fillTensor(t, elements, load.getLoc());
  }
  if (!isa_and_nonnull<ml_program::ExternAttr>(value))
    return load.emitError() << "parameter '" << name
                            << "' has no initial value to export";
  if (!params) {
    if (paramsPath.empty())
      return load.emitError() << "parameter '" << name
                              << "' is external, but the module names no "
                                 "parameter file (nn.parameter_file); pass "
                                 "--params";
    params.emplace();
    if (auto err = readSafetensors(paramsPath, *params))
      return load.emitError() << "cannot load parameters: " << *err;
  }
  auto it = params->tensors.find(name.str());
  if (it == params->tensors.end())
    return load.emitError() << "parameter '" << name << "' is not in '"
                            << paramsPath << "'";
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  if (it->second.shape != shape)
    return load.emitError() << "parameter '" << name << "' in '"
                            << paramsPath
                            << "' does not have the shape of the IR's "
                            << type;
  t->set_raw_data(it->second.data);
  return success();
}

LogicalResult Exporter::exportGeneric(nn::OnnxNodeOp op) {
  SmallVector<std::string> inputs;
  ArrayRef<int64_t> absent = op.getAbsentInputs();
  unsigned next = 0;
  unsigned total = op.getInputs().size() + absent.size();
  for (unsigned i = 0; i < total; ++i) {
    if (llvm::is_contained(absent, static_cast<int64_t>(i)))
      inputs.push_back("");
    else
      inputs.push_back(g->name(op.getInputs()[next++]));
  }
  SmallVector<std::string> outputs;
  for (Value r : op.getOutputs())
    outputs.push_back(g->name(r));
  onnx::NodeProto *n = g->node(op.getOpType(), inputs, outputs);
  n->set_name(op.getNodeName().str());
  n->set_domain(op.getDomain().str());
  for (NamedAttribute a : op.getAttrs()) {
    StringRef key = a.getName();
    if (auto i = dyn_cast<IntegerAttr>(a.getValue()))
      GraphBuilder::attr(n, key, i.getInt());
    else if (auto f = dyn_cast<FloatAttr>(a.getValue()))
      GraphBuilder::attr(n, key, static_cast<float>(f.getValueAsDouble()));
    else if (auto s = dyn_cast<StringAttr>(a.getValue()))
      GraphBuilder::attr(n, key, s.getValue());
    else if (auto is = dyn_cast<DenseI64ArrayAttr>(a.getValue()))
      GraphBuilder::attr(n, key, is.asArrayRef());
    else if (auto e = dyn_cast<ElementsAttr>(a.getValue())) {
      onnx::AttributeProto *at = n->add_attribute();
      at->set_name(key.str());
      at->set_type(onnx::AttributeProto::TENSOR);
      if (failed(fillTensor(at->mutable_t(), e, op.getLoc())))
        return failure();
    } else
      return op.emitError() << "cannot export attribute '" << key << "'";
  }
  return success();
}

LogicalResult Exporter::exportOp(Operation *op) {
  GraphBuilder &b = *g;
  auto in = [&](unsigned i) { return b.name(op->getOperand(i)); };
  auto out = [&](unsigned i = 0) { return b.name(op->getResult(i)); };
  auto simple = [&](StringRef onnxOp) {
    SmallVector<std::string> ins;
    for (Value v : op->getOperands())
      ins.push_back(b.name(v));
    SmallVector<std::string> outs;
    for (Value v : op->getResults())
      outs.push_back(b.name(v));
    return b.node(onnxOp, ins, outs);
  };
  auto rank = [&](Value v) { return cast<RankedTensorType>(v.getType()).getRank(); };
  auto norm = [&](int64_t axis, Value v) { return axis < 0 ? axis + rank(v) : axis; };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ml_program::GlobalLoadConstOp load) {
        return exportParameter(load);
      })
      .Case([&](nn::ConstantOp c) {
        onnx::NodeProto *n = b.node("Constant", {}, {out()});
        onnx::AttributeProto *a = n->add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        return fillTensor(a->mutable_t(), c.getValue(), c.getLoc());
      })
      .Case([&](nn::AddOp) { simple("Add"); return success(); })
      .Case([&](nn::SubOp) { simple("Sub"); return success(); })
      .Case([&](nn::MulOp) { simple("Mul"); return success(); })
      .Case([&](nn::DivOp) { simple("Div"); return success(); })
      .Case([&](nn::PowOp) { simple("Pow"); return success(); })
      .Case([&](nn::ReluOp) { simple("Relu"); return success(); })
      .Case([&](nn::SigmoidOp) { simple("Sigmoid"); return success(); })
      .Case([&](nn::TanhOp) { simple("Tanh"); return success(); })
      .Case([&](nn::ErfOp) { simple("Erf"); return success(); })
      .Case([&](nn::ExpOp) { simple("Exp"); return success(); })
      .Case([&](nn::SqrtOp) { simple("Sqrt"); return success(); })
      .Case([&](nn::NegOp) { simple("Neg"); return success(); })
      .Case([&](nn::AbsOp) { simple("Abs"); return success(); })
      .Case([&](nn::LogOp) { simple("Log"); return success(); })
      .Case([&](nn::SinOp) { simple("Sin"); return success(); })
      .Case([&](nn::CosOp) { simple("Cos"); return success(); })
      .Case([&](nn::FloorOp) { simple("Floor"); return success(); })
      .Case([&](nn::CeilOp) { simple("Ceil"); return success(); })
      .Case([&](nn::RoundOp) { simple("Round"); return success(); })
      .Case([&](nn::TanOp) { simple("Tan"); return success(); })
      .Case([&](nn::AsinOp) { simple("Asin"); return success(); })
      .Case([&](nn::AcosOp) { simple("Acos"); return success(); })
      .Case([&](nn::AtanOp) { simple("Atan"); return success(); })
      .Case([&](nn::SinhOp) { simple("Sinh"); return success(); })
      .Case([&](nn::CoshOp) { simple("Cosh"); return success(); })
      .Case([&](nn::AsinhOp) { simple("Asinh"); return success(); })
      .Case([&](nn::AcoshOp) { simple("Acosh"); return success(); })
      .Case([&](nn::AtanhOp) { simple("Atanh"); return success(); })
      .Case([&](nn::ArgReduceOp r) {
        onnx::NodeProto *n = simple(r.getKind() == nn::ArgReduceKind::max ? "ArgMax" : "ArgMin");
        GraphBuilder::attr(n, "axis", static_cast<int64_t>(r.getAxis()));
        GraphBuilder::attr(n, "keepdims", int64_t(r.getKeepdims() ? 1 : 0));
        if (r.getSelectLastIndex())
          GraphBuilder::attr(n, "select_last_index", int64_t(1));
        return success();
      })
      .Case([&](nn::MaxOp) { simple("Max"); return success(); })
      .Case([&](nn::MinOp) { simple("Min"); return success(); })
      .Case([&](nn::NotOp n) {
        simple(n.getType().getElementType().isInteger(1) ? "Not" : "BitwiseNot");
        return success();
      })
      .Case([&](nn::CumSumOp cs) {
        onnx::NodeProto *n = b.node(
            "CumSum", {in(0), b.constI64({static_cast<int64_t>(cs.getAxis())}, /*scalar=*/true)},
            {out()});
        if (cs.getExclusive())
          GraphBuilder::attr(n, "exclusive", int64_t(1));
        if (cs.getReverse())
          GraphBuilder::attr(n, "reverse", int64_t(1));
        return success();
      })
      .Case([&](nn::LogicalOp l) {
        bool bits = !l.getType().getElementType().isInteger(1);
        switch (l.getKind()) {
        case nn::LogicalKind::and_: simple(bits ? "BitwiseAnd" : "And"); break;
        case nn::LogicalKind::or_: simple(bits ? "BitwiseOr" : "Or"); break;
        case nn::LogicalKind::xor_: simple(bits ? "BitwiseXor" : "Xor"); break;
        }
        return success();
      })
      .Case([&](nn::CompareOp c) {
        // ONNX has no NotEqual: ne is Not(Equal) through a fresh name.
        switch (c.getPredicate()) {
        case nn::ComparePredicate::eq: simple("Equal"); break;
        case nn::ComparePredicate::lt: simple("Less"); break;
        case nn::ComparePredicate::le: simple("LessOrEqual"); break;
        case nn::ComparePredicate::gt: simple("Greater"); break;
        case nn::ComparePredicate::ge: simple("GreaterOrEqual"); break;
        case nn::ComparePredicate::ne: {
          std::string eq = b.fresh("equal");
          b.node("Equal", {in(0), in(1)}, {eq});
          b.node("Not", {eq}, {out()});
          break;
        }
        }
        return success();
      })
      .Case([&](nn::GeluOp gelu) {
        onnx::NodeProto *n = simple("Gelu");
        if (gelu.getApproximate() == nn::GeluApproximation::tanh)
          GraphBuilder::attr(n, "approximate", StringRef("tanh"));
        return success();
      })
      .Case([&](nn::MatMulOp) { simple("MatMul"); return success(); })
      .Case([&](nn::GemmOp gemm) {
        onnx::NodeProto *n = simple("Gemm");
        GraphBuilder::attr(n, "alpha", gemm.getAlpha().convertToFloat());
        GraphBuilder::attr(n, "beta", gemm.getBeta().convertToFloat());
        if (gemm.getTransA())
          GraphBuilder::attr(n, "transA", int64_t(1));
        if (gemm.getTransB())
          GraphBuilder::attr(n, "transB", int64_t(1));
        return success();
      })
      .Case([&](nn::SoftmaxOp s) {
        GraphBuilder::attr(simple("Softmax"), "axis",
                           static_cast<int64_t>(s.getAxis()));
        return success();
      })
      .Case([&](nn::LayerNormOp ln) {
        onnx::NodeProto *n = simple("LayerNormalization");
        GraphBuilder::attr(n, "axis", static_cast<int64_t>(ln.getAxis()));
        GraphBuilder::attr(n, "epsilon", ln.getEpsilon().convertToFloat());
        return success();
      })
      .Case([&](nn::RMSNormOp rms) {
        int64_t axis = norm(static_cast<int64_t>(rms.getAxis()), rms.getX());
        SmallVector<int64_t> axes;
        for (int64_t i = axis; i < rank(rms.getX()); ++i)
          axes.push_back(i);
        std::string sq = b.node1("Mul", {in(0), in(0)});
        std::string mean = b.reduce("ReduceMean", sq, axes);
        std::string eps = b.constF32(rms.getEpsilon().convertToFloat());
        std::string root = b.node1("Sqrt", {b.node1("Add", {mean, eps})});
        std::string normed = b.node1("Div", {in(0), root});
        b.node("Mul", {normed, in(1)}, {out()});
        return success();
      })
      .Case([&](nn::BatchNormOp bn) {
        auto *node = simple("BatchNormalization");
        GraphBuilder::attr(node, "epsilon", bn.getEpsilon().convertToFloat());
        if (bn.getTraining()) {
          GraphBuilder::attr(node, "momentum", bn.getMomentum().convertToFloat());
          GraphBuilder::attr(node, "training_mode", int64_t(1));
          // ONNX requires the running-statistics outputs in training mode
          // (nothing in the graph reads them).
          node->add_output(b.fresh("running_mean"));
          node->add_output(b.fresh("running_var"));
        }
        return success();
      })
      .Case<nn::ReduceMeanOp, nn::ReduceSumOp, nn::ReduceMaxOp, nn::ReduceMinOp,
            nn::ReduceProdOp>([&](Operation *r) {
        // nn's empty axes mean "all"; ONNX's too, but only by default.
        auto axesAttr = r->getAttrOfType<DenseI64ArrayAttr>("axes");
        SmallVector<int64_t> axes(axesAttr ? axesAttr.asArrayRef()
                                           : ArrayRef<int64_t>());
        if (axes.empty())
          for (int64_t i = 0; i < rank(r->getOperand(0)); ++i)
            axes.push_back(i);
        auto keep = r->getAttrOfType<BoolAttr>("keepdims");
        b.bind(r->getResult(0),
               b.reduce(isa<nn::ReduceMeanOp>(r)  ? "ReduceMean"
                        : isa<nn::ReduceMaxOp>(r) ? "ReduceMax"
                        : isa<nn::ReduceMinOp>(r) ? "ReduceMin"
                        : isa<nn::ReduceProdOp>(r) ? "ReduceProd"
                                                  : "ReduceSum",
                        in(0), axes, !keep || keep.getValue()));
        return success();
      })
      .Case([&](nn::ReshapeOp r) {
        SmallVector<int64_t> shape;
        bool zero = false;
        for (int64_t d : r.getType().getShape()) {
          shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
          zero |= d == 0;
        }
        onnx::NodeProto *n =
            b.node("Reshape", {in(0), b.constI64(shape)}, {out()});
        if (zero)
          GraphBuilder::attr(n, "allowzero", int64_t(1));
        return success();
      })
      .Case([&](nn::TransposeOp t) {
        onnx::NodeProto *n = simple("Transpose");
        if (auto perm = t.getPerm())
          GraphBuilder::attr(n, "perm", *perm);
        return success();
      })
      .Case([&](nn::ConcatOp c) {
        GraphBuilder::attr(simple("Concat"), "axis",
                           static_cast<int64_t>(c.getAxis()));
        return success();
      })
      .Case([&](nn::SplitOp s) {
        SmallVector<std::string> outs;
        for (Value v : s.getResults())
          outs.push_back(b.name(v));
        onnx::NodeProto *n =
            b.node("Split", {in(0), b.constI64(s.getSizes())}, outs);
        GraphBuilder::attr(n, "axis", static_cast<int64_t>(s.getAxis()));
        return success();
      })
      .Case([&](nn::SliceOp s) {
        size_t n = s.getStarts().size();
        SmallVector<int64_t> axes, steps(n, 1);
        if (auto a = s.getAxes())
          axes.assign(a->begin(), a->end());
        else
          for (size_t i = 0; i < n; ++i)
            axes.push_back(i);
        if (auto st = s.getSteps())
          steps.assign(st->begin(), st->end());
        b.node("Slice",
               {in(0), b.constI64(s.getStarts()), b.constI64(s.getEnds()),
                b.constI64(axes), b.constI64(steps)},
               {out()});
        return success();
      })
      .Case([&](nn::GatherOp gth) {
        GraphBuilder::attr(simple("Gather"), "axis",
                           static_cast<int64_t>(gth.getAxis()));
        return success();
      })
      .Case([&](nn::ScatterAddOp sc) -> LogicalResult {
        // Rows summed into a zero table or the base: ScatterND with
        // reduction "add" (opset 16), each index a one-element coordinate.
        std::string table;
        if (sc.getBase()) {
          table = in(2);
        } else {
          auto rt = cast<RankedTensorType>(sc.getType());
          if (!rt.hasStaticShape())
            return sc.emitError() << "exporting nn.scatter_add needs a static result shape";
          SmallVector<int64_t> shape(rt.getShape());
          table = b.node1("Expand", {b.constF32(0.0f), b.constI64(shape)});
        }
        std::string coords = b.node1("Unsqueeze", {in(1), b.constI64({-1})});
        onnx::NodeProto *n = b.node("ScatterND", {table, coords, in(0)}, {out()});
        GraphBuilder::attr(n, "reduction", StringRef("add"));
        return success();
      })
      .Case([&](nn::UnsqueezeOp u) {
        b.node("Unsqueeze", {in(0), b.constI64(u.getAxes())}, {out()});
        return success();
      })
      .Case([&](nn::SqueezeOp s) {
        if (auto axes = s.getAxes())
          b.node("Squeeze", {in(0), b.constI64(*axes)}, {out()});
        else
          b.node("Squeeze", {in(0)}, {out()});
        return success();
      })
      .Case([&](nn::ConvOp c) {
        onnx::NodeProto *n = simple("Conv");
        if (auto s = c.getStrides())
          GraphBuilder::attr(n, "strides", *s);
        if (auto p = c.getPads())
          GraphBuilder::attr(n, "pads", *p);
        if (auto d = c.getDilations())
          GraphBuilder::attr(n, "dilations", *d);
        GraphBuilder::attr(n, "group", static_cast<int64_t>(c.getGroup()));
        return success();
      })
      .Case([&](nn::MaxPoolOp p) {
        onnx::NodeProto *n = simple("MaxPool");
        GraphBuilder::attr(n, "kernel_shape", p.getKernelShape());
        if (auto s = p.getStrides())
          GraphBuilder::attr(n, "strides", *s);
        if (auto pads = p.getPads())
          GraphBuilder::attr(n, "pads", *pads);
        return success();
      })
      .Case([&](nn::ConvInputGradOp g) {
        // The input gradient of a convolution is ONNX's ConvTranspose of
        // dy with the same weight; output_padding makes the size exact.
        auto dy = cast<RankedTensorType>(g.getDy().getType());
        auto w = cast<RankedTensorType>(g.getW().getType());
        auto out = g.getType();
        SmallVector<int64_t> strides(g.getStrides() ? *g.getStrides() : ArrayRef<int64_t>{1, 1});
        SmallVector<int64_t> dil(g.getDilations() ? *g.getDilations() : ArrayRef<int64_t>{1, 1});
        SmallVector<int64_t> pads(g.getPads() ? *g.getPads() : ArrayRef<int64_t>{0, 0, 0, 0});
        SmallVector<int64_t> outPad;
        for (int i = 0; i < 2; ++i)
          outPad.push_back(out.getDimSize(2 + i) -
                           (strides[i] * (dy.getDimSize(2 + i) - 1) +
                            (w.getDimSize(2 + i) - 1) * dil[i] + 1 - pads[i] - pads[i + 2]));
        onnx::NodeProto *n = simple("ConvTranspose");
        GraphBuilder::attr(n, "strides", ArrayRef<int64_t>(strides));
        GraphBuilder::attr(n, "dilations", ArrayRef<int64_t>(dil));
        GraphBuilder::attr(n, "pads", ArrayRef<int64_t>(pads));
        GraphBuilder::attr(n, "output_padding", ArrayRef<int64_t>(outPad));
        GraphBuilder::attr(n, "group", static_cast<int64_t>(g.getGroup()));
        return success();
      })
      .Case([&](nn::GlobalAveragePoolOp) {
        simple("GlobalAveragePool");
        return success();
      })
      .Case([&](nn::WhereOp) { simple("Where"); return success(); })
      .Case([&](nn::StopGradientOp) { simple("Identity"); return success(); })
      .Case([&](nn::BitcastOp c) -> LogicalResult {
        return c.emitError() << "cannot export nn.bitcast: ONNX BitCast needs opset 26 and the "
                                "exporter writes opset 17/20";
      })
      .Case([&](nn::CastOp c) -> LogicalResult {
        int32_t dt = onnxDataType(c.getType().getElementType());
        if (!dt)
          return c.emitError() << "cannot export a cast to "
                               << c.getType().getElementType();
        GraphBuilder::attr(simple("Cast"), "to", int64_t(dt));
        return success();
      })
      .Case([&](nn::AttentionOp a) -> LogicalResult {
        auto q = cast<RankedTensorType>(a.getQ().getType());
        auto k = cast<RankedTensorType>(a.getK().getType());
        float scale = a.getScale() ? a.getScale()->convertToFloat()
                                   : 1.0f / std::sqrt(static_cast<float>(
                                                q.getDimSize(3)));
        onnx::NodeProto *tn;
        std::string kt = b.node1("Transpose", {in(1)}, &tn);
        GraphBuilder::attr(tn, "perm", ArrayRef<int64_t>{0, 1, 3, 2});
        std::string s = b.node1(
            "Mul", {b.node1("MatMul", {in(0), kt}), b.constF32(scale)});
        if (a.getBias())
          s = b.node1("Add", {s, in(3)});
        if (a.getCausal()) {
          int64_t tq = q.getDimSize(2), tk = k.getDimSize(2);
          if (ShapedType::isDynamic(tq) || ShapedType::isDynamic(tk))
            return a.emitError() << "causal attention with dynamic lengths "
                                    "cannot be exported yet";
          onnx::NodeProto *mn;
          std::string mask = b.fresh("mask");
          mn = b.node("Constant", {}, {mask});
          onnx::AttributeProto *at = mn->add_attribute();
          at->set_name("value");
          at->set_type(onnx::AttributeProto::TENSOR);
          onnx::TensorProto *t = at->mutable_t();
          t->set_data_type(onnx::TensorProto::BOOL);
          t->add_dims(tq);
          t->add_dims(tk);
          std::string raw;
          for (int64_t i = 0; i < tq; ++i)
            for (int64_t j = 0; j < tk; ++j)
              raw.push_back(j <= i + (tk - tq) ? 1 : 0);
          t->set_raw_data(raw);
          s = b.node1("Where", {mask, s, b.constF32(-INFINITY)});
        }
        onnx::NodeProto *sn;
        std::string p = b.node1("Softmax", {s}, &sn);
        GraphBuilder::attr(sn, "axis", int64_t(-1));
        if (a.getZeroMaskedRows())
          p = b.node1("Where", {b.node1("IsNaN", {p}), b.constF32(0.0f), p});
        b.node("MatMul", {p, in(2)}, {out()});
        return success();
      })
      .Case([&](nn::OnnxNodeOp generic) { return exportGeneric(generic); })
      .Case([&](residual::RouteOp r) { return exportRoute(r, b); })
      .Case([&](residual::RouteSelectOp r) { return exportRouteSelect(r, b); })
      .Default([&](Operation *other) {
        return other->emitError()
               << "'" << other->getName()
               << "' cannot be exported to ONNX";
      });
}

LogicalResult Exporter::run(StringRef outputPath) {
  auto func = module.lookupSymbol<func::FuncOp>(opts.function);
  if (!func || func.isExternal())
    return module.emitError() << "no function '" << opts.function
                              << "' to export";
  if (!func.getBody().hasOneBlock())
    return func.emitError() << "only single-block functions can be exported";
  // Residual forms are exported as the nn ops they are defined by.
  if (failed(residual::decomposeStreamOps(func)))
    return failure();
  // Sinkhorn (mHC's mixing) has no ONNX operator: its rounds as nn ops.
  SmallVector<nn::SinkhornOp> sinkhorns;
  func.walk([&](nn::SinkhornOp op) { sinkhorns.push_back(op); });
  for (nn::SinkhornOp op : sinkhorns) {
    ImplicitLocOpBuilder b(op.getLoc(), op);
    op.replaceAllUsesWith(
        nn::decomposeSinkhorn(b, op.getZ(), static_cast<int64_t>(op.getIters())));
    op.erase();
  }
  if (!opts.parameterFile.empty()) {
    paramsPath = opts.parameterFile;
  } else if (auto file =
                 module->getAttrOfType<StringAttr>(nn::kParameterFileAttrName)) {
    llvm::SmallString<256> p(opts.parameterDir);
    llvm::sys::path::append(p, file.getValue());
    paramsPath = std::string(p);
  }

  // The opset: 17 (LayerNormalization), 20 when Gelu needs its own operator.
  int64_t opset = 17;
  func.walk([&](nn::GeluOp) { opset = 20; });
  model.set_ir_version(opset >= 20 ? 9 : 8);
  model.set_producer_name("rewire-export");
  auto *imp = model.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  llvm::StringSet<> domains;
  func.walk([&](nn::OnnxNodeOp op) {
    if (!op.getDomain().empty() && domains.insert(op.getDomain()).second) {
      auto *d = model.add_opset_import();
      d->set_domain(op.getDomain().str());
      d->set_version(static_cast<int64_t>(op.getOpset()));
    }
  });
  onnx::GraphProto &graph = *model.mutable_graph();
  graph.set_name(opts.function);
  g = std::make_unique<GraphBuilder>(graph, opset);

  Block &body = func.getBody().front();
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto nameAttr = func.getArgAttrOfType<StringAttr>(i, nn::kNameAttrName);
    std::string n = nameAttr ? nameAttr.str() : ("input_" + Twine(i)).str();
    g->bind(arg, n);
    if (failed(setValueInfo(graph.add_input(), n, arg.getType(), func.getLoc())))
      return failure();
  }
  for (Operation &op : body.without_terminator())
    if (failed(exportOp(&op)))
      return failure();
  Operation *ret = body.getTerminator();
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    auto nameAttr = func.getResultAttrOfType<StringAttr>(i, nn::kNameAttrName);
    std::string n = nameAttr ? nameAttr.str() : ("output_" + Twine(i)).str();
    // Graph outputs need their own name: route through Identity.
    g->node("Identity", {g->name(v)}, {n});
    if (failed(setValueInfo(graph.add_output(), n, v.getType(), ret->getLoc())))
      return failure();
  }

  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return module.emitError() << "the model is too large to serialize "
                                 "(protobuf's 2 GiB limit)";
  if (auto err = writeFileAtomically(outputPath.str(), {&bytes}))
    return module.emitError() << *err;
  return success();
}

LogicalResult rewire::onnx_export::exportOnnxFile(ModuleOp module,
                                                  StringRef outputPath,
                                                  const ExportOptions &opts) {
  return Exporter(module, opts).run(outputPath);
}
