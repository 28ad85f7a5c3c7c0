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
 *
 * rewire_hyper_write_grad_sum: the same reductions where g is the sum the
 * autodiff engine makes of the stream's adjoint after the next site's
 * reverse: the next write's term res'^T g' (g' the adjoint of that write's
 * output, res' its mixing), the next read's pre (x) dh and the projections'
 * term e (rewire_hyper_project_grad's dX):
 *
 *   g[t, j, :] = sum_i res'[t, i, j] g'[t, i, :] + pre[t, j] dh[t, :] + e[t, j, :]
 *
 * As a separate loop the sum reads g' and e and writes g, which the
 * reductions read back from memory; here a block of tokens' rows of g is
 * written and the reductions find them in L2 (kSumBlock). g is an output
 * (the reverse of the site before reads it).
 */
#include "HyperKernels.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Kernels.c: the artifact's allocator for temporaries (ends the call with a
 * message when memory runs out) and its error path. */
void *_mlir_memref_to_llvm_alloc(size_t size);
void _mlir_memref_to_llvm_free(void *ptr);
void rewire_kernel_failed(const char *message);

/* W [K, k] (an mHC site's coefficient projections side by side) as up to
 * kWeightParts column blocks, each its own buffer: the maps' weights are
 * separate parameters, and a concatenated copy of them (and a gradient
 * split back out of one [K, k] buffer, which the optimizer then read with
 * a stride of k) cost more than the kernels' own use of them. Part q holds
 * W's columns [first, first + cols), strides (sK, sJ); its dW part is dense
 * [K, cols]. A part with cols 0 is unused. */
enum { kWeightParts = 3 };
typedef struct {
  const float *w;
  int64_t sK, sJ, cols, first;
} WeightPart;

/* The parts of a call's W from its (pointer, offset, sK, sJ, cols) values;
 * ends the call unless the columns add up to k. */
static void weightParts(WeightPart parts[kWeightParts], const int64_t desc[kWeightParts][5],
                        int64_t k, const char *who) {
  int64_t first = 0;
  for (int q = 0; q < kWeightParts; ++q) {
    int64_t cols = desc[q][4];
    if (cols < 0 || cols > k - first || (cols > 0 && desc[q][0] == 0))
      rewire_kernel_failed(who);
    parts[q].w = cols ? (const float *)(intptr_t)desc[q][0] + desc[q][1] : NULL;
    parts[q].sK = desc[q][2];
    parts[q].sJ = desc[q][3];
    parts[q].cols = cols;
    parts[q].first = first;
    first += cols;
  }
  if (first != k)
    rewire_kernel_failed(who);
}

/* The part holding W's column j (< k). */
static int partOf(const WeightPart parts[kWeightParts], int64_t j) {
  int q = 0;
  while (j >= parts[q].first + parts[q].cols)
    ++q;
  return q;
}

/* W[c, j] and dW's element (c, j) through the parts. */
static float weightAt(const WeightPart parts[kWeightParts], int64_t c, int64_t j) {
  const WeightPart *p = &parts[partOf(parts, j)];
  return p->w[c * p->sK + (j - p->first) * p->sJ];
}
static float *gradAt(const WeightPart parts[kWeightParts], float *const dw[kWeightParts],
                     int64_t c, int64_t j) {
  int q = partOf(parts, j);
  return dw[q] + c * parts[q].cols + (j - parts[q].first);
}

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

/* One token's reductions: du, dpost and dres of g's n rows (strides gsN,
 * gsD) against x's and u's. */
static void writeGradToken(const float *gt, int64_t gsN, int64_t gsD, const float *xt,
                           int64_t xsN, int64_t xsD, const float *ut, int64_t usD,
                           const float *pt, int64_t psN, float *dut, int64_t dusD, float *dpt,
                           int64_t dpsN, float *drt, int64_t drsI, int64_t drsJ, int64_t n,
                           int64_t d) {
  int contiguous = gsD == 1 && xsD == 1 && usD == 1 && dusD == 1;
  for (int64_t i = 0; i < n; ++i) {
    const float *gi = gt + i * gsN;
    float *dres = drt + i * drsI;
    if (contiguous) {
      /* g_i . u and g_i . x_j, kDots at a time (u's row and the stream's
       * are read from the cache after the first i). */
      float *out[kDots];
      const float *rows[kDots];
      int64_t count = 0;
      for (int64_t j = -1; j < n; ++j) {
        out[count] = j < 0 ? dpt + i * dpsN : dres + j * drsJ;
        rows[count++] = j < 0 ? ut : xt + j * xsN;
        if (count == kDots || j == n - 1) {
          dots(out, gi, rows, count, d);
          count = 0;
        }
      }
      continue;
    }
    dpt[i * dpsN] = dotStrided(gi, gsD, ut, usD, d);
    for (int64_t j = 0; j < n; ++j)
      dres[j * drsJ] = dotStrided(gi, gsD, xt + j * xsN, xsD, d);
  }
  if (contiguous) {
    weightedRows(dut, gt, gsN, pt, psN, n, d);
    return;
  }
  for (int64_t k = 0; k < d; ++k) {
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i)
      sum += pt[i * psN] * gt[i * gsN + k * gsD];
    dut[k * dusD] = sum;
  }
}

