//===- NpyFuzzer.cpp - libFuzzer target: bytes -> .npy reader -------------===//
//
// rewire-run --input=@x.npy and rewire-train --inputs read .npy files from
// users: any crash or sanitizer report is a bug, and an accepted array must
// hold exactly shape x dtype-size bytes.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Npy.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rewire::HostTensor t;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (rewire::parseNpy(bytes, "fuzz.npy", t))
    return 0;
  if (t.data.size() != static_cast<size_t>(t.numel()) * rewire::dtypeSize(t.dtype))
    std::abort();
  return 0;
}
