//===- Nesting.h - Refuse textual IR nested deeper than a parser can take -===//
//
// MLIR's parser descends recursively into regions, attributes and types, so a
// few thousand nested `({` or `[[` exhaust the stack (SIGSEGV) before any
// diagnostic. Tools that read textual IR check the bracket depth first; real
// models nest a few dozen levels.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_NESTING_H
#define REWIRE_SUPPORT_NESTING_H

#include <optional>
#include <string>
#include <string_view>

namespace rewire {

/// The deepest nesting of (), [] and {} that tools accept in textual IR.
constexpr unsigned kMaxIRNesting = 256;

/// Checks that `text` (MLIR assembly; string literals and `//` comments are
/// skipped) nests brackets at most `maxDepth` deep. Returns the message,
/// naming `what` and the line, otherwise.
std::optional<std::string> checkNestingDepth(std::string_view text, const std::string &what,
                                             unsigned maxDepth = kMaxIRNesting);

} // namespace rewire

#endif // REWIRE_SUPPORT_NESTING_H
