"""Writes gather.onnx (an embedding of 10 rows read by 2x3 int64 ids) to
the folder given: the model of input-checks.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

table = np.random.default_rng(0).standard_normal((10, 4)).astype(np.float32)
graph = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")], "g",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])],
                          [numpy_helper.from_array(table, "table")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, os.path.join(sys.argv[1], "gather.onnx"))
