"""Executes ops after their conversion to linalg and the CPU pipeline
(docs/toolchain.md) with mlir-runner, and compares the results with float64
NumPy references (|got - ref| <= 1e-5 + 1e-5 |ref|, random inputs from a
fixed seed): the residual ops (references in
test/Export/Inputs/residual_reference.py) or, with --cases nn, the nn ops
(nn_reference.py).

    run_lowered.py REWIRE_OPT MLIR_RUNNER RUNTIME_LIB_DIR WORKDIR [--cases nn]
    run_lowered.py REWIRE_OPT MLIR_RUNNER RUNTIME_LIB_DIR WORKDIR --decomposed

--decomposed runs every residual op both ways: fused (convert-residual-to-
linalg) and as its decomposition into nn ops (residual-decompose, then
convert-nn-to-linalg: the definition autodiff and the ONNX export use), and
also requires the two to agree (|fused - decomposed| <= 1e-5 + 1e-5
|fused|).
"""
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Export", "Inputs"))
import residual_reference as ref  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
import rewire_run  # noqa: E402

NN = "--cases" in sys.argv and sys.argv[sys.argv.index("--cases") + 1] == "nn"
DECOMPOSED = "--decomposed" in sys.argv
if NN:
    import nn_reference as ref  # noqa: E402,F811

LOWERED = ("add", "scale_add", "gated_add", "mix", "tap", "nag_gate", "nag_add", "route threshold",
           "route rate", "laurel", "hyper_expand", "hyper_coeffs", "hyper_read", "hyper_write",
           "hyper_reduce", "value_mix")


def main():
    opt, runner, libdir, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    # What the compiler runs (lib/Compiler/Pipelines.cpp): forms without a
    # fused lowering (residual.laurel, the hyper stream ops) through their
    # decomposition.
    convert = ("convert-nn-to-linalg" if NN else
               "residual-decompose{unfused=true},convert-nn-to-linalg,convert-residual-to-linalg")
    bad = run = 0
    for i, (name, mlir, inputs, fn) in enumerate(ref.CASES):
        if not NN and not any(name == l or name.startswith(l + " ") for l in LOWERED):
            continue
        run += 1
        feeds = {n: (rng.uniform(0.5, 2.0, s) if n.endswith("+") else rng.standard_normal(s)).astype(np.float32)
                 for n, s in inputs}
        dims = [int(d) for d in re.search(r"-> \(tensor<([^>]*)>", mlir).group(1).split("x")[:-1]]
        pipelines = [convert]
        if DECOMPOSED:
            pipelines.append("residual-decompose,convert-nn-to-linalg,convert-residual-to-linalg")
        try:
            results = []
            for pipeline in pipelines:
                tensor_ir = rewire_run.run([opt, "--pass-pipeline=builtin.module(func.func(%s))" % pipeline],
                                           "module {\n" + mlir + "}\n")
                got, _ = rewire_run.execute(tensor_ir, [(feeds[n], "f32") for n, _ in inputs], dims,
                                            runner=runner, libdir=libdir, opt=opt)
                results.append(got)
        except rewire_run.ToolError as e:
            print("FAIL %s: %s" % (name, e))
            bad += 1
            continue
        args64 = [feeds[n].astype(np.float64) for n, _ in inputs]
        want = fn(*args64) if fn is not None else ref.nag_add_ref(*args64)
        err = max(np.abs(got - want).max() for got in results)
        ok = all(np.all(np.abs(got - want) <= 1e-5 + 1e-5 * np.abs(want)) for got in results)
        line = "%s %s: max abs error %.2e" % ("ok  " if ok else "FAIL", name, err)
        if DECOMPOSED:
            fused, decomposed = results
            apart = np.abs(fused - decomposed)
            agree = np.all(apart <= 1e-5 + 1e-5 * np.abs(fused))
            line += ", fused vs decomposed %.2e%s" % (apart.max(), "" if agree else " (FAIL)")
            ok = ok and agree
            if not ok and line.startswith("ok"):
                line = "FAIL" + line[4:]
        bad += not ok
        print(line)
    print("%d cases, %d failed" % (run, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
