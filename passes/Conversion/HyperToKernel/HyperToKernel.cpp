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
// That of `rewire_hyper_project_grad`:
//   (dz, dzOffset, dzStrides[2], p, pOffset, pStrides[2], r, rOffset,
//    rTokenStride, x, xOffset, xStrides[3], w, wOffset, wStrides[2], dx,
//    dxOffset, dw, dwOffset, tokens, n, d, k, threads)
// with dz and p [tokens, k], r [tokens, 1], x [tokens, n, d], w [n d, k];
// dx [tokens, n, d] and dw [n d, k] are fresh dense buffers.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/Passes.h"

#include "dialects/nn/NNOps.h"
#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
constexpr const char *kProjectGrad = "rewire_hyper_project_grad";

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

void rewrite(residual::HyperWriteGradOp op, func::FuncOp callee, int64_t threads) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto xt = cast<RankedTensorType>(op.getX().getType());
  int64_t n = xt.getDimSize(xt.getRank() - 2), d = xt.getDimSize(xt.getRank() - 1);
  SmallVector<Value> args;
  auto pass = [&](Value buffer) { passBuffer(b, loc, buffer, args); };
  pass(readOnlyBuffer(b, loc, asTokens(b, loc, op.getG(), 2)));
  pass(readOnlyBuffer(b, loc, asTokens(b, loc, op.getX(), 2)));
  pass(readOnlyBuffer(b, loc, asTokens(b, loc, op.getU(), 1)));
  auto pt = cast<RankedTensorType>(op.getPost().getType());
  if (pt.getRank() == 1 && xt.getRank() > 2) {
    // Static coefficients: the same n weights for every token.
    BufferView view = describeBuffer(b, loc, readOnlyBuffer(b, loc, op.getPost()));
    args.push_back(view.ptr);
    args.push_back(view.offset);
    args.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    args.push_back(view.strides[0]);
  } else {
    pass(readOnlyBuffer(b, loc, asTokens(b, loc, op.getPost(), 1)));
  }
  SmallVector<Value> buffers;
  for (auto [result, rest] : llvm::zip(op->getResults(), ArrayRef<int64_t>{1, 1, 2})) {
    auto type = cast<RankedTensorType>(result.getType());
    buffers.push_back(memref::AllocOp::create(
        b, loc, MemRefType::get(tokenShape(type, rest), type.getElementType()),
        b.getI64IntegerAttr(64)));
    pass(buffers.back());
  }
  for (int64_t v : {tokenShape(xt, 2)[0], n, d, threads})
    args.push_back(arith::ConstantIndexOp::create(b, loc, v));
  func::CallOp::create(b, loc, callee, args);
  for (auto [result, buffer, rest] :
       llvm::zip(op->getResults(), buffers, ArrayRef<int64_t>{1, 1, 2})) {
    auto type = cast<RankedTensorType>(result.getType());
    auto flat = RankedTensorType::get(tokenShape(type, rest), type.getElementType());
    Value t = bufferization::ToTensorOp::create(b, loc, flat, buffer, /*restrict=*/true,
                                                /*writable=*/true);
    result.replaceAllUsesWith(fromTokens(b, loc, t, type, rest));
  }
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
    OpBuilder b(last);
    Location loc = last.getLoc();
    auto catLast = [&](auto get) {
      SmallVector<Value> parts;
      int64_t width = 0;
      for (residual::HyperProjectGradOp op : ops) {
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
    for (residual::HyperProjectGradOp op : ops) {
      parts.push_back(op.getDW().getType());
      widths.push_back(cast<RankedTensorType>(op.getW().getType()).getDimSize(1));
    }
    auto split = nn::SplitOp::create(b, loc, parts, merged.getDW(), b.getI64IntegerAttr(1),
                                     b.getDenseI64ArrayAttr(widths));
    for (auto [i, op] : llvm::enumerate(ops)) {
      op.getDW().replaceAllUsesWith(split.getResult(i));
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
  passBuffer(b, loc, readOnlyBuffer(b, loc, op.getW()), args);
  Type elt = xt.getElementType();
  Value dx = memref::AllocOp::create(b, loc, MemRefType::get(tokenShape(xt, 2), elt),
                                     b.getI64IntegerAttr(64));
  Value dw = memref::AllocOp::create(b, loc, MemRefType::get(wt.getShape(), elt),
                                     b.getI64IntegerAttr(64));
  passBuffer(b, loc, dx, args, 0);
  passBuffer(b, loc, dw, args, 0);
  for (int64_t v : {tokenShape(xt, 2)[0], n, d, wt.getDimSize(1), threads})
    args.push_back(arith::ConstantIndexOp::create(b, loc, v));
  func::CallOp::create(b, loc, callee, args);
  auto flat = RankedTensorType::get(tokenShape(xt, 2), elt);
  Value dxTensor = bufferization::ToTensorOp::create(b, loc, flat, dx, /*restrict=*/true,
                                                     /*writable=*/true);
  op.getDX().replaceAllUsesWith(fromTokens(b, loc, dxTensor, xt, 2));
  op.getDW().replaceAllUsesWith(bufferization::ToTensorOp::create(
      b, loc, wt, dw, /*restrict=*/true, /*writable=*/true));
  op.erase();
}

void HyperToKernelPass::runOnOperation() {
  ModuleOp module = getOperation();
  module.walk([](func::FuncOp fn) { mergeSites(fn); });
  SmallVector<residual::HyperWriteGradOp> writes;
  SmallVector<residual::HyperProjectGradOp> projections;
  module.walk([&](Operation *op) {
    if (auto write = dyn_cast<residual::HyperWriteGradOp>(op); write && supported(op))
      writes.push_back(write);
    if (auto projection = dyn_cast<residual::HyperProjectGradOp>(op); projection && supported(op))
      projections.push_back(projection);
  });
  IndexType index = IndexType::get(module.getContext());
  if (!writes.empty()) {
    // g, x: 5 values each; u, post, du, dpost: 4; dres: 5; 4 sizes.
    SmallVector<Type> args(5 + 5 + 4 * 4 + 5 + 4, index);
    func::FuncOp callee = declareRuntimeFunction(module, kWriteGrad, args);
    for (residual::HyperWriteGradOp op : writes)
      rewrite(op, callee, threads);
  }
  if (!projections.empty()) {
    // dz, p: 4 values each; r: 3; x: 5; w: 4; dx, dw: 2 each; 5 sizes.
    SmallVector<Type> args(4 + 4 + 3 + 5 + 4 + 2 + 2 + 5, index);
    func::FuncOp callee = declareRuntimeFunction(module, kProjectGrad, args);
    for (residual::HyperProjectGradOp op : projections)
      rewrite(op, callee, threads);
  }
}

} // namespace
