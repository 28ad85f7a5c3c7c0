/*===- Kernels.c - CPU kernels linked into every artifact -------------------===
 *
 * Functions generated code calls: `rewire_sgemm` (rewire-linalg-to-blas) on
 * oneDNN's SGEMM (which picks its kernel by the CPU's ISA features, never by
 * its model number: docs/performance.md, "GEMM library"; Attention.c has
 * `rewire_attention`, called by rewire-attention-to-kernel), `memrefCopy` (the
 * strided memref.copy of MLIR's LLVM lowering; same ABI as MLIR's C runner utils, which artifacts do not link), and the
 * allocator generated code calls for temporaries (`_mlir_memref_to_llvm_*`,
 * finalize-memref-to-llvm{use-generic-functions}), and the error path of a
 * call: `rewire_artifact_call` runs an entry point; `rewire_check_failed`
 * (rewire-check-indices) and a failed allocation end the call with a message
 * instead of a crash (longjmp back to rewire_artifact_call: generated code
 * runs on the calling thread, holds no resources but temporaries, and the
 * caller treats the call's outputs as undefined); `rewire_output_ready`
 * (rewire-output-ready-calls) tells the caller's hook that an output is final.
 * Plain C: an artifact needs no C++ runtime.
 *
 *===----------------------------------------------------------------------===*/
#include "LibraryThreads.h"
#include "NarrowGemm.h"
#include "Scratch.h"
#include "TemporaryCache.h"
#include "rewire/Runtime/CallErrors.h"

#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void failCall(void);
static __thread char callError[1024];

/* Whether oneDNN's SGEMM runs its AVX2 (or older) kernels on this CPU
 * (asked once per thread: no shared state). */
static int avx2Class(void) {
  static __thread int cached = -1;
  if (cached < 0)
    cached = dnnl_get_effective_cpu_isa() < dnnl_cpu_isa_avx512_core;
  return cached;
}

/* Per thread: the copies of A and B a product makes (A^T B's two paths,
 * A B^T's below: one call uses one). */
static __thread struct Scratch copyOfA, copyOfB;

/* oneDNN 2.6's AVX2 SGEMM runs a product with a transposed A (A^T B: a
 * weight gradient, x^T dy) at half speed when a row stride of A or B is a
 * multiple of 512 floats (2 KiB): the rows it reads together alias in the
 * L1 cache. Measured on a Zen 3, page-aligned operands, 2 threads:
 * 256x1024x512 at 83 GFLOP/s against 160 with the aliased operand first
 * copied to rows of stride + 16 (copy included), 1024x256x512 86 -> 148,
 * 256x2048x512 84 -> 154; shapes without the problem within 2% either way
 * (docs/performance.md). It is the same kernel on the same values: the
 * same bits. Each operand has a per-thread scratch buffer kept across
 * calls; where one cannot be had, the direct call runs. */
static const float *unaliased(struct Scratch *s, const float *x, int64_t rows, int64_t cols,
                              int64_t *ld) {
  if (*ld % 512 != 0 || !avx2Class())
    return x;
  int64_t padded = cols + 16;
  if (!reserve(s, rows, padded))
    return x;
  for (int64_t i = 0; i < rows; ++i)
    memcpy(s->data + i * padded, x + i * *ld, (size_t)cols * sizeof(float));
  *ld = padded;
  return s->data;
}

/* A product A^T B with few columns (a coefficient projection's weight
 * gradient x^T dz, N = 1..31): oneDNN 2.6's SGEMM runs it 2-5x slower than
 * the same product transposed, C^T = B^T A, which streams A's rows once.
 * Measured, one thread: on a Zen 3 (AVX2 kernels) 1024x4x512 0.45 -> 0.12
 * ms, 3072x4x512 1.66 -> 0.49, 768x8x2048 0.71 -> 0.61; on a Xeon (model
 * 207, AVX-512 kernels) 1024x4x512 0.16 -> 0.08 ms (2 threads 0.081 ->
 * 0.028), 3072x4x512 0.52 -> 0.31, 1024x12x512 0.154 -> 0.125, 1024x16x512
 * 0.148 -> 0.142 (2 threads 0.075 -> 0.059). With AVX2 kernels the direct
 * call is at its best where N is a multiple of 16 (its kernel's width) and
 * worst just past one: medians on 2 threads (Zen 3), direct / transposed,
 * M x K = 3072 x 512, 1024 x 512, 768 x 2048: N 4 2.4 2.3 2.2, N 8 0.90
 * 1.13 1.25, N 12 1.38 1.38 1.38, N 16 0.71 0.72 0.97, N 20 2.07 2.02
 * 1.42, N 24 1.63 1.60 2.33, N 32 1.44 1.44 0.97. So: with AVX2 kernels up
 * to 31 columns but 16, with AVX-512 ones up to 16 (the rest unmeasured).
 * The transposed product goes to a per-thread scratch buffer and is copied
 * into C with beta applied. Returns 0 where it does not apply or no
 * scratch can be had (the direct call runs). */
