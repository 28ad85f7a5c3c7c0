//===- ResidualToLinalg.cpp - Residual ops to linalg on tensors -----------===//
//
// Implements convert-residual-to-linalg. Each pattern builds the update from
// a few linalg ops: row reductions for norms, matmuls for gates, and one
// elementwise linalg.generic that fuses the epilogue and the combine.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/ResidualToLinalg/HyperToLinalg.h"
#include "passes/Conversion/ResidualToLinalg/RouteToLinalg.h"

#include "dialects/residual/ResidualDecompose.h"
#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

namespace rewire {
#define GEN_PASS_DEF_CONVERTRESIDUALTOLINALG
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// An empty tensor shaped like `like` (dynamic sizes taken from it), with
/// the dimensions in `drop` removed.
Value emptyLike(OpBuilder &b, Location loc, Value like, Type elt,
                ArrayRef<int64_t> drop = {}) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
  SmallVector<OpFoldResult> kept;
  for (auto [i, s] : llvm::enumerate(sizes))
    if (!llvm::is_contained(drop, static_cast<int64_t>(i)))
      kept.push_back(s);
  return tensor::EmptyOp::create(b, loc, kept, elt);
}

/// One parallel linalg.generic over the shape of `like` (dynamic sizes too).
Value elementwise(OpBuilder &b, Location loc, Value like, ValueRange inputs,
                  ArrayRef<AffineMap> maps, BodyFn body) {
  auto type = cast<RankedTensorType>(like.getType());
  return parallelGeneric(b, loc, emptyLike(b, loc, like, type.getElementType()),
                         inputs, maps, body);
}

/// Map from the state's dims to the row index (all dims but the last).
AffineMap rowMap(OpBuilder &b, int64_t rank) {
  SmallVector<AffineExpr> rows;
  for (int64_t i = 0; i + 1 < rank; ++i)
    rows.push_back(b.getAffineDimExpr(i));
  return AffineMap::get(rank, 0, rows, b.getContext());
}

/// sum over the last dimension of f(xs...), as a tensor of rank-1 (all `xs`
/// have one shape).
Value rowSum(OpBuilder &b, Location loc, ValueRange xs,
             function_ref<Value(OpBuilder &, Location, ValueRange)> f) {
  auto type = cast<RankedTensorType>(xs.front().getType());
  int64_t rank = type.getRank();
  Type elt = type.getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(elt, 0.0));
  Value init = emptyLike(b, loc, xs.front(), elt, {rank - 1});
  init = linalg::FillOp::create(b, loc, zero, init).getResult(0);
  SmallVector<AffineMap> maps(xs.size(), b.getMultiDimIdentityMap(rank));
  maps.push_back(rowMap(b, rank));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, xs, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value v = arith::AddFOp::create(nb, nloc, args.back(),
                                        f(nb, nloc, args.drop_back()));
        linalg::YieldOp::create(nb, nloc, v);
      });
  return generic.getResult(0);
}

Value rowSum(OpBuilder &b, Location loc, Value x,
             function_ref<Value(OpBuilder &, Location, Value)> f) {
  return rowSum(b, loc, ValueRange{x},
                [&](OpBuilder &nb, Location l, ValueRange a) { return f(nb, l, a[0]); });
}

Value floatConst(OpBuilder &b, Location loc, Type elt, double v) {
  return floatConstant(b, loc, elt, v);
}

/// rms(x) = x * rsqrt(mean_d(x^2) + eps) along the last axis.
Value rms(OpBuilder &b, Location loc, Value x, double eps) {
  auto type = cast<RankedTensorType>(x.getType());
  Type elt = type.getElementType();
  int64_t rank = type.getRank();
  double d = static_cast<double>(type.getShape().back());
  Value sumsq = rowSum(b, loc, x, [](OpBuilder &nb, Location l, Value v) {
    return arith::MulFOp::create(nb, l, v, v).getResult();
  });
  return elementwise(
      b, loc, x, {x, sumsq}, {b.getMultiDimIdentityMap(rank), rowMap(b, rank)},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value mean = arith::DivFOp::create(nb, l, a[1], floatConst(nb, l, elt, d));
        Value inv = math::RsqrtOp::create(
            nb, l, arith::AddFOp::create(nb, l, mean, floatConst(nb, l, elt, eps)));
        return arith::MulFOp::create(nb, l, a[0], inv);
      });
}

