//===- ResidualDetect.cpp - Raise residual adds into residual.add ---------===//
//
// Implements residual-detect (see Passes.td for the rules). Reachability is
// searched backwards from the branch and pruned at ops that come before the
// candidate skip in the block, so each search only visits the ops of one
// sublayer: detection is linear in practice on deep models.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "dialects/nn/NNOps.h"
#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace rewire {
#define GEN_PASS_DEF_RESIDUALDETECT
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

/// Where a value sits in the block (block arguments come first).
class Order {
public:
  explicit Order(Block &block) {
    int64_t i = 0;
    for (Operation &op : block)
      index[&op] = i++;
  }
  int64_t of(Value v) const {
    if (Operation *def = v.getDefiningOp()) {
      auto it = index.find(def);
      return it == index.end() ? -1 : it->second;
    }
    return -1; // block arguments
  }

private:
  llvm::DenseMap<Operation *, int64_t> index;
};

/// True when `v` is (a view of) a parameter.
bool isParameter(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<ml_program::GlobalLoadConstOp>(def))
      return true;
    if (!isa<nn::TransposeOp, nn::ReshapeOp, nn::CastOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

bool isParameterized(Operation *op) {
  if (isa<nn::AttentionOp>(op))
    return true;
  if (!isa<nn::MatMulOp, nn::GemmOp, nn::ConvOp>(op))
    return false;
  return llvm::any_of(op->getOperands(), isParameter);
}

/// What a search from a branch found.
struct Reach {
  bool reached = false;        ///< the target value is an ancestor
  bool parameterized = false;  ///< some op on the way has parameters
  bool attention = false, conv = false, matmul = false;
};

/// Searches the ancestors of `from` for `target`, visiting only ops at or
/// after `target`'s position.
Reach search(Value from, Value target, const Order &order) {
  Reach r;
  int64_t floor = order.of(target);
  SmallVector<Value> stack = {from};
  llvm::SmallPtrSet<Operation *, 32> seen;
  while (!stack.empty()) {
    Value v = stack.pop_back_val();
    if (v == target) {
      r.reached = true;
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!def || order.of(v) < floor || !seen.insert(def).second)
      continue;
    if (isParameterized(def))
      r.parameterized = true;
    if (isa<nn::SoftmaxOp, nn::AttentionOp>(def))
      r.attention = true;
    if (isa<nn::ConvOp>(def))
      r.conv = true;
    if (isa<nn::MatMulOp, nn::GemmOp>(def))
      r.matmul = true;
    for (Value operand : def->getOperands())
      stack.push_back(operand);
  }
  // Only paths that reach the target count: re-run restricted to them would
  // be exact; a branch that reaches the stream and holds a parameterized op
  // is what residual branches look like in every family we detect.
  return r;
}

/// The value a projection skip projects: conv/matmul/gemm with a parameter,
/// optionally followed by batch_norm and a bias add.
Value projectionSource(Value skip) {
  Operation *def = skip.getDefiningOp();
  if (auto bn = dyn_cast_or_null<nn::BatchNormOp>(def))
    def = bn.getX().getDefiningOp();
  if (auto add = dyn_cast_or_null<nn::AddOp>(def)) {
    if (isParameter(add.getLhs()))
      def = add.getRhs().getDefiningOp();
    else if (isParameter(add.getRhs()))
      def = add.getLhs().getDefiningOp();
  }
  if (def && isParameterized(def) && !isa<nn::AttentionOp>(def))
    return def->getOperand(0);
  return {};
}

/// Follows stream-preserving ops (post-LN norms, ResNet's relu) back to the
/// residual add a value comes from, if any.
residual::AddOp streamSource(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto add = dyn_cast<residual::AddOp>(def))
      return add;
    if (!isa<nn::LayerNormOp, nn::RMSNormOp, nn::ReluOp>(def))
      return {};
    v = def->getOperand(0);
  }
  return {};
}

struct ResidualDetectPass
    : public rewire::impl::ResidualDetectBase<ResidualDetectPass> {
  void runOnOperation() override;
};

} // namespace

void ResidualDetectPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return;
  Block &block = func.getBody().front();
  Order order(block);
  SmallVector<nn::AddOp> adds;
  for (Operation &op : block)
    if (auto add = dyn_cast<nn::AddOp>(op))
      adds.push_back(add);

  int64_t nextStream = 0;
  llvm::DenseMap<int64_t, int64_t> nextLayer; // per stream
  // Streams already present (a partly detected function) keep their ids.
  func.walk([&](residual::StreamOpInterface op) {
    nextStream = std::max(nextStream, op.getStreamId() + 1);
    nextLayer[op.getStreamId()] =
        std::max(nextLayer[op.getStreamId()], op.getLayerIndex() + 1);
  });

  OpBuilder builder(func.getContext());
  for (nn::AddOp add : adds) {
    Value a = add.getLhs(), b = add.getRhs();
    if (a.getType() != b.getType() || a.getType() != add.getType() ||
        !isa<FloatType>(add.getType().getElementType()) ||
        add.getType().getRank() < 1)
      continue; // broadcasting: bias, positional or mask adds
    Value skip, branch;
    bool projection = false;
    Reach reach;
    for (auto [s, f] : {std::pair(a, b), std::pair(b, a)}) {
      // Identity skip: the skip is an ancestor of the branch.
      Reach r = search(f, s, order);
      if (r.reached && r.parameterized) {
        skip = s, branch = f, reach = r;
        break;
      }
      // Parallel: the branch comes from the input state of the skip's add.
      if (residual::AddOp prev = streamSource(s)) {
        Reach p = search(f, prev.getH(), order);
        if (p.reached && p.parameterized) {
          skip = s, branch = f, reach = p;
          break;
        }
      }
    }
    if (!skip) {
      // Projection skip: both operands come from one value x; one of them is
      // a projection of x.
      for (auto [s, f] : {std::pair(a, b), std::pair(b, a)}) {
        Value x = projectionSource(s);
        // The branch must come from x beside the projection, not through it
        // (x + c * x^3 inside a tanh-GELU is not a residual connection).
        if (!x || search(f, s, order).reached)
          continue;
        Reach r = search(f, x, order);
        if (r.reached && r.parameterized) {
          skip = s, branch = f, reach = r, projection = true;
          break;
        }
      }
    }
    if (!skip)
      continue;

    // Which stream: the one the skip (or what it projects) comes from.
    Value origin = projection ? projectionSource(skip) : skip;
    int64_t stream;
    if (residual::AddOp prev = streamSource(origin))
      stream = static_cast<int64_t>(prev.getStream());
    else
      stream = nextStream++;
    int64_t layer = nextLayer[stream]++;
    int64_t axis = reach.conv ? 1 : -1;
    if (axis == 1 && add.getType().getRank() < 2)
      axis = -1;

    builder.setInsertionPoint(add);
    auto raised = residual::AddOp::create(builder, add.getLoc(), skip, branch,
                                          axis, stream, layer);
    StringRef branchKind = reach.conv        ? "conv"
                           : reach.attention ? "attention"
                           : reach.matmul    ? "mlp"
                                             : "other";
    raised->setAttr("residual.branch", builder.getStringAttr(branchKind));
    raised->setAttr("residual.skip", builder.getStringAttr(
                                         projection ? "projection" : "identity"));
    add.replaceAllUsesWith(raised.getResult());
    add.erase();
  }
}
