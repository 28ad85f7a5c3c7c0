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

/// A group of siblings and where their one product goes: before `at`, a
/// member where every member's right operand is available and every
/// member's result still unused.
struct Group {
  SmallVector<nn::MatMulOp> members; // block order
  nn::MatMulOp at;
};

/// Replaces `group` by one product and a split, before `group.at`.
void fuse(const Group &g) {
  ArrayRef<nn::MatMulOp> group = g.members;
  nn::MatMulOp first = group.front(), at = g.at;
  ImplicitLocOpBuilder b(at.getLoc(), at);
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

/// Whether every use of `op`'s result comes after `at` (so the product may
/// move down to `at`).
bool usedOnlyAfter(nn::MatMulOp op, nn::MatMulOp at, DominanceInfo &dom) {
  return llvm::all_of(op->getUsers(),
                      [&](Operation *user) { return dom.properlyDominates(at.getOperation(), user); });
}

/// The siblings of `all` (same left operand, same right-operand rows, block
/// order) that one product can replace, from the first of them: placed
/// where the first one is, the siblings whose right operand is available
/// there (parameters always are); placed where the last one is, the
/// siblings whose results nothing uses before it (a backward's weight
/// gradients, each computed from an input gradient that comes later than
/// the previous one's product, and all used by the optimizer at the end).
/// The larger group wins; a group stays empty where it does not pay.
Group siblings(ArrayRef<nn::MatMulOp> all, DominanceInfo &dom) {
  nn::MatMulOp first = all.front(), last = all.back();
  Group early{{}, first}, late{{}, last};
  for (nn::MatMulOp op : all) {
    if (op == first || dom.properlyDominates(op.getRhs(), first))
      early.members.push_back(op);
    if (op == last || usedOnlyAfter(op, last, dom))
      late.members.push_back(op);
  }
  // The late group must still start with `first` for the loop to move on.
  if (late.members.size() > early.members.size() && late.members.front() == first &&
      pays(late.members))
    return late;
  if (early.members.size() > 1 && pays(early.members))
    return early;
  return {{first}, first};
}

struct FuseSiblingMatmulsPass
    : rewire::impl::FuseSiblingMatmulsBase<FuseSiblingMatmulsPass> {
  void runOnOperation() override {
    DominanceInfo &dom = getAnalysis<DominanceInfo>();
    SmallVector<Group> groups;
    getOperation().walk([&](Block *block) {
      // Per block, the products by left operand and right-operand rows, in
      // block order.
      llvm::MapVector<std::pair<Value, int64_t>, SmallVector<nn::MatMulOp>> byLhs;
      for (Operation &op : *block)
        if (auto mm = dyn_cast<nn::MatMulOp>(op); mm && fusableRhs(mm))
          byLhs[{mm.getLhs(), fusableRhs(mm).getDimSize(0)}].push_back(mm);
      for (auto &entry : byLhs) {
        SmallVector<nn::MatMulOp> all = entry.second;
        while (all.size() > 1) {
          Group g = siblings(all, dom);
          SmallVector<nn::MatMulOp> rest;
          for (nn::MatMulOp op : all)
            if (!llvm::is_contained(g.members, op))
              rest.push_back(op);
          if (g.members.size() > 1)
            groups.push_back(std::move(g));
          all = std::move(rest);
        }
      }
    });
    for (const Group &g : groups)
      fuse(g);
  }
};

} // namespace
