//===- FuseMatmulSums.cpp - One product for a sum of products -------------===//
//
// Implements nn-fuse-matmul-sums (see Passes.td): in a tree of nn.add ops
// (each add's only use the next, no broadcasting), the nn.matmul leaves
// `A1 . B1 + A2 . B2 + ...` whose left operands agree but for their last
// dimension and whose right operands are static 2-D matrices with the same
// column count become one product `concat(A1, A2, ...) . concat(B1, B2,
// ...)`. Reshaped subtrees of one shape are summed before the reshape, so
// products behind reshapes (a hyper stream's flattened rows) meet.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "dialects/nn/NNOps.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace rewire {
#define GEN_PASS_DEF_FUSEMATMULSUMS
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

/// The nn.add defining `v` if its result and both operands have type `type`
/// (an add that does not broadcast, so it can be reassociated).
nn::AddOp treeAdd(Value v, Type type) {
  auto add = v.getDefiningOp<nn::AddOp>();
  if (!add || add.getType() != type || add.getLhs().getType() != type ||
      add.getRhs().getType() != type)
    return {};
  return add;
}

/// The leaves of the add tree rooted at `root` (in order), and its adds.
void collect(nn::AddOp root, SmallVectorImpl<Value> &leaves, SmallVectorImpl<Operation *> &adds) {
  adds.push_back(root);
  for (Value operand : {root.getLhs(), root.getRhs()}) {
    nn::AddOp inner = treeAdd(operand, root.getType());
    if (inner && operand.hasOneUse())
      collect(inner, leaves, adds);
    else
      leaves.push_back(operand);
  }
}

/// A product that can join a fused one: only used by the tree, a static
/// left operand of rank >= 2, a static 2-D right operand.
nn::MatMulOp fusableProduct(Value leaf) {
  auto mm = leaf.getDefiningOp<nn::MatMulOp>();
  if (!mm || !leaf.hasOneUse())
    return {};
  auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
  auto rhs = dyn_cast<RankedTensorType>(mm.getRhs().getType());
  auto result = cast<RankedTensorType>(mm.getType());
  if (!rhs || rhs.getRank() != 2 || !rhs.hasStaticShape() || !lhs.hasStaticShape() ||
      lhs.getRank() < 2 || lhs.getRank() != result.getRank() ||
      !isa<FloatType>(lhs.getElementType()) || rhs.getElementType() != lhs.getElementType())
    return {};
  return mm;
}

/// Whether one product pays: the concatenations copy both operands (the
/// right ones are parameters, copied at every call) and must cost no more
/// than the (m - 1) products' results it saves writing and adding (counted
/// in doubles: element counts of hostile IR may overflow int64).
bool pays(ArrayRef<nn::MatMulOp> group) {
  auto elements = [](Value v) {
    double n = 1;
    for (int64_t d : cast<RankedTensorType>(v.getType()).getShape())
      n *= static_cast<double>(d);
    return n;
  };
  double copied = 0;
  for (nn::MatMulOp mm : group)
    copied += elements(mm.getLhs()) + elements(mm.getRhs());
  return copied <= static_cast<double>(group.size() - 1) * elements(group.front()->getResult(0));
}

/// `terms[0] + terms[1] + ...` as a chain of nn.add at the builder's
/// insertion point.
Value sum(ImplicitLocOpBuilder &b, ArrayRef<Value> terms) {
  Value total = terms.front();
  for (Value t : terms.drop_front())
    total = nn::AddOp::create(b, total, t);
  return total;
}

/// The groups of fusable products among `leaves` (in leaf order): the
/// products agree but for the contraction length, and fusing pays.
SmallVector<SmallVector<nn::MatMulOp>> productGroups(ArrayRef<Value> leaves) {
  SmallVector<nn::MatMulOp> products;
  for (Value leaf : leaves)
    if (nn::MatMulOp mm = fusableProduct(leaf))
      products.push_back(mm);
  SmallVector<SmallVector<nn::MatMulOp>> groups;
  while (products.size() > 1) {
    nn::MatMulOp first = products.front();
    auto lhs0 = cast<RankedTensorType>(first.getLhs().getType());
    int64_t cols = cast<RankedTensorType>(first.getRhs().getType()).getDimSize(1);
    SmallVector<nn::MatMulOp> group, rest;
    for (nn::MatMulOp mm : products) {
      auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
      if (lhs.getShape().drop_back() == lhs0.getShape().drop_back() &&
          mm.getType() == first.getType() &&
          cast<RankedTensorType>(mm.getRhs().getType()).getDimSize(1) == cols)
        group.push_back(mm);
      else
        rest.push_back(mm);
    }
    products = rest;
    if (group.size() > 1 && pays(group))
      groups.push_back(group);
  }
  return groups;
}

/// The reshaped subtrees among `leaves` by source shape, two or more of a
/// shape (each reshape and its source used only by the tree).
llvm::MapVector<Type, SmallVector<nn::ReshapeOp>> reshapeGroups(ArrayRef<Value> leaves) {
  llvm::MapVector<Type, SmallVector<nn::ReshapeOp>> groups;
  for (Value leaf : leaves)
    if (auto r = leaf.getDefiningOp<nn::ReshapeOp>();
        r && leaf.hasOneUse() && r.getX().hasOneUse())
      groups[r.getX().getType()].push_back(r);
  groups.remove_if([](const auto &entry) { return entry.second.size() < 2; });
  return groups;
}

