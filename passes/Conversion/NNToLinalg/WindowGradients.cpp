//===- WindowGradients.cpp - Gradients of convolution and pooling ---------===//
//
// conv_weight_grad: one contraction over (n, oh, ow) reading the padded
// input at oh * stride + kh * dilation. conv_input_grad: the output gradient
// spread onto a zero tensor at the stride (dilation and padding in one
// strided tensor.insert_slice), then a stride-1 correlation with the kernel
// read backwards; the padding is cut off at the end. max_pool_grad: the first
// maximum of each window (row-major, strict >), then the same spreading, each
// input position gathering the gradients of the windows whose maximum it is.
// All 2-D NCHW with static shapes; groups as an extra parallel dimension.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/NNToLinalg/NNToLinalgPatterns.h"

#include "dialects/nn/NNOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
using namespace rewire;

namespace {

using utils::IteratorType;

/// The window attributes of a 2-D op, defaults filled in.
struct Window {
  SmallVector<int64_t> strides, pads, dilations;
  int64_t kh = 1, kw = 1;
};

Window windowOf(std::optional<ArrayRef<int64_t>> strides, std::optional<ArrayRef<int64_t>> pads,
                std::optional<ArrayRef<int64_t>> dilations) {
  Window w;
  w.strides.assign(strides ? strides->begin() : nullptr, strides ? strides->end() : nullptr);
  w.pads.assign(pads ? pads->begin() : nullptr, pads ? pads->end() : nullptr);
  w.dilations.assign(dilations ? dilations->begin() : nullptr, dilations ? dilations->end() : nullptr);
  if (w.strides.empty())
    w.strides = {1, 1};
  if (w.pads.empty())
    w.pads = {0, 0, 0, 0};
  if (w.dilations.empty())
    w.dilations = {1, 1};
  return w;
}

bool isStatic2d(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && rt.hasStaticShape() && rt.getRank() == 4;
}

Value zeros(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elt, Attribute value) {
  Value e = tensor::EmptyOp::create(b, loc, shape, elt);
  Value c = arith::ConstantOp::create(b, loc, cast<TypedAttr>(value));
  return linalg::FillOp::create(b, loc, c, e).getResult(0);
}

/// `src` [N, C, OH, OW] placed into a fill-valued [N, C, OH', OW'] tensor at
/// spatial offsets `off` every `stride` elements.
Value spread(OpBuilder &b, Location loc, Value src, ArrayRef<int64_t> shape, Attribute fill,
             ArrayRef<int64_t> off, ArrayRef<int64_t> stride) {
  auto st = cast<RankedTensorType>(src.getType());
  Value dest = zeros(b, loc, shape, st.getElementType(), fill);
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(off[0]),
                                       b.getIndexAttr(off[1])};
  SmallVector<OpFoldResult> sizes, strides = {b.getIndexAttr(1), b.getIndexAttr(1),
                                              b.getIndexAttr(stride[0]), b.getIndexAttr(stride[1])};
  for (int64_t d : st.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return tensor::InsertSliceOp::create(b, loc, src, dest, offsets, sizes, strides);
}

/// The [N, C, H, W] interior of a [N, C, Hp, Wp] tensor padded by `pads`.
Value unpad(OpBuilder &b, Location loc, Value x, RankedTensorType type, ArrayRef<int64_t> pads) {
  if (cast<RankedTensorType>(x.getType()) == type)
    return x;
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(pads[0]),
                                       b.getIndexAttr(pads[1])};
  SmallVector<OpFoldResult> sizes, ones(4, b.getIndexAttr(1));
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return tensor::ExtractSliceOp::create(b, loc, type, x, offsets, sizes, ones);
}

/// init + sum over the last three of eight loops of a * b (five parallel
/// loops: the output's), reading through `maps` (a, b, output).
Value contract(OpBuilder &b, Location loc, Value x, Value y, Value init, ArrayRef<AffineMap> maps) {
  SmallVector<IteratorType> iters(5, IteratorType::parallel);
  iters.append(3, IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{x, y}, ValueRange{init}, maps, iters,
             [](OpBuilder &nb, Location l, ValueRange v) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::AddFOp::create(nb, l, v[2], arith::MulFOp::create(nb, l, v[0], v[1]))});
             })
      .getResult(0);
}

/// [A, G * B, ...] as [A, G, B, ...] (split = 1) or [G * B, ...] as
/// [G, B, ...] (split = 0).
Value splitGroups(OpBuilder &b, Location loc, Value x, int64_t split, int64_t group) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    if (i == split) {
      shape.push_back(group);
      shape.push_back(t.getDimSize(i) / group);
    } else {
      shape.push_back(t.getDimSize(i));
    }
  }
  return reshapeStatic(b, loc, x, RankedTensorType::get(shape, t.getElementType()));
}

