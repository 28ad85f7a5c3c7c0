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

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_SPECS_H
