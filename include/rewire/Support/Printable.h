//===- Printable.h - Names from files made safe for a terminal ---*- C++ -*-===//
//
// Names inside model files, artifacts and parameter files (inputs, outputs,
// nodes, tensors) are untrusted: printed raw, an escape sequence in one can
// rewrite the terminal's title, hide text or fake output. Tools pass every
// message through printable() before writing it.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_PRINTABLE_H
#define REWIRE_SUPPORT_PRINTABLE_H

#include <string>
#include <string_view>

namespace rewire {

/// `text` with C0/C1 control characters (newline and tab excepted), DEL and
/// bytes that are not valid UTF-8 written as `\xNN`; valid UTF-8 is kept.
std::string printable(std::string_view text);

} // namespace rewire

#endif // REWIRE_SUPPORT_PRINTABLE_H
