//===- HyperKernelTest.cpp - rewire_hyper_write_grad against float64 ------===//
//
// The fused reverse sums of a hyper stream's write (runtime/HyperKernels.c):
// du = sum_i post_i g_i, dpost_i = g_i . u, dres_ij = g_i . x_j per token,
// against a float64 reference on random inputs: per-token and static
// (token stride 0) post, contiguous operands and strided views (padded
// rows, a feature stride of 2: the kernel's scalar path), n from 1 to 6,
// d not a multiple of the vector width, 1 and 2 threads (bit for bit the
// same). The tolerance is fp32 round-off of the sum of |terms| (1e-6 of it).
// rewire_hyper_write_grad_sum likewise, with g its own output
// g_j = sum_i res_ij h_i + pre_j dh + e_j (checked too): per-token and
// static res and pre, without pre or e, more tokens than a thread's block.
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
  std::vector<float> g, du, dpost, dres;
};

/// rewire_hyper_write_grad_sum's terms of g (`on`): the next write's
/// adjoint h and mixing res, the read's pre and dh, the projections' e.
struct Sum {
  bool on = false, staticCoeffs = false, pre = true, e = true;
  View h, res, preV, dh, eV;
};

Result run(Case c, View &g, View &x, View &u, View &post, int threads, Sum &sum) {
  Result r;
  r.du.assign(c.tokens * c.d, NAN);
  r.dpost.assign(c.tokens * c.n, NAN);
  r.dres.assign(c.tokens * c.n * c.n, NAN);
  auto ptr = [](const std::vector<float> &v) { return (int64_t)(intptr_t)v.data(); };
  if (!sum.on) {
    rewire_hyper_write_grad(ptr(g.data), g.offset, g.sT, g.sN, g.sD, ptr(x.data), x.offset, x.sT,
                            x.sN, x.sD, ptr(u.data), u.offset, u.sT, u.sD, ptr(post.data),
                            post.offset, c.staticPost ? 0 : post.sT, post.sD, ptr(r.du), 0, c.d,
                            1, ptr(r.dpost), 0, c.n, 1, ptr(r.dres), 0, c.n * c.n, c.n, 1,
                            c.tokens, c.n, c.d, threads);
    return r;
  }
  r.g.assign(c.tokens * c.n * c.d + 5, NAN);
  int64_t coeffStride = [&](const View &v) { return sum.staticCoeffs ? 0 : v.sT; }(sum.res);
  View &h = sum.h, &res = sum.res, &pre = sum.preV, &dh = sum.dh, &e = sum.eV;
  rewire_hyper_write_grad_sum(
      ptr(h.data), h.offset, h.sT, h.sN, h.sD, ptr(res.data), res.offset, coeffStride, res.sN,
      res.sD, sum.pre ? ptr(pre.data) : 0, pre.offset, sum.staticCoeffs ? 0 : pre.sT, pre.sD,
      ptr(dh.data), dh.offset, dh.sT, dh.sD, sum.e ? ptr(e.data) : 0, e.offset, e.sT, e.sN, e.sD,
      ptr(r.g), 5, ptr(x.data), x.offset, x.sT, x.sN, x.sD, ptr(u.data), u.offset, u.sT, u.sD,
      ptr(post.data), post.offset, c.staticPost ? 0 : post.sT, post.sD, ptr(r.du), 0, c.d, 1,
      ptr(r.dpost), 0, c.n, 1, ptr(r.dres), 0, c.n * c.n, c.n, 1, c.tokens, c.n, c.d, threads);
  return r;
}

void expectClose(float got, double want, double scale, const char *what, int64_t t) {
  EXPECT_LE(std::fabs(got - want), 1e-6 * scale + 1e-7) << what << " of token " << t;
}

