"""MaxPool and AveragePool beyond ONNX's node tests -- 1-D and 3-D, ceil_mode
with and without count_include_pad, dilations, strides with pads, argmax
indices in both storage orders, integer inputs -- against ONNX Runtime
(Inputs/../../utils/parity.py).

    pooling_parity.py WORKDIR
"""
import os
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "utils"))
from onnx_graph import save  # noqa: E402
from parity import check  # noqa: E402

CASES = [
    ("MaxPool", (1, 2, 11), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ("AveragePool", (1, 2, 11), dict(kernel_shape=[4], strides=[3], ceil_mode=1)),
    ("MaxPool", (1, 2, 7, 9), dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1, pads=[1, 0, 1, 1])),
    ("AveragePool", (1, 2, 7, 9), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, pads=[1, 1, 1, 1],
                                       count_include_pad=1)),
    ("AveragePool", (1, 2, 7, 9), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, pads=[1, 1, 1, 1])),
    ("MaxPool", (2, 3, 9, 9), dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2])),
    ("AveragePool", (1, 2, 9, 9), dict(kernel_shape=[2, 3], dilations=[2, 1], strides=[1, 2])),
    ("MaxPool", (1, 2, 5, 6, 7), dict(kernel_shape=[2, 3, 2], strides=[1, 2, 2], pads=[0, 1, 0, 1, 1, 1])),
    ("AveragePool", (1, 2, 5, 6, 7), dict(kernel_shape=[3, 2, 2], strides=[2, 1, 2], pads=[1, 0, 1, 1, 1, 0])),
    ("MaxPool", (2, 2, 6, 7), dict(kernel_shape=[2, 2], strides=[2, 2], indices=0)),
    ("MaxPool", (2, 2, 6, 7), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], indices=1)),
    ("MaxPool", (1, 1, 5, 5), dict(kernel_shape=[2, 2], auto_pad="SAME_UPPER", dtype="uint8")),
    ("MaxPool", (1, 1, 5, 5), dict(kernel_shape=[3, 3], strides=[2, 2], dtype="int8", pads=[1, 1, 1, 1])),
]


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    failed = 0
    for n, (op, shape, attrs) in enumerate(CASES):
        rng = np.random.default_rng(n)
        attrs = dict(attrs)
        order = attrs.pop("indices", None)
        dtype = attrs.pop("dtype", "float32")
        elem = {"float32": TensorProto.FLOAT, "uint8": TensorProto.UINT8, "int8": TensorProto.INT8}[dtype]
        if dtype == "float32":
            x = rng.standard_normal(shape).astype(np.float32)
        else:
            x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, shape).astype(dtype)
        outs = ["y"] + (["i"] if order is not None else [])
        if order is not None:
            attrs["storage_order"] = order
        out_info = [helper.make_tensor_value_info("y", elem, None)]
        if order is not None:
            out_info.append(helper.make_tensor_value_info("i", TensorProto.INT64, None))
        path = os.path.join(work, "p%d.onnx" % n)
        save(path, [helper.make_node(op, ["x"], outs, name="pool", **attrs)],
             [helper.make_tensor_value_info("x", elem, list(shape))], out_info, opset=19)
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        # Re-save with the output shapes ONNX Runtime computed (Rewire needs them).
        out_info = [helper.make_tensor_value_info(nm, elem if nm == "y" else TensorProto.INT64, list(w.shape))
                    for nm, w in zip(outs, want)]
        save(path, [helper.make_node(op, ["x"], outs, name="pool", **attrs)],
             [helper.make_tensor_value_info("x", elem, list(shape))], out_info, opset=19)
        failed += not check("%s %s %s %s" % (op, shape, attrs, dtype), path, {"x": x}, want)
    print("%d cases, %d failed" % (len(CASES), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
