#!/usr/bin/env bash
# Builds Rewire (installing what is missing) and runs every test suite: lit +
# FileCheck IR tests, the gtest unit tests (run through lit) and the Python
# tests. Ends with one line `N passed, N failed` over all suites.
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

python3 "$ROOT/scripts/summarize_tests.py" "$XML"
summary_rc=$?
[ "$lit_rc" -eq 0 ] && [ "$summary_rc" -eq 0 ] || exit 1
