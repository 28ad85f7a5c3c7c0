//===- NNToLinalg.cpp - nn ops to linalg on tensors -----------------------===//
//
// Implements convert-nn-to-linalg for the elementwise, matmul, normalization,
// reduction and layout ops (see Passes.td). Broadcasting is encoded in the
// indexing maps, so no operand is ever materialized at the result's shape.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/NNToLinalg/NNToLinalgPatterns.h"

#include "dialects/nn/NNDecompose.h"
#include "dialects/nn/NNOps.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace rewire {
#define GEN_PASS_DEF_CONVERTNNTOLINALG
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

Value cst(OpBuilder &b, Location l, Type t, double v) {
  return floatConstant(b, l, t, v);
}

/// The map that reads `operand` (ONNX-broadcast) at a point of `result`.
AffineMap broadcastMap(MLIRContext *ctx, RankedTensorType operand,
                       RankedTensorType result) {
  int64_t r = result.getRank(), o = operand.getRank();
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < o; ++i) {
    int64_t dim = r - o + i;
    bool stretched = operand.getDimSize(i) == 1 && result.getDimSize(dim) != 1;
    exprs.push_back(stretched ? getAffineConstantExpr(0, ctx)
                              : getAffineDimExpr(dim, ctx));
  }
  return AffineMap::get(r, 0, exprs, ctx);
}

/// A parallel generic producing `type` (static), reading `inputs` via `maps`.
Value generic(OpBuilder &b, Location loc, RankedTensorType type,
              ValueRange inputs, ArrayRef<AffineMap> maps, BodyFn body) {
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return parallelGeneric(b, loc, init, inputs, maps, body);
}

enum class Reduction { sum, max, min, prod };

/// Reduces `x` over `axes` (sum, max, min or product; float max/min
/// propagate NaN; integers compare signed, or unsigned when `isUnsigned`;
/// on i1 max is any and min all), keeping them as size-1 dims.
Value reduceKeep(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> axes,
                 Reduction kind, bool isUnsigned = false) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<int64_t> shape(type.getShape());
  SmallVector<AffineExpr> out;
  SmallVector<utils::IteratorType> iters;
  for (int64_t i = 0; i < rank; ++i) {
    bool red = llvm::is_contained(axes, i);
    if (red)
      shape[i] = 1;
    out.push_back(red ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(i, ctx));
    iters.push_back(red ? utils::IteratorType::reduction
                        : utils::IteratorType::parallel);
  }
  Type elt = type.getElementType();
  auto outType = RankedTensorType::get(shape, elt);
  Value init = tensor::EmptyOp::create(b, loc, shape, elt);
  bool isInt = isa<IntegerType>(elt);
  // i1 is unsigned: max = or, min = and.
  isUnsigned |= elt.isInteger(1);
  Value start;
  if (isInt) {
    unsigned w = elt.getIntOrFloatBitWidth();
    APInt v = kind == Reduction::max  ? (isUnsigned ? APInt::getMinValue(w) : APInt::getSignedMinValue(w))
              : kind == Reduction::min ? (isUnsigned ? APInt::getMaxValue(w) : APInt::getSignedMaxValue(w))
              : kind == Reduction::prod ? APInt(w, 1)
                                        : APInt(w, 0);
    start = arith::ConstantOp::create(b, loc, b.getIntegerAttr(elt, v));
  } else {
    start = cst(b, loc, elt, kind == Reduction::max    ? -INFINITY
                             : kind == Reduction::min  ? INFINITY
                             : kind == Reduction::prod ? 1.0
                                                       : 0.0);
  }
  init = linalg::FillOp::create(b, loc, start, init).getResult(0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{outType}, ValueRange{x}, ValueRange{init},
             ArrayRef<AffineMap>{b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, out, ctx)},
             iters,
             [&](OpBuilder &nb, Location l, ValueRange a) {
               if (isInt) {
                 Value v;
                 switch (kind) {
                 case Reduction::max:
                   v = isUnsigned ? arith::MaxUIOp::create(nb, l, a[0], a[1]).getResult()
                                  : arith::MaxSIOp::create(nb, l, a[0], a[1]).getResult();
                   break;
                 case Reduction::min:
                   v = isUnsigned ? arith::MinUIOp::create(nb, l, a[0], a[1]).getResult()
                                  : arith::MinSIOp::create(nb, l, a[0], a[1]).getResult();
                   break;
                 case Reduction::prod:
                   v = arith::MulIOp::create(nb, l, a[0], a[1]);
                   break;
                 case Reduction::sum:
                   v = arith::AddIOp::create(nb, l, a[0], a[1]);
                   break;
                 }
                 linalg::YieldOp::create(nb, l, v);
                 return;
               }
               Value v = kind == Reduction::max
                             ? arith::MaximumFOp::create(nb, l, a[0], a[1]).getResult()
                         : kind == Reduction::min
                             ? arith::MinimumFOp::create(nb, l, a[0], a[1]).getResult()
                         : kind == Reduction::prod
                             ? arith::MulFOp::create(nb, l, a[0], a[1]).getResult()
                             : arith::AddFOp::create(nb, l, a[0], a[1]).getResult();
               linalg::YieldOp::create(nb, l, v);
             })
      .getResult(0);
}

/// Unsigned integer division that never traps: a zero divisor yields 0.
Value safeDivUI(OpBuilder &b, Location l, Value x, Value y) {
  Type t = x.getType();
  Value zero = arith::ConstantOp::create(b, l, b.getIntegerAttr(t, 0));
  Value one = arith::ConstantOp::create(b, l, b.getIntegerAttr(t, 1));
  Value yZero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, zero);
  Value q = arith::DivUIOp::create(b, l, x, arith::SelectOp::create(b, l, yZero, one, y));
  return arith::SelectOp::create(b, l, yZero, zero, q);
}

/// x ** y for integers, wrapping like repeated multiplication (NumPy's
/// integer power): square-and-multiply over every bit of y. A negative y
/// gives the integer part of 1 / x**|y|: 1 for x = 1, +-1 for x = -1, else
/// 0 (x = 0 included, where NumPy raises).
Value integerPow(OpBuilder &b, Location l, Value x, Value y, bool isUnsigned) {
  Type t = x.getType();
  unsigned width = t.getIntOrFloatBitWidth();
  auto c = [&](int64_t v) { return arith::ConstantOp::create(b, l, b.getIntegerAttr(t, v)).getResult(); };
  Value zero = c(0), one = c(1);
  Value acc = one, base = x;
  for (unsigned bit = 0; bit < width; ++bit) {
    Value set = arith::CmpIOp::create(
        b, l, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, l, arith::ShRUIOp::create(b, l, y, c(bit)), one), zero);
    acc = arith::SelectOp::create(b, l, set, arith::MulIOp::create(b, l, acc, base), acc);
    base = arith::MulIOp::create(b, l, base, base);
  }
  if (isUnsigned)
    return acc;
  Value negative = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, y, zero);
  Value xIsOne = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, x, one);
  Value xIsMinusOne = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, x, c(-1));
  Value odd = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, arith::AndIOp::create(b, l, y, one), zero);
  Value inv = arith::SelectOp::create(
      b, l, xIsOne, one,
      arith::SelectOp::create(b, l, xIsMinusOne, arith::SelectOp::create(b, l, odd, c(-1), one), zero));
  return arith::SelectOp::create(b, l, negative, inv, acc);
}

