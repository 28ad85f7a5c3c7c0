"""nn.sinkhorn and nn.sinkhorn_grad (mHC's mixing, NNOps.td) compiled for
the CPU against float64 NumPy: the forward (exp(z - max), `iters` rounds of
row then column normalization) and the gradient by central finite
differences of that NumPy forward (independent of the backward rule's
algebra). The fused lowering takes matrices of n * n <= 64 entries with
axes before them (one generic over the matrices and one gathering the
entries, per op); larger matrices and a single matrix take the
decompositions into nn ops (nn::decomposeSinkhorn, decomposeSinkhornGrad):
both paths against the same reference.

    sinkhorn.py WORKDIR

Tolerances: forward 1e-6 absolute (entries are in [0, 1]); gradient 1e-5
relative to its largest entry (central differences in float64 of step
1e-5 are exact to ~1e-10; measured errors are ~1e-7).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import rewire_runtime  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "utils"))
from parity import compile_or_exit as compile_  # noqa: E402

# name, matrices shape, n, iters, input gain
CASES = [
    ("mhc", (2, 16), 4, 20, 1.0),
    ("one-round", (3,), 4, 1, 1.0),
    ("n2", (5, 7), 2, 5, 1.0),
    ("n8-large", (9,), 8, 20, 3.0),
    ("n3-rank5", (2, 2, 3), 3, 7, 1.0),
    ("n9-decomposed", (4,), 9, 20, 1.0),
    ("one-matrix-decomposed", (), 4, 20, 1.0),
]


def forward(z, iters):
    m = np.exp(z - z.max(axis=(-2, -1), keepdims=True))
    for _ in range(iters):
        m = m / m.sum(axis=-1, keepdims=True)
        m = m / m.sum(axis=-2, keepdims=True)
    return m


def numeric_grad(z, dm, iters, h=1e-5):
    """d(sum(forward(z) * dm))/dz, one entry of every matrix at a time."""
    g = np.zeros_like(z)
    n = z.shape[-1]
    for i in range(n):
        for j in range(n):
            zp, zm = z.copy(), z.copy()
            zp[..., i, j] += h
            zm[..., i, j] -= h
            g[..., i, j] = ((forward(zp, iters) - forward(zm, iters)) * dm).sum(axis=(-2, -1)) / (2 * h)
    return g


def source(shape, n, iters):
    t = "tensor<%s%dx%dxf32>" % ("".join("%dx" % d for d in shape), n, n)
    return ("func.func @forward(%%z: %s, %%dm: %s) -> (%s, %s) {\n"
            "  %%m = nn.sinkhorn %%z {iters = %d : i64} : %s\n"
            "  %%dz = nn.sinkhorn_grad %%z, %%dm {iters = %d : i64} : %s\n"
            "  return %%m, %%dz : %s, %s\n}\n" % (t, t, t, t, iters, t, iters, t, t, t))


def main():
    work = sys.argv[1]
    rng = np.random.default_rng(5)
    failed = 0
    for name, shape, n, iters, gain in CASES:
        z = (gain * rng.standard_normal(shape + (n, n))).astype(np.float32)
        dm = rng.standard_normal(shape + (n, n)).astype(np.float32)
        want_m = forward(z.astype(np.float64), iters)
        want_dz = numeric_grad(z.astype(np.float64), dm.astype(np.float64), iters)
        fused = len(shape) > 0 and n * n <= 64
        src = os.path.join(work, name + ".mlir")
        with open(src, "w") as f:
            f.write(source(shape, n, iters))
        ir = compile_(src, "-", "--emit=linalg")
        # Fused: two generics per op, no reduction loop.
        generics = ir.count("linalg.generic")
        if fused != (generics == 4 and "reduction" not in ir):
            print("FAIL %s: %d generics%s, want the %s lowering" % (
                name, generics, " with reductions" if "reduction" in ir else "",
                "fused" if fused else "decomposed"))
            failed += 1
            continue
        art = os.path.join(work, name + ".rwx")
        compile_(src, art)
        m, dz = rewire_runtime.Model(art).run("forward", z, dm)
        em = float(np.abs(m - want_m).max())
        eg = float(np.abs(dz - want_dz).max() / max(1.0, np.abs(want_dz).max()))
        if not (em <= 1e-6 and eg <= 1e-5):
            print("FAIL %s: forward error %.2e, gradient error %.2e" % (name, em, eg))
            failed += 1
            continue
        print("ok   %s (%s): n %d, %d rounds, %d matrices; errors %.1e, %.1e" % (
            name, "fused" if fused else "decomposed", n, iters, int(np.prod(shape)), em, eg))
    print("%d of %d cases failed" % (failed, len(CASES)))


if __name__ == "__main__":
    main()
