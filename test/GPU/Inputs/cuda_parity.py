"""CPU vs CUDA parity of every row op and of the tiny GPT's forms.

cuda_parity.py OUTDIR [--gpt ONNX] [--models NAME,NAME] [--emulate LIBDIR]

Compiles test/GPU/Inputs/row_ops.py's module for the CPU (--precise-math:
libm, no polynomials, the reference) and for CUDA, runs every function on
both with rewire-run on the same random inputs (several shapes, widths not
multiples of the vector width included), and checks
|gpu - cpu| <= 1e-5 * |cpu| + 1e-5 * max|cpu| elementwise (fp32; the
second term covers outputs that cancel to ~0). With --gpt, the tiny GPT's
forward under each residual form as well; with --models, real PyTorch
models (test/Conversion/Inputs/run_model.py: gpt, llama, bert, resnet18)
exported to ONNX, on their own inputs. With --emulate, the CUDA side
runs on the CUDA emulator (LIBDIR/librewire_cuda_emu.so standing in for the
driver and cuBLAS; the kernels compiled for the CPU with
rewire-compile --emulator-kernels): no GPU needed. Prints one line per case
and exits 1 on any mismatch.
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-5
EMULATOR = None  # LIBDIR of librewire_cuda_emu.so with --emulate


def run(cmd, env=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=env)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout


def compile_cuda(source, artifact, flags=()):
    extra = ["--emulator-kernels=" + artifact + ".emu.so"] if EMULATOR else []
    run(["rewire-compile", source, "--target=cuda", "-o", artifact] + list(flags) + extra)


def cuda_env(artifact):
    """The environment rewire-run needs for `artifact` on the CUDA side."""
    if not EMULATOR:
        return None
    env = dict(os.environ)
    lib = os.path.join(EMULATOR, "librewire_cuda_emu.so")
    env.update(REWIRE_LIBCUDA=lib, REWIRE_LIBCUBLAS=lib,
               REWIRE_CUDA_EMULATOR_KERNELS=artifact + ".emu.so")
    return env


def compare(name, got, want):
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bound = RTOL * np.abs(want) + RTOL * scale
    ok = bool(np.all(err <= bound)) and not np.any(np.isnan(got) != np.isnan(want))
    rel = float(np.max(err) / scale) if scale else float(np.max(err))
    print("%-28s %s  max |diff|/max|ref| = %.2e" % (name, "ok  " if ok else "FAIL", rel))
    return ok


def parity(out, artifact_cpu, artifact_gpu, function, specs, rng, label, inputs=None):
    args = ["--input=@" + p for p in inputs or []]
    for i, (dtype, shape) in enumerate(specs if inputs is None else []):
        path = os.path.join(out, "%s.in%d.npy" % (label, i))
        if dtype == "i64":
            np.save(path, rng.integers(0, 64, size=shape).astype(np.int64))
        else:
            np.save(path, rng.standard_normal(shape).astype(np.float32))
        args.append("--input=@" + path)
    outs = {}
    for dev, art in (("cpu", artifact_cpu), ("cuda", artifact_gpu)):
        path = os.path.join(out, "%s.%s.npy" % (label, dev))
        # Two more runs on the GPU: the outputs then come from a CUDA graph replay.
        extra = ["--benchmark=2"] if dev == "cuda" else []
        run(["rewire-run", art, "--device=" + dev, "--function=" + function] + extra + [
             "--output=@" + path, "--print-max-elements=0"] + args,
            env=cuda_env(art) if dev == "cuda" else None)
        outs[dev] = np.load(path)
    return compare(label, outs["cuda"], outs["cpu"])


def main():
    global EMULATOR
    out = sys.argv[1]
    if "--emulate" in sys.argv:
        EMULATOR = os.path.abspath(sys.argv[sys.argv.index("--emulate") + 1])
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    ok = True
    module = os.path.join(out, "ops.mlir")
    with open(module, "w") as f:
        f.write(run([sys.executable, os.path.join(HERE, "row_ops.py")]))
    cpu, gpu = os.path.join(out, "ops.rwx"), os.path.join(out, "ops.rwcu")
    run(["rewire-compile", module, "--precise-math", "-o", cpu])
    compile_cuda(module, gpu)
    for line in run([sys.executable, os.path.join(HERE, "row_ops.py"), "--list"]).splitlines():
        name, *shapes = line.split()
        specs = [("i64" if s.startswith("i64:") else "f32",
                  () if s == "scalar" else tuple(int(d) for d in s.split(":")[-1].split("x")))
                 for s in shapes]
        ok &= parity(out, cpu, gpu, name, specs, rng, name)
    if "--gpt" in sys.argv:
        onnx = sys.argv[sys.argv.index("--gpt") + 1]
        for form in ("none", "review", "nag", "ancre", "denseformer", "highway", "lpa", "laurel",
                     "laurel:laurel=rw-lr-pa", "hc", "mhc", "value-residual"):
            flags = [] if form == "none" else ["--residual=" + form]
            # File names without ':' (REWIRE_CUDA_EMULATOR_KERNELS is a list).
            tag = "gpt-" + form.replace(":laurel=", "-")
            cpu = os.path.join(out, tag + ".rwx")
            gpu = os.path.join(out, tag + ".rwcu")
            run(["rewire-compile", onnx, "--precise-math", "-o", cpu] + flags)
            compile_cuda(onnx, gpu, flags)
            ok &= parity(out, cpu, gpu, "forward", [("i64", (2, 8))], rng, tag)
        # Mixture-of-Depths that skips: each sublayer on 6 of each sequence's 8 tokens.
        mlir, mod = os.path.join(out, "gpt.mlir"), os.path.join(out, "gpt-mod.mlir")
        run(["rewire-import", onnx, "-o", mlir])
        run(["rewire-opt", mlir, "-o", mod, "--pass-pipeline=builtin.module(func.func(residual-detect),"
             "residual-rewrite{kind=nag},residual-mod{rate=0.25})"])
        if open(mod).read().count("residual.route_select") != 4:
            sys.exit("FAIL gpt-nag-mod: the sublayers do not run on the kept rows")
        cpu, gpu = os.path.join(out, "gpt-mod.rwx"), os.path.join(out, "gpt-mod.rwcu")
        run(["rewire-compile", mod, "--precise-math", "-o", cpu])
        compile_cuda(mod, gpu)
        ok &= parity(out, cpu, gpu, "forward", [("i64", (2, 8))], rng, "gpt-nag-mod")
    if "--models" in sys.argv:
        models = os.path.join(out, "models")
        for name in sys.argv[sys.argv.index("--models") + 1].split(","):
            run([sys.executable, os.path.join(HERE, "..", "..", "Conversion", "Inputs",
                                              "run_model.py"), models, name])
            onnx = os.path.join(models, name + ".onnx")
            cpu = os.path.join(out, "model-%s.rwx" % name)
            gpu = os.path.join(out, "model-%s.rwcu" % name)
            run(["rewire-compile", onnx, "--precise-math", "-o", cpu])
            compile_cuda(onnx, gpu)
            ok &= parity(out, cpu, gpu, "forward", None, rng, "model-" + name,
                         inputs=[os.path.join(models, name + "-x.npy")])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
