//===- SafetensorsReader.cpp - Read and validate safetensors files --------===//
//
// A strict reader of the safetensors format for untrusted files. The header
// is parsed with the JSON reader of Json.h and checked against the format:
// known dtypes, non-negative shapes, every data range inside the file,
// exactly numel x dtype size long, no overlaps. Two front ends share the
// check: a copying reader and a read-only memory map.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Safetensors.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Support/Json.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rewire {
namespace {

struct IndexEntry {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

/// Validates the header text of a file whose data section has `dataSize`
/// bytes; fills `index` and `metadata`. Returns the reason on failure.
std::optional<std::string>
parseHeader(const std::string &header, uint64_t dataSize,
            std::map<std::string, IndexEntry> &index,
            std::map<std::string, std::string> &metadata) {
  JsonValue root;
  if (auto err = parseJson(header, root, 8))
    return *err;
  if (!root.isObject())
    return std::string("the header is not a JSON object");
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto &[name, v] : root.object) {
    if (!v.isObject())
      return "entry '" + name + "' is not an object";
    if (name == "__metadata__") {
      for (const auto &[k, m] : v.object) {
        if (!m.isString())
          return "metadata '" + k + "' is not a string";
        metadata[k] = m.text;
      }
      continue;
    }
    for (const auto &[k, _] : v.object)
      if (k != "dtype" && k != "shape" && k != "data_offsets")
        return "unknown key '" + k + "' in tensor '" + name + "'";
    const JsonValue *dtype = v.get("dtype"), *shape = v.get("shape"),
                    *offsets = v.get("data_offsets");
    if (!dtype || !shape || !offsets || !dtype->isString() ||
        !shape->isArray() || !offsets->isArray() || offsets->array.size() != 2)
      return "tensor '" + name + "' lacks dtype, shape or data_offsets";
    IndexEntry e;
    e.dtype = dtype->text;
    size_t elt = safetensorsDtypeSize(e.dtype);
    if (elt == 0)
      return "tensor '" + name + "' has unknown dtype '" + e.dtype + "'";
    if (shape->array.size() > 64)
      return "tensor '" + name + "' has too many dimensions";
    uint64_t numel = 1;
    for (const JsonValue &d : shape->array) {
      auto n = d.asInt();
      if (!n || *n < 0)
        return "tensor '" + name + "' has a dimension that is not a non-negative integer";
      uint64_t u = static_cast<uint64_t>(*n);
      if (u != 0 && numel > (uint64_t(1) << 48) / u)
        return "tensor '" + name + "' is too large";
      numel *= u;
      e.shape.push_back(*n);
    }
    auto b = offsets->array[0].asInt(), en = offsets->array[1].asInt();
    if (!b || !en || *b < 0 || *en < 0)
      return "tensor '" + name + "' has offsets that are not non-negative integers";
    e.begin = static_cast<uint64_t>(*b);
    e.end = static_cast<uint64_t>(*en);
    if (e.begin > e.end || e.end > dataSize)
      return "tensor '" + name + "' has data outside the file";
    if (e.end - e.begin != numel * elt)
      return "tensor '" + name + "' holds " + std::to_string(e.end - e.begin) +
             " bytes, its shape needs " + std::to_string(numel * elt);
    ranges.push_back({e.begin, e.end});
    index[name] = std::move(e);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return std::string("tensor data ranges overlap");
  return std::nullopt;
}

/// Checks the file and reads its 8-byte header length; returns the
/// file size and header length.
std::optional<std::string> openChecked(const std::string &path, uint64_t maxBytes,
                                       int &fd, uint64_t &size) {
  if (auto err = openRegularFile(path, fd, size, maxBytes))
    return err;
  if (size < 8) {
    ::close(fd);
    return "'" + path + "' is too short to be a safetensors file";
  }
  return std::nullopt;
}

uint64_t headerLength(const unsigned char *p) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | p[i];
  return n;
}

} // namespace

std::optional<std::string> readSafetensors(const std::string &path,
                                           SafetensorsFile &out,
                                           uint64_t maxBytes) {
  SafetensorsMapping map;
  if (auto err = map.open(path, maxBytes))
    return err;
  out.metadata = map.metadata();
  for (const auto &[name, t] : map.tensors()) {
    SafetensorsEntry e;
    e.name = name;
    e.dtype = t.dtype;
    e.shape = t.shape;
    e.data.assign(static_cast<const char *>(t.data), t.bytes);
    out.tensors[name] = std::move(e);
  }
  return std::nullopt;
}

SafetensorsMapping::~SafetensorsMapping() {
  if (base)
    ::munmap(base, size);
}

std::optional<std::string> SafetensorsMapping::open(const std::string &path,
                                                    uint64_t maxBytes) {
  int fd;
  uint64_t fileSize;
  if (auto err = openChecked(path, maxBytes, fd, fileSize))
    return err;
  void *p = ::mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    return "cannot map '" + path + "': " + std::strerror(errno);
  if (base)
    ::munmap(base, size);
  base = p;
  size = fileSize;
  index.clear();
  meta.clear();
  const auto *bytes = static_cast<const unsigned char *>(p);
  uint64_t n = headerLength(bytes);
  if (n > size - 8 || n > (uint64_t(100) << 20))
    return "'" + path + "': header size " + std::to_string(n) + " is invalid";
  std::string header(reinterpret_cast<const char *>(bytes + 8), n);
  std::map<std::string, IndexEntry> entries;
  if (auto err = parseHeader(header, size - 8 - n, entries, meta))
    return "'" + path + "': invalid header: " + *err;
  for (auto &[name, e] : entries) {
    Tensor t;
    t.dtype = e.dtype;
    t.shape = e.shape;
    t.data = bytes + 8 + n + e.begin;
    t.bytes = e.end - e.begin;
    index[name] = std::move(t);
  }
  return std::nullopt;
}

const SafetensorsMapping::Tensor *
SafetensorsMapping::find(const std::string &name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &it->second;
}

} // namespace rewire
