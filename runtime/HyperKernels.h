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

/* The reverse of an mHC site's coefficient projection z = r (x . W), x a
 * token's n streams flattened (K = n d), r its rms scale
 * (residual.hyper_project_grad, HyperKernels.c): dX = (r dz) . W^T + s x
 * with s = -(r^3 / K) sum_j dz_j p_j (p = x . W), and dW = sum_t x^T (r dz),
 * in one pass over the stream. dz, p [tokens, k]; r [tokens] (its stride
 * rsT); x [tokens, n, d]; w [K, k]; dx [tokens, K] and dw [K, k] dense
 * (offsets only). Pointers are aligned bases, offsets and strides in
 * elements. The call of rewire-hyper-to-kernel. */
void rewire_hyper_project_grad(int64_t dz, int64_t dzOff, int64_t dzsT, int64_t dzsJ,
                               int64_t p, int64_t pOff, int64_t psT, int64_t psJ,
                               int64_t r, int64_t rOff, int64_t rsT,
                               int64_t x, int64_t xOff, int64_t xsT, int64_t xsN, int64_t xsD,
                               int64_t w, int64_t wOff, int64_t wsK, int64_t wsJ,
                               int64_t dx, int64_t dxOff, int64_t dw, int64_t dwOff,
                               int64_t tokens, int64_t n, int64_t d, int64_t k,
                               int64_t threads);

#ifdef __cplusplus
}
#endif

#endif
