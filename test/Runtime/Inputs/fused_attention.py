"""The CPU's fused attention kernel (nn-fuse-attention +
rewire-attention-to-kernel -> runtime/Attention.c) against a float64 NumPy
reference and against the expanded lowering (--fused-attention=false), on
the subgraph PyTorch's exporters write:

    q, k, v : [B, T, H, D] inputs, transposed to [B, H, T, D] (k to
              [B, H, D, T] as exporters write k^T)
    s = q . k^T  / sqrt(D) (Div) or * c (Mul)
    s = Where(causal, s, -inf) or s + (0 / finfo(float32).min), optional
    o = Softmax(s, axis=-1) . v

Shapes cover one token, sizes that are not multiples of the kernel's tiles
(64 queries x 128 keys), several key tiles, more keys than queries (causal
aligned at the end), more queries than keys, a head size different for v,
scores large enough (inputs x 4) that the online softmax rescales its
running sums across tiles; masks that are constants (the causal flag) and
data (graph inputs: a bias, float or boolean, broadcast over heads or
queries, with padding that masks whole key tiles and whole rows), and the
dynamo exporter's where(isnan(p), 0, p) (fully masked rows give 0).

    fused_attention.py WORKDIR

Checks, per case: the fused compile calls rewire_attention and has no
softmax left (--emit=linalg); the unfused one has no call; fused vs the
float64 reference within 2e-5 * max(1, |ref|) elementwise (fp32, other
summation order); fused vs unfused within the same; the fused artifact
gives the same bits on one loop thread (--loop-threads=1) as on all.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import rewire_runtime  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "utils"))
from parity import compile_or_exit as compile_  # noqa: E402

TOL = 2e-5

# name, B, H, Tq, Tk, D, Dv, mask ("where", "add", None), scale op, input gain
CASES = [
    ("one-token", 1, 2, 1, 1, 64, 64, "where", "div", 1.0),
    ("odd", 2, 3, 67, 67, 24, 40, "where", "div", 1.0),
    ("key-tiles", 1, 2, 200, 200, 64, 64, "add", "div", 1.0),
    ("more-keys", 2, 2, 70, 300, 32, 32, "where", "mul", 1.0),
    ("unmasked", 1, 4, 129, 129, 16, 16, None, "mul", 1.0),
    ("more-queries", 1, 1, 300, 5, 8, 8, None, "div", 1.0),
    ("large-scores", 1, 2, 260, 260, 32, 32, "where", "div", 4.0),
    # Masks that are data (graph inputs): the kernel adds them as a bias and
    # skips the tiles they mask wholly. A float [B, 1, Tq, Tk] bias: causal
    # with -inf plus finfo.min on the first 0 / 130 keys of each sequence
    # (rows with every key masked get uniform weights, as in float32's
    # softmax); a boolean [B, 1, 1, Tk] padding mask with -inf on the first
    # 0 / 140 keys (whole key tiles of -inf before any real key).
    ("bias-input", 2, 2, 150, 150, 32, 32, "bias-input", "div", 1.0),
    ("bool-input", 2, 3, 70, 300, 16, 24, "bool-input", "mul", 1.0),
    # The dynamo exporter's where(isnan(p), 0, p) after the softmax, with a
    # boolean padding mask that masks every key of the second sequence:
    # its rows give 0 (not NaN).
    ("nan-guard", 2, 2, 40, 40, 16, 16, "guard-input", "div", 1.0),
]
PADDING = {"bias-input": 130, "bool-input": 140, "guard-input": 40}


def build(path, b, h, tq, tk, d, dv, mask, scale_op):
    nodes = [
        helper.make_node("Transpose", ["q_in"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k_in"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v_in"], ["v"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]),
    ]
    inits = []
    if scale_op == "div":
        inits.append(numpy_helper.from_array(np.array(np.sqrt(d), np.float32), "c"))
        nodes.append(helper.make_node("Div", ["s0", "c"], ["s1"]))
    else:
        inits.append(numpy_helper.from_array(np.array(1.0 / np.sqrt(d), np.float32), "c"))
        nodes.append(helper.make_node("Mul", ["c", "s0"], ["s1"]))
    causal = np.tril(np.ones((tq, tk), bool), k=tk - tq)[None, None]
    f = TensorProto.FLOAT
    extra = []
    if mask == "bias-input":
        extra.append(helper.make_tensor_value_info("mask", f, [b, 1, tq, tk]))
        nodes.append(helper.make_node("Add", ["s1", "mask"], ["s2"]))
    elif mask in ("bool-input", "guard-input"):
        extra.append(helper.make_tensor_value_info("mask", TensorProto.BOOL, [b, 1, 1, tk]))
        inits.append(numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf"))
        nodes.append(helper.make_node("Where", ["mask", "s1", "ninf"], ["s2"]))
    elif mask == "where":
        inits += [numpy_helper.from_array(causal, "causal"),
                  numpy_helper.from_array(np.array(-np.inf, np.float32), "ninf")]
        nodes.append(helper.make_node("Where", ["causal", "s1", "ninf"], ["s2"]))
    elif mask == "add":
        bias = np.where(causal, 0.0, np.finfo(np.float32).min).astype(np.float32)
        inits.append(numpy_helper.from_array(bias, "bias"))
        nodes.append(helper.make_node("Add", ["s1", "bias"], ["s2"]))
    else:
        nodes.append(helper.make_node("Identity", ["s1"], ["s2"]))
    nodes.append(helper.make_node("Softmax", ["s2"], ["p0"], axis=-1))
    if mask == "guard-input":
        inits.append(numpy_helper.from_array(np.array(0.0, np.float32), "zero"))
        nodes += [helper.make_node("IsNaN", ["p0"], ["nan"]),
                  helper.make_node("Where", ["nan", "zero", "p0"], ["p"])]
    else:
        nodes.append(helper.make_node("Identity", ["p0"], ["p"]))
    nodes.append(helper.make_node("MatMul", ["p", "v"], ["out"]))
    graph = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info("q_in", f, [b, tq, h, d]),
         helper.make_tensor_value_info("k_in", f, [b, tk, h, d]),
         helper.make_tensor_value_info("v_in", f, [b, tk, h, dv])] + extra,
        [helper.make_tensor_value_info("out", f, [b, h, tq, dv])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return causal


def mask_input(kind, b, tq, tk, causal):
    """The mask a `-input` case passes: batch i has its first i * PADDING
    keys padded."""
    pad = np.arange(tk)[None, :] < (np.arange(b) * PADDING[kind])[:, None]  # [B, Tk]
    if kind in ("bool-input", "guard-input"):
        return ~pad[:, None, None, :]
    bias = np.where(causal, 0.0, -np.inf) + np.where(pad, np.finfo(np.float32).min, 0.0)[:, None, None, :]
    return bias.astype(np.float32)


def reference(q, k, v, causal, mask, data=None):
    q, k, v = (x.astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if mask == "bias-input":
        # The bias is added in float32, where finfo.min absorbs the score.
        s = (s.astype(np.float32) + data).astype(np.float64)
    elif mask in ("bool-input", "guard-input"):
        s = np.where(data, s, -np.inf)
    elif mask:
        s = np.where(causal, s, -np.inf)
    with np.errstate(invalid="ignore"):
        s = s - s.max(-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        p = np.exp(s)
        p /= p.sum(-1, keepdims=True)
    if mask == "guard-input":
        p = np.where(np.isnan(p), 0.0, p)
    return p @ v


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    failed = 0
    for name, b, h, tq, tk, d, dv, mask, scale_op, gain in CASES:
        path = os.path.join(work, name + ".onnx")
        causal = build(path, b, h, tq, tk, d, dv, mask, scale_op)
        rng = np.random.default_rng(len(name))
        q = (rng.standard_normal((b, tq, h, d)) * gain).astype(np.float32)
        k = (rng.standard_normal((b, tk, h, d)) * gain).astype(np.float32)
        v = rng.standard_normal((b, tk, h, dv)).astype(np.float32)
        inputs = [q, k, v]
        data = None
        if mask in PADDING:
            data = mask_input(mask, b, tq, tk, causal)
            inputs.append(data)
        want = reference(q, k, v, causal, mask, data)

        fused_ir = compile_(path, "-", "--emit=linalg")
        plain_ir = compile_(path, "-", "--emit=linalg", "--fused-attention=false")
        if "call @rewire_attention" not in fused_ir or "softmax" in fused_ir.replace("rewire_attention", ""):
            print("FAIL %s: the fused compile does not call the kernel" % name)
            failed += 1
            continue
        if "rewire_attention" in plain_ir:
            print("FAIL %s: --fused-attention=false still calls the kernel" % name)
            failed += 1
            continue

        arts = {}
        for tag, flags in (("fused", []), ("fused1", ["--loop-threads=1"]),
                           ("plain", ["--fused-attention=false"])):
            arts[tag] = os.path.join(work, "%s-%s.rwx" % (name, tag))
            compile_(path, arts[tag], *flags)
        got = {tag: rewire_runtime.Model(a).run("forward", *inputs)[0] for tag, a in arts.items()}

        def rel_err(x, ref):
            return float(np.max(np.abs(x.astype(np.float64) - ref) / np.maximum(1.0, np.abs(ref))))

        e_ref = rel_err(got["fused"], want)
        e_plain = rel_err(got["fused"], got["plain"].astype(np.float64))
        same_threads = np.array_equal(got["fused"], got["fused1"])
        ok = e_ref <= TOL and e_plain <= TOL and same_threads and np.isfinite(got["fused"]).all()
        failed += not ok
        print("%s %s [B%d H%d Tq%d Tk%d D%d Dv%d mask=%s]: vs float64 %.1e, vs expanded %.1e, "
              "1 thread == all: %s" % ("ok  " if ok else "FAIL", name, b, h, tq, tk, d, dv, mask,
                                      e_ref, e_plain, same_threads))
    print("%d of %d cases failed" % (failed, len(CASES)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
