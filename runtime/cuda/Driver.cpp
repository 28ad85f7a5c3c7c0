//===- Driver.cpp - dlopen the CUDA driver, cuBLAS and NCCL ---------------===//
#include "Driver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <vector>

namespace rewire::runtime::cuda {

namespace {

struct Symbol {
  const char *name;
  void **slot;
};

/// Opens the first of `names` that loads; `error` lists what was tried.
void *openFirst(std::initializer_list<const char *> names, std::string &error,
                std::string &opened) {
  std::string tried;
  for (const char *n : names) {
    if (!n || !*n)
      continue;
    if (void *h = ::dlopen(n, RTLD_NOW | RTLD_LOCAL)) {
      opened = n;
      return h;
    }
    const char *why = ::dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why ? why : n);
  }
  error = tried;
  return nullptr;
}

/// `$envVar` when set, else the first of `defaults` that loads; `opened`
/// is the name that loaded.
void *openLibrary(const char *envVar, std::initializer_list<const char *> defaults,
                  std::string &error, std::string &opened) {
  const char *custom = std::getenv(envVar);
  return custom && *custom ? openFirst({custom}, error, opened)
                           : openFirst(defaults, error, opened);
}

bool resolve(void *handle, const Symbol *symbols, size_t count, const std::string &library,
             std::string &error) {
  for (size_t i = 0; i < count; ++i) {
    *symbols[i].slot = ::dlsym(handle, symbols[i].name);
    if (!*symbols[i].slot) {
      error = library + " lacks '" + symbols[i].name +
              "': it is older than this runtime needs (CUDA 12 or newer)";
      return false;
    }
  }
  return true;
}

} // namespace

std::string describe(const DriverApi &api, CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(result, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(result)) +
         (text ? std::string(" (") + text + ")" : "");
}

const DriverApi *driver(std::string &error) {
  static DriverApi api;
  static std::string loadError;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string why, library;
    void *h = openLibrary("REWIRE_LIBCUDA", {"libcuda.so.1"}, why, library);
    if (!h) {
      loadError = "no CUDA driver: " + why +
                  ". Install the NVIDIA driver (it provides libcuda.so.1), set REWIRE_LIBCUDA "
                  "to its path, or run on the CPU (--device=cpu with a --target=cpu artifact)";
      return;
    }
    DriverApi a{};
    const Symbol symbols[] = {
        {"cuInit", (void **)&a.cuInit},
        {"cuDriverGetVersion", (void **)&a.cuDriverGetVersion},
        {"cuDeviceGetCount", (void **)&a.cuDeviceGetCount},
        {"cuDeviceGet", (void **)&a.cuDeviceGet},
        {"cuDeviceGetName", (void **)&a.cuDeviceGetName},
        {"cuDeviceGetAttribute", (void **)&a.cuDeviceGetAttribute},
        {"cuDeviceTotalMem_v2", (void **)&a.cuDeviceTotalMem},
        {"cuDevicePrimaryCtxRetain", (void **)&a.cuDevicePrimaryCtxRetain},
        {"cuDevicePrimaryCtxRelease_v2", (void **)&a.cuDevicePrimaryCtxRelease},
        {"cuCtxSetCurrent", (void **)&a.cuCtxSetCurrent},
        {"cuModuleLoadDataEx", (void **)&a.cuModuleLoadDataEx},
        {"cuModuleUnload", (void **)&a.cuModuleUnload},
        {"cuModuleGetFunction", (void **)&a.cuModuleGetFunction},
        {"cuMemAlloc_v2", (void **)&a.cuMemAlloc},
        {"cuMemFree_v2", (void **)&a.cuMemFree},
        {"cuMemcpyHtoD_v2", (void **)&a.cuMemcpyHtoD},
        {"cuMemcpyDtoH_v2", (void **)&a.cuMemcpyDtoH},
        {"cuMemcpyHtoDAsync_v2", (void **)&a.cuMemcpyHtoDAsync},
        {"cuMemcpyDtoHAsync_v2", (void **)&a.cuMemcpyDtoHAsync},
        {"cuMemcpyDtoDAsync_v2", (void **)&a.cuMemcpyDtoDAsync},
        {"cuLaunchKernel", (void **)&a.cuLaunchKernel},
        {"cuStreamCreate", (void **)&a.cuStreamCreate},
        {"cuStreamDestroy_v2", (void **)&a.cuStreamDestroy},
        {"cuStreamSynchronize", (void **)&a.cuStreamSynchronize},
        {"cuStreamBeginCapture_v2", (void **)&a.cuStreamBeginCapture},
        {"cuStreamEndCapture", (void **)&a.cuStreamEndCapture},
        {"cuGraphInstantiateWithFlags", (void **)&a.cuGraphInstantiateWithFlags},
        {"cuGraphLaunch", (void **)&a.cuGraphLaunch},
        {"cuGraphDestroy", (void **)&a.cuGraphDestroy},
        {"cuGraphExecDestroy", (void **)&a.cuGraphExecDestroy},
        {"cuEventCreate", (void **)&a.cuEventCreate},
        {"cuEventRecord", (void **)&a.cuEventRecord},
        {"cuEventSynchronize", (void **)&a.cuEventSynchronize},
        {"cuEventElapsedTime", (void **)&a.cuEventElapsedTime},
        {"cuEventDestroy_v2", (void **)&a.cuEventDestroy},
        {"cuGetErrorName", (void **)&a.cuGetErrorName},
        {"cuGetErrorString", (void **)&a.cuGetErrorString},
    };
    if (!resolve(h, symbols, sizeof(symbols) / sizeof(symbols[0]), library, loadError))
      return;
    if (CUresult r = a.cuInit(0)) {
      loadError = "the CUDA driver did not initialize: " + describe(a, r) +
                  " (is a GPU visible? check nvidia-smi and CUDA_VISIBLE_DEVICES)";
      return;
    }
    api = a;
  });
  if (!loadError.empty()) {
    error = loadError;
    return nullptr;
  }
  return &api;
}

