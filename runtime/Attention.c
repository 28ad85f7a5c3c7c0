/*===- Attention.c - Fused scaled dot-product attention on the CPU ---------===
 *
 * `rewire_attention`, the kernel rewire-attention-to-kernel calls for an
 * f32 nn.attention: out = softmax(scale * q k^T + bias, causal mask) v per
 * batch and head, flash-attention style. The query rows are cut into blocks of
 * kBlockQ, each one OpenMP task; a task walks its keys in blocks of
 * kBlockK with an online softmax (running row max m and sum l, the
 * accumulated output rescaled by exp(m_old - m_new) when m grows), so the
 * [Tq, Tk] scores never exist beyond one kBlockQ x kBlockK tile, and key
 * blocks wholly after a block's last query are never computed (causal).
 * On CPUs with AVX-512 a block without a bias to add runs transposed (the
 * queries along the vector lanes, its own micro-kernel: "The transposed
 * block" below); otherwise the two products of a tile are oneDNN SGEMMs
 * (single-threaded inside the parallel region), the softmax a vectorized
 * pass over the tile.
 *
 * The optional bias (a mask as exporters write it: 0 where a key is
 * attended, -inf or finfo(float32).min where not) is read in place through
 * its strides (0 along broadcast dimensions). A tile whose bias is at most
 * kMasked everywhere is skipped, without its products, once every row of
 * the block has seen a score above kSeen: its weights are then exactly 0
 * (exp of less than -1e29 underflows), as they are in the expanded
 * softmax, for scores below ~1e29. Before the tiles, the team finds each
 * bias row's last key it does not mask (biasKeys, once for all heads when
 * the bias is broadcast over them): no tile is computed past a block's
 * last such key, and no softmax past a row's, so a causal mask held as
 * data (a parameter, or computed by the graph) computes the same tiles and
 * columns as `causal` (and adds its bias). A row whose keys are all masked
 * keeps every key (the expanded softmax then weights them all).
 *
 * Rows with no key to attend (causal with Tq > Tk, or a bias of -inf on
 * every key) give NaN, as the softmax of an all -inf row does in the
 * expanded lowering; with flag bit 1 (zero_masked_rows) they give 0, and
 * so do rows whose weights are NaN (a NaN score), as the expansion's
 * where(isnan(p), 0, p) does. `flags` bit 0: causal.
 *
 *===----------------------------------------------------------------------===*/
#include "LibraryThreads.h"

#include <oneapi/dnnl/dnnl.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Kernels.c: the artifact's allocator for temporaries (ends the call with a
 * message when memory runs out) and its error path. */
void *_mlir_memref_to_llvm_alloc(size_t size);
void _mlir_memref_to_llvm_free(void *ptr);
void rewire_kernel_failed(const char *message);

enum { kBlockQ = 64, kBlockK = 128 };

/* A bias at or below kMasked masks its key; a running max above kSeen is a
 * real score (see the header). */
static const float kMasked = -1e30f, kSeen = -1e29f;

/* What biasKeys finds in a bias row: one past its last kept key (rowKeys),
 * and whether every element before it is 0 (adding them changes no score:
 * a causal mask's rows). */
struct BiasRow {
  int64_t keys, zero;
};

/* exp(x) for x <= 0 (scores minus their row max): 2^n e^r with
 * n = round(x / ln 2), |r| <= ln 2 / 2, and Cephes' degree-6 polynomial
 * for e^r (about 1 ulp); 0 below -87.3 (where exp leaves the normal
 * floats), so -inf gives 0. Branch-free, so the row loops vectorize. */
static inline float expNonPositive(float x) {
  const float big = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  float n = (x * 1.44269504088896341f + big) - big;
  float r = x - n * 0.693359375f - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t e = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &e, sizeof(scale));
  return x < -87.3f ? 0.0f : p * scale;
}

/* One tile's softmax step. s: rows x cols scores (leading dim ldS), row r
 * attends its first limit[r] columns (the rest are set to 0); m, l: the
 * running max and sum; alpha[r] receives exp(m_old - m_new), by which the
 * caller rescales row r of the accumulated output. Scores become the
 * unnormalized probabilities. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static void softmaxTile(float *s, int64_t ldS, int64_t rows, int64_t cols, const int64_t *limit,
                        float *m, float *l, float *alpha) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = s + r * ldS;
    int64_t n = limit[r];
    if (n <= 0) {
      memset(row, 0, (size_t)cols * sizeof(float));
      alpha[r] = 1.0f;
      continue;
    }
    float mb = -INFINITY;
#pragma omp simd reduction(max : mb)
    for (int64_t c = 0; c < n; ++c)
      mb = fmaxf(mb, row[c]);
    float mNew = mb > m[r] ? mb : m[r];
    if (mNew == -INFINITY) { /* every key so far masked with -inf: no weight yet */
      memset(row, 0, (size_t)cols * sizeof(float));
      alpha[r] = 1.0f;
      continue;
    }
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < n; ++c) {
      float p = expNonPositive(row[c] - mNew);
      row[c] = p;
      sum += p;
    }
    if (n < cols)
      memset(row + n, 0, (size_t)(cols - n) * sizeof(float));
    alpha[r] = expNonPositive(m[r] - mNew);
    l[r] = l[r] * alpha[r] + sum;
    m[r] = mNew;
  }
}

/* The bias of a tile: rows x cols at `bias` (strides sT, sK). Whether
 * every element is masked and every row has already seen a real score (so
 * the tile contributes exactly nothing); else adds it to the scores s. */
static int tileMasked(const float *bias, int64_t sT, int64_t sK, int64_t rows, int64_t cols,
                      const float *m) {
  for (int64_t r = 0; r < rows; ++r) {
    if (!(m[r] > kSeen))
      return 0;
    const float *row = bias + r * sT;
    int64_t kept = 0; /* NaN counts as kept: it must reach the output */
    if (sK == 1) {
#pragma omp simd reduction(+ : kept)
      for (int64_t c = 0; c < cols; ++c)
        kept += !(row[c] <= kMasked);
    } else {
      for (int64_t c = 0; c < cols; ++c)
        kept += !(row[c * sK] <= kMasked);
    }
    if (kept)
      return 0;
  }
  return 1;
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static void addBias(float *s, int64_t ldS, const float *bias, int64_t sT, int64_t sK, int64_t rows,
                    int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = s + r * ldS;
    const float *b = bias + r * sT;
    if (sK == 1) {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c)
        row[c] += b[c];
    } else {
      for (int64_t c = 0; c < cols; ++c)
        row[c] += b[c * sK];
    }
  }
}

