//===- Nesting.cpp - Refuse textual IR nested deeper than a parser can take ===//
#include "rewire/Support/Nesting.h"

namespace rewire {

std::optional<std::string> checkNestingDepth(std::string_view text, const std::string &what,
                                             unsigned maxDepth) {
  unsigned depth = 0;
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      // A string literal: up to the next unescaped quote (newlines counted).
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
      }
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > maxDepth)
        return what + ":" + std::to_string(line) + ": error: the IR nests regions, attributes "
               "or types more than " + std::to_string(maxDepth) +
               " levels deep; this is not a model Rewire can read (the parser would run out "
               "of stack)";
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

} // namespace rewire
