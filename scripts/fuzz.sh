#!/usr/bin/env bash
# Fuzzes an input reader with libFuzzer under ASan + UBSan.
#
#   scripts/fuzz.sh [SECONDS] [import|artifact]   # default 600 s (SECURITY.md), import
#
# import: the ONNX importer, seeded with every model of Debian's
# libonnx-testdata and the test models; artifact: the CUDA runtime's .rwcu
# reader, seeded with artifacts compiled by build/bin/rewire-compile.
# Builds Rewire instrumented in build-fuzz/ (clang-22, libclang-rt-22-dev) and
# runs for SECONDS on one core. A crash input is copied to
# test/Import/fuzz-regressions/ or test/GPU/fuzz-regressions/ (becoming a
# regression input) and the script exits 1; otherwise it prints the exec
# count and exits 0.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_TO_RUN="${1:-600}"
TARGET="${2:-import}"
case "$TARGET" in
  import) FUZZER=rewire-import-fuzz; EXT=onnx; REGRESSIONS="$ROOT/test/Import/fuzz-regressions" ;;
  artifact) FUZZER=rewire-artifact-fuzz; EXT=rwcu; REGRESSIONS="$ROOT/test/GPU/fuzz-regressions" ;;
  *) echo "fuzz: error: unknown target '$TARGET' (import or artifact)" >&2; exit 1 ;;
esac
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
# An existing build-fuzz/ from before a target was added needs reconfiguring.
if ! ninja -C "$FUZZ_DIR" -t targets all 2>/dev/null | grep -q "^$FUZZER:"; then
  cmake "$FUZZ_DIR" >>"$FUZZ_DIR.configure.log" 2>&1 || { echo "fuzz: error: reconfigure failed" >&2; exit 3; }
fi
ninja -C "$FUZZ_DIR" -j "${JOBS:-2}" "$FUZZER" >/dev/null || { echo "fuzz: error: build failed" >&2; exit 3; }

CORPUS="$FUZZ_DIR/corpus"
[ "$TARGET" = import ] || CORPUS="$FUZZ_DIR/corpus-$TARGET"
mkdir -p "$CORPUS" "$REGRESSIONS"
if [ -z "$(ls -A "$CORPUS")" ]; then
  if [ "$TARGET" = import ]; then
    i=0
    for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
      cp "$m" "$CORPUS/testdata-$i.onnx"; i=$((i + 1))
    done
  elif [ -x "$BUILD_DIR/bin/rewire-compile" ]; then
    "$BUILD_DIR/bin/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --target=cuda \
      -o "$CORPUS/gpt.rwcu" >/dev/null 2>&1 || true
    "$BUILD_DIR/bin/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --target=cuda \
      --residual=nag -o "$CORPUS/nag.rwcu" >/dev/null 2>&1 || true
    rm -f "$CORPUS"/*.safetensors
  fi
  cp "$REGRESSIONS"/* "$CORPUS/" 2>/dev/null || true
fi

ARTIFACTS="$FUZZ_DIR/artifacts/"
mkdir -p "$ARTIFACTS"
LOG="$FUZZ_DIR/fuzz-$TARGET.log"
set +e
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$FUZZ_DIR/bin/$FUZZER" "$CORPUS" -max_total_time="$SECONDS_TO_RUN" \
  -rss_limit_mb=4096 -max_len=4194304 -timeout=20 -print_final_stats=1 \
  -artifact_prefix="$ARTIFACTS" >"$LOG" 2>&1
rc=$?
set -e
execs=$(grep -oE "stat::number_of_executed_units: *[0-9]+" "$LOG" | grep -oE "[0-9]+$" || echo "?")
if [ "$rc" -ne 0 ]; then
  for a in "$ARTIFACTS"*; do
    [ -f "$a" ] && cp "$a" "$REGRESSIONS/$(basename "$a").$EXT"
  done
  echo "fuzz: FAILED after $execs executions in ${SECONDS_TO_RUN}s; crash inputs copied to $REGRESSIONS/; log: $LOG"
  grep -m5 -E "ERROR|runtime error|SUMMARY" "$LOG" || true
  exit 1
fi
echo "fuzz ($TARGET): $execs executions in ${SECONDS_TO_RUN}s, 0 crashes (ASan+UBSan)"
