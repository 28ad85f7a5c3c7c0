//===- HandlersLogic.cpp - Comparisons, logic and generated tensors ------===//
//
// Handlers for the comparisons (Equal, Less, ..., IsNaN, IsInf), boolean
// logic (And, Or, Xor, Not), Where, Min/Max/Clip/Mod and the ops that generate or
// broadcast tensors (ConstantOfShape, Range, Expand, Tile, Trilu) and CumSum. Masks built from shapes alone (causal masks, position ids) are
// folded here into constants; the rest become nn.compare / nn.logical /
// nn.where / nn.max / nn.min, or the decompositions named at each handler,
// so no op here needs a lowering of its own.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

#include "rewire/Support/Checked.h"
#include "rewire/Support/Shape.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {


/// The values of an integer or i1 nn.constant (i1 as 0/1).
std::optional<SmallVector<int64_t>> constantValues(Value v) {
  auto cst = v ? v.getDefiningOp<nn::ConstantOp>() : nn::ConstantOp();
  if (!cst)
    return std::nullopt;
  auto ints = dyn_cast<DenseIntElementsAttr>(cst.getValue());
  if (!ints)
    return std::nullopt;
  bool isBool = ints.getElementType().isInteger(1);
  SmallVector<int64_t> out;
  for (const APInt &x : ints.getValues<APInt>())
    out.push_back(isBool ? int64_t(x.getBoolValue()) : x.getSExtValue());
  return out;
}

/// An integer or i1 nn.constant of `type` holding `values`.
Value intOrBoolConstant(NodeContext &c, RankedTensorType type, ArrayRef<int64_t> values) {
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> bits;
  for (int64_t v : values)
    bits.push_back(width == 1 ? APInt(1, v != 0)
                              : APInt(width, v, /*isSigned=*/true, /*implicitTrunc=*/true));
  return nn::ConstantOp::create(c.b, c.loc(), type, DenseIntElementsAttr::get(type, bits));
}


/// Folds an elementwise op on constant integer/i1 operands with NumPy
/// broadcasting; null when an operand is not such a constant or a shape is
/// not static. `fn` returns nullopt when a value cannot be computed exactly
/// (overflow, division by zero): that is an error naming the node.
using Fold = std::optional<int64_t> (*)(ArrayRef<int64_t>);
FailureOr<Value> foldElementwise(NodeContext &c, ArrayRef<Value> operands, Type resultElt,
                                 Fold fn) {
  SmallVector<SmallVector<int64_t>> vals;
  std::vector<int64_t> shape;
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto t = typeOf(v);
    auto cv = constantValues(v);
    if (!cv || !t.hasStaticShape())
      return Value();
    vals.push_back(*cv);
    std::vector<int64_t> s(t.getShape().begin(), t.getShape().end());
    if (i == 0) {
      shape = s;
      continue;
    }
    auto b = broadcastShapes(shape, s);
    if (!b)
      return Value();
    shape = *b;
  }
  auto n = checkedNumElements(shape, 1 << 20);
  if (!n)
    return Value();
  int64_t rank = shape.size();
  SmallVector<int64_t> out;
  SmallVector<int64_t> idx(rank, 0), args(operands.size());
  for (int64_t flat = 0; flat < *n; ++flat) {
    for (int64_t r = rank - 1, rem = flat; r >= 0; --r) {
      idx[r] = rem % shape[r];
      rem /= shape[r];
    }
    for (auto [k, v] : llvm::enumerate(operands)) {
      ArrayRef<int64_t> s = typeOf(v).getShape();
      int64_t off = 0, o = s.size();
      for (int64_t d = 0; d < o; ++d)
        off = off * s[d] + (s[d] == 1 ? 0 : idx[rank - o + d]);
      args[k] = vals[k][off];
    }
    auto r = fn(args);
    if (!r)
      return c.error() << "folding constant operands: element " << flat
                       << " has no exact value in the result type (overflow "
                          "or division by zero)";
    out.push_back(*r);
  }
  return intOrBoolConstant(c, RankedTensorType::get(shape, resultElt), out);
}

//===----------------------------------------------------------------------===//
// Comparisons and logic
//===----------------------------------------------------------------------===//

template <nn::ComparePredicate Pred>
HandlerResult compare(NodeContext &c) {
  auto lhs = c.tensorInput(0), rhs = c.tensorInput(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  Type i1 = c.b.getI1Type();
  FailureOr<Value> folded = foldElementwise(
      c, {*lhs, *rhs}, i1, [](ArrayRef<int64_t> a) -> std::optional<int64_t> {
        switch (Pred) {
        case nn::ComparePredicate::eq: return a[0] == a[1];
        case nn::ComparePredicate::ne: return a[0] != a[1];
        case nn::ComparePredicate::lt: return a[0] < a[1];
        case nn::ComparePredicate::le: return a[0] <= a[1];
        case nn::ComparePredicate::gt: return a[0] > a[1];
        case nn::ComparePredicate::ge: return a[0] >= a[1];
        }
        return std::nullopt;
      });
  if (failed(folded) || *folded)
    return single(folded);
  return single(createInferred<nn::CompareOp>(
      c, {*lhs, *rhs},
      {c.b.getNamedAttr("predicate", c.b.getAttr<nn::ComparePredicateAttr>(Pred))}));
}

/// IsNaN(x) = x ne x (the only value unequal to itself).
HandlerResult isNaN(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(typeOf(*x).getElementType()))
    return c.error() << "expects a floating-point input, got " << x->getType();
  return single(createInferred<nn::CompareOp>(
      c, {*x, *x},
      {c.b.getNamedAttr("predicate",
                        c.b.getAttr<nn::ComparePredicateAttr>(nn::ComparePredicate::ne))}));
}

