//===- ResidualFolds.cpp - Residual folders and canonicalizations ---------===//
//
// Folders and canonicalization patterns of the residual ops: the cases where
// the learned form collapses to a simpler one because its parameters are
// constants (alpha = 0, a saturated gate, one-hot mixing weights).
//
//===----------------------------------------------------------------------===//
#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace rewire::residual;

static bool isZero(Value v) { return matchPattern(v, m_AnyZeroFloat()); }
static bool isOne(Value v) { return matchPattern(v, m_OneFloat()); }

/// The constant float elements of `v`, if it is produced by a constant.
static std::optional<DenseFPElementsAttr> constantElements(Value v) {
  DenseFPElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr)))
    return attr;
  return std::nullopt;
}

/// sigmoid(x) rounded to the float semantics of `like` (what a kernel in that
/// element type computes for a saturated gate).
static APFloat sigmoidIn(const APFloat &x) {
  double xd = x.convertToDouble();
  APFloat r(1.0 / (1.0 + std::exp(-xd)));
  bool lost;
  r.convert(x.getSemantics(), llvm::RoundingMode::NearestTiesToEven, &lost);
  return r;
}

//===----------------------------------------------------------------------===//
// AddOp
//===----------------------------------------------------------------------===//

OpFoldResult AddOp::fold(FoldAdaptor) {
  if (isZero(getU()))
    return getH();
  return {};
}

//===----------------------------------------------------------------------===//
// ScaleAddOp
//===----------------------------------------------------------------------===//

OpFoldResult ScaleAddOp::fold(FoldAdaptor) {
  if (isZero(getAlpha()) || isZero(getU()))
    return getH();
  return {};
}

namespace {
/// scale_add with alpha == 1 is the plain residual add.
struct ScaleAddOfOne : OpRewritePattern<ScaleAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleAddOp op,
                                PatternRewriter &rewriter) const override {
    if (!isOne(op.getAlpha()))
      return rewriter.notifyMatchFailure(op, "alpha is not a constant one");
    rewriter.replaceOpWithNewOp<AddOp>(op, op.getH(), op.getU(), op.getAxis(),
                                       op.getStream(), op.getLayer());
    return success();
  }
};
} // namespace

void ScaleAddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add<ScaleAddOfOne>(context);
}

//===----------------------------------------------------------------------===//
// GatedAddOp
//===----------------------------------------------------------------------===//

/// The gate values when the gate is input-independent (weight a constant
/// zero, bias a constant): sigmoid(bias), rounded to the element type.
static std::optional<SmallVector<APFloat>> constantGate(GatedAddOp op) {
  if (!isZero(op.getWeight()))
    return std::nullopt;
  auto bias = constantElements(op.getBias());
  if (!bias)
    return std::nullopt;
  SmallVector<APFloat> gate;
  for (APFloat b : bias->getValues<APFloat>())
    gate.push_back(sigmoidIn(b));
  return gate;
}

static bool allEqual(ArrayRef<APFloat> values, double x) {
  return llvm::all_of(values, [&](const APFloat &v) {
    return v.convertToDouble() == x;
  });
}

OpFoldResult GatedAddOp::fold(FoldAdaptor) {
  auto gate = constantGate(*this);
  if (!gate)
    return {};
  if (allEqual(*gate, 0.0))
    return getH();
  if (getCombine() == Combine::convex && allEqual(*gate, 1.0))
    return getU();
  return {};
}

namespace {
/// An additive gated add whose gate does not depend on the input is a
/// scale_add by the constant gate values.
struct GatedAddOfConstantGate : OpRewritePattern<GatedAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatedAddOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getCombine() != Combine::additive)
      return rewriter.notifyMatchFailure(op, "convex combine");
    auto gate = constantGate(op);
    if (!gate)
      return rewriter.notifyMatchFailure(op, "gate depends on the input");
    auto alphaType = RankedTensorType::get(
        {static_cast<int64_t>(gate->size())},
        op.getH().getType().getElementType());
    auto alpha = arith::ConstantOp::create(
        rewriter, op.getLoc(), alphaType,
        DenseFPElementsAttr::get(alphaType, *gate));
    rewriter.replaceOpWithNewOp<ScaleAddOp>(op, op.getH(), op.getU(), alpha,
                                            op.getAxis(), op.getStream(),
                                            op.getLayer());
    return success();
  }
};
} // namespace

void GatedAddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add<GatedAddOfConstantGate>(context);
}

//===----------------------------------------------------------------------===//
// MixOp
//===----------------------------------------------------------------------===//

OpFoldResult MixOp::fold(FoldAdaptor) {
  if (getWeightsKind() != MixWeights::free)
    return {};
  auto weights = constantElements(getWeights());
  if (!weights)
    return {};
  // One-hot weights select one input: index k is y, j < k is h_j.
  std::optional<size_t> hot;
  size_t i = 0;
  for (APFloat w : weights->getValues<APFloat>()) {
    double x = w.convertToDouble();
    if (x == 1.0 && !hot)
      hot = i;
    else if (x != 0.0)
      return {};
    ++i;
  }
  if (!hot)
    return {};
  if (*hot == getStates().size())
    return getY();
  return getStates()[*hot];
}

namespace {
/// softmax over a single logit is 1: the mix is y + h_0.
struct MixOfSingleSoftmaxState : OpRewritePattern<MixOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MixOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getWeightsKind() != MixWeights::softmax ||
        op.getStates().size() != 1)
      return rewriter.notifyMatchFailure(op, "not a softmax over one state");
    rewriter.replaceOpWithNewOp<AddOp>(op, op.getStates()[0], op.getY(),
                                       op.getAxis(), op.getStream(),
                                       op.getLayer());
    return success();
  }
};
} // namespace

void MixOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<MixOfSingleSoftmaxState>(context);
}

//===----------------------------------------------------------------------===//
// RouteOp
//===----------------------------------------------------------------------===//

OpFoldResult RouteOp::fold(FoldAdaptor) {
  if (getMode() == RouteMode::rate && getValue().isZero())
    return getM();
  return {};
}

//===----------------------------------------------------------------------===//
// NagAddOp
//===----------------------------------------------------------------------===//

OpFoldResult NagAddOp::fold(FoldAdaptor) {
  if (isZero(getAlpha()) || isZero(getM()))
    return getR();
  return {};
}