static int teamFor(int64_t threads, int64_t tokens) {
  int team = threads > 0 ? (int)threads : omp_get_max_threads();
  if (team < 1)
    team = 1;
  if (tokens < team)
    team = (int)tokens;
  return team;
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
#pragma omp parallel for schedule(static) num_threads(teamFor(threads, tokens))
  for (int64_t t = 0; t < tokens; ++t)
    writeGradToken(G + t * gsT, gsN, gsD, X + t * xsT, xsN, xsD, U + t * usT, usD, P + t * psT,
                   psN, DU + t * dusT, dusD, DP + t * dpsT, dpsN, DR + t * drsT, drsI, drsJ, n,
                   d);
}

/* Row j of one token's g = res^T h + b v + e (sumToken): a points at
 * res[0, j] (rows asI apart), h's rows are hsN apart; b (b_j) and e
 * (e_j's row) are optional. Contiguous rows. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static void
sumRow(float *restrict out, const float *restrict h, int64_t hsN, const float *a, int64_t asI,
       float b, const float *restrict v, const float *restrict e, int64_t n, int64_t d) {
  if (n == 4) { /* mHC's and HC's default: one pass over the row */
    const float *h0 = h, *h1 = h + hsN, *h2 = h + 2 * hsN, *h3 = h + 3 * hsN;
    float a0 = a[0], a1 = a[asI], a2 = a[2 * asI], a3 = a[3 * asI];
    if (v && e) {
#pragma omp simd
      for (int64_t k = 0; k < d; ++k)
        out[k] = a0 * h0[k] + a1 * h1[k] + a2 * h2[k] + a3 * h3[k] + b * v[k] + e[k];
    } else if (v) {
#pragma omp simd
      for (int64_t k = 0; k < d; ++k)
        out[k] = a0 * h0[k] + a1 * h1[k] + a2 * h2[k] + a3 * h3[k] + b * v[k];
    } else if (e) {
#pragma omp simd
      for (int64_t k = 0; k < d; ++k)
        out[k] = a0 * h0[k] + a1 * h1[k] + a2 * h2[k] + a3 * h3[k] + e[k];
    } else {
#pragma omp simd
      for (int64_t k = 0; k < d; ++k)
        out[k] = a0 * h0[k] + a1 * h1[k] + a2 * h2[k] + a3 * h3[k];
    }
    return;
  }
  weightedRows(out, h, hsN, a, asI, n, d);
  if (v) {
#pragma omp simd
    for (int64_t k = 0; k < d; ++k)
      out[k] += b * v[k];
  }
  if (e) {
#pragma omp simd
    for (int64_t k = 0; k < d; ++k)
      out[k] += e[k];
  }
}

/* Tokens a thread sums before it takes their reductions: each phase reads
 * its operands in longer runs (in the step 0.94-0.98 ms a call for 32
 * tokens, 1.11-1.13 for 8; n 4, d 768, 512 tokens), and 32 tokens' rows of
 * g (384 KiB) stay in L2 for the second phase. */
enum { kSumBlock = 32 };

/* One token's g (dense rows, d apart): g_j = sum_i a[i, j] h_i + b_j v + e_j,
 * through any strides. */
static void sumToken(float *gt, const float *ht, int64_t hsN, int64_t hsD, const float *at,
                     int64_t asI, int64_t asJ, const float *bt, int64_t bsN, const float *vt,
                     int64_t vsD, const float *et, int64_t esN, int64_t esD, int64_t n,
                     int64_t d) {
  int contiguous = hsD == 1 && (!bt || vsD == 1) && (!et || esD == 1);
  for (int64_t j = 0; j < n; ++j) {
    float *gj = gt + j * d;
    float bj = bt ? bt[j * bsN] : 0.0f;
    const float *ej = et ? et + j * esN : 0;
    if (contiguous) {
      sumRow(gj, ht, hsN, at + j * asJ, asI, bj, bt ? vt : 0, ej, n, d);
      continue;
    }
    for (int64_t k = 0; k < d; ++k) {
      float sum = 0.0f;
      for (int64_t i = 0; i < n; ++i)
        sum += at[i * asI + j * asJ] * ht[i * hsN + k * hsD];
      if (bt)
        sum += bj * vt[k * vsD];
      if (et)
        sum += ej[k * esD];
      gj[k] = sum;
    }
  }
}

