//===- OnnxImporter.cpp - ONNX graph to nn dialect ------------------------===//
//
// The importer proper. Walks the (topologically ordered) ONNX graph once:
// initializers and Constant nodes become parameters (ml_program.global, values
// written to safetensors) or small nn.constant ops; every other node is first
// built in its faithful generic form (nn.onnx_node) and then legalized by the
// handler registered for (op type, opset) into nn ops whose result types are
// inferred. Unsupported ops are reported once, by name, domain, opset and
// node name, or kept generic with --allow-unsupported.
//
//===----------------------------------------------------------------------===//
#include "OnnxInternal.h"

#include "dialects/nn/NNParameters.h"
#include "rewire/Support/Printable.h"
#include "rewire/Support/Safetensors.h"
#include "rewire/Support/Shape.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <tuple>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

unsigned NodeContext::numInputs() const {
  return node.getInputs().size() + node.getAbsentInputs().size();
}

Value NodeContext::input(unsigned i) const {
  ArrayRef<int64_t> absent = node.getAbsentInputs();
  if (llvm::is_contained(absent, static_cast<int64_t>(i)))
    return {};
  unsigned before = llvm::count_if(absent, [&](int64_t a) { return a < i; });
  unsigned index = i - before;
  if (index >= node.getInputs().size())
    return {};
  return node.getInputs()[index];
}

FailureOr<Value> NodeContext::tensorInput(unsigned i) const {
  Value v = input(i);
  if (!v)
    return error() << "input #" << i << " is missing";
  if (!isa<RankedTensorType>(v.getType()))
    return error() << "input #" << i << " has no known tensor type (it is "
                   << "produced by an op Rewire kept in generic form)";
  return v;
}

FailureOr<SmallVector<Value>> NodeContext::tensorInputs() const {
  SmallVector<Value> xs;
  for (unsigned i = 0; i < numInputs(); ++i) {
    auto v = tensorInput(i);
    if (failed(v))
      return failure();
    xs.push_back(*v);
  }
  if (xs.empty())
    return error() << "needs at least one input";
  return xs;
}

std::optional<int64_t> NodeContext::intAttr(StringRef name) const {
  if (auto a = node.getAttrs().getAs<IntegerAttr>(name))
    return a.getInt();
  return std::nullopt;
}

std::optional<double> NodeContext::floatAttr(StringRef name) const {
  if (auto a = node.getAttrs().getAs<FloatAttr>(name))
    return a.getValueAsDouble();
  return std::nullopt;
}

std::optional<std::string> NodeContext::stringAttr(StringRef name) const {
  if (auto a = node.getAttrs().getAs<StringAttr>(name))
    return a.str();
  return std::nullopt;
}

std::optional<SmallVector<int64_t>>
NodeContext::intsAttr(StringRef name) const {
  if (auto a = node.getAttrs().getAs<DenseI64ArrayAttr>(name))
    return SmallVector<int64_t>(a.asArrayRef());
  return std::nullopt;
}

std::optional<SmallVector<double>>
NodeContext::floatsAttr(StringRef name) const {
  if (auto a = node.getAttrs().getAs<DenseF32ArrayAttr>(name))
    return SmallVector<double>(a.asArrayRef().begin(), a.asArrayRef().end());
  return std::nullopt;
}

std::optional<SmallVector<int64_t>>
NodeContext::constantInts(Value v) const {
  if (!v)
    return std::nullopt;
  auto cst = v.getDefiningOp<nn::ConstantOp>();
  if (!cst)
    return std::nullopt;
  auto ints = dyn_cast<DenseIntElementsAttr>(cst.getValue());
  if (!ints || ints.getElementType().isInteger(1))
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &x : ints.getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

std::optional<SmallVector<double>> NodeContext::constantFloats(Value v) const {
  auto cst = v ? v.getDefiningOp<nn::ConstantOp>() : nn::ConstantOp();
  auto dense = cst ? dyn_cast<DenseFPElementsAttr>(cst.getValue()) : DenseFPElementsAttr();
  if (!dense) {
    if (v && initializers)
      if (auto it = initializers->find(v); it != initializers->end())
        return it->second;
    return std::nullopt;
  }
  SmallVector<double> out;
  for (const APFloat &f : dense.getValues<APFloat>())
    out.push_back(f.convertToDouble());
  return out;
}

Value rewire::onnx_import::floatsConstant(NodeContext &c, RankedTensorType type,
                                          ArrayRef<double> values) {
  auto ft = cast<FloatType>(type.getElementType());
  SmallVector<APFloat> vals;
  vals.reserve(values.size());
  for (double x : values) {
    APFloat f(x);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    vals.push_back(f);
  }
  return nn::ConstantOp::create(c.b, c.loc(), type, DenseElementsAttr::get(type, vals));
}

Value rewire::onnx_import::i64Constant(NodeContext &c, ArrayRef<int64_t> shape,
                                       ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, c.b.getI64Type());
  return nn::ConstantOp::create(c.b, c.loc(), type, DenseIntElementsAttr::get(type, values));
}

