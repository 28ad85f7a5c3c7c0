//===- MemFile.h - Fuzz inputs as files, without touching the disk --------===//
//
// Readers that take a path (safetensors mappings, the artifact checker) get
// the fuzz input as an anonymous memory file named /proc/self/fd/N.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_TOOLS_FUZZ_MEMFILE_H
#define REWIRE_TOOLS_FUZZ_MEMFILE_H

#include <cstdint>
#include <cstdlib>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace rewire::fuzz {

/// An anonymous file holding `size` bytes of `data`; closed on destruction.
struct MemFile {
  int fd = -1;
  MemFile(const uint8_t *data, size_t size) {
    fd = ::memfd_create("rewire-fuzz", MFD_CLOEXEC);
    if (fd < 0)
      std::abort();
    for (size_t done = 0; done < size;) {
      ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0)
        std::abort();
      done += static_cast<size_t>(n);
    }
  }
  ~MemFile() { ::close(fd); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }
};

} // namespace rewire::fuzz

#endif // REWIRE_TOOLS_FUZZ_MEMFILE_H
