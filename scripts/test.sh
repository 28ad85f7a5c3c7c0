#!/usr/bin/env bash
# Builds Rewire (installing what is missing) and runs every test suite: lit +
# FileCheck IR tests, the gtest unit tests and the Python tests (all through
# lit), and a short ASan+UBSan fuzz run of every scripts/fuzz.sh target (the
# importer, generated ONNX graphs through the compiler, and the CUDA artifact
# reader FUZZ_SECONDS each, default 20; the small readers FUZZ_READER_SECONDS,
# default 5). Ends with one line
# `N passed, N failed` over all suites.
#
# Exit codes: 0 all tests passed; 1 a test failed; 2/3 as scripts/bootstrap.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export BUILD_DIR

"$ROOT/scripts/bootstrap.sh"
# Each phase's minutes, so a slow suite shows where to trim.
phase() { printf 'test.sh: %s took %d min %02d s\n' "$1" $((SECONDS / 60)) $((SECONDS % 60)); SECONDS=0; }
phase "install and build"

XML="$BUILD_DIR/test-results.xml"
rm -f "$XML" "$BUILD_DIR"/pytest-*.xml
set +e
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output="$XML" \
  "$BUILD_DIR/test" "$BUILD_DIR/test/unit"
lit_rc=$?
set -e
phase "lit (IR, gtest, Python, real-model corpus)"

# A short slice of every fuzz target (FUZZ_SECONDS each; the 10-minute runs
# are `scripts/fuzz.sh 600 all`): one pass/fail result per target.
results=()
for t in import onnxgen artifact elf npy safetensors json input-spec; do
  set +e
  secs="${FUZZ_SECONDS:-20}"
  case "$t" in import|onnxgen|artifact) ;; *) secs="${FUZZ_READER_SECONDS:-5}" ;; esac
  "$ROOT/scripts/fuzz.sh" "$secs" "$t" >"$BUILD_DIR/fuzz-$t-short.log" 2>&1
  rc=$?
  set -e
  tail -n 1 "$BUILD_DIR/fuzz-$t-short.log"
  if [ "$rc" -eq 0 ]; then results+=("fuzz-$t-short=pass"); else results+=("fuzz-$t-short=fail"); fi
done
phase "fuzz slices (build-fuzz/ and runs)"

set +e
python3 "$ROOT/scripts/summarize_tests.py" "$XML" "$BUILD_DIR"/pytest-*.xml "${results[@]}"
summary_rc=$?
set -e
[ "$lit_rc" -eq 0 ] && [ "$summary_rc" -eq 0 ] || exit 1
