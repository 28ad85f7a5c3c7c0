//===- TemporaryCacheTest.cpp - The temporaries' cache keeps large blocks --===//
//
// Compiled code allocates its temporaries through runtime/Kernels.c, which
// keeps freed blocks per thread for the next call (runtime/TemporaryCache.h's
// limits: 1024 blocks, 2 GiB).
// A block above glibc's mmap threshold that the cache turns away is unmapped
// by free() and page-faulted afresh by the next call; the cache must keep it
// in place of a smaller block. A block handed out again by the cache still
// holds what was written to it, while a fresh mapping reads as zeros: that
// tells the two apart. The cache is per thread: each test runs on a thread
// of its own, whose cache starts empty (what it holds at the end stays
// allocated until the process exits).
//
//===----------------------------------------------------------------------===//
#include "runtime/TemporaryCache.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace {

constexpr int kSlots = kTemporaryCacheSlots;
constexpr size_t kSmall = 4160;      // a small temporary (mark() needs 4096 bytes)
constexpr size_t kLarge = 64u << 20; // above glibc's largest mmap threshold (32 MiB)

/// Fills `p`'s first and last pages with a pattern of `tag`.
void mark(void *p, size_t size, uint8_t tag) {
  std::memset(p, tag, 4096);
  std::memset(static_cast<char *>(p) + size - 4096, tag, 4096);
}

/// Runs `body` on a new thread (an empty cache) and waits for it.
template <typename F> void onFreshThread(F body) { std::thread(body).join(); }

bool marked(const void *p, size_t size, uint8_t tag) {
  const auto *b = static_cast<const uint8_t *>(p);
  for (size_t i = 0; i < 4096; ++i)
    if (b[i] != tag || b[size - 4096 + i] != tag)
      return false;
  return true;
}

/// Allocates `n` blocks of `size` bytes, each marked with `tag`.
std::vector<void *> allocMarked(int n, size_t size, uint8_t tag) {
  std::vector<void *> blocks;
  for (int i = 0; i < n; ++i) {
    void *p = _mlir_memref_to_llvm_alloc(size);
    if (!p) {
      ADD_FAILURE() << "allocation of " << size << " bytes failed";
      break;
    }
    mark(p, size, tag);
    blocks.push_back(p);
  }
  return blocks;
}

void freeAll(const std::vector<void *> &blocks) {
  for (void *p : blocks)
    _mlir_memref_to_llvm_free(p);
}

/// Allocates `n` blocks of `size` bytes again and counts those that still
/// hold `tag` (handed out by the cache), then frees them.
int countKept(int n, size_t size, uint8_t tag) {
  std::vector<void *> again;
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    again.push_back(_mlir_memref_to_llvm_alloc(size));
    kept += again.back() && marked(again.back(), size, tag);
  }
  freeAll(again);
  return kept;
}

TEST(TemporaryCache, FullCacheKeepsALargeBlockInPlaceOfASmallOne) {
  onFreshThread([] {
    // Every slot filled with small blocks.
    freeAll(allocMarked(kSlots, kSmall, 0x11));

    void *big = _mlir_memref_to_llvm_alloc(kLarge);
    ASSERT_NE(big, nullptr);
    mark(big, kLarge, 0x5a);
    _mlir_memref_to_llvm_free(big);

    void *again = _mlir_memref_to_llvm_alloc(kLarge);
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again, big);
    EXPECT_TRUE(marked(again, kLarge, 0x5a))
        << "the large block was not kept: freed to glibc and mapped afresh";
    _mlir_memref_to_llvm_free(again);
  });
}

TEST(TemporaryCache, SmallBlockDoesNotEvictLargerOnes) {
  onFreshThread([] {
    // A cache of large blocks...
    constexpr size_t kMid = 40u << 20;
    std::vector<void *> blocks = allocMarked(40, kMid, 0x77); // 1.6 GiB: within the 2 GiB
    std::vector<void *> small = allocMarked(kSlots, kSmall, 0x11);
    freeAll(blocks);
    // ...then more small blocks than free slots: they take free slots or go
    // to free(), never a larger block's place.
    freeAll(small);
    EXPECT_EQ(countKept(40, kMid, 0x77), 40);
  });
}

TEST(TemporaryCache, HoldsAtMostTwoGiB) {
  onFreshThread([] {
    // 60 blocks of 40 MiB (2.3 GiB; only their first and last pages touched):
    // the cache keeps as many as fit in its 2 GiB (51), the rest go to free()
    // and come back as fresh, zeroed mappings.
    constexpr size_t kMid = 40u << 20;
    freeAll(allocMarked(60, kMid, 0x77));
    EXPECT_EQ(countKept(60, kMid, 0x77), static_cast<int>(kTemporaryCacheBytes / kMid));
  });
}

} // namespace
