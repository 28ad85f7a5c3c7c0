//===- HandlersShape.cpp - Legalization of ONNX shape ops -----------------===//
//
// Handlers for Reshape, Flatten, Transpose, Concat, Split, Slice, Gather,
// Unsqueeze, Squeeze, Shape and Cast. Constant operands of shape
// computations (ONNX passes shapes, axes and indices as tensors) become
// attributes; operations on constant integer tensors are folded so that the
// shape chains exporters emit disappear at import.
//
//===----------------------------------------------------------------------===//
#include "OnnxInternal.h"

#include "rewire/Support/Shape.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {

/// An nn.constant of `type` with integer `values` (a folded shape
/// computation); fails when the count does not match the static shape.
FailureOr<Value> intConstant(NodeContext &c, RankedTensorType type,
                             ArrayRef<int64_t> values) {
  if (!type.hasStaticShape() ||
      type.getNumElements() != static_cast<int64_t>(values.size()))
    return c.error() << "folding a constant: " << values.size()
                     << " values do not fill " << type;
  SmallVector<APInt> bits;
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  for (int64_t v : values)
    bits.push_back(APInt(width, v, /*isSigned=*/true, /*implicitTrunc=*/true));
  return nn::ConstantOp::create(c.b, c.loc(), type,
                                DenseIntElementsAttr::get(type, bits))
      .getResult();
}

FailureOr<Value> reshapeTo(NodeContext &c, Value x, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, typeOf(x).getElementType());
  // A reshape to the same static shape is the identity (exports reshape
  // to what they computed); dropping it keeps the stream visible.
  if (type == typeOf(x) && type.hasStaticShape())
    return x;
  if (auto ints = c.constantInts(x))
    return intConstant(c, type, *ints);
  auto op = nn::ReshapeOp::create(c.b, c.loc(), type, x);
  if (failed(op.verify())) {
    op.erase();
    return failure();
  }
  return op.getResult();
}

HandlerResult reshape(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto target = c.constantIntsInput(1, "shape");
  if (failed(x) || failed(target))
    return failure();
  ArrayRef<int64_t> in = typeOf(*x).getShape();
  bool allowZero = c.intAttrOr("allowzero", 0) != 0;
  SmallVector<int64_t> out;
  int64_t inferred = -1;
  for (auto [i, d] : llvm::enumerate(*target)) {
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return c.error() << "shape entry " << i
                         << " is 0 (copy), but the input has rank "
                         << in.size();
      out.push_back(in[i]);
    } else if (d == -1) {
      if (inferred >= 0)
        return c.error() << "shape has more than one -1 entry";
      inferred = i;
      out.push_back(ShapedType::kDynamic);
    } else if (d < 0) {
      return c.error() << "shape entry " << i << " is " << d;
    } else {
      out.push_back(d);
    }
  }
  if (inferred >= 0) {
    std::vector<int64_t> known;
    for (auto [i, d] : llvm::enumerate(out))
      if (static_cast<int64_t>(i) != inferred)
        known.push_back(d);
    auto numIn = checkedNumElements(std::vector<int64_t>(in.begin(), in.end()));
    auto numKnown = checkedNumElements(known);
    if (numIn && numKnown) {
      if (*numKnown == 0 || *numIn % *numKnown != 0)
        return c.error() << "cannot infer the -1 entry: " << *numIn
                         << " elements do not divide into " << *numKnown;
      out[inferred] = *numIn / *numKnown;
    }
  }
  return single(reshapeTo(c, *x, out));
}

HandlerResult flatten(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = typeOf(*x).getShape();
  int64_t rank = in.size();
  int64_t axis = c.intAttrOr("axis", 1);
  if (axis < -rank || axis > rank)
    return c.error() << "axis " << axis << " is out of range for rank "
                     << rank;
  if (axis < 0)
    axis += rank;
  auto prod = [&](ArrayRef<int64_t> dims) -> int64_t {
    auto n = checkedNumElements(std::vector<int64_t>(dims.begin(), dims.end()));
    return n ? *n : ShapedType::kDynamic;
  };
  return single(reshapeTo(c, *x,
                          {prod(in.take_front(axis)), prod(in.drop_front(axis))}));
}

