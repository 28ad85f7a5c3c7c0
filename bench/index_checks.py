"""Cost of the run-time index checks (rewire-check-indices) on the CPU: the
same models compiled with --check-indices=true and =false, run alternately
(rewire-run --benchmark) in one process tree, best of rounds of median
latencies. Models: the bundled tiny GPT (B2 x T8), and a worst case for the
check -- an embedding of 8192 x 768 read by 4 x 128 ids and one projection.

    /usr/bin/python3 bench/index_checks.py [--build build] [--rounds 7]
"""
import argparse
import os
import re
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def embedding_model(path, ids_path):
    rng = np.random.default_rng(0)
    V, D, B, T = 8192, 768, 4, 128
    graph = helper.make_graph(
        [helper.make_node("Gather", ["wte", "ids"], ["h"], name="embed"),
         helper.make_node("MatMul", ["h", "w"], ["y"], name="proj")], "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [B, T])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, T, D])],
        [numpy_helper.from_array(rng.standard_normal((V, D)).astype(np.float32), "wte"),
         numpy_helper.from_array(rng.standard_normal((D, D)).astype(np.float32) * 0.03, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    np.save(ids_path, rng.integers(0, V, (B, T)).astype(np.int64))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    bin_dir = os.path.join(a.build, "bin")
    work = tempfile.mkdtemp(prefix="rewire-index-checks-")
    embedding_model(os.path.join(work, "emb.onnx"), os.path.join(work, "emb.npy"))
    np.save(os.path.join(work, "gpt.npy"),
            np.random.default_rng(1).integers(0, 64, (2, 8)).astype(np.int64))
    models = {"tiny GPT (2 layers, d 32, B2 x T8)": (os.path.join(ROOT, "examples/tiny-gpt/tiny-gpt.onnx"), "gpt.npy", 3000),
              "embedding 8192 x 768, 4 x 128 ids, + 768 x 768 projection": (os.path.join(work, "emb.onnx"), "emb.npy", 200)}
    for label, (model, ids, runs) in models.items():
        best = {}
        for check in ("true", "false"):
            art = os.path.join(work, "%s-%s.rwx" % (os.path.basename(ids), check))
            subprocess.run([os.path.join(bin_dir, "rewire-compile"), model, "-o", art,
                            "--check-indices=" + check], check=True)
        for _ in range(a.rounds):
            for check in ("true", "false"):
                art = os.path.join(work, "%s-%s.rwx" % (os.path.basename(ids), check))
                out = subprocess.run([os.path.join(bin_dir, "rewire-run"), art,
                                      "--input=@" + os.path.join(work, ids), "--benchmark=%d" % runs,
                                      "--print-max-elements=0"], capture_output=True, text=True,
                                     check=True).stdout
                ms = float(re.search(r"median ([0-9.]+) ms", out).group(1))
                best[check] = min(best.get(check, 1e9), ms)
        print("%-60s checks %.4f ms, none %.4f ms: %+.2f%%" % (
            label, best["true"], best["false"], 100 * (best["true"] / best["false"] - 1)))


if __name__ == "__main__":
    main()
