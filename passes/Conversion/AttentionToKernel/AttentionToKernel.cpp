//===- AttentionToKernel.cpp - f32 nn.attention to the fused CPU kernel ---===//
//
// Implements rewire-attention-to-kernel (see Passes.td). The call convention
// of `rewire_attention` (runtime/Attention.c; all index, i.e. int64_t in C,
// but the scale):
//   (q, qOffset, qStrides[4], k, kOffset, kStrides[4], v, vOffset,
//    vStrides[4], bias, biasOffset, biasStrides[4], out, outOffset,
//    outStrides[4], B, H, Tq, Tk, D, Dv, flags, threads, scale)
// with the pointers aligned bases and offsets and strides in elements. The
// bias is described as [B, H, Tq, Tk] with stride 0 along the dimensions it
// broadcasts; without one its pointer, offset and strides are 0. `flags`:
// bit 0 causal, bit 1 zero_masked_rows.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/Passes.h"

#include "dialects/nn/NNOps.h"

#include <cmath>

namespace rewire {
#define GEN_PASS_DEF_ATTENTIONTOKERNEL
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

constexpr const char *kAttention = "rewire_attention";

struct AttentionToKernelPass : rewire::impl::AttentionToKernelBase<AttentionToKernelPass> {
  using AttentionToKernelBase::AttentionToKernelBase;
  void runOnOperation() override;
};

/// Whether the kernel takes `op`: static rank-4 f32 operands, a static
/// f32 bias of rank <= 4.
bool supported(nn::AttentionOp op) {
  for (Value v : {op.getQ(), op.getK(), op.getV(), op.getResult()}) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.hasStaticShape() || t.getRank() != 4 || !t.getElementType().isF32())
      return false;
  }
  if (Value bias = op.getBias()) {
    auto t = dyn_cast<RankedTensorType>(bias.getType());
    if (!t || !t.hasStaticShape() || t.getRank() > 4 || !t.getElementType().isF32())
      return false;
  }
  return true;
}

/// `t` as a read-only buffer of any strides.
Value readBuffer(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                                       SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic));
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType(), layout);
  return bufferization::ToBufferOp::create(b, loc, memrefType, t, /*readOnly=*/true);
}

void rewrite(nn::AttentionOp op, func::FuncOp callee, int64_t threads) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto qt = cast<RankedTensorType>(op.getQ().getType());
  auto kt = cast<RankedTensorType>(op.getK().getType());
  auto type = cast<RankedTensorType>(op.getType());
  double scale = op.getScale() ? op.getScale()->convertToDouble()
                               : 1.0 / std::sqrt(static_cast<double>(qt.getDimSize(3)));

  auto out = memref::AllocOp::create(b, loc, MemRefType::get(type.getShape(), type.getElementType()),
                                     b.getI64IntegerAttr(64));
  SmallVector<Value> args;
  auto pass = [&](Value buffer) {
    rewire::BufferView view = rewire::describeBuffer(b, loc, buffer);
    args.push_back(view.ptr);
    args.push_back(view.offset);
    args.append(view.strides);
  };
  pass(readBuffer(b, loc, op.getQ()));
  pass(readBuffer(b, loc, op.getK()));
  pass(readBuffer(b, loc, op.getV()));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  if (Value bias = op.getBias()) {
    // Aligned to the scores' trailing dimensions; broadcast ones read with
    // stride 0.
    rewire::BufferView view = rewire::describeBuffer(b, loc, readBuffer(b, loc, bias));
    auto bt = cast<RankedTensorType>(bias.getType());
    int64_t lead = 4 - bt.getRank();
    args.push_back(view.ptr);
    args.push_back(view.offset);
    for (int64_t i = 0; i < 4; ++i)
      args.push_back(i >= lead && bt.getDimSize(i - lead) != 1 ? view.strides[i - lead] : zero);
  } else {
    args.append(6, zero);
  }
  pass(out);
  for (int64_t n : {qt.getDimSize(0), qt.getDimSize(1), qt.getDimSize(2), kt.getDimSize(2),
                    qt.getDimSize(3), type.getDimSize(3),
                    int64_t(op.getCausal()) | int64_t(op.getZeroMaskedRows()) << 1, threads})
    args.push_back(arith::ConstantIndexOp::create(b, loc, n));
  args.push_back(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(scale)));
  func::CallOp::create(b, loc, callee, args);
  Value result = bufferization::ToTensorOp::create(b, loc, type, out, /*restrict=*/true,
                                                   /*writable=*/true);
  op.replaceAllUsesWith(result);
  op.erase();
}

void AttentionToKernelPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<nn::AttentionOp> ops;
  module.walk([&](nn::AttentionOp op) {
    if (supported(op))
      ops.push_back(op);
  });
  if (ops.empty())
    return;
  Builder b(module.getContext());
  SmallVector<Type> args(38, b.getIndexType());
  args.push_back(b.getF32Type());
  func::FuncOp callee = rewire::declareRuntimeFunction(module, kAttention, args);
  for (nn::AttentionOp op : ops)
    rewrite(op, callee, threads);
}

} // namespace
