//===- HandlersIndexing.cpp - GatherND, GatherElements, Pad ---------------===//
//
// Handlers whose ONNX op is an indexing pattern that nn.gather (with linear
// indices into a flattened tensor) or nn.concat expresses exactly:
//   GatherND(data, indices)       constant indices: one nn.gather of the
//                                 first K dims flattened;
//   GatherElements(data, idx, a)  nn.gather of the flattened data at
//                                 idx * stride(a) + the other coordinates;
//                                 an index out of range becomes one the
//                                 run-time index check reports;
//   Pad(x, pads, value, axes)     constant: nn.concat with filled blocks;
//                                 edge / reflect: nn.gather with constant
//                                 index vectors (negative pads crop).
// So no new op needs a lowering, a reverse rule (gather's scatter-add) or an
// exporter case.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

#include "rewire/Support/Checked.h"
#include "rewire/Support/Shape.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;
using P = rewire::nn::ComparePredicate;

namespace {

FailureOr<Value> reshape(NodeContext &c, Value x, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, typeOf(x).getElementType());
  auto op = nn::ReshapeOp::create(c.b, c.loc(), type, x);
  if (failed(op.verify())) {
    op.erase();
    return failure();
  }
  return op.getResult();
}

FailureOr<Value> gather(NodeContext &c, Value data, Value indices, int64_t axis) {
  auto op = createInferred<nn::GatherOp>(
      c, {data, indices}, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(axis))});
  if (failed(op))
    return failure();
  return op->getResult();
}

/// Normalizes run-time indices `ix` (i64) of an axis of `n`: a negative
/// index counts from the end; one outside [-n, n) is flagged in `bad`.
Value normalizedIndex(Expr &e, Value ix, int64_t n, Value &bad) {
  Value zero = e.num(ix, 0), size = e.num(ix, double(n));
  Value norm = e.where(e.cmp(P::lt, ix, zero), e.add(ix, size), ix);
  Value outside = e.logical(nn::LogicalKind::or_, e.cmp(P::lt, norm, zero), e.cmp(P::ge, norm, size));
  bad = bad ? e.logical(nn::LogicalKind::or_, bad, outside) : outside;
  return norm;
}

/// The offsets, into data flattened to [batch x lead, rest...], of the
/// index tuples of GatherND/ScatterND (`b` batch dims): [batch, tuples].
/// Run-time tuples out of range get offset batch x lead, one past the
/// table, which the gather's or scatter's run-time check reports.
FailureOr<Value> tupleOffsets(NodeContext &c, RankedTensorType dt, Value idx, int64_t b) {
  auto it = typeOf(idx);
  if (!dt.hasStaticShape() || !it.hasStaticShape() || it.getRank() < 1 ||
      !isa<IntegerType>(it.getElementType()))
    return c.error() << "expects static data and integer indices of rank >= 1";
  int64_t k = it.getDimSize(it.getRank() - 1);
  if (b < 0 || b >= it.getRank() || b >= dt.getRank())
    return c.error() << "batch_dims " << b << " must be below the ranks of data and indices";
  for (int64_t d = 0; d < b; ++d)
    if (dt.getDimSize(d) != it.getDimSize(d))
      return c.error() << "batch dim " << d << " differs between data (" << dt.getDimSize(d)
                       << ") and indices (" << it.getDimSize(d) << ")";
  if (k < 1 || b + k > dt.getRank())
    return c.error() << "the last dim of indices (" << k << ") must be in [1, "
                     << dt.getRank() - b << "]";
  ArrayRef<int64_t> dshape = dt.getShape();
  SmallVector<int64_t> lead(dshape.begin() + b, dshape.begin() + b + k), strides = stridesOf(lead);
  int64_t batch = 1, leadSize = 1, tuples = 1;
  for (int64_t d = 0; d < b; ++d)
    batch *= dshape[d];
  for (int64_t d : lead)
    leadSize *= d;
  for (int64_t d = b; d + 1 < it.getRank(); ++d)
    tuples *= it.getDimSize(d);
  if (auto vals = c.constantInts(idx)) {
    SmallVector<int64_t> lin;
    for (size_t at = 0; at < vals->size(); at += k) {
      int64_t l = static_cast<int64_t>(at / k) / tuples * leadSize;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = (*vals)[at + j];
        if (v < -lead[j] || v >= lead[j])
          return c.error() << "index " << v << " is out of range for dim " << b + j
                           << " of size " << lead[j];
        l += (v < 0 ? v + lead[j] : v) * strides[j];
      }
      lin.push_back(l);
    }
    return i64Constant(c, {batch, tuples}, lin);
  }
  Expr e{c};
  Value ix = e.reshape(e.cast(idx, c.b.getI64Type()), {batch, tuples, k});
  SmallVector<int64_t> batchBase;
  for (int64_t i = 0; i < batch; ++i)
    batchBase.push_back(i * leadSize);
  Value linear = i64Constant(c, {batch, 1}, batchBase), bad;
  for (int64_t j = 0; j < k; ++j) {
    auto col = gather(c, ix, i64Constant(c, {}, {j}), 2);
    if (failed(col))
      return failure();
    Value norm = normalizedIndex(e, *col, lead[j], bad);
    linear = e.add(linear, e.mul(norm, e.num(ix, double(strides[j]))));
  }
  linear = e.where(bad, e.num(ix, double(batch * leadSize)), linear);
  if (!linear)
    return failure();
  return linear;
}

/// The offsets, into data flattened to 1-D, of GatherElements' and
/// ScatterElements' indices along `axis` (shape of the indices); run-time
/// ones out of range get offset |data|.
FailureOr<Value> elementOffsets(NodeContext &c, RankedTensorType dt, Value idx, int64_t axis) {
  auto it = typeOf(idx);
  if (!dt.hasStaticShape() || !it.hasStaticShape() || dt.getRank() != it.getRank() ||
      dt.getRank() < 1 || !isa<IntegerType>(it.getElementType()))
    return c.error() << "expects static data and integer indices of the same rank, got "
                     << dt << " and " << it;
  int64_t rank = dt.getRank();
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << axis << " is out of range for rank " << rank;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && it.getDimSize(d) > dt.getDimSize(d))
      return c.error() << "indices dim " << d << " (" << it.getDimSize(d)
                       << ") exceeds the data's (" << dt.getDimSize(d) << ")";
  SmallVector<int64_t> strides = stridesOf(dt.getShape());
  int64_t total = dt.getNumElements(), dim = dt.getDimSize(axis);
  if (!fitsBuiltConstant(c, it.getNumElements(), "the index map of the element indices"))
    return failure();
  // The offset of every index position without its own axis coordinate.
  SmallVector<int64_t> base(it.getNumElements());
  SmallVector<int64_t> pos(rank, 0);
  for (int64_t flat = 0; flat < it.getNumElements(); ++flat) {
    int64_t rem = flat, off = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      pos[d] = rem % it.getDimSize(d);
      rem /= it.getDimSize(d);
      if (d != axis)
        off += pos[d] * strides[d];
    }
    base[flat] = off;
  }
  if (auto vals = c.constantInts(idx)) {
    SmallVector<int64_t> lin;
    for (auto [i, v] : llvm::enumerate(*vals)) {
      if (v < -dim || v >= dim)
        return c.error() << "index " << v << " is out of range for axis " << axis
                         << " of size " << dim;
      lin.push_back(base[i] + (v < 0 ? v + dim : v) * strides[axis]);
    }
    return i64Constant(c, it.getShape(), lin);
  }
  Expr e{c};
  Value bad;
  Value norm = normalizedIndex(e, e.cast(idx, c.b.getI64Type()), dim, bad);
  Value lin = e.add(e.mul(norm, e.num(norm, double(strides[axis]))),
                    i64Constant(c, it.getShape(), base));
  lin = e.where(bad, e.num(norm, double(total)), lin);
  if (!lin)
    return failure();
  return lin;
}

