//===- HandlersConv.cpp - Legalization of ONNX convolutional ops ----------===//
//
// Handlers for Conv (1-D through 2-D), MaxPool and AveragePool (2-D ones as
// nn.max_pool and a depthwise conv; any other rank, dilation, ceil_mode or
// argmax output as strided slices per kernel tap) and GlobalAveragePool. auto_pad SAME_*
// is resolved into explicit pads here, so nn ops only know explicit padding.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

#include "rewire/Support/Checked.h"

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

FailureOr<Value> unsqueeze2(NodeContext &c, Value v) {
  auto op = createInferred<nn::UnsqueezeOp>(
      c, {v}, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({2}))});
  if (failed(op))
    return failure();
  return op->getResult();
}

/// A 1-D convolution (Whisper's audio stem) as a 2-D one over [N, C, 1, L]
/// with a [O, C/g, 1, K] kernel, squeezed back.
HandlerResult conv1d(NodeContext &c, SmallVector<Value> operands, int64_t stride,
                     int64_t padBegin, int64_t padEnd, int64_t dilation) {
  auto x = unsqueeze2(c, operands[0]), w = unsqueeze2(c, operands[1]);
  if (failed(x) || failed(w))
    return failure();
  operands[0] = *x;
  operands[1] = *w;
  auto conv = createInferred<nn::ConvOp>(
      c, operands,
      {c.b.getNamedAttr("strides", c.b.getDenseI64ArrayAttr({1, stride})),
       c.b.getNamedAttr("pads", c.b.getDenseI64ArrayAttr({0, padBegin, 0, padEnd})),
       c.b.getNamedAttr("dilations", c.b.getDenseI64ArrayAttr({1, dilation})),
       c.b.getNamedAttr("group", c.b.getI64IntegerAttr(c.intAttrOr("group", 1)))});
  if (failed(conv))
    return failure();
  return single(createInferred<nn::SqueezeOp>(
      c, {conv->getResult()}, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({2}))}));
}

HandlerResult conv(NodeContext &c) {
  auto x = c.tensorInput(0), w = c.tensorInput(1);
  if (failed(x) || failed(w))
    return failure();
  return single(convolution(c, *x, *w, c.input(2)));
}

} // namespace

FailureOr<Value> rewire::onnx_import::convolution(NodeContext &c, Value xv, Value wv, Value bias) {
  auto x = &xv, w = &wv;
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
  if (bias)
    operands.push_back(bias);
  if (k == 1) {
    auto r = conv1d(c, operands, strides[0], (*pads)[0], (*pads)[1], dilations[0]);
    if (failed(r))
      return failure();
    return (*r)[0];
  }
  auto op = createInferred<nn::ConvOp>(
      c, operands,
      {c.b.getNamedAttr("strides", c.b.getDenseI64ArrayAttr(strides)),
       c.b.getNamedAttr("pads", c.b.getDenseI64ArrayAttr(*pads)),
       c.b.getNamedAttr("dilations", c.b.getDenseI64ArrayAttr(dilations)),
       c.b.getNamedAttr("group",
                        c.b.getI64IntegerAttr(c.intAttrOr("group", 1)))});
  if (failed(op))
    return failure();
  return op->getResult();
}

