//===- Training.cpp - nn training ops to linalg ---------------------------===//
//
// scatter_add (embedding gradients): a loop over index positions adding one
// row each into the table (zeros, or the op's base; in place after
// bufferization; out-of-range indices are skipped, never written).
// cross_entropy: row max, row sum of exp, the picked logit, masked mean.
// cross_entropy_grad: one fused pass per element, (softmax - onehot) * g /
// count.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/NNToLinalg/NNToLinalgPatterns.h"

#include "dialects/nn/NNOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
using namespace rewire;

namespace {

using utils::IteratorType;

/// `x` reshaped to [N, C] (rows = all leading dimensions).
Value rows2d(OpBuilder &b, Location loc, Value x, int64_t &n, int64_t &c) {
  auto t = cast<RankedTensorType>(x.getType());
  c = t.getShape().back();
  n = t.getNumElements() / std::max<int64_t>(c, 1);
  return reshapeStatic(b, loc, x, RankedTensorType::get({n, c}, t.getElementType()));
}

Value rows1d(OpBuilder &b, Location loc, Value x, int64_t n) {
  auto t = cast<RankedTensorType>(x.getType());
  return reshapeStatic(b, loc, x, RankedTensorType::get({n}, t.getElementType()));
}

/// Per-row max and sum of exp(z - max) of z [N, C].
std::pair<Value, Value> rowStats(OpBuilder &b, Location loc, Value z, int64_t n) {
  MLIRContext *ctx = b.getContext();
  Type elt = cast<RankedTensorType>(z.getType()).getElementType();
  AffineMap full = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  auto reduce = [&](ValueRange ins, ArrayRef<AffineMap> maps, double init,
                    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    Value out = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{n}, elt);
    out = linalg::FillOp::create(b, loc, floatConstant(b, loc, elt, init), out).getResult(0);
    SmallVector<AffineMap> all(maps);
    all.push_back(row);
    return linalg::GenericOp::create(
               b, loc, TypeRange{out.getType()}, ins, ValueRange{out}, all,
               ArrayRef<IteratorType>{IteratorType::parallel, IteratorType::reduction},
               [&](OpBuilder &nb, Location l, ValueRange v) {
                 linalg::YieldOp::create(nb, l, body(nb, l, v));
               })
        .getResult(0);
  };
  Value max = reduce({z}, {full}, -INFINITY, [](OpBuilder &nb, Location l, ValueRange v) -> Value {
    return arith::MaximumFOp::create(nb, l, v[0], v[1]);
  });
  Value sum = reduce({z, max}, {full, row}, 0.0, [](OpBuilder &nb, Location l, ValueRange v) -> Value {
    Value e = math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, v[0], v[1]));
    return arith::AddFOp::create(nb, l, v[2], e);
  });
  return {max, sum};
}

/// label != ignore_index.
Value isCounted(OpBuilder &b, Location l, Value label, int64_t ignore) {
  Value ig = arith::ConstantOp::create(b, l, b.getIntegerAttr(label.getType(), ignore));
  return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, label, ig);
}

/// 0 <= label < c.
Value inRange(OpBuilder &b, Location l, Value label, int64_t c) {
  Type t = label.getType();
  Value zero = arith::ConstantOp::create(b, l, b.getIntegerAttr(t, 0));
  Value hi = arith::ConstantOp::create(b, l, b.getIntegerAttr(t, c));
  return arith::AndIOp::create(b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, label, zero),
                               arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, label, hi));
}

/// The number of counted rows as a 0-d float tensor.
Value countRows(OpBuilder &b, Location loc, Value labels, int64_t n, Type elt, int64_t ignore) {
  MLIRContext *ctx = b.getContext();
  Value out = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, elt);
  out = linalg::FillOp::create(b, loc, floatConstant(b, loc, elt, 0.0), out).getResult(0);
  return linalg::GenericOp::create(
             b, loc, TypeRange{out.getType()}, ValueRange{labels}, ValueRange{out},
             ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(1, ctx), AffineMap::get(1, 0, {}, ctx)},
             ArrayRef<IteratorType>{IteratorType::reduction},
             [&](OpBuilder &nb, Location l, ValueRange v) {
               Value one = arith::SelectOp::create(nb, l, isCounted(nb, l, v[0], ignore),
                                                   floatConstant(nb, l, elt, 1.0),
                                                   floatConstant(nb, l, elt, 0.0));
               linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, v[1], one).getResult());
             })
      .getResult(0);
}

