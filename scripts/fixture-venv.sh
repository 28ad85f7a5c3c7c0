#!/usr/bin/env bash
# Makes build/torch-venv: PyTorch 2.x from PyPI with transformers, timm,
# torchvision and the ONNX exporters' dependencies (~6 GB with the CUDA
# wheels PyPI's torch pulls), the versions the committed fixtures were made
# with. Only scripts/make-model-fixtures.py needs it; the test command does
# not.
#
#   scripts/fixture-venv.sh && build/torch-venv/bin/python scripts/make-model-fixtures.py
#
# Exit codes: 0 ready; 1 pip failed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TORCH_VENV:-$ROOT/build/torch-venv}"
"$ROOT/scripts/pypi-venv.sh" "$VENV" torch==2.15.0 torchvision==0.29.2 transformers==5.24.0 timm==1.0.31 \
  onnx==1.23.2 onnxscript==0.7.2 onnxruntime==1.32.0 safetensors==0.8.0 numpy==2.4.6 || exit 1
"$VENV/bin/python" -c "import torch, transformers, timm, torchvision; print('torch', torch.__version__)"
