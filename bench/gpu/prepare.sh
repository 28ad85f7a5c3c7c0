#!/bin/bash
# Prepares the device check on a machine WITHOUT a GPU (this one): compiles
# the parity and benchmark models for CUDA, computes the CPU references,
# and gathers what the device needs (rewire-run and the runtime library: no
# MLIR, no LLVM) into build/gpu-check. Then, with the device tool:
#   run(command="bash bench/gpu/check.sh build/gpu-check", carry=["build/gpu-check"])
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/gpu-check}
BIN=$ROOT/build/bin
PY=/usr/bin/python3
export CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
rm -rf "$OUT" && mkdir -p "$OUT"/{bin,lib,parity,bench}
cp "$BIN/rewire-run" "$OUT/bin/" && cp "$ROOT/build/lib/librewire_runtime.so" "$OUT/lib/"

# Parity: every row op, CPU (libm) reference outputs next to the inputs.
$PY "$ROOT/test/GPU/Inputs/row_ops.py" > "$OUT/parity/ops.mlir"
"$BIN/rewire-compile" "$OUT/parity/ops.mlir" --precise-math -o "$OUT/parity/ops.rwx"
"$BIN/rewire-compile" "$OUT/parity/ops.mlir" --target=cuda -o "$OUT/parity/ops.rwcu"
forms="none review nag ancre denseformer highway lpa"
for f in $forms; do
  flags=""; [ "$f" = none ] || flags="--residual=$f"
  "$BIN/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --precise-math $flags -o "$OUT/parity/gpt-$f.rwx"
  "$BIN/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --target=cuda $flags -o "$OUT/parity/gpt-$f.rwcu"
done
$PY - "$OUT/parity" "$ROOT" "$forms" <<'PYEOF'
import os, subprocess, sys
import numpy as np
out, root, forms = sys.argv[1], sys.argv[2], sys.argv[3].split()
rng = np.random.default_rng(0)
cases = []
listing = subprocess.run([sys.executable, root + "/test/GPU/Inputs/row_ops.py", "--list"],
                         capture_output=True, text=True, check=True).stdout
for line in listing.splitlines():
    name, *shapes = line.split()
    cases.append(("ops", name, [("f32", () if s == "scalar" else tuple(int(d) for d in s.split("x"))) for s in shapes]))
for f in forms:
    cases.append(("gpt-" + f, "forward", [("i64", (2, 8))]))
with open(out + "/manifest.txt", "w") as man:
    for art, fn, specs in cases:
        label = art + "." + fn
        ins = []
        for i, (dt, shape) in enumerate(specs):
            p = "%s/%s.in%d.npy" % (out, label, i)
            np.save(p, rng.integers(0, 64, size=shape).astype(np.int64) if dt == "i64"
                    else rng.standard_normal(shape).astype(np.float32))
            ins.append(os.path.basename(p))
        ref = "%s/%s.ref.npy" % (out, label)
        subprocess.run([root + "/build/bin/rewire-run", "%s/%s.rwx" % (out, art), "--function=" + fn,
                        "--output=@" + ref, "--print-max-elements=0"] + ["--input=@%s/%s" % (out, x) for x in ins],
                       check=True, stdout=subprocess.DEVNULL)
        scale = float(np.max(np.abs(np.load(ref))))
        man.write("%s %s %s %.9g %s\n" % (art, fn, os.path.basename(ref), 1e-5 * scale, " ".join(ins)))
PYEOF
# The CPU artifacts stay here (the .rwcu files share their parameter files).
rm -f "$OUT"/parity/*.rwx

# Benchmark: the fused kernels at >= 1 GB of traffic each.
$PY "$ROOT/bench/gpu/bench_ops.py" > "$OUT/bench/ops.mlir"
"$BIN/rewire-compile" "$OUT/bench/ops.mlir" --target=cuda -o "$OUT/bench/ops.rwcu"
du -sh "$OUT"
