//===- StreamForms.cpp - Stream-level residual rewrites -------------------===//
//
// ANCRe and DenseFormer (a residual.mix over all earlier stream states after
// every block) and LPA (a tap after every block and a readout through the
// shared head at every depth). Per-update forms are in ResidualRewrite.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/StreamForms.h"

#include "dialects/nn/NNOps.h"
#include "dialects/nn/NNParameters.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace rewire;

std::map<int64_t, SmallVector<Operation *>>
rewire::collectStreamUpdates(func::FuncOp func) {
  std::map<int64_t, SmallVector<Operation *>> streams;
  func.walk([&](residual::StreamOpInterface op) {
    if (isa<residual::AddOp, residual::ScaleAddOp, residual::GatedAddOp, residual::NagAddOp,
            residual::LaurelOp, residual::HyperWriteOp>(op.getOperation()))
      streams[op.getStreamId()].push_back(op.getOperation());
  });
  return streams;
}

SmallVector<Operation *> rewire::blockEnds(ArrayRef<Operation *> updates,
                                           Granularity granularity) {
  SmallVector<Operation *> ends;
  for (auto [i, op] : llvm::enumerate(updates)) {
    auto branch = op->getAttrOfType<StringAttr>(residual::kBranchAttrName);
    bool last = i + 1 == updates.size();
    if (granularity == Granularity::sublayer || last || !branch ||
        branch.getValue() != "attention")
      ends.push_back(op);
  }
  return ends;
}

Value rewire::stateAfter(Operation *update) {
  Value v = update->getResult(0);
  while (true) {
    Operation *next = nullptr;
    for (Operation *user : v.getUsers())
      if (isa<residual::MixOp, residual::TapOp>(user) &&
          user->getOperand(0) == v)
        next = user;
    if (!next)
      return v;
    v = next->getResult(0);
  }
}

LogicalResult rewire::addDepthMixes(func::FuncOp func, SymbolTable &symbols,
                                    bool softmax, double tau,
                                    Granularity granularity) {
  MLIRContext *ctx = func.getContext();
  for (auto &[stream, updates] : collectStreamUpdates(func)) {
    SmallVector<Value> states = {
        cast<residual::StreamOpInterface>(updates.front()).getStreamInput()};
    auto ends = blockEnds(updates, granularity);
    for (auto [blockIndex, end] : llvm::enumerate(ends)) {
      auto update = cast<residual::StreamOpInterface>(end);
      Value y = end->getResult(0);
      auto type = cast<RankedTensorType>(y.getType());
      if (states.front().getType() != type) {
        // The stream changed shape (a ResNet stage with a projection): mix
        // only the states of the new shape, starting at this block's input.
        Operation *first =
            blockIndex == 0
                ? updates.front()
                : *std::next(llvm::find(updates, ends[blockIndex - 1]));
        states = {cast<residual::StreamOpInterface>(first).getStreamInput()};
        if (states.front().getType() != type)
          states = {y};
      }
      int64_t k = states.size();
      int64_t n = softmax ? k : k + 1;
      auto cType = RankedTensorType::get({n}, type.getElementType());
      Attribute init;
      if (softmax) {
        init = nn::InitAttr::get(ctx, nn::InitKind::zeros, APFloat(0.0),
                                 APFloat(0.0));
      } else {
        // DenseFormer's identity: weight 1 on the block output, 0 elsewhere.
        SmallVector<APFloat> w(n, APFloat(0.0f));
        w.back() = APFloat(1.0f);
        init = DenseFPElementsAttr::get(cType, w);
      }
      std::string name =
          llvm::formatv("stream{0}.layer{1}.{2}.c", stream,
                        update.getLayerIndex(), softmax ? "ancre" : "denseformer")
              .str();
      auto global = nn::createParameter(symbols, end->getLoc(), name, cType, init);
      if (failed(global))
        return failure();
      OpBuilder b(ctx);
      b.setInsertionPointAfter(end);
      Value c = nn::loadParameter(b, end->getLoc(), *global);
      auto kindAttr = softmax ? residual::MixWeights::softmax
                              : residual::MixWeights::free;
      auto axis = end->getAttrOfType<IntegerAttr>("axis").getInt();
      auto mix = residual::MixOp::create(
          b, end->getLoc(), type, kindAttr, y, states, c,
          softmax ? b.getF64FloatAttr(tau) : FloatAttr(), axis, stream,
          update.getLayerIndex());
      y.replaceAllUsesExcept(mix.getResult(), mix);
      states.push_back(mix.getResult());
    }
  }
  return success();
}

