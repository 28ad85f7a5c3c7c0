"""Writes ONNX models whose graph outputs name one value more than once:
`y` and `Identity(y)` (the importer folds the Identity), `y` three times,
and the graph input passed straight through twice.

    repeated_outputs.py OUT_DIR
"""
import os
import sys

import onnx
from onnx import TensorProto, helper as h

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, outputs, batch=2):
    x = h.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])
    outs = [h.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    graph = h.make_graph(nodes, name, [x], outs)
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]),
              os.path.join(out, name + ".onnx"))


relu = h.make_node("Relu", ["x"], ["y"])
save("identity", [relu, h.make_node("Identity", ["y"], ["z"])], ["y", "z"])
save("identity_dynamic", [relu, h.make_node("Identity", ["y"], ["z"])], ["y", "z"], batch="n")
save("thrice", [relu, h.make_node("Identity", ["y"], ["z"]), h.make_node("Identity", ["z"], ["w"])],
     ["w", "y", "z"])
save("input_twice", [h.make_node("Identity", ["x"], ["a"]), h.make_node("Identity", ["x"], ["b"])],
     ["a", "b"])