Value sigmoid(OpBuilder &b, Location l, Value x) {
  Type t = x.getType();
  Value one = floatConst(b, l, t, 1.0);
  Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
  return arith::DivFOp::create(b, l, one, arith::AddFOp::create(b, l, one, e));
}

/// Reassociation that collapses all dims but the last: [[0..n-2], [n-1]].
SmallVector<ReassociationIndices> rowsAndLast(int64_t rank) {
  SmallVector<ReassociationIndices> r(1);
  for (int64_t i = 0; i + 1 < rank; ++i)
    r[0].push_back(i);
  r.push_back({rank - 1});
  return r;
}

struct AddLowering : OpConversionPattern<residual::AddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(residual::AddOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = op.getType().getRank();
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    rewriter.replaceOp(op, elementwise(rewriter, op.getLoc(), a.getH(),
                                       {a.getH(), a.getU()}, {id, id},
                                       [](OpBuilder &b, Location l, ValueRange v) {
                                         return arith::AddFOp::create(b, l, v[0], v[1])
                                             .getResult();
                                       }));
    return success();
  }
};

struct ScaleAddLowering : OpConversionPattern<residual::ScaleAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(residual::ScaleAddOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = op.getType().getRank();
    int64_t axis =
        cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
    auto at = op.getAlpha().getType();
    MLIRContext *ctx = op.getContext();
    AffineMap alphaMap =
        at.getRank() == 0 ? AffineMap::get(rank, 0, {}, ctx)
        : at.getDimSize(0) == 1
            ? AffineMap::get(rank, 0, {getAffineConstantExpr(0, ctx)}, ctx)
            : AffineMap::get(rank, 0, {getAffineDimExpr(axis, ctx)}, ctx);
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    rewriter.replaceOp(
        op, elementwise(rewriter, op.getLoc(), a.getH(),
                        {a.getH(), a.getU(), a.getAlpha()}, {id, id, alphaMap},
                        [](OpBuilder &b, Location l, ValueRange v) -> Value {
                          return arith::AddFOp::create(
                              b, l, v[0], arith::MulFOp::create(b, l, v[2], v[1]));
                        }));
    return success();
  }
};

