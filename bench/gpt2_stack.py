"""Forward latency of a GPT-2-small-shaped block stack (d=768, 12 heads, FFN
3072, pre-LN, tanh-GELU) on the CPU: Rewire (rewire-compile + the runtime's
C API, in process) against ONNX Runtime and PyTorch eager on the same
machine, in the same run, same threads; plus the overhead of each residual
form over the plain model (forms at their identity/paper init).

    bench/gpt2_stack.py [--layers 12] [--batch 1] [--seq 512] [--runs 10]
                        [--forms add,ancre,review,...] [--out results.json]

Installs nothing by itself. The figures in docs/performance.md come from
build/bench-venv (`bench/venv.sh`: PyTorch 2.x, ONNX Runtime and IREE from
PyPI, what users run); build/venv/bin/python (Debian's PyTorch 1.13, ONNX
Runtime from scripts/bootstrap.sh) runs it too, without torch.compile or
IREE. Prints a table; --out writes the numbers as JSON for
docs/performance.md.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
import rewire_runtime  # noqa: E402
from rewire_sysinfo import cpu_model  # noqa: E402
from train_step import torchscript_export  # noqa: E402
from timing import paired, round_robin  # noqa: E402


class Block(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.d, self.h = d, heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def attn(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = [z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v)]
        s = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
        s = torch.where(self.mask, s, torch.tensor(float("-inf")))
        return self.proj((F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.out(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class Stack(nn.Module):
    def __init__(self, layers, d, heads, seq):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d, heads, seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.ln_f(x)


def iree_runner(onnx_path, work, xs, want, threads):
    """IREE (pip: iree-base-compiler, iree-base-runtime) on the same ONNX file
    and its inputs `xs` (a list of arrays): iree-import-onnx, then
    iree-compile for this CPU (llvm-cpu, host features); (run, version), or
    None when IREE is not installed or fails."""
    try:
        import iree.compiler  # noqa: F401  (installed?)
        import iree.runtime as rt
    except ImportError:
        return None
    bindir = os.path.dirname(sys.executable)
    mlir, vmfb = os.path.join(work, "stack.iree.mlir"), os.path.join(work, "stack.vmfb")
    t0 = time.perf_counter()
    try:
        subprocess.run([os.path.join(bindir, "iree-import-onnx"), onnx_path, "-o", mlir], check=True)
        subprocess.run([os.path.join(bindir, "iree-compile"), mlir, "-o", vmfb,
                        "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
                        "--iree-llvmcpu-target-cpu=host", "--iree-opt-level=O3",
                        # its default 32 KiB refuses the d-768 layer norm reduction
                        "--iree-llvmcpu-stack-allocation-limit=262144"], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("IREE: skipped (%s)" % e)
        return None
    rt.flags.parse_flags("--task_topology_max_group_count=%d" % threads)
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    with open(vmfb, "rb") as f:
        module = rt.VmModule.copy_buffer(ctx.instance, f.read())
    ctx.add_vm_module(module)
    name = [n for n in module.function_names if not n.startswith("__") and "$" not in n][0]
    fn = ctx.modules[module.name][name]
    got = np.asarray(fn(*xs).to_host())
    print("IREE: compiled in %.1f s, max|err| vs torch %.1e" % (time.perf_counter() - t0,
                                                            np.abs(got - want).max()))
    from importlib.metadata import version as package_version
    version = package_version("iree-base-compiler")
    return (lambda: fn(*xs).to_host()), version


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--forms", default="add,rezero:init=identity,layerscale:init=identity,"
                    "review:init=identity,highway:init=identity,nag,ancre,denseformer")
    ap.add_argument("--out")
    ap.add_argument("--no-torch-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--no-iree", action="store_true", help="skip IREE")
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.environ["OMP_NUM_THREADS"] = str(a.threads)  # oneDNN's GEMMs in the artifacts
    work = a.work or tempfile.mkdtemp(prefix="rewire-bench-")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    model = Stack(a.layers, a.d, a.heads, a.seq).eval()
    x = torch.randn(a.batch, a.seq, a.d, generator=torch.Generator().manual_seed(1))
    onnx_path = os.path.join(work, "stack.onnx")
    torchscript_export(model, x, onnx_path, opset_version=17, input_names=["x"], output_names=["y"])
    xn = x.numpy()
    flops = a.layers * a.batch * a.seq * (24 * a.d * a.d + 4 * a.seq * a.d)  # GEMMs + attention
    with torch.no_grad():
        want = model(x).numpy()

    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])

    forms, models = {}, {}
    for form in a.forms.split(","):
        rwx = os.path.join(work, form.replace(":", "_").replace("=", "_") + ".rwx")
        cmd = [os.path.join(ROOT, "build", "bin", "rewire-compile"), onnx_path, "-o", rwx, "-O3"]
        if form != "add":
            cmd.append("--residual=" + form)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        m = rewire_runtime.Model(rwx)
        out = [np.empty_like(want)]
        m.run("forward", xn, outputs=out)
        err = float(np.abs(out[0] - want).max()) if form == "add" or "identity" in form else None
        forms[form] = {"compile_s": time.perf_counter() - t0, "max_abs_err_vs_torch": err}
        models[form] = (m, out)

    def torch_run():
        with torch.no_grad():
            model(x)

    fns = {"torch": torch_run, "ort": lambda: sess.run(None, {"x": xn})}
    # torch.compile (PyTorch 2.x; Inductor's C++ backend), compiled and
    # checked before the timed rounds; its compile time is reported too.
    compiled_s = None
    if hasattr(torch, "compile") and not a.no_torch_compile:
        t0 = time.perf_counter()
        compiled = torch.compile(model)
        with torch.no_grad():
            got = compiled(x).numpy()
        compiled_s = time.perf_counter() - t0
        print("torch.compile: %.1f s, max|err| vs eager %.1e" % (compiled_s, np.abs(got - want).max()))

        def compiled_run():
            with torch.no_grad():
                compiled(x)
        fns["torch_compile"] = compiled_run
    for form, (m, out) in models.items():
        fns[form] = (lambda m=m, out=out: m.run("forward", xn, outputs=out))
    iree = iree_runner(onnx_path, work, [xn], want, a.threads) if not a.no_iree else None
    if iree:
        fns["iree"] = iree[0]
    raw = {}
    t = round_robin(fns, a.runs, raw)
    t_rw = t["add"][0]
    # The same artifact in a process of its own (rewire-run): there oneDNN and
    # the loops share one OpenMP pool; in this process PyTorch's GNU libgomp
    # came first, so oneDNN runs on it beside the loops' libomp.
    np.save(os.path.join(work, "x.npy"), xn)
    bench = subprocess.run([os.path.join(ROOT, "build", "bin", "rewire-run"),
                            os.path.join(work, "add.rwx"), "--input=@" + os.path.join(work, "x.npy"),
                            "--benchmark=%d" % a.runs, "--print-max-elements=0"],
                           check=True, capture_output=True, text=True).stdout + "\n"
    m_med = re.search(r"median ([0-9.]+) ms, min ([0-9.]+) ms", bench)
    own = (float(m_med.group(1)), float(m_med.group(2))) if m_med else None
    rows = [("PyTorch %s eager" % torch.__version__, t["torch"]),
            ("ONNX Runtime %s" % ort.__version__, t["ort"]),
            ] + ([("torch.compile %s" % torch.__version__, t["torch_compile"])] if "torch_compile" in t else []) + (
                [("IREE %s (llvm-cpu)" % iree[1], t["iree"])] if iree else []) + [
            ("Rewire (plain residual adds)", t["add"])] + (
                [("Rewire, own process (rewire-run)", own)] if own else [])
    print("GPT-2-small-shaped stack: %d layers, d=%d, batch %d x seq %d, %d threads, %d rounds" % (
        a.layers, a.d, a.batch, a.seq, a.threads, a.runs))
    print("%-34s %10s %10s %10s %12s" % ("runtime", "median ms", "min ms", "GFLOP/s", "vs Rewire"))
    for name, (med, low) in rows:
        print("%-34s %10.1f %10.1f %10.1f %11.2fx" % (name, med, low, flops / med / 1e6, med / t_rw))
    peers = [(k, n) for k, n in (("ort", "ONNX Runtime"), ("torch_compile", "torch.compile"),
                                 ("torch", "PyTorch eager"), ("iree", "IREE")) if k in raw]
    ratios = {k: paired(raw, "add", k) for k, _ in peers}
    print("Rewire (bench process) / peer, median of the per-round ratios: " +
          ", ".join("%s %.3f" % (n, ratios[k]) for k, n in peers))
    print("\nresidual form overhead over plain adds (Rewire, medians; min-based in brackets):")
    for form, r in forms.items():
        r["ms"], r["min_ms"] = t[form]
        print("  %-28s %8.1f ms  %+6.2f%% [%+6.2f%%]  compile %.1f s%s" % (
            form, r["ms"], 100 * (r["ms"] / t_rw - 1), 100 * (r["min_ms"] / t["add"][1] - 1),
            r["compile_s"],
            "" if r["max_abs_err_vs_torch"] is None else "  max|err| vs torch %.1e" % r["max_abs_err_vs_torch"]))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": cpu_model(),
                       "threads": a.threads, "layers": a.layers, "batch": a.batch, "seq": a.seq,
                       "rounds": a.runs, "torch": torch.__version__, "torch_ms": t["torch"],
                       "torch_compile_ms": t.get("torch_compile"), "torch_compile_s": compiled_s,
                       "iree_ms": t.get("iree"), "iree": iree[1] if iree else None,
                       "ort_ms": t["ort"],
                       "rewire_ms": t["add"], "rewire_own_process_ms": own,
                       "rewire_over_peer_paired": ratios, "rounds_ms": raw,
                       "forms": forms, "gflop": flops / 1e9}, f, indent=1)


if __name__ == "__main__":
    main()