static int isNarrow(int64_t n) { return avx2Class() ? n < 32 && n != 16 : n <= 16; }

static int narrowTransposedA(int64_t m, int64_t n, int64_t k, const float *pa, int64_t lda,
                             const float *pb, int64_t ldb, float beta, float *pc, int64_t ldc) {
  static __thread struct Scratch scratch;
  if (!isNarrow(n) || m < 64)
    return 0;
  float *t = reserve(&scratch, n, m); /* C^T [n, m] */
  if (!t || dnnl_sgemm('T', 'N', n, m, k, 1.0f, pb, ldb, pa, lda, 0.0f, t, m) != dnnl_success)
    return 0;
  /* The transposition back, shared by the threads where it is large (mHC's
   * [3072, 24] gradient: 0.2 ms on the calling thread while the others
   * waited). */
#pragma omp parallel for if (m * n >= (1 << 15) && !omp_in_parallel())
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      pc[i * ldc + j] = (beta == 0.0f ? 0.0f : beta * pc[i * ldc + j]) + t[j * m + i];
  return 1;
}

/* Ends the call: oneDNN refused a product (it checks only its arguments). */
static void sgemmFailed(dnnl_status_t status, int64_t m, int64_t n, int64_t k) {
  snprintf(callError, sizeof(callError),
           "internal error: oneDNN's sgemm failed (status %d) on a %lldx%lldx%lld product; "
           "please report it with the model",
           (int)status, (long long)m, (long long)n, (long long)k);
  failCall();
}

/* The host's OpenMP runtime where oneDNN is bound to it (two pools;
 * LibraryThreads.h): its omp_get_max_threads and omp_set_num_threads, set
 * by the runtime at load; null with one pool. */
static int (*libraryGetThreads)(void);
static void (*librarySetThreads)(int);

void rewire_set_library_threads(int (*get)(void), void (*set)(int)) {
  libraryGetThreads = get && set ? get : 0;
  librarySetThreads = get && set ? set : 0;
}

int rewire_library_threads_one(void) {
  omp_set_num_threads(1);
  if (!librarySetThreads)
    return 0;
  int saved = libraryGetThreads();
  if (saved != 1)
    librarySetThreads(1);
  return saved;
}

void rewire_library_threads_restore(int saved) {
  if (librarySetThreads && saved > 0 && saved != 1)
    librarySetThreads(saved);
}

/* The 8 x 8 block at `a` (rows lda apart) transposed into `t` (rows ldt
 * apart), in registers. */
__attribute__((target("avx"))) static void transposeBlock8(const float *a, int64_t lda, float *t,
                                                            int64_t ldt) {
  __m256 r[8], u[8], v[8];
  for (int i = 0; i < 8; ++i)
    r[i] = _mm256_loadu_ps(a + i * lda);
  for (int i = 0; i < 8; i += 2) {
    u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]); /* columns 0, 1 | 4, 5 of rows i, i + 1 */
    u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]); /* columns 2, 3 | 6, 7 */
  }
  for (int i = 0; i < 8; i += 4) {
    v[i] = _mm256_shuffle_ps(u[i], u[i + 2], 0x44);     /* column 0 | 4 of 4 rows */
    v[i + 1] = _mm256_shuffle_ps(u[i], u[i + 2], 0xEE); /* column 1 | 5 */
    v[i + 2] = _mm256_shuffle_ps(u[i + 1], u[i + 3], 0x44); /* column 2 | 6 */
    v[i + 3] = _mm256_shuffle_ps(u[i + 1], u[i + 3], 0xEE); /* column 3 | 7 */
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(t + j * ldt, _mm256_permute2f128_ps(v[j], v[j + 4], 0x20));
    _mm256_storeu_ps(t + (j + 4) * ldt, _mm256_permute2f128_ps(v[j], v[j + 4], 0x31));
  }
}

