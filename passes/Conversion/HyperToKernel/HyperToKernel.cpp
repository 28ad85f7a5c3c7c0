//===- HyperToKernel.cpp - Hyper stream reverse sums to the CPU kernel ----===//
//
// Implements rewire-hyper-to-kernel (see Passes.td). The call convention of
// `rewire_hyper_write_grad` (runtime/HyperKernels.c; all index, i.e.
// int64_t in C):
//   (g, gOffset, gStrides[3], x, xOffset, xStrides[3], u, uOffset,
//    uStrides[2], post, postOffset, postStrides[2], du, duOffset,
//    duStrides[2], dpost, dpostOffset, dpostStrides[2], dres, dresOffset,
//    dresStrides[3], tokens, n, d, threads)
// with the pointers aligned bases and offsets and strides in elements; g
// and x are [tokens, n, d], u and du [tokens, d], post and dpost
// [tokens, n] (a static post's token stride is 0), dres [tokens, n, n].
// That of `rewire_hyper_write_grad_sum` puts, in g's place,
//   (h, hOffset, hStrides[3], res, resOffset, resStrides[3], pre,
//    preOffset, preStrides[2], dh, dhOffset, dhStrides[2], e, eOffset,
//    eStrides[3], g, gOffset)
// with h and e [tokens, n, d], res [tokens, n, n] and pre [tokens, n]
// (token stride 0 when static), dh [tokens, d], pre with dh and e optional
// (all 0), and g the dense output [tokens, n, d].
// That of `rewire_hyper_project_grad`:
//   (dz, dzOffset, dzStrides[2], p, pOffset, pStrides[2], r, rOffset,
//    rTokenStride, x, xOffset, xStrides[3], W's 3 parts, dx, dxOffset,
//    3 x (dw, dwOffset), tokens, n, d, k, threads)
// with dz and p [tokens, k], r [tokens, 1], x [tokens, n, d]; W [n d, k]
// passes as up to 3 column blocks side by side, each (w, wOffset,
// wStrides[2], columns), the unused ones all 0 (an mHC site's three maps'
// weights are separate parameters: no concatenated copy each step); dx
// [tokens, n, d] and each part's dw [n d, columns] are fresh dense buffers
// (the gradients the optimizer reads contiguously).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/Passes.h"

#include "dialects/nn/NNOps.h"
#include "dialects/residual/ResidualDecompose.h"
#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace rewire {
#define GEN_PASS_DEF_HYPERTOKERNEL
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

constexpr const char *kWriteGrad = "rewire_hyper_write_grad";
constexpr const char *kWriteGradSum = "rewire_hyper_write_grad_sum";
constexpr const char *kProjectGrad = "rewire_hyper_project_grad";
constexpr const char *kWriteProject = "rewire_hyper_write_project";

struct HyperToKernelPass : rewire::impl::HyperToKernelBase<HyperToKernelPass> {
  using HyperToKernelBase::HyperToKernelBase;
  void runOnOperation() override;
};

bool supported(Operation *op) {
  for (Value v : op->getOperands()) {
    auto t = cast<RankedTensorType>(v.getType());
    if (!t.hasStaticShape() || !t.getElementType().isF32())
      return false;
  }
  return true;
}

/// The reassociation between a tensor of `lead` token dims and `rest`
/// trailing ones and its [tokens, rest...] view: the token dims grouped into
/// one, or without token dims (`lead` 0) a unit token dim grouped with the
/// first trailing one.
SmallVector<ReassociationIndices> tokenGroups(int64_t lead, int64_t rest) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices first;
  int64_t firstSize = std::max<int64_t>(lead, 1) + (lead == 0 ? 1 : 0);
  for (int64_t i = 0; i < firstSize; ++i)
    first.push_back(i);
  groups.push_back(first);
  for (int64_t i = firstSize; i < std::max<int64_t>(lead, 1) + rest; ++i)
    groups.push_back({i});
  return groups;
}

SmallVector<int64_t> tokenShape(RankedTensorType t, int64_t rest) {
  int64_t tokens = 1;
  for (int64_t s : t.getShape().drop_back(rest))
    tokens *= s;
  SmallVector<int64_t> shape{tokens};
  llvm::append_range(shape, t.getShape().take_back(rest));
  return shape;
}

/// `t` as [tokens, rest...] (a view where its buffer allows, else a copy,
/// which bufferization makes).
Value asTokens(OpBuilder &b, Location loc, Value t, int64_t rest) {
  auto type = cast<RankedTensorType>(t.getType());
  auto target = RankedTensorType::get(tokenShape(type, rest), type.getElementType());
  if (type.getRank() == rest) // no token dims: one unit token
    return tensor::ExpandShapeOp::create(b, loc, target, t, tokenGroups(0, rest));
  if (type.getRank() == rest + 1)
    return t;
  return tensor::CollapseShapeOp::create(b, loc, t, tokenGroups(type.getRank() - rest, rest));
}

