//===- HyperToLinalg.cpp - Hyper stream ops to linalg ---------------------===//
//
// The fused lowering of the hyper stream's data movement (HyperOps.td): one
// linalg.generic per op over [..., n, d], so a copy, a read and a write each
// touch the stream once instead of once per nn op of their decomposition.
// residual.hyper_coeffs runs through its decomposition (the pipelines
// decompose it first: residual::unfusedStreamOps).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/ResidualToLinalg/HyperToLinalg.h"
#include "passes/Conversion/LinalgBuilders.h"

#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace rewire;

namespace {

using Iter = utils::IteratorType;

/// The map of `loops` loop dims onto `dims` of them.
AffineMap dimsMap(MLIRContext *ctx, int64_t loops, ArrayRef<int64_t> dims) {
  SmallVector<AffineExpr> e;
  for (int64_t d : dims)
    e.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(loops, 0, e, ctx);
}

SmallVector<int64_t> range(int64_t n) {
  SmallVector<int64_t> r;
  for (int64_t i = 0; i < n; ++i)
    r.push_back(i);
  return r;
}

/// A coefficient over the token dims `tokens` and then `own` (its last dims):
/// static (`[n]`, `[n, n]`: only `own`) or per token.
AffineMap coefficientMap(MLIRContext *ctx, Value c, int64_t loops, ArrayRef<int64_t> tokens,
                         ArrayRef<int64_t> own) {
  SmallVector<int64_t> dims;
  if (cast<RankedTensorType>(c.getType()).getRank() > static_cast<int64_t>(own.size()))
    dims.append(tokens.begin(), tokens.end());
  dims.append(own.begin(), own.end());
  return dimsMap(ctx, loops, dims);
}

Value zeros(OpBuilder &b, Location loc, RankedTensorType type) {
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::FillOp::create(b, loc, floatConstant(b, loc, type.getElementType(), 0.0), init)
      .getResult(0);
}

/// out = init + sum over the reduction loops of f(inputs), one generic.
Value reduceInto(OpBuilder &b, Location loc, Value init, ValueRange inputs,
                 ArrayRef<AffineMap> maps, ArrayRef<Iter> iters,
                 function_ref<Value(OpBuilder &, Location, ValueRange)> f) {
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        linalg::YieldOp::create(nb, l, ValueRange{arith::AddFOp::create(
                                          nb, l, a.back(), f(nb, l, a.drop_back()))});
      });
  return g.getResult(0);
}

template <class Op>
struct StaticShapes : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult check(Op op, ConversionPatternRewriter &rw) const {
    for (Type t : op->getOperandTypes())
      if (!cast<RankedTensorType>(t).hasStaticShape())
        return rw.notifyMatchFailure(op, "static shapes only");
    return success();
  }
};

/// X[..., i, :] = h[..., :].
struct ExpandLowering : StaticShapes<residual::HyperExpandOp> {
  using StaticShapes::StaticShapes;
  LogicalResult matchAndRewrite(residual::HyperExpandOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    if (failed(check(op, rw)))
      return failure();
    auto type = op.getResult().getType();
    int64_t loops = type.getRank();
    SmallVector<int64_t> hDims = range(loops - 2);
    hDims.push_back(loops - 1);
    Value init = tensor::EmptyOp::create(rw, op.getLoc(), type.getShape(), type.getElementType());
    rw.replaceOp(op, parallelGeneric(rw, op.getLoc(), init, {a.getH()},
                                     {dimsMap(op.getContext(), loops, hDims)},
                                     [](OpBuilder &, Location, ValueRange v) { return v[0]; }));
    return success();
  }
};

