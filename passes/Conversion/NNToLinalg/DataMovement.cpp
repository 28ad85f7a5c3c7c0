//===- DataMovement.cpp - nn slice/concat/(un)squeeze/cast to linalg ------===//
//
// The data-movement part of convert-nn-to-linalg: slices with positive steps
// become tensor.extract_slice (negative steps a gather-style generic),
// concat a chain of tensor.insert_slice into one empty tensor, squeeze and
// unsqueeze a reshape, cast an elementwise generic of arith conversions.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/NNToLinalg/NNToLinalgPatterns.h"
#include "passes/Conversion/LinalgBuilders.h"

#include "dialects/nn/NNOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace rewire;

namespace {

struct SliceLowering : OpConversionPattern<nn::SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::SliceOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto in = cast<RankedTensorType>(a.getX().getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (!in.hasStaticShape() || !type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    int64_t rank = in.getRank();
    SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
    ArrayRef<int64_t> starts = op.getStarts();
    SmallVector<int64_t> axes, steps;
    if (auto ax = op.getAxes())
      axes.assign(ax->begin(), ax->end());
    else
      for (int64_t i = 0; i < static_cast<int64_t>(starts.size()); ++i)
        axes.push_back(i);
    if (auto st = op.getSteps())
      steps.assign(st->begin(), st->end());
    else
      steps.assign(starts.size(), 1);
    bool negative = false;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
      int64_t d = in.getDimSize(axis), step = steps[i];
      if (step == 0)
        return rw.notifyMatchFailure(op, "zero step");
      int64_t start = starts[i] < 0 ? starts[i] + d : starts[i];
      start = step > 0 ? std::clamp<int64_t>(start, 0, d) : std::clamp<int64_t>(start, 0, d - 1);
      // An empty result needs no valid start.
      offsets[axis] = type.getDimSize(axis) == 0 ? 0 : start;
      strides[axis] = step;
      negative |= step < 0;
    }
    Location loc = op.getLoc();
    if (!negative) {
      rw.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, type, a.getX(), ValueRange{}, ValueRange{},
                                                    ValueRange{}, offsets, type.getShape(), strides);
      return success();
    }
    // out[i] = x[offset + i * stride] for every dimension.
    Value init = tensor::EmptyOp::create(rw, loc, type.getShape(), type.getElementType());
    Value x = a.getX();
    rw.replaceOp(op, rewire::parallelGeneric(
                         rw, loc, init, ValueRange{}, {},
                         [&](OpBuilder &b, Location l, ValueRange) -> Value {
                           SmallVector<Value> at;
                           for (int64_t dim = 0; dim < rank; ++dim) {
                             Value i = linalg::IndexOp::create(b, l, dim);
                             Value scaled = arith::MulIOp::create(
                                 b, l, i, arith::ConstantIndexOp::create(b, l, strides[dim]));
                             at.push_back(arith::AddIOp::create(
                                 b, l, scaled, arith::ConstantIndexOp::create(b, l, offsets[dim])));
                           }
                           return tensor::ExtractOp::create(b, l, x, at);
                         }));
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<nn::ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::ConcatOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    int64_t rank = type.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return rw.notifyMatchFailure(op, "axis out of range");
    Location loc = op.getLoc();
    Value out = tensor::EmptyOp::create(rw, loc, type.getShape(), type.getElementType());
    int64_t at = 0;
    for (Value in : a.getInputs()) {
      auto t = cast<RankedTensorType>(in.getType());
      // An empty part adds nothing (and its offset may be the axis' end,
      // which insert_slice rejects).
      if (t.getNumElements() == 0)
        continue;
      SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
      offsets[axis] = at;
      out = tensor::InsertSliceOp::create(rw, loc, in, out, ValueRange{}, ValueRange{},
                                          ValueRange{}, offsets, t.getShape(), strides);
      at += t.getDimSize(axis);
    }
    rw.replaceOp(op, out);
    return success();
  }
};

template <typename OpTy>
struct ReshapeLike : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    rw.replaceOp(op, rewire::reshapeStatic(rw, op.getLoc(), a.getX(), type));
    return success();
  }
};

/// nn.stop_gradient is the identity once gradients exist.
struct StopGradientLowering : OpConversionPattern<nn::StopGradientOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::StopGradientOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    rw.replaceOp(op, a.getX());
    return success();
  }
};

