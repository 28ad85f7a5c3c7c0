#!/usr/bin/env bash
# Builds Rewire (installing what is missing) and runs every test suite: lit +
# FileCheck IR tests, the gtest unit tests and the Python tests (all through
# lit), and a short ASan+UBSan fuzz run of the ONNX importer
# and of the CUDA artifact reader (scripts/fuzz.sh; FUZZ_SECONDS each,
# default 20). Ends with one line
# `N passed, N failed` over all suites.
#
# Exit codes: 0 all tests passed; 1 a test failed; 2/3 as scripts/bootstrap.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export BUILD_DIR

"$ROOT/scripts/bootstrap.sh"

XML="$BUILD_DIR/test-results.xml"
rm -f "$XML"
set +e
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output="$XML" \
  "$BUILD_DIR/test" "$BUILD_DIR/test/unit"
lit_rc=$?
set -e

set +e
"$ROOT/scripts/fuzz.sh" "${FUZZ_SECONDS:-20}" import >"$BUILD_DIR/fuzz-short.log" 2>&1
fuzz_rc=$?
"$ROOT/scripts/fuzz.sh" "${FUZZ_SECONDS:-20}" artifact >"$BUILD_DIR/fuzz-artifact-short.log" 2>&1
fuzz_artifact_rc=$?
set -e
tail -n 3 "$BUILD_DIR/fuzz-short.log" "$BUILD_DIR/fuzz-artifact-short.log"
fuzz_result=fail
[ "$fuzz_rc" -eq 0 ] && fuzz_result=pass
fuzz_artifact_result=fail
[ "$fuzz_artifact_rc" -eq 0 ] && fuzz_artifact_result=pass

set +e
python3 "$ROOT/scripts/summarize_tests.py" "$XML" "fuzz-import-short=$fuzz_result" \
  "fuzz-artifact-short=$fuzz_artifact_result"
summary_rc=$?
set -e
[ "$lit_rc" -eq 0 ] && [ "$summary_rc" -eq 0 ] || exit 1