/// The inverse of asTokens for a result computed as [tokens, rest...].
Value fromTokens(OpBuilder &b, Location loc, Value t, RankedTensorType type, int64_t rest) {
  if (type.getRank() == rest)
    return tensor::CollapseShapeOp::create(b, loc, t, tokenGroups(0, rest));
  if (type.getRank() == rest + 1)
    return t;
  return tensor::ExpandShapeOp::create(b, loc, type, t, tokenGroups(type.getRank() - rest, rest));
}

/// Appends a kernel argument's description to `args`: the buffer's aligned
/// pointer, offset and strides (all of them, or the first `strides`).
void passBuffer(OpBuilder &b, Location loc, Value buffer, SmallVectorImpl<Value> &args,
                int64_t strides = -1) {
  BufferView view = describeBuffer(b, loc, buffer);
  args.push_back(view.ptr);
  args.push_back(view.offset);
  for (auto [i, stride] : llvm::enumerate(view.strides))
    if (strides < 0 || static_cast<int64_t>(i) < strides)
      args.push_back(stride);
}

/// Appends a per-token operand of `rest` trailing dims of a stream with
/// `lead` token dims: as [tokens, rest...], or, static (no token dims of
/// its own), with token stride 0.
void passPerToken(OpBuilder &b, Location loc, Value t, int64_t rest, int64_t lead,
                  SmallVectorImpl<Value> &args) {
  if (cast<RankedTensorType>(t.getType()).getRank() == rest && lead > 0) {
    BufferView view = describeBuffer(b, loc, readOnlyBuffer(b, loc, t));
    args.push_back(view.ptr);
    args.push_back(view.offset);
    args.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    llvm::append_range(args, view.strides);
    return;
  }
  passBuffer(b, loc, readOnlyBuffer(b, loc, asTokens(b, loc, t, rest)), args);
}

/// How many column blocks the kernels take for an mHC site's weight W.
constexpr int64_t kWeightParts = 3;

/// The column blocks of a [K, k] weight: the operands of the concatenation
/// that made it along its columns (at most kWeightParts of them), or itself.
SmallVector<Value> weightParts(Value w) {
  auto cat = w.getDefiningOp<nn::ConcatOp>();
  int64_t rank = cast<RankedTensorType>(w.getType()).getRank();
  if (!cat || (static_cast<int64_t>(cat.getAxis()) + rank) % rank != rank - 1 ||
      static_cast<int64_t>(cat->getNumOperands()) > kWeightParts)
    return {w};
  return SmallVector<Value>(cat->getOperands());
}

