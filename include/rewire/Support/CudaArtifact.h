//===- CudaArtifact.h - The file format of a CUDA artifact -------*- C++ -*-===//
//
// What rewire-compile --target=cuda writes and the CUDA runtime reads
// (docs/cuda.md): a fixed header, the metadata JSON (entry points, buffers,
// the host schedule of each entry point, kernel names and geometry) and a
// blob holding the kernel images (cubin and PTX) and constant tensors,
// addressed by offsets relative to the blob's start.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_CUDAARTIFACT_H
#define REWIRE_SUPPORT_CUDAARTIFACT_H

#include <cstdint>

namespace rewire::cuda {

constexpr char kMagic[8] = {'R', 'W', 'C', 'U', 'D', 'A', '\0', '\1'};
constexpr uint32_t kFormatVersion = 1;
/// Alignment of the blob and of every image/constant in it.
constexpr uint64_t kBlobAlignment = 256;
/// Alignment of every buffer in the device arena.
constexpr uint64_t kBufferAlignment = 256;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t metadataSize; ///< the JSON right after the header
  uint64_t blobOffset;   ///< from the start of the file
  uint64_t blobSize;
};
static_assert(sizeof(Header) == 40, "the header is 40 bytes on every platform");

} // namespace rewire::cuda

#endif // REWIRE_SUPPORT_CUDAARTIFACT_H
