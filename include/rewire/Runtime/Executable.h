//===- Executable.h - One interface over CPU and CUDA artifacts --*- C++ -*-===//
//
// What the tools, the trainer and the bindings need of a loaded artifact,
// whatever runs it: its functions and metadata, calls on host tensors or
// caller-owned buffers, and state kept where the code runs between calls
// (a train step's weights and optimizer state stay on the GPU; on the CPU
// host memory is that place, and keeping is free). Model (Runtime.h) and
// CudaModel (CudaRuntime.h) implement it; Executable::load picks by file.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_EXECUTABLE_H
#define REWIRE_RUNTIME_EXECUTABLE_H

#include "rewire/Support/DType.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rewire::runtime {

class Communicator;

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// "2x3xf32".
  std::string typeString() const;
  int64_t byteSize() const;
};

struct FunctionInfo {
  std::string name;
  std::vector<TensorInfo> inputs, parameters, outputs;
  /// The outputs (indices) in the order the code finishes them, where it
  /// tells the caller's OutputHook (a split train step's grad_step); empty
  /// otherwise.
  std::vector<size_t> readyOrder;
};

/// Called during a call, on the calling thread, with each output listed in
/// FunctionInfo::readyOrder as soon as the code is done with it: it neither
/// writes nor reads that buffer again in this call.
struct OutputHook {
  void (*ready)(void *context, int64_t output) = nullptr;
  void *context = nullptr;
};

class Executable {
public:
  /// Loads a CPU (.rwx) or CUDA (.rwcu) artifact, told apart by content,
  /// and binds its parameters from `parametersPath` (default: the file the
  /// artifact names, next to it). Returns null and sets `error` on failure.
  static std::unique_ptr<Executable> load(const std::string &artifactPath, std::string &error,
                                          const std::string &parametersPath = "");
  virtual ~Executable();

  virtual const std::vector<FunctionInfo> &functions() const = 0;
  /// The function named `name`, or null.
  const FunctionInfo *function(const std::string &name) const;
  /// The artifact's metadata JSON (format, target, parameters_file, ...).
  virtual const std::string &metadata() const = 0;
  /// Where the code runs: "cpu", or the GPU ("NVIDIA H200, sm_90, ...").
  virtual std::string device() const = 0;
  /// What runs the dense products there: "oneDNN 2.6.3 sgemm, ISA
  /// avx512_core" (the kernel oneDNN picked for this CPU), or "cuBLAS".
  virtual std::string kernels() const = 0;
  /// Which thread pools run the parallel work, in words (CPU: one OpenMP
  /// pool, or two beside a host that loaded oneDNN itself); empty where it
  /// does not apply.
  virtual std::string threads() const { return ""; }
  /// How fused attention runs (CPU: 64-query blocks on AVX-512 lanes, or
  /// key tiles on oneDNN); empty where the model has none or it does not
  /// apply.
  virtual std::string attention() const { return ""; }
  /// kernels(), threads() and attention() as `rewire-run --describe` ends:
  /// "kernels: ...\n" and, where not empty, "threads: ...\n" and
  /// "attention: ...\n".
  std::string whatRuns() const;
  virtual bool isCuda() const = 0;

  /// Runs `function` on `inputs` (in declared order), allocating `outputs`.
  virtual std::optional<std::string> run(const std::string &function,
                                         const std::vector<HostTensor> &inputs,
                                         std::vector<HostTensor> &outputs) const = 0;

  /// Runs with caller-owned buffers, dense row-major of the declared shapes
  /// (checked by the caller; see run for the checked form).
  virtual std::optional<std::string> runRaw(const std::string &function,
                                            const void *const *inputs,
                                            void *const *outputs) const = 0;
  /// runRaw, telling `hook` of the outputs in the function's readyOrder as
  /// they become final (none where the order is empty).
  virtual std::optional<std::string> runRaw(const std::string &function,
                                            const void *const *inputs, void *const *outputs,
                                            OutputHook hook) const {
    (void)hook;
    return runRaw(function, inputs, outputs);
  }

  /// Keeps state where the code runs between calls of `function`: for each
  /// (output, input) pair the output becomes the input of the next call
  /// there, and the caller's host copy of the input is current only after
  /// `pull`. The caller swaps its host buffers of each pair after a call
  /// (on the CPU they are the state; on the GPU they are not read).
  virtual std::optional<std::string>
  keepOnDevice(const std::string &function,
               const std::vector<std::pair<size_t, size_t>> &pairs) const {
    (void)function, (void)pairs;
    return std::nullopt;
  }
  /// From now on, outputs `outputs` (f32) of `function` are summed over the
  /// ranks of `comm` where the code runs, before they come back: every
  /// call returns each rank's sum. Collective: every rank calls it with the
  /// same arguments. A GPU artifact sums with NCCL, one GPU per rank. When
  /// it cannot (no NCCL on some rank, or a CPU artifact, whose outputs the
  /// caller sums itself) it returns why and nothing changes, on every rank
  /// alike; `fatal` is then false. A failure after the ranks began to set
  /// up together sets `fatal`: the ranks may be stuck, end them all.
  virtual std::optional<std::string> sumOutputsOverRanks(const std::string &function,
                                                        const std::vector<size_t> &outputs,
                                                        Communicator &comm, bool &fatal) const {
    (void)function, (void)outputs, (void)comm;
    fatal = false;
    return std::string("the outputs of a CPU artifact are summed on the host");
  }
  /// What sums outputs over ranks (sumOutputsOverRanks), e.g. "NCCL 2.28.3".
  virtual std::string deviceSums() const { return ""; }
  /// Brings the inputs kept by keepOnDevice into `inputs` (host buffers in
  /// declared order; the other entries are not touched and may be null).
  virtual std::optional<std::string> pull(const std::string &function,
                                          void *const *inputs) const {
    (void)function, (void)inputs;
    return std::nullopt;
  }
};

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_EXECUTABLE_H