LogicalResult rewire::addPreviousActivations(func::FuncOp func, SymbolTable &symbols) {
  for (auto &[stream, updates] : collectStreamUpdates(func)) {
    SmallVector<Value> earlier; // x_0 .. x_(i-1) of the current shape
    for (Operation *op : updates) {
      auto update = cast<residual::StreamOpInterface>(op);
      Value x = update.getStreamInput();
      Value y = op->getResult(0);
      auto type = cast<RankedTensorType>(y.getType());
      if (x.getType() != type || (!earlier.empty() && earlier.front().getType() != type))
        earlier.clear();
      if (!earlier.empty()) {
        int64_t k = earlier.size();
        Type elt = type.getElementType();
        std::string name =
            llvm::formatv("stream{0}.layer{1}.laurel.gamma", stream, update.getLayerIndex()).str();
        auto gammaType = RankedTensorType::get({k}, elt);
        auto global = nn::createParameter(
            symbols, op->getLoc(), name, gammaType,
            nn::InitAttr::get(func.getContext(), nn::InitKind::zeros, APFloat(0.0), APFloat(0.0)));
        if (failed(global))
          return failure();
        OpBuilder b(op->getContext());
        b.setInsertionPointAfter(op);
        Location loc = op->getLoc();
        Value gamma = nn::loadParameter(b, loc, *global);
        auto axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
        auto mix =
            residual::MixOp::create(b, loc, type, residual::MixWeights::additive, y, earlier,
                                    gamma, FloatAttr(), axis, stream, update.getLayerIndex());
        y.replaceAllUsesExcept(mix.getResult(), mix);
      }
      earlier.push_back(x);
    }
  }
  return success();
}

LogicalResult rewire::addDepthReadouts(func::FuncOp func,
                                       Granularity granularity,
                                       bool stopGradient) {
  auto streams = collectStreamUpdates(func);
  if (streams.size() != 1)
    return func.emitError()
           << "residual-rewrite: kind=lpa needs exactly one residual stream in '"
           << func.getName() << "', found " << streams.size();
  auto &[stream, updates] = *streams.begin();
  SmallVector<Operation *> ends = blockEnds(updates, granularity);
  Value last = stateAfter(ends.back());

  // The shared head: every op after the last state that depends on it.
  Block &block = func.getBody().front();
  llvm::SetVector<Operation *> head;
  llvm::DenseSet<Value> reached = {last};
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      break;
    if (llvm::any_of(op.getOperands(), [&](Value v) { return reached.contains(v); })) {
      head.insert(&op);
      for (Value r : op.getResults())
        reached.insert(r);
    }
  }
  Operation *ret = block.getTerminator();
  SmallVector<unsigned> readouts;
  for (auto [i, v] : llvm::enumerate(ret->getOperands()))
    if (reached.contains(v))
      readouts.push_back(i);
  if (readouts.empty())
    return func.emitError() << "residual-rewrite: kind=lpa found no function "
                               "result that depends on the final stream state";

  OpBuilder b(func.getContext());
  SmallVector<Value> extra;
  SmallVector<std::string> extraNames;
  SmallVector<int64_t> otherShape;
  for (auto [depth, end] : llvm::enumerate(ends)) {
    auto update = cast<residual::StreamOpInterface>(end);
    Value state = stateAfter(end);
    b.setInsertionPointAfterValue(state);
    auto axis = end->getAttrOfType<IntegerAttr>("axis").getInt();
    auto tap = residual::TapOp::create(
        b, end->getLoc(), state,
        b.getStringAttr(llvm::formatv("depth{0}", depth + 1).str()), axis,
        stream, update.getLayerIndex());
    state.replaceAllUsesExcept(tap.getResult(), tap);
    if (depth + 1 == ends.size())
      break; // the last depth is the model's own output
    if (stopGradient) {
      // The next blocks read the state detached; the readout below reads
      // the tap itself.
      b.setInsertionPointAfter(tap);
      auto detached = nn::StopGradientOp::create(b, end->getLoc(), tap.getResult());
      tap.getResult().replaceAllUsesExcept(detached.getResult(), detached);
    }
    if (tap.getType() != last.getType()) {
      otherShape.push_back(depth + 1); // the shared head cannot read it
      continue;
    }
    // Clone the head onto this depth, just before the return.
    IRMapping map;
    map.map(last, tap.getResult());
    b.setInsertionPoint(ret);
    for (Operation *op : head)
      b.clone(*op, map);
    for (unsigned i : readouts) {
      extra.push_back(map.lookupOrDefault(ret->getOperand(i)));
      auto nameAttr = func.getResultAttrOfType<StringAttr>(i, nn::kNameAttrName);
      std::string base = nameAttr ? nameAttr.str() : llvm::formatv("output_{0}", i).str();
      extraNames.push_back(llvm::formatv("{0}_depth{1}", base, depth + 1).str());
    }
  }
  if (!otherShape.empty()) {
    if (otherShape.size() + 1 == ends.size())
      return func.emitError()
             << "residual-rewrite: kind=lpa: no earlier state has the final state's type "
             << last.getType() << " (the stages change shape), so the shared head can "
                "read out no depth but the last";
    auto diag = func.emitWarning() << "residual-rewrite: kind=lpa reads out no readout at depth";
    llvm::interleaveComma(otherShape, diag);
    diag << ": those states differ in shape from the final one " << last.getType();
  }
  // The head now reads the last tap; its clones read the earlier taps and
  // become extra results.
  unsigned first = ret->getNumOperands();
  for (auto [i, v] : llvm::enumerate(extra)) {
    auto attrs = b.getDictionaryAttr(
        {b.getNamedAttr(nn::kNameAttrName, b.getStringAttr(extraNames[i]))});
    if (failed(func.insertResult(first + i, v.getType(), attrs)))
      return failure();
  }
  ret->insertOperands(first, extra);
  return success();
}
