"""GEMM throughput on this CPU: Rewire's compiled MatMul (rewire-compile, run
in process) against the BLAS libraries a user could pick, called directly:
oneDNN's dnnl_sgemm (what Rewire's artifacts call), Debian's OpenBLAS,
BLIS, and the current OpenBLAS of the scipy-openblas32 wheel when it is
importable. Shapes: the GPT-2-small forward's (B1 x T512, d 768, FFN 3072)
and the benchmark GPT's training GEMMs (d 256, B4 x T128) with their
transposed backward forms.

    build/venv/bin/python bench/gemm.py [--threads 2] [--reps 30] [--passes 3] [--out results-gemm.json]

Every call is timed with its arguments made beforehand (the libraries'
ctypes pointers; Rewire's call bound with Model.bind), so a small product
measures the library, not Python; Rewire's Model.run, which builds its
call each time, is reported beside it.

Best-of-reps GFLOP/s per shape over --passes rounds of every library's
process (a GEMM's best time is its speed; the
medians of whole models are in gpt2_stack.py and train_step.py).
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (M, N, K, transA, transB)
SHAPES = [(512, 3072, 768, 0, 0), (512, 768, 3072, 0, 0), (512, 768, 768, 0, 0),
          (512, 2304, 768, 0, 0), (768, 3072, 512, 1, 0), (512, 768, 3072, 0, 1),
          (512, 1024, 256, 0, 0), (512, 256, 1024, 0, 0), (256, 1024, 512, 1, 0),
          (1024, 256, 512, 1, 0), (3072, 768, 512, 1, 0), (512, 256, 1024, 0, 1),
          (64, 64, 128, 0, 0)]


sys.path.insert(0, os.path.join(ROOT, "python"))
from rewire_sysinfo import cpu_model  # noqa: E402


def best_seconds(fn, reps, warmup=0.3):
    """Best time of `reps` calls after `warmup` seconds of calls: right
    after a compile subprocess exits, calls ran at a third to half speed for
    ~60 ms (measured on a Zen 4, 256x1024x512 TN: 5-8 ms calls, then a
    steady 1.3), which a single warm-up call left inside the timed reps."""
    end = time.perf_counter() + warmup
    fn()
    while time.perf_counter() < end:
        fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def library_loaders():
    """name -> a function loading that BLAS and returning prepare(shape, A, B,
    C), which makes the call's arguments once and returns the call (the
    timed part: one foreign call, as Rewire's bound call), for each BLAS
    installed here. Nothing is loaded until
    called: each library runs in a process of its own (main)."""
    f32p = ctypes.POINTER(ctypes.c_float)

    def cblas(path, symbol):
        def load():
            fn = getattr(ctypes.CDLL(path), symbol)
            fn.restype = None
            fn.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, f32p, ctypes.c_int, f32p,
                                                ctypes.c_int, ctypes.c_float, f32p, ctypes.c_int]

            def prepare(s, a, b, c):
                m, n, k, ta, tb = s
                args = (101, 112 if ta else 111, 112 if tb else 111, m, n, k, 1.0,
                        a.ctypes.data_as(f32p), m if ta else k, b.ctypes.data_as(f32p),
                        k if tb else n, 0.0, c.ctypes.data_as(f32p), n)
                return lambda: fn(*args)
            return prepare
        return load

    def dnnl():
        lib = ctypes.CDLL("libdnnl.so.2")
        lib.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char] + [ctypes.c_int64] * 3 + [
            ctypes.c_float, f32p, ctypes.c_int64, f32p, ctypes.c_int64, ctypes.c_float, f32p,
            ctypes.c_int64]

        def prepare(s, a, b, c):
            m, n, k, ta, tb = s
            args = (b"T" if ta else b"N", b"T" if tb else b"N", m, n, k, 1.0,
                    a.ctypes.data_as(f32p), m if ta else k, b.ctypes.data_as(f32p),
                    k if tb else n, 0.0, c.ctypes.data_as(f32p), n)
            return lambda: lib.dnnl_sgemm(*args)
        return prepare

    out = {}
    if ctypes.util.find_library("dnnl"):
        out["oneDNN (dnnl_sgemm)"] = dnnl
    for name, path in [("OpenBLAS (Debian)", "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"),
                       ("BLIS (Debian, OpenMP)", "/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4")]:
        if os.path.exists(path):
            out[name] = cblas(path, "cblas_sgemm")
    try:
        import scipy_openblas32
        path = os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(True))
        out["OpenBLAS %s (scipy-openblas32)" % scipy_openblas32.__version__] = cblas(path, "scipy_cblas_sgemm")
    except ImportError:
        pass
    return out


def rewire_runner(np, shape, work):
    """Compiles Y = op(A) . op(B) (ONNX Gemm, A and B inputs); returns (f, rel. error)."""
    import onnx
    from onnx import TensorProto, helper
    import rewire_runtime
    m, n, k, ta, tb = shape
    a_shape, b_shape = ([k, m] if ta else [m, k]), ([n, k] if tb else [k, n])
    # ONNX Gemm with transA/transB: how exporters write a Linear layer.
    nodes = [helper.make_node("Gemm", ["A", "B"], ["Y"], transA=ta, transB=tb)]
    g = helper.make_graph(nodes, "gemm", [helper.make_tensor_value_info("A", TensorProto.FLOAT, a_shape),
                                          helper.make_tensor_value_info("B", TensorProto.FLOAT, b_shape)],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])])
    path = os.path.join(work, "gemm_%d_%d_%d_%d%d" % shape)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path + ".onnx")
    subprocess.run([os.path.join(ROOT, "build", "bin", "rewire-compile"), path + ".onnx", "-O3",
                    "-o", path + ".rwx"], check=True)
    model = rewire_runtime.Model(path + ".rwx")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape, dtype=np.float32)
    b = rng.standard_normal(b_shape, dtype=np.float32)
    y = [np.empty((m, n), np.float32)]
    # Bound once (descriptors made once, as the libraries' arguments are):
    # the timed call is the C API's checks and the work. Model.run's Python
    # side is timed beside it for the record.
    call = model.bind("forward", a, b, outputs=y)
    call()  # the error is of this call's output (y starts uninitialized)
    want = (a.T if ta else a) @ (b.T if tb else b)
    err = float(np.abs(y[0] - want).max() / max(1.0, np.abs(want).max()))
    if not err < 1e-5:  # fp32 sums of <= 3072 products: ~1e-6 of the largest element
        sys.exit("Rewire's %dx%dx%d product is wrong: max error %.3g of the largest element"
                 % (m, n, k, err))
    return call, (lambda: model.run("forward", a, b, outputs=y)), err


def measure(name, reps, np):
    """({shape: GFLOP/s}, (Rewire's errors, Rewire's GFLOP/s through Model.run))
    of one runner, in this process alone (empty dicts for a library)."""
    work = tempfile.mkdtemp(prefix="rewire-gemm-")
    lib = None if name == "Rewire" else library_loaders()[name]()
    out, errors, via_run = {}, {}, {}
    for s in SHAPES:
        m, n, k, ta, tb = s
        flop = 2.0 * m * n * k
        r = reps if flop > 1e8 else reps * 10
        rng = np.random.default_rng(1)
        A = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
        B = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
        C = np.empty((m, n), np.float32)
        label = shape_label(s)
        if name == "Rewire":
            run, python_run, errors[label] = rewire_runner(np, s, work)
            via_run[label] = flop / best_seconds(python_run, r) / 1e9
        else:
            run = lib(s, A, B, C)
        out[label] = flop / best_seconds(run, r) / 1e9
    return out, (errors, via_run)


def shape_label(s):
    m, n, k, ta, tb = s
    return "%dx%dx%d %s%s" % (m, n, k, "T" if ta else "N", "T" if tb else "N")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--passes", type=int, default=3, help="rounds of the libraries' processes")
    ap.add_argument("--out")
    ap.add_argument("--only", help=argparse.SUPPRESS)  # one runner, JSON on stdout
    a = ap.parse_args()
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ[v] = str(a.threads)
    import numpy as np
    if a.only:
        print(json.dumps(measure(a.only, a.reps, np)))
        return
    # Each library runs in a process of its own: their thread pools (Rewire's
    # libomp, Debian's oneDNN on libgomp, OpenBLAS's pthreads) spin after a
    # call and took the cores from the next library's in a shared process
    # (oneDNN's own rows halved right after Rewire's).
    # The processes run in --passes rounds, in turn, and each shape keeps its
    # best: a shared VM's speed drifts by 10-20% over minutes, and one pass
    # per library put each in a different phase of it.
    names = ["Rewire"] + list(library_loaders())
    results = {}
    for _ in range(a.passes):
        for name in names:
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--only", name,
                                "--threads", str(a.threads), "--reps", str(a.reps)],
                               check=True, capture_output=True, text=True)
            speed, (errors, via_run) = json.loads(r.stdout.strip().splitlines()[-1])
            if name in results:
                best, _, best_via_run = results[name]
                speed = {s: max(v, best[s]) for s, v in speed.items()}
                via_run = {s: max(v, best_via_run[s]) for s, v in via_run.items()}
            results[name] = (speed, errors, via_run)
    rows = []
    for s in SHAPES:
        label = shape_label(s)
        row = {"shape": label, "rewire_rel_err": results["Rewire"][1][label],
               "Rewire via Model.run": results["Rewire"][2][label]}
        for name in names:
            row[name] = results[name][0][label]
        rows.append(row)
    print("GEMM GFLOP/s, best of %d x %d passes, %d threads, %s; each library in its own process"
          % (a.reps, a.passes, a.threads, cpu_model()))
    print("Rewire: a bound call (Model.bind); Model.run, which builds the call each time, last")
    print("%-18s" % "M x N x K" + "".join("%14s" % n[:13] for n in names) + "   Rewire/best"
          + "  Model.run")
    for r in rows:
        best = max(r[n] for n in names[1:]) if len(names) > 1 else r["Rewire"]
        r["rewire_vs_best"] = r["Rewire"] / best
        print("%-18s" % r["shape"] + "".join("%14.1f" % r[n] for n in names) +
              "   %.2f" % r["rewire_vs_best"] + "%11.1f" % r["Rewire via Model.run"])
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": cpu_model(),
                       "threads": a.threads, "passes": a.passes, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
