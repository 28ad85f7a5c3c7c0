//===- SgemmTest.cpp - rewire_sgemm against a float64 reference -----------===//
//
// The SGEMM entry point of CPU artifacts (runtime/Kernels.c) on the shapes
// its own paths take: products with 2 to 24 columns (runtime/NarrowGemm.c's
// AVX2 kernels where oneDNN runs AVX2 kernels; A^T B from 2048 rows, in
// chunks of 64 terms and blocks of 256 rows), few columns, A^T B with
// aliased strides, A^T B with a small output through a transposed copy of
// A, A B^T with B's rows 4 KiB apart through a transposed copy of B; every
// combination of transposes, padded leading dimensions, beta 0 (C holding
// NaN, which must not be read), 1 and 0.5, on 1 and 2 threads. Inputs are
// random; the tolerance is fp32 round-off of the sum of |terms| (1e-6 of
// it, k up to 3072). Products the team shares give the same bits on 1, 2
// and 3 threads.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <omp.h>
#include <random>
#include <string>
#include <vector>

extern "C" {
void rewire_sgemm(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k, int64_t a,
                  int64_t aoff, int64_t lda, int64_t b, int64_t boff, int64_t ldb, int64_t c,
                  int64_t coff, int64_t ldc, float beta);
const char *rewire_kernels_describe(void);
}

namespace {

struct Shape {
  int64_t m, n, k;
};

/// Where the operands sit: leading dimensions 3 past their widths, each
/// matrix kOffset floats from its base.
constexpr int64_t kOffset = 5;
/// `ldb`, where given, replaces B's (a stride the kernels treat specially).
struct Layout {
  int64_t lda, ldb, ldc;
  Layout(const Shape &s, bool ta, bool tb, int64_t ldbGiven = 0)
      : lda((ta ? s.m : s.k) + 3), ldb(ldbGiven ? ldbGiven : (tb ? s.k : s.n) + 3),
        ldc(s.n + 3) {}
};

/// C = op(A) op(B) + beta C through rewire_sgemm on `threads` threads.
std::vector<float> product(const Shape &s, const Layout &l, bool ta, bool tb, float beta,
                           const std::vector<float> &a, const std::vector<float> &b,
                           const std::vector<float> &c0, int threads) {
  std::vector<float> c = c0;
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  rewire_sgemm(ta, tb, s.m, s.n, s.k, (int64_t)(intptr_t)a.data(), kOffset, l.lda,
               (int64_t)(intptr_t)b.data(), kOffset, l.ldb, (int64_t)(intptr_t)c.data(), kOffset,
               l.ldc, beta);
  omp_set_num_threads(saved);
  return c;
}

/// sameBits: the product is one rewire_sgemm shares over the team itself
/// (Kernels.c's teamSplit): 1, 2 and 3 threads must give the same bits.
void check(const Shape &s, bool ta, bool tb, float beta, uint32_t seed, int64_t ldbGiven = 0,
           bool sameBits = false) {
  const Layout l(s, ta, tb, ldbGiven);
  const int64_t lda = l.lda, ldb = l.ldb, ldc = l.ldc;
  int64_t arows = ta ? s.k : s.m, brows = tb ? s.n : s.k;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(kOffset + arows * lda), b(kOffset + brows * ldb), c0(kOffset + s.m * ldc);
  for (float &x : a)
    x = uniform(rng);
  for (float &x : b)
    x = uniform(rng);
  for (float &x : c0)
    x = beta == 0.0f ? std::nanf("") : uniform(rng);
  auto opA = [&](int64_t i, int64_t q) { return a[kOffset + (ta ? q * lda + i : i * lda + q)]; };
  auto opB = [&](int64_t q, int64_t j) { return b[kOffset + (tb ? j * ldb + q : q * ldb + j)]; };
  std::string what = "m " + std::to_string(s.m) + " n " + std::to_string(s.n) + " k " +
                     std::to_string(s.k) + (ta ? " A^T" : "") + (tb ? " B^T" : "") +
                     " beta " + std::to_string(beta) + " ldb " + std::to_string(ldb);
  std::vector<float> one = product(s, l, ta, tb, beta, a, b, c0, 1);
  std::vector<float> two = product(s, l, ta, tb, beta, a, b, c0, 2);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double want = 0, scale = 0;
      for (int64_t q = 0; q < s.k; ++q) {
        double t = (double)opA(i, q) * opB(q, j);
        want += t;
        scale += std::fabs(t);
      }
      float old = c0[kOffset + i * ldc + j];
      if (beta != 0.0f) {
        want += (double)beta * old;
        scale += std::fabs((double)beta * old);
      }
      double tolerance = 1e-6 * (scale + 1.0);
      ASSERT_NEAR(one[kOffset + i * ldc + j], want, tolerance) << what << " at " << i << ", " << j;
      ASSERT_NEAR(two[kOffset + i * ldc + j], want, tolerance) << what << " at " << i << ", " << j;
    }
  }
  // Nothing outside C's m x n elements is written (padding, the offset).
  for (int64_t i = 0; i < (int64_t)c0.size(); ++i) {
    int64_t r = (i - kOffset) / ldc, col = (i - kOffset) % ldc;
    if (i < kOffset || col >= s.n || r >= s.m) {
      uint32_t x, y;
      std::memcpy(&x, &one[i], 4);
      std::memcpy(&y, &c0[i], 4);
      ASSERT_EQ(x, y) << what << ": element " << i << " outside C changed";
    }
  }
  // Products NarrowGemm.c's kernels run: each element is summed by one
  // thread in one order, whatever the team (oneDNN's paths: not checked).
  bool narrowKernel = s.n >= 2 && s.n <= 24 && (!ta || (s.n > 16 && s.m >= 2048)) &&
                      std::string(rewire_kernels_describe()).find("avx512") == std::string::npos &&
                      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (narrowKernel || sameBits)
    ASSERT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float)))
        << what << ": 1 and 2 threads differ";
  if (sameBits) {
    std::vector<float> three = product(s, l, ta, tb, beta, a, b, c0, 3);
    ASSERT_EQ(0, std::memcmp(one.data(), three.data(), one.size() * sizeof(float)))
        << what << ": 1 and 3 threads differ";
  }
}