/// Signed integer division that never traps: a zero divisor yields 0
/// (rewire-check-indices reports it as an error on the CPU before this runs)
/// and INT_MIN / -1 wraps to INT_MIN, as two's complement arithmetic does.
Value safeDivSI(OpBuilder &b, Location l, Value x, Value y) {
  Type t = x.getType();
  unsigned width = t.getIntOrFloatBitWidth();
  auto c = [&](APInt v) { return arith::ConstantOp::create(b, l, b.getIntegerAttr(t, v)); };
  Value zero = c(APInt(width, 0)), one = c(APInt(width, 1));
  Value minusOne = c(APInt::getAllOnes(width)), min = c(APInt::getSignedMinValue(width));
  Value yZero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, zero);
  Value overflow = arith::AndIOp::create(
      b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, x, min),
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, minusOne));
  Value safeY = arith::SelectOp::create(
      b, l, arith::OrIOp::create(b, l, yZero, overflow), one, y);
  Value q = arith::DivSIOp::create(b, l, x, safeY);
  return arith::SelectOp::create(b, l, yZero, zero, q);
}

/// 2 or 3 where `pow`'s exponent is that constant for every element: such a
/// power is one or two multiplies (as PyTorch and ONNX Runtime compute
/// them) instead of a libm powf call per element (GPT-2's tanh GELU,
/// `0.044715 * x^3`, exported as Pow(x, 3): 3.7% of a 2-layer forward).
/// x*x is powf(x, 2) exactly; x*x*x is within an ulp of powf(x, 3), with
/// the same infinities, NaNs and signed zeros.
std::optional<int> smallPower(nn::PowOp op, Value converted) {
  DenseElementsAttr attr;
  if (!matchPattern(op.getRhs(), m_Constant(&attr)) && !matchPattern(converted, m_Constant(&attr)))
    return std::nullopt;
  if (!attr.isSplat() || !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  APFloat e = attr.getSplatValue<APFloat>();
  for (int n : {2, 3}) {
    APFloat want(static_cast<double>(n));
    bool lost;
    want.convert(e.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
    if (e.compare(want) == APFloat::cmpEqual)
      return n;
  }
  return std::nullopt;
}

template <typename OpTy>
struct Binary : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    bool isInt = type.getElementType().isSignlessInteger() &&
                 !type.getElementType().isInteger(1);
    bool isUnsigned = hasUnsignedOperands(op);
    if (!type.hasStaticShape() || (!isa<FloatType>(type.getElementType()) && !isInt))
      return rw.notifyMatchFailure(op, "static float or integer tensors only");
    MLIRContext *ctx = op.getContext();
    auto lt = cast<RankedTensorType>(a.getLhs().getType());
    auto rt = cast<RankedTensorType>(a.getRhs().getType());
    if constexpr (std::is_same_v<OpTy, nn::PowOp>) {
      if (std::optional<int> n = isInt ? std::nullopt : smallPower(op, a.getRhs())) {
        rw.replaceOp(op, generic(rw, op.getLoc(), type, {a.getLhs()}, {broadcastMap(ctx, lt, type)},
                                 [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                                   Value sq = arith::MulFOp::create(b, l, v[0], v[0]);
                                   return *n == 2 ? sq : arith::MulFOp::create(b, l, sq, v[0]);
                                 }));
        return success();
      }
    }
    rw.replaceOp(op, generic(rw, op.getLoc(), type, {a.getLhs(), a.getRhs()},
                             {broadcastMap(ctx, lt, type), broadcastMap(ctx, rt, type)},
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               if (isInt) {
                                 if constexpr (std::is_same_v<OpTy, nn::AddOp>)
                                   return arith::AddIOp::create(b, l, v[0], v[1]);
                                 else if constexpr (std::is_same_v<OpTy, nn::SubOp>)
                                   return arith::SubIOp::create(b, l, v[0], v[1]);
                                 else if constexpr (std::is_same_v<OpTy, nn::MulOp>)
                                   return arith::MulIOp::create(b, l, v[0], v[1]);
                                 else if constexpr (std::is_same_v<OpTy, nn::MaxOp>)
                                   return isUnsigned ? arith::MaxUIOp::create(b, l, v[0], v[1]).getResult()
                                                     : arith::MaxSIOp::create(b, l, v[0], v[1]).getResult();
                                 else if constexpr (std::is_same_v<OpTy, nn::MinOp>)
                                   return isUnsigned ? arith::MinUIOp::create(b, l, v[0], v[1]).getResult()
                                                     : arith::MinSIOp::create(b, l, v[0], v[1]).getResult();
                                 else if constexpr (std::is_same_v<OpTy, nn::PowOp>)
                                   return integerPow(b, l, v[0], v[1], isUnsigned);
                                 else
                                   return isUnsigned ? safeDivUI(b, l, v[0], v[1])
                                                     : safeDivSI(b, l, v[0], v[1]);
                               }
                               if constexpr (std::is_same_v<OpTy, nn::AddOp>)
                                 return arith::AddFOp::create(b, l, v[0], v[1]);
                               else if constexpr (std::is_same_v<OpTy, nn::SubOp>)
                                 return arith::SubFOp::create(b, l, v[0], v[1]);
                               else if constexpr (std::is_same_v<OpTy, nn::MulOp>)
                                 return arith::MulFOp::create(b, l, v[0], v[1]);
                               else if constexpr (std::is_same_v<OpTy, nn::DivOp>)
                                 return arith::DivFOp::create(b, l, v[0], v[1]);
                               else if constexpr (std::is_same_v<OpTy, nn::MaxOp>)
                                 return arith::MaximumFOp::create(b, l, v[0], v[1]);
                               else if constexpr (std::is_same_v<OpTy, nn::MinOp>)
                                 return arith::MinimumFOp::create(b, l, v[0], v[1]);
                               else
                                 return math::PowFOp::create(b, l, v[0], v[1]);
                             }));
    return success();
  }
};

Value gelu(OpBuilder &b, Location l, Value x, bool tanhApprox) {
  Type t = x.getType();
  Value half = cst(b, l, t, 0.5), one = cst(b, l, t, 1.0);
  Value inner;
  if (tanhApprox) {
    Value x3 = arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, x, x), x);
    Value poly = arith::AddFOp::create(
        b, l, x, arith::MulFOp::create(b, l, cst(b, l, t, 0.044715), x3));
    inner = math::TanhOp::create(
        b, l, arith::MulFOp::create(b, l, cst(b, l, t, std::sqrt(2.0 / M_PI)), poly));
  } else {
    inner = math::ErfOp::create(b, l, arith::MulFOp::create(b, l, x, cst(b, l, t, M_SQRT1_2)));
  }
  return arith::MulFOp::create(
      b, l, arith::MulFOp::create(b, l, half, x), arith::AddFOp::create(b, l, one, inner));
}

