//===- ResidualRewrite.cpp - Rewrite residual adds into learned forms -----===//
//
// Implements residual-rewrite: each residual.add becomes a scale_add, a
// gated_add or a NAG update with new named parameters, initialized as the
// paper prescribes or so that the model keeps computing its original
// function; the stream-level forms (ANCRe, DenseFormer, LPA) are in
// StreamForms.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"
#include "passes/Transforms/StreamForms.h"

#include "dialects/nn/NNOps.h"
#include "dialects/nn/NNParameters.h"
#include "dialects/residual/ResidualOps.h"
#include "rewire/Support/InitRules.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace rewire {
#define GEN_PASS_DEF_RESIDUALREWRITE
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;
using residual::Combine;

namespace {

/// Gate bias that saturates sigmoid to exactly 1.0 in f32 (sigmoid(20) =
/// 1 - 2.1e-9 rounds to 1), used for identity initialization of gates.
constexpr double kSaturatedGateBias = 20.0;

StringRef kindName(RewriteKind kind) {
  switch (kind) {
  case RewriteKind::rezero:
    return "rezero";
  case RewriteKind::skipinit:
    return "skipinit";
  case RewriteKind::layerscale:
    return "layerscale";
  case RewriteKind::review:
    return "review";
  case RewriteKind::highway:
    return "highway";
  case RewriteKind::nag:
    return "nag";
  case RewriteKind::ancre:
    return "ancre";
  case RewriteKind::denseformer:
    return "denseformer";
  case RewriteKind::lpa:
    return "lpa";
  case RewriteKind::laurel:
    return "laurel";
  case RewriteKind::hc:
    return "hc";
  case RewriteKind::mhc:
    return "mhc";
  case RewriteKind::valueResidual:
    return "value-residual";
  }
  return "unknown";
}

/// The `laurel=` spelling of `v`: its components joined by '-'.
std::string laurelVariantName(LaurelVariant v) {
  if (v == LaurelVariant::gemma3n)
    return "gemma3n";
  std::string name;
  for (auto [part, spelling] : {std::pair{LaurelVariant::rw, "rw"},
                                std::pair{LaurelVariant::lr, "lr"},
                                std::pair{LaurelVariant::pa, "pa"}})
    if (laurelHas(v, part))
      name += (name.empty() ? "" : "-") + std::string(spelling);
  return name;
}

nn::InitAttr makeInit(MLIRContext *ctx, nn::InitKind kind, double a = 0.0,
                      double b = 0.0) {
  return nn::InitAttr::get(ctx, kind, APFloat(a), APFloat(b));
}

nn::InitAttr constantInit(MLIRContext *ctx, double value) {
  if (value == 0.0)
    return makeInit(ctx, nn::InitKind::zeros);
  if (value == 1.0)
    return makeInit(ctx, nn::InitKind::ones);
  return makeInit(ctx, nn::InitKind::constant, value);
}

struct ResidualRewritePass
    : public rewire::impl::ResidualRewriteBase<ResidualRewritePass> {
  using ResidualRewriteBase::ResidualRewriteBase;

  void runOnOperation() override;

private:
  /// Adds parameter `<prefix>.<suffix>` and loads it before `op`.
  FailureOr<Value> addParameter(residual::AddOp op, StringRef suffix,
                                RankedTensorType type, Attribute init);
  LogicalResult rewriteScale(residual::AddOp op, int64_t depth);
  LogicalResult rewriteGated(residual::AddOp op);
  LogicalResult rewriteNag(residual::AddOp op);
  LogicalResult rewriteLaurel(residual::AddOp op);
  LogicalResult rewriteLaurelGemma3n(residual::AddOp op);

  bool gated() const {
    return kind == RewriteKind::review || kind == RewriteKind::highway;
  }

  /// The module's symbols, kept up to date as parameters are added.
  std::optional<SymbolTable> symbols;
  /// laurel=gemma3n: the attention updates rewritten.
  int64_t gemma3nUpdates = 0;
};

} // namespace

FailureOr<Value> ResidualRewritePass::addParameter(residual::AddOp op,
                                                   StringRef suffix,
                                                   RankedTensorType type,
                                                   Attribute init) {
  std::string name = llvm::formatv("stream{0}.layer{1}.{2}.{3}", op.getStream(),
                                   op.getLayer(), kindName(kind), suffix)
                         .str();
  auto global = nn::createParameter(*symbols, op.getLoc(), name, type, init);
  if (failed(global))
    return failure();
  OpBuilder builder(op);
  return nn::loadParameter(builder, op.getLoc(), *global);
}

