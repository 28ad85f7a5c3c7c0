/*===- TemporaryCache.h - Compiled code's temporaries and their cache -----===
 *
 * Compiled code allocates its temporaries through the two functions below
 * (runtime/Kernels.c), which keep freed blocks per thread for the next call:
 * up to kTemporaryCacheSlots blocks and kTemporaryCacheBytes a thread. The
 * limits are here so that the tests fill the cache exactly.
 *
 * 1024 slots, not 256: entry points called in turn on one thread share its
 * cache (train_step and eval_step; two models' train steps), and a 12-layer
 * GPT's step with LAuReL beside the plain one needed more than 256: the
 * LAuReL step faulted 4 000 - 20 000 pages a step in again, 0 with 1024
 * (docs/performance.md, 2026-12-07).
 *
 *===----------------------------------------------------------------------===*/
#ifndef REWIRE_RUNTIME_TEMPORARYCACHE_H
#define REWIRE_RUNTIME_TEMPORARYCACHE_H

#include <stddef.h>

enum { kTemporaryCacheSlots = 1024 };
#define kTemporaryCacheBytes ((size_t)2 << 30)

#ifdef __cplusplus
extern "C" {
#endif
void *_mlir_memref_to_llvm_alloc(size_t size);
void _mlir_memref_to_llvm_free(void *ptr);
#ifdef __cplusplus
}
#endif

#endif /* REWIRE_RUNTIME_TEMPORARYCACHE_H */