/// IsInf(x) = x eq +inf (detect_positive) or x eq -inf (detect_negative).
HandlerResult isInf(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  Type elt = typeOf(*x).getElementType();
  if (!isa<FloatType>(elt))
    return c.error() << "expects a floating-point input, got " << x->getType();
  bool pos = c.intAttrOr("detect_positive", 1) != 0;
  bool neg = c.intAttrOr("detect_negative", 1) != 0;
  auto scalar = RankedTensorType::get({}, elt);
  auto eq = [&](double v) {
    return createInferred<nn::CompareOp>(
        c, {*x, splatConstant(c, scalar, v)},
        {c.b.getNamedAttr("predicate",
                          c.b.getAttr<nn::ComparePredicateAttr>(nn::ComparePredicate::eq))});
  };
  double inf = std::numeric_limits<double>::infinity();
  if (!pos && !neg)
    return SmallVector<Value>{splatConstant(c, RankedTensorType::get(typeOf(*x).getShape(), c.b.getI1Type()), 0)};
  if (pos != neg)
    return single(eq(pos ? inf : -inf));
  auto p = eq(inf), n = eq(-inf);
  if (failed(p) || failed(n))
    return failure();
  return single(createInferred<nn::LogicalOp>(
      c, {p->getResult(), n->getResult()},
      {c.b.getNamedAttr("kind", c.b.getAttr<nn::LogicalKindAttr>(nn::LogicalKind::or_))}));
}

