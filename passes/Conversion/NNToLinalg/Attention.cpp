//===- Attention.cpp - nn.attention to linalg -----------------------------===//
//
// The composite attention op of convert-nn-to-linalg, expanded:
//   s = q . k^T       one contraction reading k transposed through its
//                     indexing map (no transposed copy; BLAS takes it as
//                     transB after bufferization)
//   s = s * scale + bias, masked to -inf where key > query + (Tk - Tq) if
//                     causal (one elementwise generic over linalg.index)
//   p = softmax(s)    an nn.softmax, legalized by the softmax pattern (NaN
//                     weights then set to 0 under zero_masked_rows)
//   o = p . v         an nn.matmul, legalized by the matmul pattern
// and its vector-Jacobian product nn.attention_grad, from the same weights p
// computed again:
//   dv = p^T . dout, dp = dout . v^T, ds = p * (dp - rowsum(dout * out)),
//   dq = scale * ds . k, dk = scale * ds^T . q     (nn ops, legalized here)
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/NNToLinalg/NNToLinalgPatterns.h"

#include "dialects/nn/NNDecompose.h"
#include "dialects/nn/NNOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
using namespace rewire;

namespace {

/// The attention weights p = softmax(q . k^T * scale + bias, causal mask)
/// as `[B, H, Tq, Tk]` (NaN rows set to 0 under `zeroMaskedRows`), or null
/// with a match failure when the shapes are not static.
Value attentionWeights(ConversionPatternRewriter &rw, Operation *op, Value q, Value k, Value bias,
                       bool causal, bool zeroMaskedRows, double scale) {
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  Location loc = op->getLoc();
  MLIRContext *ctx = op->getContext();
  Type elt = qt.getElementType();
  int64_t b = qt.getDimSize(0), h = qt.getDimSize(1), tq = qt.getDimSize(2),
          tk = kt.getDimSize(2);
  auto bt = bias ? cast<RankedTensorType>(bias.getType()) : RankedTensorType();

  // s[b, h, i, j] = sum_c q[b, h, i, c] * k[b, h, j, c]
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  auto scoresType = RankedTensorType::get({b, h, tq, tk}, elt);
  Value init = tensor::EmptyOp::create(rw, loc, scoresType.getShape(), elt);
  init = linalg::FillOp::create(rw, loc, floatConstant(rw, loc, elt, 0.0), init).getResult(0);
  Value s = linalg::GenericOp::create(
                rw, loc, TypeRange{scoresType}, ValueRange{q, k}, ValueRange{init},
                ArrayRef<AffineMap>{AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx),
                                    AffineMap::get(5, 0, {d(0), d(1), d(3), d(4)}, ctx),
                                    AffineMap::get(5, 0, {d(0), d(1), d(2), d(3)}, ctx)},
                ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                              utils::IteratorType::parallel,
                                              utils::IteratorType::parallel,
                                              utils::IteratorType::parallel,
                                              utils::IteratorType::reduction},
                [](OpBuilder &nb, Location l, ValueRange v) {
                  linalg::YieldOp::create(
                      nb, l,
                      arith::AddFOp::create(nb, l, v[2], arith::MulFOp::create(nb, l, v[0], v[1]))
                          .getResult());
                })
                .getResult(0);

  // Scale, bias and causal mask in one pass; the bias read through a
  // broadcasting map (its dimensions of 1 pinned to 0).
  int64_t shift = tk - tq;
  Value scaledInit = tensor::EmptyOp::create(rw, loc, scoresType.getShape(), elt);
  SmallVector<Value> ins = {s};
  SmallVector<AffineMap> maps = {rw.getMultiDimIdentityMap(4)};
  if (bias) {
    SmallVector<AffineExpr> exprs;
    int64_t lead = 4 - bt.getRank();
    for (int64_t i = 0; i < bt.getRank(); ++i)
      exprs.push_back(bt.getDimSize(i) == 1 ? getAffineConstantExpr(0, ctx) : d(lead + i));
    ins.push_back(bias);
    maps.push_back(AffineMap::get(4, 0, exprs, ctx));
  }
  s = parallelGeneric(rw, loc, scaledInit, ins, maps,
                      [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
                        Value y = arith::MulFOp::create(nb, l, v[0], floatConstant(nb, l, elt, scale));
                        if (bias)
                          y = arith::AddFOp::create(nb, l, y, v[1]);
                        if (!causal)
                          return y;
                        Value i = linalg::IndexOp::create(nb, l, 2);
                        Value j = linalg::IndexOp::create(nb, l, 3);
                        Value limit = arith::AddIOp::create(
                            nb, l, i, arith::ConstantIndexOp::create(nb, l, shift));
                        Value masked = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sgt, j, limit);
                        return arith::SelectOp::create(nb, l, masked,
                                                       floatConstant(nb, l, elt, -INFINITY), y);
                      });
  Value p = nn::SoftmaxOp::create(rw, loc, scoresType, s, rw.getI64IntegerAttr(-1));
  if (zeroMaskedRows) {
    // NaN weights (a row with every key masked) become 0.
    Value init = tensor::EmptyOp::create(rw, loc, scoresType.getShape(), elt);
    p = parallelGeneric(rw, loc, init, {p}, {rw.getMultiDimIdentityMap(4)},
                        [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
                          Value nan = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UNO, v[0], v[0]);
                          return arith::SelectOp::create(nb, l, nan, floatConstant(nb, l, elt, 0.0), v[0]);
                        });
  }
  return p;
}

