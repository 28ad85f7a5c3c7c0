//===- ElfImage.cpp - Check an artifact's ELF image before dlopen ---------===//
#include "ElfImage.h"

#include "rewire/Support/Checked.h"

#include <cstring>
#include <elf.h>
#include <unistd.h>
#include <vector>

namespace rewire::runtime {
namespace {

bool readAt(int fd, void *buf, uint64_t bytes, uint64_t offset) {
  auto *p = static_cast<char *>(buf);
  while (bytes > 0) {
    ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n <= 0)
      return false;
    p += n;
    bytes -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

/// [offset, offset + count * entry) lies inside a file of `size` bytes.
bool inside(uint64_t offset, uint64_t count, uint64_t entry, uint64_t size) {
  auto bytes = checkedMulU(count, entry);
  if (!bytes)
    return false;
  auto end = checkedAddU(offset, *bytes);
  return end && *end <= size;
}

} // namespace

std::optional<std::string> checkElfImage(int fd, uint64_t size, const std::string &path) {
  const std::string damaged = "'" + path + "' is truncated or damaged: ";
  const std::string hint = "; recompile it with rewire-compile";
  Elf64_Ehdr eh;
  if (size < sizeof(eh) || !readAt(fd, &eh, sizeof(eh), 0))
    return "'" + path + "' is not a Rewire artifact (" + std::to_string(size) +
           " bytes, too short for a shared object)";
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return "'" + path + "' is not a Rewire artifact (not a shared object: compile one with "
           "rewire-compile MODEL -o FILE.rwx)";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_machine != EM_X86_64 || eh.e_type != ET_DYN)
    return "'" + path + "' is a shared object for another machine or not a library "
           "(artifacts are x86-64 shared objects)" + hint;
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
      !inside(eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr), size))
    return damaged + "its program headers lie outside its " + std::to_string(size) + " bytes" + hint;
  if (eh.e_shnum != 0 && (eh.e_shentsize != sizeof(Elf64_Shdr) ||
                          !inside(eh.e_shoff, eh.e_shnum, sizeof(Elf64_Shdr), size)))
    return damaged + "its section headers lie outside its " + std::to_string(size) + " bytes" + hint;
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!readAt(fd, ph.data(), ph.size() * sizeof(Elf64_Phdr), eh.e_phoff))
    return damaged + "cannot read its program headers" + hint;
  bool hasDynamic = false;
  for (size_t i = 0; i < ph.size(); ++i) {
    const Elf64_Phdr &p = ph[i];
    if (p.p_type != PT_LOAD && p.p_type != PT_DYNAMIC && p.p_type != PT_NOTE &&
        p.p_type != PT_GNU_EH_FRAME)
      continue;
    if (!inside(p.p_offset, p.p_filesz, 1, size) || p.p_filesz > p.p_memsz)
      return damaged + "segment " + std::to_string(i) + " (bytes " + std::to_string(p.p_offset) +
             " + " + std::to_string(p.p_filesz) + ") lies outside its " + std::to_string(size) +
             " bytes" + hint;
    if (p.p_type == PT_DYNAMIC) {
      hasDynamic = true;
      // The loader walks the dynamic section up to DT_NULL.
      std::vector<Elf64_Dyn> dyn(p.p_filesz / sizeof(Elf64_Dyn));
      if (dyn.empty() || !readAt(fd, dyn.data(), dyn.size() * sizeof(Elf64_Dyn), p.p_offset))
        return damaged + "its dynamic section is empty or unreadable" + hint;
      bool terminated = false;
      for (const Elf64_Dyn &d : dyn)
        if (d.d_tag == DT_NULL) {
          terminated = true;
          break;
        }
      if (!terminated)
        return damaged + "its dynamic section has no end marker" + hint;
    }
  }
  if (!hasDynamic)
    return "'" + path + "' is not a shared library (no dynamic section)" + hint;
  return std::nullopt;
}

} // namespace rewire::runtime
