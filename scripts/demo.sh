#!/usr/bin/env bash
# The main job: build Rewire (installing what is missing); rewrite the bundled
# tiny GPT's residual stream into every residual form with rewire-opt, printing
# what each form adds; then import the bundled PyTorch-exported tiny GPT
# (tiny-gpt.onnx), rewrite it into each form and run every variant on the CPU
# through Rewire's lowering, printing how far each is from the original; then
# train each form briefly with the compiled train step (rewire-train); last, a
# short version of the LPA experiment (examples/experiments/lpa.py --quick).
#
# Exit codes: 0 done; 1 a rewrite failed; 2/3 as scripts/bootstrap.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export BUILD_DIR
"$ROOT/scripts/bootstrap.sh" >/dev/null
python3 "$ROOT/examples/tiny-gpt/demo.py" --rewire-opt "$BUILD_DIR/bin/rewire-opt" \
  --model "$ROOT/examples/tiny-gpt/model.mlir"
echo
/usr/bin/python3 "$ROOT/examples/tiny-gpt/run_forms.py" --build "$BUILD_DIR"
echo
/usr/bin/python3 "$ROOT/examples/tiny-gpt/train_forms.py" --build "$BUILD_DIR" --steps 100
echo
/usr/bin/python3 "$ROOT/examples/experiments/lpa.py" --build "$BUILD_DIR" --quick