struct GatedAddLowering : OpConversionPattern<residual::GatedAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(residual::GatedAddOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t rank = type.getRank();
    auto iface = cast<residual::StreamOpInterface>(op.getOperation());
    if (iface.getFeatureAxisIndex() != rank - 1 || rank < 2)
      return rewriter.notifyMatchFailure(op, "needs rank >= 2 and the feature "
                                             "axis last");
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs a static shape");
    Type elt = type.getElementType();
    int64_t d = type.getShape().back();
    int64_t g = op.getWeight().getType().getDimSize(1);
    int64_t rows = type.getNumElements() / d;
    SmallVector<ReassociationIndices> collapse = rowsAndLast(rank);
    auto flat = [&](Value x) {
      return tensor::CollapseShapeOp::create(rewriter, loc, x, collapse).getResult();
    };
    Value zero = floatConst(rewriter, loc, elt, 0.0);
    Value acc = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{rows, g}, elt);
    acc = linalg::FillOp::create(rewriter, loc, zero, acc).getResult(0);
    auto matmulInto = [&](Value x, Value w, Value into) {
      return linalg::MatmulOp::create(rewriter, loc, TypeRange{into.getType()},
                                      ValueRange{x, w}, ValueRange{into})
          .getResult(0);
    };
    Value z;
    if (op.getGate() == residual::GateKind::review) {
      // concat[rms h, rms u] . W = rms(h) . W[:d] + rms(u) . W[d:]
      double eps = op.getEpsOrDefault();
      auto half = [&](int64_t offset) {
        return tensor::ExtractSliceOp::create(
            rewriter, loc, a.getWeight(),
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(offset), rewriter.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(d), rewriter.getIndexAttr(g)},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), rewriter.getIndexAttr(1)});
      };
      z = matmulInto(flat(rms(rewriter, loc, a.getH(), eps)), half(0), acc);
      z = matmulInto(flat(rms(rewriter, loc, a.getU(), eps)), half(d), z);
    } else {
      z = matmulInto(flat(a.getH()), a.getWeight(), acc);
    }
    SmallVector<int64_t> zShape(type.getShape().drop_back());
    zShape.push_back(g);
    z = tensor::ExpandShapeOp::create(rewriter, loc,
                                      RankedTensorType::get(zShape, elt), z,
                                      collapse);
    MLIRContext *ctx = op.getContext();
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    SmallVector<AffineExpr> zExprs;
    for (int64_t i = 0; i + 1 < rank; ++i)
      zExprs.push_back(getAffineDimExpr(i, ctx));
    zExprs.push_back(g == 1 ? getAffineConstantExpr(0, ctx)
                            : getAffineDimExpr(rank - 1, ctx));
    AffineMap zMap = AffineMap::get(rank, 0, zExprs, ctx);
    AffineMap bMap = AffineMap::get(
        rank, 0,
        {g == 1 ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(rank - 1, ctx)},
        ctx);
    bool convex = op.getCombine() == residual::Combine::convex;
    rewriter.replaceOp(
        op, elementwise(rewriter, loc, a.getH(), {a.getH(), a.getU(), z, a.getBias()},
                        {id, id, zMap, bMap},
                        [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                          Value r = sigmoid(b, l, arith::AddFOp::create(b, l, v[2], v[3]));
                          if (!convex)
                            return arith::AddFOp::create(
                                b, l, v[0], arith::MulFOp::create(b, l, r, v[1]));
                          // (1 - r) h + r u
                          Value one = floatConst(b, l, v[0].getType(), 1.0);
                          Value keep = arith::MulFOp::create(
                              b, l, arith::SubFOp::create(b, l, one, r), v[0]);
                          return arith::AddFOp::create(
                              b, l, keep, arith::MulFOp::create(b, l, r, v[1]));
                        }));
    return success();
  }
};

/// softmax(c / tau) of a 1-D tensor.
Value softmax1d(OpBuilder &b, Location loc, Value c, double tau) {
  auto type = cast<RankedTensorType>(c.getType());
  Type elt = type.getElementType();
  MLIRContext *ctx = b.getContext();
  AffineMap id = b.getMultiDimIdentityMap(1);
  AffineMap toScalar = AffineMap::get(1, 0, {}, ctx);
  auto reduce = [&](Value x, double init, bool isMax) {
    Value start = floatConst(b, loc, elt, init);
    Value out = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, elt);
    out = linalg::FillOp::create(b, loc, start, out).getResult(0);
    return linalg::GenericOp::create(
               b, loc, TypeRange{out.getType()}, ValueRange{x}, ValueRange{out},
               ArrayRef<AffineMap>{id, toScalar},
               ArrayRef<utils::IteratorType>{utils::IteratorType::reduction},
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value v = isMax ? arith::MaximumFOp::create(nb, l, a[0], a[1]).getResult()
                                 : arith::AddFOp::create(nb, l, a[0], a[1]).getResult();
                 linalg::YieldOp::create(nb, l, v);
               })
        .getResult(0);
  };
  Value scaled = elementwise(b, loc, c, {c}, {id},
                             [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                               return arith::DivFOp::create(
                                   nb, l, a[0], floatConst(nb, l, elt, tau));
                             });
  Value mx = reduce(scaled, -INFINITY, true);
  Value e = elementwise(b, loc, c, {scaled, mx}, {id, toScalar},
                        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                          return math::ExpOp::create(
                              nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
                        });
  Value sum = reduce(e, 0.0, false);
  return elementwise(b, loc, c, {e, sum}, {id, toScalar},
                     [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       return arith::DivFOp::create(nb, l, a[0], a[1]);
                     });
}

