"""Import time of generated GPT-style transformers against depth.

    python3 bench/import_scaling.py --rewire-import build/bin/rewire-import [--layers 10,100,300,1000]

Builds pre-LN decoders (d=16, 4 heads, T=8; ~29 ONNX nodes and 12
initializers per layer) with onnx.helper, times `rewire-import` on each (best
of 3 wall-clock runs), and prints a Markdown table with the time per node, so
linear growth shows as a flat last column.
"""
import argparse
import os
import platform
import subprocess
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nph

D, H, T, B = 16, 4, 8, 1


def build(layers):
    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def w(name, *shape):
        inits.append(nph.from_array((0.1 * rng.standard_normal(shape)).astype(np.float32), name))
        return name

    def c(name, values):
        inits.append(nph.from_array(np.array(values, dtype=np.int64), name))
        return name

    def n(op, ins, outs=None, **attrs):
        out = outs or ["%s_%d" % (op.lower(), len(nodes))]
        nodes.append(h.make_node(op, ins, out, name="node%d" % len(nodes), **attrs))
        return out[0] if len(out) == 1 else out

    heads = c("heads_shape", [B, T, H, D // H])
    flat = c("flat_shape", [B, T, D])
    split = c("split", [D, D, D])
    inits.append(nph.from_array(np.array(0.5, np.float32), "scale"))
    inits.append(nph.from_array(np.array(1.4142135, np.float32), "sqrt2"))
    inits.append(nph.from_array(np.array(1.0, np.float32), "one"))
    x = "x"
    for i in range(layers):
        p = "h.%d." % i
        ln = n("LayerNormalization", [x, w(p + "ln_1.weight", D), w(p + "ln_1.bias", D)], axis=-1)
        qkv = n("Add", [n("MatMul", [ln, w(p + "attn.c_attn.weight", D, 3 * D)]), w(p + "attn.c_attn.bias", 3 * D)])
        q, k, v = n("Split", [qkv, split], ["q%d" % i, "k%d" % i, "v%d" % i], axis=-1)
        q, k, v = [n("Transpose", [n("Reshape", [t, heads])], perm=[0, 2, 1, 3]) for t in (q, k, v)]
        s = n("Mul", [n("MatMul", [q, n("Transpose", [k], perm=[0, 1, 3, 2])]), "scale"])
        a = n("MatMul", [n("Softmax", [s], axis=-1), v])
        a = n("Reshape", [n("Transpose", [a], perm=[0, 2, 1, 3]), flat])
        a = n("Add", [n("MatMul", [a, w(p + "attn.c_proj.weight", D, D)]), w(p + "attn.c_proj.bias", D)])
        x = n("Add", [x, a])
        ln = n("LayerNormalization", [x, w(p + "ln_2.weight", D), w(p + "ln_2.bias", D)], axis=-1)
        f = n("Add", [n("MatMul", [ln, w(p + "mlp.c_fc.weight", D, 4 * D)]), w(p + "mlp.c_fc.bias", 4 * D)])
        g = n("Mul", [n("Mul", [f, n("Add", [n("Erf", [n("Div", [f, "sqrt2"])]), "one"])]), "scale"])
        m = n("Add", [n("MatMul", [g, w(p + "mlp.c_proj.weight", 4 * D, D)]), w(p + "mlp.c_proj.bias", D)])
        x = n("Add", [x, m])
    graph = h.make_graph(nodes, "gpt", [h.make_tensor_value_info("x", TP.FLOAT, [B, T, D])],
                         [h.make_tensor_value_info(x, TP.FLOAT, [B, T, D])], inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), len(nodes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rewire-import", required=True)
    ap.add_argument("--layers", default="10,100,300,1000")
    a = ap.parse_args()
    print("rewire-import on generated pre-LN decoders (d=%d), %s, %s, %s" % (
        D, time.strftime("%Y-%m-%d"), platform.node(), platform.processor() or platform.machine()))
    print()
    print("| layers | nodes | initializers | file MB | import s (best of 3) | us per node |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for layers in [int(x) for x in a.layers.split(",")]:
            model, nodes = build(layers)
            path = os.path.join(d, "m.onnx")
            onnx.save(model, path)
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                subprocess.run([a.rewire_import, path, "-o", os.path.join(d, "m.mlir")], check=True)
                best = min(best, time.perf_counter() - t0)
            print("| %d | %d | %d | %.1f | %.3f | %.1f |" % (
                layers, nodes, len(model.graph.initializer), os.path.getsize(path) / 1e6, best,
                1e6 * best / nodes))


if __name__ == "__main__":
    main()
