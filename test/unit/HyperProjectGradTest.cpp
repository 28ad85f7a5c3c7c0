//===- HyperProjectGradTest.cpp - rewire_hyper_project_grad vs float64 ----===//
//
// The reverse of an mHC site's coefficient projection
// (runtime/HyperKernels.c): dX = (r dz) W^T + s x, s = -(r^3 / K) dz . p,
// and dW = sum_t x_t^T (r_t dz_t), against a float64 reference on random
// inputs: the 2-layer GPT's shape (512 tokens, n 4, d 768, k 24), token
// counts that are not a multiple of the kernel's token block, K not a
// multiple of its column chunk (the scalar tail), padded token rows,
// a stream with gaps between its rows (the strided path), a transposed W
// view, W and dW in 2 or 3 column blocks (an mHC site's three maps' weights,
// each its own buffer), 1 and 2 threads (bit for bit the same). Tolerance:
// fp32 round-off of the sum of |terms| (2e-6 of it). Blocks whose columns
// do not add up to k end the call with a message (this kernel's and
// rewire_hyper_write_project's).
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
#include <string>
#include <vector>

namespace {

struct Case {
  int64_t tokens, n, d, k;
  int64_t rowPad;    ///< Floats after each token's block of the stream.
  int64_t streamGap; ///< Floats between a token's stream rows (0: contiguous).
  bool wTransposed;  ///< W read through a [k, K] buffer (strides 1, K).
  std::vector<int64_t> widths = {}; ///< W's column blocks (empty: one).
};

struct Inputs {
  std::vector<float> dz, p, r, x;
  std::optional<rewire::test::WeightBlocks> w;
  int64_t xsT, xsN;
};

Inputs make(const Case &c, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_real_distribution<float> pos(0.5f, 2.0f);
  Inputs in;
  int64_t K = c.n * c.d;
  auto fill = [&](std::vector<float> &v, size_t size) {
    v.resize(size);
    for (float &f : v)
      f = dist(rng);
  };
  fill(in.dz, c.tokens * c.k);
  fill(in.p, c.tokens * c.k);
  in.r.resize(c.tokens);
  for (float &f : in.r)
    f = pos(rng);
  in.xsN = c.d + c.streamGap;
  in.xsT = c.n * in.xsN + c.rowPad;
  fill(in.x, c.tokens * in.xsT + 1);
  in.w.emplace(K, c.k, c.widths, c.wTransposed, rng);
  return in;
}

/// dW's blocks, each dense [K, width] at offset 2.
void run(const Case &c, const Inputs &in, int threads, std::vector<float> &dx,
         std::vector<std::vector<float>> &dw) {
  int64_t K = c.n * c.d;
  const rewire::test::WeightBlocks &W = *in.w;
  dx.assign(c.tokens * K + 2, NAN);
  dw.clear();
  int64_t w[15], g[6] = {};
  W.args(w);
  for (size_t q = 0; q < W.widths.size(); ++q) {
    dw.emplace_back(K * W.widths[q] + 2, NAN);
    g[2 * q] = (int64_t)(intptr_t)dw.back().data();
    g[2 * q + 1] = 2;
  }
  auto ptr = [](const std::vector<float> &v) { return (int64_t)(intptr_t)v.data(); };
  rewire_hyper_project_grad(ptr(in.dz), 0, c.k, 1, ptr(in.p), 0, c.k, 1, ptr(in.r), 0, 1,
                            ptr(in.x), 1, in.xsT, in.xsN, 1, w[0], w[1], w[2], w[3], w[4], w[5],
                            w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13], w[14], ptr(dx),
                            2, g[0], g[1], g[2], g[3], g[4], g[5], c.tokens, c.n, c.d, c.k,
                            threads);
}

void check(const Case &c) {
  std::mt19937 rng(1234 + c.tokens * 7 + c.k);
  Inputs in = make(c, rng);
  int64_t K = c.n * c.d;
  std::vector<float> dx1, dx2;
  std::vector<std::vector<float>> dw1, dw2;
  run(c, in, 1, dx1, dw1);
  run(c, in, 2, dx2, dw2);
  ASSERT_EQ(0, std::memcmp(dx1.data(), dx2.data(), dx1.size() * sizeof(float)))
      << "dX differs between 1 and 2 threads";
  for (size_t q = 0; q < dw1.size(); ++q)
    ASSERT_EQ(0, std::memcmp(dw1[q].data(), dw2[q].data(), dw1[q].size() * sizeof(float)))
        << "dW's block " << q << " differs between 1 and 2 threads";
  const rewire::test::WeightBlocks &blocks = *in.w;
  auto X = [&](int64_t t, int64_t col) {
    return (double)in.x[1 + t * in.xsT + (col / c.d) * in.xsN + col % c.d];
  };
  auto W = [&](int64_t col, int64_t j) { return blocks.at(col, j); };
  for (int64_t t = 0; t < c.tokens; ++t) {
    double r = in.r[t], dot = 0;
    for (int64_t j = 0; j < c.k; ++j)
      dot += (double)in.dz[t * c.k + j] * in.p[t * c.k + j];
    double s = -r * r * r / (double)K * dot;
    for (int64_t col = 0; col < K; ++col) {
      double want = s * X(t, col), mag = std::fabs(want);
      for (int64_t j = 0; j < c.k; ++j) {
        double term = r * in.dz[t * c.k + j] * W(col, j);
        want += term;
        mag += std::fabs(term);
      }
      ASSERT_NEAR(dx1[2 + t * K + col], want, 2e-6 * mag + 1e-30)
          << "dX[" << t << ", " << col << "]";
    }
  }
  for (int64_t col = 0; col < K; ++col)
    for (int64_t j = 0; j < c.k; ++j) {
      double want = 0, mag = 0;
      for (int64_t t = 0; t < c.tokens; ++t) {
        double term = X(t, col) * in.r[t] * in.dz[t * c.k + j];
        want += term;
        mag += std::fabs(term);
      }
      size_t q = blocks.block(j);
      ASSERT_NEAR(dw1[q][2 + col * blocks.widths[q] + j - blocks.first[q]], want,
                  2e-6 * mag + 1e-30)
          << "dW[" << col << ", " << j << "]";
    }
  EXPECT_TRUE(std::isnan(dx1[0]) && std::isnan(dx1[1])) << "wrote dX before its offset";
  for (const std::vector<float> &block : dw1)
    EXPECT_TRUE(std::isnan(block[0]) && std::isnan(block[1])) << "wrote dW before its offset";
}

