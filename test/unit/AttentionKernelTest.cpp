//===- AttentionKernelTest.cpp - rewire_attention under a mask held as data =//
//
// The fused attention kernels (runtime/Attention.c) with a causal mask held
// as data, as exporters write it (a bias of 0 and -inf or finfo(float32).min,
// broadcast over batch and heads), against the same kernels with the causal
// flag: the same bits, forward and backward, so the bias computes the same
// tiles and columns. A NaN planted in a key shows that the masked scores are
// not computed (the rows before that key stay finite, as with `causal`). A
// per-batch padding bias that masks every key of a row gives that row the
// uniform weights of the expanded softmax (float64 reference, 1e-5). A
// padding mask broadcast over the queries gives the bits of the same mask
// materialized per query. The forward against float64 on strided layouts,
// unfilled blocks and unlike key and value widths. The forward's two paths
// (AVX-512's transposed blocks, the tiles other CPUs run) each pass the
// tests that reach them without a bias to add.
//
//===----------------------------------------------------------------------===//
#include <cmath>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" {
void rewire_attention(int64_t q, int64_t qOff, int64_t qsB, int64_t qsH, int64_t qsT, int64_t qsD,
                      int64_t k, int64_t kOff, int64_t ksB, int64_t ksH, int64_t ksT, int64_t ksD,
                      int64_t v, int64_t vOff, int64_t vsB, int64_t vsH, int64_t vsT, int64_t vsD,
                      int64_t bias, int64_t mOff, int64_t msB, int64_t msH, int64_t msT,
                      int64_t msK, int64_t o, int64_t oOff, int64_t osB, int64_t osH, int64_t osT,
                      int64_t osD, int64_t batch, int64_t heads, int64_t tq, int64_t tk, int64_t d,
                      int64_t dv, int64_t flags, int64_t threads, float scale);
void rewire_attention_backward(
    int64_t q, int64_t qOff, int64_t qsB, int64_t qsH, int64_t qsT, int64_t qsD, int64_t k,
    int64_t kOff, int64_t ksB, int64_t ksH, int64_t ksT, int64_t ksD, int64_t v, int64_t vOff,
    int64_t vsB, int64_t vsH, int64_t vsT, int64_t vsD, int64_t bias, int64_t mOff, int64_t msB,
    int64_t msH, int64_t msT, int64_t msK, int64_t o, int64_t oOff, int64_t osB, int64_t osH,
    int64_t osT, int64_t osD, int64_t dov, int64_t doOff, int64_t dsB, int64_t dsH, int64_t dsT,
    int64_t dsD, int64_t dq, int64_t dqOff, int64_t dqsB, int64_t dqsH, int64_t dqsT,
    int64_t dqsD, int64_t dk, int64_t dkOff, int64_t dksB, int64_t dksH, int64_t dksT,
    int64_t dksD, int64_t dvv, int64_t dvOff, int64_t dvsB, int64_t dvsH, int64_t dvsT,
    int64_t dvsD, int64_t batch, int64_t heads, int64_t tq, int64_t tk, int64_t d, int64_t dv,
    int64_t flags, int64_t threads, float scale);
}

namespace {

constexpr int64_t B = 2, H = 3, D = 16;

int64_t ptr(const std::vector<float> &v) { return (int64_t)(intptr_t)v.data(); }

/// q, k, v, do: [B, H, T, D] contiguous, random.
struct Inputs {
  int64_t tq, tk;
  std::vector<float> q, k, v, dO;
};

Inputs makeInputs(int64_t tq, int64_t tk, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto fill = [&](int64_t t) {
    std::vector<float> x(B * H * t * D);
    for (float &f : x)
      f = dist(rng);
    return x;
  };
  Inputs in{tq, tk, fill(tq), fill(tk), fill(tk), fill(tq)};
  return in;
}

/// [tq, tk]: 0 where key j <= i + tk - tq, `masked` elsewhere.
std::vector<float> causalBias(int64_t tq, int64_t tk, float masked) {
  std::vector<float> m(tq * tk);
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t j = 0; j < tk; ++j)
      m[i * tk + j] = j <= i + tk - tq ? 0.0f : masked;
  return m;
}

/// Strides of a bias over [B, H, Tq, Tk] (heads always broadcast).
struct BiasStrides {
  int64_t b, t;
};