namespace {

/// The attributes every pooling op shares, checked.
struct PoolSpec {
  SmallVector<int64_t> kernel, strides, dilations, pads;
  bool ceil = false;
};

FailureOr<PoolSpec> poolSpec(NodeContext &c, RankedTensorType xt) {
  PoolSpec p;
  auto kernel = c.intsAttr("kernel_shape");
  if (!kernel)
    return c.error() << "the 'kernel_shape' attribute is required";
  if (xt.getRank() < 3 || kernel->size() != static_cast<size_t>(xt.getRank() - 2))
    return c.error() << "kernel_shape needs one entry per spatial dimension";
  if (!xt.hasStaticShape())
    return c.error() << "expects a static input, got " << xt;
  size_t k = kernel->size();
  p.kernel = *kernel;
  p.strides = c.intsAttr("strides").value_or(SmallVector<int64_t>(k, 1));
  p.dilations = c.intsAttr("dilations").value_or(SmallVector<int64_t>(k, 1));
  if (p.strides.size() != k || p.dilations.size() != k)
    return c.error() << "strides and dilations need " << k << " entries";
  for (size_t i = 0; i < k; ++i)
    if (p.kernel[i] < 1 || p.strides[i] < 1 || p.dilations[i] < 1 || p.kernel[i] > 65536 ||
        p.strides[i] > 65536 || p.dilations[i] > 65536)
      return c.error() << "kernel sizes, strides and dilations must be in [1, 65536]";
  auto pads = resolvePads(c, xt.getShape(), p.kernel, p.strides, p.dilations);
  if (failed(pads))
    return failure();
  if (pads->size() != 2 * k || llvm::any_of(*pads, [](int64_t v) { return v < 0 || v > 65536; }))
    return c.error() << "pads need " << 2 * k << " entries in [0, 65536]";
  p.pads = *pads;
  p.ceil = c.intAttrOr("ceil_mode", 0) != 0;
  return p;
}

/// x[start : start + (n - 1) * step + 1 : step] along each spatial axis.
Value strided(NodeContext &c, Value x, ArrayRef<int64_t> starts, ArrayRef<int64_t> counts,
              ArrayRef<int64_t> steps) {
  SmallVector<int64_t> axes, ends;
  for (size_t i = 0; i < starts.size(); ++i) {
    axes.push_back(static_cast<int64_t>(i) + 2);
    ends.push_back(starts[i] + (counts[i] - 1) * steps[i] + 1);
  }
  return make<nn::SliceOp>(c, {x},
                           {c.b.getNamedAttr("starts", c.b.getDenseI64ArrayAttr(starts)),
                            c.b.getNamedAttr("ends", c.b.getDenseI64ArrayAttr(ends)),
                            c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(axes)),
                            c.b.getNamedAttr("steps", c.b.getDenseI64ArrayAttr(steps))});
}

