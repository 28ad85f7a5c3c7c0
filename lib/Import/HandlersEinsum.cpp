//===- HandlersEinsum.cpp - ONNX Einsum as nn ops -------------------------===//
//
// Einsum of one or two operands, written with the ops a matmul-based
// backend runs well: per operand, repeated letters take the diagonal (a
// product with an identity mask summed over the second axis) and letters
// no one else reads are summed out; two operands then meet in one batched
// nn.matmul over [batch, rows, contracted] x [batch, contracted, columns]
// after transposes and reshapes, and the result is permuted to the
// requested order. "..." stands for the same leading dims in every operand;
// an equation without "->" outputs its letters that occur once, sorted.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

#include "rewire/Support/Checked.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {

/// An operand with one letter per dim.
struct Term {
  Value value;
  std::string letters;
};

/// The dims of `letters` in `t`, in the order of `letters`.
SmallVector<int64_t> positionsOf(const Term &t, StringRef letters) {
  SmallVector<int64_t> out;
  for (char l : letters)
    out.push_back(static_cast<int64_t>(t.letters.find(l)));
  return out;
}

/// `t` with its dims permuted to the order of `letters` (a permutation of
/// t.letters).
Term permuted(Expr &e, const Term &t, const std::string &letters) {
  if (t.letters == letters)
    return t;
  return {e.transpose(t.value, positionsOf(t, letters)), letters};
}

/// Takes the diagonal of every letter repeated in `t`.
Term diagonals(NodeContext &c, Expr &e, Term t) {
  for (size_t i = 0; i < t.letters.size() && t.value; ++i) {
    size_t j = t.letters.find(t.letters[i], i + 1);
    if (j == std::string::npos)
      continue;
    auto type = typeOf(t.value);
    int64_t n = type.getDimSize(i), rank = type.getRank();
    SmallVector<int64_t> shape(rank, 1);
    shape[i] = n;
    shape[j] = n;
    SmallVector<double> eye(n * n, 0.0);
    for (int64_t k = 0; k < n; ++k)
      eye[k * n + k] = 1.0;
    Value mask = floatsConstant(c, RankedTensorType::get(shape, type.getElementType()), eye);
    t.value = e.reduce<nn::ReduceSumOp>(e.mul(t.value, mask), {static_cast<int64_t>(j)}, false);
    t.letters.erase(j, 1);
    --i; // a letter may repeat more than twice
  }
  return t;
}

/// Sums out the letters of `t` not in `keep`.
Term sumOut(Expr &e, Term t, StringRef keep) {
  SmallVector<int64_t> axes;
  std::string rest;
  for (size_t i = 0; i < t.letters.size(); ++i) {
    if (keep.contains(t.letters[i]))
      rest += t.letters[i];
    else
      axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.empty())
    return t;
  return {e.reduce<nn::ReduceSumOp>(t.value, axes, false), rest};
}

int64_t sizeOf(const Term &t, StringRef letters) {
  int64_t n = 1;
  auto type = typeOf(t.value);
  for (int64_t p : positionsOf(t, letters))
    n *= type.getDimSize(p);
  return n;
}