TEST(HyperProjectGrad, GptShape) { check({512, 4, 768, 24, 0, 0, false}); }
TEST(HyperProjectGrad, OddTokensAndTail) { check({37, 3, 50, 15, 0, 0, false}); }
TEST(HyperProjectGrad, PaddedRowsTransposedW) { check({20, 4, 64, 24, 5, 0, true}); }
TEST(HyperProjectGrad, GapsBetweenStreams) { check({9, 2, 40, 8, 3, 2, false}); }
TEST(HyperProjectGrad, OneToken) { check({1, 1, 16, 1, 0, 0, false}); }
TEST(HyperProjectGrad, ManyCoefficients) { check({17, 8, 96, 80, 0, 0, false}); }
TEST(HyperProjectGrad, ThreeBlocksGptShape) { check({512, 4, 768, 24, 0, 0, false, {4, 4, 16}}); }
TEST(HyperProjectGrad, TwoBlocksTransposedTails) { check({37, 3, 50, 15, 2, 0, true, {9, 6}}); }
TEST(HyperProjectGrad, BlocksThroughGaps) { check({9, 2, 40, 8, 3, 2, false, {1, 3, 4}}); }

} // namespace

namespace {

// No tokens: dW is an empty sum (zeros), dX has no elements.
TEST(HyperProjectGrad, NoTokens) {
  std::vector<float> w(8 * 3, 1.0f), dw(8 * 3, NAN), none(1, 0.0f);
  auto ptr = [](const std::vector<float> &v) { return (int64_t)(intptr_t)v.data(); };
  rewire_hyper_project_grad(ptr(none), 0, 3, 1, ptr(none), 0, 3, 1, ptr(none), 0, 1, ptr(none), 0,
                            8, 4, 1, ptr(w), 0, 3, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, ptr(none),
                            0, ptr(dw), 0, 0, 0, 0, 0, 0, 2, 4, 3, 2);
  for (float v : dw)
    EXPECT_EQ(v, 0.0f);
}

} // namespace

extern "C" int rewire_artifact_call(void (*entry)(void **), void **buffers, char *message,
                                    int64_t capacity);

namespace {

// W's blocks must make its k columns: a call whose blocks add up to fewer
// (or more) ends with the kernel's message (the artifact's error path),
// before anything is written.
void projectBadBlocks(void **buffers) {
  auto ptr = [&](int i) { return (int64_t)(intptr_t)buffers[i]; };
  // k = 8 but the blocks hold 4 + 3 columns.
  rewire_hyper_project_grad(ptr(0), 0, 8, 1, ptr(0), 0, 8, 1, ptr(0), 0, 1, ptr(1), 0, 32, 16, 1,
                            ptr(2), 0, 4, 1, 4, ptr(2), 0, 3, 1, 3, 0, 0, 0, 0, 0, ptr(3), 0,
                            ptr(4), 0, ptr(4), 0, 0, 0, 4, 2, 16, 8, 2);
}

void writeProjectBadBlocks(void **buffers) {
  auto ptr = [&](int i) { return (int64_t)(intptr_t)buffers[i]; };
  // k = 4 but the blocks hold 4 + 2 columns.
  rewire_hyper_write_project(0, 0, 0, 0, 0, ptr(1), 0, 16, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, ptr(2),
                             0, 4, 1, 4, ptr(2), 0, 2, 1, 2, 0, 0, 0, 0, 0, ptr(3), 0, ptr(4), 0,
                             ptr(4), 0, 4, 2, 16, 4, 1e-6f, 2);
}

TEST(HyperKernelBlocks, BlocksThatDoNotMakeKEndTheCall) {
  std::vector<float> small(64, 1.0f), stream(4 * 32, 1.0f), w(32 * 8, 1.0f), out(4 * 32, NAN),
      grads(32 * 8, NAN);
  void *buffers[] = {small.data(), stream.data(), w.data(), out.data(), grads.data()};
  char message[256] = {};
  EXPECT_EQ(1, rewire_artifact_call(projectBadBlocks, buffers, message, sizeof(message)));
  EXPECT_NE(std::string(message).find("do not make its k columns"), std::string::npos) << message;
  for (float v : out)
    EXPECT_TRUE(std::isnan(v));
  message[0] = 0;
  EXPECT_EQ(1, rewire_artifact_call(writeProjectBadBlocks, buffers, message, sizeof(message)));
  EXPECT_NE(std::string(message).find("do not make its k columns"), std::string::npos) << message;
  for (float v : out)
    EXPECT_TRUE(std::isnan(v));
}

} // namespace