/// Max or average pooling of any rank, dilation and ceil_mode as one
/// strided slice of the padded input per kernel tap, combined
/// elementwise: max (with ONNX's flat argmax indices when `indices` is
/// set; storage_order 1 counts the spatial dims column-major), or sum over
/// a constant count of the taps inside the input (count_include_pad = 0)
/// or inside input + pads (= 1). ONNX's ceil_mode drops a last window that
/// starts in the end padding.
HandlerResult windowPool(NodeContext &c, Value x, const PoolSpec &p, bool isMax,
                         bool countIncludePad, bool indices, bool columnMajor, double lpNorm = 0) {
  auto xt = typeOf(x);
  size_t k = p.kernel.size();
  ArrayRef<int64_t> shape = xt.getShape();
  SmallVector<int64_t> outs, padEnd;
  int64_t taps = 1, outElems = 1;
  for (size_t i = 0; i < k; ++i) {
    int64_t in = shape[i + 2], pb = p.pads[i], pe = p.pads[i + k], s = p.strides[i];
    int64_t ek = p.dilations[i] * (p.kernel[i] - 1) + 1, span = in + pb + pe - ek;
    if (span < 0)
      return c.error() << "the kernel (" << ek << " with dilation) is larger than the padded input ("
                       << in + pb + pe << ") along spatial dim " << i;
    int64_t out = (p.ceil ? (span + s - 1) / s : span / s) + 1;
    if (p.ceil && (out - 1) * s >= in + pb)
      --out;
    outs.push_back(out);
    padEnd.push_back(std::max<int64_t>(pe, (out - 1) * s + ek - in - pb));
    taps *= p.kernel[i];
    outElems *= out;
  }
  constexpr int64_t kMaxTaps = 4096;
  if (taps > kMaxTaps)
    return c.error() << "a window of " << taps << " taps is over the " << kMaxTaps
                     << " this pooling path unrolls";
  if (!fitsBuiltConstant(c, outElems, "the per-window constants of pooling"))
    return failure();
  Expr e{c};
  Type elt = xt.getElementType();
  // Pad with the identity of the reduction (lowest value for max, 0 for sum).
  double fill = 0;
  if (isMax) {
    if (isa<FloatType>(elt))
      fill = -INFINITY;
    else if (elt.isUnsignedInteger())
      fill = 0;
    else
      fill = -std::ldexp(1.0, elt.getIntOrFloatBitWidth() - 1);
  }
  Value y = x;
  for (size_t i = 0; i < k; ++i) {
    int64_t axis = static_cast<int64_t>(i) + 2;
    SmallVector<Value> parts;
    SmallVector<int64_t> side(typeOf(y).getShape());
    if (p.pads[i] > 0) {
      side[axis] = p.pads[i];
      parts.push_back(splatConstant(c, RankedTensorType::get(side, elt), fill));
    }
    parts.push_back(y);
    if (padEnd[i] > 0) {
      side[axis] = padEnd[i];
      parts.push_back(splatConstant(c, RankedTensorType::get(side, elt), fill));
    }
    y = e.concat(parts, axis);
    if (!y)
      return failure();
  }
  // Spatial strides of the input for the flat indices.
  SmallVector<int64_t> spatialStride(k, 1);
  int64_t spatial = 1;
  for (size_t i = 0; i < k; ++i)
    spatial *= shape[i + 2];
  if (columnMajor)
    for (size_t i = 1; i < k; ++i)
      spatialStride[i] = spatialStride[i - 1] * shape[i + 1];
  else
    for (size_t i = k - 1; i-- > 0;)
      spatialStride[i] = spatialStride[i + 1] * shape[i + 3];
  SmallVector<int64_t> outShape = {1, 1};
  outShape.append(outs.begin(), outs.end());
  Value acc, best;
  SmallVector<int64_t> tap(k, 0), at(k, 0);
  for (int64_t t = 0; t < taps; ++t) {
    for (int64_t rem = t, i = static_cast<int64_t>(k) - 1; i >= 0; --i) {
      tap[i] = rem % p.kernel[i];
      rem /= p.kernel[i];
    }
    SmallVector<int64_t> starts;
    for (size_t i = 0; i < k; ++i)
      starts.push_back(tap[i] * p.dilations[i]);
    Value v = strided(c, y, starts, outs, p.strides);
    // LpPool sums |x|^p (the padding is 0).
    if (lpNorm > 0)
      v = lpNorm == 1 ? e.un<nn::AbsOp>(v)
                      : lpNorm == 2 ? e.mul(v, v) : e.pow(e.un<nn::AbsOp>(v), e.num(v, lpNorm));
    Value idx;
    if (indices) {
      // The flat input position of this tap at every output position
      // (clamped in padding, which a real element always beats).
      SmallVector<int64_t> flat;
      for (int64_t o = 0; o < outElems; ++o) {
        int64_t rem = o, f = 0;
        for (int64_t i = static_cast<int64_t>(k) - 1; i >= 0; --i) {
          at[i] = rem % outs[i];
          rem /= outs[i];
          int64_t pos = at[i] * p.strides[i] + tap[i] * p.dilations[i] - p.pads[i];
          f += std::clamp<int64_t>(pos, 0, shape[i + 2] - 1) * spatialStride[i];
        }
        flat.push_back(f);
      }
      idx = i64Constant(c, outShape, flat);
    }
    if (!acc) {
      acc = v;
      best = idx;
      continue;
    }
    if (!isMax) {
      acc = e.add(acc, v);
    } else if (indices) {
      Value better = e.cmp(nn::ComparePredicate::gt, v, acc);
      acc = e.where(better, v, acc);
      best = e.where(better, idx, best);
    } else {
      acc = e.max(acc, v);
    }
    if (!acc)
      return failure();
  }
  if (isMax) {
    if (!indices)
      return e.done(acc);
    // + the offset of each (n, c) plane.
    SmallVector<int64_t> planes;
    for (int64_t nc = 0; nc < shape[0] * shape[1]; ++nc)
      planes.push_back(nc * spatial);
    SmallVector<int64_t> planeShape(xt.getRank(), 1);
    planeShape[0] = shape[0];
    planeShape[1] = shape[1];
    Value base = i64Constant(c, planeShape, planes);
    Value flatIdx = e.add(best, base);
    if (!acc || !flatIdx)
      return failure();
    return SmallVector<Value>{acc, flatIdx};
  }
  if (lpNorm > 0)
    return e.done(lpNorm == 1 ? acc : lpNorm == 2 ? e.un<nn::SqrtOp>(acc)
                                                 : e.pow(acc, e.num(acc, 1.0 / lpNorm)));
  // The divisor of each window: its taps inside the input (or the padded
  // input), a product over the spatial dims.
  SmallVector<double> count;
  for (int64_t o = 0; o < outElems; ++o) {
    int64_t rem = o;
    double n = 1;
    for (int64_t i = static_cast<int64_t>(k) - 1; i >= 0; --i) {
      int64_t oi = rem % outs[i];
      rem /= outs[i];
      int64_t lo = countIncludePad ? -p.pads[i] : 0;
      int64_t hi = shape[i + 2] + (countIncludePad ? p.pads[i + k] : 0);
      int64_t inside = 0;
      for (int64_t ti = 0; ti < p.kernel[i]; ++ti) {
        int64_t pos = oi * p.strides[i] + ti * p.dilations[i] - p.pads[i];
        inside += pos >= lo && pos < hi;
      }
      n *= double(inside);
    }
    count.push_back(n > 0 ? 1.0 / n : 0.0);
  }
  return e.done(e.mul(acc, floatsConstant(c, RankedTensorType::get(outShape, elt), count)));
}