/// What both cross-entropy lowerings start from: logits as [N, C] rows,
/// labels as [N], and each row's max and sum of exp(z - max).
struct Rows {
  int64_t n, c;
  Value z, y, max, sum;
};

Rows crossEntropyRows(OpBuilder &b, Location loc, Value logits, Value labels) {
  Rows r;
  r.z = rows2d(b, loc, logits, r.n, r.c);
  r.y = rows1d(b, loc, labels, r.n);
  std::tie(r.max, r.sum) = rowStats(b, loc, r.z, r.n);
  return r;
}

struct CrossEntropyLowering : OpConversionPattern<nn::CrossEntropyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::CrossEntropyOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto lt = cast<RankedTensorType>(a.getLogits().getType());
    if (!lt.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type elt = lt.getElementType();
    int64_t ignore = static_cast<int64_t>(op.getIgnoreIndex());
    Rows rows = crossEntropyRows(rw, loc, a.getLogits(), a.getLabels());
    int64_t n = rows.n, c = rows.c;
    Value z = rows.z, y = rows.y, max = rows.max, sum = rows.sum;
    Value total = tensor::EmptyOp::create(rw, loc, ArrayRef<int64_t>{}, elt);
    total = linalg::FillOp::create(rw, loc, floatConstant(rw, loc, elt, 0.0), total).getResult(0);
    AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx), scalar = AffineMap::get(1, 0, {}, ctx);
    total = linalg::GenericOp::create(
                rw, loc, TypeRange{total.getType()}, ValueRange{y, max, sum}, ValueRange{total},
                ArrayRef<AffineMap>{id, id, id, scalar}, ArrayRef<IteratorType>{IteratorType::reduction},
                [&](OpBuilder &b, Location l, ValueRange v) {
                  Value label = v[0];
                  Value valid = arith::AndIOp::create(b, l, isCounted(b, l, label, ignore),
                                                      inRange(b, l, label, c));
                  // Clamp so the read stays in bounds; the select drops it.
                  Value safe = arith::SelectOp::create(
                      b, l, valid, label, arith::ConstantOp::create(b, l, b.getIntegerAttr(label.getType(), 0)));
                  Value idx = arith::IndexCastOp::create(b, l, b.getIndexType(), safe);
                  Value picked = tensor::ExtractOp::create(b, l, z, ValueRange{linalg::IndexOp::create(b, l, 0), idx});
                  Value lse = arith::AddFOp::create(b, l, math::LogOp::create(b, l, v[2]), v[1]);
                  Value rowLoss = arith::SubFOp::create(b, l, lse, picked);
                  Value counted = isCounted(b, l, label, ignore);
                  Value add = arith::SelectOp::create(
                      b, l, counted, arith::SelectOp::create(b, l, valid, rowLoss, lse).getResult(),
                      floatConstant(b, l, elt, 0.0));
                  linalg::YieldOp::create(b, l, arith::AddFOp::create(b, l, v[3], add).getResult());
                })
                .getResult(0);
    Value count = countRows(rw, loc, y, n, elt, ignore);
    Value out = tensor::EmptyOp::create(rw, loc, ArrayRef<int64_t>{}, elt);
    out = linalg::GenericOp::create(
              rw, loc, TypeRange{out.getType()}, ValueRange{total, count}, ValueRange{out},
              ArrayRef<AffineMap>{AffineMap::get(0, 0, {}, ctx), AffineMap::get(0, 0, {}, ctx),
                                  AffineMap::get(0, 0, {}, ctx)},
              ArrayRef<IteratorType>{},
              [&](OpBuilder &b, Location l, ValueRange v) {
                Value denom = arith::MaximumFOp::create(b, l, v[1], floatConstant(b, l, elt, 1.0));
                linalg::YieldOp::create(b, l, arith::DivFOp::create(b, l, v[0], denom).getResult());
              })
              .getResult(0);
    rw.replaceOp(op, out);
    return success();
  }
};

