/*===- HyperKernels.c - Fused per-token passes of hyper streams ----------===*/
/*
 * rewire_hyper_write_grad: the reductions of the reverse of a hyper
 * stream's write (residual.hyper_write, papers.md 6.1, 6.2),
 *
 *   X'[t, i, :] = sum_j res[t, i, j] X[t, j, :] + post[t, i] u[t, :]
 *
 * that read the adjoint g = dL/dX' (residual.hyper_write_grad):
 *
 *   du[t, :]      = sum_i post[t, i] g[t, i, :]
 *   dpost[t, i]   = sum_k g[t, i, k] u[t, k]
 *   dres[t, i, j] = sum_k g[t, i, k] X[t, j, k]
 *
 * As three loops each pass reads g from memory (and dres X as well): 3 reads
 * of the n x d adjoint a token. Here a token's rows are read once and the
 * other sums find them in L1 (n = 4, d = 768: 24 KiB a token). Tokens are
 * shared by the threads; every output is summed by one thread in a fixed
 * order, so the bits do not depend on the team.
 */
#include "HyperKernels.h"

#include <omp.h>
#include <stddef.h>
#include <stdint.h>

/* out[j] = sum_k a[k] rows[j][k] for up to kDots rows, over d contiguous
 * floats: independent sums, so the loop is not bound by the latency of one
 * chain of FMAs (missing rows repeat the first; their sums are dropped). */
enum { kDots = 6 };
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static void
dots(float *out[kDots], const float *restrict a, const float *rows[kDots], int64_t count,
     int64_t d) {
  const float *b0 = rows[0], *b1 = count > 1 ? rows[1] : b0, *b2 = count > 2 ? rows[2] : b0,
              *b3 = count > 3 ? rows[3] : b0, *b4 = count > 4 ? rows[4] : b0,
              *b5 = count > 5 ? rows[5] : b0;
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f;
#pragma omp simd reduction(+ : s0, s1, s2, s3, s4, s5)
  for (int64_t k = 0; k < d; ++k) {
    s0 += a[k] * b0[k];
    s1 += a[k] * b1[k];
    s2 += a[k] * b2[k];
    s3 += a[k] * b3[k];
    s4 += a[k] * b4[k];
    s5 += a[k] * b5[k];
  }
  float s[kDots] = {s0, s1, s2, s3, s4, s5};
  for (int64_t j = 0; j < count; ++j)
    *out[j] = s[j];
}

/* out[k] = sum_i w[i * ws] rows[i * rs + k] over n rows of d contiguous floats. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static void
weightedRows(float *restrict out, const float *restrict rows, int64_t rs, const float *w,
             int64_t ws, int64_t n, int64_t d) {
  float w0 = w[0];
#pragma omp simd
  for (int64_t k = 0; k < d; ++k)
    out[k] = w0 * rows[k];
  for (int64_t i = 1; i < n; ++i) {
    const float *row = rows + i * rs;
    float wi = w[i * ws];
#pragma omp simd
    for (int64_t k = 0; k < d; ++k)
      out[k] += wi * row[k];
  }
}

/* The same sums through any strides (an operand that is a strided view). */
static float dotStrided(const float *a, int64_t as, const float *b, int64_t bs, int64_t d) {
  float sum = 0.0f;
  for (int64_t k = 0; k < d; ++k)
    sum += a[k * as] * b[k * bs];
  return sum;
}

/* Pointers are aligned bases with offsets in elements, strides in elements:
 * g and x [tokens, n, d], u and du [tokens, d], post and dpost [tokens, n]
 * (post's token stride 0 when it is static), dres [tokens, n, n].
 * `threads` 0 means OpenMP's default team. */
void rewire_hyper_write_grad(int64_t g, int64_t gOff, int64_t gsT, int64_t gsN, int64_t gsD,
                             int64_t x, int64_t xOff, int64_t xsT, int64_t xsN, int64_t xsD,
                             int64_t u, int64_t uOff, int64_t usT, int64_t usD,
                             int64_t post, int64_t pOff, int64_t psT, int64_t psN,
                             int64_t du, int64_t duOff, int64_t dusT, int64_t dusD,
                             int64_t dpost, int64_t dpOff, int64_t dpsT, int64_t dpsN,
                             int64_t dres, int64_t drOff, int64_t drsT, int64_t drsI,
                             int64_t drsJ, int64_t tokens, int64_t n, int64_t d,
                             int64_t threads) {
  if (tokens <= 0 || n <= 0)
    return;
  const float *G = (const float *)(intptr_t)g + gOff;
  const float *X = (const float *)(intptr_t)x + xOff;
  const float *U = (const float *)(intptr_t)u + uOff;
  const float *P = (const float *)(intptr_t)post + pOff;
  float *DU = (float *)(intptr_t)du + duOff;
  float *DP = (float *)(intptr_t)dpost + dpOff;
  float *DR = (float *)(intptr_t)dres + drOff;
  int contiguous = gsD == 1 && xsD == 1 && usD == 1 && dusD == 1;
  int team = threads > 0 ? (int)threads : omp_get_max_threads();
  if (team < 1)
    team = 1;
  if (tokens < team)
    team = (int)tokens;
#pragma omp parallel for schedule(static) num_threads(team)
  for (int64_t t = 0; t < tokens; ++t) {
    const float *gt = G + t * gsT, *xt = X + t * xsT, *ut = U + t * usT, *pt = P + t * psT;
    float *dut = DU + t * dusT;
    for (int64_t i = 0; i < n; ++i) {
      const float *gi = gt + i * gsN;
      float *dres = DR + t * drsT + i * drsI;
      if (contiguous) {
        /* g_i . u and g_i . x_j, kDots at a time (u's row and the stream's
         * are read from the cache after the first i). */
        float *out[kDots];
        const float *rows[kDots];
        int64_t count = 0;
        for (int64_t j = -1; j < n; ++j) {
          out[count] = j < 0 ? DP + t * dpsT + i * dpsN : dres + j * drsJ;
          rows[count++] = j < 0 ? ut : xt + j * xsN;
          if (count == kDots || j == n - 1) {
            dots(out, gi, rows, count, d);
            count = 0;
          }
        }
        continue;
      }
      DP[t * dpsT + i * dpsN] = dotStrided(gi, gsD, ut, usD, d);
      for (int64_t j = 0; j < n; ++j)
        dres[j * drsJ] = dotStrided(gi, gsD, xt + j * xsN, xsD, d);
    }
    if (contiguous) {
      weightedRows(dut, gt, gsN, pt, psN, n, d);
    } else {
      for (int64_t k = 0; k < d; ++k) {
        float sum = 0.0f;
        for (int64_t i = 0; i < n; ++i)
          sum += pt[i * psN] * gt[i * gsN + k * gsD];
        dut[k * dusD] = sum;
      }
    }
  }
}