/* t[j * ldt + i] = a[i * lda + j]: `a` ([rows, cols]) transposed, in 8 x 8
 * blocks (AVX), the threads sharing chunks of 64 columns outside a
 * parallel region. */
static void transposeInto(float *t, int64_t ldt, const float *a, int64_t lda, int64_t rows,
                          int64_t cols) {
#pragma omp parallel for if (!omp_in_parallel())
  for (int64_t c0 = 0; c0 < cols; c0 += 64) {
    int64_t c1 = c0 + 64 < cols ? c0 + 64 : cols, r = 0;
    for (; r + 8 <= rows; r += 8) {
      int64_t c = c0;
      for (; c + 8 <= c1; c += 8)
        transposeBlock8(a + r * lda + c, lda, t + c * ldt + r, ldt);
      for (; c < c1; ++c)
        for (int64_t q = r; q < r + 8; ++q)
          t[c * ldt + q] = a[q * lda + c];
    }
    for (; r < rows; ++r)
      for (int64_t c = c0; c < c1; ++c)
        t[c * ldt + r] = a[r * lda + c];
  }
}

/* x ([rows, cols], rows ldx apart) transposed into `s`, its rows rows + 16
 * floats apart (*ldt); NULL where no scratch can be had. */
static const float *transposedCopy(struct Scratch *s, const float *x, int64_t ldx,
                                   int64_t rows, int64_t cols, int64_t *ldt) {
  *ldt = rows + 16;
  float *t = reserve(s, cols, *ldt);
  if (t)
    transposeInto(t, *ldt, x, ldx, rows, cols);
  return t;
}

/* The products a team shares by itself: at least 2^22 multiply-adds
 * (~40 us on one core), and at least this many rows or columns a thread. */
enum { kShareWork = 1 << 22, kShareMin = 64 };

/* C = op(A) op(B) + beta C shared by the team outside a parallel region:
 * each thread makes one single-threaded oneDNN call on its share of C's
 * columns, or of its rows where C has more rows than columns (each thread
 * then packs the operand it shares whole: the smaller of A and B). oneDNN
 * threading the product itself ran slower and was bistable: in a process
 * with Python (bench/gemm.py's runner, ten shapes of the GPT-2 forward and
 * the benchmark GPT's train step, two processes each; Zen 4, family 25
 * model 17, 2 threads; GFLOP/s, oneDNN's threads -> this): 256x1024x512
 * A^T B 151, 153 -> 203, 217; 512x3072x768 193, 184 -> 211, 199 (rows
 * 214, 212); 512x1024x256 201, 191 -> 223, 212; the other shapes within
 * their run-to-run spread; in a C program 256-row products ran at ~152 or
 * ~210 from process to process (a split at 217-222), and A B^T with B's rows
 * 768 to 3072 floats apart gained 3-18% (512x768x3072 174 -> 206).
 * It serves the products with few columns that an earlier row split took
 * (oneDNN threads them unevenly: mHC's 512x24x3072 on a Zen 3, mean 0.78 ->
 * 0.51 ms). Shares are multiples of 16 columns or 8 rows. Each element of C is
 * summed by one single-threaded call: the same bits as the product on one
 * thread, whatever the team. Returns 0 where it does not apply (a product
 * too small to share, inside a parallel region, a team of one); a share
 * oneDNN refuses ends the call (others may have written theirs: C cannot
 * be computed again from itself). */
