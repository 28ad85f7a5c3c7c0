//===- Hash.h - FNV-1a, the one hash Rewire's files use -----------*- C++ -*-===//
//
// 64-bit FNV-1a: the compile cache's keys and the emulator kernels' image
// hashes (the compiler records them, the CUDA emulator recomputes them).
// Not cryptographic: it names, it does not authenticate.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_HASH_H
#define REWIRE_SUPPORT_HASH_H

#include <cstddef>
#include <cstdint>

namespace rewire {

constexpr uint64_t kFnv1aBasis = 1469598103934665603ull;

inline uint64_t fnv1a(const void *data, size_t size, uint64_t h = kFnv1aBasis) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

} // namespace rewire

#endif // REWIRE_SUPPORT_HASH_H