HandlerResult maxPool(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  auto spec = poolSpec(c, xt);
  if (failed(spec))
    return failure();
  int64_t order = c.intAttrOr("storage_order", 0);
  if (order != 0 && order != 1)
    return c.error() << "storage_order must be 0 or 1, got " << order;
  bool indices = c.node.getNumResults() > 1;
  bool simple = xt.getRank() == 4 && isa<FloatType>(xt.getElementType()) && !spec->ceil &&
                !indices && llvm::all_of(spec->dilations, [](int64_t d) { return d == 1; });
  if (!simple)
    return windowPool(c, *x, *spec, /*isMax=*/true, false, indices, order == 1);
  return single(createInferred<nn::MaxPoolOp>(
      c, {*x},
      {c.b.getNamedAttr("kernel_shape", c.b.getDenseI64ArrayAttr(spec->kernel)),
       c.b.getNamedAttr("strides", c.b.getDenseI64ArrayAttr(spec->strides)),
       c.b.getNamedAttr("pads", c.b.getDenseI64ArrayAttr(spec->pads))}));
}

/// CausalConvWithState(input [B, C, L], weight [C, 1, k], bias, past_state
/// [B, C, k-1]): the depthwise convolution of past_state ++ input (zeros
/// without a past state) over [B, C, 1, L + k - 1], + bias, then SiLU when
/// activation is silu/swish; present_state is the last k - 1 positions.
HandlerResult causalConvWithState(NodeContext &c) {
  auto x = c.tensorInput(0), w = c.tensorInput(1);
  if (failed(x) || failed(w))
    return failure();
  auto xt = typeOf(*x), wt = typeOf(*w);
  if (!xt.hasStaticShape() || xt.getRank() != 3 || !isa<FloatType>(xt.getElementType()) ||
      wt.getRank() != 3 || wt.getDimSize(0) != xt.getDimSize(1) || wt.getDimSize(1) != 1)
    return c.error() << "expects input [B, C, L] and weight [C, 1, k], got " << xt << " and " << wt;
  int64_t batch = xt.getDimSize(0), channels = xt.getDimSize(1), k = wt.getDimSize(2);
  std::string act = c.stringAttr("activation").value_or("none");
  if (act != "none" && act != "silu" && act != "swish")
    return c.error() << "activation '" << act << "' is not none, silu or swish";
  Expr e{c};
  Value past = c.input(3);
  SmallVector<int64_t> stateShape = {batch, channels, k - 1};
  if (past && typeOf(past).getShape() != ArrayRef<int64_t>(stateShape))
    return c.error() << "past_state must be [" << batch << ", " << channels << ", " << k - 1
                     << "], got " << past.getType();
  if (!past)
    past = splatConstant(c, RankedTensorType::get(stateShape, xt.getElementType()), 0);
  Value full = k > 1 ? e.concat({past, *x}, 2) : *x;
  int64_t len = xt.getDimSize(2) + k - 1;
  SmallVector<Value> operands = {e.unsqueeze(full, 2), e.unsqueeze(*w, 2)};
  if (Value bias = c.input(2))
    operands.push_back(bias);
  Value y = make<nn::ConvOp>(c, operands,
                             {c.b.getNamedAttr("group", c.b.getI64IntegerAttr(channels))});
  y = y ? e.squeeze(y, 2) : y;
  if (act != "none")
    y = e.mul(y, e.un<nn::SigmoidOp>(y));
  Value present = k > 1 ? e.slice(full, 2, len - (k - 1), len)
                        : splatConstant(c, RankedTensorType::get(stateShape, xt.getElementType()), 0);
  if (!y || !present)
    return failure();
  SmallVector<Value> out = {y, present};
  out.resize(std::min<size_t>(2, c.node->getNumResults()));
  return out;
}

