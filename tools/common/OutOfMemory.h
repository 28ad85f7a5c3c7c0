//===- OutOfMemory.h - A message instead of std::bad_alloc ------*- C++ -*-===//
//
// Sizes from untrusted files and command lines are checked against fixed
// limits, but a size under the limit can still exceed this machine's memory.
// Every tool installs this handler (after llvm::InitLLVM, which installs its
// own) so that a failed allocation ends with a one-line error and the tool's
// documented exit code instead of `terminate called after throwing
// std::bad_alloc` and SIGABRT.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_TOOLS_COMMON_OUTOFMEMORY_H
#define REWIRE_TOOLS_COMMON_OUTOFMEMORY_H

#include <cstring>
#include <new>
#include <unistd.h>

namespace rewire::tools {

inline void exitOnOutOfMemory(const char *tool, int exitCode) {
  static const char *name;
  static int code;
  name = tool;
  code = exitCode;
  std::set_new_handler([] {
    // No allocation here: write(2) the fixed parts.
    const char *parts[] = {name, ": error: out of memory: an input, tensor or file is larger than "
                                 "this machine's memory allows; check its sizes\n"};
    for (const char *p : parts)
      if (::write(2, p, std::strlen(p)) < 0)
        break;
    ::_exit(code);
  });
}

} // namespace rewire::tools

#endif // REWIRE_TOOLS_COMMON_OUTOFMEMORY_H
