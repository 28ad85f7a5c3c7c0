//===- Json.cpp - A small strict JSON reader and writer -------------------===//
//
// Implements Json.h: recursive descent over RFC 8259 with a nesting limit.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rewire {

const JsonValue *JsonValue::get(const std::string &key) const {
  if (kind != Kind::Object)
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

std::optional<int64_t> JsonValue::asInt() const {
  if (kind != Kind::Number || text.empty())
    return std::nullopt;
  size_t i = text[0] == '-' ? 1 : 0;
  if (i == text.size() || text.size() - i > 18)
    return std::nullopt;
  int64_t v = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9')
      return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return text[0] == '-' ? -v : v;
}

namespace {
class Parser {
public:
  Parser(const std::string &s, unsigned maxDepth) : s(s), maxDepth(maxDepth) {}
  std::string error;

  bool value(JsonValue &out, unsigned depth) {
    if (depth > maxDepth)
      return fail("nesting deeper than " + std::to_string(maxDepth));
    ws();
    if (i >= s.size())
      return fail("unexpected end of input");
    char c = s[i];
    if (c == '{')
      return object(out, depth);
    if (c == '[')
      return array(out, depth);
    if (c == '"') {
      out.kind = JsonValue::Kind::String;
      return string(out.text);
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return number(out);
    if (literal("true")) {
      out.kind = JsonValue::Kind::Bool;
      out.boolean = true;
      return true;
    }
    if (literal("false")) {
      out.kind = JsonValue::Kind::Bool;
      return true;
    }
    if (literal("null")) {
      out.kind = JsonValue::Kind::Null;
      return true;
    }
    return fail(std::string("unexpected character '") + c + "'");
  }
  bool atEnd() {
    ws();
    return i == s.size();
  }
  size_t pos() const { return i; }

private:
  const std::string &s;
  unsigned maxDepth;
  size_t i = 0;

  bool fail(const std::string &why) {
    if (error.empty())
      error = why + " at byte " + std::to_string(i);
    return false;
  }
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
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (s.compare(i, n, word) != 0)
      return false;
    i += n;
    return true;
  }
  bool object(JsonValue &out, unsigned depth) {
    out.kind = JsonValue::Kind::Object;
    ++i;
    if (eat('}'))
      return true;
    do {
      ws();
      std::string key;
      if (!string(key))
        return false;
      if (!eat(':'))
        return fail("expected ':'");
      if (out.object.count(key))
        return fail("duplicate key '" + key + "'");
      if (!value(out.object[key], depth + 1))
        return false;
    } while (eat(','));
    return eat('}') || fail("expected ',' or '}'");
  }
  bool array(JsonValue &out, unsigned depth) {
    out.kind = JsonValue::Kind::Array;
    ++i;
    if (eat(']'))
      return true;
    do {
      out.array.emplace_back();
      if (!value(out.array.back(), depth + 1))
        return false;
    } while (eat(','));
    return eat(']') || fail("expected ',' or ']'");
  }
  bool number(JsonValue &out) {
    size_t start = i;
    if (s[i] == '-')
      ++i;
    auto digits = [&] {
      size_t d = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9')
        ++i;
      return i > d;
    };
    if (!digits())
      return fail("malformed number");
    if (i < s.size() && s[i] == '.') {
      ++i;
      if (!digits())
        return fail("malformed number");
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-'))
        ++i;
      if (!digits())
        return fail("malformed number");
    }
    out.kind = JsonValue::Kind::Number;
    out.text = s.substr(start, i - start);
    out.number = std::strtod(out.text.c_str(), nullptr);
    return true;
  }
  static int hex(char h) {
    return h >= '0' && h <= '9'   ? h - '0'
           : h >= 'a' && h <= 'f' ? h - 'a' + 10
           : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                  : -1;
  }
  bool string(std::string &out) {
    if (i >= s.size() || s[i] != '"')
      return fail("expected a string");
    ++i;
    out.clear();
    while (i < s.size() && s[i] != '"') {
      unsigned char c = static_cast<unsigned char>(s[i++]);
      if (c < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i >= s.size())
        break;
      char e = s[i++];
      switch (e) {
      case '"': case '\\': case '/': out += e; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        if (i + 4 > s.size())
          return fail("truncated \\u escape");
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
          int d = hex(s[i++]);
          if (d < 0)
            return fail("invalid \\u escape");
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
        break;
      }
      default:
        return fail(std::string("invalid escape '\\") + e + "'");
      }
    }
    if (i >= s.size())
      return fail("unterminated string");
    ++i;
    return true;
  }
};
} // namespace

std::optional<std::string> parseJson(const std::string &text, JsonValue &out,
                                     unsigned maxDepth) {
  Parser p(text, maxDepth);
  out = JsonValue();
  if (!p.value(out, 0))
    return p.error;
  if (!p.atEnd())
    return "trailing characters at byte " + std::to_string(p.pos());
  return std::nullopt;
}

std::string jsonQuote(const std::string &s) {
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

} // namespace rewire