/// Col2Im(input [N, C*kh*kw, L], image_shape [H, W], block_shape [kh, kw])
/// for 2-D images: the adjoint of im2col, which is a convolution with the
/// one-hot kernel [C*kh*kw, C, kh, kw]; so nn.conv_input_grad of the
/// columns (as [N, C*kh*kw, oh, ow]) with that kernel, pads, strides and
/// dilations, sums every block back into place.
HandlerResult col2Im(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto image = c.constantIntsInput(1, "image_shape"), block = c.constantIntsInput(2, "block_shape");
  if (failed(x) || failed(image) || failed(block))
    return failure();
  auto xt = typeOf(*x);
  if (image->size() != 2 || block->size() != 2)
    return c.error() << "only 2-D images are supported, got image_shape of " << image->size()
                     << " dims";
  if (!xt.hasStaticShape() || xt.getRank() != 3 || !isa<FloatType>(xt.getElementType()))
    return c.error() << "expects a static float input [N, C*K, L], got " << xt;
  int64_t kh = (*block)[0], kw = (*block)[1], h = (*image)[0], w = (*image)[1];
  SmallVector<int64_t> strides = c.intsAttr("strides").value_or(SmallVector<int64_t>{1, 1});
  SmallVector<int64_t> dilations = c.intsAttr("dilations").value_or(SmallVector<int64_t>{1, 1});
  SmallVector<int64_t> pads = c.intsAttr("pads").value_or(SmallVector<int64_t>{0, 0, 0, 0});
  if (kh < 1 || kw < 1 || h < 1 || w < 1 || strides.size() != 2 || dilations.size() != 2 ||
      pads.size() != 4 || llvm::any_of(strides, [](int64_t v) { return v < 1; }) ||
      llvm::any_of(dilations, [](int64_t v) { return v < 1; }))
    return c.error() << "block, image, strides, dilations and pads are out of range";
  int64_t k = kh * kw;
  if (xt.getDimSize(1) % k)
    return c.error() << "input dim 1 (" << xt.getDimSize(1) << ") is not a multiple of the block size "
                     << k;
  int64_t channels = xt.getDimSize(1) / k;
  int64_t oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) / strides[0] + 1;
  int64_t ow = (w + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) / strides[1] + 1;
  if (oh < 1 || ow < 1 || oh * ow != xt.getDimSize(2))
    return c.error() << "the input has " << xt.getDimSize(2) << " blocks; the image holds " << oh
                     << " x " << ow;
  if (!fitsBuiltConstant(c, checkedMul(channels * k, channels * k).value_or(-1), "the one-hot kernel"))
    return failure();
  SmallVector<double> onehot;
  for (int64_t o = 0; o < channels * k; ++o)
    for (int64_t ci = 0; ci < channels; ++ci)
      for (int64_t t = 0; t < k; ++t)
        onehot.push_back(o == ci * k + t ? 1.0 : 0.0);
  Expr e{c};
  Value kernel =
      floatsConstant(c, RankedTensorType::get({channels * k, channels, kh, kw}, xt.getElementType()), onehot);
  Value cols = e.reshape(*x, {xt.getDimSize(0), channels * k, oh, ow});
  if (!cols)
    return failure();
  auto op = nn::ConvInputGradOp::create(
      c.b, c.loc(), RankedTensorType::get({xt.getDimSize(0), channels, h, w}, xt.getElementType()), cols,
      kernel, c.b.getDenseI64ArrayAttr(strides), c.b.getDenseI64ArrayAttr(pads),
      c.b.getDenseI64ArrayAttr(dilations), c.b.getI64IntegerAttr(1));
  if (failed(op.verify())) {
    op.erase();
    return failure();
  }
  return SmallVector<Value>{op};
}