Value rewire::onnx_import::splatConstant(NodeContext &c, RankedTensorType type, double v) {
  Type elt = type.getElementType();
  Attribute a;
  if (auto ft = dyn_cast<FloatType>(elt))
    a = FloatAttr::get(ft, v);
  else
    a = IntegerAttr::get(elt, APInt(elt.getIntOrFloatBitWidth(), static_cast<int64_t>(v),
                                    /*isSigned=*/true, /*implicitTrunc=*/true));
  return nn::ConstantOp::create(c.b, c.loc(), type, DenseElementsAttr::get(type, a));
}

FailureOr<SmallVector<int64_t>>
NodeContext::constantIntsInput(unsigned i, StringRef what) const {
  Value v = input(i);
  if (!v)
    return error() << "input #" << i << " (" << what << ") is missing";
  auto ints = constantInts(v);
  if (!ints)
    return error() << "input #" << i << " (" << what
                   << ") must be a constant integer tensor (computed shapes "
                      "are not supported; export with static shapes)";
  return *ints;
}

InFlightDiagnostic NodeContext::error() const {
  return emitError(loc()) << "'" << node.getOpType() << "' node '"
                          << node.getNodeName() << "': ";
}

Value rewire::onnx_import::makeI64Constant(OpBuilder &b, Location loc,
                                           ArrayRef<int64_t> values,
                                           bool scalar) {
  auto type = scalar ? RankedTensorType::get({}, b.getI64Type())
                     : RankedTensorType::get(
                           {static_cast<int64_t>(values.size())},
                           b.getI64Type());
  return nn::ConstantOp::create(b, loc, type,
                                DenseIntElementsAttr::get(type, values));
}

static ArrayRef<ArrayRef<Handler>> allTables() {
  static const ArrayRef<Handler> tables[] = {mathHandlers(), shapeHandlers(),
                                             convHandlers(), logicHandlers(),
                                             indexingHandlers(), activationHandlers(),
                                             lossHandlers(), quantizeHandlers(),
                                             einsumHandlers(), recurrentHandlers(),
                                             attentionHandlers(), signalHandlers(),
                                             trainingHandlers()};
  return tables;
}

std::vector<rewire::onnx_import::SupportedOp> rewire::onnx_import::supportedOps() {
  // Constant is imported before dispatch (a tensor, like an initializer).
  std::vector<SupportedOp> ops = {{"Constant", 1, 28, ""}};
  for (ArrayRef<Handler> table : allTables())
    for (const Handler &h : table)
      ops.push_back({h.opType, h.minOpset, h.maxOpset, h.domain});
  std::sort(ops.begin(), ops.end(), [](const SupportedOp &a, const SupportedOp &b) {
    return std::tie(a.opType, a.minOpset) < std::tie(b.opType, b.minOpset);
  });
  return ops;
}

std::optional<std::string> rewire::onnx_import::parseInputShape(StringRef spec,
                                                                std::vector<int64_t> &shape) {
  shape.clear();
  if (spec == "scalar")
    return std::nullopt;
  SmallVector<StringRef> parts;
  spec.split(parts, 'x');
  for (StringRef p : parts) {
    int64_t v;
    if (p.getAsInteger(10, v) || v < 0 || v > (int64_t(1) << 32))
      return "--input-shape expects sizes like 2x8 (or 'scalar' for rank 0), got '" +
             spec.str() + "'";
    shape.push_back(v);
  }
  return std::nullopt;
}

std::optional<std::string> rewire::onnx_import::parseDimBinding(StringRef spec,
                                                                ImportOptions &options) {
  auto [name, size] = spec.split('=');
  int64_t n;
  if (name.empty() || size.getAsInteger(10, n) || n < 0)
    return "--dim expects NAME=SIZE with SIZE >= 0, got '" + spec.str() + "'";
  options.dimBindings[name.str()] = n;
  return std::nullopt;
}

