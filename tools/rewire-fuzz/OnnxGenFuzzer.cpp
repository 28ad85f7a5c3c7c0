//===- OnnxGenFuzzer.cpp - libFuzzer target: generated ONNX graphs --------===//
//
// Structure-aware fuzzing of the whole compiler: the fuzz input drives a
// generator (FuzzedDataProvider) that builds a well-formed ONNX model of 1-8
// nodes over the ops the importer supports (rewire-import --list-ops), with random attributes, shapes
// and constant values (extreme integers included: INT64_MIN, -1, 2^31,
// 2^62, ...). A byte fuzzer rarely gets past protobuf and the graph checks;
// these models do, so the importer's handlers and folds, shape inference,
// the residual rewrite and the lowerings to linalg and the LLVM dialect all
// see hostile values. Any crash, sanitizer report, or imported module that
// does not verify is a bug; errors are expected.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"
#include "rewire/Import/OnnxImport.h"
#include "rewire/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "onnx/onnx.pb.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

/// A value the next node may read.
struct Value {
  std::string name;
  bool integer; ///< int64 (else float)
};

class Generator {
public:
  explicit Generator(FuzzedDataProvider &fdp) : fdp(fdp) {}

  std::string build() {
    onnx::ModelProto model;
    model.set_ir_version(8);
    const int opsets[] = {11, 13, 17, 18, 20};
    opset = fdp.PickValueInArray(opsets);
    model.add_opset_import()->set_version(opset);
    graph = model.mutable_graph();
    graph->set_name("fuzz");
    // One to three graph inputs of a small float shape (4-D for Conv/pools).
    int inputs = fdp.ConsumeIntegralInRange(1, 3);
    for (int i = 0; i < inputs; ++i)
      addInput("in" + std::to_string(i), shape());
    int nodes = fdp.ConsumeIntegralInRange(1, 8);
    for (int i = 0; i < nodes && fdp.remaining_bytes() > 0; ++i)
      addNode(i);
    // The last value is an output; sometimes another one too.
    addOutput(pool.back());
    if (pool.size() > 2 && fdp.ConsumeBool())
      addOutput(pool[fdp.ConsumeIntegralInRange<size_t>(0, pool.size() - 2)]);
    std::string bytes;
    model.SerializeToString(&bytes);
    return bytes;
  }

private:
  FuzzedDataProvider &fdp;
  onnx::GraphProto *graph = nullptr;
  int64_t opset = 17;
  std::vector<Value> pool;
  int constants = 0;

  /// Mostly small sizes and values, sometimes the extremes.
  int64_t anInt(int64_t lo = -3, int64_t hi = 6) {
    static const int64_t extremes[] = {
        std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min() + 1,
        -(int64_t(1) << 31), -1, 0, 1, (int64_t(1) << 31) - 1, int64_t(1) << 31,
        int64_t(1) << 32, int64_t(1) << 62, std::numeric_limits<int64_t>::max(), 30000};
    if (fdp.ConsumeIntegralInRange(0, 9) == 0)
      return fdp.PickValueInArray(extremes);
    return fdp.ConsumeIntegralInRange(lo, hi);
  }

  std::vector<int64_t> shape() {
    std::vector<int64_t> s(fdp.ConsumeIntegralInRange(0, 4));
    for (int64_t &d : s)
      d = fdp.ConsumeIntegralInRange(1, 4);
    return s;
  }

  void addInput(const std::string &name, const std::vector<int64_t> &dims) {
    auto *in = graph->add_input();
    in->set_name(name);
    auto *t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(TensorProto::FLOAT);
    for (int64_t d : dims)
      t->mutable_shape()->add_dim()->set_dim_value(d);
    pool.push_back({name, false});
  }

  void addOutput(const Value &v) {
    for (const auto &o : graph->output())
      if (o.name() == v.name)
        return;
    auto *out = graph->add_output();
    out->set_name(v.name);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(v.integer ? TensorProto::INT64
                                                                         : TensorProto::FLOAT);
  }

  /// An initializer: int64 (indices, axes, shapes) or float values.
  std::string constant(bool integer, std::vector<int64_t> dims) {
    std::string name = "c" + std::to_string(constants++);
    TensorProto *t = graph->add_initializer();
    t->set_name(name);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    t->set_data_type(integer ? TensorProto::INT64 : TensorProto::FLOAT);
    for (int64_t i = 0; i < n; ++i) {
      if (integer)
        t->add_int64_data(anInt());
      else
        t->add_float_data(fdp.ConsumeFloatingPointInRange<float>(-4.0f, 4.0f));
    }
    return name;
  }
  std::string intVector(int64_t maxLen = 4) {
    return constant(true, {fdp.ConsumeIntegralInRange<int64_t>(1, maxLen)});
  }

  const Value &pick(bool wantInteger = false) {
    std::vector<size_t> fit;
    for (size_t i = 0; i < pool.size(); ++i)
      if (pool[i].integer == wantInteger)
        fit.push_back(i);
    if (fit.empty())
      return pool[fdp.ConsumeIntegralInRange<size_t>(0, pool.size() - 1)];
    return pool[fit[fdp.ConsumeIntegralInRange<size_t>(0, fit.size() - 1)]];
  }

