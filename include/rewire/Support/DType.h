//===- DType.h - Element types shared by the compiler and runtime -*- C++ -*-===//
//
// The element types a Rewire artifact's inputs, outputs and parameters can
// have, with their spellings in MLIR/IREE ("f32"), safetensors ("F32") and
// NumPy ("<f4"), and a host tensor (shape + bytes) for I/O.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_DTYPE_H
#define REWIRE_SUPPORT_DTYPE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rewire {

enum class DType { F32, F64, F16, BF16, I64, I32, I16, I8, U8, U16, U32, U64, Bool };

/// Bytes per element.
size_t dtypeSize(DType t);
/// "f32", "i64", "i1" (bool) ...: the spelling of MLIR types and IREE's I/O.
const char *dtypeName(DType t);
std::optional<DType> parseDTypeName(const std::string &s);
/// "F32", "I64", "BOOL" ...: safetensors' spelling.
const char *dtypeSafetensorsName(DType t);
std::optional<DType> parseSafetensorsDType(const std::string &s);

/// A dense row-major tensor in host memory.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  /// Element count (product of `shape`; 1 for a scalar).
  int64_t numel() const;
  /// "2x3xf32".
  std::string typeString() const;
  /// Element `i` converted to double (any dtype).
  double at(int64_t i) const;
};

/// "2x3" (or "" for a scalar).
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace rewire

#endif // REWIRE_SUPPORT_DTYPE_H