LogicalResult ResidualRewritePass::rewriteScale(residual::AddOp op,
                                                int64_t depth) {
  MLIRContext *ctx = &getContext();
  auto stateType = op.getH().getType();
  Type elt = stateType.getElementType();
  RankedTensorType alphaType;
  double value;
  StringRef suffix;
  if (kind == RewriteKind::layerscale) {
    int64_t axis =
        cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
    int64_t d = stateType.getDimSize(axis);
    if (ShapedType::isDynamic(d))
      return op.emitError("residual-rewrite: kind=layerscale needs a static "
                          "feature size to create per-channel parameters");
    alphaType = RankedTensorType::get({d}, elt);
    value = init == InitMode::identity ? 1.0 : *layerScaleInit(depth);
    suffix = "lambda";
  } else {
    alphaType = RankedTensorType::get({}, elt);
    value = init == InitMode::identity ? 1.0 : 0.0;
    suffix = "alpha";
  }
  auto alpha = addParameter(op, suffix, alphaType, constantInit(ctx, value));
  if (failed(alpha))
    return failure();
  OpBuilder builder(op);
  auto scaled = residual::ScaleAddOp::create(
      builder, op.getLoc(), op.getH(), op.getU(), *alpha, op.getAxis(),
      op.getStream(), op.getLayer());
  scaled->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op.replaceAllUsesWith(scaled.getResult());
  op.erase();
  return success();
}

LogicalResult ResidualRewritePass::rewriteGated(residual::AddOp op) {
  MLIRContext *ctx = &getContext();
  bool review = kind == RewriteKind::review;
  auto stateType = op.getH().getType();
  Type elt = stateType.getElementType();
  int64_t axis =
      cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
  int64_t d = stateType.getDimSize(axis);
  if (ShapedType::isDynamic(d))
    return op.emitError() << "residual-rewrite: kind=" << kindName(kind)
                          << " needs a static feature size to create its "
                             "gate parameters";
  int64_t g = gate == GateWidth::channel ? d : 1;
  int64_t in = review ? 2 * d : d;

  Attribute weightInit, biasInit;
  if (init == InitMode::identity) {
    weightInit = makeInit(ctx, nn::InitKind::zeros);
    biasInit = constantInit(ctx, kSaturatedGateBias);
  } else if (review) {
    weightInit = makeInit(ctx, nn::InitKind::zeros);
    biasInit = makeInit(ctx, nn::InitKind::zeros);
  } else {
    weightInit = makeInit(ctx, nn::InitKind::normal, 0.0, 0.02);
    biasInit = constantInit(ctx, highwayBias);
  }
  auto weight = addParameter(op, "W", RankedTensorType::get({in, g}, elt),
                             weightInit);
  if (failed(weight))
    return failure();
  auto bias = addParameter(op, "b", RankedTensorType::get({g}, elt), biasInit);
  if (failed(bias))
    return failure();
  OpBuilder builder(op);
  auto gateKind = review ? residual::GateKind::review
                         : residual::GateKind::highway;
  FloatAttr epsAttr = review ? builder.getF64FloatAttr(eps) : FloatAttr();
  auto gatedOp = residual::GatedAddOp::create(
      builder, op.getLoc(), stateType, gateKind, combine, op.getH(), op.getU(),
      *weight, *bias, epsAttr, op.getAxis(), op.getStream(), op.getLayer());
  gatedOp->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op.replaceAllUsesWith(gatedOp.getResult());
  op.erase();
  return success();
}