/// The forward with a bias (none: nullptr), `causal` as flag.
std::vector<float> forward(const Inputs &in, const std::vector<float> *bias, BiasStrides ms,
                           bool causal) {
  int64_t tq = in.tq, tk = in.tk;
  std::vector<float> o(B * H * tq * D, -7.0f);
  rewire_attention(ptr(in.q), 0, H * tq * D, tq * D, D, 1, ptr(in.k), 0, H * tk * D, tk * D, D, 1,
                   ptr(in.v), 0, H * tk * D, tk * D, D, 1, bias ? ptr(*bias) : 0, 0, ms.b, 0,
                   ms.t, 1, ptr(o), 0, H * tq * D, tq * D, D, 1, B, H, tq, tk, D, D,
                   causal ? 1 : 0, 2, 0.25f);
  return o;
}

struct Grads {
  std::vector<float> dq, dk, dv;
};

Grads backward(const Inputs &in, const std::vector<float> &o, const std::vector<float> *bias,
               BiasStrides ms, bool causal) {
  int64_t tq = in.tq, tk = in.tk;
  Grads g{std::vector<float>(B * H * tq * D), std::vector<float>(B * H * tk * D),
          std::vector<float>(B * H * tk * D)};
  rewire_attention_backward(
      ptr(in.q), 0, H * tq * D, tq * D, D, 1, ptr(in.k), 0, H * tk * D, tk * D, D, 1, ptr(in.v), 0,
      H * tk * D, tk * D, D, 1, bias ? ptr(*bias) : 0, 0, ms.b, 0, ms.t, 1, ptr(o), 0, H * tq * D,
      tq * D, D, 1, ptr(in.dO), 0, H * tq * D, tq * D, D, 1, ptr(g.dq), 0, H * tq * D, tq * D, D, 1,
      ptr(g.dk), 0, H * tk * D, tk * D, D, 1, ptr(g.dv), 0, H * tk * D, tk * D, D, 1, B, H, tq, tk,
      D, D, causal ? 1 : 0, 2, 0.25f);
  return g;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Runs `body` on the kernel's transposed blocks (where the CPU has
/// AVX-512F) and on its tiles (what other CPUs run: REWIRE_ATTENTION_TILES).
template <typename Body> void onBothPaths(Body body) {
  for (bool tiles : {false, true}) {
    SCOPED_TRACE(tiles ? "tiles" : "transposed blocks where the CPU has them");
    if (tiles)
      setenv("REWIRE_ATTENTION_TILES", "1", 1);
    body();
    unsetenv("REWIRE_ATTENTION_TILES");
  }
}

TEST(AttentionKernel, CausalBiasIsTheCausalFlag) {
  onBothPaths([] {
    const float lowest = std::numeric_limits<float>::lowest();
    for (auto [tq, tk] : {std::pair<int64_t, int64_t>{150, 150}, {1, 1}, {64, 64}, {100, 170}}) {
      for (float masked : {-INFINITY, lowest}) {
        SCOPED_TRACE(testing::Message() << "Tq " << tq << " Tk " << tk << " masked " << masked);
        Inputs in = makeInputs(tq, tk, 7);
        std::vector<float> bias = causalBias(tq, tk, masked);
        BiasStrides shared{0, tk};
        std::vector<float> flag = forward(in, nullptr, shared, true);
        std::vector<float> data = forward(in, &bias, shared, false);
        EXPECT_TRUE(sameBits(flag, data));
        Grads gFlag = backward(in, flag, nullptr, shared, true);
        Grads gData = backward(in, data, &bias, shared, false);
        EXPECT_TRUE(sameBits(gFlag.dq, gData.dq));
        EXPECT_TRUE(sameBits(gFlag.dk, gData.dk));
        EXPECT_TRUE(sameBits(gFlag.dv, gData.dv));
      }
    }
  });
}

TEST(AttentionKernel, MaskedScoresAreNotComputed) {
  onBothPaths([] {
    const int64_t t = 150, nanKey = 120;
    Inputs in = makeInputs(t, t, 11);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        in.k[((b * H + h) * t + nanKey) * D + 3] = NAN;
    std::vector<float> bias = causalBias(t, t, -INFINITY);
    std::vector<float> data = forward(in, &bias, {0, t}, false);
    EXPECT_TRUE(sameBits(forward(in, nullptr, {0, t}, true), data));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < t; ++i)
          for (int64_t c = 0; c < D; ++c)
            ASSERT_EQ(std::isnan(data[((b * H + h) * t + i) * D + c]), i >= nanKey)
                << "b " << b << " h " << h << " row " << i;
  });
}