template <nn::LogicalKind Kind>
HandlerResult logical(NodeContext &c) {
  auto lhs = c.tensorInput(0), rhs = c.tensorInput(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (!typeOf(*lhs).getElementType().isInteger(1) || !typeOf(*rhs).getElementType().isInteger(1))
    return c.error() << "expects bool operands, got " << lhs->getType() << " and "
                     << rhs->getType();
  FailureOr<Value> folded = foldElementwise(
      c, {*lhs, *rhs}, c.b.getI1Type(), [](ArrayRef<int64_t> a) -> std::optional<int64_t> {
        switch (Kind) {
        case nn::LogicalKind::and_: return a[0] && a[1];
        case nn::LogicalKind::or_: return a[0] || a[1];
        case nn::LogicalKind::xor_: return (a[0] != 0) != (a[1] != 0);
        }
        return std::nullopt;
      });
  if (failed(folded) || *folded)
    return single(folded);
  return single(createInferred<nn::LogicalOp>(
      c, {*lhs, *rhs}, {c.b.getNamedAttr("kind", c.b.getAttr<nn::LogicalKindAttr>(Kind))}));
}

/// BitwiseAnd/Or/Xor: nn.logical on integer tensors (folded when constant).
template <nn::LogicalKind Kind>
HandlerResult bitwise(NodeContext &c) {
  auto lhs = c.tensorInput(0), rhs = c.tensorInput(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  Type elt = typeOf(*lhs).getElementType();
  if (!isa<IntegerType>(elt) || elt.isInteger(1) || typeOf(*rhs).getElementType() != elt)
    return c.error() << "expects two integer tensors of one type, got " << lhs->getType() << " and "
                     << rhs->getType();
  FailureOr<Value> folded = foldElementwise(
      c, {*lhs, *rhs}, elt, [](ArrayRef<int64_t> a) -> std::optional<int64_t> {
        switch (Kind) {
        case nn::LogicalKind::and_: return a[0] & a[1];
        case nn::LogicalKind::or_: return a[0] | a[1];
        case nn::LogicalKind::xor_: return a[0] ^ a[1];
        }
        return std::nullopt;
      });
  if (failed(folded) || *folded)
    return single(folded);
  return single(createInferred<nn::LogicalOp>(
      c, {*lhs, *rhs}, {c.b.getNamedAttr("kind", c.b.getAttr<nn::LogicalKindAttr>(Kind))}));
}

HandlerResult bitwiseNot(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  Type elt = typeOf(*x).getElementType();
  if (!isa<IntegerType>(elt) || elt.isInteger(1))
    return c.error() << "expects an integer input, got " << x->getType();
  return SmallVector<Value>{nn::NotOp::create(c.b, c.loc(), *x)};
}

HandlerResult notOp(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  if (!typeOf(*x).getElementType().isInteger(1))
    return c.error() << "expects a bool input, got " << x->getType();
  FailureOr<Value> folded = foldElementwise(
      c, {*x}, c.b.getI1Type(),
      [](ArrayRef<int64_t> a) -> std::optional<int64_t> { return a[0] == 0; });
  if (failed(folded) || *folded)
    return single(folded);
  return SmallVector<Value>{nn::NotOp::create(c.b, c.loc(), *x)};
}

/// Where(cond, x, y): folded when all three are integer/bool constants (the
/// `-1 -> 1` substitutions of exported Expand shapes), else nn.where.
HandlerResult where(NodeContext &c) {
  auto cond = c.tensorInput(0), x = c.tensorInput(1), y = c.tensorInput(2);
  if (failed(cond) || failed(x) || failed(y))
    return failure();
  if (!typeOf(*cond).getElementType().isInteger(1))
    return c.error() << "the condition must be a bool tensor";
  if (typeOf(*x).getElementType() == typeOf(*y).getElementType()) {
    FailureOr<Value> folded = foldElementwise(
        c, {*cond, *x, *y}, typeOf(*x).getElementType(),
        [](ArrayRef<int64_t> a) -> std::optional<int64_t> { return a[0] ? a[1] : a[2]; });
    if (failed(folded) || *folded)
      return single(folded);
  }
  return single(createInferred<nn::WhereOp>(c, {*cond, *x, *y}));
}

//===----------------------------------------------------------------------===//
// Min, Max, Clip, Mod
//===----------------------------------------------------------------------===//

/// Max/Min of one or more operands (variadic, broadcasting): a chain of
/// nn.max / nn.min, folded on constant integers.
template <typename OpTy>
HandlerResult extremum(NodeContext &c) {
  bool isMax = std::is_same_v<OpTy, nn::MaxOp>;
  auto inputs = c.tensorInputs();
  if (failed(inputs))
    return failure();
  SmallVector<Value> xs = *inputs;
  Value acc = xs[0];
  for (Value x : ArrayRef<Value>(xs).drop_front()) {
    FailureOr<Value> folded = foldElementwise(
        c, {acc, x}, typeOf(acc).getElementType(),
        isMax ? Fold([](ArrayRef<int64_t> a) -> std::optional<int64_t> { return std::max(a[0], a[1]); })
              : Fold([](ArrayRef<int64_t> a) -> std::optional<int64_t> { return std::min(a[0], a[1]); }));
    if (failed(folded))
      return failure();
    if (*folded) {
      acc = *folded;
      continue;
    }
    auto op = createInferred<OpTy>(c, {acc, x});
    if (failed(op))
      return failure();
    acc = op->getResult();
  }
  return SmallVector<Value>{acc};
}

/// A scalar of x's element type, from an optional input (opset >= 11) or a
/// float attribute (older opsets).
FailureOr<Value> boundOf(NodeContext &c, Value x, unsigned input, StringRef attr,
                         bool &present) {
  present = false;
  if (c.opset() >= 11) {
    Value v = c.input(input);
    if (!v)
      return Value();
    auto t = typeOf(v);
    if (t.getElementType() != typeOf(x).getElementType() || t.getNumElements() != 1)
      return c.error() << "input #" << input << " must be a scalar of the input's type, got "
                       << v.getType();
    present = true;
    return v;
  }
  auto f = c.floatAttr(attr);
  if (!f)
    return Value();
  present = true;
  return splatConstant(c, RankedTensorType::get({}, typeOf(x).getElementType()), *f);
}

/// Clip(x, lo, hi) = min(max(x, lo), hi) for the bounds that are present.
HandlerResult clip(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  bool hasLo, hasHi;
  auto lo = boundOf(c, *x, 1, "min", hasLo);
  auto hi = boundOf(c, *x, 2, "max", hasHi);
  if (failed(lo) || failed(hi))
    return failure();
  Value y = *x;
  if (hasLo) {
    auto m = createInferred<nn::MaxOp>(c, {y, *lo});
    if (failed(m))
      return failure();
    y = m->getResult();
  }
  if (hasHi) {
    auto m = createInferred<nn::MinOp>(c, {y, *hi});
    if (failed(m))
      return failure();
    y = m->getResult();
  }
  return SmallVector<Value>{y};
}

/// Mod on constant integers (shape arithmetic): fmod = 0 takes the sign of
/// the divisor (Python's %), fmod = 1 of the dividend (C's %).
HandlerResult mod(NodeContext &c) {
  auto a = c.tensorInput(0), b = c.tensorInput(1);
  if (failed(a) || failed(b))
    return failure();
  bool fmod = c.intAttrOr("fmod", 0) != 0;
  FailureOr<Value> folded = foldElementwise(
      c, {*a, *b}, typeOf(*a).getElementType(),
      fmod ? Fold([](ArrayRef<int64_t> v) -> std::optional<int64_t> {
        if (v[1] == 0 || (v[0] == std::numeric_limits<int64_t>::min() && v[1] == -1))
          return std::nullopt;
        return v[0] % v[1];
      })
           : Fold([](ArrayRef<int64_t> v) -> std::optional<int64_t> {
        if (v[1] == 0 || (v[0] == std::numeric_limits<int64_t>::min() && v[1] == -1))
          return std::nullopt;
        int64_t r = v[0] % v[1];
        return (r != 0 && ((r < 0) != (v[1] < 0))) ? r + v[1] : r;
      }));
  if (failed(folded) || *folded)
    return single(folded);
  // At run time: r = a - trunc(a / b) * b (C's fmod; integer nn.div
  // truncates, floats truncate through floor/ceil), then for fmod = 0 the
  // remainder takes the divisor's sign: r + b where r != 0 and the signs
  // differ.
  Type elt = typeOf(*a).getElementType();
  bool isFloat = isa<FloatType>(elt);
  if (typeOf(*b).getElementType() != elt)
    return c.error() << "the operands must have one element type";
  Expr e{c};
  Value zero = e.num(*a, 0);
  Value q = e.div(*a, *b);
  if (isFloat && q)
    q = e.where(e.cmp(nn::ComparePredicate::lt, q, zero), e.un<nn::CeilOp>(q),
                e.un<nn::FloorOp>(q));
  Value r = e.sub(*a, e.mul(q, *b));
  if (!fmod) {
    Value differ = e.logical(nn::LogicalKind::xor_, e.cmp(nn::ComparePredicate::lt, r, zero),
                             e.cmp(nn::ComparePredicate::lt, *b, zero));
    Value fix = e.logical(nn::LogicalKind::and_, e.cmp(nn::ComparePredicate::ne, r, zero), differ);
    r = e.where(fix, e.add(r, *b), r);
    // Floats (opset 28): a finite a over an infinite b is a when their signs
    // agree (or a is 0), else b; the formula above gives NaN there. NaNs,
    // infinite a and zero b stay NaN, as ONNX specifies.
    if (isFloat) {
      Value inf = e.cmp(nn::ComparePredicate::eq, e.un<nn::AbsOp>(*b), e.num(*b, INFINITY));
      Value finite = e.cmp(nn::ComparePredicate::lt, e.un<nn::AbsOp>(*a), e.num(*a, INFINITY));
      Value same = e.logical(nn::LogicalKind::or_, e.cmp(nn::ComparePredicate::eq, *a, zero),
                             e.logical(nn::LogicalKind::xor_, e.cmp(nn::ComparePredicate::lt, *a, zero),
                                       e.cmp(nn::ComparePredicate::gt, *b, zero)));
      r = e.where(e.logical(nn::LogicalKind::and_, inf, finite), e.where(same, *a, *b), r);
    }
  }
  return e.done(r);
}

/// BitShift(x, y): LEFT is x * 2^y (wrapping); RIGHT is x / 2^y, logical
/// for unsigned x, arithmetic (rounding toward -inf) for signed x (opset
/// 28). A shift outside [0, width) leaves what the sign extension alone
/// gives: -1 for a right shift of a negative x, else 0. nn.pow on
/// integers multiplies with wraparound.
HandlerResult bitShift(NodeContext &c) {
  auto x = c.tensorInput(0), y = c.tensorInput(1);
  if (failed(x) || failed(y))
    return failure();
  auto elt = dyn_cast<IntegerType>(typeOf(*x).getElementType());
  if (!elt || elt.getWidth() == 1 || typeOf(*y).getElementType() != elt ||
      (!elt.isUnsigned() && c.opset() < 28))
    return c.error() << "expects two tensors of one " << (c.opset() < 28 ? "unsigned " : "")
                     << "integer type, got " << x->getType() << " and " << y->getType();
  std::string direction = c.stringAttr("direction").value_or("");
  if (direction != "LEFT" && direction != "RIGHT")
    return c.error() << "direction must be LEFT or RIGHT, got '" << direction << "'";
  Expr e{c};
  double width = elt.getWidth();
  bool isSigned = !elt.isUnsigned();
  Value zero = e.num(*x, 0), two = e.num(*x, 2);
  Value outside = e.cmp(nn::ComparePredicate::ge, *y, e.num(*y, width));
  if (isSigned)
    outside = e.logical(nn::LogicalKind::or_, outside, e.cmp(nn::ComparePredicate::lt, *y, zero));
  Value shift = e.where(outside, e.num(*y, 0), *y);
  Value p = e.pow(two, shift);
  if (direction == "LEFT")
    return e.done(e.where(outside, zero, e.mul(*x, p)));
  Value q = e.div(*x, p);
  Value fill = zero;
  if (isSigned) {
    // Truncation toward zero, moved down for a negative x with a remainder.
    Value negative = e.cmp(nn::ComparePredicate::lt, *x, zero);
    Value inexact = e.cmp(nn::ComparePredicate::ne, e.mul(q, p), *x);
    q = e.where(e.logical(nn::LogicalKind::and_, negative, inexact), e.sub(q, e.num(*x, 1)), q);
    fill = e.where(negative, e.num(*x, -1), zero);
  }
  return e.done(e.where(outside, fill, q));
}

//===----------------------------------------------------------------------===//
// Generated and broadcast tensors
//===----------------------------------------------------------------------===//

/// ConstantOfShape(shape): a splat constant; the shape must be known.
HandlerResult constantOfShape(NodeContext &c) {
  auto shape = c.constantIntsInput(0, "shape");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return c.error() << "shape entry " << d << " is negative";
  auto n = checkedNumElements(std::vector<int64_t>(shape->begin(), shape->end()));
  if (!n)
    return c.error() << "the shape has too many elements";
  Type elt = c.b.getF32Type();
  double value = 0;
  if (Attribute attr = c.node.getAttrs().get("value")) {
    auto dense = dyn_cast<DenseElementsAttr>(attr);
    if (!dense || dense.getNumElements() != 1)
      return c.error() << "'value' must be a one-element tensor";
    elt = dense.getElementType();
    if (isa<FloatType>(elt))
      value = (*dense.getValues<APFloat>().begin()).convertToDouble();
    else if (elt.isInteger(1))
      value = (*dense.getValues<APInt>().begin()).getBoolValue();
    else
      value = static_cast<double>((*dense.getValues<APInt>().begin()).getSExtValue());
  }
  return SmallVector<Value>{splatConstant(c, RankedTensorType::get(*shape, elt), value)};
}

/// A scalar float nn.constant's value.
std::optional<double> constantFloat(NodeContext &c, Value v) {
  auto f = c.constantFloats(v);
  if (!f || f->size() != 1)
    return std::nullopt;
  return (*f)[0];
}

/// Range on constant floats: start + i * delta for i < ceil((limit - start)
/// / delta), as ONNX defines it.
HandlerResult floatRange(NodeContext &c, FloatType ft) {
  auto a = constantFloat(c, c.input(0)), l = constantFloat(c, c.input(1)),
       d = constantFloat(c, c.input(2));
  if (!a || !l || !d)
    return c.error() << "start, limit and delta must be constant scalars (a range computed "
                        "at run time is not supported)";
  if (*d == 0 || !std::isfinite(*a) || !std::isfinite(*l) || !std::isfinite(*d))
    return c.error() << "delta must be nonzero and the bounds finite";
  double n = std::max(std::ceil((*l - *a) / *d), 0.0);
  if (n > double(1 << 24))
    return c.error() << "the range has more than 2^24 elements";
  SmallVector<double> out;
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i)
    out.push_back(*a + double(i) * *d);
  auto type = RankedTensorType::get({static_cast<int64_t>(out.size())}, ft);
  return SmallVector<Value>{floatsConstant(c, type, out)};
}

/// Range(start, limit, delta) on constant integers: a constant.
HandlerResult range(NodeContext &c) {
  auto s = c.tensorInput(0);
  if (failed(s))
    return failure();
  Type elt = typeOf(*s).getElementType();
  if (auto ft = dyn_cast<FloatType>(elt))
    return floatRange(c, ft);
  auto a = c.constantIntsInput(0, "start"), l = c.constantIntsInput(1, "limit"),
       d = c.constantIntsInput(2, "delta");
  if (failed(a) || failed(l) || failed(d))
    return failure();
  if (a->size() != 1 || l->size() != 1 || d->size() != 1)
    return c.error() << "start, limit and delta must be scalars";
  int64_t start = (*a)[0], limit = (*l)[0], delta = (*d)[0];
  if (delta == 0)
    return c.error() << "delta is 0";
  SmallVector<int64_t> out;
  for (int64_t v = start; delta > 0 ? v < limit : v > limit;) {
    if (out.size() >= (1u << 24))
      return c.error() << "the range has more than 2^24 elements";
    out.push_back(v);
    auto next = checkedAdd(v, delta);
    if (!next)
      break;
    v = *next;
  }
  return SmallVector<Value>{intOrBoolConstant(
      c, RankedTensorType::get({static_cast<int64_t>(out.size())}, elt), out)};
}

/// Expand(x, shape): x broadcast with `shape` (either may stretch the
/// other, ONNX semantics), as nn.where with an all-true condition of the
/// target shape, so that every element type broadcasts and the reverse rule
/// of where sums the gradient back.
HandlerResult expand(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto shape = c.constantIntsInput(1, "shape");
  if (failed(x) || failed(shape))
    return failure();
  std::vector<int64_t> in(typeOf(*x).getShape().begin(), typeOf(*x).getShape().end());
  std::vector<int64_t> target(shape->begin(), shape->end());
  auto out = broadcastShapes(in, target);
  if (!out)
    return c.error() << "the input does not broadcast to the shape";
  if (*out == in)
    return SmallVector<Value>{*x};
  // A constant integer input folds (position ids, masks); others broadcast.
  if (auto vals = constantValues(*x); vals && typeOf(*x).hasStaticShape()) {
    auto n = checkedNumElements(*out, 1 << 20);
    if (n) {
      Value t = splatConstant(c, RankedTensorType::get(*out, c.b.getI1Type()), 1);
      FailureOr<Value> folded = foldElementwise(
          c, {t, *x}, typeOf(*x).getElementType(),
          [](ArrayRef<int64_t> a) -> std::optional<int64_t> { return a[1]; });
      if (failed(folded) || *folded)
        return single(folded);
    }
  }
  Value cond = splatConstant(c, RankedTensorType::get(*out, c.b.getI1Type()), 1);
  return single(createInferred<nn::WhereOp>(c, {cond, *x, *x}));
}

/// Tile(x, repeats): nn.concat of copies along each repeated axis.
HandlerResult tile(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto reps = c.constantIntsInput(1, "repeats");
  if (failed(x) || failed(reps))
    return failure();
  int64_t rank = typeOf(*x).getRank();
  if (static_cast<int64_t>(reps->size()) != rank)
    return c.error() << "repeats has " << reps->size() << " entries for rank " << rank;
  Value y = *x;
  for (int64_t axis = 0; axis < rank; ++axis) {
    int64_t r = (*reps)[axis];
    if (r < 0 || r > 4096)
      return c.error() << "repeat " << r << " of axis " << axis << " is out of range [0, 4096]";
    if (r == 1)
      continue;
    if (r == 0)
      return c.error() << "repeat 0 (an empty result) is not supported";
    SmallVector<Value> parts(r, y);
    auto op = createInferred<nn::ConcatOp>(c, parts,
                                           {c.b.getNamedAttr("axis", c.b.getI64IntegerAttr(axis))});
    if (failed(op))
      return failure();
    y = op->getResult();
  }
  return SmallVector<Value>{y};
}

/// Trilu(x, k): keeps the lower (upper = 0) or upper triangle of the last two
/// dims from diagonal k; a constant x folds, else nn.where with a constant
/// mask (the mask is [M, N] and broadcasts over the batch dims).
HandlerResult trilu(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  if (t.getRank() < 2 || !t.hasStaticShape())
    return c.error() << "expects a static input of rank >= 2, got " << x->getType();
  int64_t k = 0;
  if (c.input(1)) {
    auto kv = c.constantIntsInput(1, "k");
    if (failed(kv))
      return failure();
    if (kv->size() != 1)
      return c.error() << "k must be a scalar";
    k = (*kv)[0];
  }
  bool upper = c.intAttrOr("upper", 1) != 0;
  int64_t m = t.getDimSize(t.getRank() - 2), n = t.getDimSize(t.getRank() - 1);
  if (!fitsBuiltConstant(c, checkedMul(m, n).value_or(-1), "the triangular mask"))
    return failure();
  SmallVector<int64_t> keep;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      keep.push_back(upper ? (j - i >= k) : (j - i <= k));
  Value mask = intOrBoolConstant(c, RankedTensorType::get({m, n}, c.b.getI1Type()), keep);
  if (auto vals = constantValues(*x)) {
    FailureOr<Value> folded = foldElementwise(
        c, {mask, *x}, t.getElementType(),
        [](ArrayRef<int64_t> a) -> std::optional<int64_t> { return a[0] ? a[1] : 0; });
    if (failed(folded) || *folded)
      return single(folded);
  }
  Value zero = splatConstant(c, RankedTensorType::get({}, t.getElementType()), 0);
  return single(createInferred<nn::WhereOp>(c, {mask, *x, zero}));
}

/// EyeLike(x, k, dtype): ones on diagonal k of a 2-D tensor shaped like x.
HandlerResult eyeLike(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto t = typeOf(*x);
  if (t.getRank() != 2 || !t.hasStaticShape())
    return c.error() << "expects a static 2-D input, got " << t;
  Type elt = t.getElementType();
  if (auto dt = c.intAttr("dtype")) {
    elt = elementTypeOf(c.b.getContext(), static_cast<int32_t>(*dt));
    if (!elt)
      return c.error() << "unsupported dtype " << *dt;
  }
  int64_t k = c.intAttrOr("k", 0), m = t.getDimSize(0), n = t.getDimSize(1);
  if (!fitsBuiltConstant(c, checkedMul(m, n).value_or(-1), "the identity matrix"))
    return failure();
  auto type = RankedTensorType::get({m, n}, elt);
  if (isa<FloatType>(elt)) {
    SmallVector<double> v;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        v.push_back(j - i == k ? 1.0 : 0.0);
    return SmallVector<Value>{floatsConstant(c, type, v)};
  }
  SmallVector<int64_t> v;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      v.push_back(j - i == k);
  return SmallVector<Value>{intOrBoolConstant(c, type, v)};
}

/// HannWindow, HammingWindow, BlackmanWindow(size): constants, as ONNX
/// defines them (periodic: N = size, else size - 1; the sum of
/// a_k cos(2 pi k n / N) terms).
HandlerResult window(NodeContext &c) {
  auto size = c.constantIntsInput(0, "size");
  if (failed(size))
    return failure();
  if (size->size() != 1)
    return c.error() << "size must be a scalar";
  int64_t n = (*size)[0];
  if (n < 1 || !fitsBuiltConstant(c, n, "the window"))
    return n < 1 ? (c.error() << "size must be positive, got " << n) : failure();
  Type elt = elementTypeOf(c.b.getContext(), static_cast<int32_t>(c.intAttrOr("output_datatype", 1)));
  if (!elt)
    return c.error() << "unsupported output_datatype " << c.intAttrOr("output_datatype", 1);
  StringRef op = c.node.getOpType();
  SmallVector<double> a = op == "HannWindow"      ? SmallVector<double>{0.5, -0.5}
                          : op == "HammingWindow" ? SmallVector<double>{25.0 / 46, -21.0 / 46}
                                                  : SmallVector<double>{0.42, -0.5, 0.08};
  double period = c.intAttrOr("periodic", 1) ? double(n) : double(n - 1);
  SmallVector<double> w;
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    for (size_t k = 0; k < a.size(); ++k)
      v += a[k] * std::cos(2 * M_PI * double(k) * double(i) / period);
    w.push_back(period == 0 ? 1.0 : v);
  }
  auto type = RankedTensorType::get({n}, elt);
  if (isa<FloatType>(elt))
    return SmallVector<Value>{floatsConstant(c, type, w)};
  SmallVector<int64_t> iw(w.begin(), w.end());
  return SmallVector<Value>{intOrBoolConstant(c, type, iw)};
}

