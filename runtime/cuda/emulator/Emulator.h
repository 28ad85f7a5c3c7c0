//===- Emulator.h - The CUDA emulator's shared state -------------*- C++ -*-===//
//
// librewire_cuda_emu.so stands in for libcuda.so.1 and cuBLAS
// (REWIRE_LIBCUDA / REWIRE_LIBCUBLAS) so that CUDA artifacts run on a
// machine without a GPU: "device" memory is host memory, streams execute
// in order as work is enqueued (graphs record and replay it), GEMMs run on
// OpenBLAS with cuBLAS's column-major semantics, and kernels are the
// artifact's own kernels compiled for the CPU (rewire-compile
// --emulator-kernels), run a block at a time with one fiber per GPU thread
// (Simt.cpp). It checks the generated kernels and the host schedule, not
// NVPTX code generation or the real driver (docs/cuda.md).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_CUDA_EMULATOR_EMULATOR_H
#define REWIRE_RUNTIME_CUDA_EMULATOR_EMULATOR_H

#include "../Driver.h"

#include <functional>
#include <string>
#include <vector>

namespace rewire::runtime::cuda {

struct CUgraph_st {
  std::vector<std::function<CUresult()>> work;
};
struct CUgraphExec_st {
  std::vector<std::function<CUresult()>> work;
};
struct CUstream_st {
  /// Work enqueued while capturing goes here instead of running.
  CUgraph_st *capture = nullptr;
};

} // namespace rewire::runtime::cuda

namespace rewire::runtime::cuda::emulator {

// CUresult values (cuda.h).
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kInvalidImage = 200,
                   kNotFound = 500, kIllegalAddress = 700, kLaunchFailed = 719;

/// Whether [p, p + bytes) lies in one live device allocation.
bool isDeviceMemory(const void *p, size_t bytes);

/// Runs `work` now, or records it when `stream` is capturing.
CUresult enqueue(CUstream stream, std::function<CUresult()> work);

/// A kernel of the emulator kernels library.
struct Kernel {
  std::string name;
  void (*call)(void **buffers);
  int argc;
  /// Whether its threads synchronize (barriers, shuffles): only those need
  /// fibers; the others run as plain calls, one thread after another.
  bool sync = true;
};

/// Runs `kernel` over the grid, a block at a time, one fiber per thread;
/// `buffers` are the kernel's arguments. Returns (with a message on
/// stderr) kLaunchFailed for divergent collectives or deadlocks,
/// kIllegalAddress for an out-of-bounds access (rewire_emu_check),
/// kInvalidValue for a bad geometry.
CUresult runGrid(const Kernel &kernel, const unsigned grid[3], const unsigned block[3],
                 std::vector<void *> buffers);

/// Prints "rewire CUDA emulator: MESSAGE" on stderr.
void report(const std::string &message);

} // namespace rewire::runtime::cuda::emulator

#endif // REWIRE_RUNTIME_CUDA_EMULATOR_EMULATOR_H