static int teamSplit(char ta, char tb, int64_t m, int64_t n, int64_t k, const float *pa,
                     int64_t lda, const float *pb, int64_t ldb, float beta, float *pc,
                     int64_t ldc) {
  if (k <= 0 || m * n < kShareWork / k || omp_in_parallel())
    return 0;
  int byColumns = m <= n;
  int64_t extent = byColumns ? n : m, align = byColumns ? 16 : 8;
  int team = omp_get_max_threads();
  if (team > extent / kShareMin)
    team = (int)(extent / kShareMin);
  if (team < 2)
    return 0;
  int64_t share = ((extent + team - 1) / team + align - 1) / align * align;
  int failed = (int)dnnl_success;
#pragma omp parallel num_threads(team)
  {
    int saved = rewire_library_threads_one(); /* one thread per call */
    int64_t first = (int64_t)omp_get_thread_num() * share;
    int64_t count = first >= extent ? 0 : (extent - first < share ? extent - first : share);
    if (count > 0) {
      const float *a = pa, *b = pb;
      float *c = byColumns ? pc + first : pc + first * ldc;
      if (byColumns)
        b += tb == 'T' ? first * ldb : first;
      else
        a += ta == 'T' ? first : first * lda;
      dnnl_status_t status = dnnl_sgemm(ta, tb, byColumns ? m : count, byColumns ? count : n, k,
                                        1.0f, a, lda, b, ldb, beta, c, ldc);
      if (status != dnnl_success) {
#pragma omp atomic write
        failed = (int)status;
      }
    }
    rewire_library_threads_restore(saved);
  }
  if (failed != (int)dnnl_success)
    sgemmFailed((dnnl_status_t)failed, m, n, k);
  return 1;
}

/* C = op(A) op(B) + beta C by oneDNN, shared by the team where teamSplit
 * applies; a refusal ends the call. */
static void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float *pa,
                  int64_t lda, const float *pb, int64_t ldb, float beta, float *pc, int64_t ldc) {
  if (teamSplit(ta, tb, m, n, k, pa, lda, pb, ldb, beta, pc, ldc))
    return;
  dnnl_status_t status = dnnl_sgemm(ta, tb, m, n, k, 1.0f, pa, lda, pb, ldb, beta, pc, ldc);
  if (status != dnnl_success)
    sgemmFailed(status, m, n, k);
}

/* A^T B with a small output (a weight gradient x^T dy of a narrow layer:
 * the benchmark GPT's [256, 1024], [1024, 256], [256, 768] and [256, 256]
 * over 512 tokens) as A copied transposed (A^T's rows k + 16 floats apart)
 * and oneDNN's A B: oneDNN 2.6's AVX2 kernels run such products 5-16%
 * slower with the transpose inside the call. Measured on a Zen 3, 2
 * threads, 30 interleaved calls, median GFLOP/s of A^T B (aliased strides
 * already copied, as below) -> this (copy included): 256x1024x512 164 ->
 * 176, 1024x256x512 151 -> 165, 256x768x512 144 -> 162, 256x256x512 131 ->
 * 150, 256x512x512 170 -> 173, 128x256x256 148 -> 163; outside the window
 * taken here it did not gain: 128 columns (256x128x512 123 -> 118), 1024
 * terms (512x512x1024 168 -> 166, 1024x512x1024 171 -> 158) and larger
 * outputs (1024x512x512 178 -> 172, 768x3072x512 173 -> 168, 3072x768x512
 * 172 -> 162). In that GPT's train step (d 256, 4 layers, B4 x T128), its
 * 17 weight gradients a step timed around each call, three runs toggling
 * only this path: 27.7, 30.1, 27.2 -> 24.8, 26.2, 23.5 ms a step, every
 * shape faster in every run (the copy, 8 x 8 blocks transposed in
 * registers, ~0.09 ms a call: a first loop element by element took 0.2).
 * Only where oneDNN runs its AVX2 kernels and the CPU has AVX2 (unmeasured
 * with AVX-512 kernels). The copy is shared by the threads (each writes its
 * own rows of A^T) outside a parallel region. Returns 0 where it does not
 * apply or no scratch can be had (the direct call runs). */
static int transposedCopyProduct(int64_t m, int64_t n, int64_t k, const float *pa, int64_t lda,
                                 const float *pb, int64_t ldb, float beta, float *pc,
                                 int64_t ldc) {
  if (!avx2Class() || m < 128 || n < 256 || k < 256 || k > 512 || m > ((int64_t)1 << 18) / n)
    return 0;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2"))
    return 0;
  int64_t ldt;
  const float *t = transposedCopy(&copyOfA, pa, lda, k, m, &ldt);
  if (!t)
    return 0;
  pb = unaliased(&copyOfB, pb, k, n, &ldb);
  sgemm('N', 'N', m, n, k, t, ldt, pb, ldb, beta, pc, ldc);
  return 1;
}