void rewire_hyper_write_grad_sum(
    int64_t h, int64_t hOff, int64_t hsT, int64_t hsN, int64_t hsD, int64_t a, int64_t aOff,
    int64_t asT, int64_t asI, int64_t asJ, int64_t b, int64_t bOff, int64_t bsT, int64_t bsN,
    int64_t v, int64_t vOff, int64_t vsT, int64_t vsD, int64_t e, int64_t eOff, int64_t esT,
    int64_t esN, int64_t esD, int64_t g, int64_t gOff, int64_t x, int64_t xOff, int64_t xsT,
    int64_t xsN, int64_t xsD, int64_t u, int64_t uOff, int64_t usT, int64_t usD, int64_t post,
    int64_t pOff, int64_t psT, int64_t psN, int64_t du, int64_t duOff, int64_t dusT,
    int64_t dusD, int64_t dpost, int64_t dpOff, int64_t dpsT, int64_t dpsN, int64_t dres,
    int64_t drOff, int64_t drsT, int64_t drsI, int64_t drsJ, int64_t tokens, int64_t n,
    int64_t d, int64_t threads) {
  if (tokens <= 0 || n <= 0 || d <= 0)
    return;
  if (n > INT64_MAX / d)
    rewire_kernel_failed("hyper_write_grad_sum: the stream's n * d features overflow");
  const float *H = (const float *)(intptr_t)h + hOff, *A = (const float *)(intptr_t)a + aOff,
              *B = b ? (const float *)(intptr_t)b + bOff : 0,
              *V = b ? (const float *)(intptr_t)v + vOff : 0,
              *E = e ? (const float *)(intptr_t)e + eOff : 0;
  float *G = (float *)(intptr_t)g + gOff;
  const float *X = (const float *)(intptr_t)x + xOff;
  const float *U = (const float *)(intptr_t)u + uOff;
  const float *P = (const float *)(intptr_t)post + pOff;
  float *DU = (float *)(intptr_t)du + duOff;
  float *DP = (float *)(intptr_t)dpost + dpOff;
  float *DR = (float *)(intptr_t)dres + drOff;
  int64_t K = n * d;
  int64_t blocks = (tokens + kSumBlock - 1) / kSumBlock;
#pragma omp parallel for schedule(static) num_threads(teamFor(threads, blocks))
  for (int64_t q = 0; q < blocks; ++q) {
    int64_t t0 = q * kSumBlock, t1 = t0 + kSumBlock < tokens ? t0 + kSumBlock : tokens;
    for (int64_t t = t0; t < t1; ++t)
      sumToken(G + t * K, H + t * hsT, hsN, hsD, A + t * asT, asI, asJ, B ? B + t * bsT : 0,
               bsN, V ? V + t * vsT : 0, vsD, E ? E + t * esT : 0, esN, esD, n, d);
    for (int64_t t = t0; t < t1; ++t)
      writeGradToken(G + t * K, d, 1, X + t * xsT, xsN, xsD, U + t * usT, usD, P + t * psT,
                     psN, DU + t * dusT, dusD, DP + t * dpsT, dpsN, DR + t * drsT, drsI, drsJ,
                     n, d);
  }
}

/*===----------------------------------------------------------------------===*
 * rewire_hyper_project_grad: the reverse of an mHC site's coefficient
 * projection (residual.hyper_project_grad), z = r (x . W) with x a token's
 * n streams flattened (K = n d features) and r = 1/sqrt(mean(x^2) + eps):
 *
 *   dX[t, :] = (r_t dz_t) . W^T + s_t x_t,   s_t = -(r_t^3 / K) sum_j dz_tj p_tj
 *   dW       = sum_t x_t^T (r_t dz_t)
 *
 * with p = x . W the unscaled projection. As separate ops the two products
 * (k = n^2 + 2n terms, 24 for n = 4) each read the stream and the first
 * writes a stream-sized tensor the sum reads back; here the stream is read
 * once and dX written once. The threads share the K columns in chunks of
 * kChunk: a chunk's k x kChunk slice of W^T and of the dW accumulator stay
 * in L1 (laid out [k][kChunk], so their rows are not 4 KiB apart: rows of
 * the full [k][K] transposes aliased in the store buffer and cost 2x), and
 * kTokens tokens at a time share each load of them. Every output element
 * is summed by one thread in a fixed order: the bits do not depend on the
 * team.
 *===----------------------------------------------------------------------===*/


