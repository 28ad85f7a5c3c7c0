//===- HyperConnections.cpp - Hyper-Connections and mHC rewrites ----------===//
//
// residual-rewrite kind=hc|mhc: a stream of plain residual adds becomes a
// hyper stream of n copies (papers.md 6.1, 6.2). The stream enters at its
// first state (residual.hyper_expand), every reader of a state reads the
// hyper stream through residual.hyper_read (H^pre), every add becomes a
// residual.hyper_write (H^res and H^post), and the readers of the last
// state read residual.hyper_reduce.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/StreamForms.h"

#include "dialects/nn/NNOps.h"
#include "dialects/nn/NNParameters.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using residual::HyperMap;

namespace {

/// Builds the hyper ops of one stream and its parameters.
class HyperBuilder {
public:
  HyperBuilder(SymbolTable &symbols, const HyperOptions &options, int64_t stream, int64_t n,
               int64_t d, Type elt)
      : symbols(symbols), options(options), stream(stream), n(n), d(d), elt(elt) {}

  /// H^pre of `layer` at the builder's position: a parameter (static HC) or
  /// a residual.hyper_coeffs of `x`.
  FailureOr<Value> pre(OpBuilder &b, Location loc, Value x, int64_t layer) {
    // HC: e_{layer mod n}. mHC: sigmoid(bias) with the same stream weighted
    // (n+1)/(2n) and the others 1/(2n), so the weights sum to 1 (a branch
    // reads exactly the state while the streams are equal, as at init) and
    // the streams start apart (equal weights would keep them equal).
    SmallVector<double> bias(n, 0.0);
    for (int64_t i = 0; i < n; ++i) {
      bool own = i == layer % n;
      if (options.manifold) {
        double p = own ? (n + 1.0) / (2.0 * n) : 1.0 / (2.0 * n);
        // One stream: p = 1, as sigmoid(20) = 1 in f32.
        bias[i] = n == 1 ? 20.0 : std::log(p / (1.0 - p));
      } else {
        bias[i] = own ? 1.0 : 0.0;
      }
    }
    return coefficients(b, loc, x, layer, "pre", bias, /*square=*/false,
                        options.manifold ? HyperMap::sigmoid : HyperMap::tanh);
  }

  /// H^post and H^res of `layer`.
  FailureOr<std::pair<Value, Value>> postAndRes(OpBuilder &b, Location loc, Value x,
                                                int64_t layer) {
    // HC: post = 1, res = I. mHC: 2 sigmoid(0) = 1; Sinkhorn(exp(0)) = 1/n.
    SmallVector<double> postBias(n, options.manifold ? 0.0 : 1.0);
    SmallVector<double> resBias(n * n, 0.0);
    if (!options.manifold)
      for (int64_t i = 0; i < n; ++i)
        resBias[i * n + i] = 1.0;
    auto post = coefficients(b, loc, x, layer, "post", postBias, false,
                             options.manifold ? HyperMap::double_sigmoid : HyperMap::tanh);
    if (failed(post))
      return failure();
    auto res = coefficients(b, loc, x, layer, "res", resBias, true,
                            options.manifold ? HyperMap::sinkhorn : HyperMap::tanh);
    if (failed(res))
      return failure();
    return std::make_pair(*post, *res);
  }

private:
  FailureOr<Value> parameter(OpBuilder &b, Location loc, int64_t layer, StringRef name,
                             ArrayRef<int64_t> shape, Attribute init) {
    std::string full = llvm::formatv("stream{0}.layer{1}.{2}.{3}", stream, layer,
                                     options.manifold ? "mhc" : "hc", name)
                           .str();
    auto global =
        nn::createParameter(symbols, loc, full, RankedTensorType::get(shape, elt), init);
    if (failed(global))
      return failure();
    return nn::loadParameter(b, loc, *global);
  }

  FailureOr<Value> coefficients(OpBuilder &b, Location loc, Value x, int64_t layer,
                                StringRef which, ArrayRef<double> biasValues, bool square,
                                HyperMap map) {
    MLIRContext *ctx = b.getContext();
    SmallVector<int64_t> biasShape = square ? SmallVector<int64_t>{n, n} : SmallVector<int64_t>{n};
    auto biasType = RankedTensorType::get(biasShape, elt);
    SmallVector<Attribute> values;
    for (double v : biasValues)
      values.push_back(FloatAttr::get(elt, v));
    auto bias = parameter(b, loc, layer, (which + "_b").str(), biasShape,
                          DenseElementsAttr::get(biasType, values));
    if (failed(bias) || (!options.manifold && !options.dynamic))
      return bias;
    // The dynamic part: alpha = hc-alpha, W = 0 (so the rewrite keeps the
    // function and W still gets a gradient through alpha).
    int64_t in = options.manifold ? n * d : d;
    int64_t out = options.manifold ? (square ? n * n : n) : (square ? n : 1);
    auto alpha = parameter(b, loc, layer, (which + "_alpha").str(), {},
                           nn::InitAttr::get(ctx, nn::InitKind::constant,
                                             APFloat(options.alphaInit), APFloat(0.0)));
    auto w = parameter(b, loc, layer, (which + "_W").str(), {in, out},
                       nn::InitAttr::get(ctx, nn::InitKind::zeros, APFloat(0.0), APFloat(0.0)));
    if (failed(alpha) || failed(w))
      return failure();
    auto xt = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape(xt.getShape().drop_back());
    if (square)
      shape.push_back(n);
    IntegerAttr iters =
        map == HyperMap::sinkhorn ? b.getI64IntegerAttr(options.sinkhornIters) : IntegerAttr();
    return Value(residual::HyperCoeffsOp::create(
        b, loc, RankedTensorType::get(shape, elt), residual::HyperMapAttr::get(ctx, map), x, *alpha, *w, *bias, iters,
        b.getF64FloatAttr(1e-6), b.getI64IntegerAttr(-1), b.getI64IntegerAttr(stream),
        b.getI64IntegerAttr(layer)));
  }