LogicalResult ResidualRewritePass::rewriteNag(residual::AddOp op) {
  MLIRContext *ctx = &getContext();
  auto stateType = op.getH().getType();
  Type elt = stateType.getElementType();
  int64_t axis =
      cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
  int64_t d = stateType.getDimSize(axis);
  if (ShapedType::isDynamic(d))
    return op.emitError("residual-rewrite: kind=nag needs a static feature "
                        "size to create its gate parameters");
  int64_t c = nagComponents;
  // alpha_l = l^{-1/2} with l the 1-based sublayer index.
  double alphaInit = *nagAlphaInit(static_cast<int64_t>(op.getLayer()) + 1);
  auto alpha = addParameter(op, "alpha", RankedTensorType::get({}, elt),
                            constantInit(ctx, alphaInit));
  auto w = addParameter(op, "w", RankedTensorType::get({d, c}, elt),
                        makeInit(ctx, nn::InitKind::normal, 0.0, 0.02));
  auto b = addParameter(op, "b", RankedTensorType::get({c}, elt),
                        makeInit(ctx, nn::InitKind::zeros));
  auto pi = addParameter(op, "pi", RankedTensorType::get({c}, elt),
                         makeInit(ctx, nn::InitKind::zeros));
  if (failed(alpha) || failed(w) || failed(b) || failed(pi))
    return failure();
  OpBuilder builder(op);
  SmallVector<int64_t> mShape(stateType.getShape());
  mShape[axis] = 1;
  auto gateOp = residual::NagGateOp::create(
      builder, op.getLoc(), RankedTensorType::get(mShape, elt), op.getH(), *w,
      *b, *pi, builder.getF64FloatAttr(nagBeta), op.getAxisAttr(),
      op.getStreamAttr(), op.getLayerAttr());
  auto nagOp = residual::NagAddOp::create(
      builder, op.getLoc(), stateType, op.getH(), op.getU(), *alpha,
      gateOp.getM(), builder.getF64FloatAttr(1e-6), op.getAxisAttr(),
      op.getStreamAttr(), op.getLayerAttr());
  nagOp->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op.replaceAllUsesWith(nagOp.getResult());
  op.erase();
  return success();
}

LogicalResult ResidualRewritePass::rewriteLaurel(residual::AddOp op) {
  if (laurelVariant == LaurelVariant::gemma3n)
    return rewriteLaurelGemma3n(op);
  MLIRContext *ctx = &getContext();
  auto stateType = op.getH().getType();
  Type elt = stateType.getElementType();
  auto scalarType = RankedTensorType::get({}, elt);
  bool learnedScalars = laurelHas(laurelVariant, LaurelVariant::rw);
  bool lowRank = laurelHas(laurelVariant, LaurelVariant::lr);
  if (!learnedScalars && !lowRank)
    return success(); // pa alone: the update stays an add (addPreviousActivations)
  OpBuilder builder(op);
  // RW: learned alpha, beta (1 keeps the function); LR alone fixes both at 1.
  auto scalar = [&](StringRef name) -> FailureOr<Value> {
    if (learnedScalars)
      return addParameter(op, name, scalarType, constantInit(ctx, 1.0));
    return Value(
        nn::ConstantOp::create(builder, op.getLoc(), scalarType,
                               DenseElementsAttr::get(scalarType, builder.getFloatAttr(elt, 1.0))));
  };
  FailureOr<Value> alpha = scalar("alpha"), beta = scalar("beta");
  if (failed(alpha) || failed(beta))
    return failure();
  Value a, b;
  if (lowRank) {
    int64_t axis = cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
    int64_t d = stateType.getDimSize(axis);
    if (axis != stateType.getRank() - 1 || ShapedType::isDynamic(d))
      return op.emitError() << "residual-rewrite: kind=laurel laurel="
                            << laurelVariantName(laurelVariant)
                            << " needs a static feature axis last for its low-rank map (this "
                               "update's is axis "
                            << axis << " of " << stateType << "); use laurel=rw";
    // B = 0: the low-rank term starts at 0 (the paper's init), A small.
    auto pa = addParameter(op, "A", RankedTensorType::get({d, laurelRank}, elt),
                           makeInit(ctx, nn::InitKind::normal, 0.0, 0.02));
    auto pb = addParameter(op, "B", RankedTensorType::get({laurelRank, d}, elt),
                           makeInit(ctx, nn::InitKind::zeros));
    if (failed(pa) || failed(pb))
      return failure();
    a = *pa;
    b = *pb;
  }
  builder.setInsertionPoint(op);
  auto laurel =
      residual::LaurelOp::create(builder, op.getLoc(), stateType, op.getH(), op.getU(), *alpha,
                                 *beta, a, b, op.getAxis(), op.getStream(), op.getLayer());
  laurel->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op.replaceAllUsesWith(laurel.getResult());
  op.erase();
  return success();
}