HandlerResult transpose(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs;
  if (auto perm = c.intsAttr("perm"))
    attrs.push_back(c.b.getNamedAttr("perm", c.b.getDenseI64ArrayAttr(*perm)));
  auto op = createInferred<nn::TransposeOp>(c, {*x}, attrs);
  if (failed(op))
    return failure();
  // Transposes of integer constants (shape computations) fold.
  auto ints = c.constantInts(*x);
  auto in = typeOf(*x), out = op->getType();
  if (!ints || !in.hasStaticShape() || !out.hasStaticShape())
    return SmallVector<Value>{*op};
  int64_t rank = in.getRank();
  SmallVector<int64_t> perm;
  if (auto p = (*op).getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  SmallVector<int64_t> inStrides = stridesOf(in.getShape()), folded;
  for (int64_t flat = 0; flat < out.getNumElements(); ++flat) {
    int64_t rem = flat, off = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      off += (rem % out.getDimSize(d)) * inStrides[perm[d]];
      rem /= out.getDimSize(d);
    }
    folded.push_back((*ints)[off]);
  }
  op->erase();
  return single(intConstant(c, out, folded));
}

HandlerResult concat(NodeContext &c) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < c.numInputs(); ++i) {
    auto v = c.tensorInput(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  auto axis = c.intAttr("axis");
  if (!axis)
    return c.error() << "the 'axis' attribute is required";
  // Concatenation of 1-D integer constants (shape vectors) folds.
  SmallVector<int64_t> folded;
  bool allConst = !inputs.empty();
  for (Value v : inputs) {
    auto ints = c.constantInts(v);
    if (!ints || typeOf(v).getRank() != 1 ||
        typeOf(v).getElementType() != typeOf(inputs[0]).getElementType()) {
      allConst = false;
      break;
    }
    folded.append(ints->begin(), ints->end());
  }
  if (allConst)
    return single(intConstant(
        c,
        RankedTensorType::get({static_cast<int64_t>(folded.size())},
                              typeOf(inputs[0]).getElementType()),
        folded));
  return single(createInferred<nn::ConcatOp>(
      c, inputs, {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(*axis))}));
}

HandlerResult split(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> in = typeOf(*x).getShape();
  int64_t axisAttr = c.intAttrOr("axis", 0);
  auto axis = normalizeAxis(axisAttr, in.size());
  if (!axis)
    return c.error() << "axis " << axisAttr << " is out of range for rank "
                     << in.size();
  unsigned numOutputs = c.node.getNumResults();
  SmallVector<int64_t> sizes;
  if (c.input(1)) {
    auto s = c.constantIntsInput(1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (auto s = c.intsAttr("split"); s && c.opset() < 13) {
    sizes = *s;
  } else {
    int64_t dim = in[*axis];
    if (ShapedType::isDynamic(dim))
      return c.error() << "cannot split a dynamic dimension evenly";
    int64_t n = c.opset() >= 18 ? c.intAttrOr("num_outputs", numOutputs)
                                : numOutputs;
    if (n < 1 || n != static_cast<int64_t>(numOutputs))
      return c.error() << "num_outputs is " << n << " but the node has "
                       << numOutputs << " outputs";
    int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  if (sizes.size() != numOutputs)
    return c.error() << "splits into " << sizes.size() << " pieces but has "
                     << numOutputs << " outputs";
  auto op = createInferred<nn::SplitOp>(
      c, {*x},
      {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(*axis)),
       c.b.getNamedAttr("sizes", c.b.getDenseI64ArrayAttr(sizes))});
  if (failed(op))
    return failure();
  return SmallVector<Value>(op->getResults());
}

HandlerResult slice(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto starts = c.constantIntsInput(1, "starts");
  auto ends = c.constantIntsInput(2, "ends");
  if (failed(x) || failed(starts) || failed(ends))
    return failure();
  SmallVector<NamedAttribute> attrs = {
      c.b.getNamedAttr("starts", c.b.getDenseI64ArrayAttr(*starts)),
      c.b.getNamedAttr("ends", c.b.getDenseI64ArrayAttr(*ends))};
  if (c.input(3)) {
    auto axes = c.constantIntsInput(3, "axes");
    if (failed(axes))
      return failure();
    attrs.push_back(c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(*axes)));
  }
  if (c.input(4)) {
    auto steps = c.constantIntsInput(4, "steps");
    if (failed(steps))
      return failure();
    attrs.push_back(
        c.b.getNamedAttr("steps", c.b.getDenseI64ArrayAttr(*steps)));
  }
  auto op = createInferred<nn::SliceOp>(c, {*x}, attrs);
  if (failed(op))
    return failure();
  // Slices of integer constants (shape computations) fold.
  auto in = typeOf(*x);
  auto outType = op->getType();
  auto ints = c.constantInts(*x);
  if (!ints || !in.hasStaticShape() || !outType.hasStaticShape())
    return SmallVector<Value>{*op};
  int64_t rank = in.getRank();
  SmallVector<int64_t> first(rank, 0), step(rank, 1);
  SmallVector<int64_t> axes;
  if (auto a = (*op).getAxes())
    axes.assign(a->begin(), a->end());
  else
    for (int64_t d = 0; d < static_cast<int64_t>(starts->size()); ++d)
      axes.push_back(d);
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return c.error() << "slice axis out of range";
    int64_t n = in.getDimSize(axis);
    int64_t st = (*op).getSteps() ? (*(*op).getSteps())[i] : 1;
    int64_t start = (*starts)[i];
    if (start < 0)
      start += n;
    start = std::max<int64_t>(0, std::min(start, st > 0 ? n : n - 1));
    first[axis] = start;
    step[axis] = st;
  }
  SmallVector<int64_t> inStrides = stridesOf(in.getShape()), out;
  for (int64_t flat = 0; flat < outType.getNumElements(); ++flat) {
    int64_t rem = flat, off = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t v = first[d] + (rem % outType.getDimSize(d)) * step[d];
      rem /= outType.getDimSize(d);
      if (v < 0 || v >= in.getDimSize(d))
        return c.error() << "slice index " << v << " is out of range";
      off += v * inStrides[d];
    }
    out.push_back((*ints)[off]);
  }
  op->erase();
  return single(intConstant(c, outType, out));
}

