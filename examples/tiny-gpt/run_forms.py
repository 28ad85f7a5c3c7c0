"""Compiles the bundled tiny GPT (tiny-gpt.onnx, exported from PyTorch by
test/Import/Inputs/torch_models.py gpt) with rewire-compile, once plain and
once per residual form (--residual=KIND[:options]: detection and rewrite
inside the compiler), runs every artifact with the Rewire runtime on fixed
token ids, and prints form, parameters added, max |difference| from the
original model's logits, a checksum and the median latency.

    python3 run_forms.py --build build
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

FORMS = [
    ("original", ""),
    ("rezero (identity init)", "rezero:init=identity"),
    ("layerscale (identity init)", "layerscale:init=identity"),
    ("review (identity init)", "review:init=identity"),
    ("highway (identity init)", "highway:init=identity"),
    ("denseformer", "denseformer"),
    ("lpa", "lpa"),
    ("rezero (paper init)", "rezero"),
    ("layerscale (paper init)", "layerscale"),
    ("review (paper init)", "review"),
    ("highway (paper init)", "highway"),
    ("nag (paper init)", "nag"),
    ("ancre (paper init)", "ancre"),
]


def tool(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s failed: %s" % (args[0], r.stderr.strip()[-800:]))
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=50)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    os.environ["PATH"] = os.path.join(build, "bin") + os.pathsep + os.environ["PATH"]
    os.environ.setdefault("REWIRE_LIB_DIR", os.path.join(build, "lib"))
    import rewire_runtime  # noqa: E402 - needs REWIRE_LIB_DIR
    onnx_path = os.path.join(HERE, "tiny-gpt.onnx")
    ids = np.random.default_rng(1).integers(0, 64, (2, 8)).astype(np.int64)
    with tempfile.TemporaryDirectory() as d:
        print("tiny GPT (2 layers, d=32, T=8) from tiny-gpt.onnx; token ids seeded; compiled by")
        print("rewire-compile (--residual=FORM runs detection and the rewrite) and run by the runtime")
        print()
        print("%-28s %8s %12s %12s %12s" % ("form", "params", "max |diff|", "checksum", "median ms"))
        print("-" * 76)
        base = None
        for label, spec in FORMS:
            extra = ["--residual=" + spec] if spec else []
            rwx = os.path.join(d, (spec or "original").replace(":", "_").replace("=", "_") + ".rwx")
            tool("rewire-compile", onnx_path, "-o", rwx, *extra)
            ir = os.path.join(d, "r.mlir")
            tool("rewire-compile", onnx_path, "--emit=residual", "-o", ir,
                 *(extra or ["--residual=rezero:init=identity"]))
            added = json.loads(tool("rewire-report", ir, "--format=json"))["params_added"] if spec else 0
            model = rewire_runtime.Model(rwx)
            out = model.run("forward", ids)[0]
            times = []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                model.run("forward", ids)
                times.append((time.perf_counter() - t0) * 1e3)
            if base is None:
                base = out
            print("%-28s %8d %12.3g %12.5f %12.3f" % (label, added, np.abs(out - base).max(),
                                                     float(out.sum()), statistics.median(times)))
    print()
    print("Identity-initialized forms reproduce the original logits (fp32 round-off);")
    print("paper initializations change the function at step 0, as the papers say.")


if __name__ == "__main__":
    main()