template <typename OpTy>
struct Unary : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    bool tanhApprox = false;
    if constexpr (std::is_same_v<OpTy, nn::GeluOp>)
      tanhApprox = op.getApproximate() == nn::GeluApproximation::tanh;
    rw.replaceOp(op, generic(rw, op.getLoc(), type, {a.getX()},
                             {rw.getMultiDimIdentityMap(type.getRank())},
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               Value x = v[0];
                               Type t = x.getType();
                               if constexpr (std::is_same_v<OpTy, nn::ReluOp>)
                                 return arith::MaximumFOp::create(b, l, x, cst(b, l, t, 0.0));
                               else if constexpr (std::is_same_v<OpTy, nn::SigmoidOp>)
                                 return arith::DivFOp::create(
                                     b, l, cst(b, l, t, 1.0),
                                     arith::AddFOp::create(b, l, cst(b, l, t, 1.0),
                                                           math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x))));
                               else if constexpr (std::is_same_v<OpTy, nn::TanhOp>)
                                 return math::TanhOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::ErfOp>)
                                 return math::ErfOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::ExpOp>)
                                 return math::ExpOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::SqrtOp>)
                                 return math::SqrtOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::NegOp>)
                                 return arith::NegFOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::AbsOp>)
                                 return math::AbsFOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::LogOp>)
                                 return math::LogOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::SinOp>)
                                 return math::SinOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::CosOp>)
                                 return math::CosOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::FloorOp>)
                                 return math::FloorOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::CeilOp>)
                                 return math::CeilOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::RoundOp>)
                                 return math::RoundEvenOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::TanOp>)
                                 return math::TanOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::AsinOp>)
                                 return math::AsinOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::AcosOp>)
                                 return math::AcosOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::AtanOp>)
                                 return math::AtanOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::SinhOp>)
                                 return math::SinhOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::CoshOp>)
                                 return math::CoshOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::AsinhOp>)
                                 return math::AsinhOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::AcoshOp>)
                                 return math::AcoshOp::create(b, l, x);
                               else if constexpr (std::is_same_v<OpTy, nn::AtanhOp>)
                                 return math::AtanhOp::create(b, l, x);
                               else
                                 return gelu(b, l, x, tanhApprox);
                             }));
    return success();
  }
};

struct MatMulLowering : OpConversionPattern<nn::MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::MatMulOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    auto lt = cast<RankedTensorType>(a.getLhs().getType());
    auto rt = cast<RankedTensorType>(a.getRhs().getType());
    if (!type.hasStaticShape() || lt.getRank() < 2 || rt.getRank() < 2)
      return rw.notifyMatchFailure(op, "static shapes, rank >= 2 operands");
    MLIRContext *ctx = op.getContext();
    int64_t r = type.getRank(); // batch dims + m + n; loops add k
    int64_t loops = r + 1;
    // An operand transposed in its last two dimensions (the reverse rules'
    // x^T) is read through a swapped map instead: no transposed copy, and
    // BLAS takes it as transA / transB.
    auto untransposed = [](Value v, bool &swapped) -> Value {
      swapped = false;
      auto t = v.getDefiningOp<linalg::TransposeOp>();
      if (!t)
        return v;
      ArrayRef<int64_t> perm = t.getPermutation();
      int64_t n = static_cast<int64_t>(perm.size());
      for (int64_t i = 0; i < n; ++i)
        if (perm[i] != (i == n - 2 ? n - 1 : i == n - 1 ? n - 2 : i))
          return v;
      swapped = true;
      return t.getInput();
    };
    bool swapL = false, swapR = false;
    Value lhs = untransposed(a.getLhs(), swapL), rhs = untransposed(a.getRhs(), swapR);
    auto operandMap = [&](RankedTensorType t, bool isLhs, bool swapped) {
      SmallVector<AffineExpr> e;
      int64_t batch = t.getRank() - 2;
      for (int64_t i = 0; i < batch; ++i) {
        int64_t dim = (r - 2) - batch + i;
        bool stretched = t.getDimSize(i) == 1 && type.getDimSize(dim) != 1;
        e.push_back(stretched ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(dim, ctx));
      }
      AffineExpr rows = getAffineDimExpr(isLhs ? r - 2 : r, ctx);     // m or k
      AffineExpr cols = getAffineDimExpr(isLhs ? r : r - 1, ctx);     // k or n
      if (swapped)
        std::swap(rows, cols);
      e.push_back(rows);
      e.push_back(cols);
      return AffineMap::get(loops, 0, e, ctx);
    };
    SmallVector<AffineExpr> outE;
    for (int64_t i = 0; i < r; ++i)
      outE.push_back(getAffineDimExpr(i, ctx));
    SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::parallel);
    iters.back() = utils::IteratorType::reduction;
    Type elt = type.getElementType();
    bool isInt = elt.isSignlessInteger() && !elt.isInteger(1);
    if (!isInt && !isa<FloatType>(elt))
      return rw.notifyMatchFailure(op, "float or integer elements only");
    Value init = tensor::EmptyOp::create(rw, op.getLoc(), type.getShape(), elt);
    Value zero = isInt ? arith::ConstantOp::create(rw, op.getLoc(), rw.getIntegerAttr(elt, 0)).getResult()
                       : cst(rw, op.getLoc(), elt, 0.0);
    init = linalg::FillOp::create(rw, op.getLoc(), zero, init).getResult(0);
    // Integer products wrap, as ONNX Runtime's integer MatMul does.
    auto g = linalg::GenericOp::create(
        rw, op.getLoc(), TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init},
        ArrayRef<AffineMap>{operandMap(lt, true, swapL), operandMap(rt, false, swapR),
                            AffineMap::get(loops, 0, outE, ctx)},
        iters, [isInt](OpBuilder &b, Location l, ValueRange v) {
          Value r = isInt ? arith::AddIOp::create(b, l, v[2], arith::MulIOp::create(b, l, v[0], v[1])).getResult()
                          : arith::AddFOp::create(b, l, v[2], arith::MulFOp::create(b, l, v[0], v[1])).getResult();
          linalg::YieldOp::create(b, l, r);
        });
    rw.replaceOp(op, g.getResult(0));
    return success();
  }
};

