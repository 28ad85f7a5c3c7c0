//===- HandlersQuantize.cpp - ONNX quantization ops as nn ops -------------===//
//
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// ConvInteger, QLinearMatMul and QLinearConv, written out exactly:
//   quantize(x)   = saturate(round_half_even(x / scale) + zero_point)
//   dequantize(q) = (q - zero_point) * scale
// Integer products accumulate in f64, which holds every int8/uint8 dot
// product of up to 2^37 terms exactly, so the int32 results are exact; the
// float steps follow ONNX's reference in f32. Scales and zero points may be
// run-time tensors (scalars or one per channel along `axis`).
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

#include "rewire/Support/Shape.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {

using P = nn::ComparePredicate;

/// The saturation range of an 8/16/32-bit integer type.
std::pair<double, double> rangeOf(IntegerType t) {
  unsigned w = t.getWidth();
  if (t.isUnsigned())
    return {0.0, std::ldexp(1.0, w) - 1};
  return {-std::ldexp(1.0, w - 1), std::ldexp(1.0, w - 1) - 1};
}

/// `v` (a scalar or 1-D per-channel tensor) shaped to broadcast along
/// `axis` of a rank-`rank` tensor.
FailureOr<Value> alongAxis(NodeContext &c, Expr &e, Value v, int64_t axis, int64_t rank,
                           int64_t channels, StringRef what) {
  auto t = typeOf(v);
  if (t.getNumElements() == 1 && t.getRank() <= 1)
    return t.getRank() == 0 ? v : e.reshape(v, {});
  if (axis < 0 || axis >= rank)
    return c.error() << what << " has " << t.getNumElements() << " entries, but axis " << axis
                     << " is out of range for rank " << rank;
  if (t.getRank() != 1 || t.getDimSize(0) != channels)
    return c.error() << what << " must be a scalar or have one entry per channel (" << channels
                     << ") along axis " << axis << ", got " << t;
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = channels;
  return e.reshape(v, shape);
}

/// saturate(round(y) + zp) in the zero point's integer type; `y` float.
Value quantizeTo(Expr &e, Value y, Value zpFloat, IntegerType target) {
  auto [lo, hi] = rangeOf(target);
  Value q = e.un<nn::RoundOp>(y);
  if (zpFloat)
    q = e.add(q, zpFloat);
  q = e.min(e.max(q, e.num(q, lo)), e.num(q, hi));
  return e.cast(q, target);
}

/// The quantized element type: the zero point's; without one, the
/// output_dtype attribute's (opset 21), else uint8.
FailureOr<IntegerType> quantizedType(NodeContext &c, Value zp) {
  if (!zp) {
    int64_t dt = c.intAttrOr("output_dtype", 0);
    if (dt == 0)
      return IntegerType::get(c.b.getContext(), 8, IntegerType::Unsigned);
    auto t = dyn_cast_or_null<IntegerType>(elementTypeOf(c.b.getContext(), static_cast<int32_t>(dt)));
    if (!t || t.getWidth() == 1 || t.getWidth() > 32)
      return c.error() << "output_dtype " << dt << " is not an 8, 16 or 32-bit integer type";
    return t;
  }
  auto t = dyn_cast<IntegerType>(typeOf(zp).getElementType());
  if (!t || t.getWidth() == 1 || t.getWidth() > 32)
    return c.error() << "the zero point must be an 8, 16 or 32-bit integer, got " << zp.getType();
  return t;
}

int64_t channelAxis(NodeContext &c, int64_t rank) {
  int64_t axis = c.intAttrOr("axis", 1);
  return axis < 0 ? axis + rank : axis;
}

HandlerResult quantizeLinear(NodeContext &c) {
  auto x = c.tensorInput(0), scale = c.tensorInput(1);
  if (failed(x) || failed(scale))
    return failure();
  auto xt = typeOf(*x);
  if (!isa<FloatType>(xt.getElementType()) || !xt.hasStaticShape())
    return c.error() << "expects a static float input, got " << xt;
  if (c.intAttrOr("block_size", 0) != 0)
    return c.error() << "blocked quantization (block_size) is not supported";
  Value zp = c.input(2);
  auto target = quantizedType(c, zp);
  if (failed(target))
    return failure();
  int64_t rank = xt.getRank(), axis = channelAxis(c, rank);
  // The axis matters only for per-channel scales (alongAxis checks them).
  int64_t channels = axis >= 0 && axis < rank ? xt.getDimSize(axis) : 0;
  Expr e{c};
  Type f = xt.getElementType();
  auto s = alongAxis(c, e, e.cast(*scale, f), axis, rank, channels, "y_scale");
  if (failed(s))
    return failure();
  Value zpf;
  if (zp) {
    auto z = alongAxis(c, e, e.cast(zp, f), axis, rank, channels, "y_zero_point");
    if (failed(z))
      return failure();
    zpf = *z;
  }
  return e.done(quantizeTo(e, e.div(*x, *s), zpf, *target));
}