const Handler *rewire::onnx_import::findHandler(StringRef opType, int64_t opset,
                                                StringRef domain) {
  if (domain == "ai.onnx")
    domain = "";
  for (ArrayRef<Handler> table : allTables())
    for (const Handler &h : table)
      if (opType == h.opType && domain == h.domain && opset >= h.minOpset &&
          opset <= h.maxOpset)
        return &h;
  return nullptr;
}

bool rewire::onnx_import::hasAnyHandler(StringRef opType) {
  for (ArrayRef<Handler> table : allTables())
    for (const Handler &h : table)
      if (opType == h.opType && !*h.domain)
        return true;
  return false;
}

//===----------------------------------------------------------------------===//
// Importer
//===----------------------------------------------------------------------===//

namespace {

constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 28;
/// Integer initializers larger than this become parameters, not constants.
constexpr int64_t kMaxIntConstantElements = 4096;
/// Float initializers up to this size keep their values for the handlers
/// that need them as attributes (NodeContext::constantFloats).
constexpr int64_t kMaxRememberedInitializer = 64;

class Importer {
public:
  Importer(MLIRContext *ctx, const ImportOptions &opts, StringRef path,
           StringRef modelDir)
      : ctx(ctx), opts(opts), path(path.str()), modelDir(modelDir.str()),
        b(ctx), fileLoc(FileLineColLoc::get(ctx, path, 0, 0)) {}

  /// Reads the file at `path`, then imports it.
  ImportResult runOnFile();
  /// Imports the serialized model `bytes`.
  ImportResult runOnBytes(StringRef bytes);

private:
  LogicalResult importModel();
  ImportResult finish();
  LogicalResult importTensor(const onnx::TensorProto &tensor,
                             StringRef name, Location loc);
  FailureOr<Type> importType(const onnx::TypeProto &type, StringRef what);
  FailureOr<NamedAttribute> importAttribute(const onnx::AttributeProto &attr,
                                            Location loc);
  LogicalResult importNode(const onnx::NodeProto &node, int64_t index);
  LogicalResult checkAllSupported(const onnx::GraphProto &graph);
  /// The opset the model imports for `domain` (0 when it imports none).
  int64_t opsetOf(StringRef domain) const {
    if (domain.empty() || domain == "ai.onnx")
      return opset;
    int64_t v = 0;
    for (const auto &imp : model.opset_import())
      if (imp.domain() == domain)
        v = imp.version();
    return v;
  }
  LogicalResult define(StringRef name, Value v, Location loc);
  LogicalResult fail(ImportStatus s) {
    status = s;
    return failure();
  }

  MLIRContext *ctx;
  const ImportOptions &opts;
  std::string path;
  std::string modelDir;
  OpBuilder b;
  Location fileLoc;
  onnx::ModelProto model;
  ModuleOp module;
  std::optional<SymbolTable> symbols;
  llvm::StringMap<Value> values;
  /// Outputs of nodes Rewire does not compute (e.g. LayerNorm's Mean).
  llvm::StringMap<std::string> uncomputed;
  std::vector<SafetensorsEntry> params;
  NodeContext::InitializerValues initializerValues;
  int64_t opset = 0;
  ImportStatus status = ImportStatus::ok;
};

} // namespace

LogicalResult Importer::define(StringRef name, Value v, Location loc) {
  if (name.empty())
    return success();
  if (!values.try_emplace(name, v).second) {
    emitError(loc) << "value '" << name
                   << "' is defined twice (ONNX values are SSA: each name "
                      "must be produced once)";
    return fail(ImportStatus::invalid);
  }
  return success();
}