/// CumProd(x, axis): out[i] = prod over j of x[j] for j <= i (j < i when
/// exclusive; j >= i, j > i reversed), as one reduce_prod over a new axis
/// of x broadcast against a constant [n, n] mask (quadratic in the axis
/// length, like nn.cumsum's lowering).
HandlerResult cumProd(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto axisV = c.constantIntsInput(1, "axis");
  if (failed(x) || failed(axisV))
    return failure();
  auto t = typeOf(*x);
  if (axisV->size() != 1)
    return c.error() << "axis must be a scalar";
  int64_t axis = (*axisV)[0], rank = t.getRank();
  if (!normalizeAxisInPlace(axis, rank))
    return c.error() << "axis " << axis << " is out of range for rank " << rank;
  if (!t.hasStaticShape() || !(isa<FloatType>(t.getElementType()) ||
                               (isa<IntegerType>(t.getElementType()) && !t.getElementType().isInteger(1))))
    return c.error() << "expects a static float or integer input, got " << t;
  int64_t n = t.getDimSize(axis);
  if (!fitsBuiltConstant(c, checkedMul(n, n).value_or(-1), "the CumProd mask"))
    return failure();
  bool exclusive = c.intAttrOr("exclusive", 0) != 0, reverse = c.intAttrOr("reverse", 0) != 0;
  SmallVector<int64_t> mask;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      mask.push_back(reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i));
  SmallVector<int64_t> maskShape(rank + 1, 1);
  maskShape[axis] = n;
  maskShape[axis + 1] = n;
  Value m = intOrBoolConstant(c, RankedTensorType::get(maskShape, c.b.getI1Type()), mask);
  Expr e{c};
  Value terms = e.where(m, e.unsqueeze(*x, axis), e.num(*x, 1));
  return e.done(e.reduce<nn::ReduceProdOp>(terms, {axis + 1}, false));
}