/// The branch's normalized input: the output of an nn.layer_norm or
/// nn.rms_norm of the state `h` that feeds the update `u`, or else what the
/// first matrix product of the branch (nn.matmul or nn.gemm, in program
/// order, computed from `h` and feeding `u`) reads from `h`'s side. In a
/// pre-LN model that is the input norm's output, fused (nn.layer_norm,
/// nn.rms_norm) or spelled out (LLaMA's exported RMSNorm); in a post-LN one
/// it is `h` itself. Reshapes before the product (GPT-2's flattened tokens) are looked
/// through. Null if there is no such product or it reads another type.
static Value branchInput(residual::AddOp op) {
  Value h = op.getH(), u = op.getU();
  SetVector<Operation *> fromH;
  getForwardSlice(h, &fromH);
  SetVector<Operation *> toU;
  if (Operation *def = u.getDefiningOp()) {
    BackwardSliceOptions options;
    options.omitBlockArguments = true;
    (void)getBackwardSlice(def, &toU, options);
    toU.insert(def); // the slice leaves its root out
  }
  // A norm op of the state on the branch (Swin's windows reshuffle its
  // output before the projection).
  for (Operation *user : h.getUsers())
    if (isa<nn::LayerNormOp, nn::RMSNormOp>(user) && toU.contains(user))
      return user->getResult(0);
  auto dependsOnH = [&](Value v) {
    return v == h || (v.getDefiningOp() && fromH.contains(v.getDefiningOp()));
  };
  for (Operation &candidate : *op->getBlock()) {
    if (&candidate == op.getOperation())
      break;
    if (!isa<nn::MatMulOp, nn::GemmOp>(candidate) || !fromH.contains(&candidate) ||
        !toU.contains(&candidate))
      continue;
    Value in = candidate.getOperand(0);
    if (!dependsOnH(in))
      in = candidate.getOperand(1);
    // GPT-2's Conv1D flattens the tokens first ([B, T, d] -> [B T, d]).
    while (in.getType() != h.getType())
      if (auto reshape = in.getDefiningOp<nn::ReshapeOp>())
        in = reshape.getOperand();
      else
        return Value();
    return in;
  }
  return Value();
}

/// Gemma 3n's merged LAuReL (papers.md 6.3), on attention sublayers only:
/// with `a` the branch's normalized input (branchInput), `z = a + rms(a A B)
/// w` and the update `(h + u + z) / sqrt 2`, written as `residual.laurel`
/// with constant scalars 1/sqrt 2 over the branch output `u + z` (A, B as
/// linear layers, w = 1).
LogicalResult ResidualRewritePass::rewriteLaurelGemma3n(residual::AddOp op) {
  auto branch = op->getAttrOfType<StringAttr>(residual::kBranchAttrName);
  if (!branch || branch.getValue() != "attention")
    return success(); // Gemma 3n adds LAuReL to attention sublayers only
  MLIRContext *ctx = &getContext();
  auto stateType = op.getH().getType();
  Type elt = stateType.getElementType();
  int64_t axis = cast<residual::StreamOpInterface>(op.getOperation()).getFeatureAxisIndex();
  int64_t d = stateType.getDimSize(axis);
  if (axis != stateType.getRank() - 1 || ShapedType::isDynamic(d))
    return op.emitError() << "residual-rewrite: kind=laurel laurel=gemma3n needs a static feature "
                             "axis last (this update's is axis "
                          << axis << " of " << stateType << ")";
  Value a = branchInput(op);
  if (!a || a == op.getH())
    return op.emitError()
           << "residual-rewrite: kind=laurel laurel=gemma3n reads the attention branch's "
              "normalized input, but "
           << (a ? "its first projection reads the state itself (a post-LN model)"
                 : "no projection of the state's type starts the branch")
           << "; use laurel=rw-lr";
  // Both maps initialized as linear layers (std 1/sqrt(fan_in), so a A B
  // has the scale of a), as Gemma 3n trains them from scratch: not B = 0,
  // nor small, since the norm after them divides by their scale (its
  // gradient at 0 is rsqrt(eps)) and the function changes anyway.
  auto pa = addParameter(op, "A", RankedTensorType::get({d, laurelRank}, elt),
                         makeInit(ctx, nn::InitKind::normal, 0.0, 1.0 / std::sqrt(double(d))));
  auto pb = addParameter(op, "B", RankedTensorType::get({laurelRank, d}, elt),
                         makeInit(ctx, nn::InitKind::normal, 0.0,
                                  1.0 / std::sqrt(double(laurelRank))));
  auto pw = addParameter(op, "norm", RankedTensorType::get({d}, elt),
                         makeInit(ctx, nn::InitKind::ones));
  if (failed(pa) || failed(pb) || failed(pw))
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto lowType = stateType.clone(
      llvm::to_vector(llvm::concat<const int64_t>(stateType.getShape().drop_back(),
                                                   ArrayRef<int64_t>{laurelRank})));
  Value left = nn::MatMulOp::create(b, loc, lowType, a, *pa);
  Value right = nn::MatMulOp::create(b, loc, stateType, left, *pb);
  Value normed = nn::RMSNormOp::create(b, loc, right, *pw, b.getI64IntegerAttr(-1),
                                       b.getF32FloatAttr(1e-6f));
  Value z = nn::AddOp::create(b, loc, a, normed);
  Value u = nn::AddOp::create(b, loc, op.getU(), z);
  auto scalarType = RankedTensorType::get({}, elt);
  Value half = nn::ConstantOp::create(
      b, loc, scalarType, DenseElementsAttr::get(scalarType, b.getFloatAttr(elt, M_SQRT1_2)));
  auto laurel = residual::LaurelOp::create(b, loc, stateType, op.getH(), u, half, half, Value(),
                                           Value(), op.getAxis(), op.getStream(), op.getLayer());
  laurel->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op.replaceAllUsesWith(laurel.getResult());
  op.erase();
  ++gemma3nUpdates;
  return success();
}

