//===- Model.cpp - Load and run compiled Rewire artifacts -----------------===//
//
// Implements Runtime.h: dlopen the artifact, validate its metadata (format,
// version, every tensor spec), map the parameter file and check every
// parameter's dtype and shape, call `rewire_call_<name>(void **buffers)`
// with inputs, parameters and outputs in that order.
//
//===----------------------------------------------------------------------===//
#include "rewire/Runtime/CallErrors.h"
#include "rewire/Runtime/Runtime.h"
#include "rewire/Support/CpuArtifact.h"
#include "rewire/Support/Json.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Support/Safetensors.h"
#include "rewire/Version.h"
#include "ElfImage.h"
#include "HeapTuning.h"
#include "HostOpenMP.h"
#include "ArtifactMetadata.h"

#include <cstring>
#include <dlfcn.h>
#include <map>
#include <sched.h>
#include <unistd.h>

namespace rewire::runtime {

namespace {
using EntryFn = void (*)(void **);
using CallFn = int (*)(EntryFn, void **, char *, int64_t);

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

} // namespace

std::optional<std::string> parseTensorSpec(const JsonValue &v, const std::string &where,
                                     TensorInfo &out) {
  const JsonValue *name = v.get("name"), *dtype = v.get("dtype"), *shape = v.get("shape");
  if (!name || !name->isString() || !dtype || !dtype->isString() || !shape ||
      !shape->isArray())
    return where + " lacks name, dtype or shape";
  auto dt = parseDTypeName(dtype->text);
  if (!dt)
    return where + " has unknown dtype '" + dtype->text + "'";
  out.name = name->text;
  out.dtype = *dt;
  int64_t numel = 1;
  for (const JsonValue &d : shape->array) {
    auto n = d.asInt();
    if (!n || *n < 0 || (*n != 0 && numel > (int64_t(1) << 48) / *n))
      return where + " has an invalid dimension";
    numel *= *n;
    out.shape.push_back(*n);
  }
  return std::nullopt;
}

std::optional<std::string> findParameter(const SafetensorsMapping &mapping,
                                         const std::string &file, const std::string &fn,
                                         const TensorInfo &p,
                                         const SafetensorsMapping::Tensor *&tensor) {
  tensor = mapping.find(p.name);
  if (!tensor)
    return "parameter '" + p.name + "' of '" + fn + "' is not in '" + file + "'";
  if (tensor->dtype != dtypeSafetensorsName(p.dtype) || tensor->shape != p.shape)
    return "parameter '" + p.name + "' in '" + file + "' is " + tensor->dtype + " [" +
           shapeString(tensor->shape) + "], the artifact expects " +
           dtypeSafetensorsName(p.dtype) + " [" + shapeString(p.shape) + "]";
  return std::nullopt;
}

/// The calling thread's CPU affinity, put back on scope exit where the
/// libraries loaded meanwhile changed it. An artifact's oneDNN brings GNU
/// libgomp, whose constructor binds the loading thread to its first place
/// when OMP_PROC_BIND or OMP_PLACES is set; libomp, which runs the
/// artifact's parallel regions and oneDNN's, started later on that thread,
/// took its one CPU for the machine and put every thread of the team on it:
/// a train step at half speed on 2 cores (test/Runtime/proc-bind.test).
/// With the mask restored libomp binds the team as the variables ask.
namespace {
class KeepAffinity {
public:
  KeepAffinity() { saved = ::sched_getaffinity(0, sizeof(mask), &mask) == 0; }
  ~KeepAffinity() {
    cpu_set_t now;
    if (saved && ::sched_getaffinity(0, sizeof(now), &now) == 0 && !CPU_EQUAL(&now, &mask))
      ::sched_setaffinity(0, sizeof(mask), &mask);
  }
  KeepAffinity(const KeepAffinity &) = delete;
  KeepAffinity &operator=(const KeepAffinity &) = delete;

private:
  cpu_set_t mask;
  bool saved;
};
} // namespace

/// dlopen of the artifact at `path`. With another OpenMP runtime global
/// (`foreign`, from foreignOpenMP: GNU libgomp, as after `import torch`),
/// oneDNN in an artifact loaded the usual way binds to it while the
/// artifact's loops run on libomp, and the two pools spin against each
/// other (a 12-layer GPT-2 forward: 441 ms alone, 1200 ms after `import
/// torch`; docs/performance.md, "One thread pool"). Where oneDNN is not yet
/// in the process, the artifact and the libraries loaded with it look up
/// symbols in their own scope first (RTLD_DEEPBIND), so oneDNN's GOMP_*
/// calls reach the artifact's libomp: one pool (PyPI's torch, whose oneDNN
/// is its own: 873 -> ~520 ms for the GPT-2 stack). libomp itself is opened
/// first the usual way, from where artifacts find it (their rpath,
/// REWIRE_LLVM_LIB_DIR; `*openmp`, kept open by the model): under DEEPBIND
/// its `environ` would bind to libc's own copy, which a host's executable
/// does not update, and libomp crashed reading its settings from it. Where
/// oneDNN is already loaded (Debian's torch links libdnnl) it stays bound to
/// the host's runtime; `*hostPool` then names that runtime, and each call
/// makes the loops' threads sleep after each region instead and gives
/// oneDNN's teams the artifact's size (HostTeam). Whether the oneDNN in the process is the
/// host's is read from where its GOMP_parallel is bound (boundFile), not
/// from who loaded it: oneDNN that an earlier artifact brought stays loaded
/// after that artifact is closed, bound to libomp, and the next artifact
/// shares that pool (before, a second model beside PyPI's torch was taken
/// for Debian's case and both models' loops slept after every region: a
/// 2-layer GPT-2 68 -> 92 ms a forward). DEEPBIND also means the artifact's
/// malloc is libc's even where a host preloads another allocator; artifacts
/// free what they allocate.
static void *openArtifact(const std::string &path, const std::string &foreign, void **openmp,
                          std::string *hostPool) {
  KeepAffinity keep;
  *openmp = nullptr;
  hostPool->clear();
  int flags = RTLD_NOW | RTLD_LOCAL;
  if (!foreign.empty()) {
    if (void *dnnl = ::dlopen(cpu::kDnnlSoname, RTLD_NOW | RTLD_NOLOAD)) {
      std::string bound = boundFile(dnnl, "GOMP_parallel");
      ::dlclose(dnnl);
      if (bound.find("libomp") == std::string::npos)
        *hostPool = bound.empty() ? foreign : bound;
    }
    if (hostPool->empty()) {
      *openmp = ::dlopen((std::string(REWIRE_LLVM_LIB_DIR) + "/" + cpu::kOpenMPSoname).c_str(),
                         RTLD_NOW | RTLD_LOCAL);
      if (*openmp)
        flags |= RTLD_DEEPBIND;
      else
        *hostPool = foreign;
    }
  }
  return ::dlopen(path.c_str(), flags);
}

struct Model::Impl {
  void *handle = nullptr;
  /// libomp, opened before a DEEPBIND artifact (openArtifact).
  void *openmp = nullptr;
  std::string metadata;
  std::vector<FunctionInfo> functions;
  std::vector<EntryFn> entries;
  CallFn call = nullptr;
  /// rewire_kernels_describe's text (Executable::kernels).
  std::string kernels;
  /// openArtifact's choice, in words (Executable::threads).
  std::string threads;
  /// rewire_attention_describe's text where the model has fused attention
  /// (Executable::attention).
  std::string attention;
  /// With two pools (openArtifact's hostPool): what each call sets on its
  /// thread (the loops' threads sleep after a region; oneDNN's team size).
  HostTeam hostTeam;
  /// rewire_set_output_hook (rewire/Support/CpuArtifact.h); null in
  /// artifacts of older compilers.
  void (*setOutputHook)(void (*)(void *, int64_t), void *) = nullptr;
  /// Per function: the parameter pointers, in declared order.
  std::vector<std::vector<void *>> parameters;
  SafetensorsMapping mapping;
  /// Parameters that had to be copied for alignment.
  std::map<std::string, std::vector<uint64_t>> copies;

