//===- Safetensors.cpp - Write tensors in the safetensors format ----------===//
//
// Implements the atomic safetensors writer of Safetensors.h.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Safetensors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <unistd.h>

namespace rewire {

size_t safetensorsDtypeSize(const std::string &dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64")
    return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32")
    return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16")
    return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL")
    return 1;
  return 0;
}

static std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

static bool writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::optional<std::string>
writeSafetensors(const std::string &path,
                 const std::vector<SafetensorsEntry> &entries,
                 const std::map<std::string, std::string> &metadata) {
  std::set<std::string> names;
  std::string header = "{";
  bool first = true;
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool firstMeta = true;
    for (const auto &[k, v] : metadata) {
      header += (firstMeta ? "" : ",") + jsonString(k) + ":" + jsonString(v);
      firstMeta = false;
    }
    header += "}";
    first = false;
  }
  uint64_t offset = 0;
  for (const SafetensorsEntry &e : entries) {
    if (!names.insert(e.name).second)
      return "duplicate tensor name '" + e.name + "'";
    size_t elt = safetensorsDtypeSize(e.dtype);
    if (elt == 0)
      return "tensor '" + e.name + "' has unknown dtype '" + e.dtype + "'";
    uint64_t numel = 1;
    for (int64_t d : e.shape) {
      if (d < 0)
        return "tensor '" + e.name + "' has a negative dimension";
      numel *= static_cast<uint64_t>(d);
    }
    if (numel * elt != e.data.size())
      return "tensor '" + e.name + "' holds " + std::to_string(e.data.size()) +
             " bytes, its shape needs " + std::to_string(numel * elt);
    header += (first ? "" : ",") + jsonString(e.name) + ":{\"dtype\":\"" +
              e.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < e.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(e.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + e.data.size()) + "]}";
    offset += e.data.size();
    first = false;
  }
  header += "}";
  // Pad the header with spaces so the data starts 8-byte aligned.
  while (header.size() % 8 != 0)
    header += ' ';

  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return "cannot create '" + tmp + "': " + std::strerror(errno);
  unsigned char len[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>(n >> (8 * i));
  bool ok = writeAll(fd, reinterpret_cast<const char *>(len), 8) &&
            writeAll(fd, header.data(), header.size());
  for (const SafetensorsEntry &e : entries)
    ok = ok && writeAll(fd, e.data.data(), e.data.size());
  ok = ok && ::fsync(fd) == 0;
  int err = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok) {
    ::unlink(tmp.c_str());
    return "cannot write '" + tmp + "': " + std::strerror(err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    return "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(err);
  }
  return std::nullopt;
}

} // namespace rewire
