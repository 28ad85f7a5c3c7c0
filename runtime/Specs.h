//===- Specs.h - Tensor specs in artifact metadata (runtime-internal) -----===//
#ifndef REWIRE_RUNTIME_SPECS_H
#define REWIRE_RUNTIME_SPECS_H

#include "rewire/Runtime/Runtime.h"
#include "rewire/Support/Json.h"

namespace rewire::runtime {

/// Reads `{"name":..,"dtype":..,"shape":[..]}`; returns what is wrong.
std::optional<std::string> parseTensorSpec(const JsonValue &v, const std::string &where,
                                           TensorInfo &out);

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_SPECS_H