/// CumSum: folded on a constant integer tensor (position ids of a constant
/// mask), else nn.cumsum.
HandlerResult cumSum(NodeContext &c) {
  auto x = c.tensorInput(0);
  auto axisV = c.constantIntsInput(1, "axis");
  if (failed(x) || failed(axisV))
    return failure();
  auto t = typeOf(*x);
  if (axisV->size() != 1)
    return c.error() << "axis must be a scalar";
  int64_t axis = (*axisV)[0];
  if (!normalizeAxisInPlace(axis, t.getRank()))
    return c.error() << "axis " << axis << " is out of range for rank " << t.getRank();
  Type elt = t.getElementType();
  if (!isa<FloatType>(elt) && !(elt.isSignlessInteger() && !elt.isInteger(1)))
    return c.error() << "expects a float or integer input, got " << t;
  bool exclusive = c.intAttrOr("exclusive", 0) != 0, reverse = c.intAttrOr("reverse", 0) != 0;
  auto vals = constantValues(*x);
  if (!vals || !t.hasStaticShape() || !isa<IntegerType>(elt))
    return SmallVector<Value>{nn::CumSumOp::create(
        c.b, c.loc(), t, *x, c.b.getI64IntegerAttr(axis),
        exclusive ? c.b.getUnitAttr() : UnitAttr(), reverse ? c.b.getUnitAttr() : UnitAttr())};
  int64_t len = t.getDimSize(axis), inner = 1;
  for (int64_t d = axis + 1; d < t.getRank(); ++d)
    inner *= t.getDimSize(d);
  int64_t outer = len == 0 ? 0 : static_cast<int64_t>(vals->size()) / (len * inner);
  SmallVector<int64_t> out(vals->size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t acc = 0;
      for (int64_t s = 0; s < len; ++s) {
        int64_t pos = reverse ? len - 1 - s : s;
        int64_t at = (o * len + pos) * inner + i;
        if (exclusive)
          out[at] = acc;
        auto next = checkedAdd(acc, (*vals)[at]);
        if (!next)
          return c.error() << "the cumulative sum overflows";
        acc = *next;
        if (!exclusive)
          out[at] = acc;
      }
    }
  return SmallVector<Value>{intOrBoolConstant(c, t, out)};
}

