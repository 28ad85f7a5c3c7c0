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
// bit 0 causal, bit 1 zero_masked_rows. nn.attention_grad calls
// `rewire_attention_backward` the same way, with o (the forward's output),
// do (its adjoint), dq, dk and dv inserted after the bias:
//   (q.., k.., v.., bias.., o.., do.., dq.., dk.., dv.., B, H, Tq, Tk, D, Dv,
//    flags, threads, scale)
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
constexpr const char *kAttentionBackward = "rewire_attention_backward";

struct AttentionToKernelPass : rewire::impl::AttentionToKernelBase<AttentionToKernelPass> {
  using AttentionToKernelBase::AttentionToKernelBase;
  void runOnOperation() override;
};

/// Whether the kernels take these operands and results: static rank-4 f32
/// tensors, a static f32 bias of rank <= 4.
bool supported(ValueRange tensors, Value bias) {
  for (Value v : tensors) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.hasStaticShape() || t.getRank() != 4 || !t.getElementType().isF32())
      return false;
  }
  if (bias) {
    auto t = dyn_cast<RankedTensorType>(bias.getType());
    if (!t || !t.hasStaticShape() || t.getRank() > 4 || !t.getElementType().isF32())
      return false;
  }
  return true;
}

/// A rank-4 nn.transpose's permutation (ONNX's default: reversed).
SmallVector<int64_t> permOf(nn::TransposeOp t) {
  if (auto p = t.getPerm())
    return SmallVector<int64_t>(p->begin(), p->end());
  return {3, 2, 1, 0};
}

/// The rank-4 nn.transpose that defines `t`, if any.
nn::TransposeOp transposeOf(Value t) {
  auto tr = t.getDefiningOp<nn::TransposeOp>();
  return tr && cast<RankedTensorType>(t.getType()).getRank() == 4 ? tr : nn::TransposeOp();
}

/// Where results of a kernel land when each of them (in `targets`, the
/// layout it is written in, [d0, d1, d2, d3]) is only reshaped to
/// [d0, d1, d2 * d3] and all of them are the operands of one nn.concat
/// along that last axis -- the query, key and value gradients going back
/// into a fused QKV projection's: the kernel writes into the concatenation
/// in place (at `offsets` along its last axis) and nothing is copied.
struct ConcatDestination {
  nn::ConcatOp concat;
  SmallVector<Operation *> reshapes;
  SmallVector<int64_t> offsets;
};

std::optional<ConcatDestination> concatDestination(ArrayRef<Value> targets) {
  ConcatDestination d;
  for (Value t : targets) {
    auto type = cast<RankedTensorType>(t.getType());
    auto reshape = t.hasOneUse() ? dyn_cast<nn::ReshapeOp>(*t.getUsers().begin()) : nullptr;
    if (!reshape || !reshape->hasOneUse())
      return std::nullopt;
    auto rt = dyn_cast<RankedTensorType>(reshape.getType());
    if (!rt || !rt.hasStaticShape() || rt.getRank() != 3 ||
        rt.getShape() != ArrayRef<int64_t>{type.getDimSize(0), type.getDimSize(1),
                                           type.getDimSize(2) * type.getDimSize(3)})
      return std::nullopt;
    auto concat = dyn_cast<nn::ConcatOp>(*reshape->getUsers().begin());
    if (!concat || (d.concat && concat != d.concat))
      return std::nullopt;
    d.concat = concat;
    d.reshapes.push_back(reshape);
  }
  if (!d.concat || d.concat.getInputs().size() != targets.size())
    return std::nullopt;
  // I64Attr reads back as uint64_t: the signed axis.
  if (int64_t axis = static_cast<int64_t>(d.concat.getAxis()); axis != 2 && axis != -1)
    return std::nullopt;
  for (Operation *reshape : d.reshapes) {
    int64_t offset = 0;
    bool found = false;
    for (Value in : d.concat.getInputs()) {
      if (in.getDefiningOp() == reshape) {
        found = true;
        break;
      }
      offset += cast<RankedTensorType>(in.getType()).getDimSize(2);
    }
    if (!found)
      return std::nullopt;
    d.offsets.push_back(offset);
  }
  return d;
}

