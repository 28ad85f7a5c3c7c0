"""Writes one MLIR function per residual form and nn row op, at feature
widths that exercise every row-kernel shape: a warp per row with 16-byte
vectors (64), a warp with scalar lanes (37, odd), a block per row with
vectors and a partial last chunk (1000), a block with 2-wide vectors (4098);
and rows too wide for any row kernel (16411: generic kernels).
Rows are 3 x 5 = 15: not a multiple of the 8 rows a warp-mode block takes.

Used by the PTX checks (compile-only) and by the CPU-vs-GPU execution test.
Prints the module; with --list prints `name input-shapes` lines instead
(f32 unless marked `i64:`; i64 inputs are ids in [0, 64)).
"""
import sys

ROWS = (3, 5)
WIDTHS = (64, 37, 1000, 4098)
WIDE = 16411  # odd and > 16 x 1024: beyond any row kernel


def t(shape, dtype="f32"):
    return "tensor<" + "x".join(str(d) for d in shape) + ("x" if shape else "") + dtype + ">"


def ops(w):
    S = ROWS + (w,)
    T = t(S)
    yield (f"add_{w}", [("h", S), ("u", S)],
           f"residual.add %h, %u stream 0 layer 0 : {T}")
    yield (f"scale_add_{w}", [("h", S), ("u", S), ("a", (w,))],
           f"residual.scale_add %h, %u, %a stream 0 layer 0 : {T}, {t((w,))}")
    if w <= 1000:
        yield (f"review_{w}", [("h", S), ("u", S), ("W", (2 * w, w)), ("b", (w,))],
               f"residual.gated_add review additive %h, %u, %W, %b stream 0 layer 0 : {T}, {t((2 * w, w))}, {t((w,))}")
        yield (f"review_convex_row_{w}", [("h", S), ("u", S), ("W", (2 * w, 1)), ("b", (1,))],
               f"residual.gated_add review convex %h, %u, %W, %b eps 1.0e-5 stream 0 layer 0 : {T}, {t((2 * w, 1))}, {t((1,))}")
        yield (f"highway_{w}", [("h", S), ("u", S), ("W", (w, w)), ("b", (w,))],
               f"residual.gated_add highway additive %h, %u, %W, %b stream 0 layer 0 : {T}, {t((w, w))}, {t((w,))}")
        yield (f"nag_gate_{w}", [("R", S), ("w", (w, 4)), ("b", (4,)), ("pi", (4,))],
               f"residual.nag_gate %R, %w, %b, %pi stream 0 layer 0 : {T}, {t((w, 4))}, {t((4,))}, {t((4,))}")
    yield (f"mix_{w}", [("y", S), ("h0", S), ("h1", S), ("h2", S), ("c", (3,))],
           f"residual.mix softmax %y, [%h0, %h1, %h2], %c tau 0.5 stream 0 layer 2 : {T}, {t((3,))}")
    if w == 64:  # LAuReL-PA's mix: the same kernel shape, its own weights
        yield (f"mix_additive_{w}", [("y", S), ("h0", S), ("h1", S), ("c", (2,))],
               f"residual.mix additive %y, [%h0, %h1], %c stream 0 layer 2 : {T}, {t((2,))}")
    yield (f"nag_add_{w}", [("R", S), ("f", S), ("a", ()), ("m", ROWS + (1,))],
           f"residual.nag_add %R, %f, %a, %m stream 0 layer 0 : {T}, {t(())}, {t(ROWS + (1,))}")
    yield (f"layer_norm_{w}", [("x", S), ("g", (w,)), ("b", (w,))],
           f"nn.layer_norm %x, %g, %b : {T}, {t((w,))}, {t((w,))}")
    yield (f"rms_norm_{w}", [("x", S), ("g", (w,))],
           f"nn.rms_norm %x, %g {{epsilon = 1.0e-06 : f32}} : {T}, {t((w,))}")
    yield (f"softmax_{w}", [("x", S)], f"nn.softmax %x : {T}")
    yield (f"gelu_{w}", [("x", S)], f"nn.gelu %x approximate tanh : {T}")
    # A column sum (a bias gradient): a generic kernel with its reduction
    # over 16 x 8 = 128 rows split across threads.
    C = (16, 8, w)
    yield (f"colsum_{w}", [("x", C)],
           f"nn.reduce_sum %x {{axes = array<i64: 0, 1>, keepdims = false}} : ({t(C)}) -> {t((w,))}")
    # An embedding gradient (64-row table, 12 x 50 = 600 positions: three
    # tiles of 256, the last partial): the guarded-reduction kernel.
    if w <= 1000:
        P = (12, 50)
        yield (f"embedding_grad_{w}", [("u", P + (w,)), ("ids", P, "i64")],
               f"nn.scatter_add %u, %ids : ({t(P + (w,))}, {t(P, 'i64')}) -> {t((64, w))}")