/// Appends W's parts (each its buffer, two strides and its column count;
/// the unused ones 0) to `args`.
void passWeightParts(OpBuilder &b, Location loc, ArrayRef<Value> parts,
                     SmallVectorImpl<Value> &args) {
  for (Value part : parts) {
    passBuffer(b, loc, readOnlyBuffer(b, loc, part), args);
    args.push_back(arith::ConstantIndexOp::create(
        b, loc, cast<RankedTensorType>(part.getType()).getDimSize(1)));
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  args.append(5 * (kWeightParts - static_cast<int64_t>(parts.size())), zero);
}

/// The stream's adjoint as the autodiff engine sums it after the next
/// site's reverse (papers.md 6.2): `res^T h` (the next write's reverse, h
/// the adjoint of its output), `pre (x) dh` (the next read's) and one
/// other term `e` of the stream's type (the projections' reverse), as a
/// tree of nn.add (the inner ones used only by the tree).
struct StreamSum {
  Value h, res, pre, dh, e;
};

void addLeaves(Value v, Type type, bool root, SmallVectorImpl<Value> &leaves) {
  auto add = v.getDefiningOp<nn::AddOp>();
  if (add && (root || v.hasOneUse()) && add.getLhs().getType() == type &&
      add.getRhs().getType() == type) {
    addLeaves(add.getLhs(), type, false, leaves);
    addLeaves(add.getRhs(), type, false, leaves);
    return;
  }
  leaves.push_back(v);
}

/// Whether `t`'s shape is the stream's token dims followed by `tail`, or
/// (a static operand) `tail` alone.
bool perTokenShape(Value t, RankedTensorType stream, ArrayRef<int64_t> tail) {
  auto type = dyn_cast<RankedTensorType>(t.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
    return false;
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() == tail.size())
    return shape == tail;
  ArrayRef<int64_t> lead = stream.getShape().drop_back(2);
  return shape.size() == lead.size() + tail.size() && shape.take_front(lead.size()) == lead &&
         shape.drop_front(lead.size()) == tail;
}

std::optional<StreamSum> matchStreamSum(Value g) {
  auto stream = cast<RankedTensorType>(g.getType());
  int64_t rank = stream.getRank(), n = stream.getDimSize(rank - 2),
          d = stream.getDimSize(rank - 1);
  if (!g.getDefiningOp<nn::AddOp>())
    return std::nullopt;
  SmallVector<Value> leaves;
  addLeaves(g, stream, /*root=*/true, leaves);
  StreamSum sum;
  for (Value leaf : leaves) {
    if (auto matmul = leaf.getDefiningOp<nn::MatMulOp>(); matmul && !sum.h) {
      auto transpose = matmul.getLhs().getDefiningOp<nn::TransposeOp>();
      if (transpose && transpose.getPerm() && matmul.getRhs().getType() == stream) {
        Value res = transpose.getX();
        int64_t r = cast<RankedTensorType>(res.getType()).getRank();
        SmallVector<int64_t> swap = llvm::to_vector(llvm::seq<int64_t>(0, r));
        if (r >= 2)
          std::swap(swap[r - 2], swap[r - 1]);
        if (perTokenShape(res, stream, {n, n}) && *transpose.getPerm() == ArrayRef(swap)) {
          sum.h = matmul.getRhs();
          sum.res = res;
          continue;
        }
      }
    }
    if (auto mul = leaf.getDefiningOp<nn::MulOp>(); mul && !sum.pre) {
      auto lhs = mul.getLhs().getDefiningOp<nn::UnsqueezeOp>();
      auto rhs = mul.getRhs().getDefiningOp<nn::UnsqueezeOp>();
      for (int swapped = 0; swapped < 2 && lhs && rhs && !sum.pre; ++swapped, std::swap(lhs, rhs)) {
        int64_t preRank = cast<RankedTensorType>(lhs.getType()).getRank();
        int64_t dhRank = cast<RankedTensorType>(rhs.getType()).getRank();
        if (lhs.getAxes() == ArrayRef<int64_t>{preRank - 1} &&
            rhs.getAxes() == ArrayRef<int64_t>{dhRank - 2} &&
            perTokenShape(lhs.getX(), stream, {n}) && dhRank == rank &&
            perTokenShape(rhs.getX(), stream, {d})) {
          sum.pre = lhs.getX();
          sum.dh = rhs.getX();
        }
      }
      if (sum.pre)
        continue;
    }
    if (leaf.getType() != stream || sum.e)
      return std::nullopt;
    sum.e = leaf;
  }
  if (!sum.h || leaves.size() < 2)
    return std::nullopt;
  return sum;
}

/// A hyper_write_grad's call, with its g summed in the same pass where g
/// is a StreamSum (`sumCallee`).
void rewrite(residual::HyperWriteGradOp op, func::FuncOp callee, func::FuncOp sumCallee,
             int64_t threads) {
  // A fused call takes the sum's place: the reverse of the write before
  // reads g ahead of this op. Its other operands must be defined there.
  std::optional<StreamSum> sum;
  Operation *root = op.getG().getDefiningOp();
  if (sumCallee && isa_and_nonnull<nn::AddOp>(root) && op.getG().getType() == op.getX().getType()) {
    DominanceInfo dom(op->getParentOp());
    if (llvm::all_of(ValueRange{op.getX(), op.getU(), op.getPost()},
                     [&](Value v) { return dom.properlyDominates(v, root); }))
      sum = matchStreamSum(op.getG());
  }
  OpBuilder b(op);
  if (sum)
    b.setInsertionPointAfter(root);
  Location loc = op.getLoc();
  auto xt = cast<RankedTensorType>(op.getX().getType());
  int64_t n = xt.getDimSize(xt.getRank() - 2), d = xt.getDimSize(xt.getRank() - 1);
  int64_t lead = xt.getRank() - 2, tokens = tokenShape(xt, 2)[0];
  SmallVector<Value> args;
  auto pass = [&](Value buffer) { passBuffer(b, loc, buffer, args); };
  auto zeros = [&](int count) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    args.append(count, zero);
  };
  Value gBuffer;
  if (sum) {
    pass(readOnlyBuffer(b, loc, asTokens(b, loc, sum->h, 2)));
    passPerToken(b, loc, sum->res, 2, lead, args);
    if (sum->pre) {
      passPerToken(b, loc, sum->pre, 1, lead, args);
      passPerToken(b, loc, sum->dh, 1, lead, args);
    } else {
      zeros(8);
    }
    if (sum->e)
      pass(readOnlyBuffer(b, loc, asTokens(b, loc, sum->e, 2)));
    else
      zeros(5);
    gBuffer = memref::AllocOp::create(b, loc, MemRefType::get({tokens, n, d}, xt.getElementType()),
                                      b.getI64IntegerAttr(64));
    passBuffer(b, loc, gBuffer, args, /*strides=*/0);
  } else {
    pass(readOnlyBuffer(b, loc, asTokens(b, loc, op.getG(), 2)));
  }
  pass(readOnlyBuffer(b, loc, asTokens(b, loc, op.getX(), 2)));
  pass(readOnlyBuffer(b, loc, asTokens(b, loc, op.getU(), 1)));
  // Static coefficients: the same n weights for every token.
  passPerToken(b, loc, op.getPost(), 1, lead, args);
  SmallVector<Value> buffers;
  for (auto [result, rest] : llvm::zip(op->getResults(), ArrayRef<int64_t>{1, 1, 2})) {
    auto type = cast<RankedTensorType>(result.getType());
    buffers.push_back(memref::AllocOp::create(
        b, loc, MemRefType::get(tokenShape(type, rest), type.getElementType()),
        b.getI64IntegerAttr(64)));
    pass(buffers.back());
  }
  for (int64_t v : {tokens, n, d, threads})
    args.push_back(arith::ConstantIndexOp::create(b, loc, v));
  func::CallOp::create(b, loc, sum ? sumCallee : callee, args);
  auto asResult = [&](Value buffer, RankedTensorType type, int64_t rest) {
    auto flat = RankedTensorType::get(tokenShape(type, rest), type.getElementType());
    Value t = bufferization::ToTensorOp::create(b, loc, flat, buffer, /*restrict=*/true,
                                                /*writable=*/true);
    return fromTokens(b, loc, t, type, rest);
  };
  for (auto [result, buffer, rest] :
       llvm::zip(op->getResults(), buffers, ArrayRef<int64_t>{1, 1, 2}))
    result.replaceAllUsesWith(asResult(buffer, cast<RankedTensorType>(result.getType()), rest));
  // The sum's other readers (the reverse of the write before) take the
  // kernel's g; the adds are left dead.
  if (sum)
    op.getG().replaceAllUsesWith(asResult(gBuffer, xt, 2));
  op.erase();
}

