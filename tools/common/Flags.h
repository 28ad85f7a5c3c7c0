//===- Flags.h - Command-line values in both LLVM spellings ------*- C++ -*-===//
//
// rewire-run and rewire-train parse their flags by hand (they link no LLVM):
// this accepts a flag's value as `--flag=value` and as `--flag value`, as
// every LLVM tool does.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_TOOLS_COMMON_FLAGS_H
#define REWIRE_TOOLS_COMMON_FLAGS_H

#include <functional>
#include <optional>
#include <string>

namespace rewire::tools {

/// The value of `--<flag>` if argv[i] is that flag (consuming argv[i + 1]
/// for the space form), else std::nullopt. A flag given last without its
/// value calls `die(message, 1)`.
inline std::optional<std::string>
flagValue(int argc, char **argv, int &i, const char *flag,
          const std::function<void(const std::string &, int)> &die) {
  std::string a = argv[i], f = std::string("--") + flag;
  if (a.rfind(f + "=", 0) == 0)
    return a.substr(f.size() + 1);
  if (a != f)
    return std::nullopt;
  if (i + 1 >= argc)
    die(f + " needs a value (" + f + "=VALUE or " + f + " VALUE)", 1);
  return std::string(argv[++i]);
}

} // namespace rewire::tools

#endif // REWIRE_TOOLS_COMMON_FLAGS_H