FailureOr<Type> Importer::importType(const onnx::TypeProto &type,
                                     StringRef what) {
  if (!type.has_tensor_type()) {
    emitError(fileLoc) << what << " is not a tensor (sequences, maps and "
                                  "optionals are not supported)";
    return failure();
  }
  const auto &tt = type.tensor_type();
  Type elt = elementTypeOf(ctx, tt.elem_type());
  if (!elt) {
    emitError(fileLoc) << what << " has ONNX data type " << tt.elem_type()
                       << ", which Rewire does not support";
    return failure();
  }
  if (!tt.has_shape()) {
    emitError(fileLoc) << what
                       << " has no shape; Rewire needs at least the rank "
                          "(re-export with shapes, or run ONNX shape "
                          "inference first)";
    return failure();
  }
  if (tt.shape().dim_size() > opts.limits.maxRank) {
    emitError(fileLoc) << what << " has rank " << tt.shape().dim_size()
                       << ", over the limit of " << opts.limits.maxRank
                       << " (--max-rank)";
    return failure();
  }
  SmallVector<int64_t> shape;
  for (const auto &dim : tt.shape().dim()) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0 ||
          dim.dim_value() > opts.limits.maxTensorElements) {
        emitError(fileLoc) << what << " has an invalid dimension "
                           << dim.dim_value();
        return failure();
      }
      shape.push_back(dim.dim_value());
    } else if (dim.has_dim_param() &&
               opts.dimBindings.count(dim.dim_param())) {
      shape.push_back(opts.dimBindings.lookup(dim.dim_param()));
    } else {
      // Symbolic (dim_param) or unknown: dynamic unless bound with --dim.
      shape.push_back(ShapedType::kDynamic);
    }
  }
  return Type(RankedTensorType::get(shape, elt));
}

LogicalResult Importer::importTensor(const onnx::TensorProto &tensor,
                                     StringRef name, Location loc) {
  auto decoded = decodeTensor(tensor, opts.limits, modelDir, loc);
  if (failed(decoded))
    return fail(ImportStatus::invalid);
  Type elt = decoded->type.getElementType();
  int64_t numel = decoded->type.getNumElements();
  bool parameter = isa<FloatType>(elt) ? numel > opts.maxConstantElements
                                       : numel > kMaxIntConstantElements;
  Value v;
  if (parameter) {
    OpBuilder::InsertionGuard guard(b);
    auto global = nn::createParameter(*symbols, loc, name, decoded->type,
                                      ml_program::ExternAttr::get(
                                          ctx, decoded->type));
    if (failed(global))
      return fail(ImportStatus::invalid);
    v = nn::loadParameter(b, loc, *global);
    if (numel <= kMaxRememberedInitializer && isa<FloatType>(elt)) {
      DenseElementsAttr values = toElementsAttr(*decoded);
      SmallVector<double> floats;
      for (const APFloat &f : values.getValues<APFloat>())
        floats.push_back(f.convertToDouble());
      initializerValues[v] = std::move(floats);
    }
    params.push_back({name.str(), safetensorsDtypeOf(tensor.data_type()),
                      std::vector<int64_t>(decoded->type.getShape().begin(),
                                           decoded->type.getShape().end()),
                      std::move(decoded->bytes)});
  } else {
    v = nn::ConstantOp::create(b, loc, decoded->type,
                               toElementsAttr(*decoded));
  }
  return define(name, v, loc);
}

FailureOr<NamedAttribute>
Importer::importAttribute(const onnx::AttributeProto &attr, Location loc) {
  StringAttr name = b.getStringAttr(attr.name());
  switch (attr.type()) {
  case onnx::AttributeProto::FLOAT:
    return NamedAttribute(name, b.getF32FloatAttr(attr.f()));
  case onnx::AttributeProto::INT:
    return NamedAttribute(name, b.getI64IntegerAttr(attr.i()));
  case onnx::AttributeProto::STRING:
    return NamedAttribute(name, b.getStringAttr(attr.s()));
  case onnx::AttributeProto::INTS:
    return NamedAttribute(
        name, b.getDenseI64ArrayAttr(SmallVector<int64_t>(
                  attr.ints().begin(), attr.ints().end())));
  case onnx::AttributeProto::FLOATS:
    return NamedAttribute(
        name, b.getDenseF32ArrayAttr(SmallVector<float>(
                  attr.floats().begin(), attr.floats().end())));
  case onnx::AttributeProto::STRINGS: {
    SmallVector<Attribute> strs;
    for (const std::string &s : attr.strings())
      strs.push_back(b.getStringAttr(s));
    return NamedAttribute(name, b.getArrayAttr(strs));
  }
  case onnx::AttributeProto::TENSOR: {
    auto decoded = decodeTensor(attr.t(), opts.limits, modelDir, loc);
    if (failed(decoded))
      return failure();
    return NamedAttribute(name, toElementsAttr(*decoded));
  }
  default:
    emitError(loc) << "attribute '" << attr.name() << "' has type "
                   << onnx::AttributeProto::AttributeType_Name(attr.type())
                   << ", which Rewire does not support (subgraphs, sparse "
                      "tensors and type protos are not)";
    return failure();
  }
}

