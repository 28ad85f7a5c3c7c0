//===- HeapTuning.h - Keep the heap warm across calls ------------*- C++ -*-===//
//
// Internal to the runtime: see HeapTuning.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_HEAPTUNING_H
#define REWIRE_RUNTIME_HEAPTUNING_H

namespace rewire::runtime {

/// Sets glibc's malloc so that a model's per-call tensors reuse the pages of
/// the previous call (once per process; REWIRE_HEAP_TUNING=0 skips it).
void tuneHeapOnce();

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_HEAPTUNING_H
