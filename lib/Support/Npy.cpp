//===- Npy.cpp - Read and write NumPy .npy files --------------------------===//
#include "rewire/Support/Npy.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Support/AtomicFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rewire {

namespace {
struct NpyType {
  const char *descr;
  DType t;
};
constexpr NpyType kTypes[] = {
    {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16},
    {"<i8", DType::I64}, {"<i4", DType::I32}, {"<i2", DType::I16},
    {"|i1", DType::I8},  {"|u1", DType::U8},  {"<u2", DType::U16}, {"<u4", DType::U32}, {"<u8", DType::U64},  {"|b1", DType::Bool},
};

/// A strict reader of the header dict:
/// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class Header {
public:
  explicit Header(const std::string &s) : s(s) {}
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;

  std::optional<std::string> parse() {
    if (!eat('{'))
      return fail("expected '{'");
    bool haveDescr = false, haveOrder = false, haveShape = false;
    while (!eat('}')) {
      std::string key;
      if (!quoted(key) || !eat(':'))
        return fail("expected a quoted key and ':'");
      if (key == "descr") {
        if (!quoted(descr))
          return fail("descr is not a string");
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (word("True"))
          fortran = true;
        else if (!word("False"))
          return fail("fortran_order is not True or False");
        haveOrder = true;
      } else if (key == "shape") {
        if (!eat('('))
          return fail("shape is not a tuple");
        while (!eat(')')) {
          ws();
          size_t start = i;
          int64_t v = 0;
          while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            if (i - start >= 15)
              return fail("dimension too large");
            v = v * 10 + (s[i++] - '0');
          }
          if (i == start)
            return fail("shape holds a non-integer");
          shape.push_back(v);
          if (shape.size() > 32)
            return fail("too many dimensions");
          if (!eat(',') && (ws(), i >= s.size() || s[i] != ')'))
            return fail("expected ',' or ')' in shape");
        }
        haveShape = true;
      } else {
        return fail("unknown key '" + key + "'");
      }
      if (!eat(',') && (ws(), i >= s.size() || s[i] != '}'))
        return fail("expected ',' or '}'");
    }
    if (!haveDescr || !haveOrder || !haveShape)
      return fail("descr, fortran_order or shape is missing");
    return std::nullopt;
  }

private:
  const std::string &s;
  size_t i = 0;
  std::string fail(const std::string &why) {
    return why + " at byte " + std::to_string(i) + " of the header";
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n'))
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
  bool word(const char *w) {
    ws();
    size_t n = std::strlen(w);
    if (s.compare(i, n, w) != 0)
      return false;
    i += n;
    return true;
  }
  bool quoted(std::string &out) {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"'))
      return false;
    char q = s[i++];
    size_t end = s.find(q, i);
    if (end == std::string::npos)
      return false;
    out = s.substr(i, end - i);
    i = end + 1;
    return true;
  }
};
} // namespace

std::optional<std::string> parseNpy(const std::string &bytes, const std::string &what,
                                    HostTensor &out) {
  auto fail = [&](const std::string &why) { return "'" + what + "': " + why; };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return fail("not a .npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail("truncated header");
    headerLen = 0;
    for (int k = 3; k >= 0; --k)
      headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[8 + k]);
    start = 12;
  } else {
    return fail("unsupported .npy version " + std::to_string(major));
  }
  if (headerLen > bytes.size() - start || headerLen > (1u << 20))
    return fail("header length " + std::to_string(headerLen) + " is invalid");
  std::string text = bytes.substr(start, headerLen);
  Header h(text);
  if (auto err = h.parse())
    return fail(*err);
  if (h.fortran)
    return fail("Fortran-ordered arrays are not supported; save with np.ascontiguousarray");
  std::optional<DType> dtype;
  for (const NpyType &t : kTypes)
    if (h.descr == t.descr || (h.descr.size() == 3 && h.descr[0] == '=' &&
                               h.descr.compare(1, 2, t.descr + 1) == 0))
      dtype = t.t;
  if (!dtype)
    return fail("dtype '" + h.descr + "' is not supported (use float32/float64/int64/int32/"
                "int16/int8/uint8/bool, little-endian)");
  out.dtype = *dtype;
  out.shape = h.shape;
  uint64_t numel = 1;
  for (int64_t d : h.shape) {
    if (d != 0 && numel > (uint64_t(1) << 40) / static_cast<uint64_t>(d))
      return fail("array too large");
    numel *= static_cast<uint64_t>(d);
  }
  uint64_t need = numel * dtypeSize(*dtype);
  uint64_t have = bytes.size() - start - headerLen;
  if (have != need)
    return fail("holds " + std::to_string(have) + " data bytes, its shape " +
                out.typeString() + " needs " + std::to_string(need));
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(start + headerLen), bytes.end());
  return std::nullopt;
}

std::optional<std::string> readNpy(const std::string &path, HostTensor &out) {
  std::string bytes;
  if (auto err = readRegularFile(path, bytes))
    return err;
  return parseNpy(bytes, path, out);
}

std::optional<std::string> writeNpy(const std::string &path, const HostTensor &t) {
  const char *descr = nullptr;
  for (const NpyType &n : kTypes)
    if (n.t == t.dtype)
      descr = n.descr;
  if (!descr)
    return std::string("cannot write ") + dtypeName(t.dtype) + " to .npy";
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i)
    shape += std::to_string(t.shape[i]) + ",";
  if (t.shape.size() > 1)
    shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::string prefix = "\x93NUMPY";
  prefix += '\x01';
  prefix += '\x00';
  prefix += static_cast<char>(header.size() & 0xFF);
  prefix += static_cast<char>(header.size() >> 8);
  std::string data(t.data.begin(), t.data.end());
  return writeFileAtomically(path, {&prefix, &header, &data});
}

} // namespace rewire