def wide_ops(w):
    """Rows too wide for a row kernel's registers (a vocabulary-wide
    softmax): elementwise generic kernels and row-split reductions."""
    S = ROWS + (w,)
    T = t(S)
    yield (f"softmax_{w}", [("x", S)], f"nn.softmax %x : {T}")
    yield (f"layer_norm_{w}", [("x", S), ("g", (w,)), ("b", (w,))],
           f"nn.layer_norm %x, %g, %b : {T}, {t((w,))}, {t((w,))}")


def long_reductions():
    """Reductions to a few values over many points (a scalar gate's
    gradient; a per-channel one over all tokens): split into partial sums
    by rewire-split-long-reductions."""
    S = (32, 64, 64)
    yield ("sum_all", [("x", S)],
           f"nn.reduce_sum %x {{axes = array<i64: 0, 1, 2>, keepdims = false}} : ({t(S)}) -> {t(())}")
    C = (256, 256, 4)
    yield ("sum_rows", [("x", C)],
           f"nn.reduce_sum %x {{axes = array<i64: 0, 1>, keepdims = false}} : ({t(C)}) -> {t((4,))}")


def stream_ops():
    """mHC's Sinkhorn and its gradient (one 4 x 4 matrix per thread: 15
    matrices, 20 rounds) and a hyper-connection's gradient res^T . g (a
    contraction of 4 terms: a generated kernel, not cuBLAS)."""
    M = ROWS + (4, 4)
    yield ("sinkhorn", [("z", M)], f"nn.sinkhorn %z {{iters = 20 : i64}} : {t(M)}")
    yield ("sinkhorn_grad", [("z", M), ("dm", M)],
           f"nn.sinkhorn_grad %z, %dm {{iters = 20 : i64}} : {t(M)}")
    G = ROWS + (4, 64)
    yield ("short_matmul", [("res", M), ("g", G)],
           f"nn.matmul %res, %g : ({t(M)}, {t(G)}) -> {t(G)}")


def all_ops():
    for w in WIDTHS:
        yield w, ops(w)
    yield WIDE, wide_ops(WIDE)
    yield None, long_reductions()
    yield None, stream_ops()


def main():
    listing = "--list" in sys.argv
    out = [] if listing else ["module {"]
    for w, funcs in all_ops():
        for name, args, body in funcs:
            if listing:
                out.append(name + " " + " ".join(
                    ("i64:" if a[2:] == ("i64",) else "") +
                    ("x".join(str(d) for d in a[1]) if a[1] else "scalar") for a in args))
                continue
            sig = ", ".join(f"%{a[0]}: {t(a[1], *a[2:])}" for a in args)
            rt = (t(()) if name == "sum_all" else t((4,)) if name == "sum_rows"
                  else t(ROWS + (4, 4)) if name.startswith("sinkhorn")
                  else t(ROWS + (4, 64)) if name == "short_matmul"
                  else t(ROWS + (1,)) if name.startswith("nag_gate")
                  else t((w,)) if name.startswith("colsum")
                  else t((64, w)) if name.startswith("embedding_grad") else t(ROWS + (w,)))
            out.append(f"  func.func @{name}({sig}) -> {rt} {{")
            out.append(f"    %0 = {body}")
            out.append(f"    return %0 : {rt}")
            out.append("  }")
    if not listing:
        out.append("}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
