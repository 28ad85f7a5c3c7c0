"""Gradients from rewire-autodiff against PyTorch autograd (float64) and
against finite differences of Rewire's own forward function.

Each case is a small loss function written in the nn/residual dialects and
the same function in PyTorch. rewire-autodiff{wrt=all} adds forward_grad;
rewire-compile compiles it; the runtime (C API) runs it on random inputs;
loss and every input's gradient are compared with torch.autograd on the same
inputs in float64: |got - want| <= 1e-4 * max(1, |want|) (fp32 compute, the
compiler's polynomial exp/tanh/erf).

Then the same case in float64 (every tensor type f32 -> f64): the gradient
of 4 random coordinates of every input against central differences of the
compiled forward, (f(x + h) - f(x - h)) / 2h with h = 1e-6:
|fd - grad| <= 1e-5 * max(1, |grad|). This check needs no PyTorch: it
holds the reverse rules to the forward lowering they differentiate.

    grad_check.py WORKDIR
"""
import math
import os
import re
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import rewire_runtime  # noqa: E402

def _finite(v):
    """A NaN error counts as infinitely wrong (max() would skip it)."""
    return v if v == v else float("inf")


def t(*shape):
    return "tensor<%sxf32>" % "x".join(map(str, shape)) if shape else "tensor<f32>"


CASES = []


def case(name, args, body, fn, positive=()):
    """args: [(name, shape)]; body: MLIR ops ending in `return %loss`."""
    sig = ", ".join("%%%s: %s" % (n, t(*s)) for n, s in args)
    mlir = "func.func @forward(%s) -> tensor<f32> {\n%s\n}\n" % (sig, body)
    CASES.append((name, mlir, args, fn, set(positive)))


case("mlp + residual.add + mse",
     [("x", (4, 8)), ("w", (8, 8)), ("b", (8,)), ("tg", (4, 8))], """
  %y = nn.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %z = nn.add %y, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %g = nn.gelu %z approximate tanh : tensor<4x8xf32>
  %h = residual.add %x, %g stream 0 layer 0 : tensor<4x8xf32>
  %d = nn.sub %h, %tg : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = nn.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = nn.reduce_mean %s {axes = array<i64>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>""",
     lambda x, w, b, tg: ((x + F.gelu(x @ w + b, approximate="tanh") - tg) ** 2).mean())

case("layer_norm, rms_norm, softmax",
     [("x", (2, 3, 8)), ("g", (8,)), ("b", (8,)), ("r", (8,)), ("w", (8, 5)), ("tg", (2, 3, 5))], """
  %n = nn.layer_norm %x, %g, %b : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>
  %m = nn.rms_norm %n, %r {epsilon = 1.0e-06 : f32} : tensor<2x3x8xf32>, tensor<8xf32>
  %y = nn.matmul %m, %w : (tensor<2x3x8xf32>, tensor<8x5xf32>) -> tensor<2x3x5xf32>
  %p = nn.softmax %y : tensor<2x3x5xf32>
  %q = nn.mul %p, %tg : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %l = nn.reduce_sum %q {axes = array<i64>, keepdims = false} : (tensor<2x3x5xf32>) -> tensor<f32>
  return %l : tensor<f32>""",
     lambda x, g, b, r, w, tg: (F.softmax(
         (lambda n: n / torch.sqrt((n * n).mean(-1, keepdim=True) + 1e-6) * r)(
             F.layer_norm(x, (8,), g, b, 1e-5)) @ w, -1) * tg).sum())

case("attention-shaped + scale_add (per-channel and scalar)",
     [("x", (2, 4, 8)), ("wq", (8, 8)), ("wk", (8, 8)), ("a", (8,)), ("s", ())], """
  %q = nn.matmul %x, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k = nn.matmul %x, %wk : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %kt = nn.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %sc = nn.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %c = nn.constant dense<0.35355339> : tensor<f32>
  %ss = nn.mul %sc, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = nn.softmax %ss : tensor<2x4x4xf32>
  %o = nn.matmul %p, %x : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h1 = residual.scale_add %x, %o, %a stream 0 layer 0 : tensor<2x4x8xf32>, tensor<8xf32>
  %t2 = nn.tanh %h1 : tensor<2x4x8xf32>
  %h2 = residual.scale_add %h1, %t2, %s stream 0 layer 1 : tensor<2x4x8xf32>, tensor<f32>
  %r = nn.reshape %h2 : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %sq = nn.mul %r, %r : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %l = nn.reduce_mean %sq {axes = array<i64>, keepdims = false} : (tensor<8x8xf32>) -> tensor<f32>
  return %l : tensor<f32>""",
     lambda x, wq, wk, a, s: (lambda h1: ((h1 + s * torch.tanh(h1)) ** 2).mean())(
         x + a * (F.softmax((x @ wq) @ (x @ wk).transpose(1, 2) * 0.35355339, -1) @ x)))