/// Whether `a` and `c` compute the same: the same value, or results of
/// equivalent ops (attributes, types) on equivalent operands, as the
/// reverse rules write a stream's rms scale once per coefficient set (cse,
/// which would merge them, runs later: before this pass it would merge the
/// index checks' init tensors, which bufferization then copies).
bool sameValue(Value a, Value c, int depth = 0) {
  if (a == c)
    return true;
  Operation *x = a.getDefiningOp(), *y = c.getDefiningOp();
  if (!x || !y || depth > 16 || !isMemoryEffectFree(x) || x->getNumRegions() ||
      cast<OpResult>(a).getResultNumber() != cast<OpResult>(c).getResultNumber())
    return false;
  return OperationEquivalence::isEquivalentTo(
      x, y,
      [&](Value u, Value v) { return success(sameValue(u, v, depth + 1)); },
      /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}

/// An mHC site's three coefficient sets read one stream: their projection
/// reverses (same stream, same rms scale) become one op on the
/// concatenated dz, p and W, placed where the last of them was, with one
/// dX. The others' dX only ever enter the autodiff engine's running sums
/// (nn.add), which then skip them; dW is split back. Groups whose values are
/// used otherwise, or before the last op, are left as they are.
void mergeSites(func::FuncOp fn) {
  SmallVector<SmallVector<residual::HyperProjectGradOp>> groups;
  fn.walk([&](residual::HyperProjectGradOp op) {
    if (!supported(op))
      return;
    for (SmallVector<residual::HyperProjectGradOp> &group : groups)
      if (group.front().getX() == op.getX() && sameValue(group.front().getR(), op.getR())) {
        group.push_back(op);
        return;
      }
    groups.push_back({op});
  });
  for (SmallVector<residual::HyperProjectGradOp> &ops : groups) {
    if (ops.size() < 2)
      continue;
    Block *block = ops.front()->getBlock();
    if (llvm::any_of(ops, [&](auto op) { return op->getBlock() != block; }))
      continue;
    llvm::sort(ops, [](auto a, auto c) { return a->isBeforeInBlock(c); });
    residual::HyperProjectGradOp last = ops.back();
    auto after = [&](Operation *user) {
      return user->getBlock() == block && last->isBeforeInBlock(user);
    };
    // Each earlier dX only feeds sums whose other term has its type.
    bool mergeable = true;
    for (residual::HyperProjectGradOp op : ArrayRef(ops).drop_back()) {
      for (Operation *user : op.getDX().getUsers()) {
        auto add = dyn_cast<nn::AddOp>(user);
        mergeable &= add && add.getLhs() != add.getRhs() &&
                     add.getLhs().getType() == add.getRhs().getType() &&
                     add.getType() == op.getDX().getType();
      }
      for (Operation *user : op.getDW().getUsers())
        mergeable &= after(user);
    }
    if (!mergeable)
      continue;
    // The pieces in the order of the forward's coefficient sets (the hyper
    // coefficient ops of the same stream and weight), which is the order of
    // the write's fused projection (fuseWriteProjection): both then take the
    // one concatenated W, and its projection is this op's p as it is.
    SmallVector<residual::HyperProjectGradOp> order(ops);
    auto forward = [](residual::HyperProjectGradOp op) -> Operation * {
      for (Operation *user : op.getX().getUsers())
        if (auto c = dyn_cast<residual::HyperCoeffsOp>(user); c && c.getWeight() == op.getW())
          return c;
      return nullptr;
    };
    if (llvm::all_of(order, [&](auto op) {
          Operation *c = forward(op);
          return c && c->getBlock() == block;
        }))
      llvm::sort(order, [&](auto a, auto c) { return forward(a)->isBeforeInBlock(forward(c)); });
    OpBuilder b(last);
    Location loc = last.getLoc();
    auto catLast = [&](auto get) {
      SmallVector<Value> parts;
      int64_t width = 0;
      for (residual::HyperProjectGradOp op : order) {
        parts.push_back(get(op));
        width += cast<RankedTensorType>(parts.back().getType()).getShape().back();
      }
      auto t = cast<RankedTensorType>(parts.front().getType());
      SmallVector<int64_t> shape(t.getShape());
      shape.back() = width;
      return nn::ConcatOp::create(b, loc, RankedTensorType::get(shape, t.getElementType()), parts,
                                  b.getI64IntegerAttr(t.getRank() - 1))
          .getResult();
    };
    Value dz = catLast([](auto op) { return op.getDz(); });
    Value p = catLast([](auto op) { return op.getP(); });
    Value w = catLast([](auto op) { return op.getW(); });
    auto merged = residual::HyperProjectGradOp::create(b, loc, last.getDX().getType(),
                                                       w.getType(), dz, p, last.getR(),
                                                       last.getX(), w);
    SmallVector<Type> parts;
    SmallVector<int64_t> widths;
    for (residual::HyperProjectGradOp op : order) {
      parts.push_back(op.getDW().getType());
      widths.push_back(cast<RankedTensorType>(op.getW().getType()).getDimSize(1));
    }
    auto split = nn::SplitOp::create(b, loc, parts, merged.getDW(), b.getI64IntegerAttr(1),
                                     b.getDenseI64ArrayAttr(widths));
    for (auto [i, op] : llvm::enumerate(order))
      op.getDW().replaceAllUsesWith(split.getResult(i));
    for (residual::HyperProjectGradOp op : ops) {
      if (op == last) {
        op.getDX().replaceAllUsesWith(merged.getDX());
      } else {
        for (Operation *user : llvm::make_early_inc_range(op.getDX().getUsers())) {
          auto add = cast<nn::AddOp>(user);
          add.getResult().replaceAllUsesWith(add.getLhs() == op.getDX() ? add.getRhs()
                                                                        : add.getLhs());
          add.erase();
        }
      }
      op.erase();
    }
  }
}

void rewrite(residual::HyperProjectGradOp op, func::FuncOp callee, int64_t threads) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto xt = cast<RankedTensorType>(op.getX().getType());
  auto wt = cast<RankedTensorType>(op.getW().getType());
  int64_t n = xt.getDimSize(xt.getRank() - 2), d = xt.getDimSize(xt.getRank() - 1);
  SmallVector<Value> args;
  passBuffer(b, loc, readOnlyBuffer(b, loc, asTokens(b, loc, op.getDz(), 1)), args);
  passBuffer(b, loc, readOnlyBuffer(b, loc, asTokens(b, loc, op.getP(), 1)), args);
  passBuffer(b, loc, readOnlyBuffer(b, loc, asTokens(b, loc, op.getR(), 1)), args, 1);
  passBuffer(b, loc, readOnlyBuffer(b, loc, asTokens(b, loc, op.getX(), 2)), args);
  // W in its parts where dW is split back into the same parts (mergeSites'
  // nn.split): each part's gradient is then its own buffer.
  SmallVector<Value> parts = weightParts(op.getW());
  nn::SplitOp split;
  if (parts.size() > 1 && op.getDW().hasOneUse())
    split = dyn_cast<nn::SplitOp>(*op.getDW().getUsers().begin());
  auto sameParts = [&] {
    return (static_cast<int64_t>(split.getAxis()) + 2) % 2 == 1 &&
           split->getNumResults() == parts.size() &&
           llvm::all_of(llvm::zip(split->getResults(), parts), [](auto pair) {
             return std::get<0>(pair).getType() == std::get<1>(pair).getType();
           });
  };
  if (!split || !sameParts()) {
    parts.assign({op.getW()});
    split = nullptr;
  }
  passWeightParts(b, loc, parts, args);
  Type elt = xt.getElementType();
  auto alloc = [&](ArrayRef<int64_t> shape) -> Value {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, elt), b.getI64IntegerAttr(64));
  };
  Value dx = alloc(tokenShape(xt, 2));
  passBuffer(b, loc, dx, args, 0);
  SmallVector<Value> dw;
  for (Value part : parts) {
    dw.push_back(alloc(cast<RankedTensorType>(part.getType()).getShape()));
    passBuffer(b, loc, dw.back(), args, 0);
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  args.append(2 * (kWeightParts - static_cast<int64_t>(parts.size())), zero);
  for (int64_t v : {tokenShape(xt, 2)[0], n, d, wt.getDimSize(1), threads})
    args.push_back(arith::ConstantIndexOp::create(b, loc, v));
  func::CallOp::create(b, loc, callee, args);
  auto flat = RankedTensorType::get(tokenShape(xt, 2), elt);
  Value dxTensor = bufferization::ToTensorOp::create(b, loc, flat, dx, /*restrict=*/true,
                                                     /*writable=*/true);
  op.getDX().replaceAllUsesWith(fromTokens(b, loc, dxTensor, xt, 2));
  SmallVector<Value> grads;
  for (auto [part, buffer] : llvm::zip(parts, dw))
    grads.push_back(bufferization::ToTensorOp::create(b, loc, part.getType(), buffer,
                                                      /*restrict=*/true, /*writable=*/true));
  if (split) {
    split->replaceAllUsesWith(grads);
    split->erase();
  } else {
    op.getDW().replaceAllUsesWith(grads.front());
  }
  op.erase();
}