  ~Impl() {
    if (handle)
      ::dlclose(handle);
    if (openmp)
      ::dlclose(openmp);
  }
};

Model::Model(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Model::~Model() = default;

const std::vector<FunctionInfo> &Model::functions() const { return impl->functions; }
const std::string &Model::metadata() const { return impl->metadata; }
std::string Model::kernels() const { return impl->kernels; }
std::string Model::threads() const { return impl->threads; }
std::string Model::attention() const { return impl->attention; }


std::unique_ptr<Model> Model::load(const std::string &artifactPath, std::string &error,
                                   const std::string &parametersPath) {
  auto impl = std::make_unique<Impl>();
  // The ELF headers are checked first: a truncated or damaged file would
  // crash the loader. (Loading through /proc/self/fd/N would close the
  // window between check and load, but glibc identifies loaded objects by
  // that name, and fd numbers are reused: a second model would silently
  // resolve to the first.)
  int fd;
  uint64_t size;
  if (auto err = openRegularFile(artifactPath, fd, size)) {
    error = "cannot load artifact '" + artifactPath + "': " + *err;
    return nullptr;
  }
  auto bad = checkElfImage(fd, size, artifactPath);
  ::close(fd);
  if (bad) {
    error = "cannot load artifact '" + artifactPath + "': " + *bad;
    return nullptr;
  }
  tuneHeapOnce();
  // dlopen searches the library path for names without a slash.
  std::string path = artifactPath.find('/') == std::string::npos ? "./" + artifactPath
                                                                  : artifactPath;
  std::string foreign = foreignOpenMP(), hostPool;
  impl->handle = openArtifact(path, foreign, &impl->openmp, &hostPool);
  if (!impl->handle) {
    const char *why = ::dlerror();
    error = "cannot load artifact '" + artifactPath + "': " + (why ? why : "unknown error") +
            " (artifacts are shared objects written by rewire-compile for this machine)";
    return nullptr;
  }
  auto *version = static_cast<const int32_t *>(::dlsym(impl->handle, cpu::kVersionSymbol));
  auto *meta = static_cast<const char *>(::dlsym(impl->handle, cpu::kMetadataSymbol));
  if (!version || !meta) {
    error = "'" + artifactPath + "' is a shared object but not a Rewire artifact";
    return nullptr;
  }
  if (*version != cpu::kFormatVersion) {
    error = "'" + artifactPath + "' has artifact format " + std::to_string(*version) +
            ", this runtime reads format " + std::to_string(cpu::kFormatVersion) +
            "; recompile it with this version's rewire-compile";
    return nullptr;
  }
  impl->metadata = std::string(meta, ::strnlen(meta, size_t(64) << 20));
  JsonValue root;
  if (auto err = parseJson(impl->metadata, root)) {
    error = "'" + artifactPath + "': invalid metadata: " + *err;
    return nullptr;
  }
  const JsonValue *functions = root.get("functions"), *format = root.get("format"),
                  *paramsFile = root.get("parameters_file");
  if (!format || !format->isString() || format->text != "rewire-artifact" || !functions ||
      !functions->isArray() || !paramsFile || !paramsFile->isString()) {
    error = "'" + artifactPath + "': metadata lacks format, functions or parameters_file";
    return nullptr;
  }
  // Code generated for another CPU dies of SIGILL: refuse it by name.
  std::vector<std::string> required;
  if (const JsonValue *features = root.get("cpu_features"); features && features->isArray())
    for (const JsonValue &f : features->array)
      if (f.isString())
        required.push_back(f.text);
  if (std::vector<std::string> missing = cpu::missingFeatures(required); !missing.empty()) {
    std::string list;
    for (const std::string &m : missing)
      list += (list.empty() ? "" : ", ") + m;
    const JsonValue *cpuName = root.get("cpu");
    error = "'" + artifactPath + "' was compiled for a CPU with " + list + " (--cpu=" +
            (cpuName && cpuName->isString() ? cpuName->text : std::string("?")) +
            "), which this CPU lacks; recompile it here, or with --cpu=x86-64-v2 (or "
            "another CPU this machine has) for an artifact that runs on more machines";
    return nullptr;
  }
  impl->call = reinterpret_cast<CallFn>(::dlsym(impl->handle, cpu::kCallSymbol));
  if (!impl->call) {
    error = "'" + artifactPath + "' lacks " + cpu::kCallSymbol + "; recompile it with this "
            "version's rewire-compile";
    return nullptr;
  }
  using DescribeFn = const char *(*)();
  auto describe = reinterpret_cast<DescribeFn>(::dlsym(impl->handle, cpu::kKernelsSymbol));
  impl->kernels = describe ? describe() : "unknown (an artifact of an older rewire-compile)";
  if (auto attention = reinterpret_cast<DescribeFn>(::dlsym(impl->handle, cpu::kAttentionSymbol)))
    impl->attention = attention();
  impl->setOutputHook = reinterpret_cast<void (*)(void (*)(void *, int64_t), void *)>(
      ::dlsym(impl->handle, cpu::kSetOutputHookSymbol));
  if (!hostPool.empty()) {
    impl->hostTeam.bind(hostPool, impl->handle);
    impl->threads = "two OpenMP pools: the loops on LLVM libomp, oneDNN on the host's " + hostPool +
                    " (the host loaded oneDNN first); the loops' threads sleep after each region";
  } else {
    impl->threads = "one OpenMP pool (LLVM libomp) for the loops and oneDNN" +
                    (foreign.empty() ? std::string() : ", beside the host's " + foreign);
  }
  bool anyParameters = false;
  for (const JsonValue &f : functions->array) {
    FunctionInfo info;
    const JsonValue *name = f.get("name"), *entry = f.get("entry");
    if (!name || !name->isString() || !entry || !entry->isString()) {
      error = "'" + artifactPath + "': a function lacks name or entry";
      return nullptr;
    }
    info.name = name->text;
    for (auto [key, list] : {std::pair{"inputs", &info.inputs},
                             std::pair{"parameters", &info.parameters},
                             std::pair{"outputs", &info.outputs}}) {
      const JsonValue *arr = f.get(key);
      if (!arr || !arr->isArray()) {
        error = "'" + artifactPath + "': function '" + info.name + "' lacks " + key;
        return nullptr;
      }
      for (const JsonValue &v : arr->array) {
        TensorInfo t;
        if (auto err = parseTensorSpec(v, "function '" + info.name + "' " + key, t)) {
          error = "'" + artifactPath + "': " + *err;
          return nullptr;
        }
        list->push_back(std::move(t));
      }
    }
    if (const JsonValue *order = f.get("ready_order")) {
      // Each output at most once: the trainer's buckets rely on it.
      std::vector<bool> seen(info.outputs.size(), false);
      bool ok = order->isArray();
      for (size_t i = 0; ok && i < order->array.size(); ++i) {
        const JsonValue &v = order->array[i];
        ok = v.isNumber() && v.number >= 0 && v.number < double(info.outputs.size()) &&
             v.number == double(size_t(v.number)) && !seen[size_t(v.number)];
        if (ok) {
          seen[size_t(v.number)] = true;
          info.readyOrder.push_back(size_t(v.number));
        }
      }
      if (!ok) {
        error = "'" + artifactPath + "': function '" + info.name +
                "' has a ready_order that is not a list of distinct output indices";
        return nullptr;
      }
    }
    auto fn = reinterpret_cast<EntryFn>(::dlsym(impl->handle, entry->text.c_str()));
    if (!fn) {
      error = "'" + artifactPath + "': entry point '" + entry->text + "' is missing";
      return nullptr;
    }
    anyParameters |= !info.parameters.empty();
    impl->functions.push_back(std::move(info));
    impl->entries.push_back(fn);
  }

  if (anyParameters) {
    std::string params = parametersPath;
    if (params.empty()) {
      if (paramsFile->text.empty()) {
        error = "'" + artifactPath + "' takes parameters but names no parameter file";
        return nullptr;
      }
      params = paramsFile->text[0] == '/' ? paramsFile->text
                                          : dirOf(artifactPath) + "/" + paramsFile->text;
    }
    if (auto err = impl->mapping.open(params)) {
      error = "cannot bind parameters: " + *err;
      return nullptr;
    }
    for (const FunctionInfo &f : impl->functions) {
      std::vector<void *> ptrs;
      for (const TensorInfo &p : f.parameters) {
        const SafetensorsMapping::Tensor *t = nullptr;
        if (auto err = findParameter(impl->mapping, params, f.name, p, t)) {
          error = *err;
          return nullptr;
        }
        void *data = const_cast<void *>(t->data);
        if (reinterpret_cast<uintptr_t>(data) % dtypeSize(p.dtype) != 0) {
          auto &copy = impl->copies[p.name];
          if (copy.empty()) {
            copy.resize((t->bytes + 7) / 8);
            std::memcpy(copy.data(), t->data, t->bytes);
          }
          data = copy.data();
        }
        ptrs.push_back(data);
      }
      impl->parameters.push_back(std::move(ptrs));
    }
  } else {
    impl->parameters.resize(impl->functions.size());
  }
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

std::optional<std::string> checkInputs(const FunctionInfo &fn,
                                       const std::vector<HostTensor> &inputs) {
  if (inputs.size() != fn.inputs.size())
    return "'" + fn.name + "' takes " + std::to_string(fn.inputs.size()) + " input(s), got " +
           std::to_string(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo &want = fn.inputs[i];
    const HostTensor &have = inputs[i];
    if (have.dtype != want.dtype || have.shape != want.shape)
      return "input " + std::to_string(i) + " ('" + want.name + "') of '" + fn.name +
             "' must be " + want.typeString() + ", got " + have.typeString();
    if (have.data.size() != static_cast<size_t>(want.byteSize()))
      return "input " + std::to_string(i) + " ('" + want.name + "') holds " +
             std::to_string(have.data.size()) + " bytes, " + want.typeString() + " needs " +
             std::to_string(want.byteSize());
  }
  return std::nullopt;
}

std::optional<std::string> Model::run(const std::string &function,
                                      const std::vector<HostTensor> &inputs,
                                      std::vector<HostTensor> &outputs) const {
  const FunctionInfo *fn = this->function(function);
  return runOnHostTensors(fn, function, inputs, outputs,
                          [&](const void *const *in, void *const *out) {
                            return runRaw(function, in, out);
                          });
}

std::optional<std::string> Model::runRaw(const std::string &function,
                                         const void *const *inputs,
                                         void *const *outputs) const {
  size_t index = 0;
  while (index < impl->functions.size() && impl->functions[index].name != function)
    ++index;
  if (index == impl->functions.size())
    return "the artifact has no function '" + function + "'";
  const FunctionInfo &fn = impl->functions[index];
  std::vector<void *> buffers;
  buffers.reserve(fn.inputs.size() + fn.parameters.size() + fn.outputs.size());
  // A zero-sized tensor may come with a null pointer; the code never reads it.
  static char empty[64];
  for (size_t i = 0; i < fn.inputs.size(); ++i)
    buffers.push_back(inputs[i] ? const_cast<void *>(inputs[i]) : empty);
  for (void *p : impl->parameters[index])
    buffers.push_back(p);
  for (size_t i = 0; i < fn.outputs.size(); ++i)
    buffers.push_back(outputs[i] ? outputs[i] : empty);
  char message[1024];
  HostTeam::Scope team(impl->hostTeam);
  if (impl->call(impl->entries[index], buffers.data(), message, sizeof(message)) != 0)
    return "'" + function + "' failed: " + std::string(message);
  return std::nullopt;
}

std::optional<std::string> Model::runRaw(const std::string &function,
                                         const void *const *inputs, void *const *outputs,
                                         OutputHook hook) const {
  if (!impl->setOutputHook || !hook.ready)
    return runRaw(function, inputs, outputs);
  impl->setOutputHook(hook.ready, hook.context);
  std::optional<std::string> result = runRaw(function, inputs, outputs);
  impl->setOutputHook(nullptr, nullptr);
  return result;
}

bool isInputDataError(const std::string &message) {
  return message.find(REWIRE_INPUT_DATA_SUFFIX) != std::string::npos;
}

bool isOutOfMemoryError(const std::string &message) {
  return message.find(REWIRE_OUT_OF_MEMORY_PREFIX) != std::string::npos;
}

} // namespace rewire::runtime
