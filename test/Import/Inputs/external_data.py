"""Writes DIR/model.onnx whose weight `w` (4 floats, random) lives in external
data, laid out as CASE asks, for the importer's external-data tests:

    external_data.py DIR CASE

CASE: ok, offset (data after 16 bytes of padding), traversal (../w.bin),
absolute (/tmp/...), symlink_file, symlink_dir, hardlink, past_end, bad_length,
missing, bad_offset.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h

d, case = sys.argv[1], sys.argv[2]
os.makedirs(d, exist_ok=True)
w = np.random.default_rng(0).standard_normal(4).astype(np.float32)
data = w.tobytes()


def write(rel, content):
    p = os.path.join(d, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(content)
    return p


loc, offset, length = "w.bin", None, None
if case in ("ok", "hardlink"):
    write("w.bin", data)
    if case == "hardlink":
        os.link(os.path.join(d, "w.bin"), os.path.join(d, "w2.bin"))
elif case == "offset":
    write("sub/w.bin", b"\x7f" * 16 + data)
    loc, offset, length = "sub/w.bin", 16, 16
elif case == "traversal":
    write("../w.bin", data)
    loc = "../w.bin"
elif case == "absolute":
    loc = os.path.abspath(write("w.bin", data))
elif case == "symlink_file":
    write("real.bin", data)
    os.symlink("real.bin", os.path.join(d, "w.bin"))
elif case == "symlink_dir":
    write("real/w.bin", data)
    os.symlink("real", os.path.join(d, "link"))
    loc = "link/w.bin"
elif case == "past_end":
    write("w.bin", data)
    offset, length = 8, 16
elif case == "bad_length":
    write("w.bin", data + data)
elif case == "bad_offset":
    write("w.bin", data)
    offset = "-3"
elif case == "missing":
    pass
else:
    raise SystemExit("unknown case " + case)

t = onnx.TensorProto(name="w", data_type=TP.FLOAT, dims=[4], data_location=TP.EXTERNAL)
t.external_data.add(key="location", value=loc)
if offset is not None:
    t.external_data.add(key="offset", value=str(offset))
if length is not None:
    t.external_data.add(key="length", value=str(length))
g = h.make_graph([h.make_node("Add", ["x", "w"], ["y"], name="add")], "ext",
                 [h.make_tensor_value_info("x", TP.FLOAT, [4])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [4])], [t])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
open(os.path.join(d, "model.onnx"), "wb").write(m.SerializeToString())
np.save(os.path.join(d, "expected.npy"), w)