struct MixLowering : OpConversionPattern<residual::MixOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(residual::MixOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t rank = op.getType().getRank();
    MLIRContext *ctx = op.getContext();
    bool softmax = op.getWeightsKind() == residual::MixWeights::softmax;
    bool free = op.getWeightsKind() == residual::MixWeights::free;
    Value p = softmax ? softmax1d(rewriter, loc, a.getWeights(),
                                  op.getTau()->convertToDouble())
                      : a.getWeights();
    int64_t k = a.getStates().size();
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    SmallVector<Value> inputs = {a.getY()};
    SmallVector<AffineMap> maps = {id};
    for (Value s : a.getStates()) {
      inputs.push_back(s);
      maps.push_back(id);
    }
    // The weights are loop-invariant scalars: read them once, outside the
    // loop nest, so the body is a plain multiply-add over k + 1 streams.
    SmallVector<Value> w;
    for (int64_t j = 0; j < (free ? k + 1 : k); ++j)
      w.push_back(tensor::ExtractOp::create(rewriter, loc, p,
                                            ValueRange{arith::ConstantIndexOp::create(rewriter, loc, j)}));
    (void)ctx;
    rewriter.replaceOp(
        op, elementwise(rewriter, loc, a.getY(), inputs, maps,
                        [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                          Value acc = free ? arith::MulFOp::create(b, l, v[0], w[k]).getResult()
                                           : v[0];
                          for (int64_t j = 0; j < k; ++j)
                            acc = arith::AddFOp::create(
                                b, l, acc, arith::MulFOp::create(b, l, v[1 + j], w[j]));
                          return acc;
                        }));
    return success();
  }
};

struct TapLowering : OpConversionPattern<residual::TapOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(residual::TapOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, a.getH());
    return success();
  }
};

/// rho = sqrt(mean_d(R^2)) per row (rank-1 tensor) and Rbar = R / rho.
std::pair<Value, Value> normalizeRows(OpBuilder &b, Location loc, Value r) {
  auto type = cast<RankedTensorType>(r.getType());
  Type elt = type.getElementType();
  int64_t rank = type.getRank();
  double d = static_cast<double>(type.getShape().back());
  Value sumsq = rowSum(b, loc, r, [](OpBuilder &nb, Location l, Value v) {
    return arith::MulFOp::create(nb, l, v, v).getResult();
  });
  Value rho = elementwise(b, loc, sumsq, {sumsq}, {b.getMultiDimIdentityMap(rank - 1)},
                          [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                            return math::SqrtOp::create(
                                nb, l, arith::DivFOp::create(nb, l, a[0], floatConst(nb, l, elt, d)));
                          });
  Value rbar = elementwise(b, loc, r, {r, rho}, {b.getMultiDimIdentityMap(rank), rowMap(b, rank)},
                           [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                             return arith::DivFOp::create(nb, l, a[0], a[1]);
                           });
  return {rho, rbar};
}

