//===- ArtifactMetadata.h - An artifact's metadata, read -------*- C++ -*-===//
#ifndef REWIRE_RUNTIME_ARTIFACTMETADATA_H
#define REWIRE_RUNTIME_ARTIFACTMETADATA_H

#include "rewire/Runtime/Runtime.h"
#include "rewire/Support/Json.h"
#include "rewire/Support/Safetensors.h"

namespace rewire::runtime {

/// A check of one input's values (rewire-check-indices record-inputs):
/// every element in [lo, hi) or equal to `also`; with `nonzero`, any value
/// but 0.
struct InputValueCheck {
  size_t input = 0;
  std::string what;
  int64_t lo = 0, hi = 0;
  std::optional<int64_t> also;
  bool nonzero = false;
};

/// Reads the artifact's `input_checks` of a function with `inputs`.
std::optional<std::string> parseInputChecks(const JsonValue &list, const std::string &where,
                                            const std::vector<TensorInfo> &inputs,
                                            std::vector<InputValueCheck> &out);

/// Applies `check` to the integer input at `data` (of `input`'s type): the
/// message of the first bad element, in the words of the compiled CPU
/// checks (runtime/Kernels.c), or nothing.
std::optional<std::string> checkInputValues(const InputValueCheck &check,
                                            const TensorInfo &input, const void *data);

/// Reads `{"name":..,"dtype":..,"shape":[..]}`; returns what is wrong.
std::optional<std::string> parseTensorSpec(const JsonValue &v, const std::string &where,
                                           TensorInfo &out);

/// Finds parameter `p` of function `fn` in `mapping` (opened from `file`)
/// and checks its dtype and shape; sets `tensor` or returns what is wrong.
std::optional<std::string> findParameter(const SafetensorsMapping &mapping,
                                         const std::string &file, const std::string &fn,
                                         const TensorInfo &p,
                                         const SafetensorsMapping::Tensor *&tensor);

/// The checked, allocating form of a runRaw (Model::run, CudaModel::run):
/// checks `inputs` against `fn`, allocates `outputs` of its declared types
/// and calls `raw(inputPointers, outputPointers)`.
template <class Raw>
std::optional<std::string> runOnHostTensors(const FunctionInfo *fn, const std::string &name,
                                            const std::vector<HostTensor> &inputs,
                                            std::vector<HostTensor> &outputs, Raw raw) {
  if (!fn)
    return "the artifact has no function '" + name + "'";
  if (auto err = checkInputs(*fn, inputs))
    return err;
  outputs.clear();
  std::vector<const void *> in;
  std::vector<void *> out;
  for (const HostTensor &t : inputs)
    in.push_back(t.data.data());
  for (const TensorInfo &o : fn->outputs) {
    HostTensor t;
    t.dtype = o.dtype;
    t.shape = o.shape;
    t.data.assign(static_cast<size_t>(o.byteSize()), 0);
    outputs.push_back(std::move(t));
  }
  for (HostTensor &t : outputs)
    out.push_back(t.data.data());
  return raw(in.data(), out.data());
}

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_ARTIFACTMETADATA_H