HandlerResult einsum(NodeContext &c) {
  std::string eq = c.stringAttr("equation").value_or("");
  eq.erase(std::remove_if(eq.begin(), eq.end(), [](char ch) { return ch == ' '; }), eq.end());
  auto inputs = c.tensorInputs();
  if (failed(inputs))
    return failure();
  if (inputs->size() > 2)
    return c.error() << "Einsum of " << inputs->size()
                     << " operands is not supported (one or two; chain Einsum nodes)";
  StringRef lhs = eq, rhs;
  bool explicitOut = false;
  if (size_t arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = StringRef(eq).take_front(arrow);
    rhs = StringRef(eq).drop_front(arrow + 2);
    explicitOut = true;
  }
  SmallVector<StringRef> specs;
  lhs.split(specs, ',');
  if (specs.size() != inputs->size())
    return c.error() << "equation '" << eq << "' names " << specs.size() << " operands, the node has "
                     << inputs->size();
  // "..." becomes capital letters (ONNX equations use lower case), the same
  // ones for every operand, aligned to the right.
  int64_t ellipsisRank = -1;
  SmallVector<Term> terms;
  for (auto [spec, v] : llvm::zip(specs, *inputs)) {
    auto type = typeOf(v);
    if (!type.hasStaticShape())
      return c.error() << "expects static operands, got " << type;
    std::string letters;
    size_t dots = spec.find("...");
    int64_t named = static_cast<int64_t>(spec.size()) - (dots == StringRef::npos ? 0 : 3);
    if (dots != StringRef::npos) {
      int64_t r = type.getRank() - named;
      if (r < 0 || (ellipsisRank >= 0 && r != ellipsisRank))
        return c.error() << "the '...' of '" << spec << "' does not fit " << type;
      ellipsisRank = r;
    }
    for (size_t i = 0; i < spec.size(); ++i) {
      if (i == dots) {
        for (int64_t k = 0; k < ellipsisRank; ++k)
          letters += static_cast<char>('A' + k);
        i += 2;
        continue;
      }
      if (!llvm::isLower(spec[i]))
        return c.error() << "equation '" << eq << "' has '" << spec[i]
                         << "'; operands are spelled with lower-case letters and '...'";
      letters += spec[i];
    }
    if (static_cast<int64_t>(letters.size()) != type.getRank())
      return c.error() << "'" << spec << "' names " << letters.size() << " dims of " << type;
    terms.push_back({v, letters});
  }
  if (ellipsisRank > 26)
    return c.error() << "'...' stands for too many dims";
  // The output letters.
  std::string out;
  if (explicitOut) {
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs.substr(i).starts_with("...")) {
        for (int64_t k = 0; k < std::max<int64_t>(ellipsisRank, 0); ++k)
          out += static_cast<char>('A' + k);
        i += 2;
        continue;
      }
      if (!llvm::isLower(rhs[i]) || out.find(rhs[i]) != std::string::npos)
        return c.error() << "the output '" << rhs << "' must name distinct lower-case letters";
      out += rhs[i];
    }
  } else {
    for (int64_t k = 0; k < std::max<int64_t>(ellipsisRank, 0); ++k)
      out += static_cast<char>('A' + k);
    std::string all;
    for (const Term &t : terms)
      all += t.letters;
    for (char l = 'a'; l <= 'z'; ++l)
      if (std::count(all.begin(), all.end(), l) == 1)
        out += l;
  }
  // Every letter's size agrees across operands.
  for (char l : out) {
    bool found = false;
    for (const Term &t : terms)
      found |= t.letters.find(l) != std::string::npos;
    if (!found)
      return c.error() << "output letter '" << l << "' is in no operand";
  }
  for (size_t i = 0; i + 1 < terms.size(); ++i)
    for (size_t p = 0; p < terms[i].letters.size(); ++p) {
      size_t q = terms[i + 1].letters.find(terms[i].letters[p]);
      if (q != std::string::npos &&
          typeOf(terms[i].value).getDimSize(p) != typeOf(terms[i + 1].value).getDimSize(q))
        return c.error() << "letter '" << terms[i].letters[p] << "' has two sizes";
    }

  Expr e{c};
  for (Term &t : terms) {
    t = diagonals(c, e, t);
    std::string keep = out;
    for (const Term &o : terms)
      if (&o != &t)
        keep += o.letters;
    t = sumOut(e, t, keep);
    if (!t.value)
      return failure();
  }
  Term result = terms[0];
  if (terms.size() == 2) {
    const Term &a = terms[0], &b = terms[1];
    std::string batch, rows, cols, inner;
    for (char l : a.letters) {
      bool inB = b.letters.find(l) != std::string::npos, inOut = out.find(l) != std::string::npos;
      (inB ? (inOut ? batch : inner) : rows) += l;
    }
    for (char l : b.letters)
      if (a.letters.find(l) == std::string::npos)
        cols += l;
    int64_t nb = sizeOf(a, batch), m = sizeOf(a, rows), k = sizeOf(a, inner),
            n = sizeOf(b, cols);
    Term pa = permuted(e, a, batch + rows + inner), pb = permuted(e, b, batch + inner + cols);
    Value mm = make<nn::MatMulOp>(c, {e.reshape(pa.value, {nb, m, k}), e.reshape(pb.value, {nb, k, n})});
    SmallVector<int64_t> shape;
    for (char l : batch + rows)
      shape.push_back(typeOf(a.value).getDimSize(a.letters.find(l)));
    for (char l : cols)
      shape.push_back(typeOf(b.value).getDimSize(b.letters.find(l)));
    result = {e.reshape(mm, shape), batch + rows + cols};
    if (!result.value)
      return failure();
  }
  result = sumOut(e, result, out);
  return e.done(permuted(e, result, out).value);
}

const Handler kHandlers[] = {
    {"Einsum", 12, 28, einsum},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::einsumHandlers() { return kHandlers; }
