/*===- NarrowGemm.c - AVX2 kernels for products with 2 to 24 columns ------===
 *
 * The projection of mHC's coefficients, x . phi over each token's flattened
 * streams (512 x 24 x 3072 at GPT-2-small width, n = 4: 24 = n^2 + 2n
 * columns), its weight gradient x^T dz (3072 x 24 x 512), and products like
 * them (HC's, LAuReL's low-rank factors): oneDNN 2.6's AVX2 SGEMM runs so
 * few columns well below the CPU's speed (its kernels are 16 columns wide).
 * Measured on a
 * Zen 3 (built by clang 22), 2 threads, A freshly written by the threads as
 * in a train step, 40 calls, best / mean ms, oneDNN -> here: 512 x 24 x
 * 3072 0.46 / 0.93 -> 0.45 / 0.50 (0.80 mean as one single-threaded SGEMM
 * per thread's rows); 2048 x 24 x 768 0.49 / 0.53 -> 0.44 / 0.46; 512 x 20
 * x 3072 0.49 / 0.51 -> 0.45 / 0.47; 512 x 12 x 3072 0.33 / 0.35 -> 0.29 /
 * 0.31; 16 columns 0.29 / 0.31 -> 0.28 / 0.30 (oneDNN's kernel width); one
 * thread, 512 x 24 x 3072 0.94 / 1.41 -> 0.86 / 0.92; HC's projection
 * 2048 x 6 x 768 0.28 / 0.78 -> 0.22 / 0.31, 512 x 4 x 3072 0.27 / 0.38 ->
 * 0.21 / 0.26, 512 x 8 x 3072 0.22 / 0.25 -> 0.19 / 0.20. One column stays
 * with oneDNN (its GEMV: 0.11 against 0.24 ms at 2048 x 1 x 768), and so do
 * 25 or more (0.78 against 0.58 at 28). Inside a train step oneDNN's calls
 * were slower still (an OpenMP tool timing each parallel region: HC's
 * projection 0.57 ms a call as one SGEMM per thread's rows, 0.23 here). In an
 * mHC train step (d 768, 2 layers) the step's overhead over the plain
 * model's fell from +7.2% to +6.6% with the first kernel and to +6.1% with
 * the gradient's too (docs/performance.md).
 *
 * Register tiles of 3 rows x 24 columns (6 x 16, 6 x 8 for fewer), op(B)
 * packed zero-padded to whole vectors (it stays in L2); A B reads A's rows
 * in place, threads sharing blocks of 4 tiles; A^T B copies A in chunks
 * first (transposedProduct). Each output element is summed by one thread
 * in order of its terms (fp32 FMAs, in chunks of 64 for A^T B): the bits
 * do not depend on the team. Used where the CPU has AVX2 and FMA and
 * oneDNN runs its AVX2 kernels (Kernels.c decides): with AVX-512 ones it
 * was not measured.
 *
 *===----------------------------------------------------------------------===*/
#include "NarrowGemm.h"
#include "Scratch.h"

#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

enum { kMaxVectors = 3, kTilesPerBlock = 4 };

/* Products smaller than this many multiply-adds run on the calling thread. */
static const int64_t kParallelWork = (int64_t)1 << 18;

/* One product: term q of row i of A is a[i * lda + q * step]; `b` is
 * op(B) packed as k rows of `ldb` floats (zero past n). */
struct Product {
  int64_t m, n, k;
  const float *a;
  int64_t lda, step;
  const float *b;
  int64_t ldb;
  float beta;
  float *c;
  int64_t ldc;
};

/* A mask of the first `count` (0..8) lanes. */
__attribute__((target("avx2,fma"))) static inline __m256i firstLanes(int64_t count) {
  static const int32_t ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256((const __m256i *)(ones + 8 - (count < 8 ? count : 8)));
}