/* A B^T whose B rows lie a multiple of 1024 floats (4 KiB) apart (the
 * backward's dy W^T of a layer with 1024 or 3072 inputs; an exported
 * Linear's x W^T), on an AMD CPU where oneDNN runs its AVX-512 kernels, as
 * B copied transposed (rows n + 16 floats apart) and oneDNN's A B: its
 * A B^T reads B's rows together and they alias in the L1 cache. Measured
 * on a Zen 4 (family 25 model 17), 2 threads, medians of 40 calls, direct
 * -> this (copy included), GFLOP/s: 512x768x3072 171 -> 207, 512x256x1024
 * 172 -> 194, 1024x768x3072 164 -> 208, 2048x256x1024 157 -> 215,
 * 128x768x3072 102 -> 164, 16x768x3072 22 -> 58, 512x3072x1024 162 -> 188,
 * 512x2048x2048 167 -> 199, 4096x768x3072 209 -> 210; with 1040 or 1008
 * floats between the rows the direct call already runs 207 (so it is the
 * stride), and where no stride is a multiple of 1024 the copy gains
 * nothing (768 inputs: 0.96-1.06). A copy of B with padded rows, kept
 * A B^T, got less (185, 133 where this got 200, 180). Unmeasured, so not
 * taken: Intel's AVX-512 CPUs (on a Xeon model 207 oneDNN's A B^T ran at
 * its A B speed) and AVX2 kernels. Up to 2^23 floats of B (32 MiB); the
 * copy is shared by the threads outside a parallel region. Returns 0 where
 * it does not apply or no scratch can be had (the direct call runs). */
static int transposedCopyOfB(int64_t m, int64_t n, int64_t k, const float *pa, int64_t lda,
                             const float *pb, int64_t ldb, float beta, float *pc, int64_t ldc) {
  if (avx2Class() || ldb % 1024 != 0 || m < 16 || n < 32 || k <= 0 ||
      n > ((int64_t)1 << 23) / k)
    return 0;
  __builtin_cpu_init(); /* AVX-512 itself: oneDNN's kernels above imply it */
  if (!__builtin_cpu_is("amd"))
    return 0;
  int64_t ldt;
  const float *t = transposedCopy(&copyOfB, pb, ldb, n, k, &ldt);
  if (!t)
    return 0;
  sgemm('N', 'N', m, n, k, pa, lda, t, ldt, beta, pc, ldc);
  return 1;
}

/* Row-major C[M,N] = A[M,K] * B[K,N] + beta * C, with A/B transposed when
 * ta/tb; pointers are aligned bases, offsets in elements. */
void rewire_sgemm(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k, int64_t a,
                  int64_t aoff, int64_t lda, int64_t b, int64_t boff, int64_t ldb,
                  int64_t c, int64_t coff, int64_t ldc, float beta) {
  if (m <= 0 || n <= 0)
    return;
  /* A leading dimension is meaningless for a single row; BLAS still checks it. */
  int64_t acols = ta ? m : k, bcols = tb ? k : n;
  if (lda < acols) lda = acols > 0 ? acols : 1;
  if (ldb < bcols) ldb = bcols > 0 ? bcols : 1;
  if (ldc < n) ldc = n;
  const float *pa = (const float *)(intptr_t)a + aoff, *pb = (const float *)(intptr_t)b + boff;
  float *pc = (float *)(intptr_t)c + coff;
  if (avx2Class() &&
      rewire_narrow_sgemm((int)ta, (int)tb, m, n, k, pa, lda, pb, ldb, beta, pc, ldc))
    return;
  if (ta && !tb && narrowTransposedA(m, n, k, pa, lda, pb, ldb, beta, pc, ldc))
    return;
  if (ta && !tb && transposedCopyProduct(m, n, k, pa, lda, pb, ldb, beta, pc, ldc))
    return;
  if (!ta && tb && transposedCopyOfB(m, n, k, pa, lda, pb, ldb, beta, pc, ldc))
    return;
  if (ta && !tb && m >= 32 && n >= 32) {
    pa = unaliased(&copyOfA, pa, k, m, &lda);
    pb = unaliased(&copyOfB, pb, k, n, &ldb);
  }
  sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, pa, lda, pb, ldb, beta, pc, ldc);
}

static const char *isaName(dnnl_cpu_isa_t isa) {
  switch (isa) {
  case dnnl_cpu_isa_sse41: return "sse41";
  case dnnl_cpu_isa_avx: return "avx";
  case dnnl_cpu_isa_avx2: return "avx2";
  case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
  case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
  case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
  case dnnl_cpu_isa_avx512_core: return "avx512_core";
  case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
  default: return "generic";
  }
}

