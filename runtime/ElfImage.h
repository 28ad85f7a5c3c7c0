//===- ElfImage.h - Check an artifact's ELF image before dlopen -----------===//
//
// dlopen maps an artifact's segments as the file's headers describe them; a
// truncated or damaged file makes the loader read past the end of the file
// (SIGBUS) or follow wild offsets (SIGSEGV). checkElfImage validates the
// headers the loader relies on first, so such a file gets a message.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_ELFIMAGE_H
#define REWIRE_RUNTIME_ELFIMAGE_H

#include <cstdint>
#include <optional>
#include <string>

namespace rewire::runtime {

/// Checks that the open file `fd` of `size` bytes is an x86-64 little-endian
/// ELF shared object whose program headers, segments, section headers and
/// dynamic section all lie inside the file. Returns what is wrong.
std::optional<std::string> checkElfImage(int fd, uint64_t size, const std::string &path);

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_ELFIMAGE_H
