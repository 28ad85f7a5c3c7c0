//===- ElfFuzzer.cpp - libFuzzer target: the CPU artifact's ELF check -----===//
//
// Model::load checks an artifact's ELF headers before dlopen maps it; the
// check itself reads untrusted offsets and counts. Any crash or sanitizer
// report is a bug. (What dlopen does with an accepted file is the loader's
// business: artifacts are code, see SECURITY.md.)
//
//===----------------------------------------------------------------------===//
#include "MemFile.h"

#include "runtime/ElfImage.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rewire::fuzz::MemFile file(data, size);
  (void)rewire::runtime::checkElfImage(file.fd, size, "fuzz.rwx");
  return 0;
}