/// sum_i w_i X_i over the stream axis of `x` ([..., n, d] -> [..., d]),
/// `weights` static ([n]) or per token, or all 1 when null: one generic.
Value streamSum(OpBuilder &b, Location loc, RankedTensorType result, Value x, Value weights) {
  MLIRContext *ctx = b.getContext();
  int64_t loops = cast<RankedTensorType>(x.getType()).getRank(), i = loops - 2;
  SmallVector<int64_t> tokens = range(loops - 2), out = tokens;
  out.push_back(loops - 1);
  SmallVector<Iter> iters(loops, Iter::parallel);
  iters[i] = Iter::reduction;
  SmallVector<Value> inputs = {x};
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(loops)};
  if (weights) {
    inputs.push_back(weights);
    maps.push_back(coefficientMap(ctx, weights, loops, tokens, {i}));
  }
  maps.push_back(dimsMap(ctx, loops, out));
  return reduceInto(b, loc, zeros(b, loc, result), inputs, maps, iters,
                    [](OpBuilder &nb, Location l, ValueRange v) -> Value {
                      return v.size() == 1 ? v[0] : arith::MulFOp::create(nb, l, v[0], v[1]);
                    });
}

/// sum_i pre_i X_i.
struct ReadLowering : StaticShapes<residual::HyperReadOp> {
  using StaticShapes::StaticShapes;
  LogicalResult matchAndRewrite(residual::HyperReadOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    if (failed(check(op, rw)))
      return failure();
    rw.replaceOp(op, streamSum(rw, op.getLoc(), op.getType(), a.getX(), a.getPre()));
    return success();
  }
};

/// (1/n) sum_i X_i.
struct ReduceLowering : StaticShapes<residual::HyperReduceOp> {
  using StaticShapes::StaticShapes;
  LogicalResult matchAndRewrite(residual::HyperReduceOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    if (failed(check(op, rw)))
      return failure();
    Location loc = op.getLoc();
    auto xt = op.getX().getType();
    Value sum = streamSum(rw, loc, op.getType(), a.getX(), Value());
    Type elt = xt.getElementType();
    double n = static_cast<double>(xt.getDimSize(xt.getRank() - 2));
    Value init = tensor::EmptyOp::create(rw, loc, op.getType().getShape(), elt);
    rw.replaceOp(op, parallelGeneric(rw, loc, init, {sum},
                                     {rw.getMultiDimIdentityMap(xt.getRank() - 1)},
                                     [&](OpBuilder &b, Location l, ValueRange v) -> Value {
                                       return arith::DivFOp::create(
                                           b, l, v[0], floatConstant(b, l, elt, n));
                                     }));
    return success();
  }
};

/// X'_i = sum_j res_ij X_j + post_i u.
struct WriteLowering : StaticShapes<residual::HyperWriteOp> {
  using StaticShapes::StaticShapes;
  LogicalResult matchAndRewrite(residual::HyperWriteOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    if (failed(check(op, rw)))
      return failure();
    MLIRContext *ctx = op.getContext();
    Location loc = op.getLoc();
    auto type = op.getType();
    int64_t rank = type.getRank(), i = rank - 2, d = rank - 1;
    SmallVector<int64_t> tokens = range(rank - 2), uDims = tokens;
    uDims.push_back(d);
    // post_i u, over [..., i, d].
    Value init = tensor::EmptyOp::create(rw, loc, type.getShape(), type.getElementType());
    Value added = parallelGeneric(
        rw, loc, init, {a.getPost(), a.getU()},
        {coefficientMap(ctx, a.getPost(), rank, tokens, {i}), dimsMap(ctx, rank, uDims)},
        [](OpBuilder &b, Location l, ValueRange v) -> Value {
          return arith::MulFOp::create(b, l, v[0], v[1]);
        });
    // + sum_j res_ij X_j, loops [..., i, d, j].
    int64_t loops = rank + 1, j = rank;
    SmallVector<int64_t> xDims = tokens;
    xDims.push_back(j);
    xDims.push_back(d);
    SmallVector<Iter> iters(loops, Iter::parallel);
    iters[j] = Iter::reduction;
    rw.replaceOp(op, reduceInto(rw, loc, added, {a.getRes(), a.getX()},
                                {coefficientMap(ctx, a.getRes(), loops, tokens, {i, j}),
                                 dimsMap(ctx, loops, xDims), dimsMap(ctx, loops, range(rank))},
                                iters, [](OpBuilder &b, Location l, ValueRange v) -> Value {
                                  return arith::MulFOp::create(b, l, v[0], v[1]);
                                }));
    return success();
  }
};

} // namespace

void rewire::populateHyperToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandLowering, ReadLowering, ReduceLowering, WriteLowering>(patterns.getContext());
}