/// GatherND(data, indices, batch_dims) as one gather of the flattened data
/// at the tuples' offsets.
HandlerResult gatherND(NodeContext &c) {
  auto data = c.tensorInput(0), idx = c.tensorInput(1);
  if (failed(data) || failed(idx))
    return failure();
  auto dt = typeOf(*data), it = typeOf(*idx);
  int64_t b = c.intAttrOr("batch_dims", 0);
  auto lin = tupleOffsets(c, dt, *idx, b);
  if (failed(lin))
    return failure();
  int64_t k = it.getDimSize(it.getRank() - 1);
  ArrayRef<int64_t> dshape = dt.getShape();
  int64_t rest = 1;
  for (int64_t d = b + k; d < dt.getRank(); ++d)
    rest *= dshape[d];
  SmallVector<int64_t> flatShape = {rest ? dt.getNumElements() / rest : 0};
  flatShape.append(dshape.begin() + b + k, dshape.end());
  SmallVector<int64_t> outShape(it.getShape().drop_back());
  outShape.append(dshape.begin() + b + k, dshape.end());
  auto flat = reshape(c, *data, flatShape);
  if (failed(flat))
    return failure();
  auto g = gather(c, *flat, *lin, 0);
  if (failed(g))
    return failure();
  return single(reshape(c, *g, outShape));
}

HandlerResult gatherElements(NodeContext &c) {
  auto data = c.tensorInput(0), idx = c.tensorInput(1);
  if (failed(data) || failed(idx))
    return failure();
  return single(gatherElementsOf(c, *data, *idx, c.intAttrOr("axis", 0)));
}

/// `table` ([P, rest...], float) with rows `offsets` ([M], i64) written by
/// `updates` ([M, rest...]): replaced (reduction none; duplicate offsets
/// sum, ONNX leaves them undefined) or added to (add), through
/// nn.scatter_add (into `table` itself for add).
FailureOr<Value> scatterRows(NodeContext &c, Value table, Value offsets, Value updates,
                             StringRef reduction) {
  auto tt = typeOf(table);
  if (!isa<FloatType>(tt.getElementType()))
    return c.error() << "expects float data, got " << tt;
  if (reduction != "none" && reduction != "add")
    return c.error() << "reduction '" << reduction << "' is not supported (none, add)";
  Expr e{c};
  // scatter_add's result type is the table's (it is not inferred).
  auto scatter = [&](RankedTensorType type, Value rows, Value base) -> Value {
    auto op = nn::ScatterAddOp::create(c.b, c.loc(), type, rows, offsets, base);
    if (failed(op.verify())) {
      op.erase();
      return {};
    }
    return op;
  };
  if (reduction == "add") {
    if (Value sum = scatter(tt, updates, table))
      return sum;
    return failure();
  }
  Value sum = scatter(tt, updates, Value());
  if (!sum)
    return failure();
  int64_t m = typeOf(offsets).getNumElements();
  Value ones = scatter(RankedTensorType::get({tt.getDimSize(0)}, tt.getElementType()),
                       splatConstant(c, RankedTensorType::get({m}, tt.getElementType()), 1.0), Value());
  SmallVector<int64_t> maskShape(tt.getRank(), 1);
  maskShape[0] = tt.getDimSize(0);
  Value written = e.cmp(P::gt, e.reshape(ones, maskShape), e.num(table, 0));
  Value r = e.where(written, sum, table);
  if (!r)
    return failure();
  return r;
}

/// ScatterND(data, indices, updates, reduction).
HandlerResult scatterND(NodeContext &c) {
  auto data = c.tensorInput(0), idx = c.tensorInput(1), upd = c.tensorInput(2);
  if (failed(data) || failed(idx) || failed(upd))
    return failure();
  auto dt = typeOf(*data), it = typeOf(*idx);
  auto lin = tupleOffsets(c, dt, *idx, 0);
  if (failed(lin))
    return failure();
  int64_t k = it.getDimSize(it.getRank() - 1), m = it.getNumElements() / k, rest = 1;
  for (int64_t d = k; d < dt.getRank(); ++d)
    rest *= dt.getDimSize(d);
  SmallVector<int64_t> flatShape = {rest ? dt.getNumElements() / rest : 0}, updShape = {m};
  flatShape.append(dt.getShape().begin() + k, dt.getShape().end());
  updShape.append(dt.getShape().begin() + k, dt.getShape().end());
  if (typeOf(*upd).getNumElements() != m * rest)
    return c.error() << "updates " << upd->getType() << " do not match indices " << it
                     << " into " << dt;
  auto flat = reshape(c, *data, flatShape), updates = reshape(c, *upd, updShape),
       offsets = reshape(c, *lin, {m});
  if (failed(flat) || failed(updates) || failed(offsets))
    return failure();
  auto r = scatterRows(c, *flat, *offsets, *updates, c.stringAttr("reduction").value_or("none"));
  if (failed(r))
    return failure();
  return single(reshape(c, *r, dt.getShape()));
}

/// ScatterElements(data, indices, updates, axis, reduction) and Scatter
/// (its opset 9-10 name).
HandlerResult scatterElements(NodeContext &c) {
  auto data = c.tensorInput(0), idx = c.tensorInput(1), upd = c.tensorInput(2);
  if (failed(data) || failed(idx) || failed(upd))
    return failure();
  auto dt = typeOf(*data), it = typeOf(*idx);
  if (typeOf(*upd).getShape() != it.getShape())
    return c.error() << "updates " << upd->getType() << " must have the shape of indices " << it;
  auto lin = elementOffsets(c, dt, *idx, c.intAttrOr("axis", 0));
  if (failed(lin))
    return failure();
  int64_t n = it.getNumElements();
  auto flat = reshape(c, *data, {dt.getNumElements()}), updates = reshape(c, *upd, {n}),
       offsets = reshape(c, *lin, {n});
  if (failed(flat) || failed(updates) || failed(offsets))
    return failure();
  auto r = scatterRows(c, *flat, *offsets, *updates, c.stringAttr("reduction").value_or("none"));
  if (failed(r))
    return failure();
  return single(reshape(c, *r, dt.getShape()));
}

} // namespace

FailureOr<Value> rewire::onnx_import::gatherElementsOf(NodeContext &c, Value data, Value idx,
                                                       int64_t axis) {
  auto dt = typeOf(data);
  auto lin = elementOffsets(c, dt, idx, axis);
  if (failed(lin))
    return failure();
  auto flat = reshape(c, data, {dt.getNumElements()});
  if (failed(flat))
    return failure();
  return gather(c, *flat, *lin, 0);
}