/* A [rows, cols] matrix of `base` (element strides rowStride, colStride)
 * usable by SGEMM as is (unit column stride, row stride >= cols), or
 * packed densely into `pack`. Returns the matrix and sets *ld. */
static const float *gemmOperand(const float *base, int64_t rowStride, int64_t colStride,
                                int64_t rows, int64_t cols, float *pack, int64_t *ld) {
  if (colStride == 1 && (rowStride >= cols || rows == 1)) {
    *ld = rows == 1 ? cols : rowStride;
    return base;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      pack[r * cols + c] = base[r * rowStride + c * colStride];
  *ld = cols;
  return pack;
}

static int sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  return dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
}

/* One tile's scaled scores s = scale * q k^T (+ bias) for query rows
 * [i0, i0 + rows) and key columns [j0, j0 + cols) (leading dim kBlockK), and
 * the columns each row attends (limit[r]: the causal mask's, and before
 * keep[r].keys where given). Returns 0 if the SGEMM failed. */
static int tileScores(float *s, int64_t *limit, const float *qm, int64_t ldq, const float *km,
                      int64_t ldk, const float *bias, int64_t sT, int64_t sK,
                      const struct BiasRow *keep, int64_t i0, int64_t j0, int64_t rows,
                      int64_t cols, int64_t d, float scale, int64_t causal, int64_t shift) {
  int ok = 1;
  if (d > 0) {
    ok = sgemm('N', 'T', rows, cols, d, scale, qm, ldq, km, ldk, 0.0f, s, kBlockK);
  } else {
    for (int64_t r = 0; r < rows; ++r)
      memset(s + r * kBlockK, 0, (size_t)cols * sizeof(float));
  }
  if (bias)
    addBias(s, kBlockK, bias, sT, sK, rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t n = causal ? i0 + r + shift - j0 + 1 : cols;
    if (keep && keep[r].keys - j0 < n)
      n = keep[r].keys - j0;
    limit[r] = n < 0 ? 0 : n > cols ? cols : n;
  }
  return ok;
}

/* One past the last of a bias row's tk keys (stride sK) that it does not
 * mask (NaN counts as kept), or tk where it masks every key (the row then
 * weights them all, as the expanded softmax does). Scanned from the right,
 * 64 keys at a time. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static int64_t rowKeys(const float *row, int64_t sK, int64_t tk) {
  int64_t j = tk;
  while (j > 0) {
    int64_t from = j >= 64 ? j - 64 : 0;
    int32_t kept = 0;
    if (sK == 1) {
#pragma omp simd reduction(| : kept)
      for (int64_t c = from; c < j; ++c)
        kept |= !(row[c] <= kMasked);
    } else {
      for (int64_t c = from; c < j; ++c)
        kept |= !(row[c * sK] <= kMasked);
    }
    if (kept) {
      while (row[(j - 1) * sK] <= kMasked)
        --j;
      return j;
    }
    j = from;
  }
  return tk;
}

/* Whether row[0 : n) (stride sK) is all 0. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static int allZero(const float *row, int64_t sK, int64_t n) {
  int32_t nonzero = 0;
  if (sK == 1) {
#pragma omp simd reduction(| : nonzero)
    for (int64_t c = 0; c < n; ++c)
      nonzero |= row[c] != 0.0f;
  } else {
    for (int64_t c = 0; c < n; ++c)
      nonzero |= row[c * sK] != 0.0f;
  }
  return !nonzero;
}

/* A BiasRow for each query row of each batch and head along which the bias
 * varies ([nb, nh, tq] at `rows`), shared by the team (inside its parallel
 * region; the loops' barriers end it). A bias broadcast over the queries
 * (msT 0, a padding mask) is scanned once and its row copied. */
static void biasKeys(struct BiasRow *rows, const float *bias, int64_t msB, int64_t msH,
                     int64_t msT, int64_t msK, int64_t nb, int64_t nh, int64_t tq, int64_t tk) {
  int64_t nt = msT ? tq : 1;
#pragma omp for schedule(static)
  for (int64_t x = 0; x < nb * nh * nt; ++x) {
    int64_t b = x / (nh * nt), h = x / nt % nh, i = x % nt;
    const float *row = bias + b * msB + h * msH + i * msT;
    struct BiasRow *out = rows + (b * nh + h) * tq + i;
    out->keys = rowKeys(row, msK, tk);
    out->zero = allZero(row, msK, out->keys);
  }
  if (!msT) {
#pragma omp for schedule(static)
    for (int64_t x = 0; x < nb * nh * tq; ++x)
      if (x % tq)
        rows[x] = rows[x - x % tq];
  }
}

/* The keys a block computes under a bias: one past its rows' last kept key,
 * at most `end`; *zero: whether the block's bias is 0 on all of them. */
static int64_t blockEnd(const struct BiasRow *rows, int64_t count, int64_t end, int *zero) {
  int64_t last = 0;
  *zero = 1;
  for (int64_t r = 0; r < count; ++r) {
    if (rows[r].keys > last)
      last = rows[r].keys;
    *zero &= rows[r].zero != 0;
  }
  return last < end ? last : end;
}

/* The rows of biasKeys' table: 0 without a bias, else nb x nh x tq, where
 * nb and nh are the batch and heads along which the bias varies (1 where
 * it is broadcast); -1 if its size in bytes overflows. */
static int64_t biasKeyCount(const float *bias, int64_t nb, int64_t nh, int64_t tq) {
  size_t n, bytes;
  if (!bias)
    return 0;
  if (__builtin_mul_overflow((size_t)nb, (size_t)nh, &n) ||
      __builtin_mul_overflow(n, (size_t)tq, &n) ||
      __builtin_mul_overflow(n, sizeof(struct BiasRow), &bytes) || n > (size_t)INT64_MAX)
    return -1;
  return (int64_t)n;
}

/* The table's rows for batch b, head h, from query row i0 (b % nb, h % nh:
 * index 0 along a broadcast dimension). */
static const struct BiasRow *biasRowsOf(const struct BiasRow *table, int64_t nb, int64_t nh,
                                        int64_t tq, int64_t b, int64_t h, int64_t i0) {
  return table + ((b % nb) * nh + h % nh) * tq + i0;
}

