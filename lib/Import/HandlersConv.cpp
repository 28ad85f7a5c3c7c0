//===- HandlersConv.cpp - Legalization of ONNX convolutional ops ----------===//
//
// Handlers for Conv, MaxPool and GlobalAveragePool (NCHW). auto_pad SAME_*
// is resolved into explicit pads here, so nn ops only know explicit padding.
//
//===----------------------------------------------------------------------===//
#include "OnnxInternal.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {

/// Explicit pads (begin values, then end values) for `auto_pad`.
FailureOr<SmallVector<int64_t>> resolvePads(NodeContext &c,
                                            ArrayRef<int64_t> in,
                                            ArrayRef<int64_t> kernel,
                                            ArrayRef<int64_t> strides,
                                            ArrayRef<int64_t> dilations) {
  size_t k = kernel.size();
  std::string autoPad = c.stringAttr("auto_pad").value_or("NOTSET");
  if (autoPad == "NOTSET") {
    auto pads = c.intsAttr("pads").value_or(SmallVector<int64_t>(2 * k, 0));
    return pads;
  }
  if (autoPad == "VALID")
    return SmallVector<int64_t>(2 * k, 0);
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return c.error() << "unknown auto_pad '" << autoPad << "'";
  SmallVector<int64_t> begin, end;
  for (size_t i = 0; i < k; ++i) {
    int64_t size = in[i + 2];
    if (ShapedType::isDynamic(size))
      return c.error() << "auto_pad " << autoPad
                       << " needs static spatial dimensions";
    int64_t s = strides[i], d = dilations[i];
    if (s < 1 || d < 1 || kernel[i] < 1)
      return c.error() << "strides, dilations and kernel sizes must be >= 1";
    int64_t out = (size + s - 1) / s;
    int64_t total = std::max<int64_t>(
        0, (out - 1) * s + d * (kernel[i] - 1) + 1 - size);
    int64_t small = total / 2, large = total - small;
    begin.push_back(autoPad == "SAME_UPPER" ? small : large);
    end.push_back(autoPad == "SAME_UPPER" ? large : small);
  }
  begin.append(end.begin(), end.end());
  return begin;
}

HandlerResult conv(NodeContext &c) {
  auto x = c.tensorInput(0), w = c.tensorInput(1);
  if (failed(x) || failed(w))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto wt = cast<RankedTensorType>(w->getType());
  if (xt.getRank() < 3 || wt.getRank() != xt.getRank())
    return c.error() << "expects X [N, C, D...] and W of the same rank, got "
                     << xt << " and " << wt;
  size_t k = xt.getRank() - 2;
  SmallVector<int64_t> kernel(wt.getShape().drop_front(2));
  if (auto ks = c.intsAttr("kernel_shape"); ks && *ks != kernel)
    return c.error() << "kernel_shape does not match the weight's shape";
  auto strides = c.intsAttr("strides").value_or(SmallVector<int64_t>(k, 1));
  auto dilations =
      c.intsAttr("dilations").value_or(SmallVector<int64_t>(k, 1));
  if (strides.size() != k || dilations.size() != k)
    return c.error() << "strides and dilations need " << k << " entries";
  auto pads = resolvePads(c, xt.getShape(), kernel, strides, dilations);
  if (failed(pads))
    return failure();
  SmallVector<Value> operands = {*x, *w};
  if (Value bias = c.input(2))
    operands.push_back(bias);
  return single(createInferred<nn::ConvOp>(
      c, operands,
      {c.b.getNamedAttr("strides", c.b.getDenseI64ArrayAttr(strides)),
       c.b.getNamedAttr("pads", c.b.getDenseI64ArrayAttr(*pads)),
       c.b.getNamedAttr("dilations", c.b.getDenseI64ArrayAttr(dilations)),
       c.b.getNamedAttr("group",
                        c.b.getI64IntegerAttr(c.intAttrOr("group", 1)))}));
}

HandlerResult maxPool(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto kernel = c.intsAttr("kernel_shape");
  if (!kernel)
    return c.error() << "the 'kernel_shape' attribute is required";
  if (xt.getRank() < 3 || kernel->size() != static_cast<size_t>(xt.getRank() - 2))
    return c.error() << "kernel_shape needs one entry per spatial dimension";
  size_t k = kernel->size();
  if (c.intAttrOr("ceil_mode", 0) != 0)
    return c.error() << "ceil_mode = 1 is not supported";
  if (c.intAttrOr("storage_order", 0) != 0)
    return c.error() << "storage_order = 1 is not supported";
  auto dilations =
      c.intsAttr("dilations").value_or(SmallVector<int64_t>(k, 1));
  if (llvm::any_of(dilations, [](int64_t d) { return d != 1; }))
    return c.error() << "dilated pooling is not supported";
  if (c.node.getNumResults() > 1 && !c.node.getResult(1).use_empty())
    return c.error() << "the Indices output is not supported";
  auto strides = c.intsAttr("strides").value_or(SmallVector<int64_t>(k, 1));
  if (strides.size() != k)
    return c.error() << "strides need " << k << " entries";
  auto pads = resolvePads(c, xt.getShape(), *kernel, strides, dilations);
  if (failed(pads))
    return failure();
  return single(createInferred<nn::MaxPoolOp>(
      c, {*x},
      {c.b.getNamedAttr("kernel_shape", c.b.getDenseI64ArrayAttr(*kernel)),
       c.b.getNamedAttr("strides", c.b.getDenseI64ArrayAttr(strides)),
       c.b.getNamedAttr("pads", c.b.getDenseI64ArrayAttr(*pads))}));
}

HandlerResult globalAveragePool(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  return single(createInferred<nn::GlobalAveragePoolOp>(c, {*x}));
}

const Handler kHandlers[] = {
    {"Conv", 13, 21, conv},
    {"MaxPool", 13, 21, maxPool},
    {"GlobalAveragePool", 13, 21, globalAveragePool},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::convHandlers() { return kHandlers; }
