//===- TensorSpec.cpp - Tensors given on the command line -----------------===//
#include "rewire/Runtime/TensorSpec.h"

#include "rewire/Support/Npy.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Support/Shape.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>
#include <vector>

namespace rewire::runtime {
namespace {

/// Parses "2x3xf32" into shape and dtype.
std::optional<std::string> parseType(const std::string &s, HostTensor &t) {
  size_t start = 0;
  t.shape.clear();
  while (true) {
    size_t x = s.find('x', start);
    std::string part = s.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      if (part.size() > 12)
        return "dimension '" + part + "' is too large";
      t.shape.push_back(std::stoll(part));
      if (x == std::string::npos)
        return "'" + s + "' has no element type";
      start = x + 1;
      continue;
    }
    auto dt = parseDTypeName(s.substr(start));
    if (!dt)
      return "'" + s.substr(start) + "' is not an element type (f32, f64, i64, i32, i1, ...)";
    t.dtype = *dt;
    return std::nullopt;
  }
}

bool isInteger(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I16 || t == DType::I8 ||
         t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64 ||
         t == DType::Bool;
}

/// The range of an integer dtype.
std::pair<int64_t, int64_t> integerRange(DType t) {
  switch (t) {
  case DType::I32: return {INT32_MIN, INT32_MAX};
  case DType::I16: return {INT16_MIN, INT16_MAX};
  case DType::I8: return {INT8_MIN, INT8_MAX};
  case DType::U8: return {0, UINT8_MAX};
  case DType::U16: return {0, UINT16_MAX};
  case DType::U32: return {0, UINT32_MAX};
  case DType::U64: return {0, INT64_MAX}; // literals are read as int64
  case DType::Bool: return {0, 1};
  default: return {INT64_MIN, INT64_MAX};
  }
}

/// Writes element `i`: `v` for floats, `n` for integers (in range).
void store(HostTensor &t, int64_t i, double v, int64_t n) {
  uint8_t *p = t.data.data() + i * static_cast<int64_t>(dtypeSize(t.dtype));
  auto put = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (t.dtype) {
  case DType::F32: put(static_cast<float>(v)); break;
  case DType::F64: put(v); break;
  case DType::I64: put(n); break;
  case DType::I32: put(static_cast<int32_t>(n)); break;
  case DType::I16: put(static_cast<int16_t>(n)); break;
  case DType::I8: put(static_cast<int8_t>(n)); break;
  case DType::U8: case DType::Bool: put(static_cast<uint8_t>(n)); break;
  case DType::U16: put(static_cast<uint16_t>(n)); break;
  case DType::U32: put(static_cast<uint32_t>(n)); break;
  case DType::U64: put(static_cast<uint64_t>(n)); break;
  case DType::F16: case DType::BF16: break; // rejected before
  }
}

} // namespace