TEST(AttentionKernel, FullyMaskedRowWeighsEveryKey) {
  // Batch 1's rows 0..9 mask every key with finfo.min (uniform weights in
  // float32's softmax); the rest is causal. Reference in float64.
  const int64_t t = 140;
  const float lowest = std::numeric_limits<float>::lowest();
  Inputs in = makeInputs(t, t, 13);
  std::vector<float> bias(B * t * t);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j)
        bias[(b * t + i) * t + j] = (b == 1 && i < 10) || j > i ? lowest : 0.0f;
  std::vector<float> o = forward(in, &bias, {t * t, t}, false);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < t; ++i) {
        const float *q = &in.q[((b * H + h) * t + i) * D];
        bool none = b == 1 && i < 10;
        std::vector<double> w(t, 0.0);
        double top = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < t; ++j) {
          if (!none && j > i)
            continue;
          double s = 0.0;
          for (int64_t c = 0; c < D; ++c)
            s += (double)q[c] * in.k[((b * H + h) * t + j) * D + c];
          w[j] = none ? 0.0 : 0.25 * s;
          top = std::max(top, w[j]);
        }
        for (int64_t j = 0; j < t; ++j) {
          w[j] = (!none && j > i) ? 0.0 : std::exp(w[j] - top);
          sum += w[j];
        }
        for (int64_t c = 0; c < D; ++c) {
          double want = 0.0;
          for (int64_t j = 0; j < t; ++j)
            want += w[j] / sum * in.v[((b * H + h) * t + j) * D + c];
          ASSERT_NEAR(o[((b * H + h) * t + i) * D + c], want, 1e-5)
              << "b " << b << " h " << h << " row " << i << " col " << c;
        }
      }
}

TEST(AttentionKernel, PaddingMaskBroadcastOverQueries) {
  // A [B, 1, 1, Tk] padding mask (query stride 0: scanned once per batch)
  // against the same mask materialized per query: the same bits, forward
  // and backward. Batch 0 masks its last 30 keys, batch 1 every key.
  const int64_t t = 130;
  const float lowest = std::numeric_limits<float>::lowest();
  Inputs in = makeInputs(t, t, 17);
  std::vector<float> row(B * t), full(B * t * t);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < t; ++j)
      row[b * t + j] = b == 1 || j >= t - 30 ? lowest : 0.0f;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j)
        full[(b * t + i) * t + j] = row[b * t + j];
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    std::vector<float> once = forward(in, &row, {t, 0}, causal);
    std::vector<float> each = forward(in, &full, {t * t, t}, causal);
    EXPECT_TRUE(sameBits(once, each));
    Grads gOnce = backward(in, once, &row, {t, 0}, causal);
    Grads gEach = backward(in, each, &full, {t * t, t}, causal);
    EXPECT_TRUE(sameBits(gOnce.dq, gEach.dq));
    EXPECT_TRUE(sameBits(gOnce.dk, gEach.dk));
    EXPECT_TRUE(sameBits(gOnce.dv, gEach.dv));
  }
}

/// One operand of AgainstFloat64: [nb, nh, t, w] at `data` through strides.
struct View {
  std::vector<float> data;
  int64_t sB, sH, sT, sD;
  float at(int64_t b, int64_t h, int64_t t, int64_t c) const {
    return data[b * sB + h * sH + t * sT + c * sD];
  }
};

/// [nb, nh, t, w] random, laid out as `order` says: "bthd" interleaves the
/// heads of a token (a QKV projection's output, row stride `pad` past
/// nh * w), "bhdt" puts the tokens innermost (k^T read as keys).
View makeView(int64_t nb, int64_t nh, int64_t t, int64_t w, const char *order, int64_t pad,
              std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  View v;
  if (std::string(order) == "bthd") {
    int64_t row = nh * w + pad;
    v = {std::vector<float>(nb * t * row), t * row, w, row, 1};
  } else {
    v = {std::vector<float>(nb * nh * w * t), nh * w * t, w * t, 1, t};
  }
  for (float &f : v.data)
    f = dist(rng);
  return v;
}

