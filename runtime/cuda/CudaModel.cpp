//===- CudaModel.cpp - Run CUDA artifacts through the driver API ----------===//
//
// Implements CudaRuntime.h on Driver.h and Artifact.h.
//
//===----------------------------------------------------------------------===//
#include "rewire/Runtime/CudaRuntime.h"
#include "rewire/Runtime/Communicator.h"

#include "Artifact.h"
#include "Driver.h"
#include "../ArtifactMetadata.h"
#include "rewire/Support/CudaArtifact.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Support/Safetensors.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

namespace rewire::runtime {

using namespace cuda;

bool isCudaArtifact(const std::string &path) {
  // Not a regular file: not an artifact (the CPU loader then says why).
  if (checkRegularFile(path))
    return false;
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(rewire::cuda::kMagic)] = {};
  in.read(magic, sizeof(magic));
  return in && std::memcmp(magic, rewire::cuda::kMagic, sizeof(magic)) == 0;
}

std::optional<std::string> describeCudaArtifact(const std::string &path, std::string &text) {
  Artifact a;
  if (auto err = readArtifact(path, a))
    return err;
  text = "cuda artifact for " + a.chip + ": ";
  for (size_t i = 0; i < a.images.size(); ++i)
    text += std::string(i ? " + " : "") + (a.images[i].cubin ? "cubin " : "PTX ") +
            std::to_string(a.images[i].size) + " bytes";
  text += ", " + std::to_string(a.kernels.size()) + " kernels\n";
  for (const Function &f : a.functions) {
    size_t launches = 0, gemms = 0;
    for (const Step &s : f.steps)
      (s.kind == Step::Kind::launch ? launches : gemms) += 1;
    text += "function " + f.info.name + "\n";
    for (const TensorInfo &t : f.info.inputs)
      text += "  input  " + t.name + ": " + t.typeString() + "\n";
    for (const TensorInfo &t : f.info.outputs)
      text += "  output " + t.name + ": " + t.typeString() + "\n";
    text += "  parameters: " + std::to_string(f.info.parameters.size()) + "\n";
    text += "  schedule: " + std::to_string(launches) + " launches, " + std::to_string(gemms) +
            " cuBLAS GEMMs, arena " + std::to_string(f.arena) + " bytes\n";
  }
  return std::nullopt;
}

namespace {

/// This process's rank among the ranks of its node, where a launcher says
/// (Open MPI, MPICH/Hydra, Slurm).
std::optional<int> localRank() {
  for (const char *v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *s = std::getenv(v); s && *s >= '0' && *s <= '9')
      return std::atoi(s);
  return std::nullopt;
}

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

constexpr size_t kCublasWorkspace = size_t(32) << 20;

/// Device memory: every allocation the model makes, freed together.
struct DevicePool {
  const DriverApi *api = nullptr;
  std::vector<CUdeviceptr> blocks;
  std::optional<std::string> alloc(size_t bytes, CUdeviceptr &out) {
    if (CUresult r = api->cuMemAlloc(&out, std::max<size_t>(bytes, 256)))
      return "cannot allocate " + std::to_string(bytes) + " bytes on the GPU: " +
             describe(*api, r);
    blocks.push_back(out);
    return std::nullopt;
  }
  void release() {
    if (api)
      for (CUdeviceptr p : blocks)
        api->cuMemFree(p);
    blocks.clear();
  }
  ~DevicePool() { release(); }
};

struct Prepared {
  std::vector<CUdeviceptr> base; ///< per buffer
  std::vector<int> inputBuffer;  ///< per input: its buffer
  std::vector<int> keptFrom;     ///< per input: the output it is kept from, or -1
  std::vector<bool> keptOutput;  ///< per output: feeds a kept input
  bool keptLoaded = false;
  CUdeviceptr arena = 0;
  bool ran = false;
  CUgraphExec graph = nullptr;
};

} // namespace

struct CudaModel::Impl {
  Artifact artifact;
  std::vector<FunctionInfo> infos;
  const DriverApi *api = nullptr;
  const CublasApi *blas = nullptr;
  cublasHandle_t handle = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUstream stream = nullptr;
  std::vector<CUfunction> kernels;
  std::string deviceText;
  bool graphs = true;
  DevicePool pool;
  std::vector<Prepared> prepared;
  /// sumOutputsOverRanks: NCCL's communicator, and per function the
  /// outputs it sums.
  const NcclApi *ncclApi = nullptr;
  ncclComm_t ncclComm = nullptr;
  std::string ncclText;
  std::vector<std::vector<size_t>> summed;