namespace {

/// `Api` from `$envVar`, else the first of `names` that loads, with the
/// entry points `symbolsOf` lists, once per process (per `Api`); null with
/// `error` set ("no LABEL: what was tried. INSTALL") when it cannot.
template <typename Api>
const Api *loadOnce(const char *envVar, std::initializer_list<const char *> names,
                    const char *label, const char *install,
                    std::vector<Symbol> (*symbolsOf)(Api &), std::string &error) {
  static Api api;
  static std::string loadError;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::string why, library;
    void *h = openLibrary(envVar, names, why, library);
    if (!h) {
      loadError = std::string("no ") + label + ": " + why + ". " + install;
      return;
    }
    Api a{};
    std::vector<Symbol> symbols = symbolsOf(a);
    if (!resolve(h, symbols.data(), symbols.size(), label, loadError))
      return;
    api = a;
  });
  if (!loadError.empty()) {
    error = loadError;
    return nullptr;
  }
  return &api;
}

} // namespace

const CublasApi *cublas(std::string &error) {
  return loadOnce<CublasApi>(
      "REWIRE_LIBCUBLAS", {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, "cuBLAS",
      "Install cuBLAS (the CUDA toolkit or the nvidia-cublas wheel), put its folder on "
      "LD_LIBRARY_PATH or set REWIRE_LIBCUBLAS to the library",
      +[](CublasApi &a) {
        return std::vector<Symbol>{
            {"cublasCreate_v2", (void **)&a.cublasCreate},
            {"cublasDestroy_v2", (void **)&a.cublasDestroy},
            {"cublasSetStream_v2", (void **)&a.cublasSetStream},
            {"cublasSetWorkspace_v2", (void **)&a.cublasSetWorkspace},
            {"cublasSgemmStridedBatched", (void **)&a.cublasSgemmStridedBatched},
        };
      },
      error);
}

const NcclApi *nccl(std::string &error) {
  return loadOnce<NcclApi>(
      "REWIRE_LIBNCCL", {"libnccl.so.2"}, "NCCL",
      "Install NCCL (the CUDA toolkit's, libnccl2, or the nvidia-nccl wheel), put its folder on "
      "LD_LIBRARY_PATH or set REWIRE_LIBNCCL to the library",
      +[](NcclApi &a) {
        return std::vector<Symbol>{
            {"ncclGetVersion", (void **)&a.ncclGetVersion},
            {"ncclGetUniqueId", (void **)&a.ncclGetUniqueId},
            {"ncclCommInitRank", (void **)&a.ncclCommInitRank},
            {"ncclCommDestroy", (void **)&a.ncclCommDestroy},
            {"ncclAllReduce", (void **)&a.ncclAllReduce},
            {"ncclGroupStart", (void **)&a.ncclGroupStart},
            {"ncclGroupEnd", (void **)&a.ncclGroupEnd},
            {"ncclGetErrorString", (void **)&a.ncclGetErrorString},
        };
      },
      error);
}

} // namespace rewire::runtime::cuda
