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

struct AttentionLowering : OpConversionPattern<nn::AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(nn::AttentionOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto qt = cast<RankedTensorType>(a.getQ().getType());
    auto kt = cast<RankedTensorType>(a.getK().getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (!qt.hasStaticShape() || !kt.hasStaticShape() || !type.hasStaticShape() ||
        qt.getRank() != 4 || kt.getRank() != 4)
      return rw.notifyMatchFailure(op, "static [B, H, T, D] operands only");
    Value bias = a.getBias();
    auto bt = bias ? dyn_cast<RankedTensorType>(bias.getType()) : RankedTensorType();
    if (bias && (!bt || !bt.hasStaticShape()))
      return rw.notifyMatchFailure(op, "a bias of static shape only");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type elt = type.getElementType();
    int64_t b = qt.getDimSize(0), h = qt.getDimSize(1), tq = qt.getDimSize(2),
            dk = qt.getDimSize(3), tk = kt.getDimSize(2);
    double scale = op.getScale() ? op.getScale()->convertToDouble()
                                 : 1.0 / std::sqrt(static_cast<double>(dk));

    // s[b, h, i, j] = sum_c q[b, h, i, c] * k[b, h, j, c]
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    auto scoresType = RankedTensorType::get({b, h, tq, tk}, elt);
    Value init = tensor::EmptyOp::create(rw, loc, scoresType.getShape(), elt);
    init = linalg::FillOp::create(rw, loc, floatConstant(rw, loc, elt, 0.0), init).getResult(0);
    Value s = linalg::GenericOp::create(
                  rw, loc, TypeRange{scoresType}, ValueRange{a.getQ(), a.getK()}, ValueRange{init},
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
    bool causal = op.getCausal();
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
    if (op.getZeroMaskedRows()) {
      // NaN weights (a row with every key masked) become 0.
      Value init = tensor::EmptyOp::create(rw, loc, scoresType.getShape(), elt);
      p = parallelGeneric(rw, loc, init, {p}, {rw.getMultiDimIdentityMap(4)},
                          [&](OpBuilder &nb, Location l, ValueRange v) -> Value {
                            Value nan = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UNO, v[0], v[0]);
                            return arith::SelectOp::create(nb, l, nan, floatConstant(nb, l, elt, 0.0), v[0]);
                          });
    }
    rw.replaceOpWithNewOp<nn::MatMulOp>(op, type, p, a.getV());
    return success();
  }
};

} // namespace

void rewire::populateNNAttentionLowering(RewritePatternSet &patterns) {
  patterns.add<AttentionLowering>(patterns.getContext());
}