struct CrossEntropyGradLowering : OpConversionPattern<nn::CrossEntropyGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::CrossEntropyGradOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto lt = cast<RankedTensorType>(a.getLogits().getType());
    if (!lt.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type elt = lt.getElementType();
    int64_t ignore = static_cast<int64_t>(op.getIgnoreIndex());
    Rows rows = crossEntropyRows(rw, loc, a.getLogits(), a.getLabels());
    int64_t n = rows.n, c = rows.c;
    Value z = rows.z, y = rows.y, max = rows.max, sum = rows.sum;
    Value count = countRows(rw, loc, y, n, elt, ignore);
    AffineMap full = AffineMap::getMultiDimIdentityMap(2, ctx);
    AffineMap row = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
    AffineMap scalar = AffineMap::get(2, 0, {}, ctx);
    Value init = tensor::EmptyOp::create(rw, loc, ArrayRef<int64_t>{n, c}, elt);
    Value d = parallelGeneric(
        rw, loc, init, {z, y, max, sum, a.getGrad(), count}, {full, row, row, row, scalar, scalar},
        [&](OpBuilder &b, Location l, ValueRange v) -> Value {
          Value p = arith::DivFOp::create(
              b, l, math::ExpOp::create(b, l, arith::SubFOp::create(b, l, v[0], v[2])), v[3]);
          Value col = arith::IndexCastOp::create(b, l, v[1].getType(), linalg::IndexOp::create(b, l, 1));
          Value hot = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, col, v[1]);
          Value diff = arith::SelectOp::create(b, l, hot,
                                               arith::SubFOp::create(b, l, p, floatConstant(b, l, elt, 1.0)), p);
          Value denom = arith::MaximumFOp::create(b, l, v[5], floatConstant(b, l, elt, 1.0));
          Value scaled = arith::DivFOp::create(b, l, arith::MulFOp::create(b, l, diff, v[4]), denom);
          return arith::SelectOp::create(b, l, isCounted(b, l, v[1], ignore), scaled,
                                         floatConstant(b, l, elt, 0.0));
        });
    rw.replaceOp(op, reshapeStatic(rw, loc, d, lt));
    return success();
  }
};

struct ScatterAddLowering : OpConversionPattern<nn::ScatterAddOp> {
  ScatterAddLowering(MLIRContext *ctx, bool asReduction)
      : OpConversionPattern(ctx), asReduction(asReduction) {}
  bool asReduction;

