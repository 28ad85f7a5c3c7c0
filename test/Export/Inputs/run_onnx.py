"""Runs ONNX models in ONNX Runtime on the same random input and compares
their first outputs with the first model's.

    run_onnx.py BASE.onnx OTHER.onnx [OTHER2.onnx ...] [--atol X] [--base-output N]
    run_onnx.py --rewire MODEL.onnx [MODEL.mlir] [--seed N] [--atol X]

Prints `NAME: max abs diff D` for each OTHER and fails if any exceeds atol
(default 0: bit-exact). With --rewire the model runs in ONNX Runtime and in
Rewire on the same input (rewire-run compiles MODEL.mlir, the IR it was
exported from, its rule-initialized parameters drawn with the export's
--seed N, or else imports MODEL.onnx), and their first outputs are compared.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

args = sys.argv[1:]
atol = 0.0
if "--atol" in args:
    i = args.index("--atol")
    atol = float(args[i + 1])
    del args[i:i + 2]
# Compare output #N of BASE (default 0) with the first output of the others.
base_output = 0
if "--base-output" in args:
    i = args.index("--base-output")
    base_output = int(args[i + 1])
    del args[i:i + 2]


def run(path, feeds=None):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    if feeds is None:
        rng = np.random.default_rng(0)
        feeds = {}
        for i in s.get_inputs():
            shape = [d if isinstance(d, int) else 2 for d in i.shape]
            if i.type == "tensor(int64)":
                feeds[i.name] = rng.integers(0, 64, shape).astype(np.int64)
            elif i.type == "tensor(bool)":
                feeds[i.name] = rng.random(shape) < 0.7
            else:
                feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return s.run(None, feeds), feeds


def max_diff(y, base):
    # NaN-aware: a NaN where the other has a number (or a shape mismatch) is
    # an infinite difference; equal values (infinities included) differ by 0.
    if y.shape != base.shape or (np.isnan(y) != np.isnan(base)).any():
        return float("inf")
    same = (y == base) | np.isnan(y)
    return float(np.where(same, 0, np.abs(y - base)).max()) if y.size else 0.0


if "--rewire" in args:
    args.remove("--rewire")
    seed = []
    if "--seed" in args:
        i = args.index("--seed")
        seed = ["--compile-flag=--seed=" + args[i + 1]]
        del args[i:i + 2]
    outs, feeds = run(args[0])
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["rewire-run", args[-1], "--output=@" + os.path.join(tmp, "y.npy")] + seed
        for i, x in enumerate(feeds.values()):
            np.save(os.path.join(tmp, "x%d.npy" % i), x)
            cmd.append("--input=@" + os.path.join(tmp, "x%d.npy" % i))
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        y = np.load(os.path.join(tmp, "y.npy"))
    d = max_diff(y, outs[0])
    print("%s: rewire vs ONNX Runtime max abs diff %.3g" % (args[0].split("/")[-1], d))
    sys.exit(1 if d > atol else 0)

outs, feeds = run(args[0])
base = outs[base_output]
bad = 0
for other in args[1:]:
    y = run(other, feeds)[0][0]
    d = max_diff(y, base)
    print("%s: max abs diff %.3g" % (other.split("/")[-1], d))
    bad += d > atol
sys.exit(1 if bad else 0)
