#!/bin/bash
# Prepares the device check on a machine WITHOUT a GPU (this one): compiles
# the parity and benchmark models for CUDA, computes the CPU references,
# and gathers what the device needs (rewire-run and the runtime library: no
# MLIR, no LLVM) into build/gpu-check, and packs it (xz) into
# build/gpu-pack: the device tool carries 64 MiB with the source tree. Then:
#   run(carry=["build/gpu-pack"], command="python3 -c \"import tarfile;
#       tarfile.open('build/gpu-pack/gpu-check.tar.xz').extractall('build')\"
#       && bash bench/gpu/check.sh build/gpu-check")
# (2 minutes on an H200; PARTS=trainbench TORCH_SIDE=0 reruns a part.)
# EMULATE=1 prepares a dry run on the CUDA emulator instead (kernels for the
# CPU in OUT/emu, a small benchmark size): `EMULATE=1 bash bench/gpu/check.sh
# build/gpu-check` then runs the whole check here, without PyTorch's GPU side.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/gpu-check}
BIN=$ROOT/build/bin
export PATH="$BIN:$PATH" REWIRE_LIB_DIR="$ROOT/build/lib"
PY=/usr/bin/python3
export CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
rm -rf "$OUT" && mkdir -p "$OUT"/{bin,lib,parity,bench}
cp "$BIN/rewire-run" "$BIN/rewire-train" "$OUT/bin/" && cp "$ROOT/build/lib/librewire_runtime.so" "$OUT/lib/"
# Every shared library they load that a bare CUDA image may lack (oneDNN,
# libomp, protobuf, ...): all but the C and C++ runtimes and the loader.
for f in "$OUT"/bin/* "$OUT"/lib/*.so; do ldd "$f"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so' |
  grep -v "^$ROOT/build/lib/librewire_runtime" | while read -r lib; do cp -L "$lib" "$OUT/lib/"; done
# cuda_compile SOURCE ARTIFACT [FLAGS]: for the GPU, plus the emulator's
# kernels with EMULATE=1.
if [ "${EMULATE:-0}" = 1 ]; then
  mkdir -p "$OUT/emu" && cp "$ROOT/build/lib/librewire_cuda_emu.so" "$OUT/lib/"
  export REWIRE_CUDA_EMULATOR_KERNELS="$OUT/emu" BENCH_ROWS=${BENCH_ROWS:-64}
fi
cuda_compile() {
  local src=$1 art=$2; shift 2
  local emu=() rel=${art#"$OUT"/}
  [ "${EMULATE:-0}" = 1 ] && emu=(--emulator-kernels="$OUT/emu/${rel//\//-}.emu.so")
  "$BIN/rewire-compile" "$src" --target=cuda -o "$art" "$@" "${emu[@]}"
}

# Parity: every row op, CPU (libm) reference outputs next to the inputs.
$PY "$ROOT/test/GPU/Inputs/row_ops.py" > "$OUT/parity/ops.mlir"
"$BIN/rewire-compile" "$OUT/parity/ops.mlir" --precise-math -o "$OUT/parity/ops.rwx"
cuda_compile "$OUT/parity/ops.mlir" "$OUT/parity/ops.rwcu"
forms="none review nag ancre denseformer highway lpa laurel hc mhc value-residual"
for f in $forms; do
  flags=""; [ "$f" = none ] || flags="--residual=$f"
  "$BIN/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --precise-math $flags -o "$OUT/parity/gpt-$f.rwx"
  cuda_compile "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" "$OUT/parity/gpt-$f.rwcu" $flags
done
# Real PyTorch models (GPT, LLaMA, BERT, ResNet-18; the models-exec test's)
# exported to ONNX, with their inputs.
# (ResNet-18 is left out: its 45 MB of weights would not fit the 64 MiB the device tool carries.)
models="gpt llama bert"
for m in $models; do
  $PY "$ROOT/test/Conversion/Inputs/run_model.py" "$OUT/models" $m > /dev/null
  cp "$OUT/models/$m-x.npy" "$OUT/parity/model-$m.forward.in0.npy"
  "$BIN/rewire-compile" "$OUT/models/$m.onnx" --precise-math -o "$OUT/parity/model-$m.rwx"
  cuda_compile "$OUT/models/$m.onnx" "$OUT/parity/model-$m.rwcu"
done
rm -rf "$OUT/models"
# A whole AdamW train step of the tiny GPT (forward, backward, optimizer).
"$BIN/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --precise-math --train=adamw -o "$OUT/parity/gpt-train.rwx"
cuda_compile "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" "$OUT/parity/gpt-train.rwcu" --train=adamw
# (the emulator's dry run checks the scripts: the plain step only)
PARITY_TRAIN_FORMS=${PARITY_TRAIN_FORMS-$([ "${EMULATE:-0}" = 1 ] || echo hc mhc laurel)}
for f in $PARITY_TRAIN_FORMS; do
  "$BIN/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --precise-math --residual=$f --train=adamw -o "$OUT/parity/gpt-train-$f.rwx"
  cuda_compile "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" "$OUT/parity/gpt-train-$f.rwcu" --residual=$f --train=adamw
done
$PY - "$OUT/parity" "$ROOT" "$forms" "$models" "$PARITY_TRAIN_FORMS" <<'PYEOF'
import os, subprocess, sys
import numpy as np
out, root, forms, models = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
train_forms = sys.argv[5].split()


def train_inputs(rng, art):
    """train_step's inputs by name: token ids, soft targets, AdamW state
    (v >= 0), positive bias corrections and learning rate, small weights."""
    desc = subprocess.run([root + "/build/bin/rewire-run", out + "/" + art + ".rwx", "--describe"],
                          capture_output=True, text=True, check=True).stdout
    section = desc.split("function train_step")[1].split("function ")[0]
    arrays = []
    for line in section.splitlines():
        line = line.strip()
        if not line.startswith("input "):
            continue
        name, ty = line[len("input "):].strip().rsplit(": ", 1)
        *dims, dt = ty.split("x")
        shape = tuple(int(d) for d in dims)
        if dt == "i64":
            a = rng.integers(0, 64, size=shape).astype(np.int64)
        elif name == "target":
            z = np.exp(rng.standard_normal(shape))
            a = (z / z.sum(-1, keepdims=True)).astype(np.float32)
        elif name.endswith(":v"):
            a = (np.abs(rng.standard_normal(shape)) * 1e-3).astype(np.float32)
        elif name.endswith(":m"):
            # Small against (1 - beta1) g: m' = beta1 m + (1 - beta1) g is
            # then no difference of near-equal terms (a 1e-3 m once
            # cancelled 30-fold against a scalar's gradient, and the two
            # devices' summation orders, 2e-6 apart in g, failed 1e-5 in m').
            a = (rng.standard_normal(shape) * 1e-6).astype(np.float32)
        elif name in ("lr", "bias_correction1", "bias_correction2"):
            a = np.full(shape, {"lr": 1e-3}.get(name, 0.5), np.float32)
        else:
            a = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        arrays.append(a)
    return arrays

rng = np.random.default_rng(0)
cases = []
listing = subprocess.run([sys.executable, root + "/test/GPU/Inputs/row_ops.py", "--list"],
                         capture_output=True, text=True, check=True).stdout
for line in listing.splitlines():
    name, *shapes = line.split()
    cases.append(("ops", name, [("i64" if s.startswith("i64:") else "f32",
                                 () if s == "scalar" else tuple(int(d) for d in s.split(":")[-1].split("x")))
                                for s in shapes]))
for f in forms:
    cases.append(("gpt-" + f, "forward", [("i64", (2, 8))]))
for t in ["gpt-train"] + ["gpt-train-" + f for f in train_forms]:
    cases.append((t, "train_step", None))
for m in models:
    cases.append(("model-" + m, "forward", "given"))
with open(out + "/manifest.txt", "w") as man:
    for art, fn, specs in cases:
        label = art + "." + fn
        ins = []
        if specs == "given":  # the exported model's own input
            ins = ["%s.in0.npy" % label]
            arrays = []
        else:
            arrays = train_inputs(rng, art) if specs is None else [
                rng.integers(0, 64, size=shape).astype(np.int64) if dt == "i64"
                else rng.standard_normal(shape).astype(np.float32) for dt, shape in specs]
        for i, a in enumerate(arrays):
            if a.dtype == np.float32:
                # 8 significant bits (bf16-representable values): random
                # still, but the carried inputs compress 2x (the device tool
                # carries 64 MiB with the source tree).
                a = (a.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
            p = "%s/%s.in%d.npy" % (out, label, i)
            np.save(p, a)
            ins.append(os.path.basename(p))
        # Every output is a reference (train_step: the loss, every updated
        # weight and optimizer state).
        desc = subprocess.run([root + "/build/bin/rewire-run", "%s/%s.rwx" % (out, art), "--describe"],
                              capture_output=True, text=True, check=True).stdout
        section = desc.split("function " + fn + "\n")[1].split("\nfunction ")[0]
        nout = sum(1 for l in section.splitlines() if l.strip().startswith("output "))
        refs = ["%s.ref%d.npy" % (label, i) for i in range(nout)]
        subprocess.run([root + "/build/bin/rewire-run", "%s/%s.rwx" % (out, art), "--function=" + fn,
                        "--print-max-elements=0"] + ["--output=@%s/%s" % (out, r) for r in refs]
                       + ["--input=@%s/%s" % (out, x) for x in ins],
                       check=True, stdout=subprocess.DEVNULL)
        if specs is None:
            # A train step's outputs include sums that cancel (a scalar
            # coefficient's gradient over equal stream copies, zero in exact
            # arithmetic: its value is rounding noise, which any other valid
            # summation order changes). Their conditioning, measured: the
            # same step on inputs moved by about one ulp; parity.py allows
            # 10 x that spread on top of its 1e-5 tolerance.
            moved = []
            for i, x in enumerate(ins):
                a = np.load("%s/%s" % (out, x))
                if a.dtype == np.float32:
                    a = (a * (1 + 2.0 ** -23 * rng.choice([-1.0, 1.0], a.shape))).astype(np.float32)
                p = "%s/%s.moved%d.npy" % (out, label, i)
                np.save(p, a)
                moved.append(p)
            got = ["%s/%s.moved-out%d.npy" % (out, label, i) for i in range(nout)]
            subprocess.run([root + "/build/bin/rewire-run", "%s/%s.rwx" % (out, art), "--function=" + fn,
                            "--print-max-elements=0"] + ["--output=@" + g for g in got]
                           + ["--input=@" + m for m in moved], check=True, stdout=subprocess.DEVNULL)
            for i, g in enumerate(got):
                spread = np.abs(np.load(g) - np.load("%s/%s" % (out, refs[i])))
                np.save("%s/%s.spread%d.npy" % (out, label, i), spread.astype(np.float32))
                os.remove(g)
            for m in moved:
                os.remove(m)
        man.write("%s %s %s %s\n" % (art, fn, ",".join(refs), " ".join(ins)))
PYEOF
# The CPU artifacts stay here (the .rwcu files share their parameter files).
rm -f "$OUT"/parity/*.rwx

# Training: 20 AdamW steps of the tiny GPT on the CPU (the reference curve),
# and the CUDA train-step artifact rewire-train --device=cuda compiles (taken
# from its compile cache: the device has no compiler).
mkdir -p "$OUT/train"
$PY -c "import numpy as np; np.random.default_rng(0).integers(0, 64, 4000).astype(np.uint16).tofile('$OUT/train/tokens.bin')"
TRAIN_FLAGS="--data=$OUT/train/tokens.bin --optimizer=adamw --lr=3e-3 --steps=20"
"$BIN/rewire-train" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" $TRAIN_FLAGS --metrics="$OUT/train/cpu.csv" > /dev/null
REWIRE_CACHE_DIR="$OUT/train/cache" REWIRE_LIBCUDA=/nonexistent "$BIN/rewire-train" \
  "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --device=cuda $TRAIN_FLAGS > /dev/null 2>&1 || true
cached=$(dirname "$(find "$OUT/train/cache" -name model.rwx | head -1)")
cp "$cached/model.rwx" "$OUT/train/model.rwx" && cp "$cached"/model.params.safetensors "$OUT/train/"
rm -rf "$OUT/train/cache"
echo "$TRAIN_FLAGS" > "$OUT/train/flags.txt"

# Training-step benchmark: a GPT (LAYERS,D,HEADS,T,B,V) compiled as one
# AdamW train step; carried without its weights (train_bench.py makes them).
TRAIN_BENCH=${TRAIN_BENCH:-$([ "${EMULATE:-0}" = 1 ] && echo 1,64,4,16,2,1000 || echo 4,768,12,256,8,50257)}
mkdir -p "$OUT/trainbench"
$PY "$ROOT/bench/gpu/train_model.py" "$OUT/trainbench/model.onnx" "$TRAIN_BENCH"
cuda_compile "$OUT/trainbench/model.onnx" "$OUT/trainbench/model.rwcu" --train=adamw:loss=cross_entropy
# The same step under the 2025-26 forms (their training-time overhead on
# the GPU; TRAIN_FORMS= for none).
for f in ${TRAIN_FORMS-$([ "${EMULATE:-0}" = 1 ] || echo hc mhc laurel value-residual)}; do
  cuda_compile "$OUT/trainbench/model.onnx" "$OUT/trainbench/model-$f.rwcu" --residual=$f \
    --train=adamw:loss=cross_entropy
done
rm -f "$OUT/trainbench/model.onnx" "$OUT"/trainbench/*.params.safetensors
echo "$TRAIN_BENCH" > "$OUT/trainbench/dims.txt"

# Benchmark: the fused kernels at >= 1 GB of traffic each.
$PY "$ROOT/bench/gpu/bench_ops.py" > "$OUT/bench/ops.mlir"
cuda_compile "$OUT/bench/ops.mlir" "$OUT/bench/ops.rwcu"
echo "${BENCH_ROWS:-32768}" > "$OUT/bench/rows.txt"
du -sh "$OUT"
# The pack the header's run() carries (random inputs barely compress; PTX
# and cubins do, 5x).
PACK=$(dirname "$OUT")/gpu-pack
mkdir -p "$PACK"
tar -C "$(dirname "$OUT")" -cf - "$(basename "$OUT")" | xz -T2 -6 > "$PACK/gpu-check.tar.xz"
du -sh "$PACK"