/// The call of one of the kernels for an attention op: q, k, v, the bias,
/// `extraInputs` read in place, one fresh buffer per type of `results`
/// (which replace the op's results), then the sizes, flags and scale.
template <typename Op>
void rewrite(Op op, ValueRange extraInputs, func::FuncOp callee, int64_t threads) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto qt = cast<RankedTensorType>(op.getQ().getType());
  auto kt = cast<RankedTensorType>(op.getK().getType());
  auto vt = cast<RankedTensorType>(op.getV().getType());
  double scale = op.getScale() ? op.getScale()->convertToDouble()
                               : 1.0 / std::sqrt(static_cast<double>(qt.getDimSize(3)));

  SmallVector<Value> args;
  // `perm[j]`: the buffer dimension that carries the operand's dimension j.
  auto pass = [&](Value buffer, ArrayRef<int64_t> perm = {}) {
    rewire::BufferView view = rewire::describeBuffer(b, loc, buffer);
    args.push_back(view.ptr);
    args.push_back(view.offset);
    for (int64_t j = 0; j < 4; ++j)
      args.push_back(view.strides[perm.empty() ? j : perm[j]]);
  };
  // An operand that is a transpose ([B, T, H, D] heads moved, as exporters
  // write them) is read through its source's strides: no transposed copy.
  auto read = [&](Value t) {
    if (auto tr = transposeOf(t))
      pass(readOnlyBuffer(b, loc, tr.getX()), permOf(tr));
    else
      pass(readOnlyBuffer(b, loc, t));
  };
  read(op.getQ());
  read(op.getK());
  read(op.getV());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  if (Value bias = op.getBias()) {
    // Aligned to the scores' trailing dimensions; broadcast ones read with
    // stride 0.
    rewire::BufferView view = rewire::describeBuffer(b, loc, readOnlyBuffer(b, loc, bias));
    auto bt = cast<RankedTensorType>(bias.getType());
    int64_t lead = 4 - bt.getRank();
    args.push_back(view.ptr);
    args.push_back(view.offset);
    for (int64_t i = 0; i < 4; ++i)
      args.push_back(i >= lead && bt.getDimSize(i - lead) != 1 ? view.strides[i - lead] : zero);
  } else {
    args.append(6, zero);
  }
  for (Value in : extraInputs)
    read(in);
  // A result whose one use transposes it (back to [B, T, H, D]) is written
  // in that layout: the buffer has the transpose's shape, the kernel its
  // strides permuted, and the transpose's result is the buffer.
  SmallVector<Value> replaced;
  SmallVector<SmallVector<int64_t>> perms;
  for (Value r : op->getResults()) {
    nn::TransposeOp back;
    if (r.hasOneUse())
      back = dyn_cast<nn::TransposeOp>(*r.getUsers().begin());
    if (back && cast<RankedTensorType>(back.getType()).getRank() != 4)
      back = nullptr;
    replaced.push_back(back ? back.getResult() : r);
    SmallVector<int64_t> perm;
    if (back) {
      // target dim i = result dim perm[i]: result dim j lives in target
      // dim i where perm[i] == j.
      SmallVector<int64_t> p = permOf(back);
      perm.assign(4, 0);
      for (int64_t i = 0; i < 4; ++i)
        perm[p[i]] = i;
    }
    perms.push_back(perm);
  }
  std::optional<ConcatDestination> into = concatDestination(replaced);
  SmallVector<Value> outs;
  Value whole;
  if (into) {
    auto ct = cast<RankedTensorType>(into->concat.getType());
    whole = memref::AllocOp::create(b, loc, MemRefType::get(ct.getShape(), ct.getElementType()),
                                    b.getI64IntegerAttr(64));
  }
  for (auto [i, target] : llvm::enumerate(replaced)) {
    auto type = cast<RankedTensorType>(target.getType());
    if (into) {
      // The target's [d0, d1, d2, d3] in the concatenation's rows.
      int64_t width = cast<RankedTensorType>(into->concat.getType()).getDimSize(2);
      SmallVector<int64_t> strides{type.getDimSize(1) * width, width, type.getDimSize(3), 1};
      auto viewType = MemRefType::get(
          type.getShape(), type.getElementType(),
          StridedLayoutAttr::get(b.getContext(), into->offsets[i], strides));
      outs.push_back(memref::ReinterpretCastOp::create(b, loc, viewType, whole, into->offsets[i],
                                                       type.getShape(), strides));
    } else {
      outs.push_back(memref::AllocOp::create(
          b, loc, MemRefType::get(type.getShape(), type.getElementType()),
          b.getI64IntegerAttr(64)));
    }
    pass(outs.back(), perms[i]);
  }
  for (int64_t n : {qt.getDimSize(0), qt.getDimSize(1), qt.getDimSize(2), kt.getDimSize(2),
                    qt.getDimSize(3), vt.getDimSize(3),
                    int64_t(op.getCausal()) | int64_t(op.getZeroMaskedRows()) << 1, threads})
    args.push_back(arith::ConstantIndexOp::create(b, loc, n));
  args.push_back(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(scale)));
  func::CallOp::create(b, loc, callee, args);
  if (into) {
    into->concat.getResult().replaceAllUsesWith(
        bufferization::ToTensorOp::create(b, loc, into->concat.getType(), whole,
                                          /*restrict=*/true, /*writable=*/true)
            .getResult());
    into->concat.erase();
    for (Operation *reshape : into->reshapes)
      reshape->erase();
    for (Value r : replaced)
      if (Operation *transpose = r.getDefiningOp<nn::TransposeOp>())
        transpose->erase();
    op.erase();
    return;
  }
  for (auto [r, buffer] : llvm::zip(replaced, outs)) {
    Operation *transpose = r.getDefiningOp<nn::TransposeOp>();
    r.replaceAllUsesWith(bufferization::ToTensorOp::create(b, loc, r.getType(), buffer,
                                                           /*restrict=*/true, /*writable=*/true)
                             .getResult());
    if (transpose && transpose->getOperand(0).getDefiningOp() == op.getOperation())
      transpose->erase();
  }
  op.erase();
}