TEST(Sgemm, NarrowColumns) {
  uint32_t seed = 1;
  for (Shape s : {Shape{1, 9, 7}, Shape{2, 13, 1}, Shape{5, 16, 40}, Shape{7, 17, 64},
                  Shape{37, 20, 300}, Shape{300, 24, 257}, Shape{513, 24, 600},
                  Shape{64, 12, 3}, Shape{2100, 20, 70}, Shape{2048, 24, 129},
                  Shape{2053, 17, 64}, Shape{2048, 6, 77}, Shape{31, 2, 500},
                  Shape{100, 8, 33}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 1.0f, 0.5f})
          check(s, ta, tb, beta, seed++);
}

// A^T B with a small output, 256 to 512 terms (Kernels.c's transposed copy
// of A where oneDNN runs AVX2 kernels; the direct call elsewhere): an
// output row count not a multiple of the copy's 8-row blocks, B rows
// exactly 512 floats apart (copied by the same path), the window's edges.
TEST(Sgemm, TransposedCopyOfA) {
  uint32_t seed = 200;
  for (Shape s : {Shape{128, 256, 256}, Shape{130, 509, 300}, Shape{203, 1024, 512},
                  Shape{1024, 256, 257}, Shape{256, 768, 511}})
    for (float beta : {0.0f, 1.0f, 0.5f}) {
      check(s, true, false, beta, seed++);
      check(s, false, false, beta, seed++);
    }
}

// A B^T with B's rows a multiple of 1024 floats apart (Kernels.c's
// transposed copy of B on AMD CPUs where oneDNN runs AVX-512 kernels; the
// direct call elsewhere): a stride wider than k, row and column counts not
// multiples of the copy's 8 x 8 blocks, the edges m 16 and n 32 and just
// under them.
TEST(Sgemm, TransposedCopyOfB) {
  uint32_t seed = 300;
  struct Case {
    Shape s;
    int64_t ldb;
  };
  for (Case c : {Case{{16, 40, 1024}, 1024}, Case{{130, 100, 1000}, 1024},
                 Case{{33, 64, 2048}, 2048}, Case{{17, 37, 3072}, 3072},
                 Case{{15, 32, 1024}, 1024}, Case{{64, 31, 1024}, 1024}})
    for (float beta : {0.0f, 1.0f, 0.5f})
      check(c.s, false, true, beta, seed++, c.ldb);
}

// Products large enough for the team to share (Kernels.c's teamSplit): by
// columns where C has at least as many columns as rows, else by rows;
// extents that leave the last thread a short share (130 columns: a team
// of 2, at least 64 a thread, shares of 80 and 50; 4097 columns on 3
// threads: 1376, 1376, 1345), a product just over the size threshold
// (2^22 multiply-adds) and one just under it (oneDNN's threads: values
// only), A B^T with B's rows 1024 floats apart (a transposed copy first on
// AMD's AVX-512 CPUs). At least 32 columns: narrower A^T B takes another
// path.
TEST(Sgemm, SharedByTheTeam) {
  uint32_t seed = 400;
  for (Shape s : {Shape{300, 1000, 70}, Shape{1000, 300, 70}, Shape{130, 130, 300},
                  Shape{64, 4097, 17}, Shape{2000, 40, 60}, Shape{256, 1024, 512},
                  Shape{128, 256, 129}, Shape{128, 256, 127}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 0.5f})
          check(s, ta, tb, beta, seed++, 0, s.m * s.n * s.k >= (1 << 22));
  for (float beta : {0.0f, 1.0f})
    check(Shape{200, 300, 1000}, false, true, beta, seed++, 1024, true);
}

TEST(Sgemm, OtherShapes) {
  uint32_t seed = 100;
  for (Shape s : {Shape{300, 4, 300}, Shape{260, 28, 270}, Shape{64, 64, 64}, Shape{33, 100, 17},
                  Shape{512, 1, 256}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 1.0f})
          check(s, ta, tb, beta, seed++);
}

} // namespace
