//===- Printable.cpp - Names from files made safe for a terminal ----------===//
#include "rewire/Support/Printable.h"

#include <cstdint>

namespace rewire {
namespace {

void escape(std::string &out, unsigned char c) {
  static const char *hex = "0123456789abcdef";
  out += "\\x";
  out += hex[c >> 4];
  out += hex[c & 15];
}

/// Length of the valid UTF-8 sequence at `s[i]` (0 when invalid) and its
/// code point.
size_t utf8Length(std::string_view s, size_t i, uint32_t &cp) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c >= 0xF5 || i + n > s.size())
    return 0;
  cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are invalid.
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

} // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F)
        escape(out, c);
      else
        out += static_cast<char>(c);
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t n = utf8Length(text, i, cp);
    if (n == 0 || (cp >= 0x80 && cp <= 0x9F)) { // invalid, or a C1 control
      size_t bad = n == 0 ? 1 : n;
      for (size_t k = 0; k < bad; ++k)
        escape(out, static_cast<unsigned char>(text[i + k]));
      i += bad;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

} // namespace rewire
