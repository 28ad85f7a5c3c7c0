"""Running nn/residual IR on the CPU without the (future) runtime: inline the
parameters, lower to linalg and LLVM, execute `forward` with mlir-runner.

Shared by the demo (examples/tiny-gpt/run_forms.py) and the execution tests
(test/Conversion/Inputs/*.py). Tools are found on PATH unless given.
"""
import os
import re
import subprocess
import time

import numpy as np

LOWER_TO_LLVM = (
    "builtin.module(func.func(canonicalize,cse),one-shot-bufferize{bufferize-function-boundaries},"
    "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
    "func.func(convert-linalg-to-loops,convert-scf-to-cf),expand-strided-metadata,lower-affine,"
    "finalize-memref-to-llvm,convert-math-to-llvm,convert-math-to-libm,convert-to-llvm,"
    "reconcile-unrealized-casts)")


class ToolError(RuntimeError):
    pass


def run(args, text=None):
    r = subprocess.run(args, input=text, capture_output=True, text=True)
    if r.returncode != 0:
        raise ToolError("%s failed: %s" % (os.path.basename(args[0]), r.stderr.strip()[-800:]))
    return r.stdout


def literal(x):
    """An MLIR dense literal of a NumPy array."""
    return "dense<%s>" % np.array2string(x, separator=", ", threshold=10**9,
                                          floatmode="unique").replace("\n", "")


def tensor_type(shape, elt="f32"):
    return "tensor<%s>" % "x".join([str(d) for d in shape] + [elt])


def execute(tensor_ir, args, out_shape, runner="/usr/lib/llvm-22/bin/mlir-runner",
            libdir="/usr/lib/llvm-22/lib",
            opt="rewire-opt"):
    """Appends a main that calls @forward on constant `args` (list of
    (NumPy array, MLIR element type)), lowers everything to LLVM, runs it.
    Returns (output array, seconds the run took including JIT)."""
    consts, names, types = [], [], []
    for i, (a, elt) in enumerate(args):
        t = tensor_type(a.shape, elt)
        consts.append("    %%a%d = arith.constant %s : %s" % (i, literal(a), t))
        names.append("%%a%d" % i)
        types.append(t)
    out_t = tensor_type(out_shape)
    mem = out_t.replace("tensor", "memref")
    # @forward may return more than the printed first result (LPA readouts).
    sig = next(l for l in tensor_ir.splitlines() if "func.func @forward(" in l)
    results = re.findall(r"tensor<[^>]*>", sig.split(") -> ", 1)[1]) if ") -> " in sig else [out_t]
    first = "%r" if len(results) == 1 else "%r#0"
    call_results = "%r" if len(results) == 1 else "%%r:%d" % len(results)
    main = "\n".join([
        "  func.func private @printMemrefF32(memref<*xf32>)",
        "  func.func @main() {", *consts,
        "    %s = call @forward(%s) : (%s) -> (%s)" % (call_results, ", ".join(names), ", ".join(types),
                                                      ", ".join(results)),
        "    %%m = bufferization.to_buffer %s : %s to %s" % (first, out_t, mem),
        "    %%u = memref.cast %%m : %s to memref<*xf32>" % mem,
        "    call @printMemrefF32(%u) : (memref<*xf32>) -> ()",
        "    return", "  }", "}"])
    ir = tensor_ir.rstrip()
    if not ir.endswith("}"):
        raise ToolError("expected a module")
    llvm_ir = run([opt, "--pass-pipeline=" + LOWER_TO_LLVM], ir[:-1] + main + "\n")
    libs = ",".join(os.path.join(libdir, l) for l in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    t0 = time.perf_counter()
    out = run([runner, "-e", "main", "-entry-point-result=void", "-shared-libs=" + libs], llvm_ir)
    seconds = time.perf_counter() - t0
    data = out.split("data =", 1)[1]
    values = re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?|-?nan|-?inf", data)
    return np.array([float(v) for v in values]).reshape(out_shape), seconds


def lower_model(mlir_path, params, rewrite="", opt="rewire-opt", seed=0):
    """Imported model -> tensor-level linalg IR with the weights inlined."""
    passes = [rewrite] if rewrite else []
    passes += ["nn-inline-parameters{file=%s seed=%d}" % (params, seed),
               "func.func(convert-nn-to-linalg, convert-residual-to-linalg)"]
    return run([opt, mlir_path, "--pass-pipeline=builtin.module(%s)" % ",".join(passes)])
