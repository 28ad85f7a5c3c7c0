//===- Safetensors.cpp - Write tensors in the safetensors format ----------===//
//
// Implements the atomic safetensors writer of Safetensors.h.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Safetensors.h"
#include "rewire/Support/AtomicFile.h"
#include "rewire/Support/Json.h"

#include <cstdio>
#include <set>

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
      header += (firstMeta ? "" : ",") + jsonQuote(k) + ":" + jsonQuote(v);
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
    header += (first ? "" : ",") + jsonQuote(e.name) + ":{\"dtype\":\"" +
              e.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < e.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(e.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + e.data.size()) + "]}";
    offset += e.data.size();
    first = false;
  }
  header += "}";
  // Pad the header with spaces so the data starts 64-byte aligned in the
  // file (and in a page-aligned mapping of it).
  while ((8 + header.size()) % 64 != 0)
    header += ' ';

  std::string len(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<char>(n >> (8 * i));
  std::vector<const std::string *> parts = {&len, &header};
  for (const SafetensorsEntry &e : entries)
    parts.push_back(&e.data);
  return writeFileAtomically(path, parts);
}

} // namespace rewire