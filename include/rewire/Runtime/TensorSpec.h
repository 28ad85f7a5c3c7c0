//===- TensorSpec.h - Tensors given on the command line ----------*- C++ -*-===//
//
// Tensors as text, the IREE way: what rewire-run's --input and
// --expected_output take, `TYPE=VALUES`
// (`2x3xf32=1,2,3,4,5,6`, one value splats, `[..]` nesting is ignored),
// `TYPE=@raw.bin` (little-endian bytes) or `@file.npy`. Untrusted: the
// element count is limited and overflow-checked before anything is
// allocated, files must be regular files of the expected size.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_TENSORSPEC_H
#define REWIRE_RUNTIME_TENSORSPEC_H

#include "rewire/Support/DType.h"

#include <cstdint>
#include <ostream>
#include <optional>
#include <string>

namespace rewire::runtime {

/// The most elements a tensor spec may have (2^32, the importer's limit for
/// any tensor).
constexpr int64_t kMaxInputElements = int64_t(1) << 32;

/// Parses `spec` into `t` (at most `maxElements`); returns what is wrong.
/// `tooLarge`, when given, is set to whether the error is that the type
/// has more than `maxElements` elements (a caller with the expected type
/// can then say which type it wanted).
std::optional<std::string> parseTensorSpec(const std::string &spec, HostTensor &t,
                                           int64_t maxElements = kMaxInputElements,
                                           bool *tooLarge = nullptr);

/// Element `i` of `t` as text: integers exactly (uint64 included), floats
/// with 6 significant digits.
std::string formatTensorValue(const HostTensor &t, int64_t i);

/// `t` in the spec's layout, "2x2xf32=[1 2][3 4]", at most `maxValues`
/// values (then "..."), and a newline.
void printTensor(const HostTensor &t, int64_t maxValues, std::ostream &os);

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_TENSORSPEC_H
