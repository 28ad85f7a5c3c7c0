#!/usr/bin/env bash
# Installs what Rewire needs on Debian 12 (idempotent: apt runs only when a
# package is missing) and configures and builds the project with ninja.
#
#   scripts/bootstrap.sh            # install + configure + build into build/
#   BUILD_DIR=out scripts/bootstrap.sh
#
# Exit codes: 0 built; 2 a package could not be installed; 3 configure or
# build failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
JOBS="${JOBS:-2}"

PACKAGES=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22
          cmake ninja-build libgtest-dev python3
          libprotobuf-dev protobuf-compiler libonnx-dev zlib1g-dev
          python3-onnx python3-numpy python3-torch python3-torchvision libonnx-testdata
          python3-venv python3-matplotlib libopenblas-dev libdnnl-dev libomp-22-dev
          libopenmpi-dev openmpi-bin)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/rewire-apt.log 2>&1; then
    # Stale package lists on a fresh machine: refresh once and retry.
    $SUDO apt-get update >>/tmp/rewire-apt.log 2>&1 || true
    if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/rewire-apt.log 2>&1; then
      echo "bootstrap: error: could not install ${missing[*]}; see /tmp/rewire-apt.log" >&2
      tail -n 20 /tmp/rewire-apt.log >&2
      exit 2
    fi
  fi
fi

# A venv that also sees Debian's onnx, numpy and torch: ONNX Runtime (PyPI)
# for the export tests; nanobind and scikit-build-core to build the Python
# package (installed into it after the build); pytest and transformers (on
# Debian's PyTorch 1.13, the oracle) for its tests.
VENV="$BUILD_DIR/venv"
if ! "$VENV/bin/python" -c "import onnxruntime, nanobind, scikit_build_core, pytest, transformers" >/dev/null 2>&1; then
  mkdir -p "$BUILD_DIR"
  { [ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$VENV"; } &&
    "$VENV/bin/pip" install -q "onnxruntime==${ORT_VERSION:-1.32.0}" "nanobind>=2,<4" \
      "scikit-build-core>=0.10,<2" "pytest>=8,<10" "transformers==4.44.2" >/tmp/rewire-pip.log 2>&1 || {
      echo "bootstrap: error: could not install onnxruntime, nanobind, scikit-build-core, pytest or transformers into $VENV; see /tmp/rewire-pip.log" >&2
      exit 2
    }
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir -DPython_EXECUTABLE="$VENV/bin/python" \
    >"$BUILD_DIR.configure.log" 2>&1 || {
      echo "bootstrap: error: cmake configure failed; see $BUILD_DIR.configure.log" >&2
      tail -n 30 "$BUILD_DIR.configure.log" >&2
      exit 3
    }
fi
ninja -C "$BUILD_DIR" -j "$JOBS" || { echo "bootstrap: error: build failed" >&2; exit 3; }
# The Python package into the venv (pyproject.toml: the same build folder,
# so this builds nothing new).
"$VENV/bin/pip" install -q --no-build-isolation --config-settings=build-dir="$BUILD_DIR" "$ROOT" \
    >/tmp/rewire-pip-package.log 2>&1 || {
  echo "bootstrap: error: pip install of the Python package failed; see /tmp/rewire-pip-package.log" >&2
  tail -n 30 /tmp/rewire-pip-package.log >&2
  exit 3
}
