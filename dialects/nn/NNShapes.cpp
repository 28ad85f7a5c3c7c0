//===- NNShapes.cpp - Shape inference of the nn ops -----------------------===//
//
// inferReturnTypes of every nn op whose result shape follows from its
// operands and attributes. Errors name the op and the operand and give the
// expected against the actual shape; they are reported through the verifier
// (InferTypeOpInterface) or returned to builders silently.
//
//===----------------------------------------------------------------------===//
#include "dialects/nn/NNOps.h"

#include "rewire/Support/Shape.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::nn;

static_assert(rewire::kDynamicDim == ShapedType::kDynamic,
              "rewire::kDynamicDim must match mlir::ShapedType::kDynamic");

namespace {
using Shape = std::vector<int64_t>;

/// Collects one error message; converts to failure().
struct Failer {
  std::optional<Location> loc;
  StringRef opName;
  template <typename... Ts>
  LogicalResult operator()(const char *fmt, Ts &&...args) const {
    std::string msg =
        llvm::formatv(fmt, std::forward<Ts>(args)...).str();
    return emitOptionalError(loc, "'", opName, "' op ", msg);
  }
};
} // namespace

static std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

static std::string shapeStr(ArrayRef<int64_t> s) {
  std::string out;
  for (auto [i, d] : llvm::enumerate(s))
    out += (i ? "x" : "") + dimStr(d);
  return "[" + out + "]";
}

static std::string typeStr(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

static Shape toShape(Type t) {
  auto shape = cast<RankedTensorType>(t).getShape();
  return Shape(shape.begin(), shape.end());
}

static Type elementType(Type t) { return cast<ShapedType>(t).getElementType(); }

static Type tensorOf(ArrayRef<int64_t> shape, Type elt) {
  return RankedTensorType::get(shape, elt);
}

bool nn::areRefinableTypes(TypeRange inferred, TypeRange declared) {
  if (inferred.size() != declared.size())
    return false;
  for (auto [a, b] : llvm::zip(inferred, declared)) {
    auto ta = dyn_cast<RankedTensorType>(a);
    auto tb = dyn_cast<RankedTensorType>(b);
    if (!ta || !tb) {
      if (a != b)
        return false;
      continue;
    }
    if (ta.getElementType() != tb.getElementType() ||
        ta.getRank() != tb.getRank())
      return false;
    for (auto [x, y] : llvm::zip(ta.getShape(), tb.getShape()))
      if (!dimsAgree(x, y))
        return false;
  }
  return true;
}

LogicalResult nn::inferBroadcast(std::optional<Location> loc, StringRef opName,
                                 ArrayRef<Type> operands,
                                 SmallVectorImpl<Type> &results) {
  Failer fail{loc, opName};
  Shape shape;
  Type elt;
  for (auto [i, t] : llvm::enumerate(operands)) {
    Type e = elementType(t);
    bool isCondition = i == 0 && operands.size() == 3;
    if (!isCondition) {
      if (elt && e != elt)
        return fail("operand #{0} has element type {1}, expected {2} like "
                    "the other operands",
                    i, typeStr(e), typeStr(elt));
      elt = e;
    }
    Shape s = toShape(t);
    if (i == 0) {
      shape = s;
      continue;
    }
    auto b = broadcastShapes(shape, s);
    if (!b)
      return fail("operand #{0} of shape {1} does not broadcast with shape "
                  "{2}",
                  i, shapeStr(s), shapeStr(shape));
    shape = *b;
  }
  results.push_back(tensorOf(shape, elt));
  return success();
}

/// Normalizes each axis of `axes` for `rank`; fails on out-of-range or
/// repeated axes.
static FailureOr<SmallVector<int64_t>>
normalizeAxes(const Failer &fail, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> out;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n)
      return fail("axis {0} is out of range for rank {1}", a, rank);
    if (!seen.insert(*n).second)
      return fail("axis {0} is repeated", a);
    out.push_back(*n);
  }
  return out;
}