/// The coefficient sets read from the stream `write` writes (a
/// residual.hyper_write, or the hyper_expand that starts the stream) that
/// its kernel can project while it writes: mHC maps (their rows are each
/// token's streams flattened), static f32 operands, a [n d, k] weight
/// available before the write; in block order, those with the first one's
/// eps.
SmallVector<residual::HyperCoeffsOp> fusableCoeffs(Operation *write, DominanceInfo &dom) {
  SmallVector<residual::HyperCoeffsOp> candidates, coeffs;
  auto xt = cast<RankedTensorType>(write->getResult(0).getType());
  int64_t features = xt.getDimSize(xt.getRank() - 2) * xt.getDimSize(xt.getRank() - 1);
  for (Operation *user : write->getUsers()) {
    auto c = dyn_cast<residual::HyperCoeffsOp>(user);
    if (!c || c.getMap() == residual::HyperMap::tanh || c.getX() != write->getResult(0) ||
        c->getBlock() != write->getBlock() || !supported(c) || llvm::is_contained(candidates, c))
      continue;
    auto wt = cast<RankedTensorType>(c.getWeight().getType());
    if (wt.getRank() == 2 && wt.getDimSize(0) == features &&
        dom.properlyDominates(c.getWeight(), write))
      candidates.push_back(c);
  }
  llvm::sort(candidates, [](auto a, auto c) { return a->isBeforeInBlock(c); });
  for (residual::HyperCoeffsOp c : candidates)
    if (coeffs.empty() || c.getEps() == coeffs.front().getEps())
      coeffs.push_back(c);
  return coeffs;
}

