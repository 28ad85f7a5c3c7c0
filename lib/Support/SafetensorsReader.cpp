//===- SafetensorsReader.cpp - Read and validate safetensors files --------===//
//
// A strict reader of the safetensors format for untrusted files: a tiny JSON
// parser for exactly the header's grammar (an object of objects holding
// strings and arrays of non-negative integers), with every size and offset
// checked before use.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace rewire {
namespace {

/// Recursive-descent parser over the header bytes.
class Json {
public:
  explicit Json(const std::string &s) : s(s) {}
  std::string error;

  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
      ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool expect(char c) {
    if (eat(c))
      return true;
    error = std::string("expected '") + c + "' at byte " + std::to_string(i);
    return false;
  }
  bool string(std::string &out) {
    if (!expect('"'))
      return false;
    out.clear();
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c == '\\') {
        if (i >= s.size())
          break;
        char e = s[i++];
        if (e == 'u') {
          if (i + 4 > s.size())
            break;
          unsigned v = 0;
          for (int k = 0; k < 4; ++k) {
            char h = s[i++];
            int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
            if (d < 0) {
              error = "invalid \\u escape";
              return false;
            }
            v = v * 16 + static_cast<unsigned>(d);
          }
          if (v < 0x80) {
            out += static_cast<char>(v);
          } else if (v < 0x800) {
            out += static_cast<char>(0xC0 | (v >> 6));
            out += static_cast<char>(0x80 | (v & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (v >> 12));
            out += static_cast<char>(0x80 | ((v >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (v & 0x3F));
          }
        } else {
          out += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        }
      } else {
        out += c;
      }
    }
    if (i >= s.size()) {
      error = "unterminated string";
      return false;
    }
    ++i;
    return true;
  }
  bool uint(uint64_t &out) {
    ws();
    size_t start = i;
    out = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (i - start >= 19) {
        error = "integer too large at byte " + std::to_string(start);
        return false;
      }
      out = out * 10 + static_cast<uint64_t>(s[i++] - '0');
    }
    if (i == start) {
      error = "expected a non-negative integer at byte " + std::to_string(i);
      return false;
    }
    return true;
  }
  bool uints(std::vector<uint64_t> &out) {
    if (!expect('['))
      return false;
    out.clear();
    if (eat(']'))
      return true;
    do {
      uint64_t v;
      if (!uint(v))
        return false;
      out.push_back(v);
      if (out.size() > 64) {
        error = "array too long";
        return false;
      }
    } while (eat(','));
    return expect(']');
  }
  bool atEnd() {
    ws();
    return i == s.size();
  }

private:
  const std::string &s;
  size_t i = 0;
};

} // namespace

std::optional<std::string> readSafetensors(const std::string &path,
                                           SafetensorsFile &out,
                                           uint64_t maxBytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return "cannot read '" + path + "': " + std::strerror(errno);
  if (!S_ISREG(st.st_mode))
    return "'" + path + "' is not a regular file";
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > maxBytes)
    return "'" + path + "' is " + std::to_string(size) + " bytes, over the limit";
  if (size < 8)
    return "'" + path + "' is too short to be a safetensors file";
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8];
  if (!in.read(reinterpret_cast<char *>(len), 8))
    return "cannot read '" + path + "'";
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | len[i];
  if (n > size - 8 || n > (uint64_t(100) << 20))
    return "'" + path + "': header size " + std::to_string(n) + " is invalid";
  std::string header(n, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n)))
    return "cannot read the header of '" + path + "'";
  uint64_t dataSize = size - 8 - n;

  Json j(header);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  auto fail = [&](const std::string &why) {
    return "'" + path + "': invalid header: " + why;
  };
  if (!j.expect('{'))
    return fail(j.error);
  if (!j.eat('}')) {
    do {
      std::string name;
      if (!j.string(name) || !j.expect(':') || !j.expect('{'))
        return fail(j.error);
      if (name == "__metadata__") {
        if (!j.eat('}')) {
          do {
            std::string k, v;
            if (!j.string(k) || !j.expect(':') || !j.string(v))
              return fail(j.error);
            out.metadata[k] = v;
          } while (j.eat(','));
          if (!j.expect('}'))
            return fail(j.error);
        }
        continue;
      }
      SafetensorsEntry e;
      e.name = name;
      std::vector<uint64_t> shape, offsets;
      bool haveDtype = false, haveShape = false, haveOffsets = false;
      do {
        std::string key;
        if (!j.string(key) || !j.expect(':'))
          return fail(j.error);
        if (key == "dtype") {
          if (!j.string(e.dtype))
            return fail(j.error);
          haveDtype = true;
        } else if (key == "shape") {
          if (!j.uints(shape))
            return fail(j.error);
          haveShape = true;
        } else if (key == "data_offsets") {
          if (!j.uints(offsets))
            return fail(j.error);
          haveOffsets = true;
        } else {
          return fail("unknown key '" + key + "' in tensor '" + name + "'");
        }
      } while (j.eat(','));
      if (!j.expect('}'))
        return fail(j.error);
      if (!haveDtype || !haveShape || !haveOffsets || offsets.size() != 2)
        return fail("tensor '" + name + "' lacks dtype, shape or data_offsets");
      size_t elt = safetensorsDtypeSize(e.dtype);
      if (elt == 0)
        return fail("tensor '" + name + "' has unknown dtype '" + e.dtype + "'");
      uint64_t numel = 1;
      for (uint64_t d : shape) {
        if (d != 0 && numel > (uint64_t(1) << 48) / d)
          return fail("tensor '" + name + "' is too large");
        numel *= d;
        e.shape.push_back(static_cast<int64_t>(d));
      }
      if (offsets[0] > offsets[1] || offsets[1] > dataSize)
        return fail("tensor '" + name + "' has data outside the file");
      if (offsets[1] - offsets[0] != numel * elt)
        return fail("tensor '" + name + "' holds " +
                    std::to_string(offsets[1] - offsets[0]) +
                    " bytes, its shape needs " + std::to_string(numel * elt));
      if (out.tensors.count(name))
        return fail("tensor '" + name + "' appears twice");
      ranges.push_back({offsets[0], offsets[1]});
      e.data.resize(offsets[1] - offsets[0]);
      in.seekg(static_cast<std::streamoff>(8 + n + offsets[0]));
      if (!e.data.empty() &&
          !in.read(e.data.data(), static_cast<std::streamsize>(e.data.size())))
        return "cannot read tensor '" + name + "' from '" + path + "'";
      out.tensors[name] = std::move(e);
    } while (j.eat(','));
    if (!j.expect('}'))
      return fail(j.error);
  }
  if (!j.atEnd())
    return fail("trailing bytes after the header object");
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return fail("tensor data ranges overlap");
  return std::nullopt;
}

} // namespace rewire