/* Per-thread scratch, in floats. */
struct Scratch {
  float *s, *acc, *m, *l, *alpha, *q, *k, *v;
  int64_t *limit;
};

static int mulAdd(size_t *total, size_t a, size_t b) {
  size_t p;
  if (__builtin_mul_overflow(a, b, &p) || __builtin_add_overflow(*total, p, total))
    return 0;
  return 1;
}

/*===- The transposed block (AVX-512) --------------------------------------===
 *
 * One block of kBlockQ (64) queries computed with the queries along the
 * vector lanes: its scores transposed, s^T = k q^T ([keys, 64], one key a
 * row of four 16-float vectors), so the online softmax's max, exponentials
 * and sums run across the 64 queries at once with no reduction across
 * lanes, and the output transposed, o^T += v^T p^T ([dv, 64]). Both
 * products are one micro-kernel: C[r][0:64] (+)= sum_t a(r, t) b[t][0:64],
 * a read one broadcast element at a time through its own strides (keys or
 * values in place, whatever their layout), b a block of rows of 64 floats
 * (q^T packed once for the block, or p^T): 4 x 4 vectors of accumulators,
 * so each broadcast feeds 4 FMAs and each b row 4 rows of C. The tile
 * SGEMMs this replaces (oneDNN, single-threaded per tile) each packed
 * their operands again and spent ~1/4 of their time outside their kernel.
 * Used on CPUs with AVX-512F where no bias is added (none, or one that is
 * 0 on every key the block attends: a causal mask held as data); the
 * tiles above run otherwise.
 *
 *===----------------------------------------------------------------------===*/
_Static_assert(kBlockQ == 64, "the transposed block holds 64 queries in four vectors");

/* C[r][0:64] = (accumulate ? C[r][0:64] : 0) + sum_{t < depth} a[r * ars +
 * t * ats] * b[t * 64 + 0:64], for r < rowsC; C's rows 64 floats apart. */
__attribute__((target("avx512f"))) static void blockProduct(float *c, int64_t rowsC,
                                                            const float *a, int64_t ars,
                                                            int64_t ats, const float *b,
                                                            int64_t depth, int accumulate) {
  for (int64_t r0 = 0; r0 < rowsC; r0 += 4) {
    int64_t mr = rowsC - r0 < 4 ? rowsC - r0 : 4;
    const float *ar[4];
    __m512 acc[4][4];
    for (int i = 0; i < 4; ++i) {
      /* Past the last row: row r0 again, computed and not stored. */
      ar[i] = a + (r0 + (i < mr ? i : 0)) * ars;
      for (int j = 0; j < 4; ++j)
        acc[i][j] = accumulate && i < mr ? _mm512_loadu_ps(c + (r0 + i) * 64 + 16 * j)
                                         : _mm512_setzero_ps();
    }
    for (int64_t t = 0; t < depth; ++t) {
      const float *bt = b + t * 64;
      __m512 b0 = _mm512_loadu_ps(bt), b1 = _mm512_loadu_ps(bt + 16),
             b2 = _mm512_loadu_ps(bt + 32), b3 = _mm512_loadu_ps(bt + 48);
      for (int i = 0; i < 4; ++i) {
        __m512 x = _mm512_set1_ps(ar[i][t * ats]);
        acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
        acc[i][2] = _mm512_fmadd_ps(x, b2, acc[i][2]);
        acc[i][3] = _mm512_fmadd_ps(x, b3, acc[i][3]);
      }
    }
    for (int i = 0; i < mr; ++i)
      for (int j = 0; j < 4; ++j)
        _mm512_storeu_ps(c + (r0 + i) * 64 + 16 * j, acc[i][j]);
  }
}

/* expNonPositive on 16 lanes (the same steps). */
__attribute__((target("avx512f"))) static inline __m512 expNonPositive16(__m512 x) {
  const __m512 big = _mm512_set1_ps(12582912.0f);
  __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), big), big);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)),
                                23);
  __m512 y = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
  /* 0 below -87.3 (and for -inf); NaN stays NaN. */
  __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(under, y, _mm512_setzero_ps());
}

/* The online softmax step of a transposed tile: st holds the scores of
 * keys [j0, j0 + cols) (one key a row of 64 queries, unscaled); query i
 * attends the keys before lim[i]. Scales them, updates the running max m
 * and sum l of each query, leaves p^T (0 where not attended) in st and the
 * factor exp(m_old - m_new) of each query in alpha. A query with no score
 * yet (m -inf) keeps p 0 and alpha 1; a NaN score is skipped by the max
 * and reaches p, l and the output, as in softmaxTile. */
__attribute__((target("avx512f"))) static void softmaxBlock(float *st, int64_t j0, int64_t cols,
                                                            const int32_t *lim, float scale,
                                                            float *m, float *l, float *alpha) {
  const __m512 minusInf = _mm512_set1_ps(-INFINITY), vscale = _mm512_set1_ps(scale);
  __m512i limv[4];
  __m512 mt[4];
  for (int j = 0; j < 4; ++j) {
    limv[j] = _mm512_loadu_si512(lim + 16 * j);
    mt[j] = _mm512_loadu_ps(m + 16 * j);
  }
  for (int64_t c = 0; c < cols; ++c) {
    __m512i key = _mm512_set1_epi32((int32_t)(j0 + c));
    for (int j = 0; j < 4; ++j) {
      __mmask16 kept = _mm512_cmp_epi32_mask(key, limv[j], _MM_CMPINT_LT);
      __m512 sv = _mm512_mask_mul_ps(minusInf, kept, _mm512_loadu_ps(st + c * 64 + 16 * j),
                                     vscale);
      _mm512_storeu_ps(st + c * 64 + 16 * j, sv);
      mt[j] = _mm512_max_ps(sv, mt[j]); /* a NaN score leaves the max as it was */
    }
  }
  __m512 sum[4], mNew[4];
  __mmask16 seen[4];
  for (int j = 0; j < 4; ++j) {
    mNew[j] = mt[j];
    seen[j] = _mm512_cmp_ps_mask(mNew[j], minusInf, _CMP_NEQ_OQ);
    sum[j] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < cols; ++c)
    for (int j = 0; j < 4; ++j) {
      __m512 sv = _mm512_loadu_ps(st + c * 64 + 16 * j);
      __m512 p = _mm512_maskz_mov_ps(seen[j], expNonPositive16(_mm512_sub_ps(sv, mNew[j])));
      _mm512_storeu_ps(st + c * 64 + 16 * j, p);
      sum[j] = _mm512_add_ps(sum[j], p);
    }
  for (int j = 0; j < 4; ++j) {
    __m512 mOld = _mm512_loadu_ps(m + 16 * j);
    __m512 a = _mm512_mask_blend_ps(seen[j], _mm512_set1_ps(1.0f),
                                    expNonPositive16(_mm512_sub_ps(mOld, mNew[j])));
    _mm512_storeu_ps(alpha + 16 * j, a);
    _mm512_storeu_ps(l + 16 * j, _mm512_fmadd_ps(_mm512_loadu_ps(l + 16 * j), a, sum[j]));
    _mm512_storeu_ps(m + 16 * j, _mm512_mask_blend_ps(seen[j], mOld, mNew[j]));
  }
}

