//===- HeapTuning.cpp - Keep the heap warm across calls -------------------===//
//
// A compiled model allocates its intermediate tensors with malloc and frees
// them before it returns. Kernels.c keeps up to 256 freed temporaries per
// thread for the next call (the largest, above the mmap threshold below,
// first), but a train step frees thousands, and the
// runtime's own buffers (batches, outputs) pass through malloc too. With
// glibc's defaults every call then maps and
// unmaps (or grows and trims) megabytes of memory, and the first touch of
// each page faults in the kernel: on a 4-layer GPT's train step half of all
// CPU time went to page faults and the allocator's system calls. Raising
// the mmap threshold to its maximum (32 MiB) and never trimming the heap
// lets each call reuse the previous call's pages (measured: 2861 -> 4535
// tokens/s on that train step). It changes the process's malloc, so a host
// (Python, a server) can keep its own settings with REWIRE_HEAP_TUNING=0.
//
//===----------------------------------------------------------------------===//
#include "HeapTuning.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace rewire::runtime {

void tuneHeapOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char *env = std::getenv("REWIRE_HEAP_TUNING");
    if (env && std::strcmp(env, "0") == 0)
      return;
#if defined(__GLIBC__)
    // Blocks below 32 MiB (glibc's largest threshold) come from the heap...
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    // ...which keeps what it grew to (no trim), with room to grow in steps.
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 64 * 1024 * 1024);
#endif
  });
}

} // namespace rewire::runtime
