//===- Sinkhorn.cpp - nn.sinkhorn and its gradient to linalg --------------===//
//
// The fused lowering of nn.sinkhorn and nn.sinkhorn_grad (NNOps.td): one
// linalg.generic over the matrices (every axis but the last two) whose body
// holds a whole n x n matrix in scalars, exp, the `iters` rounds (and for
// the gradient their recomputation and the rounds backward) written out
// into it. The matrix's n * n entries are read through n * n indexing maps
// with constant trailing coordinates and written as n * n results of the
// matrices' shape, which a second, elementwise generic gathers back into
// [..., n, n]. Where the entries run along vectorized loops, this is the
// matrix in registers: on the CPU the loop over the matrices vectorizes, on
// the GPU one thread computes one matrix. Against the 2 * iters rounds of
// nn ops of nn::decomposeSinkhorn (and the rounds of their gradient, each a
// pass over the tensor), that is one read and one write.
//
// Each normalization multiplies its n lines by one reciprocal each (n
// divisions and n * n products, not n * n divisions: an fp32 division is a
// dozen instructions on the GPU; results differ from the decomposition's
// divisions in the last bits). The gradient keeps only each step's n
// reciprocals and walks back from the last matrix, undoing each step
// (y_{t-1} = y_t / r_t) instead of keeping all 2 * iters matrices: on the
// GPU, where one thread holds a matrix, the kept matrices (640 values for
// n = 4 and 20 rounds) spilled to local memory and the gradient took 190 us
// for 2048 matrices on an H200, six times the forward.
//
// Matrices larger than kMaxEntries entries, or shapes that are not static,
// take the decompositions instead (the body grows as iters * n * n).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"
#include "passes/Conversion/NNToLinalg/NNToLinalgPatterns.h"

#include "dialects/nn/NNDecompose.h"
#include "dialects/nn/NNOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace rewire;

namespace {

/// n * n above this takes the decomposition (mHC's n = 4 is 16; n = 8, 64).
constexpr int64_t kMaxEntries = 64;

/// A matrix of scalars in the body, row-major.
using Matrix = SmallVector<Value, 16>;

struct Scalars {
  OpBuilder &b;
  Location l;
  int64_t n;
  Value add(Value x, Value y) { return arith::AddFOp::create(b, l, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, l, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, l, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, l, x, y); }
  /// Entry k of line `line` (a row when `rows`, else a column).
  int64_t at(bool rows, int64_t line, int64_t k) const { return rows ? line * n + k : k * n + line; }
  /// Sum of `m` over each line.
  SmallVector<Value> sums(const Matrix &m, bool rows) {
    SmallVector<Value> s;
    for (int64_t line = 0; line < n; ++line) {
      Value acc = m[at(rows, line, 0)];
      for (int64_t k = 1; k < n; ++k)
        acc = add(acc, m[at(rows, line, k)]);
      s.push_back(acc);
    }
    return s;
  }
  /// `m` with each line multiplied by its entry of `r`.
  Matrix scaled(const Matrix &m, ArrayRef<Value> r, bool rows) {
    Matrix out(m.size());
    for (int64_t line = 0; line < n; ++line)
      for (int64_t k = 0; k < n; ++k)
        out[at(rows, line, k)] = mul(m[at(rows, line, k)], r[line]);
    return out;
  }
  /// 1 / each of `s`.
  SmallVector<Value> reciprocals(ArrayRef<Value> s) {
    Value one = floatConstant(b, l, s.front().getType(), 1.0);
    SmallVector<Value> r;
    for (Value v : s)
      r.push_back(div(one, v));
    return r;
  }
  /// exp(z - max z).
  Matrix start(ArrayRef<Value> z) {
    Value top = z[0];
    for (Value v : z.drop_front())
      top = arith::MaximumFOp::create(b, l, top, v);
    Matrix m;
    for (Value v : z)
      m.push_back(math::ExpOp::create(b, l, sub(v, top)));
    return m;
  }
};

/// One normalization of the forward: its lines' reciprocal sums, direction.
struct Step {
  SmallVector<Value> r;
  bool rows;
};

/// The rounds on `m0`, each step's reciprocals kept in `steps` when given.
Matrix rounds(Scalars &S, Matrix m, int64_t iters, SmallVectorImpl<Step> *steps) {
  for (int64_t i = 0; i < iters; ++i)
    for (bool rows : {true, false}) {
      SmallVector<Value> r = S.reciprocals(S.sums(m, rows));
      m = S.scaled(m, r, rows);
      if (steps)
        steps->push_back({r, rows});
    }
  return m;
}

/// The shapes the fused lowering takes: static, rank > 2, n * n <= the limit.
bool fusable(RankedTensorType t) {
  return t.hasStaticShape() && t.getRank() > 2 &&
         t.getDimSize(t.getRank() - 1) * t.getDimSize(t.getRank() - 1) <= kMaxEntries;
}

/// The fused generics: `inputs` ([..., n, n] each) read entry by entry,
/// `body` mapping their n * n scalars (concatenated) to the result's, then
/// the gather into [..., n, n].
Value fused(ConversionPatternRewriter &rw, Location loc, RankedTensorType type, ValueRange inputs,
            function_ref<Matrix(Scalars &, ArrayRef<Value>)> body) {
  MLIRContext *ctx = rw.getContext();
  int64_t rank = type.getRank(), n = type.getDimSize(rank - 1), loops = rank - 2;
  Type elt = type.getElementType();
  ArrayRef<int64_t> matrices = type.getShape().drop_back(2);
  SmallVector<AffineExpr> tokens;
  for (int64_t d = 0; d < loops; ++d)
    tokens.push_back(getAffineDimExpr(d, ctx));
  SmallVector<AffineMap> maps;
  SmallVector<Value> operands;
  for (Value in : inputs)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        SmallVector<AffineExpr> e(tokens);
        e.push_back(getAffineConstantExpr(i, ctx));
        e.push_back(getAffineConstantExpr(j, ctx));
        maps.push_back(AffineMap::get(loops, 0, e, ctx));
        operands.push_back(in);
      }
  SmallVector<Value> inits;
  SmallVector<Type> resultTypes;
  for (int64_t k = 0; k < n * n; ++k) {
    inits.push_back(tensor::EmptyOp::create(rw, loc, matrices, elt));
    resultTypes.push_back(inits.back().getType());
    maps.push_back(rw.getMultiDimIdentityMap(loops));
  }
  SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::parallel);
  auto entries = linalg::GenericOp::create(
      rw, loc, resultTypes, operands, inits, maps, iters,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Scalars S{b, l, n};
        SmallVector<Value> in(args.take_front(operands.size()));
        Matrix out = body(S, in);
        linalg::YieldOp::create(b, l, ValueRange(out));
      });
  // result[..., i, j] = entry i * n + j.
  SmallVector<AffineMap> gatherMaps(n * n,
                                    AffineMap::get(rank, 0, ArrayRef(tokens), ctx));
  Value init = tensor::EmptyOp::create(rw, loc, type.getShape(), elt);
  return parallelGeneric(
      rw, loc, init, entries.getResults(), gatherMaps, [&](OpBuilder &b, Location l, ValueRange v) {
        Value i = linalg::IndexOp::create(b, l, rank - 2);
        Value j = linalg::IndexOp::create(b, l, rank - 1);
        Value nn = arith::ConstantIndexOp::create(b, l, n);
        Value k = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, i, nn), j);
        Value picked = v.back();
        for (int64_t e = n * n - 2; e >= 0; --e) {
          Value is = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, k,
                                           arith::ConstantIndexOp::create(b, l, e));
          picked = arith::SelectOp::create(b, l, is, v[e], picked);
        }
        return picked;
      });
}

