"""One way the parity scripts compile an ONNX model with rewire-compile,
run it through the runtime's Python bindings and compare every output with
a reference (|got - want| <= atol + rtol |want|). Prints `ok` or `FAIL`
per case; returns whether it passed."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import rewire_runtime as rr  # noqa: E402


def compile_or_exit(source, out, *flags):
    """rewire-compile SOURCE -o OUT FLAGS; its stdout (an IR stage when OUT
    is '-'), or the script ends with FAIL and the compiler's message."""
    r = subprocess.run(["rewire-compile", source, "-o", out, *flags], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL rewire-compile %s: %s" % (" ".join(flags), r.stderr[-1500:]))
    return r.stdout


def check(label, model_path, feeds, want, rtol=1e-4, atol=1e-5):
    """`feeds`: input name -> array; `want`: the reference outputs in order."""
    art = os.path.splitext(model_path)[0] + ".rwx"
    r = subprocess.run(["rewire-compile", model_path, "-o", art], capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL %s: compile exit %d: %s" % (label, r.returncode, r.stderr.strip()[-400:]))
        return False
    model = rr.Model(art)
    in_names, _ = model.names("forward")
    got = model.run("forward", *[feeds[k] for k in in_names])
    errs, ok = [], len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        same = g.shape == w.shape
        if w.dtype.kind in "fc":
            errs.append("%.1e" % float(np.max(np.abs(g - w))) if same and g.size else "shape")
            ok &= same and np.allclose(g, w, rtol=rtol, atol=atol)
        else:
            errs.append("exact" if same and np.array_equal(g, w) else "differ")
            ok &= same and np.array_equal(g, w)
    print("%s %s: max |diff| %s" % ("ok  " if ok else "FAIL", label, " ".join(errs)))
    return ok
