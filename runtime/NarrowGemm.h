/*===- NarrowGemm.h - AVX2 kernels for products with 2 to 24 columns -----===*/
#ifndef REWIRE_RUNTIME_NARROWGEMM_H
#define REWIRE_RUNTIME_NARROWGEMM_H

#include <stdint.h>

/* Row-major C[m, n] = op(A) op(B) + beta C (op transposes where ta / tb)
 * by NarrowGemm.c's kernels where the CPU has AVX2 and FMA and the product
 * has 2 to 24 columns, and where A is transposed, 17 to 24 columns and at
 * least 2048 rows. Returns 0 where it does not apply or scratch memory
 * cannot be had (C untouched: the caller runs its SGEMM); 1 once C holds
 * the product. Threads share the rows unless called in a parallel region. */
__attribute__((visibility("hidden"))) int
rewire_narrow_sgemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

#endif
