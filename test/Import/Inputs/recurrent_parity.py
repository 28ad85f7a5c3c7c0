"""RNN, GRU and LSTM variants the ONNX node tests leave out -- reverse and
bidirectional, batch-first layout, initial states, per-entry
sequence_lens, linear_before_reset, clip, peepholes, input_forget, other
activations -- built with onnx.helper on random weights, compiled by
rewire-compile and compared output by output with ONNX Runtime
(float32; |got - want| <= 1e-5 + 1e-4 |want|).

    recurrent_parity.py WORKDIR
"""
import os
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "utils"))
from onnx_graph import save  # noqa: E402
from parity import check  # noqa: E402

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}

# (op, attributes, extras): extras among B, lens, h0, c0, P.
CASES = [
    ("RNN", {"direction": "reverse"}, ["B"]),
    ("RNN", {"direction": "bidirectional", "activations": ["Relu", "Tanh"]}, ["B", "h0"]),
    ("RNN", {"clip": 0.5, "layout": 1}, ["B", "h0"]),
    ("GRU", {"direction": "bidirectional"}, ["B", "lens", "h0"]),
    ("GRU", {"linear_before_reset": 1}, ["B"]),
    ("GRU", {"linear_before_reset": 1, "direction": "reverse", "layout": 1}, ["B", "h0"]),
    ("GRU", {"activations": ["HardSigmoid", "Softsign"], "activation_alpha": [0.3],
             "activation_beta": [0.4]}, []),
    ("LSTM", {"direction": "bidirectional"}, ["B", "lens", "h0", "c0"]),
    ("LSTM", {}, ["B", "h0", "c0", "P"]),
    ("LSTM", {"input_forget": 1, "clip": 1.5}, ["B"]),
    ("LSTM", {"layout": 1, "direction": "reverse"}, ["B", "lens", "h0", "c0", "P"]),
]


def build(path, op, attrs, extras, rng, seq=5, batch=3, inp=4, hidden=6):
    layout = attrs.get("layout", 0)
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    g = GATES[op]
    x_shape = [batch, seq, inp] if layout else [seq, batch, inp]
    state = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    # Values are drawn in layout-0 order, so both layouts of a case see the same data.
    x0 = rng.standard_normal([seq, batch, inp]).astype(np.float32)
    feeds = {"X": x0.transpose(1, 0, 2) if layout else x0}
    inits = [numpy_helper.from_array((rng.standard_normal((dirs, g * hidden, inp)) * 0.5).astype(np.float32), "W"),
             numpy_helper.from_array((rng.standard_normal((dirs, g * hidden, hidden)) * 0.5).astype(np.float32), "R")]
    names = ["X", "W", "R"]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    optional = {"B": ("B", [dirs, 2 * g * hidden]), "lens": ("sequence_lens", [batch]),
                "h0": ("initial_h", state), "c0": ("initial_c", state), "P": ("P", [dirs, 3 * hidden])}
    order = ["B", "lens", "h0", "c0", "P"] if op == "LSTM" else ["B", "lens", "h0"]
    for key in order:
        if key not in extras:
            names.append("")
            continue
        name, shape = optional[key]
        names.append(name)
        if key == "lens":
            feeds[name] = np.array([seq, 2, 4][:batch], np.int32)
            inputs.append(helper.make_tensor_value_info(name, TensorProto.INT32, shape))
        elif key in ("h0", "c0"):
            v = rng.standard_normal([dirs, batch, hidden]).astype(np.float32)
            feeds[name] = v.transpose(1, 0, 2) if layout else v
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        else:
            inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.5).astype(np.float32), name))
    while names and names[-1] == "":
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    y_shape = [batch, seq, dirs, hidden] if layout else [seq, dirs, batch, hidden]
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape),
               helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, state)]
    if op == "LSTM":
        outputs.append(helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, state))
    node = helper.make_node(op, names, outs, name="cell", hidden_size=hidden, **attrs)
    save(path, [node], inputs, outputs, inits, opset=14)
    return feeds


def reference(path, op, attrs, extras, feeds, work, n):
    """ONNX Runtime's outputs; it has no layout = 1 kernels, so batch-first
    cases run as the layout-0 model on transposed inputs, their outputs
    transposed back (the definition of layout)."""
    if not attrs.get("layout"):
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)
    plain = dict(attrs)
    del plain["layout"]
    ref = os.path.join(work, "r%d.ref.onnx" % n)
    build(ref, op, plain, extras, np.random.default_rng(n))
    t = dict(feeds)
    t["X"] = feeds["X"].transpose(1, 0, 2)
    for k in ("initial_h", "initial_c"):
        if k in t:
            t[k] = feeds[k].transpose(1, 0, 2)
    outs = ort.InferenceSession(ref, providers=["CPUExecutionProvider"]).run(None, t)
    return [outs[0].transpose(2, 0, 1, 3)] + [o.transpose(1, 0, 2) for o in outs[1:]]


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    failed = 0
    for n, (op, attrs, extras) in enumerate(CASES):
        path = os.path.join(work, "r%d.onnx" % n)
        feeds = build(path, op, attrs, extras, np.random.default_rng(n))
        label = "%s %s %s" % (op, attrs, extras)
        want = reference(path, op, attrs, extras, feeds, work, n)
        failed += not check(label, path, feeds, want)
    print("%d cases, %d failed" % (len(CASES), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
