//===- Json.h - A small strict JSON reader and writer ------------*- C++ -*-===//
//
// MLIR-free JSON for the files Rewire reads from untrusted sources (artifact
// metadata, checkpoint state): a DOM parser with depth and size limits that
// reports the byte offset of the first error, and helpers to write JSON.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_JSON_H
#define REWIRE_SUPPORT_JSON_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rewire {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  /// The number's text as written, so integers above 2^53 stay exact.
  std::string text;
  std::vector<JsonValue> array;
  /// Keys in sorted order; duplicate keys are a parse error.
  std::map<std::string, JsonValue> object;

  bool isObject() const { return kind == Kind::Object; }
  bool isArray() const { return kind == Kind::Array; }
  bool isString() const { return kind == Kind::String; }
  bool isNumber() const { return kind == Kind::Number; }

  /// The member `key` of an object, or null when absent or not an object.
  const JsonValue *get(const std::string &key) const;
  /// The value as a signed 64-bit integer when it is an integral number.
  std::optional<int64_t> asInt() const;
};

/// Parses `text` (one JSON value, optionally surrounded by whitespace).
/// Returns the error message ("... at byte N") on failure.
std::optional<std::string> parseJson(const std::string &text, JsonValue &out,
                                     unsigned maxDepth = 64);

/// `s` as a JSON string literal, with quotes and escapes.
std::string jsonQuote(const std::string &s);

} // namespace rewire

#endif // REWIRE_SUPPORT_JSON_H
