//===- Driver.cpp - The driver API calls Rewire makes, emulated -----------===//
//
// Exported under the driver's own (versioned) names, as libcuda.so.1 does.
// The emulated device is "sm_90" so the runtime takes the cubin path; the
// image itself is not run: the kernels come from the shared object
// (rewire-compile --emulator-kernels) among $REWIRE_CUDA_EMULATOR_KERNELS (a
// file, a folder of *.emu.so, or a ':'-separated list) that was compiled
// with this very image (its FNV-1a hash is recorded there).
// Fresh device memory is filled with NaNs (0xff bytes): reading memory
// nothing wrote shows in the results instead of passing as zeros.
//
//===----------------------------------------------------------------------===//
#include "Emulator.h"
#include "rewire/Support/CpuArtifact.h"
#include "rewire/Support/Hash.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <map>
#include <memory>
#include <mutex>

using namespace rewire::runtime::cuda;
using namespace rewire::runtime::cuda::emulator;

struct rewire::runtime::cuda::CUmod_st {
  void *library = nullptr;
};
struct rewire::runtime::cuda::CUfunc_st {
  Kernel kernel;
};
struct rewire::runtime::cuda::CUevent_st {
  std::chrono::steady_clock::time_point at;
};

namespace {

std::mutex memoryMutex;
/// Live allocations: start -> size.
std::map<uintptr_t, size_t> allocations;
CUstream_st defaultStream;

CUstream_st *streamOf(CUstream s) { return s ? s : &defaultStream; }

/// Copies `bytes` after checking the device side of the copy.
CUresult copy(void *to, const void *from, size_t bytes, bool deviceTo, bool deviceFrom) {
  if ((deviceTo && !isDeviceMemory(to, bytes)) || (deviceFrom && !isDeviceMemory(from, bytes))) {
    report("a copy of " + std::to_string(bytes) + " bytes touches memory outside the device "
           "allocations");
    return kIllegalAddress;
  }
  if (bytes)
    std::memmove(to, from, bytes);
  return kSuccess;
}

void *ptr(CUdeviceptr p) { return reinterpret_cast<void *>(static_cast<uintptr_t>(p)); }

/// The bytes of an image the driver gets without a size: a 64-bit ELF
/// (cubin) up to the end of its last table, section or segment (the
/// runtime validated the header); otherwise NUL-terminated PTX text.
size_t imageSize(const unsigned char *p) {
  if (std::memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2)
    return std::strlen(reinterpret_cast<const char *>(p));
  auto u16 = [&](size_t at) { uint16_t v; std::memcpy(&v, p + at, 2); return size_t(v); };
  auto u64 = [&](size_t at) { uint64_t v; std::memcpy(&v, p + at, 8); return size_t(v); };
  size_t phoff = u64(0x20), shoff = u64(0x28), phentsize = u16(0x36), phnum = u16(0x38),
         shentsize = u16(0x3a), shnum = u16(0x3c);
  size_t end = std::max(phoff + phnum * phentsize, shoff + shnum * shentsize);
  for (size_t i = 0; i < shnum; ++i) {
    size_t h = shoff + i * shentsize;
    uint32_t type;
    std::memcpy(&type, p + h + 4, 4);
    if (type != 8) // SHT_NOBITS has no bytes in the file
      end = std::max(end, u64(h + 0x18) + u64(h + 0x20));
  }
  for (size_t i = 0; i < phnum; ++i) {
    size_t h = phoff + i * phentsize;
    end = std::max(end, u64(h + 0x08) + u64(h + 0x20));
  }
  return end;
}

/// The files $REWIRE_CUDA_EMULATOR_KERNELS names.
std::vector<std::string> kernelFiles(const std::string &spec) {
  std::vector<std::string> files;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(':', start);
    std::string item = spec.substr(start, end == std::string::npos ? std::string::npos : end - start);
    struct stat st;
    if (!item.empty() && stat(item.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      if (DIR *d = opendir(item.c_str())) {
        std::vector<std::string> inside;
        while (dirent *e = readdir(d)) {
          std::string n = e->d_name;
          if (n.size() > 7 && n.compare(n.size() - 7, 7, ".emu.so") == 0)
            inside.push_back(item + "/" + n);
        }
        closedir(d);
        std::sort(inside.begin(), inside.end());
        files.insert(files.end(), inside.begin(), inside.end());
      }
    } else if (!item.empty()) {
      files.push_back(item);
    }
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return files;
}

} // namespace

bool rewire::runtime::cuda::emulator::isDeviceMemory(const void *p, size_t bytes) {
  std::lock_guard<std::mutex> lock(memoryMutex);
  uintptr_t at = reinterpret_cast<uintptr_t>(p);
  auto it = allocations.upper_bound(at);
  if (it == allocations.begin())
    return false;
  --it;
  return at >= it->first && at - it->first <= it->second && bytes <= it->second - (at - it->first);
}

CUresult rewire::runtime::cuda::emulator::enqueue(CUstream stream, std::function<CUresult()> work) {
  CUstream_st *s = streamOf(stream);
  if (s->capture) {
    s->capture->work.push_back(std::move(work));
    return kSuccess;
  }
  return work();
}

extern "C" {

CUresult cuInit(unsigned) { return kSuccess; }
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return kSuccess;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return kSuccess;
}
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0)
    return kInvalidValue;
  *d = 0;
  return kSuccess;
}
CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  std::snprintf(name, static_cast<size_t>(length), "%s", "Rewire CUDA emulator (CPU)");
  return kSuccess;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice) {
  *value = attribute == kAttrComputeMajor   ? 9
           : attribute == kAttrComputeMinor ? 0
           : attribute == kAttrMultiprocessors ? 1
                                               : 0;
  return kSuccess;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice) {
  *bytes = size_t(4) << 30;
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice) {
  static int context;
  *c = reinterpret_cast<CUcontext>(&context);
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) { return kSuccess; }
CUresult cuCtxSetCurrent(CUcontext) { return kSuccess; }

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned count, int *options,
                            void **values) {
  char *log = nullptr;
  size_t logSize = 0;
  for (unsigned i = 0; i < count; ++i) {
    if (options[i] == kJitErrorLogBuffer)
      log = static_cast<char *>(values[i]);
    if (options[i] == kJitErrorLogBufferSize)
      logSize = reinterpret_cast<size_t>(values[i]);
  }
  // The message goes to the JIT error log the caller passes (Rewire's
  // runtime puts it in its error), else to stderr.
  auto fail = [&](const std::string &message) {
    if (log && logSize)
      std::snprintf(log, logSize, "%s", message.c_str());
    else
      report(message);
    return kInvalidImage;
  };
  if (!image)
    return fail("no image");
  const char *path = std::getenv("REWIRE_CUDA_EMULATOR_KERNELS");
  if (!path || !*path)
    return fail("REWIRE_CUDA_EMULATOR_KERNELS is not set: compile the artifact with "
                "rewire-compile --target=cuda --emulator-kernels=FILE and set it to FILE");
  auto bytes = static_cast<const unsigned char *>(image);
  uint64_t hash = rewire::fnv1a(bytes, imageSize(bytes));
  std::string problems;
  for (const std::string &file : kernelFiles(path)) {
    // A name without a slash is a file here (`=m.emu.so`, as the README
    // writes it), not a library for dlopen to search the system for.
    std::string name = file.find('/') == std::string::npos ? "./" + file : file;
    void *library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char *why = dlerror();
      problems += std::string("; cannot load the emulator kernels: ") + (why ? why : file.c_str());
      continue;
    }
    auto hashes = static_cast<const uint64_t *>(dlsym(library, "rewire_emu_image_hashes"));
    for (uint64_t i = 0; hashes && i < hashes[0]; ++i)
      if (hashes[1 + i] == hash) {
        *module = new CUmod_st{library};
        return kSuccess;
      }
    problems += "; '" + file + "' " +
                (hashes ? "was compiled with another artifact" : "is not an emulator kernels file");
    dlclose(library);
  }
  return fail("no emulator kernels in REWIRE_CUDA_EMULATOR_KERNELS='" + std::string(path) +
              "' belong to this artifact's image" + problems +
              " (recompile the artifact with --emulator-kernels=FILE)");
}
CUresult cuModuleUnload(CUmodule module) {
  if (module)
    dlclose(module->library);
  delete module;
  return kSuccess;
}
CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  std::string n(name);
  auto call = reinterpret_cast<void (*)(void **)>(dlsym(module->library, (rewire::cpu::kEntrySymbolPrefix + n).c_str()));
  auto argc = static_cast<const int *>(dlsym(module->library, ("rewire_emu_argc_" + n).c_str()));
  if (!call || !argc) {
    report("the emulator kernels have no kernel '" + n + "'");
    return kNotFound;
  }
  auto sync = static_cast<const int *>(dlsym(module->library, ("rewire_emu_sync_" + n).c_str()));
  // Functions live as long as the process (as the module's would).
  *function = new CUfunc_st{Kernel{n, call, *argc, !sync || *sync != 0}};
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  void *m = nullptr;
  if (posix_memalign(&m, 256, bytes ? bytes : 1) != 0)
    return kOutOfMemory;
  std::memset(m, 0xff, bytes);
  std::lock_guard<std::mutex> lock(memoryMutex);
  allocations[reinterpret_cast<uintptr_t>(m)] = bytes;
  *p = reinterpret_cast<uintptr_t>(m);
  return kSuccess;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  std::lock_guard<std::mutex> lock(memoryMutex);
  if (!allocations.erase(static_cast<uintptr_t>(p)))
    return kInvalidValue;
  std::free(ptr(p));
  return kSuccess;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr to, const void *from, size_t bytes) {
  return copy(ptr(to), from, bytes, true, false);
}
CUresult cuMemcpyDtoH_v2(void *to, CUdeviceptr from, size_t bytes) {
  return copy(to, ptr(from), bytes, false, true);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr to, const void *from, size_t bytes, CUstream s) {
  return enqueue(s, [=] { return copy(ptr(to), from, bytes, true, false); });
}
CUresult cuMemcpyDtoHAsync_v2(void *to, CUdeviceptr from, size_t bytes, CUstream s) {
  return enqueue(s, [=] { return copy(to, ptr(from), bytes, false, true); });
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream s) {
  return enqueue(s, [=] { return copy(ptr(to), ptr(from), bytes, true, true); });
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned sharedBytes, CUstream s,
                        void **params, void **extra) {
  if (!f || extra || sharedBytes || (!params && f->kernel.argc > 0))
    return kInvalidValue;
  // The argument values are taken now, as the driver does.
  std::vector<void *> buffers;
  for (int i = 0; i < f->kernel.argc; ++i) {
    void *b = *static_cast<void **>(params[i]);
    if (!isDeviceMemory(b, 0)) {
      report("kernel '" + f->kernel.name + "': argument " + std::to_string(i) +
             " is not device memory");
      return kIllegalAddress;
    }
    buffers.push_back(b);
  }
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  const Kernel *k = &f->kernel;
  return enqueue(s, [=] { return runGrid(*k, grid, block, buffers); });
}

