"""Numerical check of every residual op's ONNX export against an independent
NumPy reference of the formulas in papers.md / docs/dialects.md.

    residual_reference.py REWIRE_EXPORT WORKDIR

For each case: write a one-op MLIR function whose operands are all inputs,
export it with rewire-export, run it in ONNX Runtime on random inputs (fixed
seed, never zeros), and compare with the reference computed in float64.
Tolerance: |ort - ref| <= 1e-5 + 1e-5 * |ref| (fp32). Prints one line per case
and fails if any case is off.
"""
import os
import subprocess
import sys

import numpy as np

RNG = np.random.default_rng(42)
B, T, D = 2, 5, 16


def sig(x):
    return 1 / (1 + np.exp(-x))


def rms(x, eps, axis=-1):
    return x / np.sqrt(np.mean(x * x, axis=axis, keepdims=True) + eps)


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def t(shape):
    return "tensor<%sxf32>" % "x".join(map(str, shape)) if shape else "tensor<f32>"


def case(name, op_line, inputs, out_shape, ref):
    """inputs: list of (name, shape); op_line uses %name for inputs."""
    args = ", ".join('%%%s: %s {nn.name = "%s"}' % (n, t(s), n) for n, s in inputs)
    mlir = ('func.func @forward(%s) -> (%s {nn.name = "out"}) {\n  %%r = %s\n  return %%r : %s\n}\n'
            % (args, t(out_shape), op_line, t(out_shape)))
    return name, mlir, inputs, ref


S = [B, T, D]
C = 4
N = 4  # hyper streams
XS = [B, T, N, D]


def sinkhorn_ref(z, iters):
    """exp(z), then `iters` rounds of rows and columns normalized to sum 1."""
    m = np.exp(z - z.max(axis=(-2, -1), keepdims=True))
    for _ in range(iters):
        m = m / m.sum(-1, keepdims=True)
        m = m / m.sum(-2, keepdims=True)
    return m