LogicalResult nn::inferReduce(std::optional<Location> loc, StringRef opName,
                              Type input, ArrayRef<int64_t> axes,
                              bool keepdims, SmallVectorImpl<Type> &results) {
  Failer fail{loc, opName};
  Shape in = toShape(input);
  int64_t rank = in.size();
  auto norm = normalizeAxes(fail, axes, rank);
  if (failed(norm))
    return failure();
  llvm::SmallSet<int64_t, 8> reduce(norm->begin(), norm->end());
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = axes.empty() || reduce.contains(i);
    if (!reduced)
      out.push_back(in[i]);
    else if (keepdims)
      out.push_back(1);
  }
  results.push_back(tensorOf(out, elementType(input)));
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Type lt = adaptor.getLhs().getType(), rt = adaptor.getRhs().getType();
  if (elementType(lt) != elementType(rt))
    return fail("'lhs' element type {0} must match 'rhs' element type {1}",
                typeStr(elementType(lt)),
                typeStr(elementType(rt)));
  Shape a = toShape(lt), b = toShape(rt);
  if (a.empty() || b.empty())
    return fail("operands must have rank >= 1, got ranks {0} and {1}",
                a.size(), b.size());
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA)
    a.insert(a.begin(), 1);
  if (vecB)
    b.push_back(1);
  int64_t m = a[a.size() - 2], ka = a.back();
  int64_t kb = b[b.size() - 2], n = b.back();
  if (!dimsAgree(ka, kb))
    return fail("contraction sizes differ: 'lhs' {0} has K = {1}, 'rhs' {2} "
                "has K = {3}",
                shapeStr(toShape(lt)), dimStr(ka), shapeStr(toShape(rt)),
                dimStr(kb));
  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  auto batch = broadcastShapes(batchA, batchB);
  if (!batch)
    return fail("batch dimensions {0} and {1} do not broadcast",
                shapeStr(batchA), shapeStr(batchB));
  Shape out = *batch;
  if (!vecA)
    out.push_back(m);
  if (!vecB)
    out.push_back(n);
  types.push_back(tensorOf(out, elementType(lt)));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Shape a = toShape(adaptor.getA().getType());
  Shape b = toShape(adaptor.getB().getType());
  if (a.size() != 2 || b.size() != 2)
    return fail("'a' and 'b' must be matrices, got {0} and {1}", shapeStr(a),
                shapeStr(b));
  Type elt = elementType(adaptor.getA().getType());
  if (elementType(adaptor.getB().getType()) != elt)
    return fail("'a' and 'b' must share an element type");
  int64_t m = adaptor.getTransA() ? a[1] : a[0];
  int64_t ka = adaptor.getTransA() ? a[0] : a[1];
  int64_t kb = adaptor.getTransB() ? b[1] : b[0];
  int64_t n = adaptor.getTransB() ? b[0] : b[1];
  if (!dimsAgree(ka, kb))
    return fail("contraction sizes differ: K = {0} from 'a', {1} from 'b'",
                dimStr(ka), dimStr(kb));
  Shape out{m, n};
  if (Value c = adaptor.getC()) {
    if (elementType(c.getType()) != elt)
      return fail("'c' must have the element type of 'a'");
    Shape cs = toShape(c.getType());
    auto bc = broadcastShapes(out, cs);
    if (cs.size() > 2 || !bc || !areRefinableTypes(tensorOf(*bc, elt),
                                                   tensorOf(out, elt)))
      return fail("'c' of shape {0} does not broadcast to [M, N] = {1}",
                  shapeStr(cs), shapeStr(out));
  }
  types.push_back(tensorOf(out, elt));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Shape in = toShape(adaptor.getX().getType());
  int64_t rank = in.size();
  SmallVector<int64_t> perm;
  if (auto p = adaptor.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank)
    return fail("'perm' has {0} entries for an operand of rank {1}",
                perm.size(), rank);
  llvm::SmallSet<int64_t, 8> seen;
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || !seen.insert(p).second)
      return fail("'perm' must be a permutation of 0..{0}, got entry {1}",
                  rank - 1, p);
    out.push_back(in[p]);
  }
  types.push_back(tensorOf(out, elementType(adaptor.getX().getType())));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return fail("needs at least one input");
  Shape out = toShape(inputs[0].getType());
  Type elt = elementType(inputs[0].getType());
  auto axis = normalizeAxis(adaptor.getAxis(), out.size());
  if (!axis)
    return fail("axis {0} is out of range for rank {1}", adaptor.getAxis(),
                out.size());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    Shape s = toShape(v.getType());
    if (elementType(v.getType()) != elt || s.size() != out.size())
      return fail("input #{0} of type {1} must have the rank and element type "
                  "of input #0",
                  i + 1, typeStr(v.getType()));
    for (size_t d = 0; d < s.size(); ++d) {
      if (static_cast<int64_t>(d) == *axis) {
        out[d] = ShapedType::isDynamic(out[d]) || ShapedType::isDynamic(s[d])
                     ? ShapedType::kDynamic
                     : out[d] + s[d];
      } else if (!dimsAgree(out[d], s[d])) {
        return fail("input #{0} has size {1} in dimension {2}, expected {3}",
                    i + 1, dimStr(s[d]), d, dimStr(out[d]));
      } else if (ShapedType::isDynamic(out[d])) {
        out[d] = s[d];
      }
    }
  }
  types.push_back(tensorOf(out, elt));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Shape in = toShape(adaptor.getX().getType());
  auto axis = normalizeAxis(adaptor.getAxis(), in.size());
  if (!axis)
    return fail("axis {0} is out of range for rank {1}", adaptor.getAxis(),
                in.size());
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty())
    return fail("'sizes' must not be empty");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > (int64_t(1) << 48))
      return fail("split size {0} is invalid", s);
    total += s;
  }
  if (!ShapedType::isDynamic(in[*axis]) && total != in[*axis])
    return fail("'sizes' add up to {0}, but dimension {1} has size {2}", total,
                *axis, in[*axis]);
  for (int64_t s : sizes) {
    Shape out = in;
    out[*axis] = s;
    types.push_back(tensorOf(out, elementType(adaptor.getX().getType())));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Shape out = toShape(adaptor.getX().getType());
  int64_t rank = out.size();
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds();
  size_t n = starts.size();
  SmallVector<int64_t> axes, steps(n, 1);
  if (auto a = adaptor.getAxes())
    axes.assign(a->begin(), a->end());
  else
    for (size_t i = 0; i < n; ++i)
      axes.push_back(i);
  if (auto s = adaptor.getSteps())
    steps.assign(s->begin(), s->end());
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    return fail("'starts', 'ends', 'axes' and 'steps' must have the same "
                "length, got {0}, {1}, {2} and {3}",
                n, ends.size(), axes.size(), steps.size());
  auto norm = normalizeAxes(fail, axes, rank);
  if (failed(norm))
    return failure();
  for (size_t i = 0; i < n; ++i) {
    int64_t ax = (*norm)[i], step = steps[i];
    if (step == 0)
      return fail("step for axis {0} must not be 0", axes[i]);
    int64_t dim = out[ax];
    if (ShapedType::isDynamic(dim))
      continue;
    // ONNX clamping: negative indices count from the end; starts clamp to
    // [0, dim] (or [0, dim-1] for negative steps), ends to [-1, dim].
    auto clampIdx = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v = v < -dim ? -1 : v + dim;
      return std::min(std::max(v, lo), hi);
    };
    int64_t start, end;
    if (step > 0) {
      start = clampIdx(starts[i], 0, dim);
      end = clampIdx(ends[i], 0, dim);
      out[ax] = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = clampIdx(starts[i], -1, dim - 1);
      end = clampIdx(ends[i], -1, dim - 1);
      out[ax] = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
  }
  types.push_back(tensorOf(out, elementType(adaptor.getX().getType())));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Shape data = toShape(adaptor.getData().getType());
  Shape idx = toShape(adaptor.getIndices().getType());
  // Default-valued attributes are not populated yet while parsing.
  int64_t axisValue = adaptor.getAxisAttr() ? adaptor.getAxisAttr().getInt() : 0;
  auto axis = normalizeAxis(axisValue, data.size());
  if (!axis)
    return fail("axis {0} is out of range for 'data' of rank {1}", axisValue,
                data.size());
  Shape out(data.begin(), data.begin() + *axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + *axis + 1, data.end());
  types.push_back(tensorOf(out, elementType(adaptor.getData().getType())));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Shape in = toShape(adaptor.getX().getType());
  int64_t rank = in.size() + adaptor.getAxes().size();
  if (adaptor.getAxes().empty())
    return fail("'axes' must not be empty");
  auto norm = normalizeAxes(fail, adaptor.getAxes(), rank);
  if (failed(norm))
    return failure();
  llvm::SmallSet<int64_t, 8> inserted(norm->begin(), norm->end());
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(inserted.contains(i) ? 1 : in[next++]);
  types.push_back(tensorOf(out, elementType(adaptor.getX().getType())));
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Shape in = toShape(adaptor.getX().getType());
  llvm::SmallSet<int64_t, 8> removed;
  if (auto axes = adaptor.getAxes()) {
    auto norm = normalizeAxes(fail, *axes, in.size());
    if (failed(norm))
      return failure();
    for (int64_t a : *norm) {
      if (!dimsAgree(in[a], 1))
        return fail("cannot squeeze axis {0} of size {1}", a, in[a]);
      removed.insert(a);
    }
  } else {
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] == 1)
        removed.insert(i);
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!removed.contains(i))
      out.push_back(in[i]);
  types.push_back(tensorOf(out, elementType(adaptor.getX().getType())));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolutional networks