  std::optional<std::string> check(CUresult r, const std::string &what) const {
    if (r == 0)
      return std::nullopt;
    return what + ": " + describe(*api, r);
  }
  std::optional<std::string> enqueue(size_t index, int only = -1);
  /// The position of entry point `name`, or none.
  std::optional<size_t> indexOf(const std::string &name) const {
    for (size_t i = 0; i < infos.size(); ++i)
      if (infos[i].name == name)
        return i;
    return std::nullopt;
  }
  /// Sets `index` to entry point `name`'s position; the error otherwise.
  std::optional<std::string> find(const std::string &name, size_t &index) const {
    std::optional<size_t> found = indexOf(name);
    if (!found)
      return "the artifact has no function '" + name + "'";
    index = *found;
    return std::nullopt;
  }
  ~Impl() {
    if (!api)
      return;
    for (Prepared &p : prepared)
      if (p.graph)
        api->cuGraphExecDestroy(p.graph);
    if (ncclComm)
      ncclApi->ncclCommDestroy(ncclComm);
    if (handle && blas)
      blas->cublasDestroy(handle);
    pool.release(); // before the context goes
    if (module)
      api->cuModuleUnload(module);
    if (stream)
      api->cuStreamDestroy(stream);
    if (context)
      api->cuDevicePrimaryCtxRelease(device);
  }
};