namespace {

/// A constant of `shape` filled with `v` in `x`'s element type.
Value filled(NodeContext &c, Value x, ArrayRef<int64_t> shape, Attribute v) {
  auto type = RankedTensorType::get(shape, typeOf(x).getElementType());
  return nn::ConstantOp::create(c.b, c.loc(), type, DenseElementsAttr::get(type, v));
}

/// The dims an op's `axes` names (Pad's input, CenterCropPad's and
/// Resize's attribute), negatives counted from the end and each at most
/// once; every dim when `given` is absent.
FailureOr<SmallVector<int64_t>> axesOrAll(NodeContext &c, std::optional<SmallVector<int64_t>> given,
                                          int64_t rank) {
  SmallVector<int64_t> axes;
  if (!given) {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
    return axes;
  }
  for (int64_t ax : *given) {
    int64_t d = ax;
    if (!normalizeAxisInPlace(d, rank) || llvm::is_contained(axes, d))
      return c.error() << "axis " << ax << " is out of range for rank " << rank << " or repeated";
    axes.push_back(d);
  }
  return axes;
}

HandlerResult pad(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  if (!xt.hasStaticShape())
    return c.error() << "expects a static input, got " << xt;
  int64_t rank = xt.getRank();
  auto padsV = c.constantIntsInput(1, "pads");
  if (failed(padsV))
    return failure();
  std::optional<SmallVector<int64_t>> given;
  if (c.input(3)) {
    auto a = c.constantIntsInput(3, "axes");
    if (failed(a))
      return failure();
    given = *a;
  }
  auto axesOr = axesOrAll(c, given, rank);
  if (failed(axesOr))
    return failure();
  SmallVector<int64_t> axes = *axesOr;
  size_t n = axes.size();
  if (padsV->size() != 2 * n)
    return c.error() << "pads has " << padsV->size() << " entries, expected " << 2 * n;
  std::string mode = c.stringAttr("mode").value_or("constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    return c.error() << "mode '" << mode << "' is not supported (constant, edge, reflect, wrap)";
  Type elt = xt.getElementType();
  Attribute fill;
  if (Value v = c.input(2)) {
    auto cst = v.getDefiningOp<nn::ConstantOp>();
    auto dense = cst ? dyn_cast<DenseElementsAttr>(cst.getValue()) : DenseElementsAttr();
    if (!dense || dense.getNumElements() != 1 || dense.getElementType() != elt)
      return c.error() << "constant_value must be a constant scalar of the input's type";
    fill = *dense.value_begin<Attribute>();
  } else if (auto ft = dyn_cast<FloatType>(elt)) {
    fill = FloatAttr::get(ft, 0.0);
  } else {
    fill = IntegerAttr::get(elt, 0);
  }
  Value y = *x;
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = axes[i], before = (*padsV)[i], after = (*padsV)[i + n];
    if (before == 0 && after == 0)
      continue;
    SmallVector<int64_t> shape(typeOf(y).getShape());
    int64_t len = shape[axis];
    if (before < -len || after < -len || before + after + len < 0 ||
        before > (1 << 20) || after > (1 << 20))
      return c.error() << "pads " << before << ", " << after << " are out of range for axis "
                       << axis << " of size " << len;
    if (mode == "wrap" && len == 0)
      return c.error() << "wrap padding needs a non-empty axis " << axis;
    if (mode == "reflect" && (before >= len || after >= len))
      return c.error() << "reflect pads must be smaller than the axis size " << len;
    if (mode != "constant" || before < 0 || after < 0) {
      // Every mode as a gather with a constant index vector: reflect
      // mirrors without repeating the edge, edge clamps, wrap repeats the
      // axis periodically, and constant mode only crops here (its fill is
      // concatenated below).
      SmallVector<int64_t> idx;
      int64_t from = -before, to = len + after;
      for (int64_t j = from; j < to; ++j) {
        int64_t k = j;
        if (mode == "reflect" && len > 1) {
          while (k < 0 || k >= len)
            k = k < 0 ? -k : 2 * (len - 1) - k;
        } else if (mode == "wrap") {
          k = ((k % len) + len) % len;
        } else {
          k = std::clamp<int64_t>(k, 0, len - 1);
        }
        if (mode == "constant" && (j < 0 || j >= len))
          continue;
        idx.push_back(k);
      }
      auto g = gather(c, y, i64Constant(c, {static_cast<int64_t>(idx.size())}, idx), axis);
      if (failed(g))
        return failure();
      y = *g;
      if (mode != "constant")
        continue;
      before = std::max<int64_t>(before, 0);
      after = std::max<int64_t>(after, 0);
      shape.assign(typeOf(y).getShape().begin(), typeOf(y).getShape().end());
    }
    SmallVector<Value> parts;
    if (before > 0) {
      shape[axis] = before;
      parts.push_back(filled(c, y, shape, fill));
    }
    parts.push_back(y);
    if (after > 0) {
      shape[axis] = after;
      parts.push_back(filled(c, y, shape, fill));
    }
    if (parts.size() == 1)
      continue;
    auto cat = createInferred<nn::ConcatOp>(
        c, parts, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(axis))});
    if (failed(cat))
      return failure();
    y = cat->getResult();
  }
  return SmallVector<Value>{y};
}

/// CenterCropPad(input, shape, axes): each named axis cropped to the
/// centered window (start rounded down) or zero-padded equally on both
/// sides (the extra element at the end).
HandlerResult centerCropPad(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto shape = c.constantIntsInput(1, "shape");
  if (failed(x) || failed(shape))
    return failure();
  auto xt = typeOf(*x);
  int64_t rank = xt.getRank();
  if (!xt.hasStaticShape())
    return c.error() << "expects a static input, got " << xt;
  auto axesOr = axesOrAll(c, c.intsAttr("axes"), rank);
  if (failed(axesOr))
    return failure();
  SmallVector<int64_t> axes = *axesOr;
  if (shape->size() != axes.size())
    return c.error() << "shape has " << shape->size() << " entries for " << axes.size() << " axes";
  Expr e{c};
  Value y = *x;
  for (auto [axis, want] : llvm::zip(axes, *shape)) {
    int64_t have = xt.getDimSize(axis);
    if (want < 1 || want > (1 << 24))
      return c.error() << "target size " << want << " is out of range";
    if (want < have) {
      int64_t start = (have - want) / 2;
      y = e.slice(y, axis, start, start + want);
    } else if (want > have) {
      int64_t before = (want - have) / 2, after = want - have - before;
      SmallVector<Value> parts;
      SmallVector<int64_t> side(typeOf(y).getShape());
      if (before) {
        side[axis] = before;
        parts.push_back(splatConstant(c, RankedTensorType::get(side, xt.getElementType()), 0));
      }
      parts.push_back(y);
      side[axis] = after;
      parts.push_back(splatConstant(c, RankedTensorType::get(side, xt.getElementType()), 0));
      y = e.concat(parts, axis);
    }
    if (!y)
      return failure();
  }
  return e.done(y);
}

