//===- Flags.h - The runtime tools' command lines, from one table -*- C++ -*-===//
//
// rewire-run and rewire-train parse their flags by hand (they link no LLVM).
// Each declares its flags once, in a FlagParser table: the parser reads
// `--flag=value` and `--flag value` (as every LLVM tool does), refuses
// unknown flags, and `--help` is printed from the same table, so the help
// cannot list a flag the parser does not take, or miss one it does.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_TOOLS_COMMON_FLAGS_H
#define REWIRE_TOOLS_COMMON_FLAGS_H

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace rewire::tools {

/// The value of `--<flag>` if argv[i] is that flag (consuming argv[i + 1]
/// for the space form), else std::nullopt. A flag given last without its
/// value calls `die(message, 1)`.
std::optional<std::string> flagValue(int argc, char **argv, int &i, const char *flag,
                                     const std::function<void(const std::string &, int)> &die);

class FlagParser {
public:
  using Die = std::function<void(const std::string &, int)>;

  /// `head`: the usage lines before the flags; `tail`: lines after them
  /// (exit codes); `version`: what --version prints.
  FlagParser(std::string head, std::string tail, std::string version, Die die);

  /// `--name=META` (or `--name META`); `help` may hold '\n' for more lines.
  /// `tags` mark groups of flags (see given()).
  FlagParser &value(const char *name, const char *meta, const char *help,
                    std::function<void(const std::string &)> set, unsigned tags = 0);
  /// `--name` alone.
  FlagParser &toggle(const char *name, const char *help, std::function<void()> set,
                     unsigned tags = 0);

  /// Parses argv[1..]: arguments that are not flags go to `positional`;
  /// --help/-h prints usage() and exits 0, --version the version; an
  /// unknown flag dies (exit 1).
  void parse(int argc, char **argv, const std::function<void(const std::string &)> &positional);

  /// `--name` of each flag given on the command line with one of `tags`.
  std::vector<std::string> given(unsigned tags) const;

  /// The help, generated from the table.
  void usage(std::ostream &os) const;

  /// Value checks shared by the tools' handlers: a finite number >= 0, a
  /// whole number in [0, 10^12]; both die with the flag's name otherwise.
  double nonNegative(const std::string &v, const char *flag) const;
  int64_t count(const std::string &v, const char *flag) const;

private:
  struct Flag {
    std::string name, meta, help;
    std::function<void(const std::string &)> set;
    unsigned tags;
  };
  std::string head, tail, version;
  Die die;
  std::vector<Flag> flags;
  std::vector<const Flag *> seen;
};

} // namespace rewire::tools

#endif // REWIRE_TOOLS_COMMON_FLAGS_H