/* What runs the GEMMs: "oneDNN 2.6.3 sgemm, ISA avx512_core_amx" (the ISA
 * oneDNN dispatches to on this CPU, found from cpuid's features). */
const char *rewire_kernels_describe(void) {
  static __thread char text[128];
  const dnnl_version_t *v = dnnl_version();
  snprintf(text, sizeof(text), "oneDNN %d.%d.%d sgemm, ISA %s", v->major, v->minor, v->patch,
           isaName(dnnl_get_effective_cpu_isa()));
  return text;
}

/* MLIR's ranked descriptor: allocated, aligned, offset, sizes[rank],
 * strides[rank]; the unranked one is {rank, descriptor*}. */
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};
struct Descriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
};

static void copyDim(int64_t elemSize, int64_t rank, int64_t dim, const int64_t *sizes,
                    const int64_t *srcStrides, const int64_t *dstStrides, const char *src,
                    char *dst) {
  if (dim == rank) {
    memcpy(dst, src, (size_t)elemSize);
    return;
  }
  if (dim == rank - 1 && srcStrides[dim] == 1 && dstStrides[dim] == 1) {
    memcpy(dst, src, (size_t)(elemSize * sizes[dim]));
    return;
  }
  for (int64_t i = 0; i < sizes[dim]; ++i)
    copyDim(elemSize, rank, dim + 1, sizes, srcStrides, dstStrides,
            src + i * srcStrides[dim] * elemSize, dst + i * dstStrides[dim] * elemSize);
}

void memrefCopy(int64_t elemSize, struct UnrankedMemRef *src, struct UnrankedMemRef *dst) {
  const struct Descriptor *s = (const struct Descriptor *)src->descriptor;
  const struct Descriptor *d = (const struct Descriptor *)dst->descriptor;
  int64_t rank = src->rank;
  const int64_t *sizes = s->sizesAndStrides;
  const int64_t *srcStrides = s->sizesAndStrides + rank;
  const int64_t *dstStrides = d->sizesAndStrides + rank;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  copyDim(elemSize, rank, 0, sizes, srcStrides, dstStrides,
          s->aligned + s->offset * elemSize, d->aligned + d->offset * elemSize);
}

/* Temporaries: every call of an entry point allocates the same sizes in the
 * same order, so freed blocks are kept per thread and handed out again for
 * the same size instead of going back to the system (large glibc blocks are
 * mmap'd and page-faulted afresh on every call otherwise). Up to
 * TemporaryCache.h's limits a thread; when full, the largest are kept
 * (_mlir_memref_to_llvm_free). Each block has a 64-byte header holding its
 * size; data is 64-byte aligned. */
enum { kHeader = 64 };
struct Block {
  size_t size;
  char *base;
};
static __thread struct Block cache[kTemporaryCacheSlots];
static __thread int cached;
static __thread size_t cachedBytes;

/* The error path of the call running on this thread. */
static __thread jmp_buf *callEnv;

static void failCall(void) {
  if (callEnv)
    longjmp(*callEnv, 1);
  /* Not inside rewire_artifact_call (a caller of the raw entry points). */
  fprintf(stderr, "rewire artifact: %s\n", callError);
  abort();
}

/* A kernel's failure (Attention.c): ends the call with `message`. */
void rewire_kernel_failed(const char *message) {
  snprintf(callError, sizeof(callError), "%s", message);
  failCall();
}

int rewire_artifact_call(void (*entry)(void **), void **buffers, char *message,
                         int64_t capacity) {
  jmp_buf env;
  jmp_buf *volatile outer = callEnv;
  callError[0] = 0;
  if (setjmp(env) != 0) {
    callEnv = outer;
    if (message && capacity > 0)
      snprintf(message, (size_t)capacity, "%s", callError);
    return 1;
  }
  callEnv = &env;
  entry(buffers);
  callEnv = outer;
  return 0;
}

/* The output hook (rewire/Support/CpuArtifact.h, kSetOutputHookSymbol):
 * per thread, like the call it serves; generated code runs its top level on
 * the calling thread, which is where rewire-output-ready-calls puts the
 * calls. */
typedef void (*OutputHook)(void *context, int64_t output);
static __thread OutputHook outputHook;
static __thread void *outputHookContext;

