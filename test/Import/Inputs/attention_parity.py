"""The opset-23 transformer ops against ONNX Runtime: Attention (plain
causal with a KV cache, grouped-query 3-D, boolean and float masks, softcap, the QK output after softmax, an fp32 softmax of
fp16 inputs), RMSNormalization over one and two axes, RotaryEmbedding
(halves and interleaved pairs, partial rotary dims, position ids). Random
inputs; Inputs/../../utils/parity.py compares.

    attention_parity.py WORKDIR
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

F = TensorProto.FLOAT
# onnx 1.12's mapping from NumPy dtypes to ONNX element types.
ELEM = {np.dtype(np.float32): F, np.dtype(np.float16): TensorProto.FLOAT16,
        np.dtype(np.int64): TensorProto.INT64, np.dtype(np.bool_): TensorProto.BOOL}


def case(name, op, inputs, n_out, attrs, rng, opset=23, inits=(), out_type=F):
    """inputs: [(name, array or None for absent)]."""
    names = [n if a is not None else "" for n, a in inputs]
    while names and names[-1] == "":
        names.pop()
    feeds = {n: a for n, a in inputs if a is not None and n not in dict(inits)}
    outs = ["y%d" % i for i in range(n_out)]
    node = helper.make_node(op, names, outs, name="n", **attrs)
    infos = [helper.make_tensor_value_info(n, ELEM[a.dtype], list(a.shape))
             for n, a in inputs if a is not None and n not in dict(inits)]
    init_protos = [numpy_helper.from_array(a, n) for n, a in inits]
    tmp = os.path.join(WORK, name + ".tmp.onnx")
    save(tmp, [node], infos, [helper.make_tensor_value_info(o, out_type, None) for o in outs], init_protos, opset=opset)
    want = ort.InferenceSession(tmp, providers=["CPUExecutionProvider"]).run(None, feeds)
    path = os.path.join(WORK, name + ".onnx")
    save(path, [node], infos,
         [helper.make_tensor_value_info(o, ELEM[w.dtype], list(w.shape))
          for o, w in zip(outs, want)], init_protos, opset=opset)
    tol = 2e-3 if any(a is not None and a.dtype == np.float16 for _, a in inputs) else 1e-4
    return check(name, path, feeds, want, rtol=tol, atol=tol)


def main():
    global WORK
    WORK = sys.argv[1]
    os.makedirs(WORK, exist_ok=True)
    rng = np.random.default_rng(0)
    r = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    ok = []
    # 4-D, causal, KV cache: 2 new tokens after 5 past ones (nn.attention).
    ok.append(case("attn_cache_causal", "Attention",
                   [("Q", r(2, 4, 2, 8)), ("K", r(2, 4, 2, 8)), ("V", r(2, 4, 2, 8)), ("mask", None),
                    ("pk", r(2, 4, 5, 8)), ("pv", r(2, 4, 5, 8))], 3, {"is_causal": 1}, rng))
    # 3-D grouped-query attention, causal over fewer queries than keys.
    ok.append(case("attn_gqa_3d", "Attention",
                   [("Q", r(2, 3, 6 * 4)), ("K", r(2, 5, 2 * 4)), ("V", r(2, 5, 2 * 4))], 1,
                   {"q_num_heads": 6, "kv_num_heads": 2, "is_causal": 1}, rng))
    # A boolean mask broadcast over heads (ONNX Runtime takes no mask
    # shorter than the keys; the ONNX node tests cover that padding).
    m = rng.random((2, 1, 3, 6)) > 0.3
    m[..., 0] = True
    ok.append(case("attn_bool_mask", "Attention",
                   [("Q", r(2, 2, 3, 8)), ("K", r(2, 2, 6, 8)), ("V", r(2, 2, 6, 8)), ("mask", m)], 1, {}, rng))
    # A float mask, softcap, a custom scale, and the QK output after softmax.
    ok.append(case("attn_softcap_qk", "Attention",
                   [("Q", r(1, 2, 4, 8)), ("K", r(1, 2, 4, 8)), ("V", r(1, 2, 4, 8)), ("mask", r(4, 4))], 4,
                   {"softcap": 2.0, "scale": 0.3, "qk_matmul_output_mode": 3}, rng))
    # fp16 inputs with an fp32 softmax.
    h = lambda *s: rng.standard_normal(s).astype(np.float16)  # noqa: E731
    ok.append(case("attn_fp16_softmax32", "Attention",
                   [("Q", h(1, 2, 4, 8)), ("K", h(1, 2, 4, 8)), ("V", h(1, 2, 4, 8))], 1,
                   {"softmax_precision": 1, "is_causal": 1}, rng, out_type=TensorProto.FLOAT16))
    # RMSNormalization over the last axis and over the last two.
    ok.append(case("rms_last", "RMSNormalization", [("X", r(2, 3, 8)), ("S", r(8))], 1, {"epsilon": 1e-3}, rng))
    ok.append(case("rms_two_axes", "RMSNormalization", [("X", r(2, 3, 8)), ("S", r(3, 8))], 1, {"axis": 1}, rng))
    # RotaryEmbedding: 4-D halves with a partial rotary dim; 3-D interleaved
    # with position ids into a longer cache.
    ok.append(case("rope_4d_partial", "RotaryEmbedding",
                   [("X", r(2, 3, 5, 8)), ("cos", r(2, 5, 2)), ("sin", r(2, 5, 2))], 1,
                   {"rotary_embedding_dim": 4}, rng))
    pos = np.array([[0, 3, 5, 7], [1, 2, 4, 6]], np.int64)
    ok.append(case("rope_3d_interleaved_pos", "RotaryEmbedding",
                   [("X", r(2, 4, 2 * 8)), ("cos", r(10, 4)), ("sin", r(10, 4)), ("pos", pos)], 1,
                   {"interleaved": 1, "num_heads": 2}, rng))
    print("%d cases, %d failed" % (len(ok), ok.count(False)))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