struct SoftmaxLowering : OpConversionPattern<nn::SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::SoftmaxOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    int64_t rank = type.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += rank;
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    AffineMap id = rw.getMultiDimIdentityMap(rank);
    SmallVector<AffineExpr> k;
    for (int64_t i = 0; i < rank; ++i)
      k.push_back(i == axis ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(i, ctx));
    AffineMap kept = AffineMap::get(rank, 0, k, ctx);
    Value mx = reduceKeep(rw, loc, a.getX(), {axis}, Reduction::max);
    Value e = generic(rw, loc, type, {a.getX(), mx}, {id, kept},
                      [](OpBuilder &b, Location l, ValueRange v) -> Value {
                        return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, v[0], v[1]));
                      });
    Value sum = reduceKeep(rw, loc, e, {axis}, Reduction::sum);
    rw.replaceOp(op, generic(rw, loc, type, {e, sum}, {id, kept},
                             [](OpBuilder &b, Location l, ValueRange v) -> Value {
                               return arith::DivFOp::create(b, l, v[0], v[1]);
                             }));
    return success();
  }
};

/// LayerNorm (with mean) and RMSNorm (without) over the dims from `axis`.
template <typename OpTy>
struct NormLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor a,
                  ConversionPatternRewriter &rw) const override {
    constexpr bool layer = std::is_same_v<OpTy, nn::LayerNormOp>;
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    int64_t rank = type.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += rank;
    SmallVector<int64_t> axes;
    double n = 1;
    for (int64_t i = axis; i < rank; ++i) {
      axes.push_back(i);
      n *= type.getDimSize(i);
    }
    Type elt = type.getElementType();
    double eps = op.getEpsilon().convertToDouble();
    AffineMap id = rw.getMultiDimIdentityMap(rank);
    SmallVector<AffineExpr> k, p;
    for (int64_t i = 0; i < rank; ++i) {
      k.push_back(i >= axis ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(i, ctx));
      if (i >= axis)
        p.push_back(getAffineDimExpr(i, ctx));
    }
    AffineMap kept = AffineMap::get(rank, 0, k, ctx);
    AffineMap param = AffineMap::get(rank, 0, p, ctx);
    Value centered = a.getX();
    if constexpr (layer) {
      Value mean = reduceKeep(rw, loc, a.getX(), axes, Reduction::sum);
      centered = generic(rw, loc, type, {a.getX(), mean}, {id, kept},
                         [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                           return arith::SubFOp::create(
                               b, l, v[0], arith::DivFOp::create(b, l, v[1], cst(b, l, elt, n)));
                         });
    }
    Value sq = generic(rw, loc, type, {centered}, {id},
                       [](OpBuilder &b, Location l, ValueRange v) -> Value {
                         return arith::MulFOp::create(b, l, v[0], v[0]);
                       });
    Value var = reduceKeep(rw, loc, sq, axes, Reduction::sum);
    SmallVector<Value> ins = {centered, var, a.getScale()};
    SmallVector<AffineMap> maps = {id, kept, param};
    bool hasBias = false;
    if constexpr (layer) {
      if (a.getBias()) {
        ins.push_back(a.getBias());
        maps.push_back(param);
        hasBias = true;
      }
    }
    rw.replaceOp(op, generic(rw, loc, type, ins, maps,
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               Value inv = math::RsqrtOp::create(
                                   b, l, arith::AddFOp::create(
                                             b, l, arith::DivFOp::create(b, l, v[1], cst(b, l, elt, n)),
                                             cst(b, l, elt, eps)));
                               Value y = arith::MulFOp::create(
                                   b, l, arith::MulFOp::create(b, l, v[0], inv), v[2]);
                               return hasBias ? arith::AddFOp::create(b, l, y, v[3]).getResult() : y;
                             }));
    return success();
  }
};

} // namespace

Value rewire::reshapeStatic(OpBuilder &b, Location loc, Value x, RankedTensorType type) {
  // A pure collapse or expansion (merging or splitting neighbouring dims)
  // stays a view after bufferization, also of a strided slice (the q/k/v
  // thirds of a fused projection); tensor.reshape would need a copy there.
  auto source = dyn_cast<RankedTensorType>(x.getType());
  if (source && source.hasStaticShape() && type.hasStaticShape()) {
    if (source.getShape() == type.getShape())
      return source == type ? x : tensor::CastOp::create(b, loc, type, x).getResult();
    if (auto re = getReassociationIndicesForReshape(source, type)) {
      if (source.getRank() > type.getRank())
        return tensor::CollapseShapeOp::create(b, loc, type, x, *re);
      return tensor::ExpandShapeOp::create(b, loc, type, x, *re);
    }
  }
  SmallVector<APInt> shape;
  for (int64_t d : type.getShape())
    shape.push_back(APInt(64, d));
  Value s = arith::ConstantOp::create(
      b, loc,
      DenseIntElementsAttr::get(RankedTensorType::get({type.getRank()}, b.getIndexType()), shape));
  return tensor::ReshapeOp::create(b, loc, type, x, s);
}

/// Pads the spatial dims of NCHW `x` by `pads` (begin values, end values).
Value rewire::padSpatial(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> pads,
                 double value) {
  auto type = cast<RankedTensorType>(x.getType());
  size_t k = type.getRank() - 2;
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return x;
  SmallVector<OpFoldResult> low(2, b.getIndexAttr(0)), high(2, b.getIndexAttr(0));
  SmallVector<int64_t> shape(type.getShape());
  for (size_t i = 0; i < k; ++i) {
    low.push_back(b.getIndexAttr(pads[i]));
    high.push_back(b.getIndexAttr(pads[i + k]));
    shape[i + 2] += pads[i] + pads[i + k];
  }
  auto padded = RankedTensorType::get(shape, type.getElementType());
  return tensor::PadOp::create(b, loc, padded, x, low, high,
                               cst(b, loc, type.getElementType(), value));
}

namespace {

template <typename OpTy>
struct ReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto in = cast<RankedTensorType>(a.getX().getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (!in.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    int64_t rank = in.getRank();
    SmallVector<int64_t> axes;
    for (int64_t ax : op.getAxes())
      axes.push_back(ax < 0 ? ax + rank : ax);
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    double n = 1;
    for (int64_t ax : axes)
      n *= in.getDimSize(ax);
    Location loc = op.getLoc();
    Reduction kind = std::is_same_v<OpTy, nn::ReduceMaxOp>    ? Reduction::max
                     : std::is_same_v<OpTy, nn::ReduceMinOp>  ? Reduction::min
                     : std::is_same_v<OpTy, nn::ReduceProdOp> ? Reduction::prod
                                                              : Reduction::sum;
    Value r = reduceKeep(rw, loc, a.getX(), axes, kind, hasUnsignedOperands(op));
    if constexpr (std::is_same_v<OpTy, nn::ReduceMeanOp>) {
      auto rt = cast<RankedTensorType>(r.getType());
      Type elt = rt.getElementType();
      r = generic(rw, loc, rt, {r}, {rw.getMultiDimIdentityMap(rank)},
                  [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                    return arith::DivFOp::create(b, l, v[0], cst(b, l, elt, n));
                  });
    }
    if (!op.getKeepdims())
      r = reshapeStatic(rw, loc, r, type);
    rw.replaceOp(op, r);
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<nn::TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::TransposeOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    SmallVector<int64_t> perm;
    if (auto p = op.getPerm())
      perm.assign(p->begin(), p->end());
    else
      for (int64_t i = type.getRank() - 1; i >= 0; --i)
        perm.push_back(i);
    // An identity permutation (rank 0 or 1 included: linalg.transpose has no
    // indexing maps for rank 0) moves nothing.
    if (llvm::all_of(llvm::enumerate(perm), [](auto p) { return p.value() == int64_t(p.index()); })) {
      rw.replaceOp(op, a.getX());
      return success();
    }
    Value init = tensor::EmptyOp::create(rw, op.getLoc(), type.getShape(), type.getElementType());
    rw.replaceOp(op, linalg::TransposeOp::create(rw, op.getLoc(), a.getX(), init, perm)
                         .getResult()[0]);
    return success();
  }
};

struct ReshapeLowering : OpConversionPattern<nn::ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ReshapeOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    rw.replaceOp(op, reshapeStatic(rw, op.getLoc(), a.getX(), type));
    return success();
  }
};