//===----------------------------------------------------------------------===//

/// Spatial output sizes of a window op over `in` = [N, C, D1..Dk].
static FailureOr<Shape> windowOutput(const Failer &fail, const Shape &in,
                                     ArrayRef<int64_t> kernel,
                                     std::optional<ArrayRef<int64_t>> strides,
                                     std::optional<ArrayRef<int64_t>> pads,
                                     std::optional<ArrayRef<int64_t>> dilations) {
  size_t k = in.size() - 2;
  auto check = [&](std::optional<ArrayRef<int64_t>> v, size_t want,
                   StringRef name) -> LogicalResult {
    if (v && v->size() != want)
      return fail("'{0}' must have {1} entries for {2} spatial dimensions, "
                  "got {3}",
                  name, want, k, v->size());
    return success();
  };
  if (failed(check(strides, k, "strides")) || failed(check(pads, 2 * k, "pads")) ||
      failed(check(dilations, k, "dilations")))
    return failure();
  Shape out;
  for (size_t i = 0; i < k; ++i) {
    int64_t s = strides ? (*strides)[i] : 1;
    int64_t d = dilations ? (*dilations)[i] : 1;
    int64_t pb = pads ? (*pads)[i] : 0, pe = pads ? (*pads)[i + k] : 0;
    if (ShapedType::isDynamic(kernel[i])) {
      out.push_back(ShapedType::kDynamic);
      continue;
    }
    auto o = convOutputSize(in[i + 2], kernel[i], s, pb, pe, d);
    if (!o)
      return fail("spatial dimension {0}: window {1} (stride {2}, dilation "
                  "{3}, pads {4}+{5}) does not fit input size {6}",
                  i, kernel[i], s, d, pb, pe, dimStr(in[i + 2]));
    out.push_back(*o);
  }
  return out;
}

