//===- CudaRuntime.h - Load and run CUDA artifacts ---------------*- C++ -*-===//
//
// The CUDA half of the runtime (links no MLIR, no CUDA library: the driver
// and cuBLAS are dlopened, see runtime/cuda/Driver.h). A CudaModel is a
// `.rwcu` artifact (rewire-compile --target=cuda) loaded on device 0 (or
// $REWIRE_CUDA_DEVICE): kernel images validated and loaded (the cubin when
// it matches the device, else the PTX through the driver's JIT, whose log
// is reported on failure), parameters and constants uploaded once into a
// device memory pool, every entry point's temporaries in one arena. The
// first run of an entry point executes its schedule step by step; later
// runs replay a CUDA graph of it ($REWIRE_CUDA_GRAPHS=0 turns graphs off).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_CUDARUNTIME_H
#define REWIRE_RUNTIME_CUDARUNTIME_H

#include "rewire/Runtime/Runtime.h"

namespace rewire::runtime {

/// Whether `path` starts with the CUDA artifact magic.
bool isCudaArtifact(const std::string &path);

/// Reads and validates a CUDA artifact without a GPU and describes it:
/// images, kernels, and per function its tensors, launches, GEMMs and
/// arena size. Returns what is wrong instead when it is invalid.
std::optional<std::string> describeCudaArtifact(const std::string &path, std::string &text);

/// A CUDA artifact (Executable). Calls are not thread-safe: they share the
/// device buffers and the stream.
class CudaModel : public Executable {
public:
  static std::unique_ptr<CudaModel> load(const std::string &artifactPath, std::string &error,
                                         const std::string &parametersPath = "");
  ~CudaModel();

  const std::vector<FunctionInfo> &functions() const override;
  /// "NVIDIA H200, sm_90, 132 SMs, 140 GiB; image: cubin".
  std::string device() const override;
  std::string kernels() const override { return "cuBLAS"; }
  bool isCuda() const override { return true; }

  /// The artifact's metadata JSON (format, chip, parameters_file, ...).
  const std::string &metadata() const override;

  /// Uploads `inputs`, runs `function`, downloads `outputs` (synchronous).
  std::optional<std::string> run(const std::string &function,
                                 const std::vector<HostTensor> &inputs,
                                 std::vector<HostTensor> &outputs) const override;

  /// As run, with caller-owned host buffers, dense row-major of the
  /// declared shapes (Model::runRaw's contract): every input is uploaded and
  /// every output downloaded on each call.
  using Executable::runRaw; // with an OutputHook: the outputs come at the end
  std::optional<std::string> runRaw(const std::string &function, const void *const *inputs,
                                    void *const *outputs) const override;

  /// Keeps state on the device between calls of `function` (a train
  /// step's weights and optimizer state): for each (output, input) pair the
  /// output is copied into the input's device buffer after every call, the
  /// input is uploaded only on the first call, and the output is not
  /// downloaded (runRaw leaves its host buffer untouched). `pull` brings
  /// those inputs' current values to the host when it needs them.
  std::optional<std::string>
  keepOnDevice(const std::string &function,
               const std::vector<std::pair<size_t, size_t>> &pairs) const override;
  /// Downloads the inputs kept on the device into `inputs` (host buffers in
  /// declared order; the other entries are not touched and may be null).
  std::optional<std::string> pull(const std::string &function,
                                  void *const *inputs) const override;
  /// With NCCL: each call enqueues one all-reduce per output, in place on
  /// the GPU, after the function's kernels and before the downloads.
  std::optional<std::string> sumOutputsOverRanks(const std::string &function,
                                                 const std::vector<size_t> &outputs,
                                                 Communicator &comm, bool &fatal) const override;
  std::string deviceSums() const override;

  /// Runs `function` `iterations` times on the inputs of the last run
  /// (device-resident), timed with CUDA events: milliseconds per run.
  std::optional<std::string> time(const std::string &function, int iterations, double &ms) const;

  /// One step of a schedule, timed alone.
  struct StepProfile {
    std::string what;  ///< kernel name, or "cublas MxNxK (batch B)"
    double ms = 0;     ///< mean over the iterations
    int64_t bytes = 0; ///< bytes the step's operands span (its traffic, roughly)
  };
  /// Times every step of `function` (run once before) separately with CUDA
  /// events, each the mean of `iterations` back-to-back repetitions.
  std::optional<std::string> profile(const std::string &function, int iterations,
                                     std::vector<StepProfile> &steps) const;

  struct Impl;

private:
  explicit CudaModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_CUDARUNTIME_H