struct ConstantLowering : OpConversionPattern<nn::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rw) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rw.notifyMatchFailure(op, "not a typed constant");
    rw.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

struct GatherLowering : OpConversionPattern<nn::GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::GatherOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    auto data = cast<RankedTensorType>(a.getData().getType());
    auto idx = cast<RankedTensorType>(a.getIndices().getType());
    if (!type.hasStaticShape() || !data.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    MLIRContext *ctx = op.getContext();
    int64_t rank = type.getRank(), ri = idx.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += data.getRank();
    SmallVector<AffineExpr> idxExprs;
    for (int64_t i = 0; i < ri; ++i)
      idxExprs.push_back(getAffineDimExpr(axis + i, ctx));
    Value dataV = a.getData();
    int64_t extent = data.getDimSize(axis);
    rw.replaceOp(op, generic(rw, op.getLoc(), type, {a.getIndices()},
                             {AffineMap::get(rank, 0, idxExprs, ctx)},
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               // ONNX allows negative indices: i < 0 means i + extent.
                               Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), v[0]);
                               Value n = arith::ConstantIndexOp::create(b, l, extent);
                               Value zero = arith::ConstantIndexOp::create(b, l, 0);
                               Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, zero);
                               i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, n), i);
                               // Clamp into [0, extent): an index out of range
                               // never reads outside the table (rewire-check-indices
                               // reports it before this runs on the CPU).
                               Value last = arith::ConstantIndexOp::create(b, l, std::max<int64_t>(extent - 1, 0));
                               i = arith::MinSIOp::create(b, l, arith::MaxSIOp::create(b, l, i, zero), last);
                               SmallVector<Value> at;
                               for (int64_t d = 0; d < axis; ++d)
                                 at.push_back(linalg::IndexOp::create(b, l, d));
                               at.push_back(i);
                               for (int64_t d = axis + ri; d < rank; ++d)
                                 at.push_back(linalg::IndexOp::create(b, l, d));
                               return tensor::ExtractOp::create(b, l, dataV, at);
                             }));
    return success();
  }
};

struct SplitLowering : OpConversionPattern<nn::SplitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::SplitOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto in = cast<RankedTensorType>(a.getX().getType());
    if (!in.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    int64_t rank = in.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (axis < 0)
      axis += rank;
    SmallVector<Value> parts;
    int64_t offset = 0;
    for (auto [size, result] : llvm::zip(op.getSizes(), op.getResults())) {
      auto rt = cast<RankedTensorType>(result.getType());
      // An empty part is no slice (its offset may be the axis' end).
      if (rt.getNumElements() == 0) {
        parts.push_back(tensor::EmptyOp::create(rw, op.getLoc(), rt.getShape(), rt.getElementType()));
        offset += size;
        continue;
      }
      SmallVector<OpFoldResult> offs(rank, rw.getIndexAttr(0)), sizes, strides(rank, rw.getIndexAttr(1));
      for (int64_t d = 0; d < rank; ++d)
        sizes.push_back(rw.getIndexAttr(d == axis ? size : in.getDimSize(d)));
      offs[axis] = rw.getIndexAttr(size == 0 ? 0 : offset);
      parts.push_back(tensor::ExtractSliceOp::create(
          rw, op.getLoc(), cast<RankedTensorType>(result.getType()), a.getX(), offs, sizes, strides));
      offset += size;
    }
    rw.replaceOp(op, parts);
    return success();
  }
};

struct WhereLowering : OpConversionPattern<nn::WhereOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::WhereOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    MLIRContext *ctx = op.getContext();
    auto map = [&](Value v) {
      return broadcastMap(ctx, cast<RankedTensorType>(v.getType()), type);
    };
    rw.replaceOp(op, generic(rw, op.getLoc(), type, {a.getCond(), a.getX(), a.getY()},
                             {map(a.getCond()), map(a.getX()), map(a.getY())},
                             [](OpBuilder &b, Location l, ValueRange v) -> Value {
                               return arith::SelectOp::create(b, l, v[0], v[1], v[2]);
                             }));
    return success();
  }
};

/// nn.compare: arith.cmpf (ordered, except `ne`: unordered, so NaN != NaN)
/// or arith.cmpi (signed, or unsigned for ONNX's unsigned types) per element.
struct CompareLowering : OpConversionPattern<nn::CompareOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::CompareOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type elt = cast<RankedTensorType>(a.getLhs().getType()).getElementType();
    if (!type.hasStaticShape() || !(isa<FloatType>(elt) || elt.isSignlessInteger()))
      return rw.notifyMatchFailure(op, "static float or integer tensors only");
    bool isUnsigned = hasUnsignedOperands(op);
    MLIRContext *ctx = op.getContext();
    auto map = [&](Value v) { return broadcastMap(ctx, cast<RankedTensorType>(v.getType()), type); };
    nn::ComparePredicate pred = op.getPredicate();
    using P = nn::ComparePredicate;
    auto fp = [&] {
      switch (pred) {
      case P::eq: return arith::CmpFPredicate::OEQ;
      case P::ne: return arith::CmpFPredicate::UNE;
      case P::lt: return arith::CmpFPredicate::OLT;
      case P::le: return arith::CmpFPredicate::OLE;
      case P::gt: return arith::CmpFPredicate::OGT;
      case P::ge: return arith::CmpFPredicate::OGE;
      }
      return arith::CmpFPredicate::OEQ;
    }();
    auto ip = [&] {
      switch (pred) {
      case P::eq: return arith::CmpIPredicate::eq;
      case P::ne: return arith::CmpIPredicate::ne;
      case P::lt: return isUnsigned ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
      case P::le: return isUnsigned ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
      case P::gt: return isUnsigned ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
      case P::ge: return isUnsigned ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
      }
      return arith::CmpIPredicate::eq;
    }();
    bool isFloat = isa<FloatType>(elt);
    rw.replaceOp(op, generic(rw, op.getLoc(), type, {a.getLhs(), a.getRhs()},
                             {map(a.getLhs()), map(a.getRhs())},
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               if (isFloat)
                                 return arith::CmpFOp::create(b, l, fp, v[0], v[1]);
                               return arith::CmpIOp::create(b, l, ip, v[0], v[1]);
                             }));
    return success();
  }
};