HandlerResult gather(NodeContext &c) {
  auto data = c.tensorInput(0), indices = c.tensorInput(1);
  if (failed(data) || failed(indices))
    return failure();
  int64_t axisAttr = c.intAttrOr("axis", 0);
  // Gathers from 1-D integer constants (picking a dimension) fold.
  auto d = c.constantInts(*data), idx = c.constantInts(*indices);
  if (d && idx && typeOf(*data).getRank() == 1) {
    SmallVector<int64_t> out;
    int64_t n = d->size();
    for (int64_t i : *idx) {
      if (i < -n || i >= n)
        return c.error() << "index " << i << " is out of range for " << n
                         << " elements";
      out.push_back((*d)[i < 0 ? i + n : i]);
    }
    auto type = RankedTensorType::get(typeOf(*indices).getShape(),
                                      typeOf(*data).getElementType());
    return single(intConstant(c, type, out));
  }
  return single(createInferred<nn::GatherOp>(
      c, {*data, *indices},
      {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(axisAttr))}));
}

FailureOr<SmallVector<int64_t>> axesOf(NodeContext &c, bool required) {
  // Opsets 11 and 12 carry the axes as an attribute, 13 on as input #1.
  if (c.opset() < 13) {
    if (auto a = c.intsAttr("axes"))
      return *a;
  } else if (c.input(1)) {
    return c.constantIntsInput(1, "axes");
  }
  if (required)
    return c.error() << "input #1 (axes) is missing";
  return SmallVector<int64_t>();
}

/// Unsqueeze and Squeeze: axes from input #1; on a constant integer tensor
/// (a shape vector) the result folds to a reshaped constant.
template <typename OpTy>
HandlerResult reshapeAxes(NodeContext &c) {
  bool unsqueeze = std::is_same_v<OpTy, nn::UnsqueezeOp>;
  auto x = c.tensorInput(0);
  auto axes = axesOf(c, /*required=*/unsqueeze);
  if (failed(x) || failed(axes))
    return failure();
  SmallVector<NamedAttribute> attrs;
  if (!axes->empty())
    attrs.push_back(c.b.getNamedAttr("axes", c.b.getDenseI64ArrayAttr(*axes)));
  auto op = createInferred<OpTy>(c, {*x}, attrs);
  if (failed(op))
    return failure();
  if (c.constantInts(*x)) {
    auto shape = op->getType().getShape();
    op->erase();
    return single(reshapeTo(c, *x, shape));
  }
  return SmallVector<Value>{op->getResult()};
}

