//===- ResidualInstrument.cpp - Per-layer statistics as results -----------===//
//
// Implements residual-instrument (see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"
#include "dialects/nn/NNParameters.h"

#include "dialects/residual/ResidualDecompose.h"
#include "dialects/nn/NNDecompose.h"

#include "dialects/nn/NNOps.h"
#include "dialects/residual/ResidualOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace rewire {
#define GEN_PASS_DEF_RESIDUALINSTRUMENT
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

struct ResidualInstrumentPass : public rewire::impl::ResidualInstrumentBase<ResidualInstrumentPass> {
  void runOnOperation() override;
};

RankedTensorType scalarOf(Value v) {
  return RankedTensorType::get({}, cast<RankedTensorType>(v.getType()).getElementType());
}

/// Mean of all elements, as a 0-d tensor.
Value meanAll(ImplicitLocOpBuilder &b, Value x) {
  return nn::ReduceMeanOp::create(b, scalarOf(x), x, b.getDenseI64ArrayAttr({}), b.getBoolAttr(false));
}

/// The L2 norm of every row along `axis` (kept as size 1).
Value rowNorms(ImplicitLocOpBuilder &b, Value x, int64_t axis) {
  Value sq = nn::ReduceSumOp::create(b, nn::MulOp::create(b, x, x), b.getDenseI64ArrayAttr({axis}),
                                     b.getBoolAttr(true));
  return nn::SqrtOp::create(b, sq);
}

/// The largest absolute row sum (`axis` -1: the forward gain of `x . P`) or
/// column sum (`axis` -2: the backward gain) of the [.., n, n] maps `p`, over
/// all tokens: the mHC paper's "Amax gain magnitude".
Value maxGain(ImplicitLocOpBuilder &b, Value p, int64_t axis) {
  int64_t rank = cast<RankedTensorType>(p.getType()).getRank();
  Value sums = nn::ReduceSumOp::create(b, nn::AbsOp::create(b, p),
                                       b.getDenseI64ArrayAttr({rank + axis}), b.getBoolAttr(false));
  return nn::ReduceMaxOp::create(b, scalarOf(p), sums, b.getDenseI64ArrayAttr({}),
                                 b.getBoolAttr(false));
}

void ResidualInstrumentPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || !fn.isPublic() || !fn.getBody().hasOneBlock())
      continue;
    SmallVector<residual::StreamOpInterface> updates;
    // Updates produce the next state (a gate such as nag_gate does not).
    fn.walk([&](residual::StreamOpInterface op) {
      Operation *raw = op.getOperation();
      if (!isa<residual::TapOp>(raw) && raw->getNumResults() == 1 &&
          raw->getResult(0).getType() == op.getStreamInput().getType())
        updates.push_back(op);
    });
    if (updates.empty())
      continue;
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    ImplicitLocOpBuilder b(ret.getLoc(), ret);
    SmallVector<Value> stats;
    SmallVector<std::string> names;
    // Per stream, the composite H^res_l ... H^res_0 of its hyper_writes so far.
    llvm::DenseMap<int64_t, Value> composite;
    for (residual::StreamOpInterface op : updates) {
      Operation *raw = op.getOperation();
      b.setLoc(raw->getLoc());
      Value h = op.getStreamInput(), y = raw->getResult(0);
      auto ht = cast<RankedTensorType>(h.getType());
      if (!isa<FloatType>(ht.getElementType()) || !ht.hasStaticShape())
        continue;
      int64_t axis = op.getFeatureAxisIndex();
      std::string prefix = ("stats:s" + Twine(op.getStreamId()) + ".l" + Twine(op.getLayerIndex()) +
                            "." + raw->getName().stripDialect())
                               .str();
      Value hn = rowNorms(b, h, axis);
      stats.push_back(meanAll(b, hn));
      names.push_back(prefix + ".norm");
      Value dn = rowNorms(b, nn::SubOp::create(b, y, h), axis);
      Value eps = nn::scalar(b, ht.getElementType(), 1e-30);
      stats.push_back(meanAll(b, nn::DivOp::create(b, dn, nn::AddOp::create(b, hn, eps))));
      names.push_back(prefix + ".update");
      Value gate;
      if (auto g = dyn_cast<residual::GatedAddOp>(raw)) {
        if (axis == ht.getRank() - 1)
          gate = residual::buildGate(b, g, g.getH(), g.getU(), g.getWeight(), g.getBias());
      } else if (auto n = dyn_cast<residual::NagAddOp>(raw)) {
        gate = n.getM();
        // Mixture-of-Depths: the fraction of rows whose routed modulator is 0.
        if (n.getM().getDefiningOp<residual::RouteOp>()) {
          auto mt = cast<RankedTensorType>(gate.getType());
          Value kept = nn::CastOp::create(
              b, mt, nn::CastOp::create(b, RankedTensorType::get(mt.getShape(), b.getI1Type()), gate));
          stats.push_back(nn::SubOp::create(b, nn::scalar(b, mt.getElementType(), 1.0), meanAll(b, kept)));
          names.push_back(prefix + ".skip");
        } else if (auto g = n.getM().getDefiningOp<nn::GatherOp>()) {
          // Skipping (residual-mod's gathered form): the update runs on the
          // K kept rows of each sequence's T, so its statistics are theirs
          // and 1 - K/T of the rows skip, by construction.
          if (auto sel = g.getIndices().getDefiningOp<residual::RouteSelectOp>()) {
            auto mt = cast<RankedTensorType>(sel.getM().getType());
            auto it = cast<RankedTensorType>(sel.getType());
            double skipped = 1.0 - static_cast<double>(it.getDimSize(1)) /
                                       static_cast<double>(mt.getDimSize(1));
            stats.push_back(nn::scalar(b, mt.getElementType(), skipped));
            names.push_back(prefix + ".skip");
          }
        }
      }
      if (auto w = dyn_cast<residual::HyperWriteOp>(raw)) {
        Value res = w.getRes();
        Value &p = composite[op.getStreamId()];
        p = p ? nn::MatMulOp::create(b, res, p).getResult() : res;
        for (auto [value, stat] : {std::pair(maxGain(b, res, -1), "res_gain"),
                                   std::pair(maxGain(b, p, -1), "gain_fwd"),
                                   std::pair(maxGain(b, p, -2), "gain_bwd")}) {
          stats.push_back(value);
          names.push_back(prefix + "." + stat);
        }
      }
      if (gate) {
        Value mean = meanAll(b, gate);
        Value sq = meanAll(b, nn::MulOp::create(b, gate, gate));
        stats.push_back(mean);
        names.push_back(prefix + ".gate_mean");
        stats.push_back(nn::ReluOp::create(b, nn::SubOp::create(b, sq, nn::MulOp::create(b, mean, mean))));
        names.push_back(prefix + ".gate_var");
      }
    }
    unsigned first = fn.getNumResults();
    for (auto [i, v] : llvm::enumerate(stats)) {
      auto attrs = DictionaryAttr::get(
          ctx, {NamedAttribute(StringAttr::get(ctx, nn::kNameAttrName), StringAttr::get(ctx, names[i]))});
      if (failed(fn.insertResult(first + i, v.getType(), attrs)))
        return signalPassFailure();
    }
    ret->insertOperands(ret.getNumOperands(), stats);
  }
}

} // namespace