struct LogicalLowering : OpConversionPattern<nn::LogicalOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::LogicalOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    MLIRContext *ctx = op.getContext();
    auto map = [&](Value v) { return broadcastMap(ctx, cast<RankedTensorType>(v.getType()), type); };
    nn::LogicalKind kind = op.getKind();
    rw.replaceOp(op, generic(rw, op.getLoc(), type, {a.getLhs(), a.getRhs()},
                             {map(a.getLhs()), map(a.getRhs())},
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               switch (kind) {
                               case nn::LogicalKind::and_:
                                 return arith::AndIOp::create(b, l, v[0], v[1]);
                               case nn::LogicalKind::or_:
                                 return arith::OrIOp::create(b, l, v[0], v[1]);
                               case nn::LogicalKind::xor_:
                                 break;
                               }
                               return arith::XOrIOp::create(b, l, v[0], v[1]);
                             }));
    return success();
  }
};

struct NotLowering : OpConversionPattern<nn::NotOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::NotOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    rw.replaceOp(op, generic(rw, op.getLoc(), type, {a.getX()},
                             {rw.getMultiDimIdentityMap(type.getRank())},
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               // All ones: true for i1, ~0 for the bitwise form.
                               Type t = v[0].getType();
                               Value ones = arith::ConstantOp::create(
                                   b, l, b.getIntegerAttr(t, APInt::getAllOnes(t.getIntOrFloatBitWidth())));
                               return arith::XOrIOp::create(b, l, v[0], ones);
                             }));
    return success();
  }
};

/// nn.arg_reduce: one generic over the input with a reduction along `axis`
/// and two accumulators (the best value and its index).
struct ArgReduceLowering : OpConversionPattern<nn::ArgReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ArgReduceOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto in = cast<RankedTensorType>(a.getX().getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (!in.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    MLIRContext *ctx = op.getContext();
    Location loc = op.getLoc();
    int64_t rank = in.getRank(), axis = op.getAxis();
    Type elt = in.getElementType();
    bool isMax = op.getKind() == nn::ArgReduceKind::max;
    bool last = op.getSelectLastIndex();
    SmallVector<int64_t> kept(in.getShape());
    kept[axis] = 1;
    SmallVector<AffineExpr> out;
    SmallVector<utils::IteratorType> iters;
    for (int64_t d = 0; d < rank; ++d) {
      out.push_back(d == axis ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(d, ctx));
      iters.push_back(d == axis ? utils::IteratorType::reduction : utils::IteratorType::parallel);
    }
    Value best = tensor::EmptyOp::create(rw, loc, kept, elt);
    best = linalg::FillOp::create(rw, loc, cst(rw, loc, elt, isMax ? -INFINITY : INFINITY), best)
               .getResult(0);
    Type i64 = rw.getI64Type();
    Value idx = tensor::EmptyOp::create(rw, loc, kept, i64);
    Value minus1 = arith::ConstantOp::create(rw, loc, rw.getI64IntegerAttr(-1));
    idx = linalg::FillOp::create(rw, loc, minus1, idx).getResult(0);
    AffineMap outMap = AffineMap::get(rank, 0, out, ctx);
    auto argGeneric = linalg::GenericOp::create(
        rw, loc, TypeRange{best.getType(), idx.getType()}, ValueRange{a.getX()},
        ValueRange{best, idx}, ArrayRef<AffineMap>{rw.getMultiDimIdentityMap(rank), outMap, outMap},
        iters, [&](OpBuilder &b, Location l, ValueRange v) {
          Value i = arith::IndexCastOp::create(b, l, b.getI64Type(),
                                               linalg::IndexOp::create(b, l, axis));
          auto pred = isMax ? (last ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT)
                            : (last ? arith::CmpFPredicate::OLE : arith::CmpFPredicate::OLT);
          // The first non-NaN element is taken even when it equals the
          // initial +-inf (an all -inf row still has an index).
          Value none = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, v[2],
                                             arith::ConstantOp::create(b, l, b.getI64IntegerAttr(0)));
          Value notNan = arith::CmpFOp::create(b, l, arith::CmpFPredicate::ORD, v[0], v[0]);
          Value better = arith::OrIOp::create(
              b, l, arith::CmpFOp::create(b, l, pred, v[0], v[1]),
              arith::AndIOp::create(b, l, none, notNan));
          linalg::YieldOp::create(b, l,
                                  ValueRange{arith::SelectOp::create(b, l, better, v[0], v[1]),
                                             arith::SelectOp::create(b, l, better, i, v[2])});
        });
    Value r = argGeneric.getResult(1);
    // An all-NaN row has no index: 0, as ONNX Runtime returns.
    Value zero = arith::ConstantOp::create(rw, loc, rw.getI64IntegerAttr(0));
    r = generic(rw, loc, RankedTensorType::get(kept, i64), {r}, {rw.getMultiDimIdentityMap(rank)},
                 [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                   Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, v[0], zero);
                   return arith::SelectOp::create(b, l, neg, zero, v[0]);
                 });
    if (!op.getKeepdims())
      r = reshapeStatic(rw, loc, r, type);
    rw.replaceOp(op, r);
    return success();
  }
};