/// `write` and the projections of `coeffs` as one call of
/// rewire_hyper_write_project: the stream, p = rows . [W...] and the rows'
/// rms scale r come from the kernel; each coefficient set becomes its map
/// of (its columns of p) r (the decomposition's arithmetic after the
/// product). What the reverse rules compute again from the stream -- the
/// projections and the rms scale that the maps' reverse and the projection
/// reverses (hyper_project_grad) start from -- become the kernel's values,
/// and a reverse that takes the sets in the kernel's order takes its W.
LogicalResult fuseWriteProjection(Operation *write, ArrayRef<residual::HyperCoeffsOp> coeffs,
                                  func::FuncOp callee, int64_t threads) {
  OpBuilder b(write);
  Location loc = write->getLoc();
  Value result = write->getResult(0);
  auto xt = cast<RankedTensorType>(result.getType());
  Type elt = xt.getElementType();
  int64_t lead = xt.getRank() - 2, n = xt.getDimSize(lead), d = xt.getDimSize(lead + 1);
  residual::HyperCoeffsOp first = coeffs.front();
  SmallVector<Value> weights;
  SmallVector<int64_t> widths;
  int64_t k = 0;
  for (residual::HyperCoeffsOp c : coeffs) {
    weights.push_back(c.getWeight());
    widths.push_back(cast<RankedTensorType>(c.getWeight().getType()).getDimSize(1));
    k += widths.back();
  }
  Value w = weights.size() == 1
                ? weights.front()
                : nn::ConcatOp::create(b, loc, RankedTensorType::get({n * d, k}, elt), weights,
                                       b.getI64IntegerAttr(1))
                      .getResult();
  SmallVector<Value> args;
  if (auto mix = dyn_cast<residual::HyperWriteOp>(write)) {
    passBuffer(b, loc, readOnlyBuffer(b, loc, asTokens(b, loc, mix.getX(), 2)), args);
    passBuffer(b, loc, readOnlyBuffer(b, loc, asTokens(b, loc, mix.getU(), 1)), args);
    passPerToken(b, loc, mix.getPost(), 1, lead, args);
    passPerToken(b, loc, mix.getRes(), 2, lead, args);
  } else {
    // The stream's start: no stream to mix (a null x), n copies of h.
    Value none = arith::ConstantIndexOp::create(b, loc, 0);
    args.append(5, none);
    passBuffer(b, loc,
               readOnlyBuffer(b, loc,
                              asTokens(b, loc, cast<residual::HyperExpandOp>(write).getH(), 1)),
               args);
    args.append(4 + 5, none);
  }
  passWeightParts(b, loc, weightParts(w), args);
  int64_t tokens = tokenShape(xt, 2)[0];
  SmallVector<Value> buffers;
  SmallVector<SmallVector<int64_t>> shapes{tokenShape(xt, 2), {tokens, k}, {tokens, 1}};
  for (ArrayRef<int64_t> shape : shapes) {
    buffers.push_back(memref::AllocOp::create(b, loc, MemRefType::get(shape, elt),
                                              b.getI64IntegerAttr(64)));
    passBuffer(b, loc, buffers.back(), args, 0);
  }
  for (int64_t v : {tokens, n, d, k})
    args.push_back(arith::ConstantIndexOp::create(b, loc, v));
  args.push_back(floatConstant(b, loc, elt, first.getEps().convertToDouble()));
  args.push_back(arith::ConstantIndexOp::create(b, loc, threads));
  func::CallOp::create(b, loc, callee, args);
  auto wrap = [&](Value buffer, RankedTensorType type, int64_t rest) {
    auto flat = RankedTensorType::get(cast<MemRefType>(buffer.getType()).getShape(), elt);
    Value t = bufferization::ToTensorOp::create(b, loc, flat, buffer, /*restrict=*/true,
                                                /*writable=*/true);
    return fromTokens(b, loc, t, type, rest);
  };
  SmallVector<int64_t> perToken(xt.getShape().drop_back(2));
  perToken.push_back(k);
  Value p = wrap(buffers[1], RankedTensorType::get(perToken, elt), 1);
  perToken.back() = 1;
  Value r = wrap(buffers[2], RankedTensorType::get(perToken, elt), 1);
  SmallVector<Value> columns{p};
  if (coeffs.size() > 1) {
    SmallVector<Type> parts;
    for (int64_t width : widths) {
      perToken.back() = width;
      parts.push_back(RankedTensorType::get(perToken, elt));
    }
    auto split = nn::SplitOp::create(b, loc, parts, p, b.getI64IntegerAttr(lead),
                                     b.getDenseI64ArrayAttr(widths));
    columns.assign(split.getResults().begin(), split.getResults().end());
  }
  // The projection reverses of the stream: p and r from the kernel, and
  // its W where they take the same sets in the same order.
  for (Operation *user : llvm::make_early_inc_range(write->getUsers())) {
    auto grad = dyn_cast<residual::HyperProjectGradOp>(user);
    if (!grad || grad.getX() != result)
      continue;
    SmallVector<Value> pieces{grad.getW()};
    if (auto cat = grad.getW().getDefiningOp<nn::ConcatOp>())
      pieces.assign(cat->getOperands().begin(), cat->getOperands().end());
    SmallVector<Value> slices;
    SmallVector<int64_t> indices;
    for (Value piece : pieces) {
      auto *it = llvm::find(weights, piece);
      if (it == weights.end())
        break;
      indices.push_back(it - weights.begin());
      slices.push_back(columns[indices.back()]);
    }
    if (slices.size() != pieces.size())
      continue; // a weight the kernel does not project: it keeps its own p
    OpBuilder gb(grad);
    if (indices == llvm::to_vector(llvm::seq<int64_t>(0, weights.size()))) {
      grad.getPMutable().assign(p);
      grad.getWMutable().assign(w);
    } else if (slices.size() == 1) {
      grad.getPMutable().assign(slices.front());
    } else {
      grad.getPMutable().assign(nn::ConcatOp::create(gb, grad.getLoc(), grad.getP().getType(),
                                                     slices, gb.getI64IntegerAttr(lead)));
    }
    grad.getRMutable().assign(r);
  }
  Value stream = wrap(buffers[0], xt, 2);
  auto fn = write->getParentOfType<func::FuncOp>();
  result.replaceAllUsesWith(stream);
  // The reverses' own projections and rms scales (the decomposition's
  // arithmetic on the stream): found by equivalence with the same
  // computation built here, which is then left dead.
  ImplicitLocOpBuilder rb(loc, b);
  Value rows = residual::hyperCoeffsRows(rb, first, stream);
  Value scale = residual::rmsScale(rb, rows, first.getEps().convertToDouble());
  fn.walk([&](Operation *op) {
    if (auto mm = dyn_cast<nn::MatMulOp>(op)) {
      auto *it = llvm::find(weights, mm.getRhs());
      if (it != weights.end() && mm.getType() == columns[it - weights.begin()].getType() &&
          sameValue(mm.getLhs(), rows))
        mm.getResult().replaceAllUsesWith(columns[it - weights.begin()]);
    } else if (auto div = dyn_cast<nn::DivOp>(op)) {
      if (div.getResult() != scale && div.getType() == r.getType() &&
          sameValue(div.getResult(), scale))
        div.getResult().replaceAllUsesWith(r);
    }
  });
  write->erase();
  for (auto [i, z] : llvm::enumerate(columns)) {
    residual::HyperCoeffsOp c = coeffs[i];
    ImplicitLocOpBuilder cb(c.getLoc(), c);
    FailureOr<Value> map = residual::hyperCoeffsMap(cb, c, nn::MulOp::create(cb, z, r),
                                                    c.getAlpha(), c.getBias());
    if (failed(map))
      return failure();
    c.getResult().replaceAllUsesWith(*map);
    c.erase();
  }
  return success();
}

