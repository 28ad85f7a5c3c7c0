//===- TrainStep.cpp - The training step as IR ----------------------------===//
//
// Implements rewire-train-step (see Passes.td): eval_step (the loss),
// train_step (loss, gradients by reverse-mode differentiation, optimizer
// update) or, split, grad_step and apply_step, all in the nn dialect so they
// compile like any model.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"
#include "dialects/nn/NNParameters.h"
#include "rewire/Support/TrainStepAbi.h"

#include "lib/Autodiff/Differentiate.h"
#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNDecompose.h"
#include "dialects/nn/NNOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace rewire {
#define GEN_PASS_DEF_TRAINSTEP
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;
using namespace rewire::trainstep;

namespace {

struct TrainStepPass : public rewire::impl::TrainStepBase<TrainStepPass> {
  using TrainStepBase::TrainStepBase;
  void runOnOperation() override;
};

StringAttr str(MLIRContext *ctx, const Twine &s) { return StringAttr::get(ctx, s); }

NamedAttribute nameAttr(MLIRContext *ctx, const Twine &s) {
  return NamedAttribute(str(ctx, nn::kNameAttrName), str(ctx, s));
}

/// Parameters become plain, named inputs ("param:<name>").
void renameParameters(func::FuncOp fn) {
  MLIRContext *ctx = fn.getContext();
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto p = fn.getArgAttrOfType<StringAttr>(i, nn::kParameterAttrName)) {
      fn.removeArgAttr(i, nn::kParameterAttrName);
      fn.setArgAttr(i, nn::kNameAttrName, str(ctx, kParamPrefix + p.getValue()));
    }
}

/// A training-mode batch normalization whose running statistics are
/// parameters, written out in nn ops so its batch statistics serve both the
/// normalization and the running-statistics update.
struct TrainingBatchNorm {
  Location loc;
  Value mean, var; // the running statistics (arguments)
  nn::BatchStatistics batch;
  double momentum, count; // count: elements per channel
};

/// Decomposes the training-mode batch normalizations of `fn` whose running
/// statistics are parameters; those arguments become buffers: updated, not
/// differentiated.
SmallVector<TrainingBatchNorm> decomposeTrainingBatchNorms(func::FuncOp fn,
                                                           SmallVectorImpl<unsigned> &buffers) {
  SmallVector<nn::BatchNormOp> ops;
  fn.walk([&](nn::BatchNormOp bn) {
    if (!bn.getTraining())
      return;
    bool any = false;
    for (Value v : {bn.getMean(), bn.getVar()})
      if (auto arg = dyn_cast<BlockArgument>(v))
        if (fn.getArgAttr(arg.getArgNumber(), nn::kParameterAttrName) &&
            !llvm::is_contained(buffers, arg.getArgNumber())) {
          buffers.push_back(arg.getArgNumber());
          any = true;
        }
    if (any)
      ops.push_back(bn);
  });
  SmallVector<TrainingBatchNorm> found;
  for (nn::BatchNormOp bn : ops) {
    ImplicitLocOpBuilder b(bn.getLoc(), bn);
    auto xt = cast<RankedTensorType>(bn.getX().getType());
    TrainingBatchNorm t{bn.getLoc(), bn.getMean(), bn.getVar(), {}, bn.getMomentum().convertToDouble(),
                        static_cast<double>(xt.getNumElements()) / static_cast<double>(xt.getDimSize(1))};
    Value y = nn::decomposeBatchNorm(b, bn.getX(), bn.getScale(), bn.getBias(), bn.getMean(), bn.getVar(),
                                     bn.getEpsilon().convertToDouble(), /*training=*/true, &t.batch);
    bn.replaceAllUsesWith(y);
    bn.erase();
    found.push_back(t);
  }
  return found;
}

void TrainStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  auto fail = [&](const Twine &msg) {
    module.emitError("rewire-train-step: ") << msg;
    signalPassFailure();
  };
  auto fwd = module.lookupSymbol<func::FuncOp>(function);
  if (!fwd || fwd.isExternal() || !fwd.getBody().hasOneBlock())
    return fail("no single-block function '" + function + "'");
  for (StringRef name : {kEvalFunction, kTrainFunction, kGradFunction, kApplyFunction})
    if (module.lookupSymbol(name))
      return fail("'" + name + "' exists already");
  if (fwd.getNumResults() == 0)
    return fail("'" + function + "' returns nothing");
  auto predType = dyn_cast<RankedTensorType>(fwd.getResultTypes()[0]);
  if (!predType || !isa<FloatType>(predType.getElementType()))
    return fail("the prediction of '" + function + "' is not a float tensor");
  Type elt = predType.getElementType();
  auto scalarType = RankedTensorType::get({}, elt);

  // eval_step(inputs..., target, params...) -> loss.
  auto eval = fwd.clone();
  eval.setSymName(kEvalFunction);
  SymbolTable(module).insert(eval, std::next(Block::iterator(fwd)));
  unsigned firstParam = eval.getNumArguments();
  for (unsigned i = 0; i < eval.getNumArguments(); ++i)
    if (eval.getArgAttr(i, nn::kParameterAttrName)) {
      firstParam = i;
      break;
    }
  for (unsigned i = firstParam; i < eval.getNumArguments(); ++i)
    if (!eval.getArgAttr(i, nn::kParameterAttrName))
      return fail("inputs must come before parameters in '" + function + "'");
  // MSE compares with a target like the prediction; cross-entropy takes
  // integer class labels for the prediction's rows (logits [..., C]).
  bool ce = loss == LossKind::crossEntropy;
  if (ce && predType.getRank() < 1)
    return fail("cross_entropy needs logits of rank >= 1");
  Type targetType = ce ? Type(RankedTensorType::get(predType.getShape().drop_back(),
                                                    IntegerType::get(ctx, 64)))
                       : Type(predType);
  if (failed(eval.insertArgument(firstParam, targetType,
                                 DictionaryAttr::get(ctx, {nameAttr(ctx, kTarget)}), fwd.getLoc())))
    return fail("cannot add the target argument");
  // LPA readouts: results named <output>_depth<k>, k = 1..K-1.
  SmallVector<unsigned> readouts;
  {
    auto base = fwd.getResultAttrOfType<StringAttr>(0, nn::kNameAttrName);
    std::string prefix = (base ? base.str() : std::string("output_0")) + "_depth";
    for (unsigned k = 1;; ++k) {
      unsigned found = 0;
      for (unsigned i = 1; i < fwd.getNumResults(); ++i)
        if (auto n = fwd.getResultAttrOfType<StringAttr>(i, nn::kNameAttrName))
          if (n.getValue() == prefix + std::to_string(k) && fwd.getResultTypes()[i] == predType)
            found = i;
      if (!found)
        break;
      readouts.push_back(found);
    }
  }
  size_t depths = readouts.size() + 1;
  SmallVector<double> weights;
  if (readouts.empty()) {
    weights = {1.0};
  } else if (depthWeights == "uniform") {
    weights.assign(depths, 1.0 / static_cast<double>(depths));
  } else if (depthWeights == "linear") {
    double total = static_cast<double>(depths * (depths + 1) / 2);
    for (size_t k = 1; k <= depths; ++k)
      weights.push_back(static_cast<double>(k) / total);
  } else if (depthWeights == "last") {
    weights.assign(depths, 0.0);
    weights.back() = 1.0;
  } else {
    for (StringRef w : llvm::split(StringRef(depthWeights), ',')) {
      double v;
      if (w.trim().getAsDouble(v) || !std::isfinite(v) || v < 0.0)
        return fail("depth-weights '" + depthWeights + "': '" + w.trim() +
                    "' is not a non-negative number (or use uniform, linear, last)");
      weights.push_back(v);
    }
    if (weights.size() != depths)
      return fail("depth-weights has " + std::to_string(weights.size()) + " values; the model has " +
                  std::to_string(depths) + " depths");
  }

  SmallVector<Value> depthLosses; // eval_step's, depth 1..K
  {
    auto ret = cast<func::ReturnOp>(eval.getBody().front().getTerminator());
    ImplicitLocOpBuilder b(ret.getLoc(), ret);
    Value target = eval.getArgument(firstParam);
    auto lossOf = [&](Value pred) -> Value {
      if (ce)
        return nn::CrossEntropyOp::create(b, scalarType, pred, target,
                                          b.getI64IntegerAttr(ignoreIndex));
      Value d = nn::SubOp::create(b, pred, target);
      Value sq = nn::MulOp::create(b, d, d);
      return nn::ReduceMeanOp::create(b, scalarType, sq, b.getDenseI64ArrayAttr({}),
                                      b.getBoolAttr(false));
    };
    Value l;
    if (readouts.empty()) {
      l = lossOf(ret.getOperand(0));
    } else {
      for (unsigned i : readouts)
        depthLosses.push_back(lossOf(ret.getOperand(i)));
      depthLosses.push_back(lossOf(ret.getOperand(0)));
      // L = sum_k w_k loss_k; depths weighted 0 stay off the loss's path.
      for (auto [k, lk] : llvm::enumerate(depthLosses)) {
        if (weights[k] == 0.0)
          continue;
        Value term = weights[k] == 1.0
                         ? lk
                         : nn::MulOp::create(b, lk, autodiff::scalar(b, elt, weights[k])).getResult();
        l = l ? nn::AddOp::create(b, l, term).getResult() : term;
      }
      if (!l)
        return fail("depth-weights are all zero");
    }
    SmallVector<Value> results = {l};
    SmallVector<DictionaryAttr> attrs = {DictionaryAttr::get(ctx, {nameAttr(ctx, kLoss)})};
    for (auto [k, lk] : llvm::enumerate(depthLosses)) {
      results.push_back(lk);
      attrs.push_back(DictionaryAttr::get(ctx, {nameAttr(ctx, kDepthLossPrefix + Twine(k + 1))}));
    }
    func::ReturnOp::create(b, results);
    ret.erase();
    SmallVector<Type> types(results.size(), scalarType);
    eval.setFunctionType(FunctionType::get(ctx, eval.getArgumentTypes(), types));
    eval.setAllResultAttrs(attrs);
  }

  // train_step: the loss and its gradients, then the update.
  auto train = eval.clone();
  // eval_step evaluates as PyTorch's model.eval(): batch normalization with
  // the running statistics.
  eval.walk([](nn::BatchNormOp bn) { bn.removeTrainingAttr(); });
  train.setSymName(kTrainFunction);
  SymbolTable(module).insert(train, std::next(Block::iterator(eval)));
  SmallVector<std::string> frozenPrefixes;
  for (const std::string &p : frozen)
    if (!StringRef(p).trim().empty())
      frozenPrefixes.push_back(StringRef(p).trim().str());
  // The per-depth losses are returned after the update (differentiate keeps
  // only the loss).
  SmallVector<Value> trainDepthLosses;
  {
    auto ret = cast<func::ReturnOp>(train.getBody().front().getTerminator());
    for (unsigned i = 1; i < ret.getNumOperands(); ++i)
      trainDepthLosses.push_back(ret.getOperand(i));
  }
  SmallVector<unsigned> gradArgs, buffers;
  SmallVector<TrainingBatchNorm> batchNorms = decomposeTrainingBatchNorms(train, buffers);
  if (failed(autodiff::differentiate(train, "parameters", frozenPrefixes, &gradArgs, buffers)))
    return signalPassFailure();

  bool adam = optimizer == OptimizerKind::adamw;
  bool sgdMomentum = !adam && momentum != 0.0;
  unsigned statesPerParam = adam ? 2 : sgdMomentum ? 1 : 0;
  SmallVector<std::string> names;
  for (unsigned a : gradArgs)
    names.push_back(train.getArgAttrOfType<StringAttr>(a, nn::kParameterAttrName).str());
  auto ret = cast<func::ReturnOp>(train.getBody().front().getTerminator());
  SmallVector<Value> grads;
  for (unsigned k = 0; k < gradArgs.size(); ++k)
    grads.push_back(ret.getOperand(1 + k));
  auto named = [&](const Twine &name) { return DictionaryAttr::get(ctx, {nameAttr(ctx, name)}); };

  // Running statistics (in the function that runs the batch), PyTorch's
  // update: momentum * running + (1 - momentum) * batch, with the unbiased
  // batch variance.
  SmallVector<Value> bnResults;
  SmallVector<DictionaryAttr> bnAttrs;
  {
    ImplicitLocOpBuilder b(ret.getLoc(), ret);
    llvm::DenseSet<unsigned> updated;
    for (const TrainingBatchNorm &bn : batchNorms) {
      b.setLoc(bn.loc);
      double m = bn.momentum;
      auto update = [&](Value running, Value batch, double correction) {
        auto arg = dyn_cast<BlockArgument>(running);
        if (!arg || !train.getArgAttr(arg.getArgNumber(), nn::kParameterAttrName) ||
            !updated.insert(arg.getArgNumber()).second)
          return;
        Value keep = nn::MulOp::create(b, autodiff::scalar(b, elt, m), running);
        Value add = nn::MulOp::create(b, autodiff::scalar(b, elt, (1.0 - m) * correction), batch);
        bnResults.push_back(nn::AddOp::create(b, keep, add));
        bnAttrs.push_back(named(kParamPrefix + train.getArgAttrOfType<StringAttr>(
                                                   arg.getArgNumber(), nn::kParameterAttrName)
                                                   .getValue()));
      };
      update(bn.mean, bn.batch.mean, 1.0);
      update(bn.var, bn.batch.var, bn.count > 1 ? bn.count / (bn.count - 1) : 1.0);
    }
  }

  // The update runs in train_step itself or, split, in apply_step, which
  // takes the parameters, their (reduced) gradients and the state.
  func::FuncOp upd = train;
  if (splitSteps) {
    OpBuilder mb(ctx);
    upd = func::FuncOp::create(mb, train.getLoc(), kApplyFunction, FunctionType::get(ctx, {}, {}));
    upd.addEntryBlock();
    SymbolTable(module).insert(upd, std::next(Block::iterator(train)));
  }
  auto addArg = [&](Type t, const Twine &name) {
    unsigned i = upd.getNumArguments();
    (void)upd.insertArgument(i, t, named(name), upd.getLoc());
    return upd.getArgument(i);
  };
  SmallVector<Value> params;
  for (auto [k, a] : llvm::enumerate(gradArgs))
    params.push_back(splitSteps ? addArg(train.getArgument(a).getType(), kParamPrefix + names[k])
                           : train.getArgument(a));
  // Optimizer state and scalar inputs go after everything else.
  SmallVector<SmallVector<Value, 2>> states(gradArgs.size());
  for (auto [k, a] : llvm::enumerate(gradArgs))
    for (unsigned s = 0; s < statesPerParam; ++s)
      states[k].push_back(addArg(params[k].getType(),
                                 kStatePrefix + names[k] + ":" +
                                 (adam ? (s ? kSecondMomentSlot : kFirstMomentSlot) : kMomentumSlot)));
  SmallVector<Value> gradIn; // split: the reduced gradients, and their scale
  Value gradScale;
  if (splitSteps) {
    for (auto [k, g] : llvm::enumerate(grads))
      gradIn.push_back(addArg(g.getType(), kGradPrefix + names[k]));
    gradScale = addArg(scalarType, kGradScale);
  }
  Value lr = addArg(scalarType, kLearningRate);
  Value bc1, bc2;
  if (adam) {
    bc1 = addArg(scalarType, kBiasCorrection1);
    bc2 = addArg(scalarType, kBiasCorrection2);
  }

  ImplicitLocOpBuilder b(train.getLoc(), ctx);
  if (splitSteps)
    b.setInsertionPointToEnd(&upd.getBody().front());
  else
    b.setInsertionPoint(ret);
  auto num = [&](double v) { return autodiff::scalar(b, elt, v); };
  auto mul = [&](Value x, Value y) { return nn::MulOp::create(b, x, y).getResult(); };
  auto add = [&](Value x, Value y) { return nn::AddOp::create(b, x, y).getResult(); };
  auto sub = [&](Value x, Value y) { return nn::SubOp::create(b, x, y).getResult(); };
  SmallVector<Value> update = splitSteps ? gradIn : grads; // the gradients the update uses
  if (splitSteps)
    for (Value &g : update)
      g = mul(g, gradScale);
  SmallVector<Value> unclipped = update;
  // Gradient clipping by global norm, PyTorch's clip_grad_norm_:
  // coef = clip / (norm + 1e-6), gradients scaled by min(coef, 1).
  if (clip > 0.0 && !update.empty()) {
    Value total;
    for (Value g : update) {
      Value sq = nn::ReduceSumOp::create(b, scalarType, mul(g, g), b.getDenseI64ArrayAttr({}),
                                         b.getBoolAttr(false));
      total = total ? add(total, sq) : sq;
    }
    Value norm = add(nn::SqrtOp::create(b, total), num(1e-6));
    Value coef = nn::DivOp::create(b, num(clip), norm);
    Value over = nn::CastOp::create(b, RankedTensorType::get({}, b.getI1Type()),
                                    nn::ReluOp::create(b, sub(norm, num(clip))));
    Value factor = nn::WhereOp::create(b, over, coef, num(1.0));
    for (Value &g : update)
      g = mul(g, factor);
  }
  SmallVector<Value> newParams, newStates;
  SmallVector<DictionaryAttr> paramAttrs, stateAttrs;
  for (auto [k, p] : llvm::enumerate(params)) {
    Value g = update[k], np;
    if (!adam) {
      Value d = weightDecay != 0.0 ? add(g, mul(num(weightDecay), p)) : g;
      if (sgdMomentum) {
        d = add(mul(num(momentum), states[k][0]), d);
        newStates.push_back(d);
        stateAttrs.push_back(named(kStatePrefix + names[k] + ":" + kMomentumSlot));
      }
      np = sub(p, mul(lr, d));
    } else {
      Value decayed = weightDecay != 0.0 ? mul(p, sub(num(1.0), mul(lr, num(weightDecay)))) : p;
      Value m = add(mul(num(beta1), states[k][0]), mul(num(1.0 - beta1), g));
      Value v = add(mul(num(beta2), states[k][1]), mul(num(1.0 - beta2), mul(g, g)));
      Value denom = add(nn::SqrtOp::create(b, mul(v, bc2)), num(eps));
      np = sub(decayed, mul(lr, nn::DivOp::create(b, mul(m, bc1), denom)));
      newStates.push_back(m);
      newStates.push_back(v);
      stateAttrs.push_back(named(kStatePrefix + names[k] + ":" + kFirstMomentSlot));
      stateAttrs.push_back(named(kStatePrefix + names[k] + ":" + kSecondMomentSlot));
    }
    newParams.push_back(np);
    paramAttrs.push_back(named(kParamPrefix + names[k]));
  }
  SmallVector<Value> norms;
  SmallVector<DictionaryAttr> normAttrs;
  if (gradNorms)
    for (auto [k, g] : llvm::enumerate(unclipped)) {
      Value sq = nn::ReduceSumOp::create(b, scalarType, mul(g, g), b.getDenseI64ArrayAttr({}),
                                         b.getBoolAttr(false));
      norms.push_back(nn::SqrtOp::create(b, sq));
      normAttrs.push_back(named(kGradNormPrefix + names[k]));
    }

  // Results: train_step (loss, params', buffers', states', depth losses,
  // grad norms); split: grad_step (loss, grads, buffers', depth losses)
  // and apply_step (params', states', grad norms).
  auto finish = [&](func::FuncOp fn, Operation *oldReturn, ArrayRef<Value> results,
                    ArrayRef<DictionaryAttr> attrs) {
    OpBuilder rb(ctx);
    if (oldReturn)
      rb.setInsertionPoint(oldReturn);
    else
      rb.setInsertionPointToEnd(&fn.getBody().front());
    func::ReturnOp::create(rb, fn.getLoc(), results);
    if (oldReturn)
      oldReturn->erase();
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    fn.setFunctionType(FunctionType::get(ctx, fn.getArgumentTypes(), types));
    fn.setAllResultAttrs(attrs);
  };
  SmallVector<Value> results = {ret.getOperand(0)};
  SmallVector<DictionaryAttr> attrs = {named(kLoss)};
  auto append = [](auto &to, const auto &from) { to.append(from.begin(), from.end()); };
  if (splitSteps) {
    append(results, grads);
    for (const std::string &n : names)
      attrs.push_back(named(kGradPrefix + n));
  } else {
    append(results, newParams);
    append(attrs, paramAttrs);
  }
  append(results, bnResults);
  append(attrs, bnAttrs);
  if (!splitSteps) {
    append(results, newStates);
    append(attrs, stateAttrs);
  }
  for (auto [k, lk] : llvm::enumerate(trainDepthLosses)) {
    results.push_back(lk);
    attrs.push_back(named(kDepthLossPrefix + Twine(k + 1)));
  }
  if (!splitSteps) {
    append(results, norms);
    append(attrs, normAttrs);
  }
  finish(train, ret, results, attrs);
  if (splitSteps) {
    SmallVector<Value> updResults(newParams);
    SmallVector<DictionaryAttr> updAttrs(paramAttrs);
    append(updResults, newStates);
    append(updAttrs, stateAttrs);
    append(updResults, norms);
    append(updAttrs, normAttrs);
    finish(upd, nullptr, updResults, updAttrs);
    train.setSymName(kGradFunction);
  }
  renameParameters(eval);
  renameParameters(train);
}

} // namespace