struct ConvWeightGradLowering : OpConversionPattern<nn::ConvWeightGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::ConvWeightGradOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!isStatic2d(type) || !isStatic2d(a.getX().getType()) || !isStatic2d(a.getDy().getType()))
      return rw.notifyMatchFailure(op, "static 2-D convolutions only");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Window win = windowOf(op.getStrides(), op.getPads(), op.getDilations());
    int64_t g = static_cast<int64_t>(op.getGroup());
    Type elt = type.getElementType();
    Value x = splitGroups(rw, loc, padSpatial(rw, loc, a.getX(), win.pads, 0.0), 1, g);
    Value dy = splitGroups(rw, loc, a.getDy(), 1, g);
    // dw[g, f, c, kh, kw] = sum_{n, oh, ow} dy[n, g, f, oh, ow] *
    //                       x[n, g, c, oh * s + kh * d, ow * s + kw * d]
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap xm = AffineMap::get(8, 0, {d(5), d(0), d(2), d(6) * win.strides[0] + d(3) * win.dilations[0],
                                         d(7) * win.strides[1] + d(4) * win.dilations[1]}, ctx);
    AffineMap dym = AffineMap::get(8, 0, {d(5), d(0), d(1), d(6), d(7)}, ctx);
    AffineMap om = AffineMap::get(8, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx);
    SmallVector<int64_t> shape = {g, type.getDimSize(0) / g, type.getDimSize(1), type.getDimSize(2),
                                  type.getDimSize(3)};
    Value init = zeros(rw, loc, shape, elt, rw.getFloatAttr(elt, 0.0));
    Value dw = contract(rw, loc, dy, x, init, {dym, xm, om});
    rw.replaceOp(op, reshapeStatic(rw, loc, dw, type));
    return success();
  }
};

struct ConvInputGradLowering : OpConversionPattern<nn::ConvInputGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::ConvInputGradOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    auto dyt = dyn_cast<RankedTensorType>(a.getDy().getType());
    auto wt = dyn_cast<RankedTensorType>(a.getW().getType());
    if (!isStatic2d(type) || !isStatic2d(dyt) || !isStatic2d(wt))
      return rw.notifyMatchFailure(op, "static 2-D convolutions only");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Window win = windowOf(op.getStrides(), op.getPads(), op.getDilations());
    int64_t g = static_cast<int64_t>(op.getGroup());
    Type elt = type.getElementType();
    int64_t n = type.getDimSize(0), c = type.getDimSize(1);
    int64_t hp = type.getDimSize(2) + win.pads[0] + win.pads[2];
    int64_t wp = type.getDimSize(3) + win.pads[1] + win.pads[3];
    int64_t kh = wt.getDimSize(2), kw = wt.getDimSize(3);
    int64_t reachH = (kh - 1) * win.dilations[0], reachW = (kw - 1) * win.dilations[1];
    // e[.., reach + oh * s, ..] = dy[.., oh, ..], zero elsewhere.
    Value e = spread(rw, loc, a.getDy(), {n, dyt.getDimSize(1), hp + reachH, wp + reachW},
                     rw.getFloatAttr(elt, 0.0), {reachH, reachW}, win.strides);
    e = splitGroups(rw, loc, e, 1, g);
    Value w = splitGroups(rw, loc, a.getW(), 0, g);
    // dxp[n, g, c, i, j] = sum_{f, kh, kw} e[n, g, f, i + reach - kh d, ..] * w[g, f, c, kh, kw]
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap em = AffineMap::get(8, 0, {d(0), d(1), d(5), d(3) + reachH - d(6) * win.dilations[0],
                                         d(4) + reachW - d(7) * win.dilations[1]}, ctx);
    AffineMap wm = AffineMap::get(8, 0, {d(1), d(5), d(2), d(6), d(7)}, ctx);
    AffineMap om = AffineMap::get(8, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx);
    Value init = zeros(rw, loc, {n, g, c / g, hp, wp}, elt, rw.getFloatAttr(elt, 0.0));
    Value dxp = contract(rw, loc, e, w, init, {em, wm, om});
    dxp = reshapeStatic(rw, loc, dxp, RankedTensorType::get({n, c, hp, wp}, elt));
    rw.replaceOp(op, unpad(rw, loc, dxp, type, win.pads));
    return success();
  }
};

