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

/* rewire_hyper_write_grad's reductions where g is summed in the same pass
 * (HyperKernels.c): g[t, j, :] = sum_i a[t, i, j] h[t, i, :] + b[t, j] v[t, :]
 * + e[t, j, :], written to g (dense [tokens, n, d], offset only), then du,
 * dpost and dres of it as rewire_hyper_write_grad. h, e [tokens, n, d];
 * a [tokens, n, n] and b [tokens, n] (token strides 0 when static);
 * v [tokens, d]. b (with v) and e are optional: pointer 0. */
void rewire_hyper_write_grad_sum(
    int64_t h, int64_t hOff, int64_t hsT, int64_t hsN, int64_t hsD, int64_t a, int64_t aOff,
    int64_t asT, int64_t asI, int64_t asJ, int64_t b, int64_t bOff, int64_t bsT, int64_t bsN,
    int64_t v, int64_t vOff, int64_t vsT, int64_t vsD, int64_t e, int64_t eOff, int64_t esT,
    int64_t esN, int64_t esD, int64_t g, int64_t gOff, int64_t x, int64_t xOff, int64_t xsT,
    int64_t xsN, int64_t xsD, int64_t u, int64_t uOff, int64_t usT, int64_t usD, int64_t post,
    int64_t pOff, int64_t psT, int64_t psN, int64_t du, int64_t duOff, int64_t dusT,
    int64_t dusD, int64_t dpost, int64_t dpOff, int64_t dpsT, int64_t dpsN, int64_t dres,
    int64_t drOff, int64_t drsT, int64_t drsI, int64_t drsJ, int64_t tokens, int64_t n,
    int64_t d, int64_t threads);

/* An mHC site's coefficient weight W [K, k] is passed as up to 3 column
 * blocks side by side (the maps' weights, each its own buffer): for each,
 * its pointer, offset, strides (sK, sJ) and column count (0: unused); the
 * counts add up to k. Its gradient dW likewise, as dense [K, cols] blocks
 * (pointer and offset each). */

/* The reverse of an mHC site's coefficient projection z = r (x . W), x a
 * token's n streams flattened (K = n d), r its rms scale
 * (residual.hyper_project_grad, HyperKernels.c): dX = (r dz) . W^T + s x
 * with s = -(r^3 / K) sum_j dz_j p_j (p = x . W), and dW = sum_t x^T (r dz),
 * in one pass over the stream. dz, p [tokens, k]; r [tokens] (its stride
 * rsT); x [tokens, n, d]; W's and dW's blocks as above; dx [tokens, K]
 * dense (offset only). Pointers are aligned bases, offsets and strides in
 * elements. The call of rewire-hyper-to-kernel. */
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
                               int64_t n, int64_t d, int64_t k, int64_t threads);

/* An mHC stream write and the coefficient projection of the written stream
 * in one pass (HyperKernels.c): out[t, i, :] = sum_j res[t, i, j] x[t, j, :]
 * + post[t, i] u[t, :], p[t, :] = out[t] . W (out[t] flattened, K = n d),
 * r[t] = 1 / sqrt(mean(out[t]^2) + eps); with x 0 (the stream's start,
 * residual.hyper_expand) out[t, i, :] = u[t, :]. x [tokens, n, d]; u [tokens, d];
 * post [tokens, n] and res [tokens, n, n] (token strides 0 when static);
 * W's blocks as above; out [tokens, n, d], p [tokens, k] and r [tokens]
 * dense (offsets only). Pointers are aligned bases, offsets and strides in
 * elements. The call of rewire-hyper-to-kernel. */
void rewire_hyper_write_project(
    int64_t x, int64_t xOff, int64_t xsT, int64_t xsN, int64_t xsD, int64_t u, int64_t uOff,
    int64_t usT, int64_t usD, int64_t post, int64_t poOff, int64_t posT, int64_t posN,
    int64_t res, int64_t reOff, int64_t resT, int64_t resI, int64_t resJ, int64_t w0,
    int64_t w0Off, int64_t w0sK, int64_t w0sJ, int64_t w0Cols, int64_t w1, int64_t w1Off,
    int64_t w1sK, int64_t w1sJ, int64_t w1Cols, int64_t w2, int64_t w2Off, int64_t w2sK,
    int64_t w2sJ, int64_t w2Cols, int64_t out, int64_t outOff, int64_t p, int64_t pOff, int64_t r,
    int64_t rOff, int64_t tokens, int64_t n, int64_t d, int64_t k, float eps, int64_t threads);

/* The same on a chosen path (the tests run both on any CPU): avx512 1, the
 * AVX-512 projection (only where the CPU has it); 0, the rows, then
 * rewire_sgemm's product. */
__attribute__((visibility("hidden"))) void rewire_hyper_write_project_on(
    int64_t x, int64_t xOff, int64_t xsT, int64_t xsN, int64_t xsD, int64_t u, int64_t uOff,
    int64_t usT, int64_t usD, int64_t post, int64_t poOff, int64_t posT, int64_t posN,
    int64_t res, int64_t reOff, int64_t resT, int64_t resI, int64_t resJ, int64_t w0,
    int64_t w0Off, int64_t w0sK, int64_t w0sJ, int64_t w0Cols, int64_t w1, int64_t w1Off,
    int64_t w1sK, int64_t w1sJ, int64_t w1Cols, int64_t w2, int64_t w2Off, int64_t w2sK,
    int64_t w2sJ, int64_t w2Cols, int64_t out, int64_t outOff, int64_t p, int64_t pOff, int64_t r,
    int64_t rOff, int64_t tokens, int64_t n, int64_t d, int64_t k, float eps, int64_t threads,
    int avx512);

#ifdef __cplusplus
}
#endif

#endif