LogicalResult Importer::importNode(const onnx::NodeProto &node,
                                   int64_t index) {
  std::string nodeName = node.has_name() && !node.name().empty()
                             ? node.name()
                             : node.op_type() + "#" + std::to_string(index);
  Location loc = NameLoc::get(b.getStringAttr(nodeName), fileLoc);
  StringRef domain = node.domain();
  bool defaultDomain = domain.empty() || domain == "ai.onnx";

  // Constant nodes are tensors, like initializers (they can be large).
  if (defaultDomain && node.op_type() == "Constant") {
    if (node.output_size() != 1 || node.attribute_size() != 1) {
      emitError(loc) << "'Constant' node '" << nodeName
                     << "' must have one output and one attribute";
      return fail(ImportStatus::invalid);
    }
    const auto &attr = node.attribute(0);
    if (attr.type() == onnx::AttributeProto::TENSOR)
      return importTensor(attr.t(), node.output(0), loc);
    onnx::TensorProto t;
    if (attr.name() == "value_float") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_float_data(attr.f());
    } else if (attr.name() == "value_int") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_int64_data(attr.i());
    } else if (attr.name() == "value_ints") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_dims(attr.ints_size());
      for (int64_t v : attr.ints())
        t.add_int64_data(v);
    } else if (attr.name() == "value_floats") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(attr.floats_size());
      for (float v : attr.floats())
        t.add_float_data(v);
    } else {
      emitError(loc) << "'Constant' node '" << nodeName << "': attribute '"
                     << attr.name() << "' is not supported";
      return fail(ImportStatus::unsupported);
    }
    return importTensor(t, node.output(0), loc);
  }

  // torch.onnx.export stores initializers of equal value once and aliases
  // the others with Identity nodes named after them (fresh LayerNorms are
  // all ones): PyTorch trains those parameters apart, so they become
  // parameters of their own here (same values; inference is unchanged).
  if (defaultDomain && node.op_type() == "Identity" && node.input_size() == 1 &&
      node.output_size() == 1 && !node.output(0).empty() &&
      !symbols->lookup(node.output(0))) {
    auto it = values.find(node.input(0));
    auto entry = llvm::find_if(params, [&](const SafetensorsEntry &e) { return e.name == node.input(0); });
    if (it != values.end() && entry != params.end() &&
        it->second.getDefiningOp<ml_program::GlobalLoadConstOp>()) {
      auto type = cast<RankedTensorType>(it->second.getType());
      OpBuilder::InsertionGuard guard(b);
      auto global = nn::createParameter(*symbols, loc, node.output(0), type,
                                        ml_program::ExternAttr::get(ctx, type));
      if (failed(global))
        return fail(ImportStatus::invalid);
      SafetensorsEntry copy = *entry;
      copy.name = node.output(0);
      params.push_back(std::move(copy));
      return define(node.output(0), nn::loadParameter(b, loc, *global), loc);
    }
  }

  // Stage 1: the faithful generic form.
  SmallVector<Value> operands;
  SmallVector<int64_t> absent;
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string &in = node.input(i);
    if (in.empty()) {
      absent.push_back(i);
      continue;
    }
    auto it = values.find(in);
    if (it == values.end()) {
      auto why = uncomputed.find(in);
      if (why != uncomputed.end())
        emitError(loc) << "node '" << nodeName << "' uses '" << in << "', "
                       << why->second;
      else
        emitError(loc) << "node '" << nodeName << "' uses '" << in
                       << "' before it is defined (the graph is not "
                          "topologically sorted, has a cycle, or the value "
                          "does not exist)";
      return fail(ImportStatus::invalid);
    }
    operands.push_back(it->second);
  }
  SmallVector<NamedAttribute> attrs;
  llvm::StringSet<> attrNames;
  for (const auto &attr : node.attribute()) {
    if (!attrNames.insert(attr.name()).second) {
      emitError(loc) << "node '" << nodeName << "' has attribute '"
                     << attr.name() << "' twice";
      return fail(ImportStatus::invalid);
    }
    auto converted = importAttribute(attr, loc);
    if (failed(converted))
      return fail(ImportStatus::unsupported);
    attrs.push_back(*converted);
  }
  int64_t nodeOpset = opsetOf(domain);
  SmallVector<Type> resultTypes(node.output_size(), b.getNoneType());
  auto generic = nn::OnnxNodeOp::create(
      b, loc, resultTypes, operands, node.op_type(), domain,
      static_cast<uint64_t>(nodeOpset), nodeName,
      b.getDictionaryAttr(attrs), b.getDenseI64ArrayAttr(absent));

  // Stage 2: legalization by the (op type, opset) handler.
  const Handler *handler = findHandler(node.op_type(), defaultDomain ? opset : nodeOpset, domain);
  // With --allow-unsupported, consumers of generic ops stay generic too.
  bool typedInputs = llvm::none_of(
      operands, [](Value v) { return isa<NoneType>(v.getType()); });
  if (!handler || (opts.allowUnsupported && !typedInputs)) {
    if (!opts.allowUnsupported) {
      auto diag = emitError(loc)
                  << "unsupported op '" << node.op_type() << "' (domain '"
                  << (domain.empty() ? "ai.onnx" : domain) << "', opset "
                  << nodeOpset << ") at node '" << nodeName << "'";
      if (defaultDomain && hasAnyHandler(node.op_type()))
        diag << ": Rewire supports it at other opsets";
      diag << "; pass --allow-unsupported to keep it as a generic op";
      return fail(ImportStatus::unsupported);
    }
    for (int i = 0; i < node.output_size(); ++i)
      if (failed(define(node.output(i), generic.getResult(i), loc)))
        return failure();
    return success();
  }
  NodeContext context(generic, b, &initializerValues);
  HandlerResult results = handler->fn(context);
  if (failed(results))
    return fail(ImportStatus::invalid);
  // Shapes a handler inferred from attributes (pads, sizes, repeats) are as
  // untrusted as the file's own tensors: the same rank and element limits
  // hold for them, so no later stage computes a byte size that wraps.
  for (Value r : *results) {
    auto type = r ? dyn_cast<RankedTensorType>(r.getType()) : RankedTensorType();
    if (!type)
      continue;
    if (type.getRank() > opts.limits.maxRank) {
      emitError(loc) << "'" << node.op_type() << "' node '" << nodeName
                     << "' produces a tensor of rank " << type.getRank()
                     << ", over the limit of " << opts.limits.maxRank;
      return fail(ImportStatus::invalid);
    }
    std::vector<int64_t> dims;
    for (int64_t d : type.getShape())
      if (!ShapedType::isDynamic(d))
        dims.push_back(d);
    if (!checkedNumElements(dims, opts.limits.maxTensorElements)) {
      auto diag = emitError(loc)
                  << "'" << node.op_type() << "' node '" << nodeName
                  << "' produces a tensor of shape ";
      llvm::interleave(type.getShape(), diag, [&](int64_t d) {
        if (ShapedType::isDynamic(d)) diag << "?"; else diag << d;
      }, "x");
      diag << ", over the limit of " << opts.limits.maxTensorElements
           << " elements (check its attributes: pads, sizes, shapes)";
      return fail(ImportStatus::invalid);
    }
  }
  for (int i = 0; i < node.output_size(); ++i) {
    Value r = i < static_cast<int>(results->size()) ? (*results)[i] : Value();
    if (!r) {
      if (!node.output(i).empty())
        uncomputed[node.output(i)] =
            "output #" + std::to_string(i) + " of '" + node.op_type() +
            "' node '" + nodeName + "', which Rewire does not compute";
      continue;
    }
    if (failed(define(node.output(i), r, loc)))
      return failure();
  }
  generic.erase();
  return success();
}