/// The result shape of nn.conv over `x` with weights `w` (and bias type
/// `bias`, when given); shared by the op and the verifiers of its gradients.
static FailureOr<Shape> convResult(const Failer &fail, Type xType, Type wType,
                                   Type bias, std::optional<ArrayRef<int64_t>> strides,
                                   std::optional<ArrayRef<int64_t>> pads,
                                   std::optional<ArrayRef<int64_t>> dilations,
                                   int64_t group) {
  Shape x = toShape(xType);
  Shape w = toShape(wType);
  Type elt = elementType(xType);
  if (x.size() < 3)
    return fail("'x' must be [N, C, D1..Dk] with k >= 1, got {0}",
                shapeStr(x));
  if (w.size() != x.size())
    return fail("'w' must have the rank of 'x' ({0}), got {1}", x.size(),
                shapeStr(w));
  if (elementType(wType) != elt)
    return fail("'w' must have the element type of 'x'");
  if (group < 1)
    return fail("'group' must be >= 1, got {0}", group);
  if (!ShapedType::isDynamic(x[1]) && x[1] % group != 0)
    return fail("input channels {0} are not divisible by group {1}", x[1],
                group);
  if (!ShapedType::isDynamic(x[1]) && !dimsAgree(w[1], x[1] / group))
    return fail("'w' must have C/group = {0} input channels, got {1}",
                x[1] / group, dimStr(w[1]));
  if (!ShapedType::isDynamic(w[0]) && w[0] % group != 0)
    return fail("output channels {0} are not divisible by group {1}", w[0],
                group);
  if (bias) {
    auto bt = cast<RankedTensorType>(bias);
    if (bt.getRank() != 1 || !dimsAgree(bt.getDimSize(0), w[0]) ||
        bt.getElementType() != elt)
      return fail("'b' must be a vector of M = {0} elements, got {1}",
                  dimStr(w[0]), typeStr(bias));
  }
  auto spatial = windowOutput(fail, x, ArrayRef<int64_t>(w).drop_front(2),
                              strides, pads, dilations);
  if (failed(spatial))
    return failure();
  Shape out{x[0], w[0]};
  out.insert(out.end(), spatial->begin(), spatial->end());
  return out;
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Value b = adaptor.getB();
  auto out = convResult(fail, adaptor.getX().getType(), adaptor.getW().getType(),
                        b ? b.getType() : Type(), adaptor.getStrides(), adaptor.getPads(),
                        adaptor.getDilations(),
                        adaptor.getGroupAttr() ? adaptor.getGroupAttr().getInt() : 1);
  if (failed(out))
    return failure();
  types.push_back(tensorOf(*out, elementType(adaptor.getX().getType())));
  return success();
}

