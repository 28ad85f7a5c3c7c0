//===- SafetensorsFuzzer.cpp - libFuzzer target: safetensors reader -------===//
//
// Parameter files, checkpoints and --params arrive from users: the mapping
// reader must refuse anything malformed; an accepted tensor's bytes must be
// numel x dtype size and lie inside the file.
//
//===----------------------------------------------------------------------===//
#include "MemFile.h"

#include "rewire/Support/Safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rewire::fuzz::MemFile file(data, size);
  rewire::SafetensorsMapping map;
  if (map.open(file.path()))
    return 0;
  for (const auto &[name, t] : map.tensors()) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0)
        std::abort();
      numel *= static_cast<uint64_t>(d);
    }
    if (numel * rewire::safetensorsDtypeSize(t.dtype) != t.bytes)
      std::abort();
    // Touch every byte: ASan reports a range outside the mapping.
    volatile char sum = 0;
    for (uint64_t i = 0; i < t.bytes; ++i)
      sum += static_cast<const char *>(t.data)[i];
  }
  return 0;
}
