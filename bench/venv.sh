#!/usr/bin/env bash
# Makes build/bench-venv: what users would run instead of Rewire, from PyPI,
# at the versions docs/performance.md's figures name — PyTorch 2.x (eager and
# torch.compile), ONNX Runtime, IREE's compiler and runtime, a current
# OpenBLAS (scipy-openblas32, for bench/gemm.py), transformers (for
# bench/hf_models.py) and the ONNX exporters' dependencies. ~6 GB with the
# CUDA wheels PyPI's torch pulls. The benchmarks need it; the test command
# does not.
#
#   bench/venv.sh && build/bench-venv/bin/python bench/hf_models.py
#
# Exit codes: 0 ready; 1 pip failed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${BENCH_VENV:-$ROOT/build/bench-venv}"
"$ROOT/scripts/pypi-venv.sh" "$VENV" torch==2.15.0 onnxruntime==1.32.0 iree-base-compiler==3.13.0 \
  iree-base-runtime==3.13.0 onnx==1.23.2 onnxscript==0.7.2 scipy-openblas32==0.3.34.481.3 transformers==5.24.0 \
  safetensors==0.8.0 numpy==2.4.6 || exit 1
"$VENV/bin/python" -c "import torch, onnxruntime, transformers; print('torch', torch.__version__, \
'onnxruntime', onnxruntime.__version__, 'transformers', transformers.__version__)"
