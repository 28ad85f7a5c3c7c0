"""Checks that rewire-import wrote every parameter faithfully: each
`ml_program.global ... #ml_program.extern` in the IR has an entry of the same
shape in the safetensors file, and its values equal the ONNX initializer's
(or Constant node's) bit for bit. An initializer aliased by an Identity node
(torch.onnx.export stores equal values once) is a parameter of its own with
the aliased initializer's values.

    check_weights.py model.onnx model.mlir model.safetensors
"""
import json
import re
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        out[name] = np.frombuffer(body[lo:hi], DTYPES[e["dtype"]]).reshape(e["shape"])
    return out


def main():
    model = onnx.load(sys.argv[1])
    source = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute[0].type == onnx.AttributeProto.TENSOR:
            source[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    aliased = set()
    for node in model.graph.node:
        if node.op_type == "Identity" and node.input[0] in source and node.output[0] not in source:
            source[node.output[0]] = source[node.input[0]]
            aliased.add(node.output[0])
    ir = open(sys.argv[2]).read()
    names = re.findall(r'ml_program\.global private @"?([^"(]+)"?\(#extern\d*\) : tensor<([^>]*)>', ir)
    aliases = sum(n in aliased for n, _ in names)
    stored = read_safetensors(sys.argv[3])
    bad = 0
    for name, ty in names:
        shape = [int(d) for d in ty.split("x")[:-1]]
        if name not in stored:
            print("missing:", name)
            bad += 1
        elif list(stored[name].shape) != shape:
            print("shape mismatch:", name, stored[name].shape, shape)
            bad += 1
        elif not np.array_equal(stored[name], source[name]):
            print("values differ:", name)
            bad += 1
    extra = set(stored) - {n for n, _ in names}
    print("%d parameters (%d untied aliases), %d match, %d unreferenced in the IR" % (
        len(names), aliases, len(names) - bad, len(extra)))
    sys.exit(1 if bad or not names else 0)


if __name__ == "__main__":
    main()
