#!/usr/bin/env bash
# Fuzzes an input reader with libFuzzer under ASan + UBSan.
#
#   scripts/fuzz.sh [SECONDS] [TARGET]   # default 600 s (SECURITY.md), import
#   scripts/fuzz.sh [SECONDS] all        # every target, SECONDS each
#
# Targets (each a libFuzzer binary over one reader of untrusted input):
#   import       bytes -> the ONNX importer (seeded with libonnx-testdata)
#   onnxgen      generated ONNX graphs (structure-aware: 1-8 nodes, random
#                attributes, extreme integers) -> import, residual rewrite,
#                lowering to linalg and the LLVM dialect
#   artifact     the CUDA runtime's .rwcu reader
#   elf          the CPU artifact's ELF check before dlopen
#   npy          .npy arrays (--input=@x.npy, rewire-train data)
#   safetensors  parameter files and checkpoints
#   json         JSON (checkpoint state.json, artifact metadata)
#   input-spec   --input / --expected_output tensor specs
# Builds Rewire instrumented in build-fuzz/ (clang-22, libclang-rt-22-dev) and
# runs for SECONDS on one core. A crash input is copied to the target's
# regression folder (test/Fuzz/regressions/TARGET, test/Import/fuzz-regressions,
# test/GPU/fuzz-regressions), which the tests replay, and the script exits 1;
# otherwise it prints the exec count and exits 0.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_TO_RUN="${1:-600}"
TARGET="${2:-import}"
if [ "$TARGET" = all ]; then
  rc=0
  for t in import onnxgen artifact elf npy safetensors json input-spec; do
    "$0" "$SECONDS_TO_RUN" "$t" || rc=1
  done
  exit $rc
fi
case "$TARGET" in
  import) FUZZER=rewire-import-fuzz; EXT=onnx; REGRESSIONS="$ROOT/test/Import/fuzz-regressions" ;;
  artifact) FUZZER=rewire-artifact-fuzz; EXT=rwcu; REGRESSIONS="$ROOT/test/GPU/fuzz-regressions" ;;
  onnxgen|elf|npy|safetensors|json|input-spec)
    FUZZER=rewire-$TARGET-fuzz; EXT=bin; REGRESSIONS="$ROOT/test/Fuzz/regressions/$TARGET" ;;
  *) echo "fuzz: error: unknown target '$TARGET' (import, onnxgen, artifact, elf, npy, safetensors, json, input-spec or all)" >&2; exit 1 ;;
esac
FUZZ_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
export BUILD_DIR

# FUZZ_NO_BOOTSTRAP=1: the build and its tools are known to be in place (a
# long run next to other work on build/, which a bootstrap would rebuild).
[ "${FUZZ_NO_BOOTSTRAP:-0}" = 1 ] || "$ROOT/scripts/bootstrap.sh" >/dev/null
if ! dpkg-query -W -f='${Status}' libclang-rt-22-dev 2>/dev/null | grep -q "install ok installed"; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libclang-rt-22-dev >/tmp/rewire-apt-fuzz.log 2>&1 || {
    echo "fuzz: error: could not install libclang-rt-22-dev" >&2; exit 2; }
fi

# -O1 and line tables only (as libFuzzer's docs suggest), and the common MLIR
# headers precompiled (REWIRE_PRECOMPILED_HEADERS, on by default): the
# instrumented build of the whole compiler is most of the test command's fuzz
# phase, and reports keep file:line in every frame.
SAN="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -gline-tables-only"
if [ ! -f "$FUZZ_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$FUZZ_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
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
  case "$TARGET" in
    import)
      i=0
      for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
        cp "$m" "$CORPUS/testdata-$i.onnx"; i=$((i + 1))
      done ;;
    artifact)
      if [ -x "$BUILD_DIR/bin/rewire-compile" ]; then
        "$BUILD_DIR/bin/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --target=cuda \
          -o "$CORPUS/gpt.rwcu" >/dev/null 2>&1 || true
        "$BUILD_DIR/bin/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" --target=cuda \
          --residual=nag -o "$CORPUS/nag.rwcu" >/dev/null 2>&1 || true
        rm -f "$CORPUS"/*.safetensors
      fi ;;
    elf|safetensors)
      if [ -x "$BUILD_DIR/bin/rewire-compile" ]; then
        "$BUILD_DIR/bin/rewire-compile" "$ROOT/examples/tiny-gpt/tiny-gpt.onnx" \
          -o "$CORPUS/gpt.rwx" >/dev/null 2>&1 || true
        if [ "$TARGET" = elf ]; then rm -f "$CORPUS"/*.safetensors
        else rm -f "$CORPUS"/*.rwx; fi
      fi ;;
    npy)
      /usr/bin/python3 - "$CORPUS" <<'PY' || true
import sys, numpy as np
for i, (dt, shape) in enumerate([("<f4", (2, 3)), ("<i8", (4,)), ("|b1", (2, 2)), ("<f2", ())]):
    np.save("%s/seed-%d.npy" % (sys.argv[1], i), np.ones(shape, dtype=dt))
PY
      ;;
    json)
      printf '{"format":"rewire-train-state","version":1,"step":20,"seed":0,"parameters":"model-20.safetensors"}' >"$CORPUS/state.json"
      printf '{"a":[1,2.5e-3,"x\\u00e9",true,null,{"b":[]}]}' >"$CORPUS/mixed.json" ;;
    input-spec)
      printf '2x3xf32=1,2,3,4,5,6' >"$CORPUS/a"; printf '2x2xi64=[0 1][2 -9223372036854775808]' >"$CORPUS/b"
      printf 'i1=true' >"$CORPUS/c"; printf '4xf64=inf,-inf,nan,1e308' >"$CORPUS/d" ;;
    onnxgen)
      head -c 4096 /dev/urandom >"$CORPUS/random" ;;
  esac
  cp "$REGRESSIONS"/* "$CORPUS/" 2>/dev/null || true
  rm -f "$CORPUS/README.md"
fi

ARTIFACTS="$FUZZ_DIR/artifacts-$TARGET/"
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
