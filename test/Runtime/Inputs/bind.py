"""Model.bind (python/rewire_runtime.py): a call whose descriptors are built
once runs on the caller's arrays as they are at each call, fills the same
output arrays, agrees bit for bit with Model.run, keeps its model alive, and
refuses what it cannot bind (a non-contiguous array, whose copy would not see
later writes; a wrong dtype, shape or count, at bind time, without running
the function). The product is x W^T with W's
rows 1024 floats apart, an exported Linear layer's form (Kernels.c takes a
transposed copy of W on some CPUs): checked against float64 NumPy.

    bind.py WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
import rewire_runtime as rr  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "..", "utils"))
from onnx_graph import save  # noqa: E402

work = sys.argv[1]
M, N, K = 40, 72, 1024
path = save(os.path.join(work, "linear.onnx"),
            [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [M, K]),
             helper.make_tensor_value_info("w", TensorProto.FLOAT, [N, K])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [M, N])])
subprocess.run(["rewire-compile", path, "-o",
                os.path.join(work, "linear.rwx")], check=True)
model = rr.Model(os.path.join(work, "linear.rwx"))
rng = np.random.default_rng(7)
x = rng.standard_normal((M, K), dtype=np.float32)
w = rng.standard_normal((N, K), dtype=np.float32)


def close(y, x, w, what):
    want = x.astype(np.float64) @ w.astype(np.float64).T
    scale = np.abs(x).astype(np.float64) @ np.abs(w).astype(np.float64).T
    err = float(np.max(np.abs(y - want) / (scale + 1.0)))
    print("%s: max error %.2e of sum|terms|" % (what, err))
    assert err < 1e-6, what


pending = np.full((M, N), np.nan, np.float32)
call = model.bind("forward", x, w, outputs=[pending])
assert np.isnan(pending).all(), "bind ran the function"
print("bind checks without running")
(y,) = call()
assert y is pending
close(y, x, w, "bound call")
x[:] = rng.standard_normal((M, K), dtype=np.float32)  # new values, same array
w *= -0.5
(y2,) = call()
assert y2 is y, "outputs are filled in place"
close(y, x, w, "after writing the inputs in place")
(ref,) = model.run("forward", x, w)
assert ref.tobytes() == y.tobytes(), "bound call and Model.run differ"
print("same bits as Model.run")

out = np.empty((M, N), np.float32)
call = model.bind("forward", x, w, outputs=[out])
del model
assert call()[0] is out
close(out, x, w, "given outputs, model deleted")


def refused(what, fn, needle):
    try:
        fn()
    except rr.RewireError as e:
        assert needle in str(e), (what, str(e))
        print("refused %s: %s" % (what, str(e).splitlines()[0][:90]))
        return
    raise AssertionError("%s was not refused" % what)


model = rr.Model(os.path.join(work, "linear.rwx"))
wide = np.zeros((M, 2 * K), np.float32)
refused("a non-contiguous input", lambda: model.bind("forward", wide[:, ::2], w), "C-contiguous")
refused("a float64 input", lambda: model.bind("forward", x.astype(np.float64), w), "f64")
refused("a wrong shape", lambda: model.bind("forward", x[:-1], w), "must be 40x1024xf32")
refused("a missing input", lambda: model.bind("forward", x), "takes 2 input(s)")
refused("a non-contiguous output",
        lambda: model.bind("forward", x, w, outputs=[np.zeros((N, M), np.float32).T]),
        "C-contiguous")
print("bind: ok")
