#!/usr/bin/env bash
# Fuzzes the ONNX importer with libFuzzer under ASan + UBSan.
#
#   scripts/fuzz.sh [SECONDS]     # default 600 (the 10-minute run of SECURITY.md)
#
# Builds Rewire instrumented in build-fuzz/ (clang-22, libclang-rt-22-dev),
# seeds the corpus with every model of Debian's libonnx-testdata and the test
# models, and runs for SECONDS on one core. A crash input is copied to
# test/Import/fuzz-regressions/ (becoming a regression input) and the script
# exits 1; otherwise it prints the exec count and exits 0.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_TO_RUN="${1:-600}"
FUZZ_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export BUILD_DIR

"$ROOT/scripts/bootstrap.sh" >/dev/null
if ! dpkg-query -W -f='${Status}' libclang-rt-22-dev 2>/dev/null | grep -q "install ok installed"; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libclang-rt-22-dev >/tmp/rewire-apt-fuzz.log 2>&1 || {
    echo "fuzz: error: could not install libclang-rt-22-dev" >&2; exit 2; }
fi

SAN="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
if [ ! -f "$FUZZ_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$FUZZ_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" \
    -DCMAKE_EXE_LINKER_FLAGS="-fuse-ld=lld -fsanitize=address,undefined" \
    -DREWIRE_ENABLE_FUZZER=ON -DREWIRE_BUILD_TESTS=OFF >"$FUZZ_DIR.configure.log" 2>&1 || {
      echo "fuzz: error: configure failed; see $FUZZ_DIR.configure.log" >&2; exit 3; }
fi
ninja -C "$FUZZ_DIR" -j "${JOBS:-2}" rewire-import-fuzz >/dev/null || { echo "fuzz: error: build failed" >&2; exit 3; }

CORPUS="$FUZZ_DIR/corpus"
mkdir -p "$CORPUS" "$ROOT/test/Import/fuzz-regressions"
if [ -z "$(ls -A "$CORPUS")" ]; then
  i=0
  for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
    cp "$m" "$CORPUS/testdata-$i.onnx"; i=$((i + 1))
  done
  cp "$ROOT"/test/Import/fuzz-regressions/* "$CORPUS/" 2>/dev/null || true
fi

ARTIFACTS="$FUZZ_DIR/artifacts/"
mkdir -p "$ARTIFACTS"
LOG="$FUZZ_DIR/fuzz.log"
set +e
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$FUZZ_DIR/bin/rewire-import-fuzz" "$CORPUS" -max_total_time="$SECONDS_TO_RUN" \
  -rss_limit_mb=4096 -max_len=1048576 -timeout=20 -print_final_stats=1 \
  -artifact_prefix="$ARTIFACTS" >"$LOG" 2>&1
rc=$?
set -e
execs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$LOG" | grep -oE "[0-9]+$" || echo "?")
if [ "$rc" -ne 0 ]; then
  for a in "$ARTIFACTS"*; do
    [ -f "$a" ] && cp "$a" "$ROOT/test/Import/fuzz-regressions/$(basename "$a").onnx"
  done
  echo "fuzz: FAILED after $execs executions in ${SECONDS_TO_RUN}s; crash inputs copied to test/Import/fuzz-regressions/; log: $LOG"
  grep -m5 -E "ERROR|runtime error|SUMMARY" "$LOG" || true
  exit 1
fi
echo "fuzz: $execs executions in ${SECONDS_TO_RUN}s, 0 crashes (ASan+UBSan)"
