//===- WeightBlocks.h - An mHC weight W [K, k] in column blocks -*- C++ -*-===//
//
// The hyper kernels (runtime/HyperKernels.h) take W [K, k] as up to three
// column blocks side by side, each its own buffer: this holds random blocks
// for a test, reads W[col, j] through them, and writes their kernel
// arguments (pointer, offset, strides, columns; unused blocks 0).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_TEST_UNIT_WEIGHTBLOCKS_H
#define REWIRE_TEST_UNIT_WEIGHTBLOCKS_H

#include <cstdint>
#include <random>
#include <vector>

namespace rewire::test {

struct WeightBlocks {
  /// Each block [K, width] (or [width, K] when transposed) from offset 1.
  std::vector<std::vector<float>> blocks;
  std::vector<int64_t> widths, first;
  int64_t K = 0;
  bool transposed = false;

  /// Random blocks of the given widths (empty: one block k wide).
  WeightBlocks(int64_t K, int64_t k, std::vector<int64_t> w, bool transposed, std::mt19937 &rng)
      : widths(w.empty() ? std::vector<int64_t>{k} : std::move(w)), K(K), transposed(transposed) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    int64_t at = 0;
    for (int64_t width : widths) {
      first.push_back(at);
      at += width;
      blocks.emplace_back(K * width + 1);
      for (float &f : blocks.back())
        f = dist(rng);
    }
  }

  /// The block holding column j.
  size_t block(int64_t j) const {
    size_t q = widths.size() - 1;
    while (j < first[q])
      --q;
    return q;
  }

  double at(int64_t col, int64_t j) const {
    size_t q = block(j);
    int64_t jj = j - first[q];
    return blocks[q][1 + (transposed ? jj * K + col : col * widths[q] + jj)];
  }

  /// The kernels' 15 values for W: (pointer, offset, sK, sJ, columns) x 3.
  void args(int64_t out[15]) const {
    for (int q = 0; q < 15; ++q)
      out[q] = 0;
    for (size_t q = 0; q < widths.size(); ++q) {
      int64_t *a = out + 5 * q;
      a[0] = (int64_t)(intptr_t)blocks[q].data();
      a[1] = 1;
      a[2] = transposed ? 1 : widths[q];
      a[3] = transposed ? K : 1;
      a[4] = widths[q];
    }
  }
};

} // namespace rewire::test

#endif
