//===- RouteToLinalg.cpp - Mixture-of-Depths routing to linalg ------------===//
//
// residual.route (masking) and residual.route_select (the kept rows'
// indices). Rate routing ranks without a sort: each row's rank within its
// sequence (its count of smaller modulators, ties: the earlier row counts
// as smaller) is one O(T^2) reduction per sequence, all linalg.generic, so
// the CPU and GPU pipelines run it alike. T^2 stays small next to the
// sublayer it routes (T = 512: 262k compares per sequence and sublayer).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/ResidualToLinalg/RouteToLinalg.h"
#include "passes/Conversion/LinalgBuilders.h"

#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace rewire;

namespace {

using Iter = utils::IteratorType;

Value i64Const(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
}

/// A zero-filled i64 tensor of `shape`.
Value zerosI64(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  Value init = tensor::EmptyOp::create(b, loc, shape, b.getI64Type());
  return linalg::FillOp::create(b, loc, i64Const(b, loc, 0), init).getResult(0);
}

/// A 3-loop generic (s, i, j) reading `ins` through `maps`, accumulating into
/// the [S, X] i64 tensor `init` indexed (s, i), j the reduction; `body` gets
/// the input scalars, the accumulator and the loop indices i, j.
Value reduce3(OpBuilder &b, Location loc, ValueRange ins, ArrayRef<AffineMap> maps, Value init,
              function_ref<Value(OpBuilder &, Location, ValueRange, Value, Value, Value)> body) {
  MLIRContext *ctx = b.getContext();
  AffineExpr s = getAffineDimExpr(0, ctx), i = getAffineDimExpr(1, ctx);
  SmallVector<AffineMap> all(maps);
  all.push_back(AffineMap::get(3, 0, {s, i}, ctx));
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ins, ValueRange{init}, all,
             ArrayRef<Iter>{Iter::parallel, Iter::parallel, Iter::reduction},
             [&](OpBuilder &nb, Location l, ValueRange v) {
               Value ii = linalg::IndexOp::create(nb, l, 1), jj = linalg::IndexOp::create(nb, l, 2);
               linalg::YieldOp::create(nb, l, body(nb, l, v.drop_back(), v.back(), ii, jj));
             })
      .getResult(0);
}

/// rank[s, i] = #{ j : m[s, j] < m[s, i] or (m[s, j] == m[s, i] and j < i) }
/// for m : [S, N].
Value rankWithinSequences(OpBuilder &b, Location loc, Value m) {
  auto t = cast<RankedTensorType>(m.getType());
  MLIRContext *ctx = b.getContext();
  AffineExpr s = getAffineDimExpr(0, ctx), i = getAffineDimExpr(1, ctx), j = getAffineDimExpr(2, ctx);
  return reduce3(
      b, loc, ValueRange{m, m},
      {AffineMap::get(3, 0, {s, i}, ctx), AffineMap::get(3, 0, {s, j}, ctx)},
      zerosI64(b, loc, t.getShape()),
      [](OpBuilder &nb, Location l, ValueRange v, Value acc, Value ii, Value jj) -> Value {
        Value less = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OLT, v[1], v[0]);
        Value equal = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, v[1], v[0]);
        Value before = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, jj, ii);
        Value below = arith::OrIOp::create(nb, l, less, arith::AndIOp::create(nb, l, equal, before));
        return arith::AddIOp::create(nb, l, acc, arith::ExtUIOp::create(nb, l, nb.getI64Type(), below));
      });
}

/// `v` reshaped to [S, N]: S the leading axis for rank >= 3, else 1.
Value asSequences(OpBuilder &b, Location loc, Value v, int64_t &s, int64_t &n) {
  auto t = cast<RankedTensorType>(v.getType());
  s = t.getRank() >= 3 ? t.getDimSize(0) : 1;
  n = t.getNumElements() / std::max<int64_t>(s, 1);
  auto flat = RankedTensorType::get({s, n}, t.getElementType());
  SmallVector<ReassociationIndices> groups;
  if (t.getRank() >= 3) {
    groups.push_back({0});
    groups.emplace_back();
    for (int64_t i = 1; i < t.getRank(); ++i)
      groups.back().push_back(i);
    return tensor::CollapseShapeOp::create(b, loc, flat, v, groups);
  }
  groups.emplace_back();
  for (int64_t i = 0; i < t.getRank(); ++i)
    groups.back().push_back(i);
  Value one = t.getRank() == 1 ? v
                               : tensor::CollapseShapeOp::create(
                                     b, loc, RankedTensorType::get({n}, t.getElementType()), v, groups)
                                     .getResult();
  return tensor::ExpandShapeOp::create(b, loc, flat, one, ArrayRef<ReassociationIndices>{{0, 1}});
}

/// The inverse of asSequences.
Value fromSequences(OpBuilder &b, Location loc, Value flat, RankedTensorType type) {
  if (type.getRank() >= 3) {
    SmallVector<ReassociationIndices> groups = {{0}, {}};
    for (int64_t i = 1; i < type.getRank(); ++i)
      groups.back().push_back(i);
    return tensor::ExpandShapeOp::create(b, loc, type, flat, groups);
  }
  auto ft = cast<RankedTensorType>(flat.getType());
  Value one = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({ft.getNumElements()}, ft.getElementType()), flat,
      ArrayRef<ReassociationIndices>{{0, 1}});
  if (type.getRank() == 1)
    return one;
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    groups[0].push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, type, one, groups);
}

