#!/bin/bash
# The device check (one command, < 10 minutes on one H200): CPU-vs-GPU
# parity of every kernel and of the tiny GPT under each residual form
# (prepared by bench/gpu/prepare.sh), then each fused residual kernel timed
# alone at >= 1 GB of traffic against the measured device-to-device copy,
# PyTorch eager and torch.compile of the same equations, and a GPT's whole
# AdamW training step against PyTorch's (eager and torch.compile). Results go to
# $OUT (the device tool's output folder) or ./gpu-results.
set -uo pipefail
DIR=${1:-build/gpu-check}
RES=${OUT:-$PWD/gpu-results}
mkdir -p "$RES"
export LD_LIBRARY_PATH="$DIR/lib:${LD_LIBRARY_PATH:-}"
# The driver's libraries where containers mount them (when not on the loader's path).
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  [ -e "$d/libcuda.so.1" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
# cuBLAS from the nvidia-cublas wheel PyTorch uses, when no toolkit is on the path.
CUBLAS=$(${PYTHON:-python3} -c "import importlib.util as u; s=u.find_spec('nvidia.cublas'); print(list(s.submodule_search_locations)[0] + '/lib')" 2>/dev/null)
[ -n "$CUBLAS" ] && export LD_LIBRARY_PATH="$CUBLAS:$LD_LIBRARY_PATH"
# EMULATE=1: the dry run on the CUDA emulator (prepared with EMULATE=1).
if [ "${EMULATE:-0}" = 1 ]; then
  export REWIRE_LIBCUDA="$DIR/lib/librewire_cuda_emu.so" REWIRE_LIBCUBLAS="$DIR/lib/librewire_cuda_emu.so" \
    REWIRE_CUDA_EMULATOR_KERNELS="$DIR/emu"
fi
PY=${PYTHON:-python3}
RUN="$DIR/bin/rewire-run"
# PARTS=parity,train,kernels,trainbench runs only those (default: all; a
# rerun of one part costs less of the lease).
want() { [[ ",${PARTS:-all}," == *",all,"* || ",${PARTS:-all}," == *",$1,"* ]]; }
{
  echo "# device check $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
  # A library the carried binaries cannot find shows here, before the runs fail on it.
  ldd "$RUN" "$DIR/lib/librewire_runtime.so" | grep "not found" || echo "libraries: all found"
  "$RUN" --version 2>&1 | head -3
  want parity && "$PY" "$(dirname "$0")/parity.py" "$DIR" "$RUN" "$RES"
} 2>&1 | tee "$RES/parity.txt"

# Training: 20 AdamW steps on the GPU against the CPU's loss curve.
want train && {
  flags=$(sed "s|--data=[^ ]*|--data=$DIR/train/tokens.bin|" "$DIR/train/flags.txt")
  timeout 180 "$DIR/bin/rewire-train" "$DIR/train/model.rwx" --device=cuda $flags --metrics="$RES/gpu-train.csv" 2>&1 | tail -2
  "$PY" -c "
import numpy as np
c = np.loadtxt('$DIR/train/cpu.csv', delimiter=',', skiprows=1)[:, 1]
g = np.loadtxt('$RES/gpu-train.csv', delimiter=',', skiprows=1)[:, 1]
d = float(np.max(np.abs(c - g) / np.abs(c)))
print('train: %d steps, loss %.5f -> %.5f (CPU %.5f -> %.5f), max rel diff %.2e: %s' % (len(g), g[0], g[-1], c[0], c[-1], d, 'ok' if len(g) == len(c) and d < 1e-4 else 'FAIL'))
"
} 2>&1 | tee "$RES/train.txt"

B="$DIR/bench/ops.rwcu"
ROWS=$(cat "$DIR/bench/rows.txt" 2>/dev/null || echo 32768)
T=${ROWS}x4096xf32
declare -A INPUTS=(
  [add]="--input=$T=0.5 --input=$T=0.25"
  [scale_add]="--input=$T=0.5 --input=$T=0.25 --input=4096xf32=0.1"
  [mix3]="--input=$T=0.5 --input=$T=0.25 --input=$T=0.125 --input=2xf32=0.1"
  [nag_add]="--input=$T=0.5 --input=$T=0.25 --input=f32=0.1 --input=${ROWS}x1xf32=0.5"
  [layer_norm]="--input=$T=0.5 --input=4096xf32=1 --input=4096xf32=0"
  [rms_norm]="--input=$T=0.5 --input=4096xf32=1"
  [softmax]="--input=$T=0.5"
)
want kernels && {
  for fn in add scale_add mix3 nag_add layer_norm rms_norm softmax; do
    timeout 60 "$RUN" "$B" --function=$fn ${INPUTS[$fn]} --benchmark=5 --profile=20 --print-max-elements=0 2>&1 \
      | grep -E "^profile:|device time|error" | sed "s/^/rewire $fn: /"
  done
} 2>&1 | tee "$RES/rewire-bench.txt"
if ! want kernels; then
  :
elif [ "${EMULATE:-0}" = 1 ]; then
  echo "(emulator dry run: no PyTorch GPU side)" | tee "$RES/torch-bench.txt"
else
  timeout ${TORCH_BENCH_S:-180} "$PY" "$(dirname "$0")/torch_bench.py" 2>&1 | tee "$RES/torch-bench.txt"
fi
# A training step: Rewire's compiled AdamW step vs PyTorch eager and torch.compile.
want trainbench && EMULATE=${EMULATE:-0} timeout ${TRAIN_BENCH_S:-240} "$PY" "$(dirname "$0")/train_bench.py" "$DIR" "$RUN" "$RES" 2>&1 | tee "$RES/train-bench.txt"
[ -e "$RES/rewire-bench.txt" ] && "$PY" "$(dirname "$0")/summarize.py" "$RES" | tee "$RES/summary.md"
