//===- ResidualDetect.cpp - Raise residual adds into residual.add ---------===//
//
// Implements residual-detect (see Passes.td for the rules). Paths between a
// candidate skip and its branch are found by two sweeps over the ops between
// them in block order, so each query visits the ops of one sublayer and only
// ops that are really on a path decide whether the branch is parameterized.
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

/// What lies on the paths from a value to a branch.
struct Reach {
  bool reached = false;        ///< the value is an ancestor of the branch
  bool parameterized = false;  ///< an op on such a path has parameters
  bool attention = false, conv = false, matmul = false;
};

/// Finds the ops on the paths from `target` to `from`. The block is in
/// topological order, so one forward sweep over the ops between the two
/// marks what `target` reaches and one backward sweep what reaches `from`;
/// the ops marked by both are the paths. Linear in the ops between them.
Reach search(Value from, Value target) {
  Reach r;
  Operation *fromOp = from.getDefiningOp();
  if (from == target) {
    r.reached = true;
    return r;
  }
  Operation *targetOp = target.getDefiningOp();
  if (!fromOp || (targetOp && (targetOp->getBlock() != fromOp->getBlock() ||
                               !targetOp->isBeforeInBlock(fromOp))))
    return r;
  Block *block = fromOp->getBlock();
  Operation *first = target.getDefiningOp()
                         ? target.getDefiningOp()->getNextNode()
                         : &block->front();
  llvm::SmallPtrSet<Operation *, 32> forward, onPath;
  auto fromTarget = [&](Value v) {
    return v == target || forward.contains(v.getDefiningOp());
  };
  for (Operation *op = first; op && op != fromOp->getNextNode();
       op = op->getNextNode())
    if (llvm::any_of(op->getOperands(), fromTarget))
      forward.insert(op);
  if (!forward.contains(fromOp))
    return r;
  r.reached = true;
  onPath.insert(fromOp);
  for (Operation *op = fromOp; op && op != first->getPrevNode();
       op = op->getPrevNode()) {
    if (!onPath.contains(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && forward.contains(def))
        onPath.insert(def);
    r.parameterized |= isParameterized(op);
    r.attention |= isa<nn::SoftmaxOp, nn::AttentionOp>(op);
    r.conv |= isa<nn::ConvOp>(op);
    r.matmul |= isa<nn::MatMulOp, nn::GemmOp>(op);
  }
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

/// The input x of a LayerNorm written out as elementwise ops, as exports at
/// opsets below 17 (which have no LayerNormalization) write it:
///   (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* gamma] [+ beta];
/// null when `v` is not such a norm.
Value decomposedNormInput(Value v) {
  auto affine = [](Value y, auto tag) -> Value {
    using OpTy = decltype(tag);
    if (auto op = y.getDefiningOp<OpTy>()) {
      if (isParameter(op.getRhs()))
        return op.getLhs();
      if (isParameter(op.getLhs()))
        return op.getRhs();
    }
    return y;
  };
  v = affine(v, nn::AddOp());
  v = affine(v, nn::MulOp());
  auto div = v.getDefiningOp<nn::DivOp>();
  if (!div)
    return {};
  auto centered = div.getLhs().getDefiningOp<nn::SubOp>();
  if (!centered)
    return {};
  auto mean = centered.getRhs().getDefiningOp<nn::ReduceMeanOp>();
  if (!mean || mean.getX() != centered.getLhs())
    return {};
  auto sqrt = div.getRhs().getDefiningOp<nn::SqrtOp>();
  if (!sqrt)
    return {};
  // The denominator reads the same centered value (the variance).
  bool readsCentered = false;
  SmallVector<Value> work = {sqrt.getX()};
  for (int steps = 0; !work.empty() && steps < 8; ++steps) {
    Value w = work.pop_back_val();
    Operation *def = w.getDefiningOp();
    if (!def || isa<nn::ConstantOp>(def))
      continue;
    if (def == centered.getOperation()) {
      readsCentered = true;
      break;
    }
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  return readsCentered ? centered.getLhs() : Value();
}

/// Follows stream-preserving ops (post-LN norms, also written out as
/// elementwise ops; ResNet's relu) back to the residual add a value comes
/// from, if any.
residual::AddOp streamSource(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto add = dyn_cast<residual::AddOp>(def))
      return add;
    if (Value x = decomposedNormInput(v)) {
      v = x;
      continue;
    }
    if (!isa<nn::LayerNormOp, nn::RMSNormOp, nn::ReluOp>(def))
      return {};
    v = def->getOperand(0);
  }
  return {};
}

/// reshape(reshape(x) + y) -> x + reshape(y) when the outer reshape gives
/// x's type back: the add moves into the shape of the state it updates.
/// Other users of the add read a reshape of the new one.
void hoistAddsOutOfReshapes(Block &block) {
  SmallVector<nn::AddOp> adds;
  for (Operation &op : block)
    if (auto add = dyn_cast<nn::AddOp>(op))
      adds.push_back(add);
  for (nn::AddOp add : adds) {
    Type t = add.getType();
    if (add.getLhs().getType() != t || add.getRhs().getType() != t)
      continue;
    for (auto [inner, other] : {std::pair(add.getLhs(), add.getRhs()),
                                std::pair(add.getRhs(), add.getLhs())}) {
      auto in = inner.getDefiningOp<nn::ReshapeOp>();
      if (!in)
        continue;
      Value x = in.getX();
      nn::ReshapeOp back;
      for (Operation *user : add->getUsers())
        if (auto r = dyn_cast<nn::ReshapeOp>(user); r && r.getType() == x.getType())
          back = r;
      if (!back)
        continue;
      OpBuilder b(add);
      Value y = nn::ReshapeOp::create(b, add.getLoc(), x.getType(), other);
      bool lhs = inner == add.getLhs();
      auto moved = nn::AddOp::create(b, add.getLoc(), x.getType(), lhs ? x : y, lhs ? y : x);
      back.replaceAllUsesWith(moved.getResult());
      back.erase();
      if (!add->use_empty())
        add.replaceAllUsesWith(
            nn::ReshapeOp::create(b, add.getLoc(), t, moved.getResult()).getResult());
      add.erase();
      break;
    }
  }
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
  hoistAddsOutOfReshapes(block);
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
      Reach r = search(f, s);
      if (r.reached && r.parameterized) {
        skip = s, branch = f, reach = r;
        break;
      }
      // Parallel: the branch comes from the input state of the skip's add.
      if (residual::AddOp prev = streamSource(s)) {
        Reach p = search(f, prev.getH());
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
        if (!x || search(f, s).reached)
          continue;
        Reach r = search(f, x);
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
    raised->setAttr(residual::kBranchAttrName, builder.getStringAttr(branchKind));
    raised->setAttr(residual::kSkipAttrName, builder.getStringAttr(
                                         projection ? "projection" : "identity"));
    add.replaceAllUsesWith(raised.getResult());
    add.erase();
  }
}