/// GridSample(X [N, C, S...], grid [N, O..., r]) for r = 1..3 spatial dims,
/// as ONNX's reference computes it: grid coordinates (x first, so reversed
/// against X's dims) are unnormalized (align_corners), rounded half to even
/// for nearest, and outside the border range clamped (border) or reflected
/// (reflection); then each tap (1 nearest, 2^r linear, 4^r cubic with
/// A = -0.75) reads X at its index -- 0 outside for zeros padding, else the
/// clamped or reflected index -- weighted by the product of its per-dim
/// coefficients. Reads are one gather of X as [N x |S|, C] rows per tap.
HandlerResult gridSample(NodeContext &c) {
  auto x = c.tensorInput(0), grid = c.tensorInput(1);
  if (failed(x) || failed(grid))
    return failure();
  auto xt = typeOf(*x), gt = typeOf(*grid);
  int64_t r = xt.getRank() - 2;
  if (!xt.hasStaticShape() || !gt.hasStaticShape() || r < 1 || r > 3 ||
      !isa<FloatType>(xt.getElementType()) || gt.getRank() != r + 2 ||
      gt.getDimSize(0) != xt.getDimSize(0) || gt.getDimSize(r + 1) != r)
    return c.error() << "expects static X [N, C, D1..Dr] (r <= 3) and grid [N, O1..Or, r], got " << xt
                     << " and " << gt;
  std::string mode = c.stringAttr("mode").value_or(c.opset() < 20 ? "bilinear" : "linear");
  if (mode == "bilinear")
    mode = "linear";
  if (mode == "bicubic")
    mode = "cubic";
  std::string padding = c.stringAttr("padding_mode").value_or("zeros");
  bool align = c.intAttrOr("align_corners", 0) != 0;
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return c.error() << "mode '" << mode << "' is not nearest, linear or cubic";
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return c.error() << "padding_mode '" << padding << "' is not zeros, border or reflection";
  Expr e{c};
  int64_t batch = xt.getDimSize(0), channels = xt.getDimSize(1), spatial = 1;
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < r; ++i) {
    dims.push_back(xt.getDimSize(i + 2));
    spatial *= dims.back();
  }
  auto num = [&](Value like, double v) { return e.num(like, v); };
  // The coordinate along X's dim i (grid component r - 1 - i).
  SmallVector<Value> coord(r);
  SmallVector<double> lo(r), hi(r);
  for (int64_t i = 0; i < r; ++i) {
    Value n = e.squeeze(e.slice(*grid, r + 1, r - 1 - i, r - i), r + 1);
    double d = double(dims[i]);
    Value v = align ? e.mul(e.add(n, num(n, 1)), num(n, (d - 1) / 2))
                    : e.div(e.sub(e.mul(e.add(n, num(n, 1)), num(n, d)), num(n, 1)), num(n, 2));
    if (mode == "nearest")
      v = e.un<nn::RoundOp>(v);
    coord[i] = v;
    lo[i] = align ? 0 : -0.5;
    hi[i] = align ? d - 1 : d - 0.5;
  }
  // Reflect v into [a, b] as ONNX's _gs_reflect does: k = floor(dx / span)
  // whole spans past the border, then rest = dx - k span from the near
  // border (k even) or the far one (k odd).
  auto reflect = [&](Value v, double a, double b) {
    double span = b - a;
    if (span <= 0)
      return num(v, a);
    auto fold = [&](Value dx, double evenFrom, double evenSign, double oddFrom) {
      Value k = e.un<nn::FloorOp>(e.div(dx, num(dx, span)));
      Value rest = e.sub(dx, e.mul(k, num(dx, span)));
      Value even = e.cmp(P::eq, e.sub(k, e.mul(num(k, 2), e.un<nn::FloorOp>(e.div(k, num(k, 2))))),
                         num(k, 0));
      Value signedRest = e.mul(rest, num(rest, evenSign));
      return e.where(even, e.add(num(v, evenFrom), signedRest), e.sub(num(v, oddFrom), signedRest));
    };
    Value below = fold(e.sub(num(v, a), v), a, 1, b);
    Value above = fold(e.sub(v, num(v, b)), b, -1, a);
    return e.where(e.cmp(P::lt, v, num(v, a)), below, e.where(e.cmp(P::gt, v, num(v, b)), above, v));
  };
  for (int64_t i = 0; i < r; ++i) {
    Value v = coord[i];
    if (padding == "border")
      v = e.where(e.logical(nn::LogicalKind::or_, e.cmp(P::lt, v, num(v, lo[i])), e.cmp(P::gt, v, num(v, hi[i]))),
                  e.max(e.min(v, num(v, double(dims[i] - 1))), num(v, 0)), v);
    else if (padding == "reflection")
      v = reflect(v, lo[i], hi[i]);
    coord[i] = v;
  }
  // Taps per dim: offsets from base = floor(v) (v itself for nearest).
  SmallVector<int64_t> offsets = mode == "nearest" ? SmallVector<int64_t>{0}
                                 : mode == "linear" ? SmallVector<int64_t>{0, 1}
                                                    : SmallVector<int64_t>{-1, 0, 1, 2};
  int64_t per = static_cast<int64_t>(offsets.size());
  SmallVector<Value> base(r), frac(r);
  for (int64_t i = 0; i < r; ++i) {
    base[i] = mode == "nearest" ? coord[i] : e.un<nn::FloorOp>(coord[i]);
    frac[i] = e.sub(coord[i], base[i]);
  }
  auto coefficient = [&](Value f, int64_t t) -> Value {
    if (mode == "nearest")
      return Value();
    if (mode == "linear")
      return t == 0 ? e.sub(num(f, 1), f) : f;
    double a = -0.75;
    // Keys' cubic at distance |t - f| for the taps -1, 0, 1, 2.
    Value dist = t <= 0 ? e.add(f, num(f, double(-t))) : e.sub(num(f, double(t)), f);
    if (t == 0 || t == 1)
      return e.add(e.mul(e.mul(e.sub(e.mul(num(f, a + 2), dist), num(f, a + 3)), dist), dist), num(f, 1));
    return e.sub(e.mul(e.add(e.mul(e.sub(e.mul(num(f, a), dist), num(f, 5 * a)), dist), num(f, 8 * a)), dist),
                 num(f, 4 * a));
  };
  // X as rows [N x |S|, C]; each output point's batch offset.
  SmallVector<int64_t> perm = {0};
  for (int64_t i = 0; i < r; ++i)
    perm.push_back(i + 2);
  perm.push_back(1);
  Value rows = e.reshape(e.transpose(*x, perm), {batch * spatial, channels});
  SmallVector<int64_t> boShape(r + 1, 1), bo;
  boShape[0] = batch;
  for (int64_t n = 0; n < batch; ++n)
    bo.push_back(n * spatial);
  Value batchOffset = i64Constant(c, boShape, bo);
  SmallVector<int64_t> strides(r, 1);
  for (int64_t i = r - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  int64_t taps = 1;
  for (int64_t i = 0; i < r; ++i)
    taps *= per;
  Value acc;
  for (int64_t t = 0; t < taps; ++t) {
    Value weight, valid, index = batchOffset;
    for (int64_t i = 0, rem = t; i < r; ++i, rem /= per) {
      int64_t off = offsets[rem % per];
      Value pos = off ? e.add(base[i], num(base[i], double(off))) : base[i];
      if (Value w = coefficient(frac[i], off))
        weight = weight ? e.mul(weight, w) : w;
      if (padding == "zeros") {
        Value inside = e.logical(nn::LogicalKind::and_, e.cmp(P::ge, pos, num(pos, 0)),
                                 e.cmp(P::le, pos, num(pos, double(dims[i] - 1))));
        valid = valid ? e.logical(nn::LogicalKind::and_, valid, inside) : inside;
      } else if (padding == "reflection") {
        pos = e.un<nn::FloorOp>(e.un<nn::AbsOp>(reflect(pos, lo[i], hi[i])));
      }
      pos = e.max(e.min(pos, num(pos, double(dims[i] - 1))), num(pos, 0));
      index = e.add(index, e.mul(e.cast(pos, c.b.getI64Type()), e.num(batchOffset, double(strides[i]))));
    }
    if (valid) {
      Value one = weight ? weight : e.num(base[0], 1);
      weight = e.where(valid, one, e.num(base[0], 0));
    }
    Value picked = make<nn::GatherOp>(c, {rows, index}, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(0))});
    Value term = weight ? e.mul(picked, e.unsqueeze(weight, r + 1)) : picked;
    acc = acc ? e.add(acc, term) : term;
    if (!acc)
      return failure();
  }
  // [N, O..., C] -> [N, C, O...].
  SmallVector<int64_t> back = {0, r + 1};
  for (int64_t i = 1; i <= r; ++i)
    back.push_back(i);
  return e.done(e.transpose(acc, back));
}