/// nn.cumsum as one generic over the result's dims and a reduction dim j
/// along `axis`: y[.., i, ..] += x[.., j, ..] where j <= i (j < i when
/// exclusive; reversed: j >= i, j > i). Quadratic in the axis length, which
/// is a sequence here (position ids), not a hot loop.
struct CumSumLowering : OpConversionPattern<nn::CumSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::CumSumOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    MLIRContext *ctx = op.getContext();
    Location loc = op.getLoc();
    int64_t rank = type.getRank(), axis = op.getAxis();
    Type elt = type.getElementType();
    bool isFloat = isa<FloatType>(elt);
    SmallVector<AffineExpr> in, out;
    for (int64_t d = 0; d < rank; ++d) {
      in.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
      out.push_back(getAffineDimExpr(d, ctx));
    }
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    iters.push_back(utils::IteratorType::reduction);
    Value zero = isFloat ? cst(rw, loc, elt, 0.0)
                         : arith::ConstantOp::create(rw, loc, rw.getIntegerAttr(elt, 0)).getResult();
    Value init = tensor::EmptyOp::create(rw, loc, type.getShape(), elt);
    init = linalg::FillOp::create(rw, loc, zero, init).getResult(0);
    arith::CmpIPredicate pred =
        op.getReverse() ? (op.getExclusive() ? arith::CmpIPredicate::sgt : arith::CmpIPredicate::sge)
                        : (op.getExclusive() ? arith::CmpIPredicate::slt : arith::CmpIPredicate::sle);
    auto generic = linalg::GenericOp::create(
        rw, loc, TypeRange{type}, ValueRange{a.getX()}, ValueRange{init},
        ArrayRef<AffineMap>{AffineMap::get(rank + 1, 0, in, ctx),
                            AffineMap::get(rank + 1, 0, out, ctx)},
        iters, [&](OpBuilder &b, Location l, ValueRange v) {
          Value i = linalg::IndexOp::create(b, l, axis);
          Value j = linalg::IndexOp::create(b, l, rank);
          Value take = arith::CmpIOp::create(b, l, pred, j, i);
          Value z = isFloat ? cst(b, l, elt, 0.0)
                            : arith::ConstantOp::create(b, l, b.getIntegerAttr(elt, 0)).getResult();
          Value x = arith::SelectOp::create(b, l, take, v[0], z);
          Value sum = isFloat ? arith::AddFOp::create(b, l, v[1], x).getResult()
                              : arith::AddIOp::create(b, l, v[1], x).getResult();
          linalg::YieldOp::create(b, l, sum);
        });
    rw.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Adds a per-channel (dim 1) vector to an NCHW tensor.
Value addChannels(OpBuilder &b, Location loc, Value x, Value bias) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  return generic(b, loc, type, {x, bias},
                 {b.getMultiDimIdentityMap(rank), AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx)},
                 [](OpBuilder &nb, Location l, ValueRange v) -> Value {
                   return arith::AddFOp::create(nb, l, v[0], v[1]);
                 });
}

DenseIntElementsAttr i64Vector(OpBuilder &b, ArrayRef<int64_t> values) {
  return DenseIntElementsAttr::get(
      RankedTensorType::get({static_cast<int64_t>(values.size())}, b.getI64Type()), values);
}

struct ConvLowering : OpConversionPattern<nn::ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::ConvOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t group = static_cast<int64_t>(op.getGroup());
    if (!type.hasStaticShape() || type.getRank() != 4 || group < 1)
      return rw.notifyMatchFailure(op, "static 2-D convolutions only");
    Location loc = op.getLoc();
    SmallVector<int64_t> strides(op.getStrides().value_or(SmallVector<int64_t>{1, 1}));
    SmallVector<int64_t> dil(op.getDilations().value_or(SmallVector<int64_t>{1, 1}));
    SmallVector<int64_t> pads(op.getPads().value_or(SmallVector<int64_t>{0, 0, 0, 0}));
    Value x = padSpatial(rw, loc, a.getX(), pads, 0.0);
    Type elt = type.getElementType();
    SmallVector<NamedAttribute> attrs = {rw.getNamedAttr("strides", i64Vector(rw, strides)),
                                         rw.getNamedAttr("dilations", i64Vector(rw, dil))};
    Value y;
    if (group == 1) {
      Value init = tensor::EmptyOp::create(rw, loc, type.getShape(), elt);
      init = linalg::FillOp::create(rw, loc, cst(rw, loc, elt, 0.0), init).getResult(0);
      y = linalg::Conv2DNchwFchwOp::create(rw, loc, TypeRange{type}, ValueRange{x, a.getW()},
                                           ValueRange{init}, attrs)
              .getResult(0);
    } else {
      // Grouped (and depthwise): [N, G*C, H, W] x [G*F, C, kh, kw] as
      // [N, G, C, H, W] x [G, F, C, kh, kw] -> [N, G, F, oh, ow].
      auto xt = cast<RankedTensorType>(x.getType());
      auto wt = cast<RankedTensorType>(a.getW().getType());
      if (!xt.hasStaticShape() || !wt.hasStaticShape() || xt.getDimSize(1) % group ||
          wt.getDimSize(0) % group)
        return rw.notifyMatchFailure(op, "channels not divisible by group");
      int64_t n = xt.getDimSize(0), c = xt.getDimSize(1) / group, f = wt.getDimSize(0) / group;
      auto gx = RankedTensorType::get({n, group, c, xt.getDimSize(2), xt.getDimSize(3)}, elt);
      auto gw = RankedTensorType::get({group, f, wt.getDimSize(1), wt.getDimSize(2), wt.getDimSize(3)}, elt);
      auto gy = RankedTensorType::get({n, group, f, type.getDimSize(2), type.getDimSize(3)}, elt);
      Value init = tensor::EmptyOp::create(rw, loc, gy.getShape(), elt);
      init = linalg::FillOp::create(rw, loc, cst(rw, loc, elt, 0.0), init).getResult(0);
      y = linalg::Conv2DNgchwGfchwOp::create(
              rw, loc, TypeRange{gy},
              ValueRange{reshapeStatic(rw, loc, x, gx), reshapeStatic(rw, loc, a.getW(), gw)},
              ValueRange{init}, attrs)
              .getResult(0);
      y = reshapeStatic(rw, loc, y, type);
    }
    if (a.getB())
      y = addChannels(rw, loc, y, a.getB());
    rw.replaceOp(op, y);
    return success();
  }
};

struct MaxPoolLowering : OpConversionPattern<nn::MaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::MaxPoolOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape() || type.getRank() != 4)
      return rw.notifyMatchFailure(op, "static 2-D pooling only");
    Location loc = op.getLoc();
    Type elt = type.getElementType();
    SmallVector<int64_t> strides(op.getStrides().value_or(SmallVector<int64_t>{1, 1}));
    SmallVector<int64_t> pads(op.getPads().value_or(SmallVector<int64_t>{0, 0, 0, 0}));
    Value x = padSpatial(rw, loc, a.getX(), pads, -INFINITY);
    Value window = tensor::EmptyOp::create(rw, loc, op.getKernelShape(), elt);
    Value init = tensor::EmptyOp::create(rw, loc, type.getShape(), elt);
    init = linalg::FillOp::create(rw, loc, cst(rw, loc, elt, -INFINITY), init).getResult(0);
    rw.replaceOp(op, linalg::PoolingNchwMaxOp::create(
                         rw, loc, TypeRange{type}, ValueRange{x, window}, ValueRange{init},
                         ArrayRef<NamedAttribute>{
                             rw.getNamedAttr("strides", i64Vector(rw, strides)),
                             rw.getNamedAttr("dilations", i64Vector(rw, {1, 1}))})
                         .getResult(0));
    return success();
  }
};

