//===- HyperWriteProjectTest.cpp - rewire_hyper_write_project vs float64 --===//
//
// An mHC stream write and the coefficient projection of the written stream
// in one pass (runtime/HyperKernels.c): X'_i = sum_j res_ij X_j + post_i u,
// p = X' . W over each token's streams flattened, r = 1/sqrt(mean(X'^2) +
// eps), against a float64 reference on random inputs: the 2-layer GPT's
// shape (512 tokens, n 4, d 768, k 24), token counts that are not a multiple
// of the kernel's token group, K not a multiple of a vector and k not of
// its column block (the tails), static post and res (token stride 0),
// padded and gapped stream rows (the strided write), a transposed W, W in
// 2 or 3 column blocks (an mHC site's three maps' weights), one
// coefficient; both paths (the AVX-512 projection where the CPU has it, and
// the rows followed by rewire_sgemm); the stream's start (no stream to mix:
// n copies of u); 1 and 2 threads bit for bit the same.
// Tolerances: X' within 2e-6 of the sum of |terms|; p within 2e-6 of
// sum |X'_q W_qj| computed from the kernel's own X'; r within 2e-6
// relative.
//
//===----------------------------------------------------------------------===//
#include "runtime/HyperKernels.h"
#include "test/unit/WeightBlocks.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <optional>
#include <random>
#include <vector>

namespace {

struct Case {
  int64_t tokens, n, d, k;
  int64_t rowPad;    ///< Floats after each token's block of the stream.
  int64_t streamGap; ///< Floats between a token's stream rows (0: contiguous).
  bool wTransposed;  ///< W read through a [k, K] buffer (strides 1, K).
  bool staticMix;    ///< post [n] and res [n, n] shared by every token.
  std::vector<int64_t> widths = {}; ///< W's column blocks (empty: one).
};

struct Inputs {
  std::vector<float> x, u, post, res;
  std::optional<rewire::test::WeightBlocks> w;
  int64_t xsT, xsN, posT, resT;
};

Inputs make(const Case &c, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Inputs in;
  auto fill = [&](std::vector<float> &v, size_t size) {
    v.resize(size);
    for (float &f : v)
      f = dist(rng);
  };
  int64_t K = c.n * c.d;
  in.xsN = c.d + c.streamGap;
  in.xsT = c.n * in.xsN + c.rowPad;
  fill(in.x, c.tokens * in.xsT + 1);
  fill(in.u, c.tokens * c.d);
  in.posT = c.staticMix ? 0 : c.n;
  in.resT = c.staticMix ? 0 : c.n * c.n;
  fill(in.post, c.staticMix ? c.n : c.tokens * c.n);
  fill(in.res, c.staticMix ? c.n * c.n : c.tokens * c.n * c.n);
  in.w.emplace(K, c.k, c.widths, c.wTransposed, rng);
  return in;
}

struct Outputs {
  std::vector<float> out, p, r;
};

Outputs run(const Case &c, const Inputs &in, int threads, int avx512) {
  int64_t K = c.n * c.d;
  Outputs o;
  o.out.assign(c.tokens * K + 4, NAN); // 2 before the offset, 2 past the end
  o.p.assign(c.tokens * c.k + 4, NAN);
  o.r.assign(c.tokens + 4, NAN);
  auto ptr = [](const std::vector<float> &v) { return (int64_t)(intptr_t)v.data(); };
  int64_t w[15];
  in.w->args(w);
  rewire_hyper_write_project_on(ptr(in.x), 1, in.xsT, in.xsN, 1, ptr(in.u), 0, c.d, 1,
                                ptr(in.post), 0, in.posT, 1, ptr(in.res), 0, in.resT, c.n, 1,
                                w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10],
                                w[11], w[12], w[13], w[14], ptr(o.out), 2, ptr(o.p), 2, ptr(o.r),
                                2, c.tokens, c.n, c.d, c.k, 1e-6f, threads, avx512);
  return o;
}

bool hasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

void check(const Case &c, int avx512) {
  if (avx512 && !hasAvx512())
    GTEST_SKIP() << "this CPU has no AVX-512: its path is the rows and rewire_sgemm";
  std::mt19937 rng(4321 + c.tokens * 5 + c.k);
  Inputs in = make(c, rng);
  int64_t K = c.n * c.d;
  Outputs one = run(c, in, 1, avx512), two = run(c, in, 2, avx512);
  ASSERT_EQ(0, std::memcmp(one.out.data(), two.out.data(), one.out.size() * sizeof(float)))
      << "X' differs between 1 and 2 threads";
  ASSERT_EQ(0, std::memcmp(one.r.data(), two.r.data(), one.r.size() * sizeof(float)))
      << "r differs between 1 and 2 threads";
  if (avx512) // rewire_sgemm's sums need not be the same on 1 and 2 threads
    ASSERT_EQ(0, std::memcmp(one.p.data(), two.p.data(), one.p.size() * sizeof(float)))
        << "p differs between 1 and 2 threads";
  for (int64_t t = 0; t < c.tokens; ++t) {
    const float *xt = in.x.data() + 1 + t * in.xsT;
    double ss = 0;
    for (int64_t i = 0; i < c.n; ++i)
      for (int64_t col = 0; col < c.d; ++col) {
        double post = in.post[t * in.posT + i], term = post * in.u[t * c.d + col];
        double want = term, mag = std::fabs(term);
        for (int64_t j = 0; j < c.n; ++j) {
          term = (double)in.res[t * in.resT + i * c.n + j] * xt[j * in.xsN + col];
          want += term;
          mag += std::fabs(term);
        }
        ss += want * want;
        ASSERT_NEAR(one.out[2 + t * K + i * c.d + col], want, 2e-6 * mag + 1e-30)
            << "X'[" << t << ", " << i << ", " << col << "]";
      }
    double r = 1.0 / std::sqrt(ss / (double)K + 1e-6);
    ASSERT_NEAR(one.r[2 + t], r, 2e-6 * r) << "r[" << t << "]";
    for (int64_t j = 0; j < c.k; ++j) {
      double want = 0, mag = 0;
      for (int64_t q = 0; q < K; ++q) {
        double term = (double)one.out[2 + t * K + q] * in.w->at(q, j);
        want += term;
        mag += std::fabs(term);
      }
      ASSERT_NEAR(one.p[2 + t * c.k + j], want, 2e-6 * mag + 1e-30) << "p[" << t << ", " << j << "]";
    }
  }
  for (const std::vector<float> *v : {&one.out, &one.p, &one.r})
    EXPECT_TRUE(std::isnan((*v)[0]) && std::isnan((*v)[1]) && std::isnan((*v)[v->size() - 2]) &&
                std::isnan(v->back()))
        << "wrote outside its buffer";
}

