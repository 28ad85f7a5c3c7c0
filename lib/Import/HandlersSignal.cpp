//===- HandlersSignal.cpp - ONNX DFT as matmuls with constant bases -------===//
//
// DFT (opset 17+; the axis an attribute before 20, an input from 20) over
// real ([..., 1]) or complex ([..., 2]) signals: forward, inverse (scaled
// by 1/n), one-sided output, and the inverse of a one-sided spectrum
// (irfft: Hermitian bins weighted 1, 2, ..., 1, a real result). The signal
// axis moves last, is cut or zero-padded to dft_length, and meets constant
// cosine and sine matrices in four nn.matmul (Re and Im of the input times
// the two bases), so it lowers, differentiates and exports as plain ops.
//
//===----------------------------------------------------------------------===//
#include "NodeExpr.h"

#include "rewire/Support/Checked.h"

#include <cmath>

using namespace mlir;
using namespace rewire;
using namespace rewire::onnx_import;

namespace {

HandlerResult dft(NodeContext &c) {
  auto x = c.tensorInput(0);
  if (failed(x))
    return failure();
  auto xt = typeOf(*x);
  int64_t rank = xt.getRank();
  if (!xt.hasStaticShape() || rank < 2 || !isa<FloatType>(xt.getElementType()) ||
      (xt.getDimSize(rank - 1) != 1 && xt.getDimSize(rank - 1) != 2))
    return c.error() << "expects a static float signal [..., 1 or 2], got " << xt;
  int64_t axis = c.intAttrOr("axis", 1);
  if (c.opset() >= 20) {
    axis = -2;
    if (c.input(2)) {
      auto a = c.constantIntsInput(2, "axis");
      if (failed(a) || a->size() != 1)
        return failed(a) ? HandlerResult(failure()) : HandlerResult(c.error() << "axis must be a scalar");
      axis = (*a)[0];
    }
  }
  if (!normalizeAxisInPlace(axis, rank) || axis == rank - 1 || axis == 0)
    return c.error() << "axis " << axis << " must name a signal dim (not the batch or the complex dim)";
  bool inverse = c.intAttrOr("inverse", 0) != 0, onesided = c.intAttrOr("onesided", 0) != 0;
  bool irfft = inverse && onesided;
  int64_t len = xt.getDimSize(axis);
  int64_t n = irfft ? 2 * (len - 1) : len;
  if (Value l = c.input(1)) {
    auto v = c.constantIntsInput(1, "dft_length");
    if (failed(v))
      return failure();
    if (v->size() != 1)
      return c.error() << "dft_length must be a scalar";
    n = (*v)[0];
  }
  if (n < 1 || n > (1 << 16))
    return c.error() << "dft_length " << n << " is out of range";
  // Input bins read and output bins written.
  int64_t in = irfft ? std::min(len, n / 2 + 1) : std::min(len, n);
  int64_t out = !inverse && onesided ? n / 2 + 1 : n;
  if (!fitsBuiltConstant(c, checkedMul(in, out).value_or(-1), "the DFT basis"))
    return failure();
  Expr e{c};
  // The signal axis last: [..., L] for the real and imaginary parts.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  auto part = [&](int64_t k) {
    Value p = e.squeeze(e.slice(*x, rank - 1, k, k + 1), rank - 1);
    return e.transpose(p, perm);
  };
  Value re = part(0), im = xt.getDimSize(rank - 1) == 2 ? part(1) : Value();
  auto fit = [&](Value v) -> Value {
    if (!v)
      return v;
    int64_t have = typeOf(v).getShape().back(), last = typeOf(v).getRank() - 1;
    if (have > in)
      return e.slice(v, last, 0, in);
    if (have < in) {
      SmallVector<int64_t> side(typeOf(v).getShape());
      side.back() = in - have;
      return e.concat({v, splatConstant(c, RankedTensorType::get(side, xt.getElementType()), 0)}, last);
    }
    return v;
  };
  re = fit(re);
  im = fit(im);
  // Re_out = re A + im B, Im_out = re C + im D with [in, out] bases.
  SmallVector<double> A, B, C, D;
  double s = inverse ? 1.0 / double(n) : 1.0;
  for (int64_t j = 0; j < in; ++j)
    for (int64_t k = 0; k < out; ++k) {
      double th = 2 * M_PI * double((j * k) % n) / double(n), cs = std::cos(th), sn = std::sin(th);
      double w = 1;
      if (irfft)
        w = (j == 0 || (n % 2 == 0 && j == n / 2)) ? 1 : 2;
      if (!inverse) {
        A.push_back(cs), B.push_back(sn), C.push_back(-sn), D.push_back(cs);
      } else {
        A.push_back(s * w * cs), B.push_back(-s * w * sn), C.push_back(s * sn), D.push_back(s * cs);
      }
    }
  auto basis = [&](ArrayRef<double> v) {
    return floatsConstant(c, RankedTensorType::get({in, out}, xt.getElementType()), v);
  };
  Value outRe = e.matmul(re, basis(A)), outIm;
  if (im)
    outRe = e.add(outRe, e.matmul(im, basis(B)));
  if (!irfft) {
    outIm = e.matmul(re, basis(C));
    if (im)
      outIm = e.add(outIm, e.matmul(im, basis(D)));
  }
  // Back to the input's dim order, the parts stacked on the last dim.
  SmallVector<int64_t> back(rank - 1);
  for (int64_t d = 0; d < rank - 1; ++d)
    back[perm[d]] = d;
  auto restore = [&](Value v) { return e.unsqueeze(e.transpose(v, back), rank - 1); };
  Value y = irfft ? restore(outRe) : e.concat({restore(outRe), restore(outIm)}, rank - 1);
  return e.done(y);
}

const Handler kHandlers[] = {
    {"DFT", 17, 28, dft},
};

} // namespace

ArrayRef<Handler> rewire::onnx_import::signalHandlers() { return kHandlers; }
