//===- ReadFile.h - Open and read untrusted input files ----------*- C++ -*-===//
//
// Every file a user names (models, parameters, arrays, checkpoints, token
// data, artifacts) is opened through these: a FIFO, a device or a directory
// is refused at once with a message saying what the path is, instead of
// blocking forever (a FIFO with no writer) or failing deep inside a parser;
// a file over `maxBytes` is refused before anything is allocated.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_READFILE_H
#define REWIRE_SUPPORT_READFILE_H

#include <cstdint>
#include <optional>
#include <string>

namespace rewire {

/// Opens `path` read-only without blocking (O_NONBLOCK, cleared once the
/// file is known to be regular) and checks that it is a regular file of at
/// most `maxBytes`. Sets `fd` (the caller closes it) and `size`; returns
/// what is wrong otherwise.
std::optional<std::string> openRegularFile(const std::string &path, int &fd, uint64_t &size,
                                           uint64_t maxBytes = uint64_t(1) << 40);

/// Checks, without opening it, that `path` names a regular file (for
/// readers that open paths themselves: dlopen, llvm::MemoryBuffer). With
/// `allowPipes`, a FIFO passes too: textual IR is piped between tools
/// (`rewire-opt ... | rewire-report /dev/stdin`), where reading a pipe until
/// its writer closes it is what the user asked for.
std::optional<std::string> checkRegularFile(const std::string &path, bool allowPipes = false);

/// Reads all of the regular file `path` (at most `maxBytes`) into `out`.
std::optional<std::string> readRegularFile(const std::string &path, std::string &out,
                                           uint64_t maxBytes = uint64_t(1) << 40);

} // namespace rewire

#endif // REWIRE_SUPPORT_READFILE_H