  void intAttr(NodeProto *n, const char *name, int64_t v) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INT);
    a->set_i(v);
  }
  void intsAttr(NodeProto *n, const char *name, size_t count) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INTS);
    for (size_t i = 0; i < count; ++i)
      a->add_ints(anInt(0, 3));
  }
  void floatAttr(NodeProto *n, const char *name) {
    auto *a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::FLOAT);
    a->set_f(fdp.ConsumeFloatingPoint<float>());
  }

  void addNode(int index) {
    static const char *ops[] = {
        "Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Gemm", "Relu", "Sigmoid", "Tanh", "Erf",
        "Exp", "Neg", "Sqrt", "Gelu", "Softmax", "LayerNormalization", "BatchNormalization",
        "Conv", "MaxPool", "GlobalAveragePool", "Reshape", "Transpose", "Flatten", "Squeeze",
        "Unsqueeze", "Concat", "Split", "Slice", "Gather", "Shape", "Cast", "Where",
        "ReduceMean", "ReduceSum", "Identity", "Dropout", "Reciprocal"};
    std::string op = fdp.PickValueInArray(ops);
    NodeProto *n = graph->add_node();
    n->set_op_type(op);
    n->set_name("n" + std::to_string(index));
    std::string out = "v" + std::to_string(index);
    bool integerOut = false;
    auto in = [&](const std::string &name) { n->add_input(name); };
    const Value &x = pick(op == "Gather" ? false : fdp.ConsumeIntegralInRange(0, 5) == 0);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") {
      in(x.name);
      // The other operand: a value of the pool or a constant (of an int64
      // Div by zero or INT64_MIN / -1 folded at import, among others).
      if (fdp.ConsumeBool())
        in(pick(x.integer).name);
      else
        in(constant(x.integer, shape()));
      integerOut = x.integer;
    } else if (op == "MatMul") {
      in(x.name);
      in(fdp.ConsumeBool() ? pick().name : constant(false, shape()));
    } else if (op == "Gemm") {
      in(x.name);
      in(constant(false, {fdp.ConsumeIntegralInRange<int64_t>(1, 4),
                          fdp.ConsumeIntegralInRange<int64_t>(1, 4)}));
      if (fdp.ConsumeBool())
        in(constant(false, shape()));
      intAttr(n, "transA", anInt(0, 1));
      intAttr(n, "transB", anInt(0, 1));
      if (fdp.ConsumeBool())
        floatAttr(n, "alpha");
    } else if (op == "Softmax" || op == "Flatten" || op == "Concat" ||
               op == "LayerNormalization") {
      in(x.name);
      if (op == "Concat")
        in(pick(x.integer).name);
      if (op == "LayerNormalization") {
        in(constant(false, {fdp.ConsumeIntegralInRange<int64_t>(1, 4)}));
        if (fdp.ConsumeBool())
          floatAttr(n, "epsilon");
      }
      intAttr(n, "axis", anInt());
      integerOut = op == "Concat" && x.integer;
    } else if (op == "BatchNormalization") {
      in(x.name);
      int64_t c = fdp.ConsumeIntegralInRange<int64_t>(1, 4);
      for (int i = 0; i < 4; ++i)
        in(constant(false, {c}));
    } else if (op == "Conv" || op == "MaxPool") {
      in(x.name);
      if (op == "Conv") {
        in(constant(false, {fdp.ConsumeIntegralInRange<int64_t>(1, 3),
                            fdp.ConsumeIntegralInRange<int64_t>(1, 4),
                            fdp.ConsumeIntegralInRange<int64_t>(1, 3),
                            fdp.ConsumeIntegralInRange<int64_t>(1, 3)}));
        if (fdp.ConsumeBool())
          intAttr(n, "group", anInt(1, 2));
      } else {
        intsAttr(n, "kernel_shape", 2);
      }
      if (fdp.ConsumeBool())
        intsAttr(n, "pads", 4);
      if (fdp.ConsumeBool())
        intsAttr(n, "strides", 2);
      if (fdp.ConsumeBool())
        intsAttr(n, "dilations", 2);
    } else if (op == "Reshape") {
      in(x.name);
      in(intVector());
      integerOut = x.integer;
    } else if (op == "Transpose") {
      in(x.name);
      if (fdp.ConsumeBool())
        intsAttr(n, "perm", fdp.ConsumeIntegralInRange(0, 4));
      integerOut = x.integer;
    } else if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceMean" || op == "ReduceSum") {
      in(x.name);
      bool axesInput = op == "ReduceMean" ? opset >= 18 : opset >= 13;
      if (axesInput && fdp.ConsumeBool())
        in(intVector(3));
      else if (!axesInput)
        intsAttr(n, "axes", fdp.ConsumeIntegralInRange(1, 3));
      if (op.rfind("Reduce", 0) == 0 && fdp.ConsumeBool())
        intAttr(n, "keepdims", anInt(0, 1));
      integerOut = x.integer && op.rfind("Reduce", 0) != 0;
    } else if (op == "Split") {
      in(x.name);
      if (opset >= 18 && fdp.ConsumeBool())
        intAttr(n, "num_outputs", anInt(1, 3));
      else if (fdp.ConsumeBool())
        in(intVector(3));
      intAttr(n, "axis", anInt());
      n->add_output(out + "b");
      integerOut = x.integer;
    } else if (op == "Slice") {
      in(x.name);
      in(intVector(3));
      in(intVector(3));
      if (fdp.ConsumeBool())
        in(intVector(3));
      if (fdp.ConsumeBool())
        in(intVector(3));
      integerOut = x.integer;
    } else if (op == "Gather") {
      in(x.name);
      std::vector<int64_t> dims = shape();
      in(constant(true, dims));
      intAttr(n, "axis", anInt());
    } else if (op == "Shape") {
      in(x.name);
      if (fdp.ConsumeBool())
        intAttr(n, "start", anInt());
      if (fdp.ConsumeBool())
        intAttr(n, "end", anInt());
      integerOut = true;
    } else if (op == "Cast") {
      in(x.name);
      const int64_t to[] = {TensorProto::FLOAT, TensorProto::INT64, TensorProto::INT32,
                            TensorProto::BOOL, TensorProto::DOUBLE};
      int64_t t = fdp.PickValueInArray(to);
      intAttr(n, "to", t);
      integerOut = t == TensorProto::INT64;
    } else if (op == "Where") {
      TensorProto *c = graph->add_initializer();
      std::string name = "c" + std::to_string(constants++);
      c->set_name(name);
      c->set_data_type(TensorProto::BOOL);
      int64_t len = fdp.ConsumeIntegralInRange<int64_t>(1, 4);
      c->add_dims(len);
      for (int64_t i = 0; i < len; ++i)
        c->add_int32_data(fdp.ConsumeBool());
      in(name);
      in(x.name);
      in(pick(x.integer).name);
      integerOut = x.integer;
    } else { // unary: Relu ... Identity, Dropout, Gelu, GlobalAveragePool
      in(x.name);
      if (op == "Gelu" && fdp.ConsumeBool()) {
        auto *a = n->add_attribute();
        a->set_name("approximate");
        a->set_type(AttributeProto::STRING);
        a->set_s(fdp.ConsumeBool() ? "tanh" : "none");
      }
      integerOut = x.integer && (op == "Identity" || op == "Neg" || op == "Dropout");
    }
    n->add_output(out);
    if (op == "Split")
      std::swap(*n->mutable_output(0), *n->mutable_output(1));
    pool.push_back({out, integerOut});
  }
};