  SymbolTable &symbols;
  const HyperOptions &options;
  int64_t stream, n, d;
  Type elt;
};

/// Why `updates` cannot become a hyper stream, or success.
LogicalResult checkStream(ArrayRef<Operation *> updates, StringRef kind) {
  for (auto [i, op] : llvm::enumerate(updates)) {
    auto update = cast<residual::StreamOpInterface>(op);
    if (!isa<residual::AddOp>(op))
      return op->emitError() << "residual-rewrite: kind=" << kind
                             << " rewrites a stream of plain residual adds; layer "
                             << update.getLayerIndex() << " is already a '" << op->getName()
                             << "'";
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    if (update.getFeatureAxisIndex() != type.getRank() - 1 || type.isDynamicDim(type.getRank() - 1))
      return op->emitError() << "residual-rewrite: kind=" << kind
                             << " needs a static feature axis last (a transformer's [..., d] "
                                "stream); layer "
                             << update.getLayerIndex() << "'s stream " << type << " has axis "
                             << update.getFeatureAxisIndex();
    if (i == 0)
      continue;
    Value h = update.getStreamInput();
    if (h != updates[i - 1]->getResult(0)) {
      Operation *def = h.getDefiningOp();
      return op->emitError()
             << "residual-rewrite: kind=" << kind << ": layer " << update.getLayerIndex()
             << " reads the state after layer "
             << cast<residual::StreamOpInterface>(updates[i - 1]).getLayerIndex()
             << " through '" << (def ? def->getName().getStringRef() : StringRef("an argument"))
             << "', not directly. Hyper-connections keep n copies of the state between updates, "
                "which leaves no place for an op on the stream itself (a post-LN norm or a "
                "projection shortcut); they apply to pre-LN streams, where every branch starts "
                "with its own norm";
    }
  }
  return success();
}

/// Replaces every use of `state` with `with`, except by `keep` (the add
/// being rewritten) and by the hyper ops (the expand reads the first state).
void replaceReaders(Value state, Value with, Operation *keep) {
  state.replaceUsesWithIf(with, [&](OpOperand &use) {
    Operation *owner = use.getOwner();
    return owner != keep &&
           !isa<residual::HyperExpandOp, residual::HyperReadOp, residual::HyperReduceOp>(owner);
  });
}

} // namespace

LogicalResult rewire::addHyperConnections(func::FuncOp func, SymbolTable &symbols,
                                          const HyperOptions &options) {
  StringRef kind = options.manifold ? "mhc" : "hc";
  for (auto &entry : collectStreamUpdates(func)) {
    int64_t stream = entry.first;
    ArrayRef<Operation *> updates = entry.second;
    if (failed(checkStream(updates, kind)))
      return failure();
    auto type = cast<RankedTensorType>(updates.front()->getResult(0).getType());
    int64_t n = options.streams, d = type.getShape().back();
    Type elt = type.getElementType();
    HyperBuilder hyper(symbols, options, stream, n, d, elt);
    SmallVector<int64_t> hyperShape(type.getShape().drop_back());
    hyperShape.push_back(n);
    hyperShape.push_back(d);
    auto hyperType = RankedTensorType::get(hyperShape, elt);
    auto attrs = [&](OpBuilder &b, Operation *update) {
      auto iface = cast<residual::StreamOpInterface>(update);
      return std::make_tuple(b.getI64IntegerAttr(-1), b.getI64IntegerAttr(stream),
                             b.getI64IntegerAttr(iface.getLayerIndex()));
    };

    // Enter at the first state, right where it is defined.
    Value first = cast<residual::StreamOpInterface>(updates.front()).getStreamInput();
    OpBuilder b(func.getContext());
    if (Operation *def = first.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(first).getOwner());
    auto [axis0, stream0, layer0] = attrs(b, updates.front());
    Value x = residual::HyperExpandOp::create(b, first.getLoc(), hyperType, first, axis0, stream0,
                                              layer0);
    Value state = first;
    for (Operation *update : updates) {
      auto add = cast<residual::AddOp>(update);
      auto [axis, streamAttr, layer] = attrs(b, update);
      // The branch and every other reader of this state read H^pre . X.
      auto pre = hyper.pre(b, add.getLoc(), x, layer.getInt());
      if (failed(pre))
        return failure();
      Value read = residual::HyperReadOp::create(b, add.getLoc(), type, x, *pre, axis, streamAttr,
                                                 layer);
      replaceReaders(state, read, update);
      // The update: H^res . X + (H^post)^T u.
      b.setInsertionPoint(update);
      auto coeffs = hyper.postAndRes(b, add.getLoc(), x, layer.getInt());
      if (failed(coeffs))
        return failure();
      auto write = residual::HyperWriteOp::create(b, add.getLoc(), hyperType, x, add.getU(),
                                                  coeffs->first, coeffs->second, axis,
                                                  streamAttr, layer);
      write->setDiscardableAttrs(update->getDiscardableAttrDictionary());
      x = write;
      state = add.getResult();
      b.setInsertionPointAfter(write);
    }
    // The readers of the last state (the final norm, the head) read the mean.
    auto [axisL, streamL, layerL] = attrs(b, updates.back());
    Value out = residual::HyperReduceOp::create(b, updates.back()->getLoc(), type, x, axisL,
                                                streamL, layerL);
    replaceReaders(state, out, nullptr);
    for (Operation *update : llvm::reverse(updates))
      update->erase();
  }
  return success();
}
