/*===- HyperKernels.h - Fused per-token passes of hyper streams ----------===*/
#ifndef REWIRE_RUNTIME_HYPERKERNELS_H
#define REWIRE_RUNTIME_HYPERKERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The reductions of residual.hyper_write's reverse that read the stream's
 * adjoint g (HyperKernels.c): du = sum_i post_i g_i, dpost_i = g_i . u,
 * dres_ij = g_i . x_j per token. Pointers are aligned bases (as integers),
 * offsets and strides in elements: g, x [tokens, n, d]; u, du [tokens, d];
 * post, dpost [tokens, n]; dres [tokens, n, n]. The call of
 * rewire-hyper-to-kernel. */
void rewire_hyper_write_grad(int64_t g, int64_t gOff, int64_t gsT, int64_t gsN, int64_t gsD,
                             int64_t x, int64_t xOff, int64_t xsT, int64_t xsN, int64_t xsD,
                             int64_t u, int64_t uOff, int64_t usT, int64_t usD,
                             int64_t post, int64_t pOff, int64_t psT, int64_t psN,
                             int64_t du, int64_t duOff, int64_t dusT, int64_t dusD,
                             int64_t dpost, int64_t dpOff, int64_t dpsT, int64_t dpsN,
                             int64_t dres, int64_t drOff, int64_t drsT, int64_t drsI,
                             int64_t drsJ, int64_t tokens, int64_t n, int64_t d,
                             int64_t threads);

#ifdef __cplusplus
}
#endif

#endif
