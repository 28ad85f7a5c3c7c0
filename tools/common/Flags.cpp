//===- Flags.cpp - The runtime tools' command lines, from one table -------===//
#include "tools/common/Flags.h"

#include <cmath>
#include <cstdlib>
#include <iostream>

namespace rewire::tools {

std::optional<std::string> flagValue(int argc, char **argv, int &i, const char *flag,
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

FlagParser::FlagParser(std::string head, std::string tail, std::string version, Die die)
    : head(std::move(head)), tail(std::move(tail)), version(std::move(version)),
      die(std::move(die)) {}

FlagParser &FlagParser::value(const char *name, const char *meta, const char *help,
                              std::function<void(const std::string &)> set, unsigned tags) {
  flags.push_back({name, meta, help, std::move(set), tags});
  return *this;
}

FlagParser &FlagParser::toggle(const char *name, const char *help, std::function<void()> set,
                               unsigned tags) {
  flags.push_back({name, "", help, [set = std::move(set)](const std::string &) { set(); }, tags});
  return *this;
}

void FlagParser::parse(int argc, char **argv,
                       const std::function<void(const std::string &)> &positional) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(std::cout);
      std::exit(0);
    }
    if (a == "--version") {
      std::cout << version << "\n";
      std::exit(0);
    }
    if (a.rfind("-", 0) != 0 || a == "-") {
      positional(a);
      continue;
    }
    const Flag *match = nullptr;
    for (const Flag &f : flags) {
      if (f.meta.empty()) {
        if (a == "--" + f.name) {
          f.set("");
          match = &f;
        } else if (a.rfind("--" + f.name + "=", 0) == 0) {
          die("--" + f.name + " takes no value (got '" + a + "')", 1);
        }
      } else if (auto v = flagValue(argc, argv, i, f.name.c_str(), die)) {
        f.set(*v);
        match = &f;
      }
      if (match)
        break;
    }
    if (!match)
      die("unknown option '" + a + "' (see --help)", 1);
    seen.push_back(match);
  }
}

std::vector<std::string> FlagParser::given(unsigned tags) const {
  std::vector<std::string> names;
  for (const Flag *f : seen)
    if (f->tags & tags)
      names.push_back("--" + f->name);
  return names;
}

void FlagParser::usage(std::ostream &os) const {
  os << head;
  const size_t column = 34;
  for (const Flag &f : flags) {
    std::string left = "  --" + f.name + (f.meta.empty() ? "" : "=" + f.meta);
    size_t start = 0;
    bool first = true;
    while (start <= f.help.size()) {
      size_t end = f.help.find('\n', start);
      std::string line = f.help.substr(start, end == std::string::npos ? std::string::npos
                                                                        : end - start);
      std::string lead = first ? left : "";
      if (first && lead.size() + 1 > column) {
        os << lead << "\n";
        lead.clear();
      }
      os << lead << std::string(column - lead.size(), ' ') << line << "\n";
      first = false;
      if (end == std::string::npos)
        break;
      start = end + 1;
    }
  }
  os << "  --help, --version\n"
     << "every --flag=VALUE may also be given as --flag VALUE\n"
     << tail;
}

double FlagParser::nonNegative(const std::string &v, const char *flag) const {
  char *end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(d) || d < 0)
    die(std::string("--") + flag + " expects a non-negative number, got '" + v + "'", 1);
  return d;
}

int64_t FlagParser::count(const std::string &v, const char *flag) const {
  double d = nonNegative(v, flag);
  if (d != std::floor(d) || d > 1e12)
    die(std::string("--") + flag + " expects a whole number, got '" + v + "'", 1);
  return static_cast<int64_t>(d);
}

} // namespace rewire::tools