/* c[0 : count] = v + beta c (c not read where beta is 0). */
__attribute__((target("avx2,fma"))) static inline void storeResult(float *c, __m256 v,
                                                                   float beta, int64_t count) {
  if (count >= 8) {
    if (beta != 0.0f)
      v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(c)));
    _mm256_storeu_ps(c, v);
    return;
  }
  __m256i mask = firstLanes(count);
  if (beta != 0.0f)
    v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_maskload_ps(c, mask)));
  _mm256_maskstore_ps(c, mask, v);
}

/* Rows `row`.. (`rows` of them, at most 6) of C, `vectors` (at
 * most kMaxVectors) x 8 columns wide. The accumulators are named variables,
 * not an array: with constant `rows` and `vectors` the unused ones vanish
 * and the rest stay in registers (clang kept a 4 x 3 array on the stack). */
#define ACC_ROW(i) __m256 c##i##0 = zero, c##i##1 = zero, c##i##2 = zero;
#define FMA_ROW(i)                                                                                \
  if (rows > i) {                                                                                 \
    __m256 x = _mm256_broadcast_ss(a + i * p->lda + q * p->step);                                 \
    c##i##0 = _mm256_fmadd_ps(x, b0, c##i##0);                                                    \
    if (vectors > 1)                                                                              \
      c##i##1 = _mm256_fmadd_ps(x, b1, c##i##1);                                                  \
    if (vectors > 2)                                                                              \
      c##i##2 = _mm256_fmadd_ps(x, b2, c##i##2);                                                  \
  }
