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
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/Passes.h"

#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace rewire {
#define GEN_PASS_DEF_HYPERTOKERNEL
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

constexpr const char *kWriteGrad = "rewire_hyper_write_grad";

struct HyperToKernelPass : rewire::impl::HyperToKernelBase<HyperToKernelPass> {
  using HyperToKernelBase::HyperToKernelBase;
  void runOnOperation() override;
};

bool supported(residual::HyperWriteGradOp op) {
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

void rewrite(residual::HyperWriteGradOp op, func::FuncOp callee, int64_t threads) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto xt = cast<RankedTensorType>(op.getX().getType());
  int64_t n = xt.getDimSize(xt.getRank() - 2), d = xt.getDimSize(xt.getRank() - 1);
  SmallVector<Value> args;
  auto pass = [&](Value buffer) {
    BufferView view = describeBuffer(b, loc, buffer);
    args.push_back(view.ptr);
    args.push_back(view.offset);
    llvm::append_range(args, view.strides);
  };
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

void HyperToKernelPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<residual::HyperWriteGradOp> ops;
  module.walk([&](residual::HyperWriteGradOp op) {
    if (supported(op))
      ops.push_back(op);
  });
  if (ops.empty())
    return;
  // g, x: 5 values each; u, post, du, dpost: 4; dres: 5; 4 sizes.
  SmallVector<Type> args(5 + 5 + 4 * 4 + 5 + 4, IndexType::get(module.getContext()));
  func::FuncOp callee = declareRuntimeFunction(module, kWriteGrad, args);
  for (residual::HyperWriteGradOp op : ops)
    rewrite(op, callee, threads);
}

} // namespace
