//===- HyperKernelTest.cpp - rewire_hyper_write_grad against float64 ------===//
//
// The fused reverse sums of a hyper stream's write (runtime/HyperKernels.c):
// du = sum_i post_i g_i, dpost_i = g_i . u, dres_ij = g_i . x_j per token,
// against a float64 reference on random inputs: per-token and static
// (token stride 0) post, contiguous operands and strided views (padded
// rows, a feature stride of 2: the kernel's scalar path), n from 1 to 6,
// d not a multiple of the vector width, 1 and 2 threads (bit for bit the
// same). The tolerance is fp32 round-off of the sum of |terms| (1e-6 of it).
//
//===----------------------------------------------------------------------===//
#include "runtime/HyperKernels.h"

#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace {

struct Case {
  int64_t tokens, n, d;
  bool staticPost;
  int64_t featureStride; ///< 1: contiguous rows; 2: every other float.
  int64_t pad;           ///< Extra floats after each token's block.
};

/// A [tokens, rows, d] view: strides in floats, the buffer it lives in.
struct View {
  int64_t sT, sN, sD, offset;
  std::vector<float> data;
  float &at(int64_t t, int64_t i, int64_t k) { return data[offset + t * sT + i * sN + k * sD]; }
};

View makeView(int64_t tokens, int64_t rows, int64_t d, int64_t featureStride, int64_t pad,
              std::mt19937 &rng) {
  View v;
  v.sD = featureStride;
  v.sN = d * featureStride;
  v.sT = rows * v.sN + pad;
  v.offset = 3;
  v.data.resize(v.offset + tokens * v.sT + 8);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float &f : v.data)
    f = dist(rng);
  return v;
}

struct Result {
  std::vector<float> du, dpost, dres;
};

Result run(Case c, View &g, View &x, View &u, View &post, int threads) {
  Result r;
  r.du.assign(c.tokens * c.d, NAN);
  r.dpost.assign(c.tokens * c.n, NAN);
  r.dres.assign(c.tokens * c.n * c.n, NAN);
  auto ptr = [](const std::vector<float> &v) { return (int64_t)(intptr_t)v.data(); };
  rewire_hyper_write_grad(ptr(g.data), g.offset, g.sT, g.sN, g.sD, ptr(x.data), x.offset, x.sT,
                          x.sN, x.sD, ptr(u.data), u.offset, u.sT, u.sD, ptr(post.data),
                          post.offset, c.staticPost ? 0 : post.sT, post.sD, ptr(r.du), 0, c.d, 1,
                          ptr(r.dpost), 0, c.n, 1, ptr(r.dres), 0, c.n * c.n, c.n, 1, c.tokens,
                          c.n, c.d, threads);
  return r;
}

void expectClose(float got, double want, double scale, const char *what, int64_t t) {
  EXPECT_LE(std::fabs(got - want), 1e-6 * scale + 1e-7) << what << " of token " << t;
}

void check(Case c, uint32_t seed) {
  std::mt19937 rng(seed);
  View g = makeView(c.tokens, c.n, c.d, c.featureStride, c.pad, rng);
  View x = makeView(c.tokens, c.n, c.d, c.featureStride, c.pad, rng);
  View u = makeView(c.tokens, 1, c.d, c.featureStride, c.pad, rng);
  // post as [tokens, n] rows (its "feature" is the stream).
  View post = makeView(c.staticPost ? 1 : c.tokens, 1, c.n, 1, c.pad, rng);
  Result one = run(c, g, x, u, post, 1);
  Result two = run(c, g, x, u, post, 2);
  EXPECT_EQ(one.du, two.du);
  EXPECT_EQ(one.dpost, two.dpost);
  EXPECT_EQ(one.dres, two.dres);
  for (int64_t t = 0; t < c.tokens; ++t) {
    auto p = [&](int64_t i) -> double { return post.at(c.staticPost ? 0 : t, 0, i); };
    for (int64_t k = 0; k < c.d; ++k) {
      double want = 0, scale = 0;
      for (int64_t i = 0; i < c.n; ++i) {
        want += p(i) * g.at(t, i, k);
        scale += std::fabs(p(i) * g.at(t, i, k));
      }
      expectClose(one.du[t * c.d + k], want, scale, "du", t);
    }
    for (int64_t i = 0; i < c.n; ++i) {
      double want = 0, scale = 0;
      for (int64_t k = 0; k < c.d; ++k) {
        want += (double)g.at(t, i, k) * u.at(t, 0, k);
        scale += std::fabs((double)g.at(t, i, k) * u.at(t, 0, k));
      }
      expectClose(one.dpost[t * c.n + i], want, scale, "dpost", t);
      for (int64_t j = 0; j < c.n; ++j) {
        double w = 0, s = 0;
        for (int64_t k = 0; k < c.d; ++k) {
          w += (double)g.at(t, i, k) * x.at(t, j, k);
          s += std::fabs((double)g.at(t, i, k) * x.at(t, j, k));
        }
        expectClose(one.dres[(t * c.n + i) * c.n + j], w, s, "dres", t);
      }
    }
  }
}

TEST(HyperWriteGrad, PerTokenContiguous) {
  check({37, 4, 768, false, 1, 0}, 1);
  check({5, 4, 61, false, 1, 0}, 2);
  check({3, 1, 9, false, 1, 0}, 3);
  check({9, 6, 100, false, 1, 0}, 4);
}

TEST(HyperWriteGrad, StaticPost) {
  check({16, 4, 64, true, 1, 0}, 5);
  check({7, 2, 33, true, 1, 0}, 6);
}

TEST(HyperWriteGrad, StridedViews) {
  check({6, 4, 40, false, 1, 7}, 7);  // padded tokens, contiguous features
  check({6, 4, 40, false, 2, 3}, 8);  // every other float: the scalar path
  check({4, 3, 17, true, 2, 0}, 9);
}

TEST(HyperWriteGrad, OneToken) { check({1, 4, 768, false, 1, 0}, 10); }

} // namespace