/// AffineGrid(theta [N, r, r+1], size [N, C, D1..Dr]) for r = 2, 3: the
/// constant base grid (x over the last dim, then y, z; normalized to
/// [-1, 1] by align_corners) with a 1 appended, times theta^T: one batched
/// matmul, [N, D1..Dr, r].
HandlerResult affineGrid(NodeContext &c) {
  auto theta = c.tensorInput(0);
  auto size = c.constantIntsInput(1, "size");
  if (failed(theta) || failed(size))
    return failure();
  auto tt = typeOf(*theta);
  int64_t r = static_cast<int64_t>(size->size()) - 2;
  if ((r != 2 && r != 3) || !tt.hasStaticShape() || !isa<FloatType>(tt.getElementType()) ||
      tt.getRank() != 3 || tt.getDimSize(1) != r || tt.getDimSize(2) != r + 1 ||
      tt.getDimSize(0) != (*size)[0])
    return c.error() << "expects theta [N, r, r+1] and size [N, C, D1..Dr] for r = 2 or 3, got " << tt;
  bool align = c.intAttrOr("align_corners", 0) != 0;
  SmallVector<int64_t> dims(size->begin() + 2, size->end());
  int64_t points = 1;
  for (int64_t d : dims) {
    if (d < 1 || d > (1 << 16))
      return c.error() << "size " << d << " is out of range";
    points *= d;
  }
  if (!fitsBuiltConstant(c, checkedMul(points, r + 1).value_or(-1), "the base grid"))
    return failure();
  auto coordinate = [&](int64_t i, int64_t n) {
    if (n == 1)
      return 0.0;
    return align ? -1.0 + 2.0 * double(i) / double(n - 1) : (2.0 * double(i) + 1) / double(n) - 1;
  };
  SmallVector<double> base;
  SmallVector<int64_t> at(r, 0);
  for (int64_t p = 0; p < points; ++p) {
    for (int64_t i = r - 1, rem = p; i >= 0; --i) {
      at[i] = rem % dims[i];
      rem /= dims[i];
    }
    for (int64_t i = r - 1; i >= 0; --i) // x (last dim) first
      base.push_back(coordinate(at[i], dims[i]));
    base.push_back(1.0);
  }
  Expr e{c};
  Value grid = floatsConstant(c, RankedTensorType::get({points, r + 1}, tt.getElementType()), base);
  Value y = e.matmul(grid, e.transpose(*theta, {0, 2, 1}));
  SmallVector<int64_t> shape = {(*size)[0]};
  shape.append(dims.begin(), dims.end());
  shape.push_back(r);
  return e.done(e.reshape(y, shape));
}

/// ArgMax / ArgMin as nn.arg_reduce.
HandlerResult argReduce(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  if (!isa<FloatType>(t.getElementType()) || !t.hasStaticShape())
    return c.error() << "expects a static floating-point input, got " << t;
  int64_t axis = c.intAttrOr("axis", 0), rank = t.getRank();
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << axis << " is out of range for rank " << rank;
  bool keep = c.intAttrOr("keepdims", 1) != 0;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      shape.push_back(t.getDimSize(d));
    else if (keep)
      shape.push_back(1);
  auto kind = c.node.getOpType() == "ArgMax" ? nn::ArgReduceKind::max : nn::ArgReduceKind::min;
  auto op = nn::ArgReduceOp::create(
      c.b, c.loc(), RankedTensorType::get(shape, c.b.getI64Type()),
      c.b.getAttr<nn::ArgReduceKindAttr>(kind), *x, c.b.getI64IntegerAttr(axis),
      c.b.getBoolAttr(keep), c.intAttrOr("select_last_index", 0) ? c.b.getUnitAttr() : UnitAttr());
  if (failed(op.verify())) {
    op.erase();
    return failure();
  }
  return SmallVector<Value>{op};
}

/// An i64 [1, .., n, .., 1] constant 0..n-1 along `axis` of a rank-`rank`
/// tensor.
Value iotaAlong(NodeContext &c, int64_t n, int64_t axis, int64_t rank) {
  SmallVector<int64_t> shape(rank, 1), values;
  shape[axis] = n;
  for (int64_t i = 0; i < n; ++i)
    values.push_back(i);
  return i64Constant(c, shape, values);
}

/// TopK(X, K, axis, largest, sorted) for a constant K: K rounds of ArgMax
/// (ArgMin for largest = 0), each taking the first extreme and masking it
/// with NaN, which arg_reduce skips. Ties go to the lower index, as ONNX
/// requires; the output is sorted either way (sorted = 0 allows any order).
/// Integers are ranked as f64 (exact below 2^53).
HandlerResult topK(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  if (!t.hasStaticShape() || t.getRank() == 0)
    return c.error() << "expects a static tensor of rank >= 1, got " << t;
  int64_t k;
  if (c.opset() < 10) {
    auto attr = c.intAttr("k");
    if (!attr)
      return c.error() << "needs the k attribute";
    k = *attr;
  } else {
    auto ks = c.constantIntsInput(1, "K");
    if (failed(ks))
      return failure();
    if (ks->size() != 1)
      return c.error() << "K must hold one value, got " << ks->size();
    k = (*ks)[0];
  }
  int64_t rank = t.getRank(), axis = c.intAttrOr("axis", -1);
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << axis << " is out of range for rank " << rank;
  int64_t n = t.getDimSize(axis);
  constexpr int64_t kMaxK = 256;
  if (k < 0 || k > n)
    return c.error() << "K = " << k << " is out of range for an axis of " << n;
  if (k > kMaxK)
    return c.error() << "K = " << k << " is over the supported " << kMaxK
                     << " (TopK is unrolled into K arg-reductions)";
  if (k == 0)
    return c.error() << "K = 0 gives empty outputs, which Rewire does not compile";
  bool largest = c.intAttrOr("largest", 1) != 0;
  Expr e{c};
  Type elt = t.getElementType();
  Value ranked = isa<FloatType>(elt) ? *x : e.cast(*x, c.b.getF64Type());
  Value nan = scalarConstant(c, typeOf(ranked).getElementType(), NAN);
  Value iota = iotaAlong(c, n, axis, rank);
  SmallVector<int64_t> keptShape(t.getShape());
  keptShape[axis] = 1;
  SmallVector<Value> values, indices;
  for (int64_t i = 0; i < k; ++i) {
    auto kind = largest ? nn::ArgReduceKind::max : nn::ArgReduceKind::min;
    auto arg = nn::ArgReduceOp::create(
        c.b, c.loc(), RankedTensorType::get(keptShape, c.b.getI64Type()),
        c.b.getAttr<nn::ArgReduceKindAttr>(kind), ranked, c.b.getI64IntegerAttr(axis),
        c.b.getBoolAttr(true), UnitAttr());
    if (failed(arg.verify())) {
      arg.erase();
      return failure();
    }
    auto v = gatherElementsOf(c, *x, arg, axis);
    if (failed(v))
      return failure();
    indices.push_back(arg);
    values.push_back(*v);
    if (i + 1 < k)
      ranked = e.where(e.cmp(nn::ComparePredicate::eq, iota, arg), nan, ranked);
    if (!ranked)
      return failure();
  }
  auto axisAttr = c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(axis));
  Value vs = values.size() == 1 ? values[0] : make<nn::ConcatOp>(c, values, {axisAttr});
  Value is = indices.size() == 1 ? indices[0] : make<nn::ConcatOp>(c, indices, {axisAttr});
  if (!vs || !is)
    return failure();
  return SmallVector<Value>{vs, is};
}

/// An i64 index tensor of `shape` whose value along `axis` is its position
/// (0..n-1), broadcast over the other dims.
Value positionsAlong(NodeContext &c, Expr &e, ArrayRef<int64_t> shape, int64_t axis) {
  Value iota = iotaAlong(c, shape[axis], axis, static_cast<int64_t>(shape.size()));
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return e.add(iota, i64Constant(c, shape, SmallVector<int64_t>(n, 0)));
}

/// `v` ([batch]) as [1, .., batch, .., 1] along `axis` of a rank-`rank` value.
Value perBatch(Expr &e, Value v, int64_t axis, int64_t rank) {
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = typeOf(v).getNumElements();
  return e.reshape(e.cast(v, e.c.b.getI64Type()), shape);
}

