//===- Runtime.h - Load and run compiled Rewire artifacts --------*- C++ -*-===//
//
// The C++ API of the Rewire runtime (links no MLIR). A Model is an artifact
// (a shared object written by rewire-compile) with its parameters bound
// from safetensors (memory-mapped: no copy when aligned). Functions are
// called by name with host tensors; every input is checked against the
// entry point's declared count, dtype and shape before the call.
//
//   std::string error;
//   auto model = rewire::runtime::Model::load("gpt.rwx", error);
//   std::vector<rewire::HostTensor> outputs;
//   if (auto err = model->run("forward", {ids}, outputs)) ...
//
// A Model may be shared by threads; calls do not modify it.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_RUNTIME_H
#define REWIRE_RUNTIME_RUNTIME_H

#include "rewire/Runtime/Executable.h"
#include "rewire/Support/DType.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rewire::runtime {

/// A CPU artifact (Executable).
class Model : public Executable {
public:
  /// Loads `artifactPath` and binds its parameters from `parametersPath`
  /// (default: the file the artifact names, next to it). Returns null and
  /// sets `error` on failure.
  static std::unique_ptr<Model> load(const std::string &artifactPath, std::string &error,
                                     const std::string &parametersPath = "");
  ~Model();

  const std::vector<FunctionInfo> &functions() const override;
  /// The artifact's metadata JSON (compiler, target, functions).
  const std::string &metadata() const override;
  std::string device() const override { return "cpu"; }
  std::string kernels() const override;
  std::string threads() const override;
  std::string attention() const override;
  bool isCuda() const override { return false; }

  /// Runs `function` on `inputs` (in declared order), allocating `outputs`.
  std::optional<std::string> run(const std::string &function,
                                 const std::vector<HostTensor> &inputs,
                                 std::vector<HostTensor> &outputs) const override;

  /// Runs with caller-owned buffers, dense row-major of the declared shapes
  /// (checked by the caller; see run for the checked form). No allocation.
  std::optional<std::string> runRaw(const std::string &function, const void *const *inputs,
                                    void *const *outputs) const override;
  std::optional<std::string> runRaw(const std::string &function, const void *const *inputs,
                                    void *const *outputs, OutputHook hook) const override;

  struct Impl;

private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// Checks `inputs` against `fn`'s declared inputs; returns what is wrong.
std::optional<std::string> checkInputs(const FunctionInfo &fn,
                                       const std::vector<HostTensor> &inputs);

/// Whether an error of Model::run / runRaw comes from the values of the
/// inputs (an index, class label or divisor out of range) rather than from
/// the model or the machine: tools exit with their "bad input" code for it.
bool isInputDataError(const std::string &message);

/// Whether an error of Model::run / runRaw is a temporary buffer the machine
/// could not allocate: tools exit with their resource/I/O code for it.
bool isOutOfMemoryError(const std::string &message);

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_RUNTIME_H