/// Lists every op of the graph that no handler legalizes (op, domain, opset,
/// how many nodes, the first one) in one error, so that a user learns the
/// whole gap at once rather than one op per attempt.
LogicalResult Importer::checkAllSupported(const onnx::GraphProto &graph) {
  struct Missing {
    std::string opType, domain;
    int64_t opset;
    int64_t count = 0;
    std::string firstNode;
  };
  std::vector<Missing> missing;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    StringRef domain = node.domain();
    bool defaultDomain = domain.empty() || domain == "ai.onnx";
    int64_t nodeOpset = opsetOf(domain);
    if ((defaultDomain && node.op_type() == "Constant") ||
        findHandler(node.op_type(), defaultDomain ? opset : nodeOpset, domain))
      continue;
    std::string dom = defaultDomain ? "ai.onnx" : domain.str();
    auto it = llvm::find_if(missing, [&](const Missing &m) {
      return m.opType == node.op_type() && m.domain == dom;
    });
    if (it == missing.end()) {
      missing.push_back({node.op_type(), dom, nodeOpset, 0,
                         node.name().empty() ? node.op_type() + "#" + std::to_string(i)
                                             : node.name()});
      it = std::prev(missing.end());
    }
    ++it->count;
  }
  if (missing.empty())
    return success();
  auto diag = emitError(fileLoc);
  diag << missing.size() << " unsupported op" << (missing.size() == 1 ? "" : "s")
       << " in the model (each listed below); pass --allow-unsupported to keep "
          "them as generic ops (rewire-import --list-ops prints what is supported)";
  for (const Missing &m : missing) {
    auto &note = diag.attachNote(fileLoc);
    note << "'" << printable(m.opType) << "' (domain '" << printable(m.domain)
         << "', opset " << m.opset << "): " << m.count << " node"
         << (m.count == 1 ? "" : "s") << ", first '" << printable(m.firstNode) << "'";
    if (m.domain == "ai.onnx" && hasAnyHandler(m.opType))
      note << " (Rewire supports it at other opsets)";
  }
  return fail(ImportStatus::unsupported);
}