//===----------------------------------------------------------------------===//
// Activations built from the elementwise ops
//===----------------------------------------------------------------------===//

FailureOr<Value> floatInput(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(typeOf(*x).getElementType()))
    return c.error() << "expects a floating-point input, got " << x->getType();
  return *x;
}

Value scalarLike(NodeContext &c, Value x, double v) {
  return splatConstant(c, RankedTensorType::get({}, typeOf(x).getElementType()), v);
}

/// max(0, min(1, alpha x + beta)).
FailureOr<Value> hardSigmoidOf(NodeContext &c, Value x, double alpha, double beta) {
  auto ax = createInferred<nn::MulOp>(c, {x, scalarLike(c, x, alpha)});
  if (failed(ax))
    return failure();
  auto lin = createInferred<nn::AddOp>(c, {ax->getResult(), scalarLike(c, x, beta)});
  if (failed(lin))
    return failure();
  auto hi = createInferred<nn::MinOp>(c, {lin->getResult(), scalarLike(c, x, 1.0)});
  if (failed(hi))
    return failure();
  auto lo = createInferred<nn::MaxOp>(c, {hi->getResult(), scalarLike(c, x, 0.0)});
  if (failed(lo))
    return failure();
  return lo->getResult();
}

HandlerResult hardSigmoid(NodeContext &c) {
  auto x = floatInput(c);
  if (failed(x))
    return failure();
  return single(hardSigmoidOf(c, *x, c.floatAttrOr("alpha", 0.2), c.floatAttrOr("beta", 0.5)));
}