struct NagGateLowering : OpConversionPattern<residual::NagGateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(residual::NagGateOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getR().getType();
    int64_t rank = type.getRank();
    if (cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex() != rank - 1 ||
        rank < 2 || !type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs a static shape of rank >= 2 with the feature axis last");
    Type elt = type.getElementType();
    int64_t c = op.getW().getType().getDimSize(1);
    int64_t rows = type.getNumElements() / type.getShape().back();
    auto [rho, rbar] = normalizeRows(rewriter, loc, a.getR());
    (void)rho;
    Value flat = tensor::CollapseShapeOp::create(rewriter, loc, rbar, rowsAndLast(rank));
    Value z = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{rows, c}, elt);
    z = linalg::FillOp::create(rewriter, loc, floatConst(rewriter, loc, elt, 0.0), z).getResult(0);
    z = linalg::MatmulOp::create(rewriter, loc, TypeRange{z.getType()}, ValueRange{flat, a.getW()},
                                 ValueRange{z}).getResult(0);
    Value q = softmax1d(rewriter, loc, a.getPi(), 1.0);
    // m_row = sum_c q_c * sigmoid(z_rc + b_c)
    MLIRContext *ctx = op.getContext();
    AffineMap id2 = rewriter.getMultiDimIdentityMap(2);
    AffineMap col = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
    AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
    Value m = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{rows}, elt);
    m = linalg::FillOp::create(rewriter, loc, floatConst(rewriter, loc, elt, 0.0), m).getResult(0);
    double beta = op.getBeta().convertToDouble();
    m = linalg::GenericOp::create(
            rewriter, loc, TypeRange{m.getType()}, ValueRange{z, a.getB(), q}, ValueRange{m},
            ArrayRef<AffineMap>{id2, col, col, row},
            ArrayRef<utils::IteratorType>{utils::IteratorType::parallel, utils::IteratorType::reduction},
            [&](OpBuilder &nb, Location l, ValueRange v) {
              Value s = sigmoid(nb, l, arith::AddFOp::create(nb, l, v[0], v[1]));
              linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, v[3],
                                          arith::MulFOp::create(nb, l, v[2], s)).getResult());
            })
            .getResult(0);
    if (beta != 1.0)
      m = elementwise(rewriter, loc, m, {m}, {rewriter.getMultiDimIdentityMap(1)},
                      [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
                        return math::PowFOp::create(nb, l, v[0], floatConst(nb, l, elt, beta));
                      });
    SmallVector<ReassociationIndices> all(1);
    for (int64_t i = 0; i < rank; ++i)
      all[0].push_back(i);
    rewriter.replaceOp(op, tensor::ExpandShapeOp::create(rewriter, loc, op.getType(), m, all));
    return success();
  }
};

struct NagAddLowering : OpConversionPattern<residual::NagAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(residual::NagAddOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t rank = type.getRank();
    if (cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex() != rank - 1 ||
        !type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs a static shape with the feature axis last");
    Type elt = type.getElementType();
    double d = static_cast<double>(type.getShape().back());
    double eps = op.getEps().convertToDouble();
    MLIRContext *ctx = op.getContext();
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    AffineMap rm = rowMap(rewriter, rank);
    auto [rho, rbar] = normalizeRows(rewriter, loc, a.getR());
    Value fsum = rowSum(rewriter, loc, a.getF(), [](OpBuilder &, Location, Value v) { return v; });
    Value fc = elementwise(rewriter, loc, a.getF(), {a.getF(), fsum}, {id, rm},
                           [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
                             return arith::SubFOp::create(
                                 nb, l, v[0], arith::DivFOp::create(nb, l, v[1], floatConst(nb, l, elt, d)));
                           });
    Value dot = rowSum(rewriter, loc, ValueRange{fc, rbar},
                       [](OpBuilder &nb, Location l, ValueRange v) {
                         return arith::MulFOp::create(nb, l, v[0], v[1]).getResult();
                       });
    Value fperp = elementwise(rewriter, loc, fc, {fc, dot, rbar}, {id, rm, id},
                              [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
                                Value proj = arith::DivFOp::create(nb, l, v[1], floatConst(nb, l, elt, d));
                                return arith::SubFOp::create(nb, l, v[0],
                                                             arith::MulFOp::create(nb, l, proj, v[2]));
                              });
    Value sq = rowSum(rewriter, loc, fperp, [](OpBuilder &nb, Location l, Value v) {
      return arith::MulFOp::create(nb, l, v, v).getResult();
    });
    // m has the state's shape with the feature axis 1: index it by the row.
    SmallVector<AffineExpr> mExprs(rm.getResults());
    mExprs.push_back(getAffineConstantExpr(0, ctx));
    AffineMap mMap = AffineMap::get(rank, 0, mExprs, ctx);
    auto at = op.getAlpha().getType();
    AffineMap alphaMap = at.getRank() == 0
                             ? AffineMap::get(rank, 0, {}, ctx)
                             : AffineMap::get(rank, 0, {getAffineConstantExpr(0, ctx)}, ctx);
    rewriter.replaceOp(
        op, elementwise(rewriter, loc, a.getR(),
                        {a.getR(), fperp, rho, sq, a.getAlpha(), a.getM()},
                        {id, id, rm, rm, alphaMap, mMap},
                        [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
                          Value norm = arith::MaximumFOp::create(nb, l, math::SqrtOp::create(nb, l, v[3]),
                                                                 floatConst(nb, l, elt, eps));
                          Value u = arith::DivFOp::create(
                              nb, l, arith::MulFOp::create(nb, l, v[1], floatConst(nb, l, elt, std::sqrt(d))),
                              norm);
                          Value scale = arith::MulFOp::create(
                              nb, l, arith::MulFOp::create(nb, l, v[2], v[4]), v[5]);
                          return arith::AddFOp::create(nb, l, v[0], arith::MulFOp::create(nb, l, scale, u));
                        }));
    return success();
  }
};