CASES = [
    case("add", "residual.add %h, %u stream 0 layer 0 : $T".replace("$T", t(S)),
         [("h", S), ("u", S)], S, lambda h, u: h + u),
    case("scale_add scalar", "residual.scale_add %h, %u, %a stream 0 layer 0 : $T, tensor<f32>".replace("$T", t(S)),
         [("h", S), ("u", S), ("a", [])], S, lambda h, u, a: h + a * u),
    case("scale_add per-channel", "residual.scale_add %h, %u, %a stream 0 layer 0 : $T, tensor<16xf32>".replace("$T", t(S)),
         [("h", S), ("u", S), ("a", [D])], S, lambda h, u, a: h + a * u),
    case("scale_add NCHW axis 1",
         "residual.scale_add %h, %u, %a axis 1 stream 0 layer 0 : tensor<2x4x3x3xf32>, tensor<4xf32>",
         [("h", [2, 4, 3, 3]), ("u", [2, 4, 3, 3]), ("a", [4])], [2, 4, 3, 3],
         lambda h, u, a: h + a[None, :, None, None] * u),
    case("gated_add review additive (per channel)",
         "residual.gated_add review additive %h, %u, %W, %b stream 0 layer 0 : $T, tensor<32x16xf32>, tensor<16xf32>".replace("$T", t(S)),
         [("h", S), ("u", S), ("W", [2 * D, D]), ("b", [D])], S,
         lambda h, u, W, b: h + sig(np.concatenate([rms(h, 1e-6), rms(u, 1e-6)], -1) @ W + b) * u),
    case("gated_add review convex (per row, eps 1e-5)",
         "residual.gated_add review convex %h, %u, %W, %b eps 1.0e-5 stream 0 layer 0 : $T, tensor<32x1xf32>, tensor<1xf32>".replace("$T", t(S)),
         [("h", S), ("u", S), ("W", [2 * D, 1]), ("b", [1])], S,
         lambda h, u, W, b: (lambda r: (1 - r) * h + r * u)(
             sig(np.concatenate([rms(h, 1e-5), rms(u, 1e-5)], -1) @ W + b))),
    case("gated_add highway additive",
         "residual.gated_add highway additive %h, %u, %W, %b stream 0 layer 0 : $T, tensor<16x16xf32>, tensor<16xf32>".replace("$T", t(S)),
         [("h", S), ("u", S), ("W", [D, D]), ("b", [D])], S,
         lambda h, u, W, b: h + sig(h @ W + b) * u),
    case("gated_add highway convex (per row)",
         "residual.gated_add highway convex %h, %u, %W, %b stream 0 layer 0 : $T, tensor<16x1xf32>, tensor<1xf32>".replace("$T", t(S)),
         [("h", S), ("u", S), ("W", [D, 1]), ("b", [1])], S,
         lambda h, u, W, b: (lambda r: (1 - r) * h + r * u)(sig(h @ W + b))),
    case("mix softmax (ANCRe, tau 0.5)",
         "residual.mix softmax %y, [%h0, %h1, %h2], %c tau 0.5 stream 0 layer 2 : $T, tensor<3xf32>".replace("$T", t(S)),
         [("y", S), ("h0", S), ("h1", S), ("h2", S), ("c", [3])], S,
         lambda y, h0, h1, h2, c: (lambda p: y + p[0] * h0 + p[1] * h1 + p[2] * h2)(softmax(c / 0.5))),
    case("mix free (DenseFormer)",
         "residual.mix free %y, [%h0, %h1], %c stream 0 layer 1 : $T, tensor<3xf32>".replace("$T", t(S)),
         [("y", S), ("h0", S), ("h1", S), ("c", [3])], S,
         lambda y, h0, h1, c: c[2] * y + c[0] * h0 + c[1] * h1),
    case("mix additive (LAuReL-PA)",
         "residual.mix additive %y, [%h0, %h1], %c stream 0 layer 2 : $T, tensor<2xf32>".replace("$T", t(S)),
         [("y", S), ("h0", S), ("h1", S), ("c", [2])], S,
         lambda y, h0, h1, c: y + c[0] * h0 + c[1] * h1),
    case("nag_gate (C = 4)",
         "residual.nag_gate %R, %w, %b, %pi stream 0 layer 0 : $T, tensor<16x4xf32>, tensor<4xf32>, tensor<4xf32>".replace("$T", t(S)),
         [("R", S), ("w", [D, C]), ("b", [C]), ("pi", [C])], [B, T, 1],
         lambda R, w, b, pi: np.sum(softmax(pi) * sig(R / np.sqrt(np.mean(R * R, -1, keepdims=True)) @ w + b),
                                    -1, keepdims=True)),
    case("nag_gate (beta 2)",
         "residual.nag_gate %R, %w, %b, %pi beta 2.0 stream 0 layer 0 : $T, tensor<16x4xf32>, tensor<4xf32>, tensor<4xf32>".replace("$T", t(S)),
         [("R", S), ("w", [D, C]), ("b", [C]), ("pi", [C])], [B, T, 1],
         lambda R, w, b, pi: np.sum(softmax(pi) * sig(R / np.sqrt(np.mean(R * R, -1, keepdims=True)) @ w + b),
                                    -1, keepdims=True) ** 2),
    case("nag_add",
         "residual.nag_add %R, %f, %a, %m stream 0 layer 0 : $T, tensor<f32>, tensor<2x5x1xf32>".replace("$T", t(S)),
         [("R", S), ("f", S), ("a", []), ("m", [B, T, 1])], S, None),
    case("gated_add highway additive NCHW axis 1",
         "residual.gated_add highway additive %h, %u, %W, %b axis 1 stream 0 layer 0 : tensor<2x4x3x3xf32>, tensor<4x4xf32>, tensor<4xf32>",
         [("h", [2, 4, 3, 3]), ("u", [2, 4, 3, 3]), ("W", [4, 4]), ("b", [4])], [2, 4, 3, 3],
         lambda h, u, W, b: nchw(lambda h, u: h + sig(h @ W + b) * u, h, u)),
    case("gated_add review convex NCHW axis 1",
         "residual.gated_add review convex %h, %u, %W, %b axis 1 stream 0 layer 0 : tensor<2x4x3x3xf32>, tensor<8x4xf32>, tensor<4xf32>",
         [("h", [2, 4, 3, 3]), ("u", [2, 4, 3, 3]), ("W", [8, 4]), ("b", [4])], [2, 4, 3, 3],
         lambda h, u, W, b: nchw(lambda h, u: (lambda r: (1 - r) * h + r * u)(
             sig(np.concatenate([rms(h, 1e-6), rms(u, 1e-6)], -1) @ W + b)), h, u)),
    case("nag_gate NCHW axis 1",
         "residual.nag_gate %R, %w, %b, %pi axis 1 stream 0 layer 0 : tensor<2x4x3x3xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>",
         [("R", [2, 4, 3, 3]), ("w", [4, C]), ("b", [C]), ("pi", [C])], [2, 1, 3, 3],
         lambda R, w, b, pi: nchw(lambda R: np.sum(
             softmax(pi) * sig(R / np.sqrt(np.mean(R * R, -1, keepdims=True)) @ w + b), -1, keepdims=True), R)),
    case("nag_add NCHW axis 1",
         "residual.nag_add %R, %f, %a, %m axis 1 stream 0 layer 0 : tensor<2x4x3x3xf32>, tensor<f32>, tensor<2x1x3x3xf32>",
         [("R", [2, 4, 3, 3]), ("f", [2, 4, 3, 3]), ("a", []), ("m", [2, 1, 3, 3])], [2, 4, 3, 3],
         lambda R, f, a, m: nchw(lambda R, f, m: nag_add_ref(R, f, a, m), R, f, m)),
    case("laurel rw (LAuReL)",
         "residual.laurel %h, %u, %a, %c stream 0 layer 0 : $T, tensor<f32>, tensor<f32>".replace("$T", t(S)),
         [("h", S), ("u", S), ("a", []), ("c", [])], S, lambda h, u, a, c: a * u + c * h),
    case("laurel rw-lr rank 4 (LAuReL)",
         "residual.laurel %h, %u, %a, %c lowrank %A, %Bm stream 0 layer 0 : $T, tensor<f32>, tensor<1xf32>, tensor<16x4xf32>, tensor<4x16xf32>".replace("$T", t(S)),
         [("h", S), ("u", S), ("a", []), ("c", [1]), ("A", [D, 4]), ("Bm", [4, D])], S,
         lambda h, u, a, c, A, Bm: a * u + c * h + (h @ A) @ Bm),
    # Hyper-Connections / mHC (papers.md 6.1, 6.2): n = 4 copies [B, T, n, D].
    case("hyper_expand (4 streams)",
         "residual.hyper_expand %h stream 0 layer 0 : $T -> $X".replace("$T", t(S)).replace("$X", t(XS)),
         [("h", S)], XS, lambda h: np.repeat(h[:, :, None, :], N, 2)),
    case("hyper_coeffs tanh, per stream (HC H^pre)",
         "residual.hyper_coeffs tanh %X, %a, %W, %b stream 0 layer 0 : $X, tensor<f32>, tensor<16x1xf32>, tensor<4xf32> -> tensor<2x5x4xf32>".replace("$X", t(XS)),
         [("X", XS), ("a", []), ("W", [D, 1]), ("b", [N])], [B, T, N],
         lambda X, a, W, b: a * np.tanh(rms(X, 1e-6) @ W)[..., 0] + b),
    case("hyper_coeffs tanh, n x n (HC H^res)",
         "residual.hyper_coeffs tanh %X, %a, %W, %b stream 0 layer 0 : $X, tensor<1xf32>, tensor<16x4xf32>, tensor<4x4xf32> -> tensor<2x5x4x4xf32>".replace("$X", t(XS)),
         [("X", XS), ("a", [1]), ("W", [D, N]), ("b", [N, N])], [B, T, N, N],
         lambda X, a, W, b: a * np.tanh(rms(X, 1e-6) @ W) + b),
    case("hyper_coeffs sigmoid (mHC H^pre)",
         "residual.hyper_coeffs sigmoid %X, %a, %W, %b stream 0 layer 0 : $X, tensor<f32>, tensor<64x4xf32>, tensor<4xf32> -> tensor<2x5x4xf32>".replace("$X", t(XS)),
         [("X", XS), ("a", []), ("W", [N * D, N]), ("b", [N])], [B, T, N],
         lambda X, a, W, b: sig(a * (rms(X.reshape(B, T, N * D), 1e-6) @ W) + b)),
    case("hyper_coeffs double_sigmoid (mHC H^post, eps 1e-5)",
         "residual.hyper_coeffs double_sigmoid %X, %a, %W, %b eps 1.0e-5 stream 0 layer 0 : $X, tensor<f32>, tensor<64x4xf32>, tensor<4xf32> -> tensor<2x5x4xf32>".replace("$X", t(XS)),
         [("X", XS), ("a", []), ("W", [N * D, N]), ("b", [N])], [B, T, N],
         lambda X, a, W, b: 2 * sig(a * (rms(X.reshape(B, T, N * D), 1e-5) @ W) + b)),
    case("hyper_coeffs sinkhorn 20 iters (mHC H^res)",
         "residual.hyper_coeffs sinkhorn %X, %a, %W, %b iters 20 stream 0 layer 0 : $X, tensor<f32>, tensor<64x16xf32>, tensor<4x4xf32> -> tensor<2x5x4x4xf32>".replace("$X", t(XS)),
         [("X", XS), ("a", []), ("W", [N * D, N * N]), ("b", [N, N])], [B, T, N, N],
         lambda X, a, W, b: sinkhorn_ref(
             a * (rms(X.reshape(B, T, N * D), 1e-6) @ W).reshape(B, T, N, N) + b, 20)),
    case("hyper_read static",
         "residual.hyper_read %X, %p stream 0 layer 0 : $X, tensor<4xf32> -> $T".replace("$X", t(XS)).replace("$T", t(S)),
         [("X", XS), ("p", [N])], S, lambda X, p: np.einsum("btnd,n->btd", X, p)),
    case("hyper_read per token",
         "residual.hyper_read %X, %p stream 0 layer 0 : $X, tensor<2x5x4xf32> -> $T".replace("$X", t(XS)).replace("$T", t(S)),
         [("X", XS), ("p", [B, T, N])], S, lambda X, p: np.einsum("btnd,btn->btd", X, p)),
    case("hyper_write static",
         "residual.hyper_write %X, %u, %q, %c stream 0 layer 0 : $X, $T, tensor<4xf32>, tensor<4x4xf32>".replace("$X", t(XS)).replace("$T", t(S)),
         [("X", XS), ("u", S), ("q", [N]), ("c", [N, N])], XS,
         lambda X, u, q, r: np.einsum("ij,btjd->btid", r, X) + q[:, None] * u[:, :, None, :]),
    case("hyper_write per token",
         "residual.hyper_write %X, %u, %q, %c stream 0 layer 0 : $X, $T, tensor<2x5x4xf32>, tensor<2x5x4x4xf32>".replace("$X", t(XS)).replace("$T", t(S)),
         [("X", XS), ("u", S), ("q", [B, T, N]), ("c", [B, T, N, N])], XS,
         lambda X, u, q, r: np.einsum("btij,btjd->btid", r, X) + q[..., None] * u[:, :, None, :]),
    case("hyper_reduce",
         "residual.hyper_reduce %X stream 0 layer 0 : $X -> $T".replace("$X", t(XS)).replace("$T", t(S)),
         [("X", XS)], S, lambda X: X.mean(2)),
    case("value_mix (Value Residual)",
         "residual.value_mix %v, %w, %a, %c stream 0 layer 2 : tensor<2x4x5x8xf32>, tensor<f32>, tensor<1xf32>",
         [("v", [2, 4, 5, 8]), ("w", [2, 4, 5, 8]), ("a", []), ("c", [1])], [2, 4, 5, 8],
         lambda v, w, a, c: a * w + c * v),
    case("route threshold 0.5",
         "residual.route %m threshold 0.5 : tensor<2x5x1xf32>",
         [("m", [B, T, 1])], [B, T, 1], lambda m: np.where(m < 0.5, 0.0, m)),
    case("route rate 0.4 (2 of 5 rows of each sequence skip)",
         "residual.route %m rate 0.4 : tensor<2x5x1xf32>",
         [("m", [B, T, 1])], [B, T, 1], lambda m: route_rate_ref(m, 0.4)),
    case("tap", 'residual.tap %h name "depth1" stream 0 layer 1 : $T'.replace("$T", t(S)),
         [("h", S)], S, lambda h: h),
]


