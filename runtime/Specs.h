//===- Specs.h - Tensor specs in artifact metadata (runtime-internal) -----===//
#ifndef REWIRE_RUNTIME_SPECS_H
#define REWIRE_RUNTIME_SPECS_H

#include "rewire/Runtime/Runtime.h"
#include "rewire/Support/Json.h"
#include "rewire/Support/Safetensors.h"

namespace rewire::runtime {

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

#endif // REWIRE_RUNTIME_SPECS_H