typedef float vfloat16 __attribute__((vector_size(64), aligned(4)));

enum { kChunk = 64, kTokens = 8 };

/* Columns [c0, c0 + cols) of dX for every token and of dW. D [tokens, k]
 * (r dz) and S [tokens] are dense; x's rows are contiguous (row stride xs),
 * dX's likewise (dxs); W comes in its parts and dW goes to theirs (dw[q]
 * dense [K, parts[q].cols]); wt, dwt are [k][kChunk] scratch. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static void
projectGradChunk(const float *restrict x, int64_t xs, float *restrict dx, int64_t dxs,
                 const float *restrict D, const float *restrict S, const WeightPart *parts,
                 float *const *dw, float *restrict wt, float *restrict dwt, int64_t tokens,
                 int64_t k, int64_t c0, int64_t cols) {
  for (int q = 0; q < kWeightParts; ++q)
    for (int64_t jj = 0; jj < parts[q].cols; ++jj) {
      const float *w = parts[q].w + jj * parts[q].sJ;
      float *row = wt + (parts[q].first + jj) * kChunk;
      for (int64_t c = 0; c < cols; ++c)
        row[c] = w[(c0 + c) * parts[q].sK];
    }
  memset(dwt, 0, sizeof(float) * kChunk * (size_t)k);
  int64_t vecCols = cols == kChunk ? kChunk : 0; /* a partial chunk: scalar */
  int64_t t = 0;
  for (; vecCols && t + kTokens <= tokens; t += kTokens) {
    for (int64_t c = 0; c < vecCols; c += 16) {
      vfloat16 xv[kTokens], acc[kTokens];
      for (int b = 0; b < kTokens; ++b) {
        xv[b] = *(const vfloat16 *)(x + (t + b) * xs + c0 + c);
        acc[b] = xv[b] * S[t + b];
      }
      for (int64_t j = 0; j < k; ++j) {
        vfloat16 wv = *(const vfloat16 *)(wt + j * kChunk + c);
        vfloat16 dwv = *(vfloat16 *)(dwt + j * kChunk + c);
        for (int b = 0; b < kTokens; ++b) {
          float dj = D[(t + b) * k + j];
          acc[b] += dj * wv;
          dwv += dj * xv[b];
        }
        *(vfloat16 *)(dwt + j * kChunk + c) = dwv;
      }
      for (int b = 0; b < kTokens; ++b)
        *(vfloat16 *)(dx + (t + b) * dxs + c0 + c) = acc[b];
    }
  }
  for (; t < tokens; ++t)
    for (int64_t c = 0; c < cols; ++c) {
      float xv = x[t * xs + c0 + c], acc = xv * S[t];
      for (int64_t j = 0; j < k; ++j) {
        acc += D[t * k + j] * wt[j * kChunk + c];
        dwt[j * kChunk + c] += D[t * k + j] * xv;
      }
      dx[t * dxs + c0 + c] = acc;
    }
  for (int q = 0; q < kWeightParts; ++q) {
    int64_t pc = parts[q].cols;
    const float *src = dwt + parts[q].first * kChunk;
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t jj = 0; jj < pc; ++jj)
        dw[q][(c0 + c) * pc + jj] = src[jj * kChunk + c];
  }
}