LogicalResult Importer::importModel() {
  for (const auto &imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      opset = imp.version();
  // A graph of only other domains' ops (ai.onnx.preview.training) needs no
  // default opset.
  bool usesDefault = llvm::any_of(model.graph().node(), [](const onnx::NodeProto &n) {
    return n.domain().empty() || n.domain() == "ai.onnx";
  });
  if (opset == 0 && usesDefault) {
    emitError(fileLoc) << "the model does not import the default ONNX "
                          "domain (opset_import has no entry for 'ai.onnx')";
    return fail(ImportStatus::invalid);
  }
  if (opset != 0 && (opset < kMinOpset || opset > kMaxOpset)) {
    emitError(fileLoc) << "the model uses ONNX opset " << opset
                       << "; Rewire supports opsets " << kMinOpset << " to "
                       << kMaxOpset << " (re-export with opset_version="
                       << kMaxOpset << ")";
    return fail(ImportStatus::unsupported);
  }
  const onnx::GraphProto &graph = model.graph();
  if (graph.node_size() > opts.limits.maxNodes) {
    emitError(fileLoc) << "the graph has " << graph.node_size()
                       << " nodes, over the limit of " << opts.limits.maxNodes
                       << " (--max-nodes)";
    return fail(ImportStatus::invalid);
  }

  if (!opts.allowUnsupported && failed(checkAllSupported(graph)))
    return failure();

  module = ModuleOp::create(fileLoc);
  symbols.emplace(module);
  if (!opts.parameterFileRef.empty())
    module->setAttr(nn::kParameterFileAttrName,
                    b.getStringAttr(opts.parameterFileRef));

  // Function signature: graph inputs that are not initializers.
  llvm::StringSet<> initNames;
  for (const auto &init : graph.initializer())
    initNames.insert(init.name());
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const auto &in : graph.input()) {
    if (initNames.contains(in.name()))
      continue;
    auto type = importType(in.type(), "graph input '" + in.name() + "'");
    if (failed(type))
      return fail(ImportStatus::invalid);
    if (!opts.inputShapes.empty()) {
      // Bind the symbolic dims to the shape the model is called with.
      size_t i = argTypes.size();
      auto rt = cast<RankedTensorType>(*type);
      if (i >= opts.inputShapes.size()) {
        emitError(fileLoc) << "the model has more than " << opts.inputShapes.size()
                           << " inputs; give a shape for each (--input-shape)";
        return fail(ImportStatus::inputMismatch);
      }
      const std::vector<int64_t> &want = opts.inputShapes[i];
      if (static_cast<int64_t>(want.size()) != rt.getRank()) {
        emitError(fileLoc) << "graph input '" << printable(in.name()) << "' has rank "
                           << rt.getRank() << ", the shape given for it has rank " << want.size();
        return fail(ImportStatus::inputMismatch);
      }
      SmallVector<int64_t> shape(rt.getShape());
      for (int64_t d = 0; d < rt.getRank(); ++d) {
        if (ShapedType::isDynamic(shape[d])) {
          shape[d] = want[d];
        } else if (shape[d] != want[d]) {
          emitError(fileLoc) << "graph input '" << printable(in.name()) << "' has size "
                             << shape[d] << " in dim " << d << ", the shape given for it "
                             << want[d];
          return fail(ImportStatus::inputMismatch);
        }
      }
      type = Type(RankedTensorType::get(shape, rt.getElementType()));
    }
    argTypes.push_back(*type);
    argNames.push_back(in.name());
  }
  if (!opts.inputShapes.empty() && opts.inputShapes.size() != argTypes.size()) {
    emitError(fileLoc) << opts.inputShapes.size() << " input shapes given, the model has "
                       << argTypes.size() << " inputs";
    return fail(ImportStatus::inputMismatch);
  }
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, fileLoc, "forward",
                                   b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, nn::kNameAttrName, b.getStringAttr(name));
    if (failed(define(name, entry->getArgument(i), fileLoc)))
      return failure();
  }
  for (const auto &init : graph.initializer()) {
    Location loc = NameLoc::get(b.getStringAttr(init.name()), fileLoc);
    if (failed(importTensor(init, init.name(), loc)))
      return failure();
  }
  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(importNode(graph.node(i), i)))
      return failure();

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) {
      emitError(fileLoc) << "graph output '" << out.name()
                         << "' is never computed";
      return fail(ImportStatus::invalid);
    }
    results.push_back(it->second);
    resultTypes.push_back(it->second.getType());
  }
  func::ReturnOp::create(b, fileLoc, results);
  values.clear();
  // Now that the outputs are used: drop what folding left unused (the constants of shape computations).
  SmallVector<Operation *> ops;
  for (Operation &op : *entry)
    ops.push_back(&op);
  SmallVector<StringAttr> remembered;
  for (auto &[v, floats] : initializerValues)
    if (auto load = v.getDefiningOp<ml_program::GlobalLoadConstOp>())
      remembered.push_back(load.getGlobalAttr().getLeafReference());
  initializerValues.clear();
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  // A small initializer read only as an attribute (Resize's scales) is no
  // parameter of the model.
  for (StringAttr name : remembered) {
    Operation *global = symbols->lookup(name);
    if (!global || !SymbolTable::symbolKnownUseEmpty(global, module))
      continue;
    llvm::erase_if(params, [&](const SafetensorsEntry &e) { return e.name == name.getValue(); });
    symbols->erase(global);
  }
  // Canonical order: parameter loads first (in initializer order), then the
  // graph. Export writes the same order back, so import -> export -> import
  // is a fixed point.
  SmallVector<Operation *> loads;
  for (Operation &op : *entry)
    if (isa<ml_program::GlobalLoadConstOp>(op))
      loads.push_back(&op);
  for (Operation *op : llvm::reverse(loads))
    op->moveBefore(&entry->front());

  func.setType(b.getFunctionType(argTypes, resultTypes));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, nn::kNameAttrName, b.getStringAttr(out.name()));

  if (failed(verify(module))) {
    emitError(fileLoc) << "the imported module does not verify (see the "
                          "errors above)";
    return fail(ImportStatus::invalid);
  }
  if (!opts.parameterFile.empty()) {
    std::map<std::string, std::string> meta = {
        {"source", path}, {"producer", "rewire-import"}};
    if (auto err = writeSafetensors(opts.parameterFile, params, meta)) {
      emitError(fileLoc) << "cannot write parameters: " << *err;
      return fail(ImportStatus::io);
    }
  }
  return success();
}