HandlerResult shape(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> dims = typeOf(*x).getShape();
  int64_t rank = dims.size();
  int64_t start = c.intAttrOr("start", 0), end = c.intAttrOr("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  SmallVector<int64_t> out;
  for (int64_t i = start; i < end; ++i) {
    if (ShapedType::isDynamic(dims[i]))
      return c.error() << "dimension " << i
                       << " of the input is dynamic; bind symbolic dimensions with "
                          "--dim NAME=SIZE or --input-shape (rewire-run binds them from its "
                          "inputs; rewire-train: --batch, --seq-len)";
    out.push_back(dims[i]);
  }
  return SmallVector<Value>{makeI64Constant(c.b, c.loc(), out)};
}

HandlerResult castOp(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto to = c.intAttr("to");
  if (!to)
    return c.error() << "the 'to' attribute is required";
  Type elt = elementTypeOf(c.b.getContext(), static_cast<int32_t>(*to));
  if (!elt)
    return c.error() << "cannot cast to ONNX data type " << *to;
  auto type = RankedTensorType::get(typeOf(*x).getShape(), elt);
  // A cast to the type the value has (`x.to(torch.float32)` in RMSNorms) is
  // the identity.
  if (type == typeOf(*x))
    return SmallVector<Value>{*x};
  if (auto ints = c.constantInts(*x); ints && isa<IntegerType>(elt) &&
                                      !elt.isInteger(1))
    return single(intConstant(c, type, *ints));
  // A float constant in another float type (CastLike(-inf, x) in the
  // Attention function body), rounded to nearest as arith.truncf does.
  if (isa<FloatType>(elt) && type.getNumElements() <= 4096)
    if (auto floats = c.constantFloats(*x);
        floats && static_cast<int64_t>(floats->size()) == type.getNumElements())
      return SmallVector<Value>{floatsConstant(c, type, *floats)};
  return SmallVector<Value>{nn::CastOp::create(c.b, c.loc(), type, *x)};
}

/// Size(x): the element count, a constant (static shapes).
HandlerResult size(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  if (!typeOf(*x).hasStaticShape())
    return c.error() << "the input's shape is dynamic; bind symbolic dimensions with --dim";
  return SmallVector<Value>{
      makeI64Constant(c.b, c.loc(), {typeOf(*x).getNumElements()}, /*scalar=*/true)};
}

/// BitCast(x, to): nn.bitcast (the verifier checks the widths).
HandlerResult bitCast(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto to = c.intAttr("to");
  Type elt = to ? elementTypeOf(c.b.getContext(), static_cast<int32_t>(*to)) : Type();
  if (!elt)
    return c.error() << "the 'to' attribute must name a data type Rewire supports";
  auto op = nn::BitcastOp::create(c.b, c.loc(), RankedTensorType::get(typeOf(*x).getShape(), elt), *x);
  if (failed(op.verify())) {
    op.erase();
    return failure();
  }
  return SmallVector<Value>{op};
}

/// CastLike(x, like): Cast to like's element type.
HandlerResult castLike(NodeContext &c) {
  auto x = c.tensorInput(0), like = c.tensorInput(1);
  if (failed(x) || failed(like))
    return failure();
  auto type = RankedTensorType::get(typeOf(*x).getShape(), typeOf(*like).getElementType());
  if (type == typeOf(*x))
    return SmallVector<Value>{*x};
  return SmallVector<Value>{nn::CastOp::create(c.b, c.loc(), type, *x)};
}

const Handler kHandlers[] = {
    {"Size", 1, 28, size},
    {"CastLike", 15, 28, castLike},
    {"BitCast", 26, 28, bitCast},
    {"Reshape", 5, 28, reshape},
    {"Flatten", 1, 28, flatten},
    {"Transpose", 1, 28, transpose},
    {"Concat", 4, 28, concat},
    {"Split", 2, 28, split},
    {"Slice", 10, 28, slice},
    {"Gather", 1, 28, gather},
    {"Unsqueeze", 1, 28, reshapeAxes<nn::UnsqueezeOp>},
    {"Squeeze", 1, 28, reshapeAxes<nn::SqueezeOp>},
    {"Shape", 1, 28, shape},
    {"Cast", 6, 28, castOp},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::shapeHandlers() { return kHandlers; }
