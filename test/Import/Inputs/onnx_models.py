"""Writes small, readable ONNX test models, one per importer handler and per
error the importer reports.

    python3 onnx_models.py NAME OUT.onnx      # one model
    python3 onnx_models.py --list             # every NAME

Each model is built with onnx.helper (random data from a fixed seed, never
zeros) so the test reads what the graph is.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nph

RNG = np.random.default_rng(0)


def init(name, shape, dtype=np.float32):
    return nph.from_array(RNG.standard_normal(shape).astype(dtype), name)


def ints(name, values):
    return nph.from_array(np.array(values, dtype=np.int64), name)


def vi(name, shape, elem=TP.FLOAT):
    return h.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=17, extra_opsets=()):
    g = h.make_graph(nodes, "test", inputs, outputs, list(inits))
    ops = [h.make_opsetid("", opset)] + [h.make_opsetid(d, v) for d, v in extra_opsets]
    m = h.make_model(g, opset_imports=ops, producer_name="rewire-test")
    m.ir_version = 8
    return m


def unary(op, opset=17, **attrs):
    return model([h.make_node(op, ["x"], ["y"], name="n0", **attrs)],
                 [vi("x", [2, 3])], [vi("y", [2, 3])], opset=opset)


def binary(op):
    return model([h.make_node(op, ["x", "b"], ["y"], name="n0")],
                 [vi("x", [2, 3, 4]), vi("b", [4])], [vi("y", [2, 3, 4])])


M = {}
for op in ["Add", "Sub", "Mul", "Div", "Pow"]:
    M[op.lower()] = (lambda op=op: binary(op))
for op in ["Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Sqrt", "Neg", "Identity"]:
    M[op.lower()] = (lambda op=op: unary(op))
M["gelu"] = lambda: unary("Gelu", opset=20)
M["gelu_tanh"] = lambda: unary("Gelu", opset=20, approximate="tanh")
M["dropout"] = lambda: model([h.make_node("Dropout", ["x"], ["y", "mask"], name="n0")],
                             [vi("x", [2, 3])], [vi("y", [2, 3])])
M["matmul"] = lambda: model([h.make_node("MatMul", ["x", "w"], ["y"], name="n0")],
                            [vi("x", [2, 5, 8])], [vi("y", [2, 5, 16])], [init("w", [8, 16])])
M["gemm"] = lambda: model([h.make_node("Gemm", ["x", "w", "b"], ["y"], name="n0", transB=1, alpha=0.5)],
                          [vi("x", [4, 8])], [vi("y", [4, 16])], [init("w", [16, 8]), init("b", [16])])
M["softmax"] = lambda: unary("Softmax", axis=1)
M["layernorm"] = lambda: model(
    [h.make_node("LayerNormalization", ["x", "g", "b"], ["y"], name="n0", epsilon=1e-6)],
    [vi("x", [2, 5, 8])], [vi("y", [2, 5, 8])], [init("g", [8]), init("b", [8])])
M["batchnorm"] = lambda: model(
    [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="n0")],
    [vi("x", [1, 4, 3, 3])], [vi("y", [1, 4, 3, 3])],
    [init("s", [4]), init("b", [4]), init("m", [4]),
     nph.from_array(RNG.uniform(0.5, 2, [4]).astype(np.float32), "v")])
M["batchnorm_train"] = lambda: model(
    [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], name="n0",
                 training_mode=1, momentum=0.8)],
    [vi("x", [2, 4, 3, 3])], [vi("y", [2, 4, 3, 3])],
    [init("s", [4]), init("b", [4]), init("m", [4]),
     nph.from_array(RNG.uniform(0.5, 2, [4]).astype(np.float32), "v")])
# torch.onnx.export's aliasing of equal initializers: ln2.weight = Identity(ln1.weight).
M["identity_alias"] = lambda: model(
    [h.make_node("Identity", ["ln1.weight"], ["ln2.weight"], name="alias"),
     h.make_node("LayerNormalization", ["x", "ln1.weight"], ["h"], name="n0"),
     h.make_node("LayerNormalization", ["h", "ln2.weight"], ["y"], name="n1")],
    [vi("x", [2, 64])], [vi("y", [2, 64])], [init("ln1.weight", [64])])
M["reduce_mean_attr"] = lambda: model(
    [h.make_node("ReduceMean", ["x"], ["y"], name="n0", axes=[-1], keepdims=1)],
    [vi("x", [2, 5, 8])], [vi("y", [2, 5, 1])], opset=17)
M["reduce_mean_input"] = lambda: model(
    [h.make_node("ReduceMean", ["x", "axes"], ["y"], name="n0", keepdims=0)],
    [vi("x", [2, 5, 8])], [vi("y", [2, 5])], [ints("axes", [-1])], opset=18)
M["reduce_sum"] = lambda: model(
    [h.make_node("ReduceSum", ["x", "axes"], ["y"], name="n0")],
    [vi("x", [2, 5, 8])], [vi("y", [1, 5, 1])], [ints("axes", [0, 2])])
M["reshape"] = lambda: model(
    [h.make_node("Reshape", ["x", "s"], ["y"], name="n0")],
    [vi("x", [2, 6, 8])], [vi("y", [2, 12, 4])], [ints("s", [0, -1, 4])])
M["flatten"] = lambda: model([h.make_node("Flatten", ["x"], ["y"], name="n0", axis=1)],
                             [vi("x", [2, 3, 4, 5])], [vi("y", [2, 60])])
M["transpose"] = lambda: model([h.make_node("Transpose", ["x"], ["y"], name="n0", perm=[0, 2, 1])],
                               [vi("x", [2, 3, 4])], [vi("y", [2, 4, 3])])
M["concat"] = lambda: model([h.make_node("Concat", ["x", "z"], ["y"], name="n0", axis=1)],
                            [vi("x", [2, 3]), vi("z", [2, 5])], [vi("y", [2, 8])])
M["split"] = lambda: model([h.make_node("Split", ["x", "s"], ["a", "b"], name="n0", axis=1)],
                           [vi("x", [2, 6])], [vi("a", [2, 2]), vi("b", [2, 4])], [ints("s", [2, 4])])
M["split_num_outputs"] = lambda: model(
    [h.make_node("Split", ["x"], ["a", "b", "c"], name="n0", axis=-1, num_outputs=3)],
    [vi("x", [2, 9])], [vi("a", [2, 3]), vi("b", [2, 3]), vi("c", [2, 3])], opset=18)
M["slice"] = lambda: model(
    [h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="n0")],
    [vi("x", [4, 10])], [vi("y", [4, 4])],
    [ints("st", [1]), ints("en", [9]), ints("ax", [1]), ints("sp", [2])])
M["gather"] = lambda: model([h.make_node("Gather", ["w", "ids"], ["y"], name="n0")],
                            [vi("ids", [2, 5], TP.INT64)], [vi("y", [2, 5, 8])], [init("w", [50, 8])])
M["unsqueeze"] = lambda: model([h.make_node("Unsqueeze", ["x", "a"], ["y"], name="n0")],
                               [vi("x", [3, 4])], [vi("y", [1, 3, 4, 1])], [ints("a", [0, -1])])
M["squeeze"] = lambda: model([h.make_node("Squeeze", ["x", "a"], ["y"], name="n0")],
                             [vi("x", [1, 3, 1, 4])], [vi("y", [3, 4])], [ints("a", [0, 2])])
M["cast"] = lambda: model([h.make_node("Cast", ["x"], ["y"], name="n0", to=TP.INT64)],
                          [vi("x", [2, 3], TP.INT32)], [vi("y", [2, 3], TP.INT64)])
M["where"] = lambda: model([h.make_node("Where", ["c", "x", "z"], ["y"], name="n0")],
                           [vi("c", [3, 1], TP.BOOL), vi("x", [3, 4]), vi("z", [])], [vi("y", [3, 4])])
M["conv"] = lambda: model(
    [h.make_node("Conv", ["x", "w", "b"], ["y"], name="n0", pads=[1, 1, 1, 1], strides=[2, 2])],
    [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 4, 4])], [init("w", [4, 3, 3, 3]), init("b", [4])])
M["conv_same_upper"] = lambda: model(
    [h.make_node("Conv", ["x", "w"], ["y"], name="n0", auto_pad="SAME_UPPER", strides=[2, 2])],
    [vi("x", [1, 3, 7, 7])], [vi("y", [1, 4, 4, 4])], [init("w", [4, 3, 4, 4])])
M["maxpool"] = lambda: model(
    [h.make_node("MaxPool", ["x"], ["y"], name="n0", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
    [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 4, 4])])
M["global_average_pool"] = lambda: model([h.make_node("GlobalAveragePool", ["x"], ["y"], name="n0")],
                                         [vi("x", [1, 4, 5, 5])], [vi("y", [1, 4, 1, 1])])
M["constants"] = lambda: model(
    [h.make_node("Constant", [], ["c1"], name="k1", value_float=2.5),
     h.make_node("Constant", [], ["c2"], name="k2", value_ints=[2, 12]),
     h.make_node("Constant", [], ["c3"], name="k3", value=init("t", [12])),
     h.make_node("Reshape", ["x", "c2"], ["r"], name="n0"),
     h.make_node("Mul", ["r", "c1"], ["m"], name="n1"),
     h.make_node("Add", ["m", "c3"], ["y"], name="n2")],
    [vi("x", [2, 3, 4])], [vi("y", [2, 12])])
# The chain exporters emit for x.view(B, T, H, D): Shape -> Gather -> Unsqueeze
# -> Concat -> Reshape. It must fold to a constant shape.
M["shape_chain"] = lambda: model(
    [h.make_node("Shape", ["x"], ["s"], name="shape"),
     h.make_node("Gather", ["s", "i0"], ["b"], name="g0", axis=0),
     h.make_node("Gather", ["s", "i1"], ["t"], name="g1", axis=0),
     h.make_node("Unsqueeze", ["b", "a0"], ["ub"], name="u0"),
     h.make_node("Unsqueeze", ["t", "a0"], ["ut"], name="u1"),
     h.make_node("Div", ["d", "heads"], ["dh"], name="div"),
     h.make_node("Concat", ["ub", "ut", "heads", "dh"], ["shape4"], name="cat", axis=0),
     h.make_node("Reshape", ["x", "shape4"], ["y"], name="view")],
    [vi("x", [2, 5, 12])], [vi("y", [2, 5, 4, 3])],
    [ints("i0", 0), ints("i1", 1), ints("a0", [0]), ints("d", [12]), ints("heads", [4])])
M["dim_param"] = lambda: model([h.make_node("Relu", ["x"], ["y"], name="n0")],
                               [vi("x", ["batch", 8])], [vi("y", ["batch", 8])])
M["unnamed_node"] = lambda: model([h.make_node("Relu", ["x"], ["y"])],
                                  [vi("x", [2])], [vi("y", [2])])

# --- models the importer must reject ----------------------------------------
M["unsupported_op"] = lambda: model([h.make_node("STFT", ["x", "step"], ["y"], name="stft")],
                                    [vi("x", [1, 16, 1]), vi("step", [], TP.INT64)], [vi("y", [1, 1, 9, 2])])
# Every op the importer lacks, listed at once: two kinds in four nodes (and a
# custom domain), between supported ones.
M["several_unsupported"] = lambda: model(
    [h.make_node("Det", ["x"], ["d0"], name="det0"),
     h.make_node("Relu", ["x"], ["r"], name="relu"),
     h.make_node("Det", ["r"], ["d1"], name="det1"),
     h.make_node("Fancy", ["d1"], ["f"], name="fancy", domain="com.example"),
     h.make_node("Det", ["x"], ["d2"], name="det2"),
     h.make_node("STFT", ["x", "step"], ["s"], name="stft")],
    [vi("x", [3, 3]), vi("step", [], TP.INT64)], [vi("f", [])],
    extra_opsets=[("com.example", 1)])
M["custom_domain"] = lambda: model([h.make_node("Fancy", ["x"], ["y"], name="f", domain="com.example", alpha=0.5)],
                                   [vi("x", [2, 3])], [vi("y", [2, 3])], extra_opsets=[("com.example", 3)])
M["custom_domain_chain"] = lambda: model(
    [h.make_node("Fancy", ["x"], ["f"], name="f", domain="com.example"),
     h.make_node("Relu", ["f"], ["y"], name="r")],
    [vi("x", [2, 3])], [vi("y", [2, 3])], extra_opsets=[("com.example", 3)])
M["gelu_old_opset"] = lambda: unary("Gelu", opset=17)
M["opset_5_add"] = lambda: model([h.make_node("Add", ["x", "x"], ["y"], name="n0")],
                                 [vi("x", [2, 3])], [vi("y", [2, 3])], opset=5)
M["opset_12"] = lambda: unary("Relu", opset=12)
M["opset_29"] = lambda: unary("Relu", opset=29)
M["no_default_opset"] = lambda: (lambda m: (m.opset_import.pop(0), m)[1])(
    model([h.make_node("Relu", ["x"], ["y"], name="n0")], [vi("x", [2])], [vi("y", [2])],
          extra_opsets=[("com.example", 1)]))
M["duplicate_output"] = lambda: model(
    [h.make_node("Relu", ["x"], ["y"], name="a"), h.make_node("Neg", ["x"], ["y"], name="b")],
    [vi("x", [2])], [vi("y", [2])])
M["cycle"] = lambda: model(
    [h.make_node("Relu", ["b"], ["a"], name="first"), h.make_node("Neg", ["a"], ["b"], name="second")],
    [vi("x", [2])], [vi("b", [2])])
M["missing_input"] = lambda: model([h.make_node("Add", ["x", "nowhere"], ["y"], name="add")],
                                   [vi("x", [2])], [vi("y", [2])])
M["output_not_computed"] = lambda: model([h.make_node("Relu", ["x"], ["y"], name="n0")],
                                         [vi("x", [2])], [vi("zzz", [2])])
M["bad_raw_size"] = lambda: (lambda m: (m.graph.initializer[0].__setattr__("raw_data", b"\0" * 10), m)[1])(
    model([h.make_node("Add", ["x", "w"], ["y"], name="n0")], [vi("x", [4])], [vi("y", [4])], [init("w", [4])]))
M["negative_dim"] = lambda: (lambda m: (m.graph.initializer[0].dims.__setitem__(0, -4), m)[1])(
    model([h.make_node("Add", ["x", "w"], ["y"], name="n0")], [vi("x", [4])], [vi("y", [4])], [init("w", [4])]))
M["huge_dims"] = lambda: (lambda m: (m.graph.initializer[0].dims.extend([1 << 31, 1 << 31]),
                                    m.graph.initializer[0].ClearField("raw_data"), m)[2])(
    model([h.make_node("Add", ["x", "w"], ["y"], name="n0")], [vi("x", [4])], [vi("y", [4])], [init("w", [4])]))
M["high_rank"] = lambda: model([h.make_node("Relu", ["x"], ["y"], name="n0")],
                               [vi("x", [1] * 20)], [vi("y", [1] * 20)])
M["many_nodes"] = lambda: model(
    [h.make_node("Relu", ["x" if i == 0 else "v%d" % (i - 1)], ["v%d" % i], name="r%d" % i) for i in range(50)],
    [vi("x", [2])], [vi("v49", [2])])
M["string_tensor"] = lambda: model(
    [h.make_node("Identity", ["s"], ["y"], name="n0")], [], [vi("y", [1], TP.STRING)],
    [h.make_tensor("s", TP.STRING, [1], [b"hi"])])
M["subgraph"] = lambda: model(
    [h.make_node("If", ["c"], ["y"], name="branch",
                 then_branch=h.make_graph([h.make_node("Identity", ["x"], ["t"])], "then", [], [vi("t", [2])]),
                 else_branch=h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", [2])]))],
    [vi("c", [], TP.BOOL), vi("x", [2])], [vi("y", [2])])
M["external_data"] = lambda: (lambda m: (
    m.graph.initializer[0].ClearField("raw_data"),
    m.graph.initializer[0].__setattr__("data_location", TP.EXTERNAL),
    m.graph.initializer[0].external_data.add(key="location", value="weights.bin"), m)[3])(
    model([h.make_node("Add", ["x", "w"], ["y"], name="n0")], [vi("x", [4])], [vi("y", [4])], [init("w", [4])]))
M["dynamic_reshape"] = lambda: model(
    [h.make_node("Reshape", ["x", "s"], ["y"], name="view")],
    [vi("x", [2, 6]), vi("s", [2], TP.INT64)], [vi("y", [3, 4])])
# A handler's own constants are bounded (2^24 elements): a triangular mask
# for a 65536 x 65536 input is refused, not allocated.
M["trilu_huge"] = lambda: model([h.make_node("Trilu", ["x"], ["y"], name="tri")],
                                [vi("x", [65536, 65536])], [vi("y", [65536, 65536])])
M["dropout_mask_used"] = lambda: model(
    [h.make_node("Dropout", ["x"], ["y", "mask"], name="d"),
     h.make_node("Identity", ["mask"], ["z"], name="use")],
    [vi("x", [2, 8])], [vi("z", [2, 8], TP.BOOL)])
M["layernorm_mean_used"] = lambda: model(
    [h.make_node("LayerNormalization", ["x", "g"], ["y", "mean"], name="ln"),
     h.make_node("Relu", ["mean"], ["z"], name="use")],
    [vi("x", [2, 8])], [vi("z", [2, 1])], [init("g", [8])])
M["maxpool_big_kernel"] = lambda: model(
    [h.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[4, 4], dilations=[2, 2],
                 ceil_mode=1)],
    [vi("x", [1, 1, 5, 5])], [vi("y", [1, 1, 1, 1])])
M["shape_dynamic"] = lambda: model(
    [h.make_node("Shape", ["x"], ["y"], name="shape")], [vi("x", ["batch", 4])], [vi("y", [2], TP.INT64)])
M["matmul_mismatch"] = lambda: model([h.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                                     [vi("x", [2, 7])], [vi("y", [2, 16])], [init("w", [8, 16])])
M["no_input_shape"] = lambda: model([h.make_node("Relu", ["x"], ["y"], name="n0")],
                                    [h.make_tensor_value_info("x", TP.FLOAT, None)], [vi("y", [2])])

if __name__ == "__main__":
    if sys.argv[1] == "--list":
        print("\n".join(sorted(M)))
        sys.exit(0)
    m = M[sys.argv[1]]()
    with open(sys.argv[2], "wb") as f:
        f.write(m.SerializeToString())