/// The leaves of the reshapes' sources (an add tree's leaves, or the
/// source itself), and the adds of those trees.
SmallVector<Value> innerLeaves(ArrayRef<nn::ReshapeOp> group, SmallVectorImpl<Operation *> &adds) {
  SmallVector<Value> inner;
  for (nn::ReshapeOp r : group) {
    Value in = r.getX();
    if (nn::AddOp add = treeAdd(in, in.getType()))
      collect(add, inner, adds);
    else
      inner.push_back(in);
  }
  return inner;
}

/// Whether a sum of `leaves` has products to fuse, here or behind reshapes.
bool fusable(ArrayRef<Value> leaves) {
  if (!productGroups(leaves).empty())
    return true;
  for (auto &entry : reshapeGroups(leaves)) {
    SmallVector<Operation *> adds;
    if (fusable(innerLeaves(entry.second, adds)))
      return true;
  }
  return false;
}

class TreeFuser {
public:
  /// Rewrites the tree rooted at `root` if it has products to fuse; the
  /// value that replaces it, or null.
  Value rewrite(nn::AddOp root) {
    SmallVector<Value> leaves;
    SmallVector<Operation *> adds;
    collect(root, leaves, adds);
    if (!fusable(leaves))
      return {};
    ImplicitLocOpBuilder b(root.getLoc(), root);
    dead.insert(adds.begin(), adds.end());
    return build(b, leaves);
  }

  /// Erases the replaced ops (users first).
  void eraseDead() {
    bool progress = true;
    while (progress) {
      progress = false;
      for (Operation *op : dead.takeVector()) {
        if (op->use_empty()) {
          op->erase();
          progress = true;
        } else {
          dead.insert(op);
        }
      }
    }
  }

private:
  /// The sum of `leaves` at `b`'s insertion point: each group of products
  /// fused, reshaped subtrees of one shape with products to fuse summed
  /// before one reshape, the other leaves as they were.
  Value build(ImplicitLocOpBuilder &b, ArrayRef<Value> leaves) {
    SmallVector<Value> terms;
    llvm::SmallPtrSet<Value, 8> taken;
    for (auto &entry : reshapeGroups(leaves)) {
      SmallVector<Operation *> adds;
      SmallVector<Value> inner = innerLeaves(entry.second, adds);
      if (!fusable(inner))
        continue;
      dead.insert(adds.begin(), adds.end());
      for (nn::ReshapeOp r : entry.second) {
        taken.insert(r.getResult());
        dead.insert(r);
      }
      terms.push_back(nn::ReshapeOp::create(b, leaves.front().getType(), build(b, inner)));
    }
    for (ArrayRef<nn::MatMulOp> group : productGroups(leaves)) {
      terms.push_back(fuse(b, group));
      for (nn::MatMulOp mm : group) {
        taken.insert(mm.getResult());
        dead.insert(mm);
      }
    }
    for (Value leaf : leaves)
      if (!taken.contains(leaf))
        terms.push_back(leaf);
    return sum(b, terms);
  }

  Value fuse(ImplicitLocOpBuilder &b, ArrayRef<nn::MatMulOp> group) {
    nn::MatMulOp first = group.front();
    auto lhs0 = cast<RankedTensorType>(first.getLhs().getType());
    int64_t cols = cast<RankedTensorType>(first.getRhs().getType()).getDimSize(1);
    SmallVector<Value> lhs, rhs;
    int64_t k = 0;
    for (nn::MatMulOp mm : group) {
      lhs.push_back(mm.getLhs());
      rhs.push_back(mm.getRhs());
      k += cast<RankedTensorType>(mm.getRhs().getType()).getDimSize(0);
    }
    Type elt = lhs0.getElementType();
    SmallVector<int64_t> shape(lhs0.getShape());
    shape.back() = k;
    Value a = nn::ConcatOp::create(b, RankedTensorType::get(shape, elt), lhs,
                                   b.getI64IntegerAttr(lhs0.getRank() - 1));
    Value w = nn::ConcatOp::create(b, RankedTensorType::get({k, cols}, elt), rhs,
                                   b.getI64IntegerAttr(0));
    return nn::MatMulOp::create(b, first.getType(), a, w);
  }

  llvm::SetVector<Operation *> dead;
};

struct FuseMatmulSumsPass : rewire::impl::FuseMatmulSumsBase<FuseMatmulSumsPass> {
  void runOnOperation() override {
    // The roots: adds that are not an inner node of a larger tree.
    SmallVector<nn::AddOp> roots;
    getOperation().walk([&](nn::AddOp add) {
      Operation *user = add->hasOneUse() ? *add->user_begin() : nullptr;
      auto next = dyn_cast_or_null<nn::AddOp>(user);
      if (!next || !treeAdd(next.getResult(), add.getType()))
        roots.push_back(add);
    });
    TreeFuser fuser;
    for (nn::AddOp root : roots)
      if (Value fused = fuser.rewrite(root))
        root.getResult().replaceAllUsesWith(fused);
    fuser.eraseDead();
  }
};

} // namespace
