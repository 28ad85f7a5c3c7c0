"""rewire-report --layer-stats on the bundled tiny GPT, checked against what
the equations say: Review at paper init has r = 0.5 exactly (W = 0, b = 0);
the stream norm entering layer 0 is the embeddings' mean row norm (computed
here with NumPy from the ONNX initializers); NAG's relative update is alpha_l
times its modulator m (papers.md: ||R' - R|| / ||R|| = alpha m), with alpha_l
= l^{-1/2} at paper init.

    layer_stats.py WORKDIR MODEL.onnx
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

def _finite(v):
    """A NaN error counts as infinitely wrong (max() would skip it)."""
    return v if v == v else float("inf")


def report(work, model, form, ids):
    page = os.path.join(work, form + ".html")
    r = subprocess.run(["rewire-report", model, "--layer-stats", "--residual=" + form,
                        "--inputs=" + ids, "-o", page, "--batches=4"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL rewire-report: " + r.stderr[-800:])
    html = open(page).read()
    assert html.count("data:image/png;base64,") >= 3, "plots missing"
    rows = re.findall(r"<tr><td>(\d+)</td><td>(\d+)</td><td>([a-z_]+)</td><td>([a-z_]+)</td><td>([-0-9.e+]+)</td></tr>", html)
    return {(int(l), stat): float(v) for _, l, _, stat, v in rows}


def main():
    work, model = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    ids = np.random.default_rng(0).integers(0, 64, (8, 8)).astype(np.int64)
    path = os.path.join(work, "ids.npy")
    np.save(path, ids)
    ok = True

    s = report(work, model, "review", path)
    gates = [(s[(l, "gate_mean")], s[(l, "gate_var")]) for l in range(4)]
    good = all(abs(m - 0.5) < 1e-6 and v < 1e-9 for m, v in gates)
    print("%s review at paper init: gate mean 0.5 and variance 0 at all 4 updates" % ("ok  " if good else "FAIL"))
    ok &= good

    g = onnx.load(model).graph
    w = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    # The exporter folded wpe(arange(T)) into the constant the embedding adds.
    pos = next(n.input[1] for n in g.node if n.op_type == "Add" and n.input[0].startswith("/wte/"))
    emb = w["wte.weight"][ids[:8]] + w[pos]
    want = float(np.linalg.norm(emb.reshape(-1, emb.shape[-1]), axis=1).mean())
    err = abs(s[(0, "norm")] - want) / want
    print("%s stream norm entering layer 0 = NumPy's embedding row norm (rel diff %.1e)" % (
        "ok  " if err < 1e-4 else "FAIL", err))
    ok &= err < 1e-4

    s = report(work, model, "nag", path)
    # fp32 with the compiler's fast math: 1e-3 relative.
    worst = max(_finite(abs(s[(l, "update")] / s[(l, "gate_mean")] * (l + 1) ** 0.5 - 1)) for l in range(4))
    print("%s nag: relative update = alpha_l * m with alpha_l = l^-1/2 (max rel diff %.1e)" % (
        "ok  " if worst < 1e-3 else "FAIL", worst))
    ok &= worst < 1e-3

    # Mixture-of-Depths: a model routed at rate 0.25 skips 4 of the 16 rows
    # of each batch at every NAG update.
    mlir = os.path.join(work, "mod.mlir")
    r = subprocess.run(["rewire-import", model, "-o", os.path.join(work, "gpt.mlir")], capture_output=True, text=True)
    r = subprocess.run(["rewire-opt", os.path.join(work, "gpt.mlir"), "-o", mlir, "--pass-pipeline=builtin.module("
                        "func.func(residual-detect),residual-rewrite{kind=nag},residual-mod{rate=0.25})"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL rewire-opt: " + r.stderr[-800:])
    page = os.path.join(work, "mod.html")
    r = subprocess.run(["rewire-report", mlir, "--layer-stats", "--inputs=" + path, "-o", page, "--batches=4"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL rewire-report (mod): " + r.stderr[-800:])
    rows = re.findall(r"<tr><td>\d+</td><td>(\d+)</td><td>nag_add</td><td>skip</td><td>([-0-9.e+]+)</td></tr>",
                      open(page).read())
    good = len(rows) == 4 and all(abs(float(v) - 0.25) < 1e-6 for _, v in rows)
    print("%s Mixture-of-Depths at rate 0.25: skip rate 0.25 at all 4 NAG updates (%s)" % (
        "ok  " if good else "FAIL", ", ".join(v for _, v in rows)))
    ok &= good
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