CUresult cuStreamCreate(CUstream *s, unsigned) {
  *s = new CUstream_st;
  return kSuccess;
}
CUresult cuStreamDestroy_v2(CUstream s) {
  delete s;
  return kSuccess;
}
CUresult cuStreamSynchronize(CUstream) { return kSuccess; }
CUresult cuStreamBeginCapture_v2(CUstream s, int) {
  if (!s || s->capture)
    return kInvalidValue;
  s->capture = new CUgraph_st;
  return kSuccess;
}
CUresult cuStreamEndCapture(CUstream s, CUgraph *graph) {
  if (!s || !s->capture)
    return kInvalidValue;
  *graph = s->capture;
  s->capture = nullptr;
  return kSuccess;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long) {
  *exec = new CUgraphExec_st{graph->work};
  return kSuccess;
}
CUresult cuGraphLaunch(CUgraphExec exec, CUstream s) {
  if (streamOf(s)->capture)
    return kInvalidValue;
  for (auto &w : exec->work)
    if (CUresult r = w())
      return r;
  return kSuccess;
}
CUresult cuGraphDestroy(CUgraph g) {
  delete g;
  return kSuccess;
}
CUresult cuGraphExecDestroy(CUgraphExec e) {
  delete e;
  return kSuccess;
}

CUresult cuEventCreate(CUevent *e, unsigned) {
  *e = new CUevent_st;
  return kSuccess;
}
CUresult cuEventRecord(CUevent e, CUstream s) {
  return enqueue(s, [e] {
    e->at = std::chrono::steady_clock::now();
    return kSuccess;
  });
}
CUresult cuEventSynchronize(CUevent) { return kSuccess; }
CUresult cuEventElapsedTime(float *ms, CUevent from, CUevent to) {
  *ms = std::chrono::duration<float, std::milli>(to->at - from->at).count();
  return kSuccess;
}
CUresult cuEventDestroy_v2(CUevent e) {
  delete e;
  return kSuccess;
}

CUresult cuGetErrorName(CUresult r, const char **name) {
  switch (r) {
  case kSuccess: *name = "CUDA_SUCCESS"; break;
  case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; break;
  case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case kInvalidImage: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
  case kNotFound: *name = "CUDA_ERROR_NOT_FOUND"; break;
  case kIllegalAddress: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  case kLaunchFailed: *name = "CUDA_ERROR_LAUNCH_FAILED"; break;
  default: *name = nullptr; return kInvalidValue;
  }
  return kSuccess;
}
CUresult cuGetErrorString(CUresult r, const char **text) {
  if (cuGetErrorName(r, text))
    return kInvalidValue;
  *text = "reported by the Rewire CUDA emulator (see its message above)";
  return kSuccess;
}

} // extern "C"