void rewire_hyper_project_grad(int64_t dz, int64_t dzOff, int64_t dzsT, int64_t dzsJ,
                               int64_t p, int64_t pOff, int64_t psT, int64_t psJ,
                               int64_t r, int64_t rOff, int64_t rsT,
                               int64_t x, int64_t xOff, int64_t xsT, int64_t xsN, int64_t xsD,
                               int64_t w0, int64_t w0Off, int64_t w0sK, int64_t w0sJ,
                               int64_t w0Cols, int64_t w1, int64_t w1Off, int64_t w1sK,
                               int64_t w1sJ, int64_t w1Cols, int64_t w2, int64_t w2Off,
                               int64_t w2sK, int64_t w2sJ, int64_t w2Cols, int64_t dx,
                               int64_t dxOff, int64_t dw0, int64_t dw0Off, int64_t dw1,
                               int64_t dw1Off, int64_t dw2, int64_t dw2Off, int64_t tokens,
                               int64_t n, int64_t d, int64_t k, int64_t threads) {
  if (n <= 0 || d <= 0 || k <= 0)
    return;
  if (n > INT64_MAX / d)
    rewire_kernel_failed("hyper_project_grad: the stream's n * d features overflow");
  int64_t K = n * d;
  if (k > INT64_MAX / K)
    rewire_kernel_failed("hyper_project_grad: the weight's n * d * k elements overflow");
  const int64_t desc[kWeightParts][5] = {{w0, w0Off, w0sK, w0sJ, w0Cols},
                                         {w1, w1Off, w1sK, w1sJ, w1Cols},
                                         {w2, w2Off, w2sK, w2sJ, w2Cols}};
  WeightPart parts[kWeightParts];
  weightParts(parts, desc, k, "hyper_project_grad: the weight's parts do not make its k columns");
  const int64_t grads[kWeightParts][2] = {{dw0, dw0Off}, {dw1, dw1Off}, {dw2, dw2Off}};
  float *DW[kWeightParts];
  for (int q = 0; q < kWeightParts; ++q) {
    if (parts[q].cols && !grads[q][0])
      rewire_kernel_failed("hyper_project_grad: a weight part has no gradient buffer");
    DW[q] = parts[q].cols ? (float *)(intptr_t)grads[q][0] + grads[q][1] : NULL;
  }
  if (tokens <= 0) { /* no tokens: dW is an empty sum */
    for (int q = 0; q < kWeightParts; ++q)
      if (parts[q].cols)
        memset(DW[q], 0, sizeof(float) * (size_t)K * (size_t)parts[q].cols);
    return;
  }
  const float *DZ = (const float *)(intptr_t)dz + dzOff, *P = (const float *)(intptr_t)p + pOff,
              *R = (const float *)(intptr_t)r + rOff, *X = (const float *)(intptr_t)x + xOff;
  float *DX = (float *)(intptr_t)dx + dxOff;
  int64_t chunks = (K + kChunk - 1) / kChunk;
  int team = threads > 0 ? (int)threads : omp_get_max_threads();
  if (team < 1)
    team = 1;
  if (chunks < team)
    team = (int)chunks;
  /* Scratch: D = r dz [tokens, k] and S [tokens], then per thread the
   * chunk's W^T and dW^T slices, [k][kChunk] each. */
  size_t perThread = 2 * (size_t)kChunk * (size_t)k;
  size_t floats = 0;
  if ((size_t)k + 1 > (SIZE_MAX / sizeof(float)) / (size_t)tokens ||
      perThread / 2 / kChunk != (size_t)k || perThread > (SIZE_MAX / sizeof(float)) / (size_t)team)
    rewire_kernel_failed("hyper_project_grad: the scratch size overflows (too many tokens or "
                         "coefficients)");
  floats = ((size_t)k + 1) * (size_t)tokens;
  floats = (floats + 15) & ~(size_t)15; /* the threads' slices 64-byte aligned */
  if (floats > (SIZE_MAX / sizeof(float)) - perThread * (size_t)team)
    rewire_kernel_failed("hyper_project_grad: the scratch size overflows");
  float *scratch = (float *)_mlir_memref_to_llvm_alloc(sizeof(float) *
                                                       (floats + perThread * (size_t)team));
  float *D = scratch, *S = scratch + (size_t)tokens * (size_t)k;
  for (int64_t t = 0; t < tokens; ++t) {
    float rt = R[t * rsT], dot = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
      float g = DZ[t * dzsT + j * dzsJ];
      D[t * k + j] = rt * g;
      dot += g * P[t * psT + j * psJ];
    }
    S[t] = -(rt * rt * rt / (float)K) * dot;
  }
  if (xsD != 1 || xsN != d) {
    /* A stream whose token rows are not contiguous: the same sums in the
     * same order, through its strides (views the pipeline does not make). */
    for (int q = 0; q < kWeightParts; ++q)
      if (parts[q].cols)
        memset(DW[q], 0, sizeof(float) * (size_t)K * (size_t)parts[q].cols);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t c = 0; c < K; ++c) {
        float xv = X[t * xsT + (c / d) * xsN + (c % d) * xsD], acc = xv * S[t];
        for (int64_t j = 0; j < k; ++j) {
          acc += D[t * k + j] * weightAt(parts, c, j);
          *gradAt(parts, DW, c, j) += D[t * k + j] * xv;
        }
        DX[t * K + c] = acc;
      }
    _mlir_memref_to_llvm_free(scratch);
    return;
  }