struct MaxPoolGradLowering : OpConversionPattern<nn::MaxPoolGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::MaxPoolGradOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    auto dyt = dyn_cast<RankedTensorType>(a.getDy().getType());
    if (!isStatic2d(type) || !isStatic2d(dyt) || op.getKernelShape().size() != 2)
      return rw.notifyMatchFailure(op, "static 2-D pooling only");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Window win = windowOf(op.getStrides(), op.getPads(), std::nullopt);
    Type elt = type.getElementType(), i64 = rw.getI64Type();
    int64_t kh = op.getKernelShape()[0], kw = op.getKernelShape()[1];
    Value xp = padSpatial(rw, loc, a.getX(), win.pads, -INFINITY);
    auto xpt = cast<RankedTensorType>(xp.getType());
    int64_t hp = xpt.getDimSize(2), wp = xpt.getDimSize(3);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };

    // The flat padded position of each window's first maximum (-1: none).
    AffineMap xm = AffineMap::get(6, 0, {d(0), d(1), d(2) * win.strides[0] + d(4),
                                         d(3) * win.strides[1] + d(5)}, ctx);
    AffineMap om = AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx);
    Value maxInit = zeros(rw, loc, dyt.getShape(), elt, rw.getFloatAttr(elt, -INFINITY));
    Value argInit = zeros(rw, loc, dyt.getShape(), i64, rw.getI64IntegerAttr(-1));
    SmallVector<IteratorType> iters(4, IteratorType::parallel);
    iters.append(2, IteratorType::reduction);
    // The window's extent, as linalg's pooling ops give it: an operand read
    // at (kh, kw) whose values are never used.
    Value window = tensor::EmptyOp::create(rw, loc, op.getKernelShape(), elt);
    AffineMap wm = AffineMap::get(6, 0, {d(4), d(5)}, ctx);
    int64_t s0 = win.strides[0], s1 = win.strides[1];
    auto argmax = linalg::GenericOp::create(
        rw, loc, TypeRange{maxInit.getType(), argInit.getType()}, ValueRange{xp, window},
        ValueRange{maxInit, argInit}, ArrayRef<AffineMap>{xm, wm, om, om}, iters,
        [&](OpBuilder &b, Location l, ValueRange v) {
          auto index = [&](unsigned dim) -> Value {
            return arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, dim));
          };
          auto k = [&](int64_t c) -> Value { return arith::ConstantOp::create(b, l, b.getI64IntegerAttr(c)); };
          Value row = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, index(2), k(s0)), index(4));
          Value col = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, index(3), k(s1)), index(5));
          Value flat = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, row, k(wp)), col);
          Value greater = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, v[0], v[2]);
          linalg::YieldOp::create(b, l, ValueRange{arith::SelectOp::create(b, l, greater, v[0], v[2]),
                                                   arith::SelectOp::create(b, l, greater, flat, v[3])});
        });
    Value arg = argmax.getResult(1);

    // dxp[i, j] = sum over windows (oh, ow) covering (i, j) whose maximum is
    // at (i, j) of dy[oh, ow]; windows read through the spread tensors.
    SmallVector<int64_t> spreadShape = {type.getDimSize(0), type.getDimSize(1), hp + kh - 1,
                                        wp + kw - 1};
    Value e = spread(rw, loc, a.getDy(), spreadShape, rw.getFloatAttr(elt, 0.0), {kh - 1, kw - 1},
                     win.strides);
    Value ea = spread(rw, loc, arg, spreadShape, rw.getI64IntegerAttr(-1), {kh - 1, kw - 1},
                      win.strides);
    AffineMap em = AffineMap::get(6, 0, {d(0), d(1), d(2) + (kh - 1) - d(4), d(3) + (kw - 1) - d(5)}, ctx);
    Value init = zeros(rw, loc, xpt.getShape(), elt, rw.getFloatAttr(elt, 0.0));
    Value dxp = linalg::GenericOp::create(
                    rw, loc, TypeRange{init.getType()}, ValueRange{e, ea, window}, ValueRange{init},
                    ArrayRef<AffineMap>{em, em, wm, om}, iters,
                    [&](OpBuilder &b, Location l, ValueRange v) {
                      auto index = [&](unsigned dim) -> Value {
                        return arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, dim));
                      };
                      Value flat = arith::AddIOp::create(
                          b, l,
                          arith::MulIOp::create(b, l, index(2),
                                                arith::ConstantOp::create(b, l, b.getI64IntegerAttr(wp))),
                          index(3));
                      Value mine = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, v[1], flat);
                      Value zero = floatConstant(b, l, elt, 0.0);
                      Value add = arith::SelectOp::create(b, l, mine, v[0], zero);
                      linalg::YieldOp::create(b, l, ValueRange{arith::AddFOp::create(b, l, v[3], add)});
                    })
                    .getResult(0);
    rw.replaceOp(op, unpad(rw, loc, dxp, type, win.pads));
    return success();
  }
};

} // namespace

void rewire::populateNNWindowGradientLowerings(RewritePatternSet &patterns) {
  patterns.add<ConvWeightGradLowering, ConvInputGradLowering, MaxPoolGradLowering>(
      patterns.getContext());
}
