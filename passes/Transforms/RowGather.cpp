//===- RowGather.cpp - Run a branch on a subset of its rows ---------------===//
//
// Clones a sublayer branch onto the rows Mixture-of-Depths routes to it.
// The branch's ops are re-typed one by one: those that infer their result
// type (most nn ops: matmul, transpose, attention, broadcasting arithmetic)
// infer it from the gathered operands, those whose result has their
// operand's shape (norms, softmax, unary ops, casts) keep it, and a reshape
// keeps the token axis whole (T -> K in the input and the output axis that
// holds it). Operands from outside the branch that carry token axes are
// replaced by the same tensor at the kept positions (a constant causal mask
// rebuilt K x K, splats resized, anything else gathered at run time, aligned
// by the batch index tracked through the branch). Each clone is verified;
// anything that cannot be re-typed exactly fails with the op named, and the
// caller keeps the masked form.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/RowGather.h"

#include "dialects/nn/NNDialect.h"
#include "dialects/nn/NNOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace rewire;

SmallVector<Operation *> rewire::branchOps(Value input, Value output) {
  SmallVector<Operation *> ops;
  Operation *end = output ? output.getDefiningOp() : nullptr;
  if (!input || !end)
    return ops;
  Block *block = end->getBlock();
  // Forward from the input, within the block, up to the output's op.
  llvm::DenseSet<Operation *> reach;
  SmallVector<Value> work = {input};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      Operation *op = block->findAncestorOpInBlock(*user);
      if (!op || (op != end && !op->isBeforeInBlock(end)))
        continue;
      if (reach.insert(op).second)
        for (Value r : op->getResults())
          work.push_back(r);
    }
  }
  if (!reach.contains(end))
    return ops;
  // Backward from the output through the reached ops.
  llvm::SetVector<Operation *> need;
  SmallVector<Operation *> stack = {end};
  while (!stack.empty()) {
    Operation *op = stack.pop_back_val();
    if (!need.insert(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && reach.contains(def))
        stack.push_back(def);
  }
  ops.assign(need.begin(), need.end());
  llvm::sort(ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ops;
}

namespace {

/// The axes where `now` differs from `was` (the token axes of a re-typed
/// value).
SmallVector<int64_t> changedAxes(Type was, Type now) {
  SmallVector<int64_t> axes;
  auto a = dyn_cast<RankedTensorType>(was), b = dyn_cast<RankedTensorType>(now);
  if (!a || !b || a.getRank() != b.getRank())
    return axes;
  for (int64_t i = 0; i < a.getRank(); ++i)
    if (a.getDimSize(i) != b.getDimSize(i))
      axes.push_back(i);
  return axes;
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// The axes an op selects positions along (a slice, split, concat, gather),
/// normalized; empty for other ops.
SmallVector<int64_t> positionalAxes(Operation *op) {
  SmallVector<int64_t> axes;
  int64_t rank = 0;
  if (op->getNumOperands())
    if (auto t = dyn_cast<RankedTensorType>(op->getOperand(0).getType()))
      rank = t.getRank();
  auto norm = [&](int64_t a) { return a < 0 ? a + rank : a; };
  if (auto s = dyn_cast<nn::SliceOp>(op)) {
    if (auto a = s.getAxes())
      for (int64_t x : *a)
        axes.push_back(norm(x));
    else
      for (int64_t i = 0; i < static_cast<int64_t>(s.getStarts().size()); ++i)
        axes.push_back(i);
  } else if (auto s = dyn_cast<nn::SplitOp>(op)) {
    axes.push_back(norm(s.getAxis()));
  } else if (auto c = dyn_cast<nn::ConcatOp>(op)) {
    axes.push_back(norm(c.getAxis()));
  } else if (auto g = dyn_cast<nn::GatherOp>(op)) {
    axes.push_back(norm(g.getAxis()));
  }
  return axes;
}

struct Cloner {
  Cloner(OpBuilder &b, int64_t t, int64_t k, Value indices, std::string &why)
      : b(b), t(t), k(k), indices(indices), why(why) {}
  OpBuilder &b;
  int64_t t, k;
  /// The kept rows' flat indices b * T + t, [B, K].
  Value indices;
  std::string &why;
  IRMapping map;
  /// Q of a re-typed value's token axis: the axis holds P * T * Q entries,
  /// the token index scaled by Q (a reshape that merged inner axes into it).
  llvm::DenseMap<Value, int64_t> inner;
  SmallVector<Operation *> clones;
  /// Where a re-typed value's batch index is, where known: on `axis`, whose
  /// coordinate is (outer * B + batch) * inner + rest (inner = 1 and size B:
  /// the axis is the batch; a reshape may merge it with others).
  struct BatchAt {
    int64_t axis, inner;
  };
  llvm::DenseMap<Value, BatchAt> batchAxis;

  LogicalResult fail(Operation *op, const Twine &msg) {
    llvm::raw_string_ostream os(why);
    os << "'" << op->getName() << "' at " << op->getLoc() << " " << msg;
    for (Operation *c : clones)
      c->dropAllReferences();
    for (Operation *c : llvm::reverse(clones))
      c->erase();
    clones.clear();
    return failure();
  }

  int64_t innerOf(Value v) const {
    auto it = inner.find(v);
    return it == inner.end() ? 1 : it->second;
  }

  /// The re-typed result of reshape `old` given its re-typed input: the one
  /// token axis of the input (T -> K) is found whole in one output axis.
  FailureOr<Type> reshape(Operation *old, Value input, Value newInput) {
    auto in = cast<RankedTensorType>(input.getType());
    auto out = cast<RankedTensorType>(old->getResult(0).getType());
    if (!in.hasStaticShape() || !out.hasStaticShape())
      return failure();
    SmallVector<int64_t> axes = changedAxes(input.getType(), newInput.getType());
    if (axes.empty())
      return Type(out);
    if (axes.size() != 1)
      return failure();
    int64_t a = axes[0], q = innerOf(newInput);
    if (in.getDimSize(a) % (t * q) != 0)
      return failure();
    int64_t stride = q * product(in.getShape().drop_front(a + 1));
    for (int64_t o = 0; o < out.getRank(); ++o) {
      int64_t below = product(out.getShape().drop_front(o + 1));
      if (below > stride || below * out.getDimSize(o) <= stride)
        continue;
      if (stride % below != 0)
        return failure();
      int64_t qo = stride / below;
      if (out.getDimSize(o) % (t * qo) != 0)
        return failure();
      SmallVector<int64_t> shape(out.getShape());
      shape[o] = shape[o] / t * k;
      inner[old->getResult(0)] = qo; // re-keyed to the clone by the caller
      return Type(RankedTensorType::get(shape, out.getElementType()));
    }
    return failure();
  }

  /// A constant [..., T, T] whose entry (i, j) is one value where j <= i
  /// and another where j > i (a causal mask, boolean or additive), as the
  /// same pattern on [..., K, K], built before `user`: the kept rows are in
  /// increasing position, so row i may see row j of them exactly when
  /// j <= i. Null for anything else.
  /// A splat constant from outside the branch whose T-sized axes meet the
  /// token axes of a branch operand of `user` (the GQA expand's all-true
  /// condition): the same splat with K there. Null for anything else.
  Value splatOnRows(Value v, Operation *user, Operation *old) {
    auto cst = v.getDefiningOp<nn::ConstantOp>();
    auto type = dyn_cast<RankedTensorType>(v.getType());
    auto dense = cst ? dyn_cast<DenseElementsAttr>(cst.getValue()) : DenseElementsAttr();
    if (!dense || !dense.isSplat() || !type.hasStaticShape())
      return {};
    for (auto [was, now] : llvm::zip(old->getOperands(), user->getOperands())) {
      if (!map.contains(was))
        continue;
      auto nt = cast<RankedTensorType>(now.getType());
      int64_t off = nt.getRank() - type.getRank();
      SmallVector<int64_t> shape(type.getShape());
      bool changed = false;
      for (int64_t i : changedAxes(was.getType(), now.getType()))
        if (i - off >= 0 && shape[i - off] == t) {
          shape[i - off] = k;
          changed = true;
        }
      if (!changed)
        continue;
      auto newType = RankedTensorType::get(shape, type.getElementType());
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(user);
      return make<nn::ConstantOp>(cst.getLoc(), newType,
                                  DenseElementsAttr::get(newType, dense.getSplatValue<Attribute>()));
    }
    return {};
  }

  Value causalOnRows(Value v, Operation *user) {
    auto cst = v.getDefiningOp<nn::ConstantOp>();
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!cst || !type || type.getRank() < 2 || !type.hasStaticShape() ||
        type.getDimSize(type.getRank() - 1) != t || type.getDimSize(type.getRank() - 2) != t)
      return {};
    auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
    if (!dense)
      return {};
    auto values = dense.getValues<Attribute>();
    Attribute lower = values[0], upper = t > 1 ? values[1] : values[0];
    int64_t slices = type.getNumElements() / (t * t);
    for (int64_t s = 0; s < slices; ++s)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < t; ++j)
          if (values[(s * t + i) * t + j] != (j <= i ? lower : upper))
            return {};
    SmallVector<int64_t> shape(type.getShape());
    shape[shape.size() - 1] = shape[shape.size() - 2] = k;
    auto newType = RankedTensorType::get(shape, type.getElementType());
    SmallVector<Attribute> out;
    out.reserve(slices * k * k);
    for (int64_t s = 0; s < slices; ++s)
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j)
          out.push_back(j <= i ? lower : upper);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(user);
    auto made = nn::ConstantOp::create(b, cst.getLoc(), newType, DenseElementsAttr::get(newType, out));
    clones.push_back(made);
    return made.getResult();
  }

  int64_t batchSize() const { return cast<RankedTensorType>(indices.getType()).getDimSize(0); }

  template <typename OpTy, typename... Args>
  Value make(Location loc, Args &&...args) {
    auto op = OpTy::create(b, loc, std::forward<Args>(args)...);
    clones.push_back(op);
    return op->getResult(0);
  }

  /// A tensor from outside the branch with token axes of size T (a mask
  /// [1 or B, 1, T, T] held as a parameter or computed from the input, a
  /// position table [1, T, dh] such as RoPE's cos and sin), combined with a
  /// branch value W whose batch axis is 0: the same tensor at each
  /// sequence's kept positions, gathered at run time, shaped to broadcast
  /// against W (the batch on axis 0, K on W's token axes). Its axes align
  /// with W's from the right; each of W's token axes must meet a T axis of
  /// it (or a 1), its axis under W's batch axis (if any) must be 1 or B, and
  /// none of its other axes may be a T broadcast against a 1 of W. Built
  /// before `user`; null where that does not apply.
  Value tokensOnRows(Value v, Operation *user, Operation *old) {
    auto et = dyn_cast<RankedTensorType>(v.getType());
    if (!et || !et.hasStaticShape() || et.getRank() == 0)
      return {};
    int64_t bs = batchSize();
    for (auto [was, now] : llvm::zip(old->getOperands(), user->getOperands())) {
      if (!map.contains(was))
        continue;
      auto nt = cast<RankedTensorType>(now.getType());
      auto it = batchAxis.find(now);
      SmallVector<int64_t> axes = changedAxes(was.getType(), now.getType());
      int64_t r = nt.getRank(), off = r - et.getRank();
      if (it == batchAxis.end() || it->second.axis != 0 ||
          nt.getDimSize(0) != bs * it->second.inner || axes.empty() || off < 0 ||
          llvm::is_contained(axes, 0))
        continue;
      bool fits = true;
      SmallVector<int64_t> met;
      for (int64_t j = 0; j < et.getRank() && fits; ++j) {
        int64_t i = j + off, n = et.getDimSize(j);
        if (llvm::is_contained(axes, i)) {
          fits = n == t || n == 1; // a 1 broadcasts over the kept tokens
          if (n == t)
            met.push_back(i);
        } else if (i == 0) {
          fits = n == 1 || (n == bs && it->second.inner == 1);
        } else {
          // Beside W's other axes E's broadcast as before; only a T axis
          // broadcast against a 1 of W would bring the tokens back.
          fits = !(n == t && nt.getDimSize(i) == 1 && t != 1);
        }
      }
      if (!fits || met.empty())
        continue;
      return gatherTokens(v, user, r, off, met, it->second.inner);
    }
    return {};
  }

  /// tokensOnRows' gather: flat indices, one broadcast term per axis of `v`.
  /// `inner` > 1: W's axis 0 is the batch merged with `inner` others (heads),
  /// b * inner + h; the indices are repeated over them.
  Value gatherTokens(Value v, Operation *user, int64_t r, int64_t off, ArrayRef<int64_t> axes,
                     int64_t inner) {
    auto et = cast<RankedTensorType>(v.getType());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(user);
    Location loc = user->getLoc();
    int64_t bs = batchSize();
    Type i64 = b.getI64Type();
    SmallVector<int64_t> shape(r, 1);
    shape[0] = bs;
    for (int64_t j = 0; j < et.getRank(); ++j)
      if (j + off != 0)
        shape[j + off] = llvm::is_contained(axes, j + off) ? k : et.getDimSize(j);
    auto constI64 = [&](ArrayRef<int64_t> dims, ArrayRef<int64_t> values) {
      auto type = RankedTensorType::get(dims, i64);
      return make<nn::ConstantOp>(loc, type, DenseElementsAttr::get(type, values));
    };
    // Positions p[b, k] = idx[b, k] - b * T.
    SmallVector<int64_t> offsets;
    for (int64_t i = 0; i < bs; ++i)
      offsets.push_back(i * t);
    Value pos = make<nn::SubOp>(loc, indices.getType(), indices, constI64({bs, 1}, offsets));
    Value sum;
    SmallVector<int64_t> sumShape(r, 1);
    auto accumulate = [&](Value term, ArrayRef<int64_t> termShape) {
      for (int64_t i = 0; i < r; ++i)
        sumShape[i] = std::max(sumShape[i], termShape[i]);
      sum = sum ? make<nn::AddOp>(loc, RankedTensorType::get(sumShape, i64), sum, term) : term;
    };
    int64_t stride = 1;
    for (int64_t j = et.getRank() - 1; j >= 0; stride *= et.getDimSize(j), --j) {
      int64_t i = j + off, n = et.getDimSize(j);
      SmallVector<int64_t> termShape(r, 1);
      if (llvm::is_contained(axes, i)) {
        termShape[0] = bs;
        termShape[i] = k;
        Value scaled = make<nn::MulOp>(loc, indices.getType(), pos, constI64({}, {stride}));
        accumulate(make<nn::ReshapeOp>(loc, RankedTensorType::get(termShape, i64), scaled), termShape);
      } else if (n > 1) {
        SmallVector<int64_t> iota;
        for (int64_t e = 0; e < n; ++e)
          iota.push_back(e * stride);
        termShape[i] = n;
        accumulate(constI64(termShape, iota), termShape);
      }
    }
    Value flat = make<nn::ReshapeOp>(loc, RankedTensorType::get({et.getNumElements()}, et.getElementType()), v);
    if (sumShape != shape) // broadcast the indices to the full shape (batch, K)
      sum = make<nn::AddOp>(loc, RankedTensorType::get(shape, i64), sum,
                            constI64(shape, SmallVector<int64_t>(product(shape), 0)));
    if (inner > 1) {
      // [B, rest] -> [B, 1, rest] + zeros [B, inner, rest] -> [B * inner, rest].
      SmallVector<int64_t> one = {bs, 1}, many = {bs, inner}, merged = {bs * inner};
      for (int64_t i = 1; i < r; ++i) {
        one.push_back(shape[i]);
        many.push_back(shape[i]);
        merged.push_back(shape[i]);
      }
      Value lifted = make<nn::ReshapeOp>(loc, RankedTensorType::get(one, i64), sum);
      Value spread = make<nn::AddOp>(loc, RankedTensorType::get(many, i64), lifted,
                                     constI64(many, SmallVector<int64_t>(product(many), 0)));
      sum = make<nn::ReshapeOp>(loc, RankedTensorType::get(merged, i64), spread);
      shape = merged;
    }
    return make<nn::GatherOp>(loc, RankedTensorType::get(shape, et.getElementType()), flat, sum,
                              b.getI64IntegerAttr(0));
  }

  /// The batch axis of `c`'s result, from its operands' (the results of `c`
  /// have their new types): carried through transposes, reshapes that keep
  /// it whole, matmul batch and row/column axes, and ops whose result axes
  /// align with their operands' from the right.
  void trackBatch(Operation *old, Operation *c) {
    int64_t bs = batchSize();
    for (auto [was, now] : llvm::zip(old->getOperands(), c->getOperands())) {
      auto it = batchAxis.find(now);
      if (!map.contains(was) || it == batchAxis.end())
        continue;
      BatchAt at = it->second;
      int64_t ba = at.axis;
      auto nt = cast<RankedTensorType>(now.getType());
      for (Value r : c->getResults()) {
        auto rt = dyn_cast<RankedTensorType>(r.getType());
        if (!rt)
          continue;
        std::optional<BatchAt> out;
        if (auto tr = dyn_cast<nn::TransposeOp>(c)) {
          // No perm: ONNX's default, the axes reversed.
          SmallVector<int64_t> perm;
          if (auto p = tr.getPerm())
            perm.assign(p->begin(), p->end());
          else
            for (int64_t i = nt.getRank() - 1; i >= 0; --i)
              perm.push_back(i);
          for (int64_t i = 0; i < static_cast<int64_t>(perm.size()); ++i)
            if (perm[i] == ba)
              out = BatchAt{i, at.inner};
        } else if (isa<nn::ReshapeOp>(c)) {
          // Row-major order is kept: the batch index keeps its element
          // stride; find the axis that holds it whole.
          int64_t stride = at.inner * product(nt.getShape().drop_front(ba + 1));
          for (int64_t o = 0; o < rt.getRank(); ++o) {
            int64_t below = product(rt.getShape().drop_front(o + 1));
            if (below <= stride && stride % below == 0 && (rt.getDimSize(o) * below) % (stride * bs) == 0) {
              out = BatchAt{o, stride / below};
              break;
            }
          }
        } else if (isa<nn::MatMulOp>(c)) {
          bool lhs = now == c->getOperand(0);
          int64_t r = nt.getRank();
          // Batch dims and the lhs rows or rhs columns carry over; the
          // contracted axis does not.
          if (lhs ? ba != r - 1 : ba != r - 2)
            out = BatchAt{ba + rt.getRank() - r, at.inner};
        } else if (auto un = dyn_cast<nn::UnsqueezeOp>(c)) {
          // The result's axes not listed are the operand's, in order.
          SmallVector<int64_t> inserted;
          for (int64_t a : un.getAxes())
            inserted.push_back(a < 0 ? a + rt.getRank() : a);
          for (int64_t o = 0, src = 0; o < rt.getRank(); ++o) {
            if (llvm::is_contained(inserted, o))
              continue;
            if (src++ == ba)
              out = BatchAt{o, at.inner};
          }
        } else if (isa<nn::SqueezeOp>(c)) {
          // Dropped axes have size 1; the batch axis (size >= B) stays.
          int64_t dropped = 0;
          for (int64_t i = 0; i < ba; ++i)
            dropped += nt.getDimSize(i) == 1 && rt.getRank() < nt.getRank();
          if (rt.getRank() + dropped <= nt.getRank())
            out = BatchAt{ba - (nt.getRank() - rt.getRank() == 0 ? 0 : dropped), at.inner};
        } else if (auto cat = dyn_cast<nn::ConcatOp>(c)) {
          int64_t axis = cat.getAxis() < 0 ? cat.getAxis() + nt.getRank() : cat.getAxis();
          if (axis != ba)
            out = at;
        } else if (!isa<nn::ReduceMeanOp, nn::ReduceSumOp, nn::ReduceMaxOp, nn::ReduceMinOp,
                        nn::ReduceProdOp, nn::ArgReduceOp, nn::GatherOp>(c)) {
          out = BatchAt{ba + rt.getRank() - nt.getRank(), at.inner};
        }
        if (out && out->axis >= 0 && out->axis < rt.getRank() &&
            rt.getDimSize(out->axis) % (bs * out->inner) == 0)
          batchAxis[r] = *out;
      }
      return;
    }
  }

  FailureOr<Value> run(ArrayRef<Operation *> ops, Value input, Value output, Value rows) {
    llvm::DenseSet<Operation *> inBranch(ops.begin(), ops.end());
    map.map(input, rows);
    batchAxis[rows] = BatchAt{0, 1};
    MLIRContext *ctx = b.getContext();
    for (Operation *op : ops) {
      if (!isa<nn::NNDialect>(op->getDialect()))
        return fail(op, "is not an nn op; only nn ops can run on the routed rows");
      if (op->getNumRegions() || isa<nn::OnnxNodeOp, nn::ConvOp, nn::MaxPoolOp,
                                     nn::GlobalAveragePoolOp, nn::ScatterAddOp>(op))
        return fail(op, "has no row-wise form; it cannot run on the routed rows only");
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (r != output && !inBranch.contains(user))
            return fail(op, "has a result used outside the sublayer branch");
      for (int64_t axis : positionalAxes(op))
        for (Value v : op->getOperands())
          if (map.contains(v) && llvm::is_contained(changedAxes(v.getType(), map.lookup(v).getType()), axis))
            return fail(op, "selects positions along the token axis");
      Operation *c = b.clone(*op, map);
      clones.push_back(c);
      for (OpOperand &use : c->getOpOperands())
        if (!map.contains(op->getOperand(use.getOperandNumber()))) {
          if (Value splat = splatOnRows(use.get(), c, op))
            use.set(splat);
          else if (Value rowsOnly = causalOnRows(use.get(), c))
            use.set(rowsOnly);
          else if (Value gathered = tokensOnRows(use.get(), c, op))
            use.set(gathered);
        }
      SmallVector<Type> types;
      if (auto infer = dyn_cast<InferTypeOpInterface>(c)) {
        if (failed(infer.inferReturnTypes(ctx, std::nullopt, c->getOperands(), c->getAttrDictionary(),
                                          c->getPropertiesStorage(), c->getRegions(), types)))
          return fail(op, "cannot take the routed rows: an operand from outside the branch has a "
                          "token axis (a mask or position table?)");
      } else if (isa<nn::ReshapeOp>(op)) {
        FailureOr<Type> rt = reshape(op, op->getOperand(0), c->getOperand(0));
        if (failed(rt))
          return fail(op, "splits or reorders the token axis");
        types.push_back(*rt);
      } else if (isa<nn::LayerNormOp, nn::RMSNormOp, nn::SoftmaxOp, nn::GeluOp, nn::CastOp,
                     nn::BitcastOp, nn::StopGradientOp, nn::CumSumOp, nn::BatchNormOp>(op)) {
        auto x = cast<RankedTensorType>(c->getOperand(0).getType());
        types.push_back(
            RankedTensorType::get(x.getShape(), cast<ShapedType>(op->getResult(0).getType()).getElementType()));
      } else {
        return fail(op, "has no known result type on the routed rows");
      }
      int64_t q = 1;
      for (Value v : op->getOperands())
        if (map.contains(v) && !changedAxes(v.getType(), map.lookup(v).getType()).empty()) {
          q = innerOf(map.lookup(v));
          break;
        }
      for (auto [old, neu, type] : llvm::zip(op->getResults(), c->getResults(), types)) {
        neu.setType(type);
        auto it = inner.find(old);
        if (it != inner.end()) {
          inner[neu] = it->second;
          inner.erase(it);
        } else if (q != 1) {
          inner[neu] = q;
        }
      }
      trackBatch(op, c);
      if (failed(mlir::verify(c)))
        return fail(op, "does not verify on the routed rows");
    }
    Value result = map.lookupOrNull(output);
    if (!result)
      return fail(output.getDefiningOp() ? output.getDefiningOp() : input.getParentBlock()->getParentOp(),
                  "is not computed from the stream state");
    return result;
  }
};

} // namespace

FailureOr<Value> rewire::cloneBranchOnRows(OpBuilder &b, ArrayRef<Operation *> ops, Value input,
                                           Value output, Value rows, Value indices, std::string &why) {
  auto in = cast<RankedTensorType>(input.getType());
  auto rt = cast<RankedTensorType>(rows.getType());
  Cloner cloner(b, in.getDimSize(1), rt.getDimSize(1), indices, why);
  return cloner.run(ops, input, output, rows);
}