#pragma omp parallel num_threads(team)
  {
    float *wt = scratch + floats + (size_t)omp_get_thread_num() * perThread;
#pragma omp for schedule(static)
    for (int64_t q = 0; q < chunks; ++q) {
      int64_t c0 = q * kChunk, cols = K - c0 < kChunk ? K - c0 : kChunk;
      projectGradChunk(X, xsT, DX, K, D, S, parts, DW, wt, wt + (size_t)kChunk * k, tokens, k,
                       c0, cols);
    }
  }
  _mlir_memref_to_llvm_free(scratch);
}

/*===----------------------------------------------------------------------===*
 * rewire_hyper_write_project: an mHC stream write and the coefficient
 * projection that reads the written stream (residual.hyper_write, then the
 * hyper_coeffs of the next site, whose rows are each token's n streams
 * flattened, K = n d features), in one pass over the stream:
 *
 *   X'[t, i, :] = sum_j res[t, i, j] X[t, j, :] + post[t, i] u[t, :]
 *   p[t, :]     = X'[t] . W                   (W [K, k]: the site's maps'
 *                                              projections side by side,
 *                                              in up to kWeightParts
 *                                              buffers)
 *   r[t]        = 1 / sqrt(mean(X'[t]^2) + eps)
 *
 * As separate ops the write reads the stream and writes X', then the
 * product and the mean of squares each read X' back (the product at ~70%
 * of the FMA peak while the write waits on memory). Here each token's
 * rows are written, squared and summed while they are in L1, and groups of
 * kGroup tokens are projected from L2 against a transposed copy of W (rows
 * padded so that they do not alias in L1), kCols of its columns at a time
 * in registers (kGroup x kCols accumulators), while the next group's
 * stream rows are prefetched. Tokens are shared by the threads; every sum
 * is taken by one thread in a fixed order: the bits do not depend on the
 * team. CPUs without AVX-512 write the rows the same way and take the
 * product from rewire_sgemm (their best narrow GEMM). Without x the stream
 * starts (residual.hyper_expand): X'[t, i, :] = u[t, :].
 *===----------------------------------------------------------------------===*/

void rewire_sgemm(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k, int64_t a,
                  int64_t aoff, int64_t lda, int64_t b, int64_t boff, int64_t ldb, int64_t c,
                  int64_t coff, int64_t ldc, float beta);

enum { kGroup = 4, kCols = 6 };

/* out[i, :] = sum_j res[i * rsI + j * rsJ] x_j + post[i * psN] u over one
 * token (x_j = x + j * xsN, elements xsD apart; u's usD apart; out dense
 * [n][d]), or without x (the stream's start, residual.hyper_expand) out[i,
 * :] = u; returns the sum of the squares of out, row by row in order. */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) static float
writeToken(const float *restrict x, int64_t xsN, int64_t xsD, const float *restrict u,
           int64_t usD, const float *restrict post, int64_t psN, const float *restrict res,
           int64_t rsI, int64_t rsJ, float *restrict out, int64_t n, int64_t d) {
  float ss = 0.0f;
  if (!x) {
    for (int64_t i = 0; i < n; ++i) {
      float *o = out + i * d;
#pragma omp simd reduction(+ : ss)
      for (int64_t c = 0; c < d; ++c) {
        o[c] = u[c * usD];
        ss += o[c] * o[c];
      }
    }
    return ss;
  }
  for (int64_t i = 0; i < n; ++i) {
    float *o = out + i * d;
    const float *ri = res + i * rsI;
    float pi = post[i * psN];
    if (xsD == 1 && usD == 1) {
      weightedRows(o, x, xsN, ri, rsJ, n, d);
#pragma omp simd reduction(+ : ss)
      for (int64_t c = 0; c < d; ++c) {
        o[c] += pi * u[c];
        ss += o[c] * o[c];
      }
      continue;
    }
    for (int64_t c = 0; c < d; ++c) {
      float v = 0.0f;
      for (int64_t j = 0; j < n; ++j)
        v += ri[j * rsJ] * x[j * xsN + c * xsD];
      v += pi * u[c * usD];
      o[c] = v;
      ss += v * v;
    }
  }
  return ss;
}

/* p[g * k + j] = row_g . W[:, j] for the rows of one group (`rows` of
 * them; the others repeat the last and are dropped), W^T in wt (k rows,
 * ldw apart); prefetches `lines` cache lines from `next` on the way. */
