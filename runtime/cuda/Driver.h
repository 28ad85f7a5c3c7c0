//===- Driver.h - The CUDA driver and cuBLAS, loaded at run time -*- C++ -*-===//
//
// Rewire never links libcuda or cuBLAS: the first CUDA call dlopens
// libcuda.so.1 (or $REWIRE_LIBCUDA) and resolves the driver API entry
// points it uses into a table, so a machine without a driver gets one
// clear error instead of a loader failure. cuBLAS is found the same way
// (libcublas.so.13/.12, or $REWIRE_LIBCUBLAS), and NCCL for data-parallel
// training (libnccl.so.2, or $REWIRE_LIBNCCL). The declarations are the
// libraries' own (cuda.h, cublas_api.h, nccl.h), restated for the handful of
// calls used.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_CUDA_DRIVER_H
#define REWIRE_RUNTIME_CUDA_DRIVER_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace rewire::runtime::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUevent = CUevent_st *;
using CUgraph = CUgraph_st *;
using CUgraphExec = CUgraphExec_st *;
using cublasHandle_t = struct cublasContext *;

// Values from cuda.h / cublas_api.h.
constexpr int kJitInfoLogBuffer = 3, kJitInfoLogBufferSize = 4, kJitErrorLogBuffer = 5,
              kJitErrorLogBufferSize = 6;
constexpr int kAttrComputeMajor = 75, kAttrComputeMinor = 76, kAttrMultiprocessors = 16;
constexpr int kCaptureModeThreadLocal = 1;
constexpr int kCublasOpN = 0, kCublasOpT = 1;

/// The driver API entry points Rewire uses.
struct DriverApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphDestroy)(CUgraph);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
};

/// The cuBLAS entry points Rewire uses.
struct CublasApi {
  int (*cublasCreate)(cublasHandle_t *);
  int (*cublasDestroy)(cublasHandle_t);
  int (*cublasSetStream)(cublasHandle_t, CUstream);
  int (*cublasSetWorkspace)(cublasHandle_t, void *, size_t);
  int (*cublasSgemmStridedBatched)(cublasHandle_t, int, int, int, int, int, const float *,
                                   const float *, int, long long, const float *, int,
                                   long long, const float *, float *, int, long long, int);
};

/// NCCL's types and values (nccl.h); its enums are ints in the C ABI.
struct ncclComm;
using ncclComm_t = ncclComm *;
struct NcclUniqueId {
  char internal[128];
};
constexpr int kNcclSuccess = 0, kNcclSum = 0, kNcclFloat32 = 7;

/// The NCCL entry points Rewire uses.
struct NcclApi {
  int (*ncclGetVersion)(int *);
  int (*ncclGetUniqueId)(NcclUniqueId *);
  int (*ncclCommInitRank)(ncclComm_t *, int, NcclUniqueId, int);
  int (*ncclCommDestroy)(ncclComm_t);
  int (*ncclAllReduce)(const void *, void *, size_t, int, int, ncclComm_t, CUstream);
  int (*ncclGroupStart)();
  int (*ncclGroupEnd)();
  const char *(*ncclGetErrorString)(int);
};

/// The driver, loaded and initialized once per process; null with `error`
/// set when there is none (no libcuda.so.1, a symbol missing, cuInit
/// failing: the message says which and what to do).
const DriverApi *driver(std::string &error);

/// cuBLAS, loaded once per process; null with `error` set when absent.
const CublasApi *cublas(std::string &error);
/// NCCL, loaded once per process; null with `error` set when absent.
const NcclApi *nccl(std::string &error);

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a driver result.
std::string describe(const DriverApi &api, CUresult result);

} // namespace rewire::runtime::cuda

#endif // REWIRE_RUNTIME_CUDA_DRIVER_H