struct CastLowering : OpConversionPattern<nn::CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::CastOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto in = cast<RankedTensorType>(a.getX().getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    Type from = in.getElementType(), to = type.getElementType();
    if (!from.isIntOrFloat() || !to.isIntOrFloat() || from.isUnsignedInteger() ||
        to.isUnsignedInteger())
      return rw.notifyMatchFailure(op, "signless integer and float element types only");
    bool fromUnsigned = hasUnsignedOperands(op), toUnsigned = hasUnsignedResults(op);
    Location loc = op.getLoc();
    Value init = tensor::EmptyOp::create(rw, loc, type.getShape(), to);
    rw.replaceOp(op, rewire::parallelGeneric(rw, loc, init, {a.getX()},
                                             {rw.getMultiDimIdentityMap(type.getRank())},
                                             [&](OpBuilder &b, Location l, ValueRange v) {
                                               return convertElement(b, l, v[0], from, to,
                                                                     fromUnsigned, toUnsigned);
                                             }));
    return success();
  }
};

/// nn.bitcast: arith.bitcast per element (after the unsigned types became
/// signless, integer to integer of one width is the identity); a bool
/// widens to 0/1 and an 8-bit integer narrows to `!= 0`.
struct BitcastLowering : OpConversionPattern<nn::BitcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::BitcastOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto in = cast<RankedTensorType>(a.getX().getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    Type from = in.getElementType(), to = type.getElementType();
    Location loc = op.getLoc();
    Value init = tensor::EmptyOp::create(rw, loc, type.getShape(), to);
    rw.replaceOp(op, rewire::parallelGeneric(
                         rw, loc, init, {a.getX()}, {rw.getMultiDimIdentityMap(type.getRank())},
                         [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                           if (from == to)
                             return v[0];
                           if (from.isInteger(1))
                             return arith::ExtUIOp::create(b, l, to, v[0]);
                           if (to.isInteger(1))
                             return arith::CmpIOp::create(
                                 b, l, arith::CmpIPredicate::ne, v[0],
                                 arith::ConstantOp::create(b, l, b.getIntegerAttr(from, 0)));
                           return arith::BitcastOp::create(b, l, to, v[0]);
                         }));
    return success();
  }
};

} // namespace

/// ONNX Cast semantics: bool is i1 (nonzero is true); float to int
/// truncates toward zero; a narrower integer keeps the low bits; a wider one
/// extends by the source's signedness.
Value rewire::convertElement(OpBuilder &b, Location l, Value v, Type from, Type to,
                             bool fromUnsigned, bool toUnsigned) {
  if (from == to)
    return v;
  bool fromFloat = isa<FloatType>(from), toFloat = isa<FloatType>(to);
  if (to.isInteger(1)) {
    Value zero = fromFloat ? rewire::floatConstant(b, l, from, 0.0)
                           : arith::ConstantOp::create(b, l, b.getIntegerAttr(from, 0)).getResult();
    return fromFloat ? arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, v, zero).getResult()
                     : arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, v, zero).getResult();
  }
  if (fromFloat && toFloat)
    return from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth()
               ? arith::ExtFOp::create(b, l, to, v).getResult()
               : arith::TruncFOp::create(b, l, to, v).getResult();
  if (fromFloat) {
    // To a narrow unsigned type through i64, so a negative value wraps as
    // NumPy's astype does (fptoui of a negative value is undefined).
    if (toUnsigned && to.getIntOrFloatBitWidth() == 64)
      return arith::FPToUIOp::create(b, l, to, v);
    if (toUnsigned)
      return arith::TruncIOp::create(b, l, to, arith::FPToSIOp::create(b, l, b.getI64Type(), v));
    return arith::FPToSIOp::create(b, l, to, v);
  }
  bool unsignedSource = from.isInteger(1) || fromUnsigned;
  if (toFloat)
    return unsignedSource ? arith::UIToFPOp::create(b, l, to, v).getResult()
                          : arith::SIToFPOp::create(b, l, to, v).getResult();
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw == tw)
    return v;
  if (fw < tw)
    return unsignedSource ? arith::ExtUIOp::create(b, l, to, v).getResult()
                          : arith::ExtSIOp::create(b, l, to, v).getResult();
  return arith::TruncIOp::create(b, l, to, v);
}

void rewire::populateNNDataMovementLowerings(RewritePatternSet &patterns) {
  patterns.add<SliceLowering, ConcatLowering, StopGradientLowering, ReshapeLike<nn::SqueezeOp>,
               ReshapeLike<nn::UnsqueezeOp>, CastLowering, BitcastLowering>(patterns.getContext());
}