HandlerResult dequantizeLinear(NodeContext &c) {
  auto x = c.tensorInput(0), scale = c.tensorInput(1);
  if (failed(x) || failed(scale))
    return failure();
  auto xt = typeOf(*x);
  if (!isa<IntegerType>(xt.getElementType()) || !xt.hasStaticShape())
    return c.error() << "expects a static integer input, got " << xt;
  if (c.intAttrOr("block_size", 0) != 0)
    return c.error() << "blocked quantization (block_size) is not supported";
  int64_t rank = xt.getRank(), axis = channelAxis(c, rank);
  // The axis matters only for per-channel scales (alongAxis checks them).
  int64_t channels = axis >= 0 && axis < rank ? xt.getDimSize(axis) : 0;
  Expr e{c};
  // (x - zp) in int32 (exact for every quantized type), then scaled.
  Type i32 = c.b.getI32Type(), f = typeOf(*scale).getElementType();
  Value q = e.cast(*x, i32);
  if (Value zp = c.input(2)) {
    auto z = alongAxis(c, e, e.cast(zp, i32), axis, rank, channels, "x_zero_point");
    if (failed(z))
      return failure();
    q = e.sub(q, *z);
  }
  auto s = alongAxis(c, e, *scale, axis, rank, channels, "x_scale");
  if (failed(s))
    return failure();
  Value y = e.mul(e.cast(q, f), *s);
  // output_dtype (opset 23): the result's float type, the scale's by default.
  if (int64_t dt = c.intAttrOr("output_dtype", 0)) {
    Type out = elementTypeOf(c.b.getContext(), static_cast<int32_t>(dt));
    if (!out || !isa<FloatType>(out))
      return c.error() << "output_dtype " << dt << " is not a float type Rewire supports";
    y = e.cast(y, out);
  }
  return e.done(y);
}

/// y_scale = (max(0, max x) - min(0, min x)) / 255, y_zero_point =
/// saturate(round(-min / y_scale)), y = saturate(round(x / y_scale) + zp).
HandlerResult dynamicQuantizeLinear(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  if (!xt.getElementType().isF32() || !xt.hasStaticShape() || xt.getNumElements() == 0)
    return c.error() << "expects a static non-empty f32 input, got " << xt;
  Expr e{c};
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < xt.getRank(); ++d)
    all.push_back(d);
  Value zero = e.num(*x, 0);
  Value lo = e.min(e.reduce<nn::ReduceMinOp>(*x, all, false), zero);
  Value hi = e.max(e.reduce<nn::ReduceMaxOp>(*x, all, false), zero);
  Value scale = e.div(e.sub(hi, lo), e.num(*x, 255));
  auto u8 = IntegerType::get(c.b.getContext(), 8, IntegerType::Unsigned);
  Value zp = quantizeTo(e, e.div(e.un<nn::NegOp>(lo), scale), Value(), u8);
  Value y = quantizeTo(e, e.div(*x, scale), e.cast(zp, xt.getElementType()), u8);
  if (!y || !scale || !zp)
    return failure();
  return SmallVector<Value>{y, scale, zp};
}

/// `q - zp` in f64: the integer operand of an integer matmul or conv. A
/// per-channel zero point of `channels` entries applies along `axis`.
FailureOr<Value> centered(NodeContext &c, Expr &e, Value q, Value zp, int64_t axis,
                          int64_t channels, StringRef what) {
  auto qt = typeOf(q);
  if (!isa<IntegerType>(qt.getElementType()) || !qt.hasStaticShape())
    return c.error() << "expects static integer operands, got " << qt;
  Type f64 = c.b.getF64Type();
  Value v = e.cast(q, f64);
  if (!zp)
    return v;
  auto z = alongAxis(c, e, e.cast(zp, f64), axis, qt.getRank(), channels, what);
  if (failed(z))
    return failure();
  return e.sub(v, *z);
}

