#!/usr/bin/env bash
# The main job: build Rewire (installing what is missing) and rewrite the
# bundled tiny GPT's residual stream into every residual form with rewire-opt,
# printing what each form adds.
#
# Exit codes: 0 done; 1 a rewrite failed; 2/3 as scripts/bootstrap.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export BUILD_DIR
"$ROOT/scripts/bootstrap.sh" >/dev/null
python3 "$ROOT/examples/tiny-gpt/demo.py" --rewire-opt "$BUILD_DIR/bin/rewire-opt" \
  --model "$ROOT/examples/tiny-gpt/model.mlir"
