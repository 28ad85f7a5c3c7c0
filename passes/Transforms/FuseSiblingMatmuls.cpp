//===- FuseSiblingMatmuls.cpp - One product for matmuls sharing a left operand ===//
//
// Implements nn-fuse-sibling-matmuls (see Passes.td): nn.matmul ops of one
// block that multiply the same left operand by 2-D right operands of the
// same row count become one product with the right operands concatenated,
// split back into the original results.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "dialects/nn/NNOps.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include "llvm/ADT/MapVector.h"

namespace rewire {
#define GEN_PASS_DEF_FUSESIBLINGMATMULS
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

/// A right operand the fused product can take: a static 2-D float tensor.
RankedTensorType fusableRhs(nn::MatMulOp op) {
  auto lhs = cast<RankedTensorType>(op.getLhs().getType());
  auto rhs = dyn_cast<RankedTensorType>(op.getRhs().getType());
  if (!rhs || rhs.getRank() != 2 || !rhs.hasStaticShape() || lhs.getRank() < 2 ||
      rhs.getElementType() != lhs.getElementType() || !isa<FloatType>(rhs.getElementType()))
    return {};
  return rhs;
}

/// Whether one product pays in `group`: the concatenation copies the right
/// operands (parameters are function arguments by now, so this happens at
/// every call) and must cost less than the left-operand reads it saves. A
/// hyper stream's projections (a [d, 6] copy against [B, T, n, d] reads)
/// qualify; q, k, v projections of a few tokens (three [d, d] copies against
/// [T, d] reads) do not. The results must agree on every dimension but the
/// last, and the left operand be static, so the sizes are known.
bool pays(ArrayRef<nn::MatMulOp> group) {
  nn::MatMulOp first = group.front();
  auto lhs = cast<RankedTensorType>(first.getLhs().getType());
  auto result = cast<RankedTensorType>(first.getType());
  if (!lhs.hasStaticShape())
    return false;
  int64_t copied = 0;
  for (nn::MatMulOp op : group) {
    auto t = cast<RankedTensorType>(op.getType());
    if (t.getShape().drop_back() != result.getShape().drop_back())
      return false;
    copied += cast<RankedTensorType>(op.getRhs().getType()).getNumElements();
  }
  return copied <= static_cast<int64_t>(group.size() - 1) * lhs.getNumElements();
}

/// Replaces `group` (block order, first one the insertion point, every
/// right operand available there) by one product and a split.
void fuse(ArrayRef<nn::MatMulOp> group) {
  nn::MatMulOp first = group.front();
  ImplicitLocOpBuilder b(first.getLoc(), first);
  auto resultType = cast<RankedTensorType>(first.getType());
  int64_t k = cast<RankedTensorType>(first.getRhs().getType()).getDimSize(0);
  SmallVector<Value> rhs;
  SmallVector<int64_t> widths;
  int64_t total = 0;
  for (nn::MatMulOp op : group) {
    rhs.push_back(op.getRhs());
    widths.push_back(cast<RankedTensorType>(op.getRhs().getType()).getDimSize(1));
    total += widths.back();
  }
  Type elt = resultType.getElementType();
  Value cat = nn::ConcatOp::create(b, RankedTensorType::get({k, total}, elt), rhs,
                                   b.getI64IntegerAttr(1));
  SmallVector<int64_t> shape(resultType.getShape());
  shape.back() = total;
  Value fused = nn::MatMulOp::create(b, RankedTensorType::get(shape, elt), first.getLhs(), cat);
  SmallVector<Type> parts;
  for (nn::MatMulOp op : group)
    parts.push_back(op.getType());
  auto split = nn::SplitOp::create(b, parts, fused,
                                   b.getI64IntegerAttr(resultType.getRank() - 1),
                                   b.getDenseI64ArrayAttr(widths));
  for (auto [i, op] : llvm::enumerate(group)) {
    nn::MatMulOp mm = op;
    mm.getResult().replaceAllUsesWith(split.getResult(i));
    mm.erase();
  }
}

struct FuseSiblingMatmulsPass
    : rewire::impl::FuseSiblingMatmulsBase<FuseSiblingMatmulsPass> {
  void runOnOperation() override {
    DominanceInfo &dom = getAnalysis<DominanceInfo>();
    // Per block, the products by left operand, in block order.
    SmallVector<SmallVector<nn::MatMulOp>> groups;
    getOperation().walk([&](Block *block) {
      llvm::MapVector<Value, SmallVector<nn::MatMulOp>> byLhs;
      for (Operation &op : *block)
        if (auto mm = dyn_cast<nn::MatMulOp>(op); mm && fusableRhs(mm))
          byLhs[mm.getLhs()].push_back(mm);
      for (auto &entry : byLhs) {
        SmallVector<nn::MatMulOp> &all = entry.second;
        // Greedily from the earliest: the siblings whose right operand has
        // the same rows and is available there (a weight, or a value the
        // backward computed earlier).
        while (all.size() > 1) {
          nn::MatMulOp first = all.front();
          int64_t k = fusableRhs(first).getDimSize(0);
          SmallVector<nn::MatMulOp> group = {first}, rest;
          for (nn::MatMulOp op : ArrayRef(all).drop_front()) {
            if (fusableRhs(op).getDimSize(0) == k && dom.properlyDominates(op.getRhs(), first))
              group.push_back(op);
            else
              rest.push_back(op);
          }
          if (group.size() > 1 && pays(group))
            groups.push_back(group);
          all = rest;
        }
      }
    });
    for (ArrayRef<nn::MatMulOp> group : groups)
      fuse(group);
  }
};

} // namespace