  /// table[v, c] += sum over j of (wrap(idx[j]) == v ? upd[j, c] : 0), j in
  /// order: one reduction generic (rows x features x positions).
  Value reduction(ConversionPatternRewriter &rw, Location loc, Value idx, Value upd,
                  Value table, int64_t v) const {
    MLIRContext *ctx = rw.getContext();
    AffineExpr d0, d1, d2;
    bindDims(ctx, d0, d1, d2);
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {d2}, ctx),
                                   AffineMap::get(3, 0, {d2, d1}, ctx),
                                   AffineMap::get(3, 0, {d0, d1}, ctx)};
    SmallVector<utils::IteratorType> iters = {utils::IteratorType::parallel,
                                              utils::IteratorType::parallel,
                                              utils::IteratorType::reduction};
    return linalg::GenericOp::create(
               rw, loc, table.getType(), ValueRange{idx, upd}, ValueRange{table}, maps, iters,
               [&](OpBuilder &b, Location l, ValueRange x) {
                 Type it = x[0].getType();
                 Value vv = arith::ConstantOp::create(b, l, b.getIntegerAttr(it, v));
                 Value zero = arith::ConstantOp::create(b, l, b.getIntegerAttr(it, 0));
                 Value wrapped = arith::SelectOp::create(
                     b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, x[0], zero),
                     arith::AddIOp::create(b, l, x[0], vv), x[0]);
                 Value row = arith::IndexCastOp::create(b, l, it, linalg::IndexOp::create(b, l, 0));
                 Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, wrapped, row);
                 Value sum = arith::AddFOp::create(b, l, x[2], x[1]);
                 linalg::YieldOp::create(b, l, Value(arith::SelectOp::create(b, l, hit, sum, x[2])));
               })
        .getResult(0);
  }

  LogicalResult matchAndRewrite(nn::ScatterAddOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto rt = cast<RankedTensorType>(op.getType());
    auto it = cast<RankedTensorType>(a.getIndices().getType());
    if (!rt.hasStaticShape() || !it.hasStaticShape())
      return rw.notifyMatchFailure(op, "static shapes only");
    Location loc = op.getLoc();
    Type elt = rt.getElementType();
    int64_t v = rt.getDimSize(0), r = rt.getNumElements() / std::max<int64_t>(v, 1);
    int64_t n = it.getNumElements();
    auto tableType = RankedTensorType::get({v, r}, elt);
    Value upd = reshapeStatic(rw, loc, a.getUpdates(), RankedTensorType::get({n, r}, elt));
    Value idx = rows1d(rw, loc, a.getIndices(), n);
    // Into `base` (its buffer, where bufferization finds it dead after)
    // or into zeros.
    Value table;
    if (a.getBase()) {
      table = reshapeStatic(rw, loc, a.getBase(), tableType);
    } else {
      table = tensor::EmptyOp::create(rw, loc, tableType.getShape(), elt);
      table = linalg::FillOp::create(rw, loc, floatConstant(rw, loc, elt, 0.0), table).getResult(0);
    }
    if (asReduction) {
      rw.replaceOp(op, reshapeStatic(rw, loc, reduction(rw, loc, idx, upd, table, v), rt));
      return success();
    }
    Value c0 = arith::ConstantIndexOp::create(rw, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rw, loc, 1);
    Value cn = arith::ConstantIndexOp::create(rw, loc, n);
    auto loop = scf::ForOp::create(
        rw, loc, c0, cn, c1, ValueRange{table},
        [&](OpBuilder &b, Location l, Value j, ValueRange acc) {
          Value raw = tensor::ExtractOp::create(b, l, idx, ValueRange{j});
          Type it = raw.getType();
          Value vv = arith::ConstantOp::create(b, l, b.getIntegerAttr(it, v));
          Value zero = arith::ConstantOp::create(b, l, b.getIntegerAttr(it, 0));
          Value wrapped = arith::SelectOp::create(
              b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, raw, zero),
              arith::AddIOp::create(b, l, raw, vv), raw);
          Value ok = arith::AndIOp::create(
              b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, wrapped, zero),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, wrapped, vv));
          auto ifOp = scf::IfOp::create(
              b, l, ok,
              [&](OpBuilder &tb, Location tl) {
                Value at = arith::IndexCastOp::create(tb, tl, tb.getIndexType(), wrapped);
                SmallVector<OpFoldResult> one = {tb.getIndexAttr(1), tb.getIndexAttr(r)};
                SmallVector<OpFoldResult> strides = {tb.getIndexAttr(1), tb.getIndexAttr(1)};
                auto sliceType = RankedTensorType::get({1, r}, elt);
                Value row = tensor::ExtractSliceOp::create(tb, tl, sliceType, upd,
                                                           ArrayRef<OpFoldResult>{j, tb.getIndexAttr(0)}, one, strides);
                Value cur = tensor::ExtractSliceOp::create(tb, tl, sliceType, acc[0],
                                                           ArrayRef<OpFoldResult>{at, tb.getIndexAttr(0)}, one, strides);
                // The table's row is the generic's init: added to in place.
                AffineMap id = tb.getMultiDimIdentityMap(2);
                Value sum = linalg::GenericOp::create(
                                tb, tl, TypeRange{sliceType}, ValueRange{row}, ValueRange{cur},
                                ArrayRef<AffineMap>{id, id},
                                ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                                              utils::IteratorType::parallel},
                                [](OpBuilder &nb, Location nl, ValueRange x) {
                                  linalg::YieldOp::create(
                                      nb, nl, Value(arith::AddFOp::create(nb, nl, x[0], x[1])));
                                })
                                .getResult(0);
                Value next = tensor::InsertSliceOp::create(tb, tl, sum, acc[0],
                                                           ArrayRef<OpFoldResult>{at, tb.getIndexAttr(0)}, one, strides);
                scf::YieldOp::create(tb, tl, next);
              },
              [&](OpBuilder &eb, Location el) { scf::YieldOp::create(eb, el, acc[0]); });
          scf::YieldOp::create(b, l, ifOp.getResult(0));
        });
    rw.replaceOp(op, reshapeStatic(rw, loc, loop.getResult(0), rt));
    return success();
  }
};

} // namespace

void rewire::populateNNTrainingLowerings(RewritePatternSet &patterns, bool scatterAsReduction) {
  patterns.add<CrossEntropyLowering, CrossEntropyGradLowering>(patterns.getContext());
  patterns.add<ScatterAddLowering>(patterns.getContext(), scatterAsReduction);
}
