//===- ValueResidual.cpp - Value Residual Learning rewrite ----------------===//
//
// residual-rewrite kind=value-residual (ResFormer, papers.md 6.4): in every
// attention branch of a stream after the first, the values the attention
// weights multiply, V_n, become lambda1 V_1 + lambda2 V_n
// (residual.value_mix), V_1 being the first attention branch's values.
//
// The values are found where attention is computed: the right operand of
// the product `softmax(...) . V` (an exported attention, whatever its QKV
// projection looks like: fused or split, GQA's repeated heads), or
// nn.attention's `v`.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/StreamForms.h"

#include "dialects/nn/NNOps.h"
#include "dialects/nn/NNParameters.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace rewire;

namespace {

/// The operand holding the values of the attention computed in the ops
/// strictly between `begin` and `end` (one block), or null.
OpOperand *findValues(Operation *begin, Operation *end) {
  for (Operation *op = begin ? begin->getNextNode() : &end->getBlock()->front(); op && op != end;
       op = op->getNextNode()) {
    if (auto att = dyn_cast<nn::AttentionOp>(op))
      return &att->getOpOperand(2);
    auto mm = dyn_cast<nn::MatMulOp>(op);
    if (!mm)
      continue;
    // The weights may pass a cast or a NaN guard (the dynamo exporter's
    // where(p != p, 0, p)) on their way from the softmax.
    Value p = mm.getLhs();
    while (Operation *def = p.getDefiningOp()) {
      if (auto cast = dyn_cast<nn::CastOp>(def))
        p = cast.getOperand();
      else if (auto where = dyn_cast<nn::WhereOp>(def); where && where.getY().getType() == p.getType())
        p = where.getY();
      else
        break;
    }
    if (p.getDefiningOp<nn::SoftmaxOp>())
      return &mm->getOpOperand(1);
  }
  return nullptr;
}

} // namespace

FailureOr<int64_t> rewire::addValueResidual(func::FuncOp func, SymbolTable &symbols, bool learned,
                                           bool identity) {
  int64_t mixed = 0;
  for (auto &entry : collectStreamUpdates(func)) {
    int64_t stream = entry.first;
    ArrayRef<Operation *> updates = entry.second;
    SmallVector<std::pair<Operation *, OpOperand *>> attention;
    Operation *prev = nullptr;
    for (Operation *update : updates) {
      if (update->getBlock() != updates.front()->getBlock())
        return update->emitError("residual-rewrite: kind=value-residual needs the stream in one block");
      if (OpOperand *v = findValues(prev, update))
        attention.push_back({update, v});
      prev = update;
    }
    if (attention.size() < 2)
      continue; // nothing to mix into (the caller reports a model with none)
    Value first = attention.front().second->get();
    for (auto [update, values] : llvm::drop_begin(attention)) {
      Value v = values->get();
      int64_t layer = cast<residual::StreamOpInterface>(update).getLayerIndex();
      if (v.getType() != first.getType())
        return values->getOwner()->emitError()
               << "residual-rewrite: kind=value-residual: the values of layer " << layer << " are "
               << v.getType() << " but the first attention layer's are " << first.getType()
               << "; the mix needs one shape";
      OpBuilder b(values->getOwner());
      Location loc = values->getOwner()->getLoc();
      auto scalarType = RankedTensorType::get({}, cast<RankedTensorType>(v.getType()).getElementType());
      auto lambda = [&](StringRef name, double value) -> FailureOr<Value> {
        auto attr = DenseElementsAttr::get(scalarType, b.getFloatAttr(scalarType.getElementType(), value));
        if (!learned)
          return Value(nn::ConstantOp::create(b, loc, scalarType, attr));
        std::string full =
            llvm::formatv("stream{0}.layer{1}.value-residual.{2}", stream, layer, name).str();
        auto global = nn::createParameter(symbols, loc, full, scalarType, attr);
        if (failed(global))
          return failure();
        return nn::loadParameter(b, loc, *global);
      };
      // The official code's 1/2, 1/2; init=identity: 0, 1 (the function kept).
      auto l1 = lambda("lambda1", identity ? 0.0 : 0.5);
      auto l2 = lambda("lambda2", identity ? 1.0 : 0.5);
      if (failed(l1) || failed(l2))
        return failure();
      auto mix = residual::ValueMixOp::create(b, loc, v.getType(), v, first, *l1, *l2,
                                              b.getI64IntegerAttr(-1), b.getI64IntegerAttr(stream),
                                              b.getI64IntegerAttr(layer));
      values->set(mix);
      ++mixed;
    }
  }
  return mixed;
}
