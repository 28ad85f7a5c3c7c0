//===- Npy.h - Read and write NumPy .npy files -------------------*- C++ -*-===//
//
// MLIR-free .npy I/O (format versions 1.0-3.0, C order, little-endian
// numeric dtypes) for rewire-run's --input=@x.npy / --output=@y.npy. The
// reader treats files as untrusted: the header dict is parsed strictly and
// the payload must be exactly shape x dtype size.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_NPY_H
#define REWIRE_SUPPORT_NPY_H

#include "rewire/Support/DType.h"

#include <optional>
#include <string>

namespace rewire {

/// Reads `path` into `out`. Returns the error message on failure.
std::optional<std::string> readNpy(const std::string &path, HostTensor &out);

/// Parses an in-memory .npy image (`what` names it in messages).
std::optional<std::string> parseNpy(const std::string &bytes, const std::string &what,
                                    HostTensor &out);

/// Writes `t` to `path` atomically (version 1.0 header).
std::optional<std::string> writeNpy(const std::string &path, const HostTensor &t);

} // namespace rewire

#endif // REWIRE_SUPPORT_NPY_H