/* ot[c][0:64] *= alpha[0:64] for each of the dv rows. */
__attribute__((target("avx512f"))) static void rescaleBlock(float *ot, int64_t dv,
                                                            const float *alpha) {
  __m512 a0 = _mm512_loadu_ps(alpha), a1 = _mm512_loadu_ps(alpha + 16),
         a2 = _mm512_loadu_ps(alpha + 32), a3 = _mm512_loadu_ps(alpha + 48);
  for (int64_t c = 0; c < dv; ++c) {
    float *row = ot + c * 64;
    _mm512_storeu_ps(row, _mm512_mul_ps(_mm512_loadu_ps(row), a0));
    _mm512_storeu_ps(row + 16, _mm512_mul_ps(_mm512_loadu_ps(row + 16), a1));
    _mm512_storeu_ps(row + 32, _mm512_mul_ps(_mm512_loadu_ps(row + 32), a2));
    _mm512_storeu_ps(row + 48, _mm512_mul_ps(_mm512_loadu_ps(row + 48), a3));
  }
}

/* The 16 x 16 block r (row i in r[i]) transposed in registers. */
__attribute__((target("avx512f"))) static inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);     /* a0 b0 a1 b1 in each 128-bit lane */
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]); /* a2 b2 a3 b3 */
  }
  for (int i = 0; i < 16; i += 4) { /* lane L of r[i + j]: column 4L + j of rows i..i+3 */
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) { /* the lanes gathered across the groups of 4 rows */
    t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
    t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
  }
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
    r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
    r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xDD);
  }
}

/* qt[c][r] = q[r * qsT + c * qsD] for r < rows (0 for the lanes past
 * them), c < d: 16 x 16 blocks transposed in registers where the columns
 * are contiguous (a query row strided by a whole token row, as a QKV
 * projection leaves it, read element by element cost 10% of the kernel). */
__attribute__((target("avx512f"))) static void packQueries(float *qt, const float *q, int64_t qsT,
                                                           int64_t qsD, int64_t rows, int64_t d) {
  if (rows < 64)
    memset(qt, 0, (size_t)(d * 64) * sizeof(float));
  int64_t r0 = 0, c0 = 0;
  if (qsD == 1)
    for (; r0 + 16 <= rows; r0 += 16)
      for (c0 = 0; c0 + 16 <= d; c0 += 16) {
        __m512 b[16];
        for (int i = 0; i < 16; ++i)
          b[i] = _mm512_loadu_ps(q + (r0 + i) * qsT + c0);
        transpose16(b);
        for (int j = 0; j < 16; ++j)
          _mm512_storeu_ps(qt + (c0 + j) * 64 + r0, b[j]);
      }
  /* The rest element by element: the rows past the blocks, the columns
   * past them in the blocks' rows. */
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = r < r0 ? c0 : 0; c < d; ++c)
      qt[c * 64 + r] = q[r * qsT + c * qsD];
}

/* One output row: row[c * osD] = acc[c * accStride] / l for c in [from,
 * dv); a row with no key (l 0) is NaN, or 0 with zeroMaskedRows, where a
 * row whose weights are NaN is 0 too (then every column, whatever `from`). */
static void outputRow(float *row, int64_t osD, const float *acc, int64_t accStride, float l,
                      int64_t from, int64_t dv, int64_t zeroMaskedRows) {
  if (zeroMaskedRows ? !(l > 0.0f) : l == 0.0f) {
    for (int64_t c = 0; c < dv; ++c)
      row[c * osD] = zeroMaskedRows ? 0.0f : NAN;
    return;
  }
  for (int64_t c = from; c < dv; ++c)
    row[c * osD] = acc[c * accStride] / l;
}

/* out[r * osT + c * osD] = ot[c][r] / l[r] for r < rows, c < dv, blocks
 * transposed as in packQueries, the rest and the rows with no key by
 * outputRow. */
__attribute__((target("avx512f"))) static void writeOutputs(float *out, int64_t osT, int64_t osD,
                                                            const float *ot, const float *l,
                                                            int64_t rows, int64_t dv,
                                                            int64_t zeroMaskedRows) {
  int64_t r0 = 0, c0 = 0;
  if (osD == 1)
    for (; r0 + 16 <= rows; r0 += 16) {
      __m512 lr = _mm512_loadu_ps(l + r0);
      for (c0 = 0; c0 + 16 <= dv; c0 += 16) {
        __m512 b[16];
        for (int j = 0; j < 16; ++j)
          b[j] = _mm512_div_ps(_mm512_loadu_ps(ot + (c0 + j) * 64 + r0), lr);
        transpose16(b);
        for (int i = 0; i < 16; ++i)
          _mm512_storeu_ps(out + (r0 + i) * osT + c0, b[i]);
      }
    }
  for (int64_t r = 0; r < rows; ++r)
    outputRow(out + r * osT, osD, ot + r, 64, l[r], r < r0 ? c0 : 0, dv, zeroMaskedRows);
}

/* Whether this call runs the transposed block: the CPU has AVX-512F (asked
 * once: cpuid only), unless REWIRE_ATTENTION_TILES=1 asks for the tiles
 * that other CPUs run (for tests of both paths on one machine). */
static int transposedBlocks(void) {
  static int cpu = -1;
  if (cpu < 0) {
    __builtin_cpu_init();
    cpu = __builtin_cpu_supports("avx512f") != 0;
  }
  const char *tiles = getenv("REWIRE_ATTENTION_TILES");
  return cpu && !(tiles && strcmp(tiles, "1") == 0);
}

/* How this CPU runs rewire_attention's blocks without a bias to add
 * (rewire/Support/CpuArtifact.h, kAttentionSymbol). */