/// Erases the ops without memory effects whose results nothing uses (what
/// fuseWriteProjection leaves: the reverses' own projections and rms
/// scales), so that later passes do not fuse them into live work.
void eraseDeadOps(func::FuncOp fn) {
  bool erased = true;
  while (erased) {
    erased = false;
    SmallVector<Operation *> dead;
    fn.walk([&](Operation *op) {
      if (op != fn && op->getNumResults() > 0 && isOpTriviallyDead(op))
        dead.push_back(op);
    });
    for (Operation *op : llvm::reverse(dead)) {
      op->erase();
      erased = true;
    }
  }
}

void HyperToKernelPass::runOnOperation() {
  ModuleOp module = getOperation();
  module.walk([](func::FuncOp fn) { mergeSites(fn); });
  // An mHC write (or the stream's start) and the projections of the stream
  // it writes: one pass.
  IndexType indexType = IndexType::get(module.getContext());
  func::FuncOp writeProject;
  SmallVector<func::FuncOp> fns(module.getOps<func::FuncOp>());
  for (func::FuncOp fn : fns) {
    if (fn.isExternal())
      continue;
    DominanceInfo dom(fn);
    SmallVector<std::pair<Operation *, SmallVector<residual::HyperCoeffsOp>>> sites;
    fn.walk([&](Operation *write) {
      if (!isa<residual::HyperWriteOp, residual::HyperExpandOp>(write) || !supported(write))
        return;
      SmallVector<residual::HyperCoeffsOp> coeffs = fusableCoeffs(write, dom);
      if (!coeffs.empty())
        sites.emplace_back(write, std::move(coeffs));
    });
    if (sites.empty())
      continue;
    if (!writeProject) {
      // x: 5 values; u, post: 4; res: 5; W's parts: 5 each; out, p, r: 2
      // each; 4 sizes, eps (f32), threads.
      SmallVector<Type> args(5 + 4 + 4 + 5 + 5 * kWeightParts + 2 * 3 + 4, indexType);
      args.push_back(Float32Type::get(module.getContext()));
      args.push_back(indexType);
      writeProject = declareRuntimeFunction(module, kWriteProject, args);
    }
    for (auto &[write, coeffs] : sites)
      if (failed(fuseWriteProjection(write, coeffs, writeProject, threads)))
        return signalPassFailure();
    eraseDeadOps(fn);
  }
  SmallVector<residual::HyperWriteGradOp> writes;
  SmallVector<residual::HyperProjectGradOp> projections;
  module.walk([&](Operation *op) {
    if (auto write = dyn_cast<residual::HyperWriteGradOp>(op); write && supported(op))
      writes.push_back(write);
    if (auto projection = dyn_cast<residual::HyperProjectGradOp>(op); projection && supported(op))
      projections.push_back(projection);
  });
  if (!writes.empty()) {
    // g, x: 5 values each; u, post, du, dpost: 4; dres: 5; 4 sizes.
    SmallVector<Type> args(5 + 5 + 4 * 4 + 5 + 4, indexType);
    func::FuncOp callee = declareRuntimeFunction(module, kWriteGrad, args);
    // h, res, e: 5 values each; pre, dh: 4; g: 2; then as above without g.
    SmallVector<Type> sumArgs(5 * 3 + 4 * 2 + 2 + 5 + 4 * 4 + 5 + 4, indexType);
    func::FuncOp sumCallee;
    for (residual::HyperWriteGradOp op : writes)
      if (op.getG().getType() == op.getX().getType() && matchStreamSum(op.getG())) {
        sumCallee = declareRuntimeFunction(module, kWriteGradSum, sumArgs);
        break;
      }
    for (residual::HyperWriteGradOp op : writes)
      rewrite(op, callee, sumCallee, threads);
    module.walk([](func::FuncOp fn) { eraseDeadOps(fn); });
  }
  if (!projections.empty()) {
    // dz, p: 4 values each; r: 3; x: 5; W's parts: 5 each; dx: 2; dW's
    // parts: 2 each; 5 sizes.
    SmallVector<Type> args(4 + 4 + 3 + 5 + 5 * kWeightParts + 2 + 2 * kWeightParts + 5,
                           indexType);
    func::FuncOp callee = declareRuntimeFunction(module, kProjectGrad, args);
    for (residual::HyperProjectGradOp op : projections)
      rewrite(op, callee, threads);
    // The concatenated weights the kernels took in parts.
    module.walk([](func::FuncOp fn) { eraseDeadOps(fn); });
  }
}

} // namespace
