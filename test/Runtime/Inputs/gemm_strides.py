"""Writes an ONNX model of eight weight-gradient-shaped products A^T B
(Gemm transA=1) and three products A B with few columns (transA=0), random
inputs and their float64 products:

  A [96, 1024]  B [96, 64]    A's row stride 1024 floats
  A [80, 256]   B [80, 2048]  B's row stride 2048 floats
  A [128, 1536] B [128, 512]  both strides multiples of 512
  A [512, 1024] B [512, 4]    few columns (a coefficient projection's gradient)
  A [300, 77]   B [300, 12]   few columns, odd sizes
  A [2048, 256] B [2048, 1]   one column
  A [512, 1024] B [512, 16]   16 columns (mHC's H^res coefficient gradient)
  A [512, 3072] B [512, 24]   24 columns (mHC's three coefficient gradients as one)
  A [512, 3072] B [3072, 24]  A B, 24 columns (mHC's coefficient projection)
  A [301, 257]  B [257, 5]    A B, odd sizes (rows shared unevenly)
  A [512, 100]  B [100, 8]    A B, too short to share
  A [301, 257]  B [257, 13]   A B, 2 to 24 columns: the AVX2 kernel (tiles of 6 rows)
  A [7, 40]     B [40, 20]    A B, fewer rows than a block, one thread
  A [300, 500]  B [19, 500]   A B^T + C, the kernel packing B^T
  A [1, 64]     B [64, 17]    A B, one row

On a CPU where oneDNN runs its AVX2 kernels the runtime copies the first
three's operands to padded rows first; it computes the products with few
columns as (B^T A)^T (up to 31 columns but 16 there, 16 with AVX-512 kernels:
runtime/Kernels.c, rewire_sgemm); the products must not change, and the
per-thread copies grow and shrink between calls. Products A op(B) with 2 to
24 columns, and A^T B with 17 to 24 columns and at least 2048 rows, run on
the runtime's AVX2 kernels where oneDNN runs AVX2 ones (runtime/NarrowGemm.c);
elsewhere products with few columns and at least 256 rows and 256 terms run
as one single-threaded SGEMM per thread on its share of the rows.

    gemm_strides.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper as h, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
shapes = [((96, 1024), (96, 64)), ((80, 256), (80, 2048)), ((128, 1536), (128, 512)),
          ((512, 1024), (512, 4)), ((300, 77), (300, 12)), ((2048, 256), (2048, 1)),
          ((512, 1024), (512, 16)), ((512, 3072), (512, 24)),
          ((512, 3072), (3072, 24), 0), ((301, 257), (257, 5), 0), ((512, 100), (100, 8), 0),
          ((301, 257), (257, 13), 0), ((7, 40), (40, 20), 0), ((300, 500), (19, 500), 0, 1, 1),
          ((1, 64), (64, 17), 0)]
rng = np.random.default_rng(11)
inputs, nodes, outputs, initializers = [], [], [], []
for i, (sa, sb, *rest) in enumerate(shapes):
    trans_a = rest[0] if rest else 1
    trans_b = rest[1] if len(rest) > 1 else 0
    with_c = len(rest) > 2 and rest[2]
    # A B's sums of up to 3072 terms: A scaled by 1/sqrt(terms), so that
    # fp32 round-off stays within the test's 1e-5 as for the others.
    a = (rng.uniform(-1, 1, sa) / (1 if trans_a else np.sqrt(sa[1]))).astype(np.float32)
    b = rng.uniform(-1, 1, sb).astype(np.float32)
    np.save(os.path.join(out, "a%d.npy" % i), a)
    np.save(os.path.join(out, "b%d.npy" % i), b)
    op_a = a.T if trans_a else a
    op_b = b.T if trans_b else b
    y = op_a.astype(np.float64) @ op_b.astype(np.float64)
    operands = ["a%d" % i, "b%d" % i]
    if with_c:  # an initializer added to the product
        c = rng.uniform(-1, 1, y.shape).astype(np.float32)
        initializers.append(numpy_helper.from_array(c, "c%d" % i))
        operands.append("c%d" % i)
        y += c
    np.save(os.path.join(out, "y%d.npy" % i), y.astype(np.float32))
    inputs += [h.make_tensor_value_info("a%d" % i, TensorProto.FLOAT, list(sa)),
               h.make_tensor_value_info("b%d" % i, TensorProto.FLOAT, list(sb))]
    nodes.append(h.make_node("Gemm", operands, ["y%d" % i], transA=trans_a, transB=trans_b))
    outputs.append(h.make_tensor_value_info("y%d" % i, TensorProto.FLOAT, list(y.shape)))
graph = h.make_graph(nodes, "gemm_strides", inputs, outputs, initializer=initializers)
onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), os.path.join(out, "gemm.onnx"))
