"""Every residual form at its paper initialization, on the bundled tiny GPT:
Rewire's compiled artifact (fused lowering, rewire-compile) against an
independent execution of the same equations: the rewritten model exported to
standard ONNX ops (rewire-export; each decomposition is itself checked
against a float64 NumPy reference in test/Export/residual-ops.test) and run
by ONNX Runtime. Same parameters: the imported weights plus the new ones
materialized from their #nn.init rules with the same seed.

    paper_forms.py WORKDIR

Tolerance |got - want| <= 1e-4 * max(1, |want|).
"""
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import rewire_runtime  # noqa: E402

FORMS = ["rezero", "skipinit", "layerscale", "review", "review gate=row", "review combine=convex",
         "highway", "nag", "ancre", "denseformer", "laurel laurel=rw-lr-pa", "laurel laurel=gemma3n rank=4"]


def tool(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL %s: %s" % (args[0], r.stderr[-1200:]))
    return r.stdout


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(ROOT, "examples", "tiny-gpt", "tiny-gpt.onnx")
    mlir = os.path.join(work, "gpt.mlir")
    tool("rewire-import", onnx_path, "-o", mlir)
    ids = np.random.default_rng(3).integers(0, 64, (2, 8)).astype(np.int64)
    bad = 0
    for form in FORMS:
        opts = "kind=" + form.replace(" ", " ")
        tag = form.replace(" ", "_").replace("=", "-")
        rewritten = os.path.join(work, tag + ".mlir")
        tool("rewire-opt", mlir, "-o", rewritten,
             "--pass-pipeline=builtin.module(func.func(residual-detect),residual-rewrite{%s})" % opts)
        exported = os.path.join(work, tag + ".onnx")
        tool("rewire-export", rewritten, "-o", exported, "--seed=5")
        artifact = os.path.join(work, tag + ".rwx")
        tool("rewire-compile", rewritten, "-o", artifact, "--seed=5")
        got = rewire_runtime.Model(artifact).run("forward", ids)[0].astype(np.float64)
        sess = ort.InferenceSession(exported, providers=["CPUExecutionProvider"])
        want = sess.run(None, {sess.get_inputs()[0].name: ids})[0].astype(np.float64)
        err = np.abs(got - want)
        ok = got.shape == want.shape and np.all(err <= 1e-4 * np.maximum(1.0, np.abs(want)))
        bad += not ok
        print("%s %s (paper init): max abs diff vs ONNX Runtime on the exported equations %.2e" % (
            "ok  " if ok else "FAIL", form, err.max()))
    print("%d forms, %d failed" % (len(FORMS), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