/// The gradient's body: the forward again (each step's reciprocals r = 1/s
/// kept), then from the last step back `dx = (dy - sum(dy * y)) r` along
/// each line, undoing the step (`y <- y / r`) for the one before, and
/// `dz = dm0 * m0`. `v`: z's entries, then dm's.
Matrix gradientBody(Scalars &S, ArrayRef<Value> v, int64_t iters) {
  size_t entries = v.size() / 2;
  Matrix m0 = S.start(v.take_front(entries));
  SmallVector<Step> steps;
  Matrix y = rounds(S, m0, iters, &steps);
  Matrix g(v.begin() + entries, v.end());
  for (const Step &st : llvm::reverse(steps)) {
    for (int64_t line = 0; line < S.n; ++line) {
      Value dot;
      for (int64_t k = 0; k < S.n; ++k) {
        int64_t e = S.at(st.rows, line, k);
        Value term = S.mul(g[e], y[e]);
        dot = dot ? S.add(dot, term) : term;
      }
      for (int64_t k = 0; k < S.n; ++k) {
        int64_t e = S.at(st.rows, line, k);
        g[e] = S.mul(S.sub(g[e], dot), st.r[line]);
      }
    }
    if (&st != &steps.front())
      y = S.scaled(y, S.reciprocals(st.r), st.rows);
  }
  for (size_t e = 0; e < entries; ++e)
    g[e] = S.mul(g[e], m0[e]);
  return g;
}

/// nn.sinkhorn (`Grad` false) or nn.sinkhorn_grad: fused where `fusable`,
/// else the decomposition (whose nn ops the conversion then legalizes).
template <typename Op, bool Grad>
struct SinkhornLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor a,
                                ConversionPatternRewriter &rw) const override {
    auto type = cast<RankedTensorType>(op.getType());
    int64_t iters = static_cast<int64_t>(op.getIters());
    SmallVector<Value> inputs = {a.getZ()};
    if constexpr (Grad)
      inputs.push_back(a.getDm());
    if (!fusable(type)) {
      ImplicitLocOpBuilder b(op.getLoc(), rw);
      if constexpr (Grad)
        rw.replaceOp(op, nn::decomposeSinkhornGrad(b, inputs[0], inputs[1], iters));
      else
        rw.replaceOp(op, nn::decomposeSinkhorn(b, inputs[0], iters));
      return success();
    }
    rw.replaceOp(op, fused(rw, op.getLoc(), type, inputs, [&](Scalars &S, ArrayRef<Value> v) {
      if constexpr (Grad)
        return gradientBody(S, v, iters);
      else
        return rounds(S, S.start(v), iters, nullptr);
    }));
    return success();
  }
};

} // namespace

void rewire::populateNNSinkhornLowering(RewritePatternSet &patterns) {
  patterns.add<SinkhornLowering<nn::SinkhornOp, false>, SinkhornLowering<nn::SinkhornGradOp, true>>(
      patterns.getContext());
}