const char *rewire_attention_describe(void) {
  return transposedBlocks()
             ? "64-query blocks along AVX-512 vector lanes (its own micro-kernel)"
             : "64-query blocks, 128-key tiles on oneDNN's sgemm";
}

/* One block of `rows` queries from i0 over keys [0, end) with the
 * transposed block: q at qb (strides qsT, qsD), keys and values of the
 * block's batch and head at kb, vb; query r attends keys before lim[r]
 * (the causal mask's and the bias's limits, at most end). Scratch: qt
 * [d, 64], st [kBlockK, 64], ot [dv, 64], m, l, alpha [64]. Leaves the
 * unnormalized output in ot and the sums in l (the caller divides). */
static void transposedBlock(const float *qb, int64_t qsT, int64_t qsD, const float *kb,
                            int64_t ksT, int64_t ksD, const float *vb, int64_t vsT, int64_t vsD,
                            int64_t rows, int64_t end, const int32_t *lim, int64_t d, int64_t dv,
                            float scale, float *qt, float *st, float *ot, float *m, float *l,
                            float *alpha) {
  packQueries(qt, qb, qsT, qsD, rows, d);
  for (int64_t r = 0; r < 64; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
  }
  memset(ot, 0, (size_t)(dv * 64) * sizeof(float));
  for (int64_t j0 = 0; j0 < end; j0 += kBlockK) {
    int64_t cols = end - j0 < kBlockK ? end - j0 : kBlockK;
    blockProduct(st, cols, kb + j0 * ksT, ksT, ksD, qt, d, 0);
    softmaxBlock(st, j0, cols, lim, scale, m, l, alpha);
    if (j0 > 0)
      rescaleBlock(ot, dv, alpha);
    blockProduct(ot, dv, vb + j0 * vsT, vsD, vsT, st, cols, 1);
  }
}

/* Pointers are aligned bases with offsets in elements; strides in elements
 * for [B, H, T, D] (the bias: [B, H, Tq, Tk], 0 along broadcast
 * dimensions; `bias` 0: none); `flags`: bit 0 causal, bit 1
 * zero_masked_rows; `threads` 0 means OpenMP's default team. */
void rewire_attention(int64_t q, int64_t qOff, int64_t qsB, int64_t qsH, int64_t qsT, int64_t qsD,
                      int64_t k, int64_t kOff, int64_t ksB, int64_t ksH, int64_t ksT, int64_t ksD,
                      int64_t v, int64_t vOff, int64_t vsB, int64_t vsH, int64_t vsT, int64_t vsD,
                      int64_t bias, int64_t mOff, int64_t msB, int64_t msH, int64_t msT,
                      int64_t msK,
                      int64_t o, int64_t oOff, int64_t osB, int64_t osH, int64_t osT, int64_t osD,
                      int64_t batch, int64_t heads, int64_t tq, int64_t tk, int64_t d, int64_t dv,
                      int64_t flags, int64_t threads, float scale) {
  int64_t causal = flags & 1, zeroMaskedRows = flags & 2;
  if (batch <= 0 || heads <= 0 || tq <= 0 || dv <= 0)
    return;
  const float *Q = (const float *)(intptr_t)q + qOff;
  const float *K = (const float *)(intptr_t)k + kOff;
  const float *V = (const float *)(intptr_t)v + vOff;
  const float *M = bias ? (const float *)(intptr_t)bias + mOff : NULL;
  float *O = (float *)(intptr_t)o + oOff;
  int64_t shift = tk - tq; /* query i attends keys j <= i + shift when causal */
  int64_t qBlocks = (tq + kBlockQ - 1) / kBlockQ;
  int64_t tasks = batch * heads * qBlocks;
  /* The transposed block (above) where the CPU has it and key positions
   * fit its 32-bit lanes. */
  int fast = transposedBlocks() && tk < INT32_MAX;
  int team = threads > 0 ? (int)threads : omp_get_max_threads();
  if (team < 1)
    team = 1;
  if (tasks < team)
    team = (int)tasks;

  /* Scratch for every thread, from the calling thread (so running out of
   * memory ends the call cleanly). */
  size_t per = 0;
  int ok = mulAdd(&per, kBlockQ, kBlockK) && mulAdd(&per, kBlockQ, (size_t)dv) &&
           mulAdd(&per, 3, kBlockQ) && mulAdd(&per, kBlockQ, (size_t)d) &&
           mulAdd(&per, kBlockK, (size_t)d) && mulAdd(&per, kBlockK, (size_t)dv) &&
           mulAdd(&per, 2 * kBlockQ, 1); /* limit: int64 = two floats */
  per = (per + 15) / 16 * 16;
  size_t bytes = 0;
  int64_t nb = msB ? batch : 1, nh = msH ? heads : 1;
  int64_t keys = biasKeyCount(M, nb, nh, tq);
  if (!ok || keys < 0 || !mulAdd(&bytes, per * sizeof(float), (size_t)team) ||
      !mulAdd(&bytes, (size_t)keys, sizeof(struct BiasRow))) {
    rewire_kernel_failed("attention: the scratch size of the fused attention kernel overflows "
                         "(head size or mask too large)");
    return;
  }
  float *scratch = (float *)_mlir_memref_to_llvm_alloc(bytes);
  struct BiasRow *keepAll = (struct BiasRow *)(scratch + per * (size_t)team);
  int failed = 0;

#pragma omp parallel num_threads(team)
  {
  /* oneDNN's SGEMM splits a product over the threads it sees when it is
   * not inside an active parallel region (a team of one is not active), and
   * a split changes the sums' order: one thread each, always, so the bits
   * do not depend on the team (LibraryThreads.h). */
  int saved = rewire_library_threads_one();
  if (M)
    biasKeys(keepAll, M, msB, msH, msT, msK, nb, nh, tq, tk);
#pragma omp for schedule(dynamic, 1)
  for (int64_t t = 0; t < tasks; ++t) {
    float *mine = scratch + (size_t)omp_get_thread_num() * per;
    struct Scratch w;
    w.s = mine;
    w.acc = w.s + kBlockQ * kBlockK;
    w.m = w.acc + kBlockQ * dv;
    w.l = w.m + kBlockQ;
    w.alpha = w.l + kBlockQ;
    w.q = w.alpha + kBlockQ;
    w.k = w.q + kBlockQ * d;
    w.v = w.k + kBlockK * d;
    w.limit = (int64_t *)(w.v + kBlockK * dv);

    /* Heaviest (last, under a causal mask) query blocks first. */
    int64_t bh = t / qBlocks, qb = qBlocks - 1 - t % qBlocks;
    int64_t b = bh / heads, h = bh % heads;
    int64_t i0 = qb * kBlockQ, rows = tq - i0 < kBlockQ ? tq - i0 : kBlockQ;
    const float *Qb = Q + b * qsB + h * qsH + i0 * qsT;
    const float *Kb = K + b * ksB + h * ksH;
    const float *Vb = V + b * vsB + h * vsH;
    float *Ob = O + b * osB + h * osH + i0 * osT;
    const float *Mb = M ? M + b * msB + h * msH + i0 * msT : NULL;
    const struct BiasRow *keep = M ? biasRowsOf(keepAll, nb, nh, tq, b, h, i0) : NULL;
    int zeroBias = 0;
    int64_t ldq;
    const float *qm = gemmOperand(Qb, qsT, qsD, rows, d, w.q, &ldq);
    for (int64_t r = 0; r < rows; ++r) {
      w.m[r] = -INFINITY;
      w.l[r] = 0.0f;
    }
    /* Keys this block attends: [0, end). */
    int64_t end = causal ? i0 + rows + shift : tk;
    if (end > tk)
      end = tk;
    if (keep)
      end = blockEnd(keep, rows, end, &zeroBias);
    if (fast && (!Mb || zeroBias)) {
      int32_t *lim = (int32_t *)w.limit;
      for (int64_t r = 0; r < kBlockQ; ++r) {
        int64_t n = r >= rows ? 0 : causal ? i0 + r + shift + 1 : tk;
        if (keep && r < rows && keep[r].keys < n)
          n = keep[r].keys;
        lim[r] = (int32_t)(n < 0 ? 0 : n > end ? end : n);
      }
      transposedBlock(Qb, qsT, qsD, Kb, ksT, ksD, Vb, vsT, vsD, rows, end, lim, d, dv, scale,
                      w.q, w.s, w.acc, w.m, w.l, w.alpha);
      writeOutputs(Ob, osT, osD, w.acc, w.l, rows, dv, zeroMaskedRows);
      continue;
    }
    if (end <= 0)
      memset(w.acc, 0, (size_t)(rows * dv) * sizeof(float));
    for (int64_t j0 = 0; j0 < end; j0 += kBlockK) {
      int64_t cols = end - j0 < kBlockK ? end - j0 : kBlockK;
      if (Mb && j0 > 0 && tileMasked(Mb + j0 * msK, msT, msK, rows, cols, w.m))
        continue;
      int64_t ldk, ldv;
      const float *km = gemmOperand(Kb + j0 * ksT, ksT, ksD, cols, d, w.k, &ldk);
      const float *vm = gemmOperand(Vb + j0 * vsT, vsT, vsD, cols, dv, w.v, &ldv);
      const float *tileBias = Mb && !zeroBias ? Mb + j0 * msK : NULL;
      if (!tileScores(w.s, w.limit, qm, ldq, km, ldk, tileBias, msT, msK, keep, i0, j0, rows,
                      cols, d, scale, causal, shift))
        failed = 1;
      softmaxTile(w.s, kBlockK, rows, cols, w.limit, w.m, w.l, w.alpha);
      if (j0 > 0)
        for (int64_t r = 0; r < rows; ++r)
          if (w.alpha[r] != 1.0f)
            for (int64_t c = 0; c < dv; ++c)
              w.acc[r * dv + c] *= w.alpha[r];
      if (!sgemm('N', 'N', rows, dv, cols, 1.0f, w.s, kBlockK, vm, ldv, j0 > 0 ? 1.0f : 0.0f,
                 w.acc, dv))
        failed = 1;
    }
    for (int64_t r = 0; r < rows; ++r)
      outputRow(Ob + r * osT, osD, w.acc + r * dv, 1, w.l[r], 0, dv, zeroMaskedRows);
  }
  rewire_library_threads_restore(saved);
  }
  _mlir_memref_to_llvm_free(scratch);
  if (failed)
    rewire_kernel_failed("internal error: oneDNN's sgemm failed inside the fused attention "
                         "kernel; please report it with the model");
}