struct RouteLowering : OpConversionPattern<residual::RouteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(residual::RouteOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Type elt = type.getElementType();
    Location loc = op.getLoc();
    double v = op.getValue().convertToDouble();
    Value zero = floatConstant(rw, loc, elt, 0.0);
    if (op.getMode() == residual::RouteMode::threshold) {
      Value init = tensor::EmptyOp::create(rw, loc, tensor::getMixedSizes(rw, loc, a.getM()), elt);
      Value t = floatConstant(rw, loc, elt, v);
      rw.replaceOp(op, parallelGeneric(rw, loc, init, {a.getM()}, {rw.getMultiDimIdentityMap(type.getRank())},
                                       [&](OpBuilder &nb, Location l, ValueRange x) -> Value {
                                         Value skip = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OLT,
                                                                            x[0], t);
                                         return arith::SelectOp::create(nb, l, skip, zero, x[0]);
                                       }));
      return success();
    }
    if (!type.hasStaticShape())
      return rw.notifyMatchFailure(op, "rate routing needs static shapes");
    int64_t s, n;
    Value m = asSequences(rw, loc, a.getM(), s, n);
    int64_t skip = n - residual::RouteSelectOp::keptRows(n, v);
    Value rank = rankWithinSequences(rw, loc, m);
    Value init = tensor::EmptyOp::create(rw, loc, ArrayRef<int64_t>{s, n}, elt);
    Value cut = i64Const(rw, loc, skip);
    Value routed = parallelGeneric(
        rw, loc, init, {m, rank}, {rw.getMultiDimIdentityMap(2), rw.getMultiDimIdentityMap(2)},
        [&](OpBuilder &nb, Location l, ValueRange x) -> Value {
          Value drop = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, x[1], cut);
          return arith::SelectOp::create(nb, l, drop, zero, x[0]);
        });
    rw.replaceOp(op, fromSequences(rw, loc, routed, type));
    return success();
  }
};

/// kept[b, t] = rank[b, t] >= skip; slot[b, t] = #kept rows before t;
/// out[b, k] = b * T + (the kept t with slot k), as one reduction over t.
struct RouteSelectLowering : OpConversionPattern<residual::RouteSelectOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(residual::RouteSelectOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rw.getContext();
    auto it = cast<RankedTensorType>(op.getType());
    int64_t s, n;
    Value m = asSequences(rw, loc, a.getM(), s, n);
    int64_t k = it.getDimSize(1);
    Value cut = i64Const(rw, loc, n - k);
    Value rank = rankWithinSequences(rw, loc, m);
    AffineExpr d0 = getAffineDimExpr(0, ctx), d2 = getAffineDimExpr(2, ctx);
    // slot[b, t] = sum over t' < t of kept[b, t'].
    Value slot = reduce3(rw, loc, ValueRange{rank}, {AffineMap::get(3, 0, {d0, d2}, ctx)},
                         zerosI64(rw, loc, {s, n}),
                         [&](OpBuilder &nb, Location l, ValueRange v, Value acc, Value ii, Value jj) -> Value {
                           Value kept = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, v[0], cut);
                           Value before = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, jj, ii);
                           Value hit = arith::AndIOp::create(nb, l, kept, before);
                           return arith::AddIOp::create(nb, l, acc,
                                                        arith::ExtUIOp::create(nb, l, nb.getI64Type(), hit));
                         });
    // out[b, q] = sum over t of (kept[b, t] and slot[b, t] == q) ? b * n + t : 0.
    Value nRows = i64Const(rw, loc, n);
    Value out = reduce3(
        rw, loc, ValueRange{rank, slot},
        {AffineMap::get(3, 0, {d0, d2}, ctx), AffineMap::get(3, 0, {d0, d2}, ctx)},
        zerosI64(rw, loc, {s, k}),
        [&](OpBuilder &nb, Location l, ValueRange v, Value acc, Value q, Value t) -> Value {
          Value kept = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, v[0], cut);
          Value qi = arith::IndexCastOp::create(nb, l, nb.getI64Type(), q);
          Value here = arith::AndIOp::create(
              nb, l, kept, arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, v[1], qi));
          Value bi = arith::IndexCastOp::create(nb, l, nb.getI64Type(), linalg::IndexOp::create(nb, l, 0));
          Value ti = arith::IndexCastOp::create(nb, l, nb.getI64Type(), t);
          Value row = arith::AddIOp::create(nb, l, arith::MulIOp::create(nb, l, bi, nRows), ti);
          return arith::SelectOp::create(nb, l, here, arith::AddIOp::create(nb, l, acc, row), acc);
        });
    rw.replaceOp(op, out);
    return success();
  }
};

} // namespace

void rewire::populateRouteToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<RouteLowering, RouteSelectLowering>(patterns.getContext());
}