void ResidualRewritePass::runOnOperation() {
  ModuleOp module = getOperation();
  gemma3nUpdates = 0;
  if (gated() && init == InitMode::identity && combine == Combine::convex) {
    module.emitError() << "residual-rewrite: kind=" << kindName(kind)
                       << " combine=convex has no identity initialization "
                          "(a gate of 1 drops the state h); use init=paper or "
                          "combine=additive";
    return signalPassFailure();
  }
  if (!gated() && combine == Combine::convex) {
    module.emitError() << "residual-rewrite: combine=convex applies only to "
                          "the gated kinds (review, highway), not kind="
                       << kindName(kind);
    return signalPassFailure();
  }
  bool noIdentity = kind == RewriteKind::nag || kind == RewriteKind::ancre;
  if (noIdentity && init == InitMode::identity) {
    module.emitError() << "residual-rewrite: kind=" << kindName(kind)
                       << " has no identity initialization ("
                       << (kind == RewriteKind::nag
                               ? "it renormalizes every update"
                               : "softmax weights cannot all be 0, so earlier "
                                 "states are always added")
                       << "); use init=paper";
    return signalPassFailure();
  }
  if (kind == RewriteKind::nag && (nagComponents < 1 || !(nagBeta > 0.0))) {
    module.emitError() << "residual-rewrite: nag-c must be >= 1 and nag-beta "
                          "positive";
    return signalPassFailure();
  }
  if (kind == RewriteKind::ancre && !(tau > 0.0)) {
    module.emitError() << "residual-rewrite: tau must be positive, got " << static_cast<double>(tau);
    return signalPassFailure();
  }
  if (stopGradient && kind != RewriteKind::lpa) {
    module.emitError() << "residual-rewrite: stop-gradient applies only to kind=lpa, not kind="
                       << kindName(kind);
    return signalPassFailure();
  }
  if (kind == RewriteKind::laurel && laurelVariant == LaurelVariant::gemma3n &&
      init == InitMode::identity) {
    module.emitError() << "residual-rewrite: kind=laurel laurel=gemma3n adds the branch's input "
                          "norm and scales every attention update by 1/sqrt 2, which changes the "
                          "function; use init=paper (training from scratch) or another laurel "
                          "variant";
    return signalPassFailure();
  }
  if (kind == RewriteKind::laurel &&
      (laurelHas(laurelVariant, LaurelVariant::lr) || laurelVariant == LaurelVariant::gemma3n) &&
      laurelRank < 1) {
    module.emitError() << "residual-rewrite: rank must be >= 1, got "
                       << static_cast<int64_t>(laurelRank);
    return signalPassFailure();
  }
  if (!(eps > 0.0)) {
    module.emitError() << "residual-rewrite: eps must be positive, got "
                       << static_cast<double>(eps);
    return signalPassFailure();
  }

  bool hyper = kind == RewriteKind::hc || kind == RewriteKind::mhc;
  if (hyper && (streams < 1 || (kind == RewriteKind::mhc && sinkhornIters < 1))) {
    module.emitError() << "residual-rewrite: streams and iters must be >= 1, got streams="
                       << static_cast<int64_t>(streams)
                       << " iters=" << static_cast<int64_t>(sinkhornIters);
    return signalPassFailure();
  }
  if (hyper && !std::isfinite(static_cast<double>(hcAlpha))) {
    module.emitError() << "residual-rewrite: hc-alpha must be finite";
    return signalPassFailure();
  }

  if (kind == RewriteKind::valueResidual && init == InitMode::identity &&
      valueLambda == ValueLambda::fixed) {
    module.emitError() << "residual-rewrite: kind=value-residual lambda=fixed mixes 1/2 of the first "
                          "layer's values in, which changes the function; use lambda=learned with "
                          "init=identity (lambda = 0, 1 at step 0)";
    return signalPassFailure();
  }

  symbols.emplace(module);
  if (kind == RewriteKind::valueResidual) {
    int64_t mixed = 0, streams = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      streams += collectStreamUpdates(func).size();
      auto n = addValueResidual(func, *symbols, valueLambda == ValueLambda::learned,
                                init == InitMode::identity);
      if (failed(n))
        return signalPassFailure();
      mixed += *n;
    }
    if (streams && !mixed) {
      module.emitError()
          << "residual-rewrite: kind=value-residual mixes a stream's first attention layer's "
             "values into its later ones, but no stream has two attention layers with a visible "
             "softmax(q k^T) . V product (a model without attention, or one stream per attention "
             "layer)";
      return signalPassFailure();
    }
    return;
  }
  if (hyper) {
    HyperOptions options;
    options.manifold = kind == RewriteKind::mhc;
    options.dynamic = hcDynamic;
    options.streams = streams;
    options.sinkhornIters = sinkhornIters;
    options.alphaInit = hcAlpha;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.getBody().hasOneBlock() &&
          failed(addHyperConnections(func, *symbols, options)))
        return signalPassFailure();
    return;
  }
  bool streamLevel = kind == RewriteKind::ancre ||
                     kind == RewriteKind::denseformer ||
                     kind == RewriteKind::lpa;
  if (streamLevel) {
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock() ||
          collectStreamUpdates(func).empty())
        continue;
      LogicalResult result =
          kind == RewriteKind::lpa
              ? addDepthReadouts(func, granularity, stopGradient)
              : addDepthMixes(func, *symbols, kind == RewriteKind::ancre, tau,
                              granularity);
      if (failed(result))
        return signalPassFailure();
    }
    return;
  }
  SmallVector<residual::AddOp> adds;
  llvm::DenseMap<int64_t, int64_t> depth; // updates per stream
  module.walk([&](residual::AddOp op) {
    adds.push_back(op);
    ++depth[static_cast<int64_t>(op.getStream())];
  });

  for (residual::AddOp op : adds) {
    LogicalResult result = kind == RewriteKind::nag      ? rewriteNag(op)
                           : kind == RewriteKind::laurel ? rewriteLaurel(op)
                           : gated()
                               ? rewriteGated(op)
                               : rewriteScale(op, depth[static_cast<int64_t>(op.getStream())]);
    if (failed(result))
      return signalPassFailure();
  }
  if (kind == RewriteKind::laurel && laurelVariant == LaurelVariant::gemma3n && !adds.empty() &&
      gemma3nUpdates == 0) {
    module.emitError() << "residual-rewrite: kind=laurel laurel=gemma3n adds LAuReL to attention "
                          "sublayers (as Gemma 3n does), but no residual update's branch is "
                          "attention (residual.branch); use laurel=rw-lr";
    return signalPassFailure();
  }
  if (kind == RewriteKind::laurel && laurelHas(laurelVariant, LaurelVariant::pa))
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.getBody().hasOneBlock() &&
          failed(addPreviousActivations(func, *symbols)))
        return signalPassFailure();
}