/// Whether q, k (and the result or bias) have the static shapes the
/// expansion needs.
LogicalResult staticOperands(ConversionPatternRewriter &rw, Operation *op, Value q, Value k,
                             Value bias, Value result) {
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  auto type = cast<RankedTensorType>(result.getType());
  if (!qt.hasStaticShape() || !kt.hasStaticShape() || !type.hasStaticShape() ||
      qt.getRank() != 4 || kt.getRank() != 4)
    return rw.notifyMatchFailure(op, "static [B, H, T, D] operands only");
  auto bt = bias ? dyn_cast<RankedTensorType>(bias.getType()) : RankedTensorType();
  if (bias && (!bt || !bt.hasStaticShape()))
    return rw.notifyMatchFailure(op, "a bias of static shape only");
  return success();
}

template <typename Op> double scaleOf(Op op) {
  auto qt = cast<RankedTensorType>(op.getQ().getType());
  return op.getScale() ? op.getScale()->convertToDouble()
                       : 1.0 / std::sqrt(static_cast<double>(qt.getDimSize(3)));
}

struct AttentionLowering : OpConversionPattern<nn::AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::AttentionOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    if (failed(staticOperands(rw, op, a.getQ(), a.getK(), a.getBias(), op.getResult())))
      return failure();
    Value p = attentionWeights(rw, op, a.getQ(), a.getK(), a.getBias(), op.getCausal(),
                               op.getZeroMaskedRows(), scaleOf(op));
    rw.replaceOpWithNewOp<nn::MatMulOp>(op, op.getType(), p, a.getV());
    return success();
  }
};

/// Swaps the last two of four dimensions.
Value transposeLast(ImplicitLocOpBuilder &b, Value x) {
  return nn::TransposeOp::create(b, x, b.getDenseI64ArrayAttr({0, 1, 3, 2}));
}

struct AttentionGradLowering : OpConversionPattern<nn::AttentionGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::AttentionGradOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    if (failed(staticOperands(rw, op, a.getQ(), a.getK(), a.getBias(), op.getDv())) ||
        failed(staticOperands(rw, op, a.getQ(), a.getK(), a.getBias(), op.getDq())))
      return failure();
    double scale = scaleOf(op);
    Value p = attentionWeights(rw, op, a.getQ(), a.getK(), a.getBias(), op.getCausal(),
                               op.getZeroMaskedRows(), scale);
    ImplicitLocOpBuilder b(op.getLoc(), rw);
    Type elt = cast<RankedTensorType>(p.getType()).getElementType();
    Value dout = a.getDout();
    Value dv = nn::MatMulOp::create(b, transposeLast(b, p), dout);
    Value dp = nn::MatMulOp::create(b, dout, transposeLast(b, a.getV()));
    Value delta = nn::ReduceSumOp::create(b, nn::MulOp::create(b, dout, a.getOut()),
                                          b.getDenseI64ArrayAttr({3}), b.getBoolAttr(true));
    Value ds = nn::MulOp::create(b, p, nn::SubOp::create(b, dp, delta));
    Value c = nn::scalar(b, elt, scale);
    Value dq = nn::MulOp::create(b, nn::MatMulOp::create(b, ds, a.getK()), c);
    Value dk = nn::MulOp::create(b, nn::MatMulOp::create(b, transposeLast(b, ds), a.getQ()), c);
    rw.replaceOp(op, {dq, dk, dv});
    return success();
  }
};

} // namespace

void rewire::populateNNAttentionLowering(RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, AttentionGradLowering>(patterns.getContext());
}
