//===- GraphBuilder.cpp - Appending ONNX nodes ----------------------------===//
//
// The node, constant and attribute builders of ExportInternal.h, shared by
// the exporter (OnnxExporter.cpp) and the routing export (RouteExport.cpp).
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_export;

//===----------------------------------------------------------------------===//
// GraphBuilder
//===----------------------------------------------------------------------===//

std::string GraphBuilder::name(Value v) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  std::string n = fresh("v");
  names[v] = n;
  return n;
}

std::string GraphBuilder::fresh(StringRef hint) {
  return ("rw_" + hint + "_" + Twine(counter++)).str();
}

onnx::NodeProto *GraphBuilder::node(StringRef op, ArrayRef<std::string> inputs,
                                    ArrayRef<std::string> outputs) {
  onnx::NodeProto *n = graph.add_node();
  n->set_op_type(op.str());
  n->set_name(("rw_" + op + "_" + Twine(graph.node_size())).str());
  for (const std::string &in : inputs)
    n->add_input(in);
  for (const std::string &out : outputs)
    n->add_output(out);
  return n;
}

std::string GraphBuilder::node1(StringRef op, ArrayRef<std::string> inputs,
                                onnx::NodeProto **out) {
  std::string result = fresh(op.lower());
  onnx::NodeProto *n = node(op, inputs, {result});
  if (out)
    *out = n;
  return result;
}

std::string GraphBuilder::constI64(ArrayRef<int64_t> values, bool scalar) {
  std::string result = fresh("const");
  onnx::NodeProto *n = node("Constant", {}, {result});
  onnx::AttributeProto *a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar)
    t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values)
    t->add_int64_data(v);
  return result;
}

std::string GraphBuilder::constF32(float value) {
  std::string result = fresh("const");
  onnx::NodeProto *n = node("Constant", {}, {result});
  onnx::AttributeProto *a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_float_data(value);
  return result;
}

void GraphBuilder::attr(onnx::NodeProto *n, StringRef key, int64_t v) {
  onnx::AttributeProto *a = n->add_attribute();
  a->set_name(key.str());
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void GraphBuilder::attr(onnx::NodeProto *n, StringRef key, float v) {
  onnx::AttributeProto *a = n->add_attribute();
  a->set_name(key.str());
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void GraphBuilder::attr(onnx::NodeProto *n, StringRef key, StringRef v) {
  onnx::AttributeProto *a = n->add_attribute();
  a->set_name(key.str());
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v.str());
}
void GraphBuilder::attr(onnx::NodeProto *n, StringRef key,
                        ArrayRef<int64_t> v) {
  onnx::AttributeProto *a = n->add_attribute();
  a->set_name(key.str());
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v)
    a->add_ints(x);
}

std::string GraphBuilder::reduce(StringRef op, const std::string &x,
                                 ArrayRef<int64_t> axes, bool keepdims) {
  onnx::NodeProto *n;
  std::string out;
  // ReduceSum takes axes as an input from opset 13, the others from 18.
  bool asInput = op == "ReduceSum" ? opset >= 13 : opset >= 18;
  if (asInput) {
    std::string a = constI64(axes);
    out = node1(op, {x, a}, &n);
  } else {
    out = node1(op, {x}, &n);
    attr(n, "axes", axes);
  }
  attr(n, "keepdims", int64_t(keepdims ? 1 : 0));
  return out;
}

int32_t rewire::onnx_export::onnxDataType(Type t) {
  if (t.isF32())
    return onnx::TensorProto::FLOAT;
  if (t.isF64())
    return onnx::TensorProto::DOUBLE;
  if (t.isF16())
    return onnx::TensorProto::FLOAT16;
  if (t.isBF16())
    return onnx::TensorProto::BFLOAT16;
  if (t.isInteger(1))
    return onnx::TensorProto::BOOL;
  if (auto i = dyn_cast<IntegerType>(t)) {
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 8:
      return u ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
    case 16:
      return u ? onnx::TensorProto::UINT16 : onnx::TensorProto::INT16;
    case 32:
      return u ? onnx::TensorProto::UINT32 : onnx::TensorProto::INT32;
    case 64:
      return u ? onnx::TensorProto::UINT64 : onnx::TensorProto::INT64;
    }
  }
  return 0;
}