/*===- The backward kernel ------------------------------------------------===
 *
 * `rewire_attention_backward`: dq, dk, dv of nn.attention from q, k, v, the
 * bias, the forward's output o and its adjoint do (nn.attention_grad). One
 * OpenMP task per batch and head (so dk and dv are summed by one thread, in
 * one order, whatever the team); inside, for each block of kBlockQ queries:
 *   1. its row max m and sum l, from the key tiles as in the forward;
 *   2. delta = rowsum(do * o);
 *   3. for each key tile: p = exp(s - m) / l (s computed again, unless the
 *      block's keys are one tile: step 1 left exp(s - m) there),
 *      dv_j += p^T do_i, dp = do_i v_j^T, ds = p * (dp - delta),
 *      dq_i += scale ds k_j, dk_j += scale ds^T q_i.
 * Tiles skipped by the forward (causal, wholly masked by the bias) are
 * skipped. Rows with no key give dq NaN and, since their NaN weights reach
 * every key of the head, NaN dk and dv for that head; under
 * zero_masked_rows (and for NaN weights there) they pass no gradient.
 *
 *===----------------------------------------------------------------------===*/

/* p = exp(s - m) / l over a tile's first limit[r] columns (0 beyond, and in
 * rows whose weights are all 0 or NaN). With m NULL the tile already holds
 * exp(s - m) for the rows' final max (what softmaxTile leaves in a block's
 * only tile) and is divided by l: the same bits, without the scores'
 * product and exponentials again. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static void weightsTile(float *s, int64_t ldS, int64_t rows, int64_t cols, const int64_t *limit,
                        const float *m, const float *l) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = s + r * ldS;
    int64_t n = limit[r];
    if (n <= 0 || !(l[r] > 0.0f)) {
      memset(row, 0, (size_t)cols * sizeof(float));
      continue;
    }
    float inv = 1.0f / l[r];
    if (m) {
      float mr = m[r];
#pragma omp simd
      for (int64_t c = 0; c < n; ++c)
        row[c] = expNonPositive(row[c] - mr) * inv;
    } else {
#pragma omp simd
      for (int64_t c = 0; c < n; ++c)
        row[c] *= inv;
    }
    if (n < cols)
      memset(row + n, 0, (size_t)(cols - n) * sizeof(float));
  }
}

/* ds = p * (dp - delta), in dp. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
static void scoreGradTile(const float *p, float *dp, int64_t ld, int64_t rows, int64_t cols,
                          const float *delta) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *pr = p + r * ld;
    float *dr = dp + r * ld, dl = delta[r];
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      dr[c] = pr[c] * (dr[c] - dl);
  }
}

/* Per-thread scratch of the backward kernel. */
struct GradScratch {
  float *s, *dp, *m, *l, *delta, *q, *k, *v, *dO, *dq, *dk, *dv;
  int64_t *limit;
};