__attribute__((target_clones("arch=x86-64-v4", "default"))) static void
projectGroup(const float *const row[kGroup], int64_t rows, const float *restrict wt, int64_t ldw,
             int64_t K, int64_t k, float *restrict p, const char *next, int64_t lines) {
  int64_t K16 = K & ~(int64_t)15, line = 0;
  for (int64_t j0 = 0; j0 < k; j0 += kCols) {
    int64_t cols = k - j0 < kCols ? k - j0 : kCols;
    const float *w[kCols];
    for (int j = 0; j < kCols; ++j)
      w[j] = wt + (j0 + (j < cols ? j : 0)) * ldw;
    vfloat16 acc[kGroup][kCols];
    for (int g = 0; g < kGroup; ++g)
      for (int j = 0; j < kCols; ++j)
        acc[g][j] = (vfloat16){0.0f};
    for (int64_t q = 0; q < K16; q += 16) {
      vfloat16 xv[kGroup];
      for (int g = 0; g < kGroup; ++g)
        xv[g] = *(const vfloat16 *)(row[g] + q);
      if (line < lines)
        __builtin_prefetch(next + 64 * line++, 0, 3);
      for (int j = 0; j < kCols; ++j) {
        vfloat16 wv = *(const vfloat16 *)(w[j] + q);
        for (int g = 0; g < kGroup; ++g)
          acc[g][j] += xv[g] * wv;
      }
    }
    for (int64_t g = 0; g < rows; ++g)
      for (int64_t j = 0; j < cols; ++j) {
        float s = 0.0f;
        for (int l = 0; l < 16; ++l)
          s += acc[g][j][l];
        for (int64_t q = K16; q < K; ++q)
          s += row[g][q] * w[j][q];
        p[g * k + j0 + j] = s;
      }
  }
}

void rewire_hyper_write_project_on(
    int64_t x, int64_t xOff, int64_t xsT, int64_t xsN, int64_t xsD, int64_t u, int64_t uOff,
    int64_t usT, int64_t usD, int64_t post, int64_t poOff, int64_t posT, int64_t posN,
    int64_t res, int64_t reOff, int64_t resT, int64_t resI, int64_t resJ, int64_t w0,
    int64_t w0Off, int64_t w0sK, int64_t w0sJ, int64_t w0Cols, int64_t w1, int64_t w1Off,
    int64_t w1sK, int64_t w1sJ, int64_t w1Cols, int64_t w2, int64_t w2Off, int64_t w2sK,
    int64_t w2sJ, int64_t w2Cols, int64_t out, int64_t outOff, int64_t p, int64_t pOff, int64_t r,
    int64_t rOff, int64_t tokens, int64_t n, int64_t d, int64_t k, float eps, int64_t threads,
    int avx512) {
  if (tokens <= 0 || n <= 0 || d <= 0)
    return;
  if (n > INT64_MAX / d || k < 0 || (k > 0 && n * d > INT64_MAX / k) ||
      tokens > INT64_MAX / (n * d))
    rewire_kernel_failed("hyper_write_project: the stream's sizes overflow");
  int64_t K = n * d;
  /* No x: the stream's start, n copies of u (post and res unused). */
  const float *X = x ? (const float *)(intptr_t)x + xOff : NULL,
              *U = (const float *)(intptr_t)u + uOff,
              *PO = (const float *)(intptr_t)post + poOff,
              *RE = (const float *)(intptr_t)res + reOff;
  const int64_t desc[kWeightParts][5] = {{w0, w0Off, w0sK, w0sJ, w0Cols},
                                         {w1, w1Off, w1sK, w1sJ, w1Cols},
                                         {w2, w2Off, w2sK, w2sJ, w2Cols}};
  WeightPart parts[kWeightParts];
  weightParts(parts, desc, k, "hyper_write_project: the weight's parts do not make its k columns");
  float *OUT = (float *)(intptr_t)out + outOff, *P = (float *)(intptr_t)p + pOff,
        *R = (float *)(intptr_t)r + rOff;
  int team = threads > 0 ? (int)threads : omp_get_max_threads();
  if (team < 1)
    team = 1;
  int64_t groups = (tokens + kGroup - 1) / kGroup;
  if (groups < team)
    team = (int)groups;
  if (k == 0 || !avx512) {
#pragma omp parallel for schedule(static) num_threads(team)
    for (int64_t t = 0; t < tokens; ++t) {
      float ss = writeToken(X ? X + t * xsT : NULL, xsN, xsD, U + t * usT, usD, PO + t * posT,
                            posN, RE + t * resT, resI, resJ, OUT + t * K, n, d);
      R[t] = 1.0f / sqrtf(ss / (float)K + eps);
    }
    /* Each part's columns of p, P[:, first + j] = OUT . W_part[:, j]. */
    for (int q = 0; q < kWeightParts; ++q) {
      const WeightPart *wp = &parts[q];
      if (!wp->cols)
        continue;
      if (wp->sJ == 1 || wp->sK == 1) {
        rewire_sgemm(0, wp->sJ != 1, tokens, wp->cols, K, (int64_t)(intptr_t)OUT, 0, K,
                     (int64_t)(intptr_t)wp->w, 0, wp->sJ == 1 ? wp->sK : wp->sJ,
                     (int64_t)(intptr_t)P, wp->first, k, 0.0f);
        continue;
      }
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t j = 0; j < wp->cols; ++j) {
          float s = 0.0f;
          for (int64_t c = 0; c < K; ++c)
            s += OUT[t * K + c] * wp->w[c * wp->sK + j * wp->sJ];
          P[t * k + wp->first + j] = s;
        }
    }
    return;
  }
  /* W^T, its rows padded to whole vectors plus one line (rows a multiple
   * of 4 KiB apart would share L1 sets). */
  int64_t ldw = ((K + 15) & ~(int64_t)15) + 16;
  if ((size_t)ldw > (SIZE_MAX / sizeof(float)) / (size_t)k)
    rewire_kernel_failed("hyper_write_project: the scratch size overflows");
  float *wt = (float *)_mlir_memref_to_llvm_alloc(sizeof(float) * (size_t)ldw * (size_t)k);
  int contiguous = X && xsD == 1 && xsN == d && xsT == K;