def nchw(fn, *xs):
    """fn on [N, H, W, C] views of [N, C, H, W] tensors, the result back."""
    return np.transpose(fn(*[np.transpose(x, (0, 2, 3, 1)) for x in xs]), (0, 3, 1, 2))


def route_rate_ref(m, rate):
    """In each sequence (index of the leading axis), the floor(rate * N)
    smallest of its N values become 0 (ties: the earlier first)."""
    seqs = m.reshape(m.shape[0], -1).copy()
    for row in seqs:
        row[np.argsort(row, kind="stable")[: int(rate * row.size)]] = 0.0
    return seqs.reshape(m.shape)


def nag_add_ref(R, f, a, m, eps=1e-6):
    d = R.shape[-1]
    rho = np.sqrt(np.mean(R * R, -1, keepdims=True))
    Rb = R / rho
    f = f - f.mean(-1, keepdims=True)
    fp = f - (np.sum(f * Rb, -1, keepdims=True) / d) * Rb
    u = np.sqrt(d) * fp / np.maximum(np.linalg.norm(fp, axis=-1, keepdims=True), eps)
    return R + rho * a * m * u


def main():
    import onnxruntime as ort  # only the export check needs it

    tool, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    bad = 0
    for i, (name, mlir, inputs, ref) in enumerate(CASES):
        src = os.path.join(work, "case%d.mlir" % i)
        onnx_path = os.path.join(work, "case%d.onnx" % i)
        open(src, "w").write(mlir)
        r = subprocess.run([tool, src, "-o", onnx_path], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s: rewire-export exited %d: %s" % (name, r.returncode, r.stderr.strip()))
            bad += 1
            continue
        feeds = {}
        for n, s in inputs:
            x = RNG.standard_normal(s)
            if n == "m":
                x = RNG.uniform(0.1, 1.0, s)
            feeds[n] = x.astype(np.float32)
        got = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        args = [feeds[n].astype(np.float64) for n, _ in inputs]
        if ref is not None:
            want = ref(*args)
        else:
            want = nag_add_ref(*args)
        err = np.abs(got - want)
        ok = np.all(err <= 1e-5 + 1e-5 * np.abs(want))
        print("%s %s: max abs error %.2e" % ("ok  " if ok else "FAIL", name, err.max()))
        bad += 0 if ok else 1
    print("%d cases, %d failed" % (len(CASES), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