/* Strides as in rewire_attention, plus o (the forward's output), do (its
 * adjoint) and the three results, each [B, H, T, D] with its own strides. */
void rewire_attention_backward(
    int64_t q, int64_t qOff, int64_t qsB, int64_t qsH, int64_t qsT, int64_t qsD,
    int64_t k, int64_t kOff, int64_t ksB, int64_t ksH, int64_t ksT, int64_t ksD,
    int64_t v, int64_t vOff, int64_t vsB, int64_t vsH, int64_t vsT, int64_t vsD,
    int64_t bias, int64_t mOff, int64_t msB, int64_t msH, int64_t msT, int64_t msK,
    int64_t o, int64_t oOff, int64_t osB, int64_t osH, int64_t osT, int64_t osD,
    int64_t dov, int64_t doOff, int64_t dsB, int64_t dsH, int64_t dsT, int64_t dsD,
    int64_t dq, int64_t dqOff, int64_t dqsB, int64_t dqsH, int64_t dqsT, int64_t dqsD,
    int64_t dk, int64_t dkOff, int64_t dksB, int64_t dksH, int64_t dksT, int64_t dksD,
    int64_t dvv, int64_t dvOff, int64_t dvsB, int64_t dvsH, int64_t dvsT, int64_t dvsD,
    int64_t batch, int64_t heads, int64_t tq, int64_t tk, int64_t d, int64_t dv, int64_t flags,
    int64_t threads, float scale) {
  int64_t causal = flags & 1, zeroMaskedRows = flags & 2;
  if (batch <= 0 || heads <= 0)
    return;
  const float *Q = (const float *)(intptr_t)q + qOff;
  const float *K = (const float *)(intptr_t)k + kOff;
  const float *V = (const float *)(intptr_t)v + vOff;
  const float *M = bias ? (const float *)(intptr_t)bias + mOff : NULL;
  const float *O = (const float *)(intptr_t)o + oOff;
  const float *DO = (const float *)(intptr_t)dov + doOff;
  float *DQ = (float *)(intptr_t)dq + dqOff;
  float *DK = (float *)(intptr_t)dk + dkOff;
  float *DV = (float *)(intptr_t)dvv + dvOff;
  int64_t shift = tk - tq;
  int64_t tasks = batch * heads;
  int team = threads > 0 ? (int)threads : omp_get_max_threads();
  if (team < 1)
    team = 1;
  if (tasks < team)
    team = (int)tasks;

  size_t per = 0;
  int ok = mulAdd(&per, 2 * kBlockQ, kBlockK) && mulAdd(&per, 3, kBlockQ) &&
           mulAdd(&per, kBlockQ, (size_t)d) && mulAdd(&per, kBlockK, (size_t)d) &&
           mulAdd(&per, kBlockK, (size_t)dv) && mulAdd(&per, kBlockQ, (size_t)dv) &&
           mulAdd(&per, kBlockQ, (size_t)d) && mulAdd(&per, (size_t)tk, (size_t)d) &&
           mulAdd(&per, (size_t)tk, (size_t)dv) && mulAdd(&per, 2 * kBlockQ, 1);
  per = (per + 15) / 16 * 16;
  size_t bytes = 0;
  int64_t nb = msB ? batch : 1, nh = msH ? heads : 1;
  int64_t keys = biasKeyCount(M, nb, nh, tq);
  if (!ok || keys < 0 || !mulAdd(&bytes, per * sizeof(float), (size_t)team) ||
      !mulAdd(&bytes, (size_t)keys, sizeof(struct BiasRow))) {
    rewire_kernel_failed("attention: the scratch size of the fused attention backward kernel "
                         "overflows (sequence, head size or mask too large)");
    return;
  }
  float *scratch = (float *)_mlir_memref_to_llvm_alloc(bytes);
  struct BiasRow *keepAll = (struct BiasRow *)(scratch + per * (size_t)team);
  int failed = 0;

#pragma omp parallel num_threads(team)
  {
  int saved = rewire_library_threads_one(); /* see rewire_attention */
  if (M)
    biasKeys(keepAll, M, msB, msH, msT, msK, nb, nh, tq, tk);
#pragma omp for schedule(dynamic, 1)
  for (int64_t t = 0; t < tasks; ++t) {
    float *mine = scratch + (size_t)omp_get_thread_num() * per;
    struct GradScratch w;
    w.s = mine;
    w.dp = w.s + kBlockQ * kBlockK;
    w.m = w.dp + kBlockQ * kBlockK;
    w.l = w.m + kBlockQ;
    w.delta = w.l + kBlockQ;
    w.q = w.delta + kBlockQ;
    w.k = w.q + kBlockQ * d;
    w.v = w.k + kBlockK * d;
    w.dO = w.v + kBlockK * dv;
    w.dq = w.dO + kBlockQ * dv;
    w.dk = w.dq + kBlockQ * d;
    w.dv = w.dk + tk * d;
    w.limit = (int64_t *)(w.dv + tk * dv);
    memset(w.dk, 0, (size_t)(tk * d) * sizeof(float));
    memset(w.dv, 0, (size_t)(tk * dv) * sizeof(float));
    int64_t b = t / heads, h = t % heads;
    const float *Kb = K + b * ksB + h * ksH;
    const float *Vb = V + b * vsB + h * vsH;
    int nanHead = 0;

    for (int64_t i0 = 0; i0 < tq; i0 += kBlockQ) {
      int64_t rows = tq - i0 < kBlockQ ? tq - i0 : kBlockQ;
      const float *Qb = Q + b * qsB + h * qsH + i0 * qsT;
      const float *Ob = O + b * osB + h * osH + i0 * osT;
      const float *DOb = DO + b * dsB + h * dsH + i0 * dsT;
      const float *Mb = M ? M + b * msB + h * msH + i0 * msT : NULL;
      const struct BiasRow *keep = M ? biasRowsOf(keepAll, nb, nh, tq, b, h, i0) : NULL;
      int zeroBias = 0;
      int64_t ldq, lddo;
      const float *qm = gemmOperand(Qb, qsT, qsD, rows, d, w.q, &ldq);
      const float *dom = gemmOperand(DOb, dsT, dsD, rows, dv, w.dO, &lddo);
      int64_t end = causal ? i0 + rows + shift : tk;
      if (end > tk)
        end = tk;
      if (keep)
        end = blockEnd(keep, rows, end, &zeroBias);
      /* 1. Row max and sum. A block whose keys fit one tile keeps that
       * tile's exp(s - m) for step 3 (m is then final). */
      int oneTile = end <= kBlockK;
      for (int64_t r = 0; r < rows; ++r) {
        w.m[r] = -INFINITY;
        w.l[r] = 0.0f;
      }
      for (int64_t j0 = 0; j0 < end; j0 += kBlockK) {
        int64_t cols = end - j0 < kBlockK ? end - j0 : kBlockK;
        if (Mb && j0 > 0 && tileMasked(Mb + j0 * msK, msT, msK, rows, cols, w.m))
          continue;
        int64_t ldk;
        const float *km = gemmOperand(Kb + j0 * ksT, ksT, ksD, cols, d, w.k, &ldk);
        const float *tileBias = Mb && !zeroBias ? Mb + j0 * msK : NULL;
        if (!tileScores(w.s, w.limit, qm, ldq, km, ldk, tileBias, msT, msK, keep, i0, j0, rows,
                        cols, d, scale, causal, shift))
          failed = 1;
        softmaxTile(w.s, kBlockK, rows, cols, w.limit, w.m, w.l, w.dp /* alpha, unused */);
      }
      /* 2. delta = rowsum(do * o); rows without weights. */
      for (int64_t r = 0; r < rows; ++r) {
        float acc = 0.0f;
        const float *dor = DOb + r * dsT, *orow = Ob + r * osT;
        if (dsD == 1 && osD == 1) {
#pragma omp simd reduction(+ : acc)
          for (int64_t c = 0; c < dv; ++c)
            acc += dor[c] * orow[c];
        } else {
          for (int64_t c = 0; c < dv; ++c)
            acc += dor[c * dsD] * orow[c * osD];
        }
        w.delta[r] = acc;
        if (!(w.l[r] > 0.0f) && !zeroMaskedRows)
          nanHead = 1;
      }
      memset(w.dq, 0, (size_t)(rows * d) * sizeof(float));
      /* 3. The tiles' gradients. */
      int first = 1;
      for (int64_t j0 = 0; j0 < end; j0 += kBlockK) {
        int64_t cols = end - j0 < kBlockK ? end - j0 : kBlockK;
        if (Mb && tileMasked(Mb + j0 * msK, msT, msK, rows, cols, w.m))
          continue;
        int64_t ldk, ldv;
        const float *km = gemmOperand(Kb + j0 * ksT, ksT, ksD, cols, d, w.k, &ldk);
        const float *vm = gemmOperand(Vb + j0 * vsT, vsT, vsD, cols, dv, w.v, &ldv);
        if (oneTile) {
          weightsTile(w.s, kBlockK, rows, cols, w.limit, NULL, w.l);
        } else {
          const float *tileBias = Mb && !zeroBias ? Mb + j0 * msK : NULL;
          if (!tileScores(w.s, w.limit, qm, ldq, km, ldk, tileBias, msT, msK, keep, i0, j0, rows,
                          cols, d, scale, causal, shift))
            failed = 1;
          weightsTile(w.s, kBlockK, rows, cols, w.limit, w.m, w.l);
        }
        /* dv_j += p^T do;  dp = do v_j^T */
        if (dv > 0) {
          if (!sgemm('T', 'N', cols, dv, rows, 1.0f, w.s, kBlockK, dom, lddo, 1.0f,
                     w.dv + j0 * dv, dv) ||
              !sgemm('N', 'T', rows, cols, dv, 1.0f, dom, lddo, vm, ldv, 0.0f, w.dp, kBlockK))
            failed = 1;
        } else {
          for (int64_t r = 0; r < rows; ++r)
            memset(w.dp + r * kBlockK, 0, (size_t)cols * sizeof(float));
        }
        scoreGradTile(w.s, w.dp, kBlockK, rows, cols, w.delta);
        /* dq += scale ds k_j;  dk_j += scale ds^T q */
        if (d > 0 &&
            (!sgemm('N', 'N', rows, d, cols, scale, w.dp, kBlockK, km, ldk, first ? 0.0f : 1.0f,
                    w.dq, d) ||
             !sgemm('T', 'N', cols, d, rows, scale, w.dp, kBlockK, qm, ldq, 1.0f, w.dk + j0 * d,
                    d)))
          failed = 1;
        first = 0;
      }
      float *DQb = DQ + b * dqsB + h * dqsH + i0 * dqsT;
      for (int64_t r = 0; r < rows; ++r) {
        int none = !(w.l[r] > 0.0f);
        for (int64_t c = 0; c < d; ++c)
          DQb[r * dqsT + c * dqsD] = none ? (zeroMaskedRows ? 0.0f : NAN)
                                          : first ? 0.0f : w.dq[r * d + c];
      }
    }
    float *DKb = DK + b * dksB + h * dksH;
    float *DVb = DV + b * dvsB + h * dvsH;
    for (int64_t j = 0; j < tk; ++j) {
      if (!nanHead && dksD == 1 && dvsD == 1) {
        memcpy(DKb + j * dksT, w.dk + j * d, (size_t)d * sizeof(float));
        memcpy(DVb + j * dvsT, w.dv + j * dv, (size_t)dv * sizeof(float));
        continue;
      }
      for (int64_t c = 0; c < d; ++c)
        DKb[j * dksT + c * dksD] = nanHead ? NAN : w.dk[j * d + c];
      for (int64_t c = 0; c < dv; ++c)
        DVb[j * dvsT + c * dvsD] = nanHead ? NAN : w.dv[j * dv + c];
    }
  }
  rewire_library_threads_restore(saved);
  }
  _mlir_memref_to_llvm_free(scratch);
  if (failed)
    rewire_kernel_failed("internal error: oneDNN's sgemm failed inside the fused attention "
                         "backward kernel; please report it with the model");
}