case("gemm transB, relu, erf gelu, sigmoid, exp, sqrt, div, split/concat, pow",
     [("x", (3, 6)), ("w", (4, 6)), ("c", (4,)), ("p", (3, 4))], """
  %y = nn.gemm %x, %w, %c {transB} : (tensor<3x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %r = nn.relu %y : tensor<3x4xf32>
  %g = nn.gelu %y : tensor<3x4xf32>
  %sg = nn.sigmoid %g : tensor<3x4xf32>
  %e = nn.exp %sg : tensor<3x4xf32>
  %sq = nn.sqrt %p : tensor<3x4xf32>
  %dv = nn.div %e, %sq : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %parts:2 = nn.split %dv {axis = 1 : i64, sizes = array<i64: 1, 3>} : (tensor<3x4xf32>) -> (tensor<3x1xf32>, tensor<3x3xf32>)
  %cat = nn.concat %parts#1, %parts#0 {axis = 1 : i64} : (tensor<3x3xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %pw = nn.pow %cat, %two : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %sum = nn.add %pw, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %l = nn.reduce_sum %sum {axes = array<i64>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>""",
     lambda x, w, c, p: (lambda y: ((lambda dv: torch.cat([dv[:, 1:], dv[:, :1]], 1))(
         torch.exp(torch.sigmoid(F.gelu(y))) / torch.sqrt(p)) ** 2 + F.relu(y)).sum())(x @ w.T + c),
     positive=("p",))


case("embedding gather + cross_entropy (ignore index)",
     [("emb", (10, 6)), ("w", (6, 5))], """
  %ids = nn.constant dense<[[1, 3, 3, 9], [0, -1, 3, 2]]> : tensor<2x4xi64>
  %e = nn.gather %emb, %ids {axis = 0 : i64} : (tensor<10x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32>
  %z = nn.matmul %e, %w : (tensor<2x4x6xf32>, tensor<6x5xf32>) -> tensor<2x4x5xf32>
  %y = nn.constant dense<[[0, 4, -100, 2], [1, 1, 3, -100]]> : tensor<2x4xi64>
  %l = nn.cross_entropy %z, %y : (tensor<2x4x5xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>""",
     lambda emb, w: F.cross_entropy(
         (emb[torch.tensor([[1, 3, 3, 9], [0, 9, 3, 2]])] @ w).reshape(8, 5),
         torch.tensor([0, 4, -100, 2, 1, 1, 3, -100]), ignore_index=-100))


