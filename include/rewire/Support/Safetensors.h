//===- Safetensors.h - Write tensors in the safetensors format ---*- C++ -*-===//
//
// MLIR-free reader and writer of the safetensors format (an 8-byte little-endian header
// size, a JSON header mapping names to dtype/shape/offsets, then the raw
// little-endian data). Files are written atomically: a temporary file in the
// same directory, fsync, rename, so a crash never leaves a half-written file.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_SAFETENSORS_H
#define REWIRE_SUPPORT_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rewire {

/// One tensor to write: `data` holds `shape`'s elements of `dtype` ("F32",
/// "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"),
/// little-endian, row-major.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string data;
};

/// Size in bytes of one element of `dtype`, or 0 when unknown.
size_t safetensorsDtypeSize(const std::string &dtype);

/// Writes `entries` (names must be unique) and string `metadata` to `path`
/// atomically. Returns an error message on failure, std::nullopt on success.
std::optional<std::string>
writeSafetensors(const std::string &path,
                 const std::vector<SafetensorsEntry> &entries,
                 const std::map<std::string, std::string> &metadata = {});

/// The tensors of a safetensors file, validated: the header is well-formed
/// JSON of the expected shape, dtypes are known, every data range lies inside
/// the file, is exactly numel x dtype size long, and ranges do not overlap.
struct SafetensorsFile {
  std::map<std::string, SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;
};

/// Reads `path` (at most `maxBytes`). Returns the error message on failure.
std::optional<std::string> readSafetensors(const std::string &path,
                                           SafetensorsFile &out,
                                           uint64_t maxBytes = uint64_t(1) << 40);

/// A read-only memory map of a safetensors file: the same validation as
/// readSafetensors, but tensor data is not copied. `data` points into the
/// mapping (page-aligned base, so alignment follows the file's offsets).
class SafetensorsMapping {
public:
  struct Tensor {
    std::string dtype;
    std::vector<int64_t> shape;
    const void *data = nullptr;
    uint64_t bytes = 0;
  };
  SafetensorsMapping() = default;
  SafetensorsMapping(const SafetensorsMapping &) = delete;
  SafetensorsMapping &operator=(const SafetensorsMapping &) = delete;
  ~SafetensorsMapping();

  /// Maps `path`. Returns the error message on failure.
  std::optional<std::string> open(const std::string &path,
                                  uint64_t maxBytes = uint64_t(1) << 40);
  const Tensor *find(const std::string &name) const;
  const std::map<std::string, Tensor> &tensors() const { return index; }
  const std::map<std::string, std::string> &metadata() const { return meta; }

private:
  void *base = nullptr;
  uint64_t size = 0;
  std::map<std::string, Tensor> index;
  std::map<std::string, std::string> meta;
};

} // namespace rewire

#endif // REWIRE_SUPPORT_SAFETENSORS_H