void check(Case c, uint32_t seed, Sum sum = {}) {
  std::mt19937 rng(seed);
  View g = makeView(c.tokens, c.n, c.d, c.featureStride, c.pad, rng);
  View x = makeView(c.tokens, c.n, c.d, c.featureStride, c.pad, rng);
  View u = makeView(c.tokens, 1, c.d, c.featureStride, c.pad, rng);
  // post as [tokens, n] rows (its "feature" is the stream).
  View post = makeView(c.staticPost ? 1 : c.tokens, 1, c.n, 1, c.pad, rng);
  if (sum.on) {
    int64_t coeffTokens = sum.staticCoeffs ? 1 : c.tokens;
    sum.h = makeView(c.tokens, c.n, c.d, c.featureStride, c.pad, rng);
    sum.res = makeView(coeffTokens, c.n, c.n, 1, c.pad, rng);
    sum.preV = makeView(coeffTokens, 1, c.n, 1, c.pad, rng);
    sum.dh = makeView(c.tokens, 1, c.d, c.featureStride, c.pad, rng);
    sum.eV = makeView(c.tokens, c.n, c.d, c.featureStride, c.pad, rng);
  }
  Result one = run(c, g, x, u, post, 1, sum);
  Result two = run(c, g, x, u, post, 2, sum);
  EXPECT_EQ(one.du, two.du);
  EXPECT_EQ(one.dpost, two.dpost);
  EXPECT_EQ(one.dres, two.dres);
  if (sum.on) {
    ASSERT_EQ(one.g.size(), two.g.size());
    for (size_t i = 0; i < one.g.size(); ++i) // NaN outside g's range on both
      EXPECT_TRUE(one.g[i] == two.g[i] || (std::isnan(one.g[i]) && std::isnan(two.g[i])));
  }
  // The adjoint the reductions read, in float64 (the sum's where fused).
  std::vector<double> ref(c.tokens * c.n * c.d);
  for (int64_t t = 0; t < c.tokens; ++t)
    for (int64_t j = 0; j < c.n; ++j)
      for (int64_t k = 0; k < c.d; ++k) {
        if (!sum.on) {
          ref[(t * c.n + j) * c.d + k] = g.at(t, j, k);
          continue;
        }
        int64_t ct = sum.staticCoeffs ? 0 : t;
        double want = 0, scale = 0;
        auto term = [&](double v) {
          want += v;
          scale += std::fabs(v);
        };
        for (int64_t i = 0; i < c.n; ++i)
          term((double)sum.res.at(ct, i, j) * sum.h.at(t, i, k));
        if (sum.pre)
          term((double)sum.preV.at(ct, 0, j) * sum.dh.at(t, 0, k));
        if (sum.e)
          term(sum.eV.at(t, j, k));
        ref[(t * c.n + j) * c.d + k] = want;
        expectClose(one.g[5 + (t * c.n + j) * c.d + k], want, scale, "g", t);
      }
  auto G = [&](int64_t t, int64_t i, int64_t k) { return ref[(t * c.n + i) * c.d + k]; };
  for (int64_t t = 0; t < c.tokens; ++t) {
    auto p = [&](int64_t i) -> double { return post.at(c.staticPost ? 0 : t, 0, i); };
    for (int64_t k = 0; k < c.d; ++k) {
      double want = 0, scale = 0;
      for (int64_t i = 0; i < c.n; ++i) {
        want += p(i) * G(t, i, k);
        scale += std::fabs(p(i) * G(t, i, k));
      }
      expectClose(one.du[t * c.d + k], want, scale, "du", t);
    }
    for (int64_t i = 0; i < c.n; ++i) {
      double want = 0, scale = 0;
      for (int64_t k = 0; k < c.d; ++k) {
        want += G(t, i, k) * u.at(t, 0, k);
        scale += std::fabs(G(t, i, k) * u.at(t, 0, k));
      }
      expectClose(one.dpost[t * c.n + i], want, scale, "dpost", t);
      for (int64_t j = 0; j < c.n; ++j) {
        double w = 0, s = 0;
        for (int64_t k = 0; k < c.d; ++k) {
          w += G(t, i, k) * x.at(t, j, k);
          s += std::fabs(G(t, i, k) * x.at(t, j, k));
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

Sum fused(bool staticCoeffs = false, bool pre = true, bool e = true) {
  Sum s;
  s.on = true;
  s.staticCoeffs = staticCoeffs;
  s.pre = pre;
  s.e = e;
  return s;
}

TEST(HyperWriteGradSum, PerToken) {
  check({77, 4, 768, false, 1, 0}, 11, fused()); // the GPT's rows; 3 blocks of tokens
  check({5, 4, 61, false, 1, 0}, 12, fused());
  check({9, 3, 100, false, 1, 0}, 13, fused()); // n != 4: the general row sum
  check({3, 1, 9, true, 1, 0}, 14, fused());
}

TEST(HyperWriteGradSum, StaticCoefficients) {
  check({16, 4, 64, true, 1, 0}, 15, fused(/*staticCoeffs=*/true));
  check({7, 2, 33, false, 1, 0}, 16, fused(true));
}

TEST(HyperWriteGradSum, OptionalTerms) {
  check({6, 4, 40, false, 1, 0}, 17, fused(false, /*pre=*/false));
  check({6, 4, 40, false, 1, 0}, 18, fused(false, true, /*e=*/false));
  check({6, 5, 40, false, 1, 0}, 19, fused(false, false, false));
}

TEST(HyperWriteGradSum, StridedViews) {
  check({6, 4, 40, false, 1, 7}, 20, fused()); // padded tokens, contiguous features
  check({6, 4, 40, false, 2, 3}, 21, fused()); // every other float: the scalar path
  check({4, 3, 17, true, 2, 0}, 22, fused(true, false));
}

} // namespace