/// ReverseSequence(x, sequence_lens): along time_axis, each batch entry's
/// first len positions reversed, the rest kept -- GatherElements at
/// t < len ? len - 1 - t : t (run-time lengths).
HandlerResult reverseSequence(NodeContext &c) {
  auto x = c.tensorInput(0), lens = c.tensorInput(1);
  if (failed(x) || failed(lens))
    return failure();
  auto xt = typeOf(*x);
  int64_t rank = xt.getRank(), timeAxis = c.intAttrOr("time_axis", 0), batchAxis = c.intAttrOr("batch_axis", 1);
  if (!xt.hasStaticShape() || rank < 2 || !normalizeAxisInPlace(timeAxis, rank) ||
      !normalizeAxisInPlace(batchAxis, rank) || timeAxis == batchAxis ||
      typeOf(*lens).getNumElements() != xt.getDimSize(batchAxis))
    return c.error() << "expects a static input of rank >= 2, distinct time and batch axes and one "
                        "length per batch entry";
  if (!fitsBuiltConstant(c, xt.getNumElements(), "the reversed positions"))
    return failure();
  Expr e{c};
  Value t = positionsAlong(c, e, xt.getShape(), timeAxis);
  Value len = perBatch(e, *lens, batchAxis, rank);
  Value idx = e.where(e.cmp(P::lt, t, len), e.sub(e.sub(len, e.num(len, 1)), t), t);
  if (!idx)
    return failure();
  return single(gatherElementsOf(c, *x, idx, timeAxis));
}

/// TensorScatter(past_cache, update, write_indices) (opset 24): the cache
/// with each batch entry's update written along `axis` from its write
/// index on (wrapping around in circular mode): at position p the update's
/// p - w (mod the cache length when circular) where that is below the
/// update's length, else the cache.
HandlerResult tensorScatter(NodeContext &c) {
  auto past = c.tensorInput(0), upd = c.tensorInput(1);
  if (failed(past) || failed(upd))
    return failure();
  auto pt = typeOf(*past), ut = typeOf(*upd);
  int64_t rank = pt.getRank(), axis = c.intAttrOr("axis", -2);
  std::string mode = c.stringAttr("mode").value_or("linear");
  if (mode != "linear" && mode != "circular")
    return c.error() << "mode '" << mode << "' is not linear or circular";
  if (!pt.hasStaticShape() || !ut.hasStaticShape() || ut.getRank() != rank || rank < 2 ||
      !normalizeAxisInPlace(axis, rank) || axis == 0)
    return c.error() << "expects static past_cache and update of one rank (>= 2) and a non-batch axis";
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && pt.getDimSize(d) != ut.getDimSize(d))
      return c.error() << "update " << ut << " and past_cache " << pt << " differ outside the axis";
  int64_t maxLen = pt.getDimSize(axis), len = ut.getDimSize(axis);
  if (len > maxLen)
    return c.error() << "the update (" << len << ") is longer than the cache (" << maxLen << ")";
  if (!fitsBuiltConstant(c, pt.getNumElements(), "the cache positions"))
    return failure();
  Expr e{c};
  Value p = positionsAlong(c, e, pt.getShape(), axis);
  Value w = c.input(2) ? perBatch(e, c.input(2), 0, rank) : i64Constant(c, {}, {0});
  Value s = e.sub(p, w);
  if (mode == "circular") {
    Value m = e.num(s, double(maxLen));
    s = e.sub(s, e.mul(e.div(s, m), m));
    s = e.where(e.cmp(P::lt, s, e.num(s, 0)), e.add(s, m), s);
  }
  Value written = e.logical(nn::LogicalKind::and_, e.cmp(P::ge, s, e.num(s, 0)),
                            e.cmp(P::lt, s, e.num(s, double(len))));
  Value safe = e.where(written, s, e.num(s, 0));
  if (!safe)
    return failure();
  auto fromUpdate = gatherElementsOf(c, *upd, safe, axis);
  if (failed(fromUpdate))
    return failure();
  return e.done(e.where(written, *fromUpdate, *past));
}

/// Hardmax(x, axis): 1 at the first maximum along axis, 0 elsewhere (over
/// dims [axis, rank) flattened before opset 13).
HandlerResult hardmax(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  if (!isa<FloatType>(t.getElementType()) || !t.hasStaticShape())
    return c.error() << "expects a static floating-point input, got " << t;
  int64_t rank = t.getRank();
  bool coerced = c.opset() < 13;
  int64_t axis = c.intAttrOr("axis", coerced ? 1 : -1);
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << axis << " is out of range for rank " << rank;
  Value in = *x;
  int64_t red = axis, redRank = rank;
  if (coerced && axis != rank - 1) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < axis ? outer : inner) *= t.getDimSize(d);
    auto r = reshape(c, in, {outer, inner});
    if (failed(r))
      return failure();
    in = *r;
    red = 1;
    redRank = 2;
  }
  auto it = typeOf(in);
  SmallVector<int64_t> kept(it.getShape());
  kept[red] = 1;
  auto arg = nn::ArgReduceOp::create(c.b, c.loc(), RankedTensorType::get(kept, c.b.getI64Type()),
                                     c.b.getAttr<nn::ArgReduceKindAttr>(nn::ArgReduceKind::max), in,
                                     c.b.getI64IntegerAttr(red), c.b.getBoolAttr(true), UnitAttr());
  auto eq = createInferred<nn::CompareOp>(
      c, {iotaAlong(c, it.getDimSize(red), red, redRank), arg.getResult()},
      {c.b.getNamedAttr("predicate", c.b.getAttr<nn::ComparePredicateAttr>(nn::ComparePredicate::eq))});
  if (failed(eq))
    return failure();
  Value y = nn::CastOp::create(c.b, c.loc(), it, eq->getResult());
  if (redRank != rank) {
    auto r = reshape(c, y, t.getShape());
    if (failed(r))
      return failure();
    y = *r;
  }
  return SmallVector<Value>{y};
}

/// OneHot(indices, depth, [off, on], axis): on where the (wrapped) index
/// equals the position along the new axis, off elsewhere (an index outside
/// [-depth, depth) matches nothing).
HandlerResult oneHot(NodeContext &c) {
  auto idx = c.tensorInput(0), values = c.tensorInput(2);
  auto depthV = c.tensorInput(1);
  if (failed(idx) || failed(values) || failed(depthV))
    return failure();
  std::optional<int64_t> depth;
  if (auto cst = depthV->getDefiningOp<nn::ConstantOp>()) {
    auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
    if (dense && dense.getNumElements() == 1) {
      if (isa<FloatType>(dense.getElementType()))
        depth = static_cast<int64_t>((*dense.getValues<APFloat>().begin()).convertToDouble());
      else
        depth = (*dense.getValues<APInt>().begin()).getSExtValue();
    }
  }
  if (!depth || *depth < 1 || *depth > (1 << 24))
    return c.error() << "depth must be a constant scalar in [1, 2^24]";
  auto vt = typeOf(*values), it = typeOf(*idx);
  if (vt.getNumElements() != 2 || !it.hasStaticShape())
    return c.error() << "values must hold [off, on] and indices must be static";
  int64_t rank = it.getRank() + 1, axis = c.intAttrOr("axis", -1);
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << axis << " is out of range for rank " << rank;
  Value ix = *idx;
  auto i64 = RankedTensorType::get(it.getShape(), c.b.getI64Type());
  if (isa<FloatType>(it.getElementType()))
    ix = nn::CastOp::create(c.b, c.loc(), i64, ix); // ONNX: indices are cast
  else if (it.getElementType() != c.b.getI64Type())
    ix = nn::CastOp::create(c.b, c.loc(), i64, ix);
  auto scalar = [&](int64_t v) { return i64Constant(c, {}, {v}); };
  auto pred = [&](nn::ComparePredicate p) {
    return c.b.getNamedAttr("predicate", c.b.getAttr<nn::ComparePredicateAttr>(p));
  };
  auto neg = createInferred<nn::CompareOp>(c, {ix, scalar(0)}, {pred(nn::ComparePredicate::lt)});
  auto wrapped = createInferred<nn::AddOp>(c, {ix, scalar(*depth)});
  if (failed(neg) || failed(wrapped))
    return failure();
  auto norm = createInferred<nn::WhereOp>(c, {neg->getResult(), wrapped->getResult(), ix});
  if (failed(norm))
    return failure();
  auto un = createInferred<nn::UnsqueezeOp>(
      c, {norm->getResult()}, {c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr({axis}))});
  if (failed(un))
    return failure();
  auto eq = createInferred<nn::CompareOp>(c, {un->getResult(), iotaAlong(c, *depth, axis, rank)},
                                          {pred(nn::ComparePredicate::eq)});
  if (failed(eq))
    return failure();
  auto flat = reshape(c, *values, {2});
  if (failed(flat))
    return failure();
  auto pick = [&](int64_t i) -> FailureOr<Value> {
    auto g = gather(c, *flat, i64Constant(c, {}, {i}), 0);
    return g;
  };
  auto off = pick(0), on = pick(1);
  if (failed(off) || failed(on))
    return failure();
  return single(createInferred<nn::WhereOp>(c, {eq->getResult(), *on, *off}));
}