#define STORE_ROW(i)                                                                              \
  if (rows > i) {                                                                                 \
    float *c = p->c + (row + i) * p->ldc;                                                         \
    storeResult(c, c##i##0, p->beta, p->n);                                                       \
    if (vectors > 1)                                                                              \
      storeResult(c + 8, c##i##1, p->beta, p->n - 8);                                             \
    if (vectors > 2)                                                                              \
      storeResult(c + 16, c##i##2, p->beta, p->n - 16);                                           \
  }
__attribute__((target("avx2,fma"), always_inline)) static inline void
tile(const struct Product *p, int64_t row, int rows, int vectors) {
  const float *a = p->a + row * p->lda;
  const __m256 zero = _mm256_setzero_ps();
  ACC_ROW(0) ACC_ROW(1) ACC_ROW(2) ACC_ROW(3) ACC_ROW(4) ACC_ROW(5)
  for (int64_t q = 0; q < p->k; ++q) {
    const float *bq = p->b + q * p->ldb;
    __m256 b0 = _mm256_loadu_ps(bq);
    __m256 b1 = vectors > 1 ? _mm256_loadu_ps(bq + 8) : zero;
    __m256 b2 = vectors > 2 ? _mm256_loadu_ps(bq + 16) : zero;
    FMA_ROW(0) FMA_ROW(1) FMA_ROW(2) FMA_ROW(3) FMA_ROW(4) FMA_ROW(5)
  }
  STORE_ROW(0) STORE_ROW(1) STORE_ROW(2) STORE_ROW(3) STORE_ROW(4) STORE_ROW(5)
}
#undef ACC_ROW
#undef FMA_ROW
#undef STORE_ROW

/* Rows per tile: the accumulators, one vector of B per column vector and
 * the broadcast within the 16 vector registers (3 x 3 for 24 columns: at 4
 * x 3 every register is taken and clang 22's allocator shuffles them,
 * 0.89 against 0.45 ms), and at most 6 rows (rows of A a multiple of 1024
 * floats apart share an L1 set: 8 ways). */
static int tileRows(int vectors) { return vectors == 3 ? 3 : 6; }

static int vectorsOf(int64_t n) { return (int)((n + 7) / 8); }

/* `rows` (<= tileRows(V)) rows from `row`, as tiles of constant height. */
#define TILES(V)                                                                                  \
  __attribute__((target("avx2,fma"), noinline)) static void tiles##V(                            \
      const struct Product *p, int64_t row, int64_t rows) {                                       \
    switch (rows) {                                                                               \
    case 6: if (V < 3) tile(p, row, 6, V); break; /* tileRows */                                  \
    case 5: if (V < 3) tile(p, row, 5, V); break;                                                 \
    case 4: if (V < 3) tile(p, row, 4, V); break;                                                 \
    case 3: tile(p, row, 3, V); break;                                                            \
    case 2: tile(p, row, 2, V); break;                                                            \
    default: tile(p, row, 1, V); break;                                                           \
    }                                                                                             \
  }
TILES(1)
TILES(2)
TILES(3)
#undef TILES

/* Rows [first, first + rows) of C, as tiles of `step` rows. */
static void rowBlock(const struct Product *p, int64_t first, int64_t rows, int64_t step) {
  int64_t end = first + rows < p->m ? first + rows : p->m;
  for (int64_t row = first; row < end; row += step) {
    int64_t height = end - row < step ? end - row : step;
    if (p->n > 16)
      tiles3(p, row, height);
    else if (p->n > 8)
      tiles2(p, row, height);
    else
      tiles1(p, row, height);
  }
}

/* x[i, j] of a row-major matrix, or of its transpose. */
static inline float at(const float *x, int64_t ld, int transposed, int64_t i, int64_t j) {
  return transposed ? x[j * ld + i] : x[i * ld + j];
}

/* op(X) ([rows, cols]) copied to rows of `ld` floats, zero past `cols`. */
static void pack(float *dst, int64_t ld, const float *x, int64_t ldx, int transposed,
                 int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      dst[i * ld + j] = at(x, ldx, transposed, i, j);
    for (int64_t j = cols; j < ld; ++j)
      dst[i * ld + j] = 0.0f;
  }
}

/* A^T B, A stored [k, m] (a weight gradient x^T dz): C's rows are A's
 * columns. Threads share them in blocks of kColumns. A block sums over
 * chunks of kChunk rows of A, each copied first as vectors of 8 columns,
 * the kChunk terms of each contiguous (64 KiB, in L2): one vector is the A
 * of a product with 8 rows that the tiles above run, its partial sums in P
 * (the block's rows of C, n floats wide padded to whole vectors). In place,
 * a row's terms are lda floats apart, for lda a multiple of 1024 all in one
 * L1 set. mHC's 3072 x 24 x 512 gradient, one core, warm caches: 31
 * GFLOP/s computing C^T in place over all terms at once, 60 in place in
 * chunks, 62 copied; 2 threads, A freshly written: 0.72 ms against 0.97 as
 * Kernels.c's (B^T A)^T on oneDNN and 1.10 as oneDNN's A^T B. */
enum { kChunk = 64, kColumns = 256 };
/* A^T B runs here for 17 to 24 columns and at least this many rows of C:
 * narrower or shorter ones were faster as Kernels.c's (B^T A)^T on oneDNN
 * (1024 x 20 x 512: 0.32 against 0.18 ms; 768 x 12 x 2048: 0.71 against
 * 0.27; 3072 x 9 x 512: 0.64 against 0.30), this one ahead at 3072 x 24 x
 * 512 (0.72 against 0.97) and 3072 x 24 x 2048 (2.9 against 3.9). */
static const int64_t kMinTransposedRows = 2048;

/* Rows [0, terms) x columns [0, width) of `a` (rows lda floats apart) to
 * `xs` as vectors of 8 columns, kChunk rows of each (zero past `width`):
 * a line (16 columns) of each row at a time, each written sequentially. */
__attribute__((target("avx2,fma"), noinline)) static void
copyChunk(float *xs, const float *a, int64_t lda, int64_t terms, int64_t width) {
  for (int64_t j = 0; j < width; j += 16) {
    float *lo = xs + (j / 8) * kChunk * 8, *hi = lo + kChunk * 8;
    int64_t left = width - j;
    if (left >= 16) {
      for (int64_t q = 0; q < terms; ++q) {
        _mm256_storeu_ps(lo + q * 8, _mm256_loadu_ps(a + q * lda + j));
        _mm256_storeu_ps(hi + q * 8, _mm256_loadu_ps(a + q * lda + j + 8));
      }
      continue;
    }
    __m256i first = firstLanes(left), second = firstLanes(left > 8 ? left - 8 : 0);
    for (int64_t q = 0; q < terms; ++q) {
      _mm256_storeu_ps(lo + q * 8, _mm256_maskload_ps(a + q * lda + j, first));
      if (left > 8)
        _mm256_storeu_ps(hi + q * 8, _mm256_maskload_ps(a + q * lda + j + 8, second));
    }
  }
}

/* C's rows [first, end) (A's columns, at most kColumns) of A^T B (`p`),
 * through P (kColumns rows of p->ldb floats); `xs` holds a chunk. */
static void transposedBlock(const struct Product *p, float *P, float *xs, int64_t first,
                            int64_t end) {
  int64_t width = end - first, step = tileRows(vectorsOf(p->n));
  for (int64_t q0 = 0; q0 < p->k; q0 += kChunk) {
    int64_t terms = q0 + kChunk < p->k ? kChunk : p->k - q0;
    copyChunk(xs, p->a + q0 * p->lda + first, p->lda, terms, width);
    for (int64_t v = 0; v * 8 < width; ++v) {
      /* Rows v * 8.. of P += this chunk's terms (P is first written). */
      struct Product part = {width - v * 8 < 8 ? width - v * 8 : 8, p->n, terms,
                             xs + v * kChunk * 8, 1, 8, p->b + q0 * p->ldb, p->ldb,
                             q0 == 0 ? 0.0f : 1.0f, P + v * 8 * p->ldb, p->ldb};
      rowBlock(&part, 0, part.m, step);
    }
  }
  for (int64_t i = first; i < end; ++i) {
    float *c = p->c + i * p->ldc;
    const float *sum = P + (i - first) * p->ldb;
    for (int64_t r = 0; r < p->n; ++r)
      c[r] = p->beta == 0.0f ? sum[r] : sum[r] + p->beta * c[r];
  }
}

/* Per thread: op(B) packed; A^T B's partial sums and chunk. */
static __thread struct Scratch packedB, partial, chunk;

/* A^T B: every thread has its buffers before any writes C; where one
 * cannot, C is untouched and the caller's SGEMM runs. */
static int transposedProduct(const struct Product *p, int parallel) {
  int failed = 0;
  int64_t blocks = (p->m + kColumns - 1) / kColumns;
#pragma omp parallel if (parallel)
  {
    float *P = reserve(&partial, kColumns, p->ldb), *xs = reserve(&chunk, kChunk, kColumns);
    if (!P || !xs) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp barrier
    int stop;
#pragma omp atomic read
    stop = failed;
    if (!stop) {
#pragma omp for schedule(static)
      for (int64_t b = 0; b < blocks; ++b)
        transposedBlock(p, P, xs, b * kColumns,
                        (b + 1) * kColumns < p->m ? (b + 1) * kColumns : p->m);
    }
  }
  return !failed;
}

static int hasAvx2Fma(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

int rewire_narrow_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a,
                        int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc) {
  if (n < 2 || n > 8 * kMaxVectors || m <= 0 || k <= 0 || !hasAvx2Fma() ||
      (ta && (n <= 16 || m < kMinTransposedRows)))
    return 0;
  int64_t width = 8 * vectorsOf(n);
  float *pb = reserve(&packedB, k, width);
  if (!pb)
    return 0;
  pack(pb, width, b, ldb, tb, k, n);
  struct Product p = {m, n, k, a, lda, 1, pb, width, beta, c, ldc};
  int parallel = m * n * k >= kParallelWork && !omp_in_parallel();
  if (ta)
    return transposedProduct(&p, parallel);
  int64_t step = tileRows(vectorsOf(n)), rows = kTilesPerBlock * step;
  int64_t blocks = (m + rows - 1) / rows;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < blocks; ++i)
    rowBlock(&p, i * rows, rows, step);
  return 1;
}