void rewire_set_output_hook(OutputHook hook, void *context) {
  outputHook = hook;
  outputHookContext = context;
}

void rewire_output_ready(int64_t output) {
  if (outputHook)
    outputHook(outputHookContext, output);
}

/* Called by the code rewire-check-indices inserts: element `position`
 * (row-major) of a tensor of `shape` holds `value`, which violates
 * `requirement`. */
void rewire_check_failed(int64_t whatAddress, int64_t requirementAddress, int64_t shapeAddress,
                         int64_t rank, int64_t position, int64_t value) {
  const char *what = (const char *)(intptr_t)whatAddress;
  const char *requirement = (const char *)(intptr_t)requirementAddress;
  const int64_t *shape = (const int64_t *)(intptr_t)shapeAddress;
  char coords[256] = "", dims[256] = "";
  size_t c = 0, d = 0;
  int64_t rest = position;
  int64_t at[32];
  if (rank > 32)
    rank = 32;
  for (int64_t i = rank - 1; i >= 0; --i) {
    int64_t n = shape[i] > 0 ? shape[i] : 1;
    at[i] = rest % n;
    rest /= n;
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (c < sizeof(coords))
      c += (size_t)snprintf(coords + c, sizeof(coords) - c, "%s%lld", i ? ", " : "",
                            (long long)at[i]);
    if (d < sizeof(dims))
      d += (size_t)snprintf(dims + d, sizeof(dims) - d, "%s%lld", i ? "x" : "",
                            (long long)shape[i]);
  }
  snprintf(callError, sizeof(callError),
           "%s: value %lld at [%s] of the %s tensor %s " REWIRE_INPUT_DATA_SUFFIX, what,
           (long long)value, coords, rank ? dims : "scalar", requirement);
  failCall();
}

void *_mlir_memref_to_llvm_alloc(size_t size) {
  for (int i = cached - 1; i >= 0; --i) {
    if (cache[i].size == size) {
      char *base = cache[i].base;
      cache[i] = cache[--cached];
      cachedBytes -= size;
      return base + kHeader;
    }
  }
  size_t total = size + kHeader;
  total = (total + 63) / 64 * 64;
  char *base = total > size ? (char *)aligned_alloc(64, total) : NULL;
  if (!base) {
    snprintf(callError, sizeof(callError),
             REWIRE_OUT_OF_MEMORY_PREFIX ": a temporary buffer of %zu bytes could not be allocated "
             "(a smaller batch or model needs less)", size);
    failCall();
  }
  memcpy(base, &size, sizeof(size));
  return base + kHeader;
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  /* Blocks are 64-byte aligned; larger alignments are not generated. */
  (void)alignment;
  return _mlir_memref_to_llvm_alloc(size);
}

void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  char *base = (char *)ptr - kHeader;
  size_t size;
  memcpy(&size, base, sizeof(size));
  /* A full cache keeps the largest blocks: a block above glibc's mmap
   * threshold is unmapped by free() and page-faulted afresh by the next
   * call, a small one stays in glibc's heap. So cached blocks smaller than
   * this one make room for it, smallest first, where evicting them would;
   * otherwise this one goes to free(). (A 12-layer GPT with a 50257-token
   * vocabulary faulted its [50257, 768] gradient, 37 693 pages, every step
   * when the cache had filled with the step's earlier, smaller blocks.) */
  if (cached == kTemporaryCacheSlots || cachedBytes + size > kTemporaryCacheBytes) {
    size_t smallerBytes = 0;
    int smaller = 0;
    for (int i = 0; i < cached; ++i)
      if (cache[i].size < size) {
        smallerBytes += cache[i].size;
        ++smaller;
      }
    if (smaller == 0 || size > kTemporaryCacheBytes ||
        cachedBytes - smallerBytes > kTemporaryCacheBytes - size) {
      free(base);
      return;
    }
    while (cached == kTemporaryCacheSlots || cachedBytes + size > kTemporaryCacheBytes) {
      int s = 0;
      for (int i = 1; i < cached; ++i)
        if (cache[i].size < cache[s].size)
          s = i;
      free(cache[s].base);
      cachedBytes -= cache[s].size;
      cache[s] = cache[--cached];
    }
  }
  cache[cached].size = size;
  cache[cached].base = base;
  ++cached;
  cachedBytes += size;
}
