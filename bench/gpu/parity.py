"""Device side of the parity check: runs every case of DIR/parity/manifest.txt
on the GPU (rewire-run --device=cuda --benchmark=2, so the outputs come from
a CUDA graph replay) and compares every output with the CPU reference:
|gpu - cpu| <= 1e-5 |cpu| + 1e-5 max|cpu| per output (fp32), plus 10 x the
output's measured conditioning where prepare.sh wrote it (a train step:
LABEL.spreadI.npy, how far the CPU's output moves for inputs moved by an
ulp; sums that cancel to rounding noise move as far as two summation orders
put them apart).

parity.py DIR RUN RESULTS
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

d, run, res = sys.argv[1], sys.argv[2], sys.argv[3]
# The GPU's outputs go to a scratch folder: the results folder comes back
# from the device (a few files only).
scratch = tempfile.mkdtemp(prefix="parity-")
passed = failed = 0
for line in open(os.path.join(d, "parity", "manifest.txt")):
    art, fn, refs, *ins = line.split()
    refs = refs.split(",")
    got = [os.path.join(scratch, "got%d.npy" % i) for i in range(len(refs))]
    cmd = [run, os.path.join(d, "parity", art + ".rwcu"), "--function=" + fn, "--benchmark=2",
           "--print-max-elements=0"] + ["--input=@" + os.path.join(d, "parity", x) for x in ins] \
        + ["--output=@" + g for g in got]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        failed += 1
        print("parity FAIL %s %s: no answer in 120 s" % (art, fn))
        continue
    if r.returncode != 0:
        failed += 1
        print("parity FAIL %s %s: %s" % (art, fn, (r.stderr or r.stdout).strip()))
        continue
    worst, bad = 0.0, []
    for i, (ref, g) in enumerate(zip(refs, got)):
        want = np.load(os.path.join(d, "parity", ref)).astype(np.float64)
        have = np.load(g).astype(np.float64)
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        err = np.abs(have - want)
        spread = os.path.join(d, "parity", ref.replace(".ref", ".spread"))
        allowed = 1e-5 * np.abs(want) + 1e-5 * scale
        if os.path.exists(spread):
            allowed = allowed + 10 * np.load(spread).astype(np.float64)
        ok = np.all(err <= allowed) and \
            not np.any(np.isnan(have) != np.isnan(want))
        rel = float(np.max(err)) / scale if scale else float(np.max(err, initial=0))
        worst = max(worst, rel)
        if not ok:
            bad.append("output %d (max |diff|/max|ref| %.2e)" % (i, rel))
    if bad:
        failed += 1
        print("parity FAIL %s %s: %s" % (art, fn, ", ".join(bad[:5])))
    else:
        passed += 1
        print("parity ok   %s %-24s %d outputs, worst max|diff|/max|ref| %.2e" % (art, fn, len(refs), worst))
print("parity: %d passed, %d failed" % (passed, failed))