/// HardSwish(x) = x * HardSigmoid(x; 1/6, 1/2).
HandlerResult hardSwish(NodeContext &c) {
  auto x = floatInput(c);
  if (failed(x))
    return failure();
  auto hs = hardSigmoidOf(c, *x, 1.0 / 6.0, 0.5);
  if (failed(hs))
    return failure();
  return single(createInferred<nn::MulOp>(c, {*x, *hs}));
}

template <typename OpTy>
HandlerResult floatUnary(NodeContext &c) {
  auto x = floatInput(c);
  if (failed(x))
    return failure();
  return SmallVector<Value>{OpTy::create(c.b, c.loc(), *x)};
}

/// Abs on integers folds on constants (shape arithmetic); on floats nn.abs.
HandlerResult abs(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  if (isa<FloatType>(typeOf(*x).getElementType()))
    return SmallVector<Value>{nn::AbsOp::create(c.b, c.loc(), *x)};
  FailureOr<Value> folded = foldElementwise(
      c, {*x}, typeOf(*x).getElementType(), [](ArrayRef<int64_t> a) -> std::optional<int64_t> {
        if (a[0] == std::numeric_limits<int64_t>::min())
          return std::nullopt;
        return a[0] < 0 ? -a[0] : a[0];
      });
  if (failed(folded) || *folded)
    return single(folded);
  return c.error() << "Abs of integers is supported on constants only";
}