/// How far the generated models get (REWIRE_FUZZ_STATS=1 prints it at
/// exit): the generator is only useful while most reach the lowerings.
struct Reach {
  long generated = 0, imported = 0, linalg = 0, llvm = 0;
  ~Reach() {
    if (std::getenv("REWIRE_FUZZ_STATS"))
      std::fprintf(stderr, "onnxgen: %ld generated, %ld imported, %ld lowered to linalg, %ld to "
                           "the LLVM dialect\n", generated, imported, linalg, llvm);
  }
} reach;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::DialectRegistry *registry = [] {
    auto *r = new mlir::DialectRegistry();
    rewire::registerRewireDialects(*r);
    rewire::registerRewirePasses();
    return r;
  }();
  FuzzedDataProvider fdp(data, size);
  std::string bytes = Generator(fdp).build();
  ++reach.generated;

  mlir::MLIRContext context(*registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) {
    return mlir::success();
  });
  rewire::onnx_import::ImportOptions options;
  options.limits.maxTensorElements = int64_t(1) << 24;
  auto result = rewire::onnx_import::importOnnxBuffer(bytes, "generated.onnx", "", &context,
                                                      options);
  if (!result.module)
    return 0;
  if (mlir::failed(mlir::verify(*result.module)))
    std::abort(); // the importer returned IR that does not verify
  ++reach.imported;
  mlir::ModuleOp module = *result.module;
  // The residual rewrite (usually finding nothing in such small graphs),
  // then the CPU lowerings up to the LLVM dialect.
  static const char *forms[] = {"review", "nag", "ancre", "lpa", "highway", "rezero"};
  if (fdp.ConsumeBool() &&
      mlir::failed(rewire::compiler::applyResidualRewrite(module, fdp.PickValueInArray(forms),
                                                          /*allowNone=*/true)))
    return 0;
  rewire::compiler::CompileOptions compile;
  compile.optLevel = fdp.ConsumeIntegralInRange(0, 2);
  rewire::compiler::ModuleInfo info;
  if (mlir::failed(rewire::compiler::lowerToLinalg(module, compile, info)))
    return 0;
  ++reach.linalg;
  if (mlir::succeeded(rewire::compiler::lowerToLLVMDialect(module, compile)))
    ++reach.llvm;
  return 0;
}