/// LpPool: (sum over the window of |x|^p)^(1/p), p from the attribute.
HandlerResult lpPool(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (!isa<FloatType>(xt.getElementType()))
    return c.error() << "expects a floating-point input";
  auto spec = poolSpec(c, xt);
  if (failed(spec))
    return failure();
  int64_t p = c.intAttrOr("p", 2);
  if (p < 1 || p > 64)
    return c.error() << "p must be in [1, 64], got " << p;
  return windowPool(c, *x, *spec, /*isMax=*/false, false, false, false, double(p));
}

/// AveragePool (2-D) as a depthwise nn.conv with a constant 1/(kh kw)
/// kernel; with count_include_pad = 0 and pads, divided by the constant
/// count of real (unpadded) elements under each window.
HandlerResult averagePool(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto xt = cast<RankedTensorType>(x->getType());
  if (!isa<FloatType>(xt.getElementType()))
    return c.error() << "expects a floating-point input";
  auto spec = poolSpec(c, xt);
  if (failed(spec))
    return failure();
  bool countIncludePad = c.intAttrOr("count_include_pad", 0) != 0;
  if (xt.getRank() != 4 || spec->ceil ||
      llvm::any_of(spec->dilations, [](int64_t d) { return d != 1; }))
    return windowPool(c, *x, *spec, /*isMax=*/false, countIncludePad, false, false);
  auto kernel = &spec->kernel, pads = &spec->pads;
  auto &strides = spec->strides, &dilations = spec->dilations;
  int64_t kh = (*kernel)[0], kw = (*kernel)[1], ch = xt.getDimSize(1);
  if (kh < 1 || kw < 1 || kh * kw > 65536 || ch > 65536)
    return c.error() << "kernel " << kh << "x" << kw << " is out of range";
  auto ft = cast<FloatType>(xt.getElementType());
  if (!fitsBuiltConstant(c, checkedMul(ch, checkedMul(kh, kw).value_or(-1)).value_or(-1), "the averaging kernel"))
    return failure();
  auto wType = RankedTensorType::get({ch, 1, kh, kw}, ft);
  Value weight = nn::ConstantOp::create(
      c.b, c.loc(), wType,
      DenseElementsAttr::get(wType, FloatAttr::get(ft, 1.0 / double(kh * kw))));
  auto conv = createInferred<nn::ConvOp>(
      c, {*x, weight},
      {c.b.getNamedAttr("strides", c.b.getDenseI64ArrayAttr(strides)),
       c.b.getNamedAttr("pads", c.b.getDenseI64ArrayAttr(*pads)),
       c.b.getNamedAttr("dilations", c.b.getDenseI64ArrayAttr(dilations)),
       c.b.getNamedAttr("group", c.b.getI64IntegerAttr(ch))});
  if (failed(conv))
    return failure();
  bool padded = llvm::any_of(*pads, [](int64_t p) { return p != 0; });
  if (!padded || countIncludePad)
    return single(conv);
  auto out = cast<RankedTensorType>(conv->getType());
  int64_t oh = out.getDimSize(2), ow = out.getDimSize(3);
  if (!fitsBuiltConstant(c, checkedMul(oh, ow).value_or(-1), "the count of padded windows"))
    return failure();
  int64_t h = xt.getDimSize(2), w = xt.getDimSize(3);
  SmallVector<double> scale;
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j) {
      int64_t r0 = i * strides[0] - (*pads)[0], c0 = j * strides[1] - (*pads)[1];
      int64_t rows = std::min(r0 + kh, h) - std::max<int64_t>(r0, 0);
      int64_t cols = std::min(c0 + kw, w) - std::max<int64_t>(c0, 0);
      double n = double(std::max<int64_t>(rows, 0) * std::max<int64_t>(cols, 0));
      scale.push_back(n > 0 ? double(kh * kw) / n : 0.0);
    }
  Value s = floatsConstant(c, RankedTensorType::get({1, 1, oh, ow}, ft), scale);
  return single(createInferred<nn::MulOp>(c, {conv->getResult(), s}));
}