CudaModel::CudaModel(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
CudaModel::~CudaModel() = default;
const std::vector<FunctionInfo> &CudaModel::functions() const { return impl->infos; }
std::string CudaModel::device() const { return impl->deviceText; }
const std::string &CudaModel::metadata() const { return impl->artifact.metadata; }

std::unique_ptr<CudaModel> CudaModel::load(const std::string &artifactPath, std::string &error,
                                           const std::string &parametersPath) {
  auto impl = std::make_unique<Impl>();
  // Everything about the file first: a bad artifact is reported the same
  // way with or without a GPU.
  if (auto err = readArtifact(artifactPath, impl->artifact)) {
    error = *err;
    return nullptr;
  }
  Artifact &a = impl->artifact;
  for (const Function &f : a.functions)
    impl->infos.push_back(f.info);
  impl->graphs = !(std::getenv("REWIRE_CUDA_GRAPHS") &&
                   std::string(std::getenv("REWIRE_CUDA_GRAPHS")) == "0");
  impl->summed.resize(impl->infos.size());

  impl->api = driver(error);
  if (!impl->api)
    return nullptr;
  const DriverApi &api = *impl->api;
  impl->pool.api = impl->api;
  int ordinal = 0, count = 0;
  if (auto err = impl->check(api.cuDeviceGetCount(&count), "cannot count the GPUs")) {
    error = *err;
    return nullptr;
  }
  if (const char *d = std::getenv("REWIRE_CUDA_DEVICE"))
    ordinal = std::atoi(d);
  else if (std::optional<int> local = localRank(); local && count > 0)
    ordinal = *local % count; // one GPU per rank of a node (NCCL needs it)
  if (count == 0 || ordinal < 0 || ordinal >= count) {
    error = "no CUDA device " + std::to_string(ordinal) + " (the driver sees " +
            std::to_string(count) + ")";
    return nullptr;
  }
  char name[256] = {};
  int major = 0, minor = 0, sms = 0;
  size_t memory = 0;
  if (auto err = impl->check(api.cuDeviceGet(&impl->device, ordinal), "cannot open the GPU")) {
    error = *err;
    return nullptr;
  }
  api.cuDeviceGetName(name, sizeof(name) - 1, impl->device);
  api.cuDeviceGetAttribute(&major, kAttrComputeMajor, impl->device);
  api.cuDeviceGetAttribute(&minor, kAttrComputeMinor, impl->device);
  api.cuDeviceGetAttribute(&sms, kAttrMultiprocessors, impl->device);
  api.cuDeviceTotalMem(&memory, impl->device);
  if (auto err = impl->check(api.cuDevicePrimaryCtxRetain(&impl->context, impl->device),
                             "cannot create a CUDA context")) {
    error = *err;
    return nullptr;
  }
  api.cuCtxSetCurrent(impl->context);
  if (auto err = impl->check(api.cuStreamCreate(&impl->stream, 0), "cannot create a stream")) {
    error = *err;
    return nullptr;
  }

  // The cubin where it was built for this GPU, else the PTX (JIT).
  std::string deviceChip = "sm_" + std::to_string(major) + std::to_string(minor);
  const Image *image = nullptr;
  for (const Image &i : a.images)
    if (i.cubin && a.chip == deviceChip)
      image = &i;
  if (!image)
    for (const Image &i : a.images)
      if (!i.cubin)
        image = &i;
  impl->deviceText = std::string(name) + ", " + deviceChip + ", " + std::to_string(sms) +
                     " SMs, " + std::to_string(memory >> 30) + " GiB";
  if (!a.kernels.empty()) {
    if (!image) {
      error = "'" + artifactPath + "' was compiled for " + a.chip + " without PTX; this GPU is " +
              deviceChip + ": recompile with --gpu-chip=" + deviceChip;
      return nullptr;
    }
    impl->deviceText += std::string("; image: ") + (image->cubin ? "cubin" : "PTX (JIT)");
    std::string infoLog(8192, '\0'), errorLog(8192, '\0');
    int options[] = {kJitInfoLogBuffer, kJitInfoLogBufferSize, kJitErrorLogBuffer,
                     kJitErrorLogBufferSize};
    void *values[] = {infoLog.data(), reinterpret_cast<void *>(infoLog.size()),
                      errorLog.data(), reinterpret_cast<void *>(errorLog.size())};
    if (CUresult r = api.cuModuleLoadDataEx(&impl->module, image->data, 4, options, values)) {
      errorLog.resize(std::strlen(errorLog.c_str()));
      error = "the driver rejected the kernels of '" + artifactPath + "' (" +
              (image->cubin ? "cubin for " : "PTX for ") + a.chip + " on " + deviceChip +
              "): " + describe(api, r) + (errorLog.empty() ? "" : ": " + errorLog);
      return nullptr;
    }
    for (const std::string &k : a.kernels) {
      CUfunction f = nullptr;
      if (CUresult r = api.cuModuleGetFunction(&f, impl->module, k.c_str())) {
        error = "kernel '" + k + "' is not in the image of '" + artifactPath +
                "': " + describe(api, r);
        return nullptr;
      }
      impl->kernels.push_back(f);
    }
  }
  bool gemms = false;
  for (const Function &f : a.functions)
    for (const Step &s : f.steps)
      gemms |= s.kind == Step::Kind::gemm;
  if (gemms) {
    impl->blas = cublas(error);
    if (!impl->blas)
      return nullptr;
    CUdeviceptr workspace;
    if (impl->blas->cublasCreate(&impl->handle) != 0) {
      error = "cuBLAS did not initialize (cublasCreate failed)";
      return nullptr;
    }
    if (auto err = impl->pool.alloc(kCublasWorkspace, workspace)) {
      error = *err;
      return nullptr;
    }
    // A fixed workspace keeps cuBLAS from allocating inside graph capture.
    impl->blas->cublasSetStream(impl->handle, impl->stream);
    impl->blas->cublasSetWorkspace(impl->handle, reinterpret_cast<void *>(workspace),
                                   kCublasWorkspace);
  }

  // Parameters once per name, constants once per function, an arena and
  // input buffers per function.
  SafetensorsMapping mapping;
  bool anyParameters = false;
  for (const FunctionInfo &f : impl->infos)
    anyParameters |= !f.parameters.empty();
  std::map<std::string, CUdeviceptr> uploaded;
  if (anyParameters) {
    std::string params = parametersPath;
    if (params.empty())
      params = !a.parametersFile.empty() && a.parametersFile[0] == '/'
                   ? a.parametersFile
                   : dirOf(artifactPath) + "/" + a.parametersFile;
    if (auto err = mapping.open(params)) {
      error = "cannot bind parameters: " + *err;
      return nullptr;
    }
    for (const FunctionInfo &f : impl->infos)
      for (const TensorInfo &p : f.parameters) {
        if (uploaded.count(p.name))
          continue;
        const SafetensorsMapping::Tensor *t = nullptr;
        if (auto err = findParameter(mapping, params, f.name, p, t)) {
          error = *err;
          return nullptr;
        }
        CUdeviceptr d;
        if (auto err = impl->pool.alloc(t->bytes, d)) {
          error = *err;
          return nullptr;
        }
        if (auto err = impl->check(api.cuMemcpyHtoD(d, t->data, t->bytes),
                                   "cannot upload parameter '" + p.name + "'")) {
          error = *err;
          return nullptr;
        }
        uploaded[p.name] = d;
      }
  }
  for (const Function &f : a.functions) {
    Prepared p;
    if (f.arena > 0)
      if (auto err = impl->pool.alloc(f.arena, p.arena)) {
        error = *err;
        return nullptr;
      }
    p.inputBuffer.assign(f.info.inputs.size(), -1);
    p.keptFrom.assign(f.info.inputs.size(), -1);
    p.keptOutput.assign(f.info.outputs.size(), false);
    for (size_t bi = 0; bi < f.buffers.size(); ++bi)
      if (f.buffers[bi].kind == BufferDesc::Kind::input)
        p.inputBuffer[f.buffers[bi].index] = static_cast<int>(bi);
    for (const BufferDesc &b : f.buffers) {
      CUdeviceptr d = 0;
      switch (b.kind) {
      case BufferDesc::Kind::temp:
        d = p.arena + b.offset;
        break;
      case BufferDesc::Kind::parameter:
        d = uploaded.at(f.info.parameters[b.index].name);
        break;
      case BufferDesc::Kind::input:
      case BufferDesc::Kind::constant:
        if (auto err = impl->pool.alloc(b.bytes, d)) {
          error = *err;
          return nullptr;
        }
        if (b.kind == BufferDesc::Kind::constant)
          if (auto err = impl->check(api.cuMemcpyHtoD(d, a.blob + b.offset, b.bytes),
                                     "cannot upload a constant")) {
            error = *err;
            return nullptr;
          }
        break;
      }
      p.base.push_back(d);
    }
    impl->prepared.push_back(std::move(p));
  }
  return std::unique_ptr<CudaModel>(new CudaModel(std::move(impl)));
}

std::optional<std::string> CudaModel::Impl::enqueue(size_t index, int only) {
  const Function &f = artifact.functions[index];
  const Prepared &p = prepared[index];
  std::vector<CUdeviceptr> args;
  std::vector<void *> params;
  for (size_t i = 0; i < f.steps.size(); ++i) {
    if (only >= 0 && static_cast<int>(i) != only)
      continue;
    const Step &s = f.steps[i];
    if (s.kind == Step::Kind::launch) {
      args.clear();
      params.clear();
      for (int b : s.args)
        args.push_back(p.base[b]);
      for (CUdeviceptr &a : args)
        params.push_back(&a);
      if (auto err = check(api->cuLaunchKernel(kernels[s.kernel], s.grid[0], s.grid[1],
                                               s.grid[2], s.block[0], s.block[1], s.block[2],
                                               0, stream, params.data(), nullptr),
                           "launch of '" + artifact.kernels[s.kernel] + "'"))
        return err;
      continue;
    }
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
    const float one = 1.0f;
    auto at = [&](int b, int64_t offset) {
      return reinterpret_cast<float *>(p.base[b] + offset * 4);
    };
    int status = blas->cublasSgemmStridedBatched(
        handle, s.tb ? kCublasOpT : kCublasOpN, s.ta ? kCublasOpT : kCublasOpN,
        static_cast<int>(s.n), static_cast<int>(s.m), static_cast<int>(s.k), &one, at(s.b, s.ob),
        static_cast<int>(s.ldb), s.sb, at(s.a, s.oa), static_cast<int>(s.lda), s.sa, &s.beta,
        at(s.c, s.oc), static_cast<int>(s.ldc), s.sc, static_cast<int>(s.batch));
    if (status != 0)
      return "cuBLAS SGEMM (" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
             std::to_string(s.k) + ", batch " + std::to_string(s.batch) +
             ") failed with status " + std::to_string(status);
  }
  return std::nullopt;
}

std::optional<std::string> CudaModel::run(const std::string &function,
                                          const std::vector<HostTensor> &inputs,
                                          std::vector<HostTensor> &outputs) const {
  const FunctionInfo *info = this->function(function);
  return runOnHostTensors(info, function, inputs, outputs,
                          [&](const void *const *in, void *const *out) {
                            return runRaw(function, in, out);
                          });
}

std::optional<std::string> CudaModel::runRaw(const std::string &function,
                                             const void *const *inputs,
                                             void *const *outputs) const {
  size_t index = 0;
  if (auto err = impl->find(function, index))
    return err;
  const FunctionInfo &info = impl->infos[index];
  const DriverApi &api = *impl->api;
  api.cuCtxSetCurrent(impl->context);
  const Function &f = impl->artifact.functions[index];
  Prepared &p = impl->prepared[index];
  // Index, label and divisor values the kernels would only clamp: checked
  // here, before anything is uploaded (kept inputs live on the device).
  for (const InputValueCheck &c : f.inputChecks)
    if (!(p.keptLoaded && p.keptFrom[c.input] >= 0))
      if (auto err = checkInputValues(c, info.inputs[c.input], inputs[c.input]))
        return err;
  for (size_t b = 0; b < f.buffers.size(); ++b) {
    const BufferDesc &d = f.buffers[b];
    if (d.kind != BufferDesc::Kind::input || d.bytes == 0 ||
        (p.keptLoaded && p.keptFrom[d.index] >= 0))
      continue;
    if (auto err = impl->check(api.cuMemcpyHtoDAsync(p.base[b], inputs[d.index], d.bytes,
                                                      impl->stream),
                               "cannot upload input " + std::to_string(d.index)))
      return err;
  }
  // First run step by step (errors name their step); then a graph.
  if (p.graph) {
    if (auto err = impl->check(api.cuGraphLaunch(p.graph, impl->stream), "graph launch"))
      return err;
  } else {
    if (auto err = impl->enqueue(index))
      return err;
  }
  // Outputs summed over the ranks (sumOutputsOverRanks), in place.
  if (!impl->summed[index].empty()) {
    const NcclApi &nccl = *impl->ncclApi;
    int r = nccl.ncclGroupStart();
    for (size_t o : impl->summed[index]) {
      if (r != kNcclSuccess)
        break;
      auto [buffer, offset] = f.results[o];
      auto *data = reinterpret_cast<void *>(p.base[buffer] + offset);
      r = nccl.ncclAllReduce(data, data, static_cast<size_t>(info.outputs[o].byteSize() / 4),
                             kNcclFloat32, kNcclSum, impl->ncclComm, impl->stream);
    }
    int end = nccl.ncclGroupEnd();
    if (r == kNcclSuccess)
      r = end;
    if (r != kNcclSuccess)
      return "NCCL all-reduce of '" + function + "''s outputs failed: " +
             nccl.ncclGetErrorString(r);
  }
  // Kept state: each such output becomes its input for the next call.
  for (size_t i = 0; i < info.inputs.size(); ++i) {
    int o = p.keptFrom[i];
    if (o < 0)
      continue;
    auto [buffer, offset] = f.results[o];
    CUdeviceptr from = p.base[buffer] + offset, to = p.base[p.inputBuffer[i]];
    if (from != to)
      if (auto err = impl->check(api.cuMemcpyDtoDAsync(to, from, info.inputs[i].byteSize(),
                                                       impl->stream),
                                 "cannot keep output " + std::to_string(o) + " on the device"))
        return err;
  }
  for (size_t i = 0; i < info.outputs.size(); ++i) {
    auto [buffer, offset] = f.results[i];
    size_t bytes = static_cast<size_t>(info.outputs[i].byteSize());
    if (bytes == 0 || p.keptOutput[i])
      continue;
    if (auto err = impl->check(api.cuMemcpyDtoHAsync(outputs[i], p.base[buffer] + offset, bytes,
                                                     impl->stream),
                               "cannot download output " + std::to_string(i)))
      return err;
  }
  if (auto err = impl->check(api.cuStreamSynchronize(impl->stream), "'" + function + "' failed"))
    return err;
  if (!p.ran && impl->graphs && !f.steps.empty()) {
    CUgraph graph = nullptr;
    if (auto err = impl->check(api.cuStreamBeginCapture(impl->stream, kCaptureModeThreadLocal),
                               "cannot capture a CUDA graph"))
      return err;
    auto enqueued = impl->enqueue(index);
    CUresult end = api.cuStreamEndCapture(impl->stream, &graph);
    if (enqueued)
      return enqueued;
    if (auto err = impl->check(end, "cannot capture a CUDA graph"))
      return err;
    CUresult r = api.cuGraphInstantiateWithFlags(&p.graph, graph, 0);
    api.cuGraphDestroy(graph);
    if (auto err = impl->check(r, "cannot instantiate a CUDA graph"))
      return err;
  }
  p.ran = true;
  p.keptLoaded = true;
  return std::nullopt;
}

std::optional<std::string> CudaModel::keepOnDevice(
    const std::string &function, const std::vector<std::pair<size_t, size_t>> &pairs) const {
  size_t index = 0;
  if (auto err = impl->find(function, index))
    return err;
  const FunctionInfo &info = impl->infos[index];
  Prepared &p = impl->prepared[index];
  for (auto [out, in] : pairs) {
    if (out >= info.outputs.size() || in >= info.inputs.size() || p.inputBuffer[in] < 0 ||
        info.outputs[out].dtype != info.inputs[in].dtype ||
        info.outputs[out].shape != info.inputs[in].shape)
      return "'" + function + "': output " + std::to_string(out) + " cannot feed input " +
             std::to_string(in) + " (index or type mismatch)";
    p.keptFrom[in] = static_cast<int>(out);
    p.keptOutput[out] = true;
  }
  p.keptLoaded = false; // the next call uploads them once
  return std::nullopt;
}

std::string CudaModel::deviceSums() const { return impl->ncclText; }

std::optional<std::string> CudaModel::sumOutputsOverRanks(const std::string &function,
                                                         const std::vector<size_t> &outputs,
                                                         Communicator &comm, bool &fatal) const {
  fatal = false;
  size_t index = 0;
  if (auto err = impl->find(function, index))
    return err;
  const FunctionInfo &info = impl->infos[index];
  for (size_t o : outputs)
    if (o >= info.outputs.size() || info.outputs[o].dtype != DType::F32)
      return "'" + function + "': output " + std::to_string(o) + " is not an f32 output";
  if (impl->ncclComm) {
    impl->summed[index] = outputs;
    return std::nullopt;
  }
  // Every rank must have NCCL before any starts to set it up: otherwise
  // all sum on the host.
  std::string why;
  const NcclApi *nccl = std::getenv("REWIRE_NCCL") && std::string(std::getenv("REWIRE_NCCL")) == "0"
                            ? (why = "REWIRE_NCCL=0", nullptr)
                            : cuda::nccl(why);
  double have = nccl ? 1.0 : 0.0;
  if (auto err = comm.allReduceSum(&have, 1))
    return err;
  if (have < comm.size())
    return nccl ? "NCCL is missing on " + std::to_string(comm.size() - static_cast<int>(have)) +
                      " of " + std::to_string(comm.size()) + " ranks"
                : why;
  // Rank 0's id to every rank (with whether it has one).
  struct {
    int ok;
    NcclUniqueId id;
  } root{};
  int r = kNcclSuccess;
  if (comm.rank() == 0) {
    r = nccl->ncclGetUniqueId(&root.id);
    root.ok = r == kNcclSuccess;
  }
  if (auto err = comm.broadcast(&root, sizeof root, 0))
    return err;
  if (!root.ok)
    return std::string("NCCL could not make a communicator id on rank 0") +
           (comm.rank() == 0 ? std::string(": ") + nccl->ncclGetErrorString(r) : "");
  impl->api->cuCtxSetCurrent(impl->context);
  r = nccl->ncclCommInitRank(&impl->ncclComm, comm.size(), root.id, comm.rank());
  if (r != kNcclSuccess) {
    impl->ncclComm = nullptr;
    fatal = true;
    return std::string("NCCL did not set up the communicator on ") + impl->deviceText + ": " +
           nccl->ncclGetErrorString(r) +
           " (one GPU per rank: CUDA_VISIBLE_DEVICES, or REWIRE_NCCL=0 to sum on the host)";
  }
  impl->ncclApi = nccl;
  int version = 0;
  nccl->ncclGetVersion(&version);
  // 2.28.3 is 22803 (NCCL_VERSION: major * 10000 + minor * 100 + patch).
  impl->ncclText = "NCCL " + std::to_string(version / 10000) + "." +
                   std::to_string(version / 100 % 100) + "." + std::to_string(version % 100);
  impl->summed[index] = outputs;
  return std::nullopt;
}

std::optional<std::string> CudaModel::pull(const std::string &function,
                                           void *const *inputs) const {
  size_t index = 0;
  if (auto err = impl->find(function, index))
    return err;
  const FunctionInfo &info = impl->infos[index];
  Prepared &p = impl->prepared[index];
  if (!p.keptLoaded)
    return std::nullopt; // nothing on the device yet: the host values are current
  const DriverApi &api = *impl->api;
  api.cuCtxSetCurrent(impl->context);
  for (size_t i = 0; i < info.inputs.size(); ++i)
    if (p.keptFrom[i] >= 0 && info.inputs[i].byteSize() > 0)
      if (auto err = impl->check(api.cuMemcpyDtoHAsync(inputs[i], p.base[p.inputBuffer[i]],
                                                       info.inputs[i].byteSize(), impl->stream),
                                 "cannot download input " + std::to_string(i)))
        return err;
  return impl->check(api.cuStreamSynchronize(impl->stream), "'" + function + "' failed");
}

std::optional<std::string> CudaModel::profile(const std::string &function, int iterations,
                                             std::vector<StepProfile> &steps) const {
  std::optional<size_t> found = impl->indexOf(function);
  size_t index = found.value_or(0);
  if (!found || !impl->prepared[index].ran)
    return "run '" + function + "' once before profiling it";
  const DriverApi &api = *impl->api;
  const Function &f = impl->artifact.functions[index];
  steps.clear();
  CUevent start, stop;
  api.cuEventCreate(&start, 0);
  api.cuEventCreate(&stop, 0);
  for (size_t i = 0; i < f.steps.size(); ++i) {
    const Step &s = f.steps[i];
    StepProfile prof;
    if (s.kind == Step::Kind::launch) {
      prof.what = impl->artifact.kernels[s.kernel];
      for (int64_t e : s.extents) // the span of each argument
        prof.bytes += e;
    } else {
      prof.what = "cublas " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                  std::to_string(s.k) + (s.batch > 1 ? " (batch " + std::to_string(s.batch) + ")" : "");
      prof.bytes = 4 * s.batch * (s.m * s.k + s.k * s.n + 2 * s.m * s.n);
    }
    impl->enqueue(index, static_cast<int>(i)); // warm-up
    api.cuEventRecord(start, impl->stream);
    for (int it = 0; it < iterations; ++it)
      if (auto err = impl->enqueue(index, static_cast<int>(i)))
        return err;
    api.cuEventRecord(stop, impl->stream);
    if (auto err = impl->check(api.cuEventSynchronize(stop), "'" + prof.what + "' failed"))
      return err;
    float elapsed = 0;
    api.cuEventElapsedTime(&elapsed, start, stop);
    prof.ms = elapsed / std::max(iterations, 1);
    steps.push_back(prof);
  }
  api.cuEventDestroy(start);
  api.cuEventDestroy(stop);
  return std::nullopt;
}

std::optional<std::string> CudaModel::time(const std::string &function, int iterations,
                                           double &ms) const {
  std::optional<size_t> found = impl->indexOf(function);
  size_t index = found.value_or(0);
  if (!found || !impl->prepared[index].ran)
    return "run '" + function + "' once before timing it";
  const DriverApi &api = *impl->api;
  Prepared &p = impl->prepared[index];
  CUevent start, stop;
  api.cuEventCreate(&start, 0);
  api.cuEventCreate(&stop, 0);
  api.cuEventRecord(start, impl->stream);
  for (int i = 0; i < iterations; ++i) {
    if (p.graph) {
      if (auto err = impl->check(api.cuGraphLaunch(p.graph, impl->stream), "graph launch"))
        return err;
    } else if (auto err = impl->enqueue(index)) {
      return err;
    }
  }
  api.cuEventRecord(stop, impl->stream);
  CUresult r = api.cuEventSynchronize(stop);
  float elapsed = 0;
  api.cuEventElapsedTime(&elapsed, start, stop);
  api.cuEventDestroy(start);
  api.cuEventDestroy(stop);
  if (auto err = impl->check(r, "'" + function + "' failed"))
    return err;
  ms = elapsed / std::max(iterations, 1);
  return std::nullopt;
}

} // namespace rewire::runtime