/// A gated or NAG op whose feature axis is not the last (a CNN's channel
/// axis 1 of NCHW): the same op on operands transposed so that the feature
/// axis is last, transposed back. The operands and results of the stream's
/// rank are the stream-shaped ones (h, u, R, f, m); parameters have rank
/// <= 2, so this applies to streams of rank >= 3.
template <typename OpTy>
struct FeatureAxisLast : OpConversionPattern<OpTy> {
  FeatureAxisLast(MLIRContext *ctx) : OpConversionPattern<OpTy>(ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto stream = cast<RankedTensorType>(op->getOperand(0).getType());
    int64_t rank = stream.getRank();
    int64_t axis = cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
    if (rank < 3 || axis < 0 || axis == rank - 1 || !stream.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "feature axis already last");
    SmallVector<int64_t> perm, inverse;
    residual::featureAxisLastPermutation(rank, axis, perm, inverse);
    auto transpose = [&](Value v, ArrayRef<int64_t> p) -> Value {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape;
      for (int64_t d : p)
        shape.push_back(t.getDimSize(d));
      Value init = tensor::EmptyOp::create(rewriter, loc, shape, t.getElementType());
      return linalg::TransposeOp::create(rewriter, loc, v, init, p).getResult()[0];
    };
    auto isStreamShaped = [&](Type t) {
      auto rt = dyn_cast<RankedTensorType>(t);
      return rt && rt.getRank() == rank;
    };
    SmallVector<Value> operands;
    for (Value v : a.getOperands())
      operands.push_back(isStreamShaped(v.getType()) ? transpose(v, perm) : v);
    SmallVector<Type> results;
    for (Type t : op->getResultTypes()) {
      if (!isStreamShaped(t)) {
        results.push_back(t);
        continue;
      }
      auto rt = cast<RankedTensorType>(t);
      SmallVector<int64_t> shape;
      for (int64_t d : perm)
        shape.push_back(rt.getDimSize(d));
      results.push_back(RankedTensorType::get(shape, rt.getElementType()));
    }
    OperationState state(loc, op->getName(), operands, results, op->getAttrs());
    Operation *moved = rewriter.create(state);
    moved->setAttr("axis", rewriter.getI64IntegerAttr(rank - 1));
    SmallVector<Value> replacements;
    for (Value r : moved->getResults())
      replacements.push_back(isStreamShaped(r.getType()) ? transpose(r, inverse) : r);
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

struct ConvertResidualToLinalgPass
    : public rewire::impl::ConvertResidualToLinalgBase<ConvertResidualToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<residual::ResidualDialect>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalDialect<residual::ResidualDialect>();
    RewritePatternSet patterns(ctx);
    patterns.add<AddLowering, ScaleAddLowering, GatedAddLowering, MixLowering,
                 TapLowering, NagGateLowering, NagAddLowering,
                 FeatureAxisLast<residual::GatedAddOp>, FeatureAxisLast<residual::NagGateOp>,
                 FeatureAxisLast<residual::NagAddOp>>(ctx);
    populateHyperToLinalgPatterns(patterns);
    populateRouteToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