struct GlobalAveragePoolLowering : OpConversionPattern<nn::GlobalAveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::GlobalAveragePoolOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto in = cast<RankedTensorType>(a.getX().getType());
    if (!in.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    SmallVector<int64_t> axes;
    double n = 1;
    for (int64_t i = 2; i < in.getRank(); ++i) {
      axes.push_back(i);
      n *= in.getDimSize(i);
    }
    Location loc = op.getLoc();
    Value sum = reduceKeep(rw, loc, a.getX(), axes, Reduction::sum);
    auto type = cast<RankedTensorType>(sum.getType());
    Type elt = type.getElementType();
    rw.replaceOp(op, generic(rw, loc, type, {sum}, {rw.getMultiDimIdentityMap(type.getRank())},
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               return arith::DivFOp::create(b, l, v[0], cst(b, l, elt, n));
                             }));
    return success();
  }
};

struct BatchNormLowering : OpConversionPattern<nn::BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::BatchNormOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    if (op.getTraining()) {
      // Batch statistics: nn ops (reductions, then one fused elementwise
      // pass), which this conversion lowers in turn.
      ImplicitLocOpBuilder b(op.getLoc(), rw);
      rw.replaceOp(op, nn::decomposeBatchNorm(b, a.getX(), a.getScale(), a.getBias(), a.getMean(),
                                              a.getVar(), op.getEpsilon().convertToDouble(),
                                              /*training=*/true));
      return success();
    }
    int64_t rank = type.getRank();
    MLIRContext *ctx = op.getContext();
    AffineMap ch = AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx);
    Type elt = type.getElementType();
    double eps = op.getEpsilon().convertToDouble();
    rw.replaceOp(op, generic(rw, op.getLoc(), type,
                             {a.getX(), a.getScale(), a.getBias(), a.getMean(), a.getVar()},
                             {rw.getMultiDimIdentityMap(rank), ch, ch, ch, ch},
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               Value inv = math::RsqrtOp::create(
                                   b, l, arith::AddFOp::create(b, l, v[4], cst(b, l, elt, eps)));
                               Value y = arith::MulFOp::create(
                                   b, l, arith::MulFOp::create(b, l, arith::SubFOp::create(b, l, v[0], v[3]), inv), v[1]);
                               return arith::AddFOp::create(b, l, y, v[2]);
                             }));
    return success();
  }
};

struct GemmLowering : OpConversionPattern<nn::GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(nn::GemmOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type elt = type.getElementType();
    AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx), k = getAffineDimExpr(2, ctx);
    AffineMap am = AffineMap::get(3, 0, op.getTransA() ? ArrayRef<AffineExpr>{k, m} : ArrayRef<AffineExpr>{m, k}, ctx);
    AffineMap bm = AffineMap::get(3, 0, op.getTransB() ? ArrayRef<AffineExpr>{n, k} : ArrayRef<AffineExpr>{k, n}, ctx);
    AffineMap om = AffineMap::get(3, 0, {m, n}, ctx);
    Value init = tensor::EmptyOp::create(rw, loc, type.getShape(), elt);
    init = linalg::FillOp::create(rw, loc, cst(rw, loc, elt, 0.0), init).getResult(0);
    Value acc = linalg::GenericOp::create(
                    rw, loc, TypeRange{type}, ValueRange{a.getA(), a.getB()}, ValueRange{init},
                    ArrayRef<AffineMap>{am, bm, om},
                    ArrayRef<utils::IteratorType>{utils::IteratorType::parallel, utils::IteratorType::parallel,
                                                  utils::IteratorType::reduction},
                    [](OpBuilder &b, Location l, ValueRange v) {
                      linalg::YieldOp::create(
                          b, l, arith::AddFOp::create(b, l, v[2], arith::MulFOp::create(b, l, v[0], v[1])).getResult());
                    })
                    .getResult(0);
    double alpha = op.getAlpha().convertToDouble(), beta = op.getBeta().convertToDouble();
    SmallVector<Value> ins = {acc};
    SmallVector<AffineMap> maps = {rw.getMultiDimIdentityMap(2)};
    if (a.getC()) {
      ins.push_back(a.getC());
      maps.push_back(broadcastMap(ctx, cast<RankedTensorType>(a.getC().getType()), type));
    }
    bool hasC = ins.size() == 2;
    rw.replaceOp(op, generic(rw, loc, type, ins, maps,
                             [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                               Value y = arith::MulFOp::create(b, l, v[0], cst(b, l, elt, alpha));
                               if (!hasC)
                                 return y;
                               return arith::AddFOp::create(
                                   b, l, y, arith::MulFOp::create(b, l, v[1], cst(b, l, elt, beta)));
                             }));
    return success();
  }
};

struct ConvertNNToLinalgPass
    : public rewire::impl::ConvertNNToLinalgBase<ConvertNNToLinalgPass> {
  using ConvertNNToLinalgBase::ConvertNNToLinalgBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    eraseUnsignedIntegers(getOperation());
    ConversionTarget target(*ctx);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalDialect<nn::NNDialect>();
    RewritePatternSet patterns(ctx);
    patterns.add<Binary<nn::AddOp>, Binary<nn::SubOp>, Binary<nn::MulOp>,
                 Binary<nn::DivOp>, Binary<nn::PowOp>, Binary<nn::MaxOp>,
                 Binary<nn::MinOp>, Unary<nn::AbsOp>, Unary<nn::LogOp>, Unary<nn::SinOp>,
                 Unary<nn::CosOp>, Unary<nn::FloorOp>, Unary<nn::CeilOp>, Unary<nn::RoundOp>,
                 Unary<nn::TanOp>, Unary<nn::AsinOp>, Unary<nn::AcosOp>, Unary<nn::AtanOp>,
                 Unary<nn::SinhOp>, Unary<nn::CoshOp>, Unary<nn::AsinhOp>, Unary<nn::AcoshOp>,
                 Unary<nn::AtanhOp>, ArgReduceLowering,
                 ReduceLowering<nn::ReduceMaxOp>, ReduceLowering<nn::ReduceMinOp>,
                 ReduceLowering<nn::ReduceProdOp>,
                 CompareLowering, LogicalLowering, NotLowering, CumSumLowering,
                 Unary<nn::ReluOp>,
                 Unary<nn::SigmoidOp>, Unary<nn::TanhOp>, Unary<nn::ErfOp>,
                 Unary<nn::ExpOp>, Unary<nn::SqrtOp>, Unary<nn::NegOp>,
                 Unary<nn::GeluOp>, MatMulLowering, SoftmaxLowering,
                 NormLowering<nn::LayerNormOp>, NormLowering<nn::RMSNormOp>,
                 ReduceLowering<nn::ReduceMeanOp>, ReduceLowering<nn::ReduceSumOp>,
                 TransposeLowering, ReshapeLowering, ConstantLowering,
                 GatherLowering, SplitLowering, WhereLowering, ConvLowering,
                 MaxPoolLowering, GlobalAveragePoolLowering, BatchNormLowering,
                 GemmLowering>(ctx);
    populateNNDataMovementLowerings(patterns);
    populateNNAttentionLowering(patterns);
    populateNNSinkhornLowering(patterns);
    populateNNTrainingLowerings(patterns, scatterAsReduction);
    populateNNWindowGradientLowerings(patterns);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
