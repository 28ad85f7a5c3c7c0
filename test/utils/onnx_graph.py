"""Small hand-made ONNX models for the tests: one definition of how a graph
becomes a file (opset `opset` of the default domain, IR version 8)."""
import onnx
from onnx import helper


def save(path, nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)
    return path