/// A gradient op's `dy` must have the shape its forward op gives.
static LogicalResult checkGradient(const Failer &fail, Type dy, const Shape &forward,
                                   Type elt) {
  Shape d = toShape(dy);
  bool agree = d.size() == forward.size() && elementType(dy) == elt;
  for (size_t i = 0; agree && i < d.size(); ++i)
    agree = dimsAgree(d[i], forward[i]);
  if (!agree)
    return fail("'dy' must be the forward op's result type {0} of {1}, got {2}",
                shapeStr(forward), typeStr(elt), typeStr(dy));
  return success();
}

LogicalResult ConvInputGradOp::verify() {
  Failer fail{getLoc(), getOperationName()};
  auto forward = convResult(fail, getType(), getW().getType(), Type(), getStrides(),
                            getPads(), getDilations(), static_cast<int64_t>(getGroup()));
  if (failed(forward))
    return failure();
  return checkGradient(fail, getDy().getType(), *forward, elementType(getType()));
}

LogicalResult ConvWeightGradOp::verify() {
  Failer fail{getLoc(), getOperationName()};
  auto forward = convResult(fail, getX().getType(), getType(), Type(), getStrides(),
                            getPads(), getDilations(), static_cast<int64_t>(getGroup()));
  if (failed(forward))
    return failure();
  return checkGradient(fail, getDy().getType(), *forward, elementType(getType()));
}

static FailureOr<Shape> maxPoolResult(const Failer &fail, Type xType,
                                      ArrayRef<int64_t> kernel,
                                      std::optional<ArrayRef<int64_t>> strides,
                                      std::optional<ArrayRef<int64_t>> pads) {
  Shape x = toShape(xType);
  if (x.size() < 3)
    return fail("'x' must be [N, C, D1..Dk] with k >= 1, got {0}",
                shapeStr(x));
  if (kernel.size() != x.size() - 2)
    return fail("'kernel_shape' must have {0} entries, got {1}", x.size() - 2,
                kernel.size());
  auto spatial = windowOutput(fail, x, kernel, strides, pads, std::nullopt);
  if (failed(spatial))
    return failure();
  Shape out{x[0], x[1]};
  out.insert(out.end(), spatial->begin(), spatial->end());
  return out;
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  auto out = maxPoolResult(fail, adaptor.getX().getType(), adaptor.getKernelShape(),
                           adaptor.getStrides(), adaptor.getPads());
  if (failed(out))
    return failure();
  types.push_back(tensorOf(*out, elementType(adaptor.getX().getType())));
  return success();
}

LogicalResult MaxPoolGradOp::verify() {
  Failer fail{getLoc(), getOperationName()};
  auto forward = maxPoolResult(fail, getX().getType(), getKernelShape(), getStrides(),
                               getPads());
  if (failed(forward))
    return failure();
  return checkGradient(fail, getDy().getType(), *forward, elementType(getX().getType()));
}

LogicalResult GlobalAveragePoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Shape x = toShape(adaptor.getX().getType());
  if (x.size() < 3)
    return fail("'x' must be [N, C, D1..Dk] with k >= 1, got {0}",
                shapeStr(x));
  Shape out(x.size(), 1);
  out[0] = x[0];
  out[1] = x[1];
  types.push_back(tensorOf(out, elementType(adaptor.getX().getType())));
  return success();
}

//===----------------------------------------------------------------------===//
// Selection and composites
//===----------------------------------------------------------------------===//

/// The broadcast shape of two operands with an i1 element type (nn.compare,
/// nn.logical).
static LogicalResult inferBoolBroadcast(MLIRContext *ctx, std::optional<Location> loc,
                                        StringRef opName, Type lhs, Type rhs,
                                        SmallVectorImpl<Type> &types) {
  if (failed(inferBroadcast(loc, opName, {lhs, rhs}, types)))
    return failure();
  auto t = cast<RankedTensorType>(types.back());
  types.back() = RankedTensorType::get(t.getShape(), IntegerType::get(ctx, 1));
  return success();
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferBoolBroadcast(ctx, loc, getOperationName(), adaptor.getLhs().getType(),
                            adaptor.getRhs().getType(), types);
}