def rms(x, eps=1e-6):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def review(h, u, w, b, convex):
    r = torch.sigmoid(rms(h) @ w[:w.shape[0] // 2] + rms(u) @ w[w.shape[0] // 2:] + b)
    return h + r * (u - h) if convex else h + r * u


G = "tensor<2x3x4xf32>"
case("residual.gated_add review additive, per channel",
     [("h", (2, 3, 4)), ("u", (2, 3, 4)), ("w", (8, 4)), ("b", (4,))], """
  %y = residual.gated_add review additive %h, %u, %w, %b stream 0 layer 0 : $G, tensor<8x4xf32>, tensor<4xf32>
  %t = nn.tanh %y : $G
  %l = nn.reduce_sum %t {axes = array<i64>, keepdims = false} : ($G) -> tensor<f32>
  return %l : tensor<f32>""".replace("$G", G),
     lambda h, u, w, b: torch.tanh(review(h, u, w, b, False)).sum())

case("residual.gated_add review convex, per row",
     [("h", (2, 3, 4)), ("u", (2, 3, 4)), ("w", (8, 1)), ("b", (1,))], """
  %y = residual.gated_add review convex %h, %u, %w, %b stream 0 layer 0 : $G, tensor<8x1xf32>, tensor<1xf32>
  %t = nn.tanh %y : $G
  %l = nn.reduce_sum %t {axes = array<i64>, keepdims = false} : ($G) -> tensor<f32>
  return %l : tensor<f32>""".replace("$G", G),
     lambda h, u, w, b: torch.tanh(review(h, u, w, b, True)).sum())

case("residual.gated_add highway additive",
     [("h", (2, 3, 4)), ("u", (2, 3, 4)), ("w", (4, 4)), ("b", (4,))], """
  %y = residual.gated_add highway additive %h, %u, %w, %b stream 0 layer 0 : $G, tensor<4x4xf32>, tensor<4xf32>
  %t = nn.tanh %y : $G
  %l = nn.reduce_sum %t {axes = array<i64>, keepdims = false} : ($G) -> tensor<f32>
  return %l : tensor<f32>""".replace("$G", G),
     lambda h, u, w, b: torch.tanh(h + torch.sigmoid(h @ w + b) * u).sum())

case("residual.mix softmax (ANCRe) and free (DenseFormer)",
     [("y", (2, 3, 4)), ("h0", (2, 3, 4)), ("h1", (2, 3, 4)), ("c", (2,)), ("w", (3,))], """
  %a = residual.mix softmax %y, [%h0, %h1], %c tau 0.5 stream 0 layer 1 : $G, tensor<2xf32>
  %d = residual.mix free %a, [%h0, %h1], %w stream 0 layer 2 : $G, tensor<3xf32>
  %t = nn.tanh %d : $G
  %l = nn.reduce_sum %t {axes = array<i64>, keepdims = false} : ($G) -> tensor<f32>
  return %l : tensor<f32>""".replace("$G", G),
     lambda y, h0, h1, c, w: torch.tanh((lambda a: w[2] * a + w[0] * h0 + w[1] * h1)(
         (lambda p: y + p[0] * h0 + p[1] * h1)(torch.softmax(c / 0.5, 0)))).sum())


def nag(R, f, a, m, eps=1e-6):
    d = R.shape[-1]
    rho = torch.sqrt((R * R).mean(-1, keepdim=True))
    Rb = R / rho
    f = f - f.mean(-1, keepdim=True)
    fp = f - ((f * Rb).sum(-1, keepdim=True) / d) * Rb
    u = math.sqrt(d) * fp / torch.clamp(fp.norm(dim=-1, keepdim=True), min=eps)
    return R + rho * a * m * u


case("residual.nag_gate (beta 2) and nag_add (NAG)",
     [("R", (2, 3, 4)), ("f", (2, 3, 4)), ("a", ()), ("w", (4, 3)), ("b", (3,)), ("pi", (3,))], """
  %m = residual.nag_gate %R, %w, %b, %pi beta 2.0 stream 0 layer 0 : $G, tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  %y = residual.nag_add %R, %f, %a, %m stream 0 layer 0 : $G, tensor<f32>, tensor<2x3x1xf32>
  %t = nn.tanh %y : $G
  %l = nn.reduce_sum %t {axes = array<i64>, keepdims = false} : ($G) -> tensor<f32>
  return %l : tensor<f32>""".replace("$G", G),
     lambda R, f, a, w, b, pi: torch.tanh(nag(R, f, a, (torch.softmax(pi, 0) * torch.sigmoid(
         R / torch.sqrt((R * R).mean(-1, keepdim=True)) @ w + b)).sum(-1, keepdim=True) ** 2)).sum())


X = "tensor<2x3x3x4xf32>"
HYPER = """
  %e = residual.hyper_expand %h stream 0 layer 0 : tensor<2x3x4xf32> -> $X
  %X = nn.add %e, %d : ($X, $X) -> $X
  %pre = residual.hyper_coeffs $PRE %X, %ap, %wp, %bp stream 0 layer 0 : $X, tensor<f32>, $WP, tensor<3xf32> -> tensor<2x3x3xf32>
  %post = residual.hyper_coeffs $POST %X, %ao, %wo, %bo stream 0 layer 0 : $X, tensor<f32>, $WP, tensor<3xf32> -> tensor<2x3x3xf32>
  %res = residual.hyper_coeffs $RES %X, %ar, %wr, %br stream 0 layer 0 : $X, tensor<f32>, $WR, tensor<3x3xf32> -> tensor<2x3x3x3xf32>
  %x = residual.hyper_read %X, %pre stream 0 layer 0 : $X, tensor<2x3x3xf32> -> tensor<2x3x4xf32>
  %u = nn.tanh %x : tensor<2x3x4xf32>
  %Y = residual.hyper_write %X, %u, %post, %res stream 0 layer 0 : $X, tensor<2x3x4xf32>, tensor<2x3x3xf32>, tensor<2x3x3x3xf32>
  %o = residual.hyper_reduce %Y stream 0 layer 0 : $X -> tensor<2x3x4xf32>
  %t = nn.tanh %o : tensor<2x3x4xf32>
  %l = nn.reduce_sum %t {axes = array<i64>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>"""


def hyper(h, d, pre, post, res):
    """papers.md 6.1/6.2 on X = expand(h) + d, with the coefficient functions given."""
    X = h[..., None, :] + d
    u = torch.tanh((pre(X)[..., None] * X).sum(-2))
    Y = res(X) @ X + post(X)[..., None] * u[..., None, :]
    return torch.tanh(Y.mean(-2)).sum()


def sinkhorn(z, iters):
    m = torch.exp(z - z.amax((-2, -1), keepdim=True))
    for _ in range(iters):
        m = m / m.sum(-1, keepdim=True)
        m = m / m.sum(-2, keepdim=True)
    return m


def mhc_z(X, a, w, b):
    x = rms(X.flatten(-2))
    return a * (x @ w).reshape(b.shape[:0] + X.shape[:-2] + b.shape) + b


HYPER_ARGS = lambda wp, wr: [("h", (2, 3, 4)), ("d", (2, 3, 3, 4)), ("ap", ()), ("wp", wp), ("bp", (3,)),
                             ("ao", ()), ("wo", wp), ("bo", (3,)), ("ar", ()), ("wr", wr), ("br", (3, 3))]

case("hyper streams, HC (dynamic tanh): expand, coeffs, read, write, reduce",
     HYPER_ARGS((4, 1), (4, 3)),
     HYPER.replace("$PRE", "tanh").replace("$POST", "tanh").replace("$RES", "tanh")
     .replace("$WP", "tensor<4x1xf32>").replace("$WR", "tensor<4x3xf32>").replace("$X", X),
     lambda h, d, ap, wp, bp, ao, wo, bo, ar, wr, br: hyper(
         h, d, lambda X: ap * torch.tanh(rms(X) @ wp)[..., 0] + bp,
         lambda X: ao * torch.tanh(rms(X) @ wo)[..., 0] + bo,
         lambda X: ar * torch.tanh(rms(X) @ wr) + br))

case("hyper streams, mHC: sigmoid, double sigmoid, Sinkhorn (4 iterations)",
     HYPER_ARGS((12, 3), (12, 9)),
     HYPER.replace("$PRE", "sigmoid").replace("$POST", "double_sigmoid")
     .replace("$RES", "sinkhorn").replace("%br stream", "%br iters 4 stream")
     .replace("$WP", "tensor<12x3xf32>").replace("$WR", "tensor<12x9xf32>").replace("$X", X),
     lambda h, d, ap, wp, bp, ao, wo, bo, ar, wr, br: hyper(
         h, d, lambda X: torch.sigmoid(mhc_z(X, ap, wp, bp)),
         lambda X: 2 * torch.sigmoid(mhc_z(X, ao, wo, bo)),
         lambda X: sinkhorn(mhc_z(X, ar, wr, br), 4)))


case("conv (stride 2, pads, dilation, bias), grouped conv, relu, max_pool with ties",
     [("x", (2, 4, 9, 9)), ("w", (6, 4, 3, 3)), ("b", (6,)), ("wg", (6, 3, 2, 2)), ("tg", (2, 6, 3, 4))], """
  %y = nn.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 2, 1, 0>, dilations = array<i64: 1, 2>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x4xf32>
  %r = nn.relu %y : tensor<2x6x5x4xf32>
  %g = nn.conv %r, %wg {group = 2 : i64, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x6x5x4xf32>, tensor<6x3x2x2xf32>) -> tensor<2x6x6x5xf32>
  %q = nn.relu %g : tensor<2x6x6x5xf32>
  %p = nn.max_pool %q {kernel_shape = array<i64: 3, 2>, strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 0, 0>} : (tensor<2x6x6x5xf32>) -> tensor<2x6x3x4xf32>
  %d = nn.sub %p, %tg : (tensor<2x6x3x4xf32>, tensor<2x6x3x4xf32>) -> tensor<2x6x3x4xf32>
  %s = nn.mul %d, %d : (tensor<2x6x3x4xf32>, tensor<2x6x3x4xf32>) -> tensor<2x6x3x4xf32>
  %l = nn.reduce_mean %s {axes = array<i64>, keepdims = false} : (tensor<2x6x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>""",
     lambda x, w, b, wg, tg: ((F.max_pool2d(F.pad(torch.relu(F.conv2d(
         F.pad(torch.relu(F.conv2d(F.pad(x, (2, 0, 1, 1)), w, b, stride=2, dilation=(1, 2))),
               (1, 1, 1, 1)), wg, groups=2)), (0, 0, 1, 0), value=-math.inf), (3, 2), (2, 1))
         - tg) ** 2).mean())

case("conv_input_grad (ONNX ConvTranspose: stride 2, pads, output padding, groups)",
     [("u", (2, 4, 4, 4)), ("w", (4, 4, 3, 3)), ("wg", (4, 1, 2, 2)), ("t", (2, 2, 9, 9))], """
  %y = nn.conv_input_grad %u, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
  %r = nn.tanh %y : tensor<2x4x8x8xf32>
  %z = nn.conv_input_grad %r, %wg {group = 2 : i64} : (tensor<2x4x8x8xf32>, tensor<4x1x2x2xf32>) -> tensor<2x2x9x9xf32>
  %d = nn.sub %z, %t : (tensor<2x2x9x9xf32>, tensor<2x2x9x9xf32>) -> tensor<2x2x9x9xf32>
  %q = nn.mul %d, %d : (tensor<2x2x9x9xf32>, tensor<2x2x9x9xf32>) -> tensor<2x2x9x9xf32>
  %l = nn.reduce_mean %q {axes = array<i64>, keepdims = false} : (tensor<2x2x9x9xf32>) -> tensor<f32>
  return %l : tensor<f32>""",
     lambda u, w, wg, t: ((F.conv_transpose2d(torch.tanh(F.conv_transpose2d(
         u, w, stride=2, padding=1, output_padding=1)), wg, groups=2) - t) ** 2).mean())

case("batch_norm (training: batch statistics; inference: running), global_average_pool",
     [("x", (3, 4, 5, 5)), ("s", (4,)), ("b", (4,)), ("m", (4,)), ("v", (4,)), ("w", (4, 4, 1, 1))], """
  %n = nn.batch_norm %x, %s, %b, %m, %v {training} : tensor<3x4x5x5xf32>, tensor<4xf32>
  %c = nn.conv %n, %w : (tensor<3x4x5x5xf32>, tensor<4x4x1x1xf32>) -> tensor<3x4x5x5xf32>
  %e = nn.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0e-03 : f32} : tensor<3x4x5x5xf32>, tensor<4xf32>
  %t = nn.tanh %e : tensor<3x4x5x5xf32>
  %p = nn.global_average_pool %t : (tensor<3x4x5x5xf32>) -> tensor<3x4x1x1xf32>
  %q = nn.mul %p, %p : (tensor<3x4x1x1xf32>, tensor<3x4x1x1xf32>) -> tensor<3x4x1x1xf32>
  %l = nn.reduce_sum %q {axes = array<i64>, keepdims = false} : (tensor<3x4x1x1xf32>) -> tensor<f32>
  return %l : tensor<f32>""",
     lambda x, s, b, m, v, w: (torch.tanh(
         (lambda c, ch: (c - ch(m)) / torch.sqrt(ch(v) + 1e-3) * ch(s) + ch(b))(
             F.conv2d(F.batch_norm(x, None, None, s, b, training=True), w),
             lambda p: p[None, :, None, None])).mean((2, 3)) ** 2).sum(),
     positive=("v",))


case("slice (negative start, clamped end, two axes)",
     [("x", (4, 6)), ("w", (4, 4))], """
  %s = nn.slice %x {starts = array<i64: 1, -4>, ends = array<i64: 3, 100>, axes = array<i64: 0, 1>} : (tensor<4x6xf32>) -> tensor<2x4xf32>
  %m = nn.matmul %s, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %e = nn.mul %m, %m : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = nn.tanh %e : tensor<2x4xf32>
  %l = nn.reduce_sum %t {axes = array<i64>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>""",
     lambda x, w: (lambda m: torch.tanh(m * m).sum())(x[1:3, 2:6] @ w))


def finite_differences(work, i, mlir, feeds, rng, h=1e-6, coords=4):
    """The case in float64: autodiff gradients vs central differences of
    the compiled forward function at random coordinates."""
    src = os.path.join(work, "case%d-f64.mlir" % i)
    with open(src, "w") as f:
        f.write(re.sub(r"(tensor<[0-9x]*)f32>", r"\1f64>", mlir))
    grad_ir = os.path.join(work, "case%d-f64-grad.mlir" % i)
    rwx = os.path.join(work, "case%d-f64.rwx" % i)
    r = subprocess.run(["rewire-opt", src, "--rewire-autodiff=wrt=all", "-o", grad_ir],
                       capture_output=True, text=True)
    if r.returncode == 0:
        r = subprocess.run(["rewire-compile", grad_ir, "-o", rwx], capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL case %d in f64: %s" % (i, r.stderr.strip()[-600:]))
        return False, float("inf")
    model = rewire_runtime.Model(rwx)
    xs = [a.astype(np.float64) for a in feeds]
    grads = model.run("forward_grad", *xs)[1:]
    worst, ok = 0.0, True
    for k, (x, g) in enumerate(zip(xs, grads)):
        for _ in range(coords):
            at = tuple(int(rng.integers(0, n)) for n in x.shape)
            plus, minus = [a.copy() for a in xs], [a.copy() for a in xs]
            plus[k][at] += h
            minus[k][at] -= h
            fd = (float(model.run("forward", *plus)[0]) - float(model.run("forward", *minus)[0])) / (2 * h)
            err = abs(fd - float(g[at]))
            worst = max(worst, _finite(err))
            ok &= err <= 1e-5 * max(1.0, abs(float(g[at])))
    return ok, worst


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(11)
    bad = 0
    for i, (name, mlir, args, fn, positive) in enumerate(CASES):
        src = os.path.join(work, "case%d.mlir" % i)
        with open(src, "w") as f:
            f.write(mlir)
        grad_ir = os.path.join(work, "case%d-grad.mlir" % i)
        r = subprocess.run(["rewire-opt", src, "--rewire-autodiff=wrt=all", "-o", grad_ir],
                           capture_output=True, text=True)
        rwx = os.path.join(work, "case%d.rwx" % i)
        if r.returncode == 0:
            r = subprocess.run(["rewire-compile", grad_ir, "-o", rwx], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s: %s" % (name, r.stderr.strip()[-600:]))
            bad += 1
            continue
        feeds = [(rng.uniform(0.5, 2.0, s) if n in positive else rng.standard_normal(s)).astype(np.float32)
                 for n, s in args]
        got = rewire_runtime.Model(rwx).run("forward_grad", *feeds)
        ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in feeds]
        loss = fn(*ts)
        loss.backward()
        want = [loss.detach().numpy()] + [x.grad.numpy() for x in ts]
        worst = 0.0
        ok = len(got) == len(want)
        for g, w in zip(got, want):
            err = np.abs(g.astype(np.float64) - w)
            ok &= bool(np.all(err <= 1e-4 * np.maximum(1.0, np.abs(w))))
            worst = max(worst, _finite(float(err.max())))
        fd_ok, fd_worst = finite_differences(work, i, mlir, feeds, rng)
        ok &= fd_ok
        bad += not ok
        print("%s %s: loss and %d gradients, max abs error vs PyTorch %.2e, vs finite "
              "differences (f64) %.2e" % ("ok  " if ok else "FAIL", name, len(got) - 1, worst, fd_worst))
    print("%d cases, %d failed" % (len(CASES), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
