//===- ArtifactFuzzer.cpp - libFuzzer target for CUDA artifacts -----------===//
//
// Feeds arbitrary bytes to the CUDA runtime's artifact reader (header,
// metadata JSON, buffers, steps, images), the code that stands between an
// untrusted .rwcu file and the driver. Any crash, sanitizer report or
// accepted artifact whose steps reach outside their buffers is a bug.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Artifact.h"

#include <cstdint>
#include <cstdlib>

using namespace rewire::runtime::cuda;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Artifact a;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (readArtifactBytes(std::move(bytes), "fuzz-input.rwcu", a))
    return 0;
  // Accepted: every reference must be in range (what the driver relies on).
  for (const Function &f : a.functions) {
    for (const Step &s : f.steps) {
      if (s.kind == Step::Kind::launch) {
        if (s.kernel < 0 || static_cast<size_t>(s.kernel) >= a.kernels.size())
          std::abort();
        for (size_t i = 0; i < s.args.size(); ++i)
          if (s.args[i] < 0 || static_cast<size_t>(s.args[i]) >= f.buffers.size() ||
              s.extents[i] > f.buffers[s.args[i]].bytes)
            std::abort();
      } else if (s.a < 0 || s.b < 0 || s.c < 0) {
        std::abort();
      }
    }
    for (auto [buffer, offset] : f.results)
      if (buffer < 0 || static_cast<size_t>(buffer) >= f.buffers.size() || offset < 0)
        std::abort();
  }
  for (const Image &i : a.images)
    if (i.data < a.blob || i.data + i.size > a.blob + a.blobSize)
      std::abort();
  return 0;
}