/// ConvTranspose (2-D; 1-D over [N, C, 1, L]) as nn.conv_input_grad: the
/// transposed convolution is the input gradient of the convolution whose
/// weight it shares ([C_in, C_out/group, kh, kw]); bias added per channel.
HandlerResult convTranspose(NodeContext &c) {
  auto x = c.tensorInput(0), w = c.tensorInput(1);
  if (failed(x) || failed(w))
    return failure();
  Value xv = *x, wv = *w;
  auto xt = cast<RankedTensorType>(xv.getType());
  auto wt = cast<RankedTensorType>(wv.getType());
  bool oneD = xt.getRank() == 3;
  if ((xt.getRank() != 4 && !oneD) || wt.getRank() != xt.getRank() || !xt.hasStaticShape() ||
      !wt.hasStaticShape() || !isa<FloatType>(xt.getElementType()))
    return c.error() << "expects static float X [N, C, (H,) W] and W of the same rank, got "
                     << xt << " and " << wt;
  auto expand = [&](SmallVector<int64_t> v, int64_t fill) {
    if (oneD)
      v.insert(v.begin(), fill);
    return v;
  };
  if (oneD) {
    auto ux = unsqueeze2(c, xv), uw = unsqueeze2(c, wv);
    if (failed(ux) || failed(uw))
      return failure();
    xv = *ux;
    wv = *uw;
    xt = cast<RankedTensorType>(xv.getType());
    wt = cast<RankedTensorType>(wv.getType());
  }
  int64_t group = c.intAttrOr("group", 1);
  if (group < 1 || xt.getDimSize(1) != wt.getDimSize(0) || xt.getDimSize(1) % group)
    return c.error() << "W's first dim must be X's channels and divisible by group";
  SmallVector<int64_t> kernel = {wt.getDimSize(2), wt.getDimSize(3)};
  size_t k = oneD ? 1 : 2;
  auto strides = expand(c.intsAttr("strides").value_or(SmallVector<int64_t>(k, 1)), 1);
  auto dilations = expand(c.intsAttr("dilations").value_or(SmallVector<int64_t>(k, 1)), 1);
  auto outPad = expand(c.intsAttr("output_padding").value_or(SmallVector<int64_t>(k, 0)), 0);
  if (strides.size() != 2 || dilations.size() != 2 || outPad.size() != 2)
    return c.error() << "strides, dilations and output_padding need one entry per spatial dim";
  SmallVector<int64_t> begin(2, 0), end(2, 0);
  std::string autoPad = c.stringAttr("auto_pad").value_or("NOTSET");
  auto outputShape = c.intsAttr("output_shape");
  if (outputShape) {
    SmallVector<int64_t> os(*outputShape);
    if (os.size() > k)
      os.erase(os.begin(), os.end() - k); // [N, C, ...] given
    os = expand(os, 1);
    for (int i = 0; i < 2; ++i) {
      int64_t total = strides[i] * (xt.getDimSize(2 + i) - 1) + outPad[i] +
                      (kernel[i] - 1) * dilations[i] + 1 - os[i];
      if (total < 0)
        return c.error() << "output_shape is larger than the transposed convolution produces";
      bool upper = autoPad != "SAME_LOWER";
      begin[i] = upper ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int i = 0; i < 2; ++i) {
      int64_t want = xt.getDimSize(2 + i) * strides[i];
      int64_t total = std::max<int64_t>(0, strides[i] * (xt.getDimSize(2 + i) - 1) + outPad[i] +
                                               (kernel[i] - 1) * dilations[i] + 1 - want);
      begin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    }
  } else if (auto p = c.intsAttr("pads")) {
    SmallVector<int64_t> pads(*p);
    if (pads.size() != 2 * k)
      return c.error() << "pads needs " << 2 * k << " entries";
    if (oneD) {
      begin = {0, pads[0]};
      end = {0, pads[1]};
    } else {
      begin = {pads[0], pads[1]};
      end = {pads[2], pads[3]};
    }
  }
  SmallVector<int64_t> outShape = {xt.getDimSize(0), wt.getDimSize(1) * group};
  for (int i = 0; i < 2; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || outPad[i] < 0 || outPad[i] >= std::max(strides[i], dilations[i]))
      return c.error() << "strides and dilations must be >= 1 and output_padding smaller than the stride";
    int64_t o = strides[i] * (xt.getDimSize(2 + i) - 1) + outPad[i] +
                (kernel[i] - 1) * dilations[i] + 1 - begin[i] - end[i];
    if (o < 1)
      return c.error() << "the output would be empty";
    outShape.push_back(o);
  }
  // The forward convolution of the result must give X's spatial size: the
  // output padding's extra rows only ever receive nothing.
  auto type = RankedTensorType::get(outShape, xt.getElementType());
  auto op = nn::ConvInputGradOp::create(
      c.b, c.loc(), type, xv, wv, c.b.getDenseI64ArrayAttr(strides),
      c.b.getDenseI64ArrayAttr({begin[0], begin[1], end[0], end[1]}),
      c.b.getDenseI64ArrayAttr(dilations), c.b.getI64IntegerAttr(group));
  if (failed(op.verify())) {
    op.erase();
    return failure();
  }
  Value y = op;
  if (Value bias = c.input(2)) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (bt.getRank() != 1 || bt.getDimSize(0) != outShape[1])
      return c.error() << "B must be [" << outShape[1] << "], got " << bt;
    auto rs = nn::ReshapeOp::create(
        c.b, c.loc(), RankedTensorType::get({outShape[1], 1, 1}, bt.getElementType()), bias);
    auto sum = createInferred<nn::AddOp>(c, {y, rs.getResult()});
    if (failed(sum))
      return failure();
    y = sum->getResult();
  }
  if (oneD) {
    auto sq = createInferred<nn::SqueezeOp>(
        c, {y}, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({2}))});
    if (failed(sq))
      return failure();
    y = sq->getResult();
  }
  return SmallVector<Value>{y};
}

HandlerResult globalAveragePool(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  return single(createInferred<nn::GlobalAveragePoolOp>(c, {*x}));
}

const Handler kHandlers[] = {
    {"Conv", 1, 28, conv},
    {"MaxPool", 8, 28, maxPool},
    {"GlobalAveragePool", 1, 28, globalAveragePool},
    {"AveragePool", 7, 28, averagePool},
    {"LpPool", 11, 28, lpPool},
    {"CausalConvWithState", 27, 28, causalConvWithState},
    {"Col2Im", 18, 28, col2Im},
    {"ConvTranspose", 11, 28, convTranspose},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::convHandlers() { return kHandlers; }