// The forward against float64 on the layouts and sizes the kernel's paths
// meet: query blocks not filled (Tq 1, 63, 65, 130), more keys than
// queries (causal with a shift), a key count past one key tile (128), heads
// interleaved in a token's row as a QKV projection leaves them, keys with
// the tokens innermost, a value width unlike the key width, and a padding
// mask of 0 and finfo(float32).min (the kernel reads a bias of 0 on the
// kept keys as limits). Tolerance 2e-6 plus 1e-5 of the output's scale.
void againstFloat64() {
  const float lowest = std::numeric_limits<float>::lowest();
  struct Case {
    int64_t nb, nh, tq, tk, d, dv;
    bool causal, padding;
  };
  std::mt19937 rng(23);
  for (Case c : {Case{1, 2, 130, 130, 64, 64, true, false}, Case{2, 3, 65, 300, 24, 40, true, true},
                 Case{1, 1, 1, 1, 64, 64, true, false}, Case{2, 2, 63, 63, 80, 17, false, true},
                 Case{1, 3, 200, 200, 1, 5, true, true}, Case{2, 1, 130, 257, 16, 16, false, false}}) {
    SCOPED_TRACE(testing::Message() << "B " << c.nb << " H " << c.nh << " Tq " << c.tq << " Tk "
                                    << c.tk << " D " << c.d << " Dv " << c.dv << " causal "
                                    << c.causal << " padding " << c.padding);
    View q = makeView(c.nb, c.nh, c.tq, c.d, "bthd", 7, rng);
    View k = makeView(c.nb, c.nh, c.tk, c.d, c.d % 2 ? "bthd" : "bhdt", 3, rng);
    View v = makeView(c.nb, c.nh, c.tk, c.dv, "bthd", 0, rng);
    View o = makeView(c.nb, c.nh, c.tq, c.dv, "bthd", 2, rng);
    // Batch b keeps its first tk - 20 b keys.
    std::vector<float> bias(c.nb * c.tk, 0.0f);
    for (int64_t b = 0; b < c.nb; ++b)
      for (int64_t j = c.tk - 20 * b; j < c.tk; ++j)
        if (j >= 1)
          bias[b * c.tk + j] = lowest;
    const float scale = 1.0f / std::sqrt((float)c.d);
    rewire_attention(ptr(q.data), 0, q.sB, q.sH, q.sT, q.sD, ptr(k.data), 0, k.sB, k.sH, k.sT, k.sD,
                     ptr(v.data), 0, v.sB, v.sH, v.sT, v.sD, c.padding ? ptr(bias) : 0, 0, c.tk, 0,
                     0, 1, ptr(o.data), 0, o.sB, o.sH, o.sT, o.sD, c.nb, c.nh, c.tq, c.tk, c.d, c.dv,
                     c.causal ? 1 : 0, 2, scale);
    for (int64_t b = 0; b < c.nb; ++b)
      for (int64_t h = 0; h < c.nh; ++h)
        for (int64_t i = 0; i < c.tq; ++i) {
          int64_t keys = c.causal ? std::min(c.tk, i + c.tk - c.tq + 1) : c.tk;
          if (c.padding)
            keys = std::min(keys, std::max<int64_t>(1, c.tk - 20 * b));
          std::vector<double> w(keys);
          double top = -INFINITY, sum = 0.0, size = 0.0;
          for (int64_t j = 0; j < keys; ++j) {
            double s = 0.0;
            for (int64_t x = 0; x < c.d; ++x)
              s += (double)q.at(b, h, i, x) * k.at(b, h, j, x);
            w[j] = s * scale;
            top = std::max(top, w[j]);
          }
          for (double &x : w)
            sum += x = std::exp(x - top);
          for (int64_t x = 0; x < c.dv; ++x) {
            double want = 0.0;
            for (int64_t j = 0; j < keys; ++j) {
              want += w[j] / sum * v.at(b, h, j, x);
              size = std::max(size, (double)std::fabs(v.at(b, h, j, x)));
            }
            ASSERT_NEAR(o.at(b, h, i, x), want, 2e-6 + 1e-5 * size)
                << "b " << b << " h " << h << " row " << i << " col " << x;
          }
        }
  }
}

TEST(AttentionKernel, AgainstFloat64) { onBothPaths(againstFloat64); }

} // namespace
