//===- AtomicFile.h - Write a file atomically -------------------*- C++ -*-===//
//
// Writes bytes to a temporary file in the destination's folder, fsyncs it and
// renames it over the destination, so readers see the old file or the new
// one, never a partial write. Used for weights, exported models and (later)
// checkpoints.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_ATOMICFILE_H
#define REWIRE_SUPPORT_ATOMICFILE_H

#include <optional>
#include <string>
#include <vector>

namespace rewire {

/// Writes the concatenation of `parts` to `path` atomically. Returns an
/// error message on failure (the destination is then untouched).
std::optional<std::string>
writeFileAtomically(const std::string &path,
                    const std::vector<const std::string *> &parts);

/// Checks, before any work, that writeFileAtomically(path) can succeed as far
/// as can be known: `path` is not a directory and its folder exists and is
/// writable. Returns what is wrong.
std::optional<std::string> checkOutputPath(const std::string &path);

} // namespace rewire

#endif // REWIRE_SUPPORT_ATOMICFILE_H