const Case kCases[] = {
    {512, 4, 768, 24, 0, 0, false, false}, // the 2-layer GPT
    {37, 3, 50, 15, 0, 0, false, false},   // odd tokens, K and k tails
    {20, 4, 64, 24, 5, 0, true, false},    // padded rows, transposed W
    {9, 2, 40, 8, 3, 2, false, true},      // gaps between streams, static mix
    {1, 1, 16, 1, 0, 0, false, false},     // one token, one coefficient
    {17, 8, 96, 80, 0, 0, false, false},   // many streams and coefficients
    {512, 4, 768, 24, 0, 0, false, false, {4, 4, 16}}, // the GPT's 3 maps, 3 blocks
    {37, 3, 50, 15, 0, 0, true, false, {9, 6}},         // 2 transposed blocks, tails
};

class HyperWriteProject : public testing::TestWithParam<int> {};

TEST_P(HyperWriteProject, GptShape) { check(kCases[0], GetParam()); }
TEST_P(HyperWriteProject, OddTokensAndTails) { check(kCases[1], GetParam()); }
TEST_P(HyperWriteProject, PaddedRowsTransposedW) { check(kCases[2], GetParam()); }
TEST_P(HyperWriteProject, GapsStaticMix) { check(kCases[3], GetParam()); }
TEST_P(HyperWriteProject, OneTokenOneCoefficient) { check(kCases[4], GetParam()); }
TEST_P(HyperWriteProject, ManyStreamsAndCoefficients) { check(kCases[5], GetParam()); }
TEST_P(HyperWriteProject, ThreeBlocksGptShape) { check(kCases[6], GetParam()); }
TEST_P(HyperWriteProject, TwoBlocksTransposedTails) { check(kCases[7], GetParam()); }

INSTANTIATE_TEST_SUITE_P(Paths, HyperWriteProject, testing::Values(1, 0),
                         [](const testing::TestParamInfo<int> &info) {
                           return info.param ? "Avx512" : "RowsThenSgemm";
                         });

// The stream's start (no x: n copies of u), on both paths.
TEST(HyperWriteProjectEdges, StreamStart) {
  const int64_t tokens = 13, n = 4, d = 48, k = 24, K = n * d;
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> u(tokens * d), w(K * k), none(1, NAN);
  for (float &f : u)
    f = dist(rng);
  for (float &f : w)
    f = dist(rng);
  auto ptr = [](const std::vector<float> &v) { return (int64_t)(intptr_t)v.data(); };
  for (int avx512 : {0, 1}) {
    if (avx512 && !hasAvx512())
      continue;
    std::vector<float> out(tokens * K), p(tokens * k), r(tokens);
    rewire_hyper_write_project_on(0, 0, 0, 0, 0, ptr(u), 0, d, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, ptr(w),
                                  0, k, 1, k, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, ptr(out), 0, ptr(p),
                                  0, ptr(r), 0, tokens, n, d, k, 1e-6f, 2, avx512);
    for (int64_t t = 0; t < tokens; ++t) {
      double ss = 0;
      for (int64_t c = 0; c < d; ++c)
        ss += n * (double)u[t * d + c] * u[t * d + c];
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < d; ++c)
          ASSERT_EQ(out[t * K + i * d + c], u[t * d + c]) << "X'[" << t << ", " << i << ", " << c << "]";
      double want = 1.0 / std::sqrt(ss / (double)K + 1e-6);
      ASSERT_NEAR(r[t], want, 2e-6 * want) << "r[" << t << "]";
      for (int64_t j = 0; j < k; ++j) {
        double v = 0, mag = 0;
        for (int64_t q = 0; q < K; ++q) {
          v += (double)u[t * d + q % d] * w[q * k + j];
          mag += std::fabs((double)u[t * d + q % d] * w[q * k + j]);
        }
        ASSERT_NEAR(p[t * k + j], v, 2e-6 * mag) << "p[" << t << ", " << j << "] on path " << avx512;
      }
    }
  }
}

// No tokens: nothing is written.
TEST(HyperWriteProjectEdges, NoTokens) {
  std::vector<float> w(8 * 3, 1.0f), none(4, NAN);
  auto ptr = [](const std::vector<float> &v) { return (int64_t)(intptr_t)v.data(); };
  rewire_hyper_write_project(ptr(none), 0, 8, 4, 1, ptr(none), 0, 4, 1, ptr(none), 0, 2, 1,
                             ptr(none), 0, 4, 2, 1, ptr(w), 0, 3, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                             0, ptr(none), 0, ptr(none), 0, ptr(none), 0, 0, 2, 4, 3, 1e-6f, 2);
  for (float v : none)
    EXPECT_TRUE(std::isnan(v));
}

} // namespace