/// The kernel's declaration: `buffers` buffer descriptions (pointer,
/// offset, four strides), 8 sizes and flags, the f32 scale.
func::FuncOp declare(ModuleOp module, StringRef name, int buffers) {
  Builder b(module.getContext());
  SmallVector<Type> args(6 * buffers + 8, b.getIndexType());
  args.push_back(b.getF32Type());
  return rewire::declareRuntimeFunction(module, name, args);
}

void AttentionToKernelPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<nn::AttentionOp> forward;
  SmallVector<nn::AttentionGradOp> backward;
  module.walk([&](Operation *op) {
    if (auto a = dyn_cast<nn::AttentionOp>(op)) {
      if (supported({a.getQ(), a.getK(), a.getV(), a.getResult()}, a.getBias()))
        forward.push_back(a);
    } else if (auto g = dyn_cast<nn::AttentionGradOp>(op)) {
      if (supported({g.getQ(), g.getK(), g.getV(), g.getOut(), g.getDout()}, g.getBias()))
        backward.push_back(g);
    }
  });
  if (!forward.empty()) {
    func::FuncOp callee = declare(module, kAttention, 5);
    for (nn::AttentionOp op : forward)
      rewrite(op, {}, callee, threads);
  }
  if (!backward.empty()) {
    func::FuncOp callee = declare(module, kAttentionBackward, 9);
    for (nn::AttentionGradOp op : backward)
      rewrite(op, {op.getOut(), op.getDout()}, callee, threads);
  }
}

} // namespace