/// MatMulInteger(A, B, a_zp, b_zp) -> int32; QLinearMatMul requantizes.
HandlerResult matMulInteger(NodeContext &c) {
  bool qlinear = c.node.getOpType() == "QLinearMatMul";
  unsigned ai = 0, bi = qlinear ? 3 : 1;
  auto a = c.tensorInput(ai), b = c.tensorInput(bi);
  if (failed(a) || failed(b))
    return failure();
  auto at = typeOf(*a), bt = typeOf(*b);
  if (at.getRank() < 1 || bt.getRank() < 1)
    return c.error() << "expects operands of rank >= 1";
  Value azp = c.input(qlinear ? 2 : 2), bzp = c.input(qlinear ? 5 : 3);
  Expr e{c};
  // a's zero point: one per row (axis rank - 2) or a scalar; b's: one per
  // column (the last axis) or a scalar.
  int64_t arank = at.getRank(), brank = bt.getRank();
  auto ac = centered(c, e, *a, azp, std::max<int64_t>(arank - 2, 0),
                     arank >= 2 ? at.getDimSize(arank - 2) : 1, "a_zero_point");
  auto bc = centered(c, e, *b, bzp, brank - 1, bt.getDimSize(brank - 1), "b_zero_point");
  if (failed(ac) || failed(bc))
    return failure();
  Value acc = make<nn::MatMulOp>(c, {*ac, *bc});
  if (!qlinear)
    return e.done(e.cast(acc, c.b.getI32Type()));
  auto as = c.tensorInput(1), bs = c.tensorInput(4), ys = c.tensorInput(6);
  if (failed(as) || failed(bs) || failed(ys))
    return failure();
  Value yzp = c.input(7);
  auto target = quantizedType(c, yzp);
  if (failed(target))
    return failure();
  // The multiplier a_scale * b_scale / y_scale (per column when b's scale is).
  Type f32 = c.b.getF32Type();
  auto bsv = alongAxis(c, e, *bs, acc ? typeOf(acc).getRank() - 1 : 0,
                       acc ? typeOf(acc).getRank() : 1,
                       acc ? typeOf(acc).getShape().back() : 1, "b_scale");
  if (failed(bsv) || !acc)
    return failure();
  Value m = e.div(e.mul(e.cast(e.reshape(*as, {}), f32), e.cast(*bsv, f32)),
                  e.cast(e.reshape(*ys, {}), f32));
  Value y = e.mul(e.cast(acc, f32), m);
  return e.done(quantizeTo(e, y, yzp ? e.cast(e.reshape(yzp, {}), f32) : Value(), *target));
}

/// ConvInteger(x, w, x_zp, w_zp) -> int32; QLinearConv requantizes (with
/// an int32 bias added to the accumulator).
HandlerResult convInteger(NodeContext &c) {
  bool qlinear = c.node.getOpType() == "QLinearConv";
  unsigned xi = 0, wi = qlinear ? 3 : 1;
  auto x = c.tensorInput(xi), w = c.tensorInput(wi);
  if (failed(x) || failed(w))
    return failure();
  auto xt = typeOf(*x), wt = typeOf(*w);
  if (xt.getRank() < 3 || wt.getRank() != xt.getRank())
    return c.error() << "expects X [N, C, D...] and W of the same rank, got " << xt << " and "
                     << wt;
  Value xzp = c.input(2), wzp = c.input(qlinear ? 5 : 3);
  Expr e{c};
  auto xc = centered(c, e, *x, xzp, 1, 1, "x_zero_point");
  auto wc = centered(c, e, *w, wzp, 0, wt.getDimSize(0), "w_zero_point");
  if (failed(xc) || failed(wc))
    return failure();
  Value bias;
  if (qlinear && c.input(8))
    bias = e.cast(c.input(8), c.b.getF64Type());
  auto acc = convolution(c, *xc, *wc, bias);
  if (failed(acc))
    return failure();
  if (!qlinear)
    return e.done(e.cast(*acc, c.b.getI32Type()));
  auto xs = c.tensorInput(1), ws = c.tensorInput(4), ys = c.tensorInput(6);
  if (failed(xs) || failed(ws) || failed(ys))
    return failure();
  Value yzp = c.input(7);
  auto target = quantizedType(c, yzp);
  if (failed(target))
    return failure();
  Type f32 = c.b.getF32Type();
  int64_t rank = typeOf(*acc).getRank();
  auto wsv = alongAxis(c, e, *ws, 1, rank, wt.getDimSize(0), "w_scale");
  if (failed(wsv))
    return failure();
  Value m = e.div(e.mul(e.cast(e.reshape(*xs, {}), f32), e.cast(*wsv, f32)),
                  e.cast(e.reshape(*ys, {}), f32));
  Value y = e.mul(e.cast(*acc, f32), m);
  return e.done(quantizeTo(e, y, yzp ? e.cast(e.reshape(yzp, {}), f32) : Value(), *target));
}

const Handler kHandlers[] = {
    {"QuantizeLinear", 10, 28, quantizeLinear},
    {"DequantizeLinear", 10, 28, dequantizeLinear},
    {"DynamicQuantizeLinear", 11, 28, dynamicQuantizeLinear},
    {"MatMulInteger", 10, 28, matMulInteger},
    {"QLinearMatMul", 10, 28, matMulInteger},
    {"ConvInteger", 10, 28, convInteger},
    {"QLinearConv", 10, 28, convInteger},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::quantizeHandlers() { return kHandlers; }
