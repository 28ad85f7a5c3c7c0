"""Executes ops after their conversion to linalg and the CPU pipeline
(docs/toolchain.md) with mlir-runner, and compares the results with float64
NumPy references (|got - ref| <= 1e-5 + 1e-5 |ref|, random inputs from a
fixed seed): the residual ops (references in
test/Export/Inputs/residual_reference.py) or, with --cases nn, the nn ops
(nn_reference.py).

    run_lowered.py REWIRE_OPT MLIR_RUNNER RUNTIME_LIB_DIR WORKDIR [--cases nn]
"""
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Export", "Inputs"))
import residual_reference as ref  # noqa: E402

NN = "--cases" in sys.argv and sys.argv[sys.argv.index("--cases") + 1] == "nn"
if NN:
    import nn_reference as ref  # noqa: E402,F811

PIPELINE = ("builtin.module(func.func(" + ("convert-nn-to-linalg" if NN else "convert-residual-to-linalg") +
            "), func.func(canonicalize,cse),"
            "one-shot-bufferize{bufferize-function-boundaries},buffer-deallocation-pipeline,"
            "convert-bufferization-to-memref,func.func(convert-linalg-to-loops,convert-scf-to-cf),"
            "expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-math-to-llvm,convert-math-to-libm,"
            "convert-to-llvm,reconcile-unrealized-casts)")
LOWERED = ("add", "scale_add", "gated_add", "mix", "tap", "nag_gate", "nag_add", "route threshold")


def literal(x):
    return "dense<%s>" % np.array2string(x.astype(np.float32), separator=", ", threshold=10**9,
                                          floatmode="unique").replace("\n", "")


def main():
    opt, runner, libdir, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    libs = ",".join(os.path.join(libdir, l) for l in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    rng = np.random.default_rng(7)
    bad = run = 0
    for i, (name, mlir, inputs, fn) in enumerate(ref.CASES):
        if not NN and not any(name == l or name.startswith(l + " ") for l in LOWERED):
            continue
        run += 1
        feeds = {n: (rng.uniform(0.5, 2.0, s) if n.endswith("+") else rng.standard_normal(s)).astype(np.float32)
                 for n, s in inputs}
        out_shape = re.search(r"-> \((tensor<[^>]*>)", mlir).group(1)
        dims = [int(d) for d in out_shape[7:-1].split("x")[:-1]]
        consts, args = [], []
        for n, s in inputs:
            t = ref.t(s)
            v = n.rstrip("+")
            consts.append("    %%c_%s = arith.constant %s : %s" % (v, literal(feeds[n]), t))
            args.append("%%c_%s" % v)
        mem = "memref<%s>" % "x".join(map(str, dims + ["f32"]))
        main_fn = "\n".join([
            "  func.func private @printMemrefF32(memref<*xf32>)",
            "  func.func @main() {",
            *consts,
            "    %%r = call @forward(%s) : (%s) -> %s" % (", ".join(args), ", ".join(ref.t(s) for _, s in inputs), out_shape),
            "    %%m = bufferization.to_buffer %%r : %s to %s" % (out_shape, mem),
            "    %%u = memref.cast %%m : %s to memref<*xf32>" % mem,
            "    call @printMemrefF32(%u) : (memref<*xf32>) -> ()",
            "    return",
            "  }"])
        src = os.path.join(work, "case%d.mlir" % i)
        open(src, "w").write("module {\n" + mlir + main_fn + "\n}\n")
        low = subprocess.run([opt, src, "--pass-pipeline=" + PIPELINE], capture_output=True, text=True)
        if low.returncode != 0:
            print("FAIL %s: lowering: %s" % (name, low.stderr.strip()[-400:]))
            bad += 1
            continue
        ex = subprocess.run([runner, "-e", "main", "-entry-point-result=void", "-shared-libs=" + libs],
                            input=low.stdout, capture_output=True, text=True)
        if ex.returncode != 0:
            print("FAIL %s: mlir-runner: %s" % (name, ex.stderr.strip()[-400:]))
            bad += 1
            continue
        data = ex.stdout.split("data =", 1)[1]
        got = np.array([float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?|-?nan|-?inf", data)]).reshape(dims)
        args64 = [feeds[n].astype(np.float64) for n, _ in inputs]
        want = fn(*args64) if fn is not None else ref.nag_add_ref(*args64)
        err = np.abs(got - want)
        ok = np.all(err <= 1e-5 + 1e-5 * np.abs(want))
        bad += not ok
        print("%s %s: max abs error %.2e" % ("ok  " if ok else "FAIL", name, err.max()))
    print("%d cases, %d failed" % (run, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
