"""Imports the bundled tiny GPT (tiny-gpt.onnx, exported from PyTorch by
test/Import/Inputs/torch_models.py gpt), rewrites its residual stream into each
form, runs every variant on the CPU through Rewire's lowering (mlir-runner)
on fixed token ids, and prints form, parameters added, max |difference| from
the original model's logits, a checksum and the run time.

    python3 run_forms.py --build build
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import rewire_run  # noqa: E402

FORMS = [
    ("original", ""),
    ("rezero (identity init)", "kind=rezero init=identity"),
    ("layerscale (identity init)", "kind=layerscale init=identity"),
    ("review (identity init)", "kind=review init=identity"),
    ("highway (identity init)", "kind=highway init=identity"),
    ("denseformer", "kind=denseformer"),
    ("lpa", "kind=lpa"),
    ("rezero (paper init)", "kind=rezero"),
    ("layerscale (paper init)", "kind=layerscale"),
    ("review (paper init)", "kind=review"),
    ("highway (paper init)", "kind=highway"),
    ("nag (paper init)", "kind=nag"),
    ("ancre (paper init)", "kind=ancre"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    os.environ["PATH"] = os.path.join(os.path.abspath(a.build), "bin") + os.pathsep + os.environ["PATH"]
    ids = np.random.default_rng(1).integers(0, 64, (2, 8)).astype(np.int64)
    with tempfile.TemporaryDirectory() as d:
        mlir = os.path.join(d, "tiny-gpt.mlir")
        rewire_run.run(["rewire-import", os.path.join(HERE, "tiny-gpt.onnx"), "-o", mlir])
        params = os.path.join(d, "tiny-gpt.safetensors")
        print("tiny GPT (2 layers, d=32, T=8) from tiny-gpt.onnx; token ids seeded; executed on the CPU")
        print("through rewire-import, residual-detect, residual-rewrite, convert-*-to-linalg, LLVM")
        print()
        print("%-28s %8s %14s %12s %10s" % ("form", "params", "max |diff|", "checksum", "jit+run s"))
        print("-" * 76)
        base = None
        for label, opts in FORMS:
            rewrite = ("func.func(residual-detect),residual-rewrite{%s}" % opts) if opts else ""
            ir = rewire_run.lower_model(mlir, params, rewrite)
            out, secs = rewire_run.execute(ir, [(ids, "i64")], [2, 8, 64])
            report = os.path.join(d, "r.mlir")
            rewire_run.run(["rewire-opt", mlir, "-o", report,
                            "--pass-pipeline=builtin.module(%s)" % (rewrite or "func.func(residual-detect)")])
            added = json.loads(rewire_run.run(["rewire-report", report, "--format=json"]))["params_added"]
            if base is None:
                base = out
            print("%-28s %8d %14.3g %12.5f %10.2f" % (label, added, np.abs(out - base).max(), out.sum(), secs))
    print()
    print("Identity-initialized forms reproduce the original logits (differences are printing round-off);")
    print("paper initializations change the function at step 0, as the papers say.")


if __name__ == "__main__":
    main()