#pragma omp parallel num_threads(team)
  {
#pragma omp for schedule(static)
    for (int64_t c = 0; c < K; ++c)
      for (int q = 0; q < kWeightParts; ++q)
        for (int64_t j = 0; j < parts[q].cols; ++j)
          wt[(parts[q].first + j) * ldw + c] = parts[q].w[c * parts[q].sK + j * parts[q].sJ];
#pragma omp for schedule(static)
    for (int64_t gi = 0; gi < groups; ++gi) {
      int64_t t0 = gi * kGroup, rows = tokens - t0 < kGroup ? tokens - t0 : kGroup;
      const float *row[kGroup];
      for (int64_t g = 0; g < kGroup; ++g) {
        int64_t t = t0 + (g < rows ? g : rows - 1);
        row[g] = OUT + t * K;
        if (g < rows) {
          float ss = writeToken(X ? X + t * xsT : NULL, xsN, xsD, U + t * usT, usD,
                                PO + t * posT, posN, RE + t * resT, resI, resJ, OUT + t * K, n,
                                d);
          R[t] = 1.0f / sqrtf(ss / (float)K + eps);
        }
      }
      /* The next group's stream rows, one line per step of the product. */
      int64_t next = t0 + kGroup, lines = 0;
      if (contiguous && next < tokens)
        lines = ((tokens - next < kGroup ? tokens - next : kGroup) * K * (int64_t)sizeof(float)) /
                64;
      projectGroup(row, rows, wt, ldw, K, k, P + t0 * k,
                   contiguous ? (const char *)(X + next * xsT) : NULL, lines);
    }
  }
  _mlir_memref_to_llvm_free(wt);
}

void rewire_hyper_write_project(
    int64_t x, int64_t xOff, int64_t xsT, int64_t xsN, int64_t xsD, int64_t u, int64_t uOff,
    int64_t usT, int64_t usD, int64_t post, int64_t poOff, int64_t posT, int64_t posN,
    int64_t res, int64_t reOff, int64_t resT, int64_t resI, int64_t resJ, int64_t w0,
    int64_t w0Off, int64_t w0sK, int64_t w0sJ, int64_t w0Cols, int64_t w1, int64_t w1Off,
    int64_t w1sK, int64_t w1sJ, int64_t w1Cols, int64_t w2, int64_t w2Off, int64_t w2sK,
    int64_t w2sJ, int64_t w2Cols, int64_t out, int64_t outOff, int64_t p, int64_t pOff, int64_t r,
    int64_t rOff, int64_t tokens, int64_t n, int64_t d, int64_t k, float eps, int64_t threads) {
  __builtin_cpu_init();
  rewire_hyper_write_project_on(x, xOff, xsT, xsN, xsD, u, uOff, usT, usD, post, poOff, posT,
                                posN, res, reOff, resT, resI, resJ, w0, w0Off, w0sK, w0sJ,
                                w0Cols, w1, w1Off, w1sK, w1sJ, w1Cols, w2, w2Off, w2sK, w2sJ,
                                w2Cols, out, outOff, p, pOff, r, rOff, tokens, n, d, k, eps,
                                threads, __builtin_cpu_supports("avx512f"));
}
