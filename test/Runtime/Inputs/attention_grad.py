"""The CPU's fused attention backward kernel (nn.attention_grad ->
rewire-attention-to-kernel -> rewire_attention_backward in runtime/Attention.c)
against float64 NumPy gradients and against the op's expansion
(--fused-attention=false: the weights computed again in linalg, then the
four products):

    dv = p^T . g,  dp = g . v^T,  ds = p * (dp - rowsum(g * o)),
    dq = scale * ds . k,  dk = scale * ds^T . q

with p = softmax(scale * q . k^T + bias, causal mask) and o = p . v (the
forward's output, computed here in float64 and rounded). Shapes cover one
token, sizes off the kernel's 64 x 128 tiles, several key tiles, more keys
than queries (causal aligned at the end), more queries than keys, Dv != D,
large scores; a float bias input (causal -inf plus finfo.min padding of
whole key tiles); zero_masked_rows with every key of a sequence masked
(no gradient from those rows); and rows with no key without it (NaN
reaches dq's row and all of dk, dv, as through the expanded softmax).

    attention_grad.py WORKDIR

Checks per case: the fused compile calls rewire_attention_backward, the
unfused one does not; fused vs float64 and vs the expansion within
2e-5 * max(1, max |ref|) per gradient (NaN exactly where the reference has
NaN);
the same bits on one loop thread as on all.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import rewire_runtime  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "utils"))
from parity import compile_or_exit as compile_  # noqa: E402

TOL = 2e-5

# name, B, H, Tq, Tk, D, Dv, causal, bias ("pad", "all-masked", "nan-rows" or
# None), zero_masked_rows, input gain
CASES = [
    ("one-token", 1, 2, 1, 1, 64, 64, True, None, False, 1.0),
    ("odd", 2, 3, 67, 67, 24, 40, True, None, False, 1.0),
    ("key-tiles", 1, 2, 200, 200, 64, 64, True, None, False, 1.0),
    ("more-keys", 2, 2, 70, 300, 32, 32, True, None, False, 1.0),
    ("unmasked", 1, 4, 129, 129, 16, 16, False, None, False, 1.0),
    ("more-queries", 1, 1, 300, 5, 8, 8, False, None, False, 1.0),
    ("large-scores", 1, 2, 260, 260, 32, 32, True, None, False, 4.0),
    ("pad-bias", 2, 2, 150, 150, 32, 32, False, "pad", False, 1.0),
    ("zero-masked", 2, 2, 40, 40, 16, 16, False, "all-masked", True, 1.0),
    ("nan-rows", 2, 1, 12, 12, 8, 8, False, "nan-rows", False, 1.0),
]


def tensor(*shape):
    return "tensor<%sxf32>" % "x".join(str(s) for s in shape)


def module(b, h, tq, tk, d, dv, causal, bias, zero):
    """@forward(q, k, v, [bias], o, g) -> (dq, dk, dv): one nn.attention_grad."""
    qt, kt, vt, ot = tensor(b, h, tq, d), tensor(b, h, tk, d), tensor(b, h, tk, dv), tensor(b, h, tq, dv)
    bt = tensor(b, 1, tq, tk)
    args = ["%%q: %s" % qt, "%%k: %s" % kt, "%%v: %s" % vt] + (["%%m: %s" % bt] if bias else []) + \
        ["%%o: %s" % ot, "%%g: %s" % ot]
    attrs = [a for a, on in (("causal", causal), ("zero_masked_rows", zero)) if on]
    types = [qt, kt, vt, ot, ot] + ([bt] if bias else [])
    return ("func.func @forward(%s) -> (%s, %s, %s) {\n"
            "  %%dq, %%dk, %%dv = nn.attention_grad %%q, %%k, %%v, %%o, %%g%s {%s} : (%s) -> (%s, %s, %s)\n"
            "  return %%dq, %%dk, %%dv : %s, %s, %s\n}\n" % (
                ", ".join(args), qt, kt, vt, " bias(%m)" if bias else "", ", ".join(attrs),
                ", ".join(types), qt, kt, vt, qt, kt, vt))


def bias_input(kind, b, tq, tk):
    m = np.zeros((b, 1, tq, tk), np.float32)
    if kind == "pad":  # batch i: its first 130 i keys padded (a whole key tile), causal -inf
        m += np.where(np.tril(np.ones((tq, tk), bool)), 0.0, -np.inf).astype(np.float32)
        m[1, :, :, :130] = np.finfo(np.float32).min
    elif kind == "all-masked":  # every key of the second sequence
        m[1] = -np.inf
    elif kind == "nan-rows":  # rows 3 and 7 of the first sequence see no key
        m[0, :, 3, :] = -np.inf
        m[0, :, 7, :] = -np.inf
    return m


def reference(q, k, v, g, causal, m, zero):
    """Forward output (float64) and the gradients dq, dk, dv."""
    q, k, v, g = (x.astype(np.float64) for x in (q, k, v, g))
    tq, tk = q.shape[2], k.shape[2]
    scale = 1.0 / np.sqrt(q.shape[-1])
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if m is not None:
        s = (s.astype(np.float32) + m).astype(np.float64)  # added in float32, as the kernel does
    if causal:
        s = np.where(np.arange(tk)[None, :] <= np.arange(tq)[:, None] + tk - tq, s, -np.inf)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
    if zero:
        p = np.where(np.isnan(p), 0.0, p)
    o = p @ v
    return o, p, g, scale


def grads(o, p, g, v, q, k, scale):
    dv = p.transpose(0, 1, 3, 2) @ g
    dp = g @ v.astype(np.float64).transpose(0, 1, 3, 2)
    ds = p * (dp - (g * o).sum(-1, keepdims=True))
    dq = scale * ds @ k.astype(np.float64)
    dk = scale * ds.transpose(0, 1, 3, 2) @ q.astype(np.float64)
    return dq, dk, dv


def rel_err(x, ref):
    """Largest |x - ref| / max(1, max |ref|) (a gradient is a sum of
    products of both signs: its small elements carry the rounding of its
    large terms); inf when NaN differs in place."""
    x = x.astype(np.float64)
    if not np.array_equal(np.isnan(x), np.isnan(ref)):
        return float("inf")
    ok = ~np.isnan(ref)
    if not ok.any():
        return 0.0
    return float(np.max(np.abs(x[ok] - ref[ok])) / max(1.0, float(np.max(np.abs(ref[ok])))))


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    failed = 0
    for name, b, h, tq, tk, d, dv, causal, bias, zero, gain in CASES:
        src = os.path.join(work, name + ".mlir")
        with open(src, "w") as f:
            f.write(module(b, h, tq, tk, d, dv, causal, bias, zero))
        rng = np.random.default_rng(len(name))
        q = (rng.standard_normal((b, h, tq, d)) * gain).astype(np.float32)
        k = (rng.standard_normal((b, h, tk, d)) * gain).astype(np.float32)
        v = rng.standard_normal((b, h, tk, dv)).astype(np.float32)
        g = rng.standard_normal((b, h, tq, dv)).astype(np.float32)
        m = bias_input(bias, b, tq, tk) if bias else None
        o64, p, g64, scale = reference(q, k, v, g, causal, m, zero)
        o = o64.astype(np.float32)
        want = grads(o.astype(np.float64), p, g64, v, q, k, scale)

        fused_ir = compile_(src, "-", "--emit=linalg")
        plain_ir = compile_(src, "-", "--emit=linalg", "--fused-attention=false")
        if "call @rewire_attention_backward" not in fused_ir or "rewire_attention" in plain_ir:
            print("FAIL %s: the fused compile does not call the backward kernel, or the unfused "
                  "one does" % name)
            failed += 1
            continue
        arts = {}
        for tag, flags in (("fused", []), ("fused1", ["--loop-threads=1"]),
                           ("plain", ["--fused-attention=false"])):
            arts[tag] = os.path.join(work, "%s-%s.rwx" % (name, tag))
            compile_(src, arts[tag], *flags)
        inputs = [q, k, v] + ([m] if bias else []) + [o, g]
        got = {tag: rewire_runtime.Model(a).run("forward", *inputs) for tag, a in arts.items()}
        e_ref = max(rel_err(x, w) for x, w in zip(got["fused"], want))
        e_plain = max(rel_err(x, y.astype(np.float64)) for x, y in zip(got["fused"], got["plain"]))
        e_exp = max(rel_err(x, w) for x, w in zip(got["plain"], want))
        same = all(np.array_equal(x, y, equal_nan=True) for x, y in zip(got["fused"], got["fused1"]))
        nans = sum(int(np.isnan(x).sum()) for x in got["fused"])
        ok = e_ref <= TOL and e_plain <= TOL and same and (nans > 0) == (bias == "nan-rows")
        failed += not ok
        print("%s %s [B%d H%d Tq%d Tk%d D%d Dv%d causal=%s bias=%s zero_masked_rows=%s]: "
              "vs float64 %.1e (the expansion: %.1e), vs expanded %.1e, 1 thread == all: %s, "
              "NaN: %d" % ("ok  " if ok else "FAIL", name, b, h, tq, tk, d, dv, causal, bias, zero,
                           e_ref, e_exp, e_plain, same, nans))
    print("%d of %d cases failed" % (failed, len(CASES)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