LogicalResult LogicalOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Type lhs = getElementTypeOrSelf(adaptor.getLhs().getType());
  if (lhs != getElementTypeOrSelf(adaptor.getRhs().getType()))
    return emitOptionalError(loc, getOperationName(), ": operands have element types ", lhs,
                             " and ", getElementTypeOrSelf(adaptor.getRhs().getType()),
                             "; expected one type");
  return inferBroadcast(loc, getOperationName(), {adaptor.getLhs().getType(), adaptor.getRhs().getType()},
                        types);
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferBroadcast(loc, getOperationName(),
                        {adaptor.getCond().getType(), adaptor.getX().getType(),
                         adaptor.getY().getType()},
                        types);
}

/// The operands of nn.attention and nn.attention_grad: q, k, v of
/// [B, H, T, D] with one element type, a bias broadcasting to the scores,
/// a positive finite scale. Sets the result shape [B, H, Tq, Dv].
static LogicalResult checkAttention(const Failer &fail, Value qv, Value kv, Value vv, Value bias,
                                    std::optional<APFloat> scale, Shape &out, Type &elt) {
  Shape q = toShape(qv.getType());
  Shape k = toShape(kv.getType());
  Shape v = toShape(vv.getType());
  elt = elementType(qv.getType());
  if (q.size() != 4 || k.size() != 4 || v.size() != 4)
    return fail("'q', 'k' and 'v' must be [B, H, T, D], got {0}, {1} and {2}",
                shapeStr(q), shapeStr(k), shapeStr(v));
  if (elementType(kv.getType()) != elt || elementType(vv.getType()) != elt)
    return fail("'q', 'k' and 'v' must share an element type");
  for (int i = 0; i < 2; ++i)
    if (!dimsAgree(q[i], k[i]) || !dimsAgree(k[i], v[i]))
      return fail("batch and head dimensions must agree, got {0}, {1} and {2}",
                  shapeStr(q), shapeStr(k), shapeStr(v));
  if (!dimsAgree(q[3], k[3]))
    return fail("'q' and 'k' must have the same head size, got {0} and {1}",
                dimStr(q[3]), dimStr(k[3]));
  if (!dimsAgree(k[2], v[2]))
    return fail("'k' and 'v' must have the same length, got {0} and {1}",
                dimStr(k[2]), dimStr(v[2]));
  if (bias) {
    Shape m = toShape(bias.getType());
    if (elementType(bias.getType()) != elt)
      return fail("'bias' must have the element type of 'q'");
    Shape scores = {q[0], q[1], q[2], k[2]};
    bool fits = m.size() <= 4;
    for (size_t i = 0; fits && i < m.size(); ++i) {
      int64_t want = scores[4 - m.size() + i];
      fits = m[i] == 1 || dimsAgree(m[i], want);
    }
    if (!fits)
      return fail("'bias' {0} does not broadcast to the scores [B, H, Tq, Tk] = {1}",
                  shapeStr(m), shapeStr(scores));
  }
  if (scale && !(scale->convertToDouble() > 0.0 && std::isfinite(scale->convertToDouble())))
    return fail("'scale' must be positive and finite, got {0}", scale->convertToDouble());
  out = {q[0], q[1], q[2], v[3]};
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  Shape out;
  Type elt;
  if (failed(checkAttention(Failer{loc, getOperationName()}, adaptor.getQ(), adaptor.getK(),
                            adaptor.getV(), adaptor.getBias(), adaptor.getScale(), out, elt)))
    return failure();
  types.push_back(tensorOf(out, elt));
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  Failer fail{loc, getOperationName()};
  Shape out;
  Type elt;
  if (failed(checkAttention(fail, adaptor.getQ(), adaptor.getK(), adaptor.getV(),
                            adaptor.getBias(), adaptor.getScale(), out, elt)))
    return failure();
  for (auto [name, value] : {std::pair("out", adaptor.getOut()), std::pair("dout", adaptor.getDout())}) {
    Shape got = toShape(value.getType());
    bool agree = got.size() == 4 && elementType(value.getType()) == elt;
    for (size_t i = 0; agree && i < 4; ++i)
      agree = dimsAgree(got[i], out[i]);
    if (!agree)
      return fail("'{0}' must be the attention's result [B, H, Tq, Dv] = {1} of the operands' "
                  "element type, got {2}", name, shapeStr(out), shapeStr(got));
  }
  for (Value v : {adaptor.getQ(), adaptor.getK(), adaptor.getV()})
    types.push_back(v.getType());
  return success();
}