/// One resized axis: output o reads `taps` source positions, each with a
/// weight, plus `bias[o]` (tf_crop_and_resize's extrapolation value where o
/// falls outside the input).
struct AxisTaps {
  SmallVector<SmallVector<int64_t>> index;  // [tap][o]
  SmallVector<SmallVector<double>> weight;  // [tap][o]
  SmallVector<double> bias;                 // [o], empty when none
};

/// Resize (opset 11+: X, roi, scales, sizes; opset 10: X, scales) and
/// Upsample (opset 7: scales attribute; 9: X, scales), all modes: nearest,
/// linear and cubic (cubic_coeff_a, exclude_outside, antialias), with the
/// coordinate transformations half_pixel, half_pixel_symmetric,
/// pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn and
/// tf_crop_and_resize (constant roi, extrapolation_value), `axes` and
/// keep_aspect_ratio_policy. Separable: per resized axis a gather of
/// constant source indices per tap, weighted by constant coefficients and
/// summed, as ONNX's reference computes it (indices past the edge read the
/// edge). Scales or sizes must be constant.
HandlerResult resize(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  if (!xt.hasStaticShape() || !isa<FloatType>(xt.getElementType()))
    return c.error() << "expects a static floating-point input, got " << xt;
  int64_t rank = xt.getRank();
  bool upsample = c.node.getOpType() == "Upsample";
  bool legacy = upsample || c.opset() < 11;  // Upsample and Resize-10 semantics
  std::string mode = c.stringAttr("mode").value_or("nearest");
  std::string coord = legacy ? "asymmetric"
                             : c.stringAttr("coordinate_transformation_mode").value_or("half_pixel");
  std::string nearestMode =
      legacy ? "floor" : c.stringAttr("nearest_mode").value_or("round_prefer_floor");
  double cubicA = c.floatAttrOr("cubic_coeff_a", -0.75);
  bool excludeOutside = c.intAttrOr("exclude_outside", 0) != 0;
  double extrapolation = c.floatAttrOr("extrapolation_value", 0.0);
  if (mode != "nearest" && mode != "linear" && mode != "cubic" &&
      !(legacy && mode == "bilinear"))
    return c.error() << "mode '" << mode << "' is not supported (nearest, linear, cubic)";
  if (coord != "half_pixel" && coord != "half_pixel_symmetric" && coord != "pytorch_half_pixel" &&
      coord != "align_corners" && coord != "asymmetric" && coord != "tf_half_pixel_for_nn" &&
      coord != "tf_crop_and_resize")
    return c.error() << "coordinate_transformation_mode '" << coord << "' is not supported";
  if (nearestMode != "floor" && nearestMode != "ceil" && nearestMode != "round_prefer_floor" &&
      nearestMode != "round_prefer_ceil")
    return c.error() << "nearest_mode '" << nearestMode << "' is not supported";
  bool antialias = c.intAttrOr("antialias", 0) != 0;
  if (antialias && mode == "nearest")
    return c.error() << "antialias applies to the linear and cubic modes, not nearest";
  // `axes` (opset 18) names the dims that roi, scales and sizes list.
  auto axesOr = axesOrAll(c, c.intsAttr("axes"), rank);
  if (failed(axesOr))
    return failure();
  SmallVector<int64_t> axes = *axesOr;
  int64_t n = static_cast<int64_t>(axes.size());
  std::string policy = c.stringAttr("keep_aspect_ratio_policy").value_or("stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return c.error() << "keep_aspect_ratio_policy '" << policy << "' is not stretch, not_larger or "
                        "not_smaller";
  SmallVector<double> scales(rank, 1.0);
  SmallVector<int64_t> sizes(xt.getShape());
  unsigned scalesAt = legacy ? 1 : 2;
  Value sizesV = legacy ? Value() : c.input(3), scalesV = c.input(scalesAt);
  std::optional<SmallVector<double>> scaleValues;
  if (upsample && c.opset() < 9) {
    scaleValues = c.floatsAttr("scales");
    if (!scaleValues)
      return c.error() << "needs the scales attribute";
  } else if (scalesV && typeOf(scalesV).getNumElements() > 0) {
    scaleValues = c.constantFloats(scalesV);
    if (!scaleValues)
      return c.error() << "scales must be constant (an initializer or Constant)";
  }
  if (sizesV && typeOf(sizesV).getNumElements() > 0) {
    auto sz = c.constantIntsInput(3, "sizes");
    if (failed(sz))
      return failure();
    if (static_cast<int64_t>(sz->size()) != n)
      return c.error() << "sizes has " << sz->size() << " entries for " << n << " axes";
    // not_larger / not_smaller: one scale for every listed axis, the
    // smallest or largest of sizes / input, sizes rounded half up.
    double common = policy == "not_larger" ? INFINITY : 0;
    for (int64_t i = 0; i < n; ++i) {
      double r = double((*sz)[i]) / double(xt.getDimSize(axes[i]));
      common = policy == "not_larger" ? std::min(common, r) : std::max(common, r);
    }
    for (int64_t i = 0; i < n; ++i) {
      int64_t d = axes[i];
      if (policy == "stretch") {
        sizes[d] = (*sz)[i];
        scales[d] = double(sizes[d]) / double(xt.getDimSize(d));
      } else {
        scales[d] = common;
        sizes[d] = static_cast<int64_t>(std::floor(common * double(xt.getDimSize(d)) + 0.5));
      }
    }
  } else if (scaleValues) {
    if (static_cast<int64_t>(scaleValues->size()) != n)
      return c.error() << "scales has " << scaleValues->size() << " entries for " << n << " axes";
    for (int64_t i = 0; i < n; ++i) {
      int64_t d = axes[i];
      scales[d] = (*scaleValues)[i];
      if (!(scales[d] > 0) || !std::isfinite(scales[d]))
        return c.error() << "scale " << scales[d] << " must be positive";
      double out = std::floor(double(xt.getDimSize(d)) * scales[d]);
      if (out > double(1 << 20))
        return c.error() << "output size " << out << " of dim " << d << " is out of range";
      sizes[d] = static_cast<int64_t>(out);
    }
  } else {
    return c.error() << "needs constant scales or sizes";
  }
  // roi as [starts..., ends...] over every dim (0 and 1 where not listed).
  SmallVector<double> roi(2 * rank, 0.0);
  for (int64_t d = 0; d < rank; ++d)
    roi[d + rank] = 1.0;
  if (coord == "tf_crop_and_resize") {
    auto r = c.input(1) ? c.constantFloats(c.input(1)) : std::nullopt;
    if (!r || static_cast<int64_t>(r->size()) != 2 * n)
      return c.error() << "tf_crop_and_resize needs a constant roi of " << 2 * n << " values";
    for (int64_t i = 0; i < n; ++i) {
      roi[axes[i]] = (*r)[i];
      roi[axes[i] + rank] = (*r)[i + n];
    }
  }
  Value y = *x;
  auto elt = cast<FloatType>(xt.getElementType());
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = xt.getDimSize(d), out = sizes[d];
    if (out < 1 || out > (1 << 20))
      return c.error() << "output size " << out << " of dim " << d << " is out of range";
    if (out == in && scales[d] == 1.0 && coord != "tf_crop_and_resize")
      continue;
    double s = scales[d];
    // ONNX's reference takes the resized length as in * scale, unrounded
    // (it differs from `out` only for scales that do not divide evenly).
    double len = double(in) * s;
    // The source coordinate of output o; nullopt where tf_crop_and_resize
    // extrapolates.
    auto source = [&](int64_t o) -> std::optional<double> {
      if (coord == "half_pixel")
        return (o + 0.5) / s - 0.5;
      if (coord == "half_pixel_symmetric") {
        double adjustment = double(out) / len, center = double(in) / 2;
        return center * (1 - adjustment) + (o + 0.5) / s - 0.5;
      }
      if (coord == "pytorch_half_pixel")
        return len > 1 ? (o + 0.5) / s - 0.5 : 0.0;
      if (coord == "align_corners")
        return len == 1 ? 0.0 : double(o) * double(in - 1) / (len - 1);
      if (coord == "tf_half_pixel_for_nn")
        return (o + 0.5) / s;
      if (coord == "tf_crop_and_resize") {
        double lo = roi[d], hi = roi[d + rank];
        double v = len != 1 ? lo * (in - 1) + double(o) * (hi - lo) * (in - 1) / (len - 1)
                            : 0.5 * (lo + hi) * (in - 1);
        if (v < 0 || v > in - 1)
          return std::nullopt;
        return v;
      }
      return o / s; // asymmetric
    };
    auto clampIdx = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    // Linear and cubic taps at base + i, i in [start, 2 - start): base =
    // floor(x) (x - 1 for an integer x, whose ratio is then 1, as ONNX's
    // reference counts), weight kernel((i - ratio) * k) with k = 1, or with
    // antialias min(scale, 1): a kernel stretched over the downsampled
    // footprint, normalized.
    double stretch = antialias ? std::min(s, 1.0) : 1.0;
    double support = mode == "cubic" ? 2.0 : 1.0;
    int64_t start = static_cast<int64_t>(std::floor(-support / stretch)) + 1;
    int64_t numTaps = mode == "nearest" ? 1 : 2 - 2 * start;
    if (numTaps > 1024)
      return c.error() << "a downsampling window of " << numTaps << " taps is out of range";
    AxisTaps taps;
    taps.index.assign(numTaps, {});
    taps.weight.assign(numTaps, {});
    bool anyOutside = false;
    for (int64_t o = 0; o < out; ++o) {
      std::optional<double> src = source(o);
      SmallVector<int64_t> at(numTaps, 0);
      SmallVector<double> w(numTaps, 0.0);
      if (!src) {
        anyOutside = true;
      } else if (mode == "nearest") {
        double v = *src;
        double r = nearestMode == "floor" ? std::floor(v)
                   : nearestMode == "ceil" ? std::ceil(v)
                   : nearestMode == "round_prefer_ceil"
                       ? (v - std::floor(v) == 0.5 ? std::ceil(v) : std::round(v))
                       : (v - std::floor(v) == 0.5 ? std::floor(v) : std::round(v));
        at[0] = clampIdx(static_cast<int64_t>(r));
        w[0] = 1.0;
      } else {
        double v = *src, base = std::floor(v), ratio = v - base;
        if (ratio == 0) {
          base -= 1;
          ratio = 1;
        }
        auto kernel = [&](double t) {
          t = std::abs(t);
          if (mode != "cubic")
            return std::max(0.0, 1.0 - t);
          double a = cubicA;
          if (t <= 1)
            return ((a + 2) * t - (a + 3)) * t * t + 1;
          if (t < 2)
            return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
          return 0.0;
        };
        double sum = 0;
        for (int64_t k = 0; k < numTaps; ++k) {
          int64_t i = start + k, pos = static_cast<int64_t>(base) + i;
          double wk = kernel((double(i) - ratio) * stretch);
          if (excludeOutside && (pos < 0 || pos >= in))
            wk = 0;
          w[k] = wk;
          at[k] = clampIdx(pos);
          sum += wk;
        }
        if ((antialias || excludeOutside) && sum != 0)
          for (double &wt : w)
            wt /= sum;
      }
      for (int64_t t = 0; t < numTaps; ++t) {
        taps.index[t].push_back(at[t]);
        taps.weight[t].push_back(w[t]);
      }
      taps.bias.push_back(src ? 0.0 : extrapolation);
    }
    if (!anyOutside)
      taps.bias.clear();
    // A column [out, 1, ..., 1] of constants along axis d.
    SmallVector<int64_t> colShape(rank - d, 1);
    colShape[0] = out;
    auto colType = RankedTensorType::get(colShape, elt);
    auto column = [&](ArrayRef<double> v) { return floatsConstant(c, colType, v); };
    bool unitWeights = mode == "nearest" && taps.bias.empty();
    Value acc;
    for (int64_t t = 0; t < numTaps; ++t) {
      auto g = gather(c, y, i64Constant(c, {out}, taps.index[t]), d);
      if (failed(g))
        return failure();
      Value term = *g;
      if (!unitWeights) {
        auto m = createInferred<nn::MulOp>(c, {term, column(taps.weight[t])});
        if (failed(m))
          return failure();
        term = m->getResult();
      }
      if (acc) {
        auto sum = createInferred<nn::AddOp>(c, {acc, term});
        if (failed(sum))
          return failure();
        term = sum->getResult();
      }
      acc = term;
    }
    if (!taps.bias.empty()) {
      auto sum = createInferred<nn::AddOp>(c, {acc, column(taps.bias)});
      if (failed(sum))
        return failure();
      acc = sum->getResult();
    }
    y = acc;
  }
  return SmallVector<Value>{y};
}

const Handler kHandlers[] = {
    {"Resize", 10, 28, resize},
    {"Upsample", 7, 9, resize},
    {"ArgMax", 11, 28, argReduce},
    {"TopK", 1, 28, topK},
    {"GridSample", 16, 28, gridSample},
    {"AffineGrid", 20, 28, affineGrid},
    {"ReverseSequence", 10, 28, reverseSequence},
    {"TensorScatter", 24, 28, tensorScatter},
    {"CenterCropPad", 18, 28, centerCropPad},
    {"ArgMin", 11, 28, argReduce},
    {"Hardmax", 11, 28, hardmax},
    {"OneHot", 11, 28, oneHot},
    {"GatherND", 12, 28, gatherND},
    {"GatherElements", 11, 28, gatherElements},
    {"ScatterND", 11, 28, scatterND},
    {"ScatterElements", 11, 28, scatterElements},
    {"Scatter", 9, 10, scatterElements},
    {"Pad", 11, 28, pad},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::indexingHandlers() { return kHandlers; }