const Handler kHandlers[] = {
    {"Equal", 7, 28, compare<nn::ComparePredicate::eq>},
    {"Less", 7, 28, compare<nn::ComparePredicate::lt>},
    {"LessOrEqual", 12, 28, compare<nn::ComparePredicate::le>},
    {"Greater", 7, 28, compare<nn::ComparePredicate::gt>},
    {"GreaterOrEqual", 12, 28, compare<nn::ComparePredicate::ge>},
    {"IsNaN", 9, 28, isNaN},
    {"IsInf", 10, 28, isInf},
    {"And", 7, 28, logical<nn::LogicalKind::and_>},
    {"Or", 7, 28, logical<nn::LogicalKind::or_>},
    {"Xor", 7, 28, logical<nn::LogicalKind::xor_>},
    {"Not", 1, 28, notOp},
    {"BitwiseAnd", 18, 28, bitwise<nn::LogicalKind::and_>},
    {"BitwiseOr", 18, 28, bitwise<nn::LogicalKind::or_>},
    {"BitwiseXor", 18, 28, bitwise<nn::LogicalKind::xor_>},
    {"BitwiseNot", 18, 28, bitwiseNot},
    {"Where", 9, 28, where},
    {"Max", 8, 28, extremum<nn::MaxOp>},
    {"Min", 8, 28, extremum<nn::MinOp>},
    {"Clip", 6, 28, clip},
    {"Mod", 10, 28, mod},
    {"BitShift", 11, 28, bitShift},
    {"ConstantOfShape", 9, 28, constantOfShape},
    {"Range", 11, 28, range},
    {"Expand", 8, 28, expand},
    {"Tile", 6, 28, tile},
    {"Trilu", 14, 28, trilu},
    {"CumSum", 11, 28, cumSum},
    {"CumProd", 26, 28, cumProd},
    {"HardSigmoid", 6, 28, hardSigmoid},
    {"HardSwish", 14, 28, hardSwish},
    {"Abs", 6, 28, abs},
    {"Log", 6, 28, floatUnary<nn::LogOp>},
    {"Sin", 7, 28, floatUnary<nn::SinOp>},
    {"Cos", 7, 28, floatUnary<nn::CosOp>},
    {"Floor", 6, 28, floatUnary<nn::FloorOp>},
    {"Ceil", 6, 28, floatUnary<nn::CeilOp>},
    {"Tan", 7, 28, floatUnary<nn::TanOp>},
    {"Asin", 7, 28, floatUnary<nn::AsinOp>},
    {"Acos", 7, 28, floatUnary<nn::AcosOp>},
    {"Atan", 7, 28, floatUnary<nn::AtanOp>},
    {"Sinh", 9, 28, floatUnary<nn::SinhOp>},
    {"Cosh", 9, 28, floatUnary<nn::CoshOp>},
    {"Asinh", 9, 28, floatUnary<nn::AsinhOp>},
    {"Acosh", 9, 28, floatUnary<nn::AcoshOp>},
    {"Atanh", 9, 28, floatUnary<nn::AtanhOp>},
    {"EyeLike", 9, 28, eyeLike},
    {"HannWindow", 17, 28, window},
    {"HammingWindow", 17, 28, window},
    {"BlackmanWindow", 17, 28, window},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::logicHandlers() { return kHandlers; }