ImportResult Importer::runOnFile() {
  if (failed(readModel(path, opts.limits, fileLoc, model, status))) {
    ImportResult result;
    result.status = status;
    return result;
  }
  return finish();
}

ImportResult Importer::runOnBytes(StringRef bytes) {
  if (failed(parseModel(bytes, path, opts.limits, fileLoc, model, status))) {
    ImportResult result;
    result.status = status;
    return result;
  }
  return finish();
}

ImportResult Importer::finish() {
  ImportResult result;
  if (failed(importModel())) {
    if (module)
      module->erase();
    result.status = status == ImportStatus::ok ? ImportStatus::invalid
                                               : status;
    return result;
  }
  result.module = module;
  return result;
}

ImportResult rewire::onnx_import::importOnnxFile(StringRef path,
                                                 MLIRContext *context,
                                                 const ImportOptions &options) {
  context->loadDialect<nn::NNDialect, func::FuncDialect,
                       ml_program::MLProgramDialect>();
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  return Importer(context, options, path, dir.empty() ? "." : dir.str())
      .runOnFile();
}

ImportResult rewire::onnx_import::importOnnxBuffer(StringRef bytes,
                                                   StringRef name,
                                                   StringRef modelDir,
                                                   MLIRContext *context,
                                                   const ImportOptions &options) {
  context->loadDialect<nn::NNDialect, func::FuncDialect,
                       ml_program::MLProgramDialect>();
  return Importer(context, options, name, modelDir).runOnBytes(bytes);
}
