//===- Blas.cpp - The cuBLAS calls Rewire makes, on OpenBLAS --------------===//
//
// cublasSgemmStridedBatched with cuBLAS's column-major semantics and its
// argument checks (CUBLAS_STATUS_INVALID_VALUE for a leading dimension
// smaller than the matrix, a negative size or stride), every operand
// checked to lie in device memory, and beta = 0 not reading C (as cuBLAS:
// C may hold anything, NaNs included).
//
//===----------------------------------------------------------------------===//
#include "Emulator.h"

#include <algorithm>
#include <cblas.h>

using namespace rewire::runtime::cuda;
using namespace rewire::runtime::cuda::emulator;

struct rewire::runtime::cuda::cublasContext {
  CUstream stream = nullptr;
};

namespace {

constexpr int kStatusSuccess = 0, kStatusInvalidValue = 7, kStatusExecutionFailed = 13;

/// Bytes a column-major rows x cols matrix with leading dimension `ld` spans.
size_t span(long long rows, long long cols, long long ld) {
  return rows == 0 || cols == 0 ? 0 : static_cast<size_t>((cols - 1) * ld + rows) * 4;
}

} // namespace

extern "C" {

int cublasCreate_v2(cublasHandle_t *handle) {
  *handle = new cublasContext;
  return kStatusSuccess;
}
int cublasDestroy_v2(cublasHandle_t handle) {
  delete handle;
  return kStatusSuccess;
}
int cublasSetStream_v2(cublasHandle_t handle, CUstream stream) {
  handle->stream = stream;
  return kStatusSuccess;
}
int cublasSetWorkspace_v2(cublasHandle_t, void *workspace, size_t bytes) {
  return isDeviceMemory(workspace, bytes) ? kStatusSuccess : kStatusInvalidValue;
}

int cublasSgemmStridedBatched(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                              const float *alpha, const float *a, int lda, long long strideA,
                              const float *b, int ldb, long long strideB, const float *beta,
                              float *c, int ldc, long long strideC, int batch) {
  bool ta = transa == kCublasOpT, tb = transb == kCublasOpT;
  if ((transa != kCublasOpN && !ta) || (transb != kCublasOpN && !tb) || m < 0 || n < 0 ||
      k < 0 || batch < 0 || lda < std::max(1, ta ? k : m) || ldb < std::max(1, tb ? n : k) ||
      ldc < std::max(1, m) || strideA < 0 || strideB < 0 || strideC < 0) {
    report("cublasSgemmStridedBatched: invalid arguments (m=" + std::to_string(m) +
           " n=" + std::to_string(n) + " k=" + std::to_string(k) + " lda=" +
           std::to_string(lda) + " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) +
           ")");
    return kStatusInvalidValue;
  }
  if (m == 0 || n == 0 || batch == 0)
    return kStatusSuccess;
  float al = *alpha, be = *beta;
  size_t bytesA = span(ta ? k : m, ta ? m : k, lda), bytesB = span(tb ? n : k, tb ? k : n, ldb),
         bytesC = span(m, n, ldc);
  for (int i = 0; i < batch; ++i)
    if (!isDeviceMemory(a + i * strideA, k ? bytesA : 0) ||
        !isDeviceMemory(b + i * strideB, k ? bytesB : 0) ||
        !isDeviceMemory(c + i * strideC, bytesC)) {
      report("cublasSgemmStridedBatched: batch " + std::to_string(i) +
             " reaches outside the device allocations (m=" + std::to_string(m) +
             " n=" + std::to_string(n) + " k=" + std::to_string(k) + ")");
      return kStatusExecutionFailed;
    }
  CUresult r = enqueue(handle->stream, [=]() -> CUresult {
    for (int i = 0; i < batch; ++i) {
      float *ci = c + i * strideC;
      if (be == 0.0f)
        for (int j = 0; j < n; ++j)
          std::fill(ci + static_cast<size_t>(j) * ldc, ci + static_cast<size_t>(j) * ldc + m,
                    0.0f);
      cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                  m, n, k, al, a + i * strideA, lda, b + i * strideB, ldb, be, ci, ldc);
    }
    return kSuccess;
  });
  return r == kSuccess ? kStatusSuccess : kStatusExecutionFailed;
}

} // extern "C"