std::optional<std::string> parseTensorSpec(const std::string &spec, HostTensor &t,
                                           int64_t maxElements, bool *tooLarge) {
  if (tooLarge)
    *tooLarge = false;
  if (!spec.empty() && spec[0] == '@')
    return readNpy(spec.substr(1), t);
  size_t eq = spec.find('=');
  if (eq == std::string::npos)
    return "'" + spec + "' is not TYPE=VALUES or @file.npy (e.g. 2x3xf32=1,2,3,4,5,6)";
  if (auto err = parseType(spec.substr(0, eq), t))
    return err;
  if (t.shape.size() > 16)
    return "rank " + std::to_string(t.shape.size()) + " is too high";
  auto elements = checkedNumElements(t.shape, maxElements);
  if (!elements) {
    if (tooLarge)
      *tooLarge = true;
    return "'" + spec.substr(0, eq) + "' is too large (at most " + std::to_string(maxElements) +
           " elements)";
  }
  int64_t numel = *elements;
  size_t bytes = static_cast<size_t>(numel) * dtypeSize(t.dtype);
  std::string values = spec.substr(eq + 1);
  if (!values.empty() && values[0] == '@') {
    std::string raw;
    if (auto err = readRegularFile(values.substr(1), raw, bytes + 1))
      return err;
    if (raw.size() != bytes)
      return "'" + values.substr(1) + "' holds " + std::to_string(raw.size()) + " bytes, " +
             t.typeString() + " needs " + std::to_string(bytes);
    t.data.assign(raw.begin(), raw.end());
    return std::nullopt;
  }
  if (t.dtype == DType::F16 || t.dtype == DType::BF16)
    return std::string("literal values of ") + dtypeName(t.dtype) + " are not supported; use @file.npy";
  for (char &c : values)
    if (c == '[' || c == ']' || c == ',' || c == '\n' || c == '\t')
      c = ' ';
  // Integers are read as integers (a double would round ids above 2^53)
  // and must fit the dtype; floats with strtod (inf, nan accepted).
  bool integer = isInteger(t.dtype);
  auto [lo, hi] = integerRange(t.dtype);
  std::istringstream in(values);
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::string word;
  while (in >> word) {
    if (std::max(floats.size(), ints.size()) > static_cast<size_t>(numel))
      break; // too many: reported below
    if (word == "true" || word == "false") {
      floats.push_back(word == "true");
      ints.push_back(word == "true");
      continue;
    }
    char *end = nullptr;
    errno = 0;
    if (integer) {
      long long n = std::strtoll(word.c_str(), &end, 10);
      if (*end || end == word.c_str())
        return "'" + word + "' is not an integer (the tensor is " + dtypeName(t.dtype) + ")";
      if (errno == ERANGE || n < lo || n > hi)
        return "'" + word + "' does not fit " + dtypeName(t.dtype) + " [" + std::to_string(lo) +
               ", " + std::to_string(hi) + "]";
      ints.push_back(n);
    } else {
      double d = std::strtod(word.c_str(), &end);
      if (*end || end == word.c_str())
        return "'" + word + "' is not a number";
      floats.push_back(d);
    }
  }
  size_t count = integer ? ints.size() : floats.size();
  if (count != static_cast<size_t>(numel) && count != 1)
    return t.typeString() + " needs " + std::to_string(numel) + " values (or one to splat), got " +
           (count > static_cast<size_t>(numel) ? "more" : std::to_string(count));
  t.data.assign(bytes, 0);
  for (int64_t i = 0; i < numel; ++i) {
    size_t k = count == 1 ? 0 : static_cast<size_t>(i);
    store(t, i, integer ? 0.0 : floats[k], integer ? ints[k] : 0);
  }
  return std::nullopt;
}

std::string formatTensorValue(const HostTensor &t, int64_t i) {
  double v = t.at(i);
  char buf[48];
  if (t.dtype == DType::U64) {
    uint64_t u;
    std::memcpy(&u, t.data.data() + i * 8, 8);
    std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(u));
  } else if (t.dtype == DType::I64) {
    int64_t n;
    std::memcpy(&n, t.data.data() + i * 8, 8);
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(n));
  } else if (t.dtype == DType::Bool || t.dtype == DType::I32 || t.dtype == DType::I16 ||
             t.dtype == DType::I8 || t.dtype == DType::U8 || t.dtype == DType::U16 ||
             t.dtype == DType::U32)
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v));
  else
    std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

/// IREE's layout: "2x2xf32=[1 2][3 4]".
void printTensor(const HostTensor &t, int64_t max, std::ostream &os) {
  os << t.typeString() << "=";
  int64_t n = t.numel();
  if (t.shape.empty()) {
    os << formatTensorValue(t, 0) << "\n";
    return;
  }
  std::vector<int64_t> inner(t.shape.size(), 1);
  for (size_t d = t.shape.size() - 1; d > 0; --d)
    inner[d - 1] = inner[d] * t.shape[d];
  for (int64_t i = 0; i < n && i < max; ++i) {
    for (size_t d = 0; d + 1 < t.shape.size(); ++d)
      if (i % inner[d] == 0)
        os << "[";
    os << formatTensorValue(t, i);
    int closes = 0;
    for (size_t d = 0; d + 1 < t.shape.size(); ++d)
      if ((i + 1) % inner[d] == 0)
        ++closes;
    for (int c = 0; c < closes; ++c)
      os << "]";
    if (closes == 0 && i + 1 < n && i + 1 < max)
      os << " ";
  }
  if (n > max)
    os << "...";
  if (n == 0)
    os << "[]";
  os << "\n";
}

} // namespace rewire::runtime
