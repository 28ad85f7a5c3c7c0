//===- Artifact.h - Read and validate a CUDA artifact (runtime) --*- C++ -*-===//
//
// Everything in a .rwcu file is checked before any of it reaches the
// driver: the header's sizes against the file, the metadata's buffers,
// steps and results against each other (every buffer a step touches is
// large enough for what the step reads or writes), and the kernel images
// (a cubin is a 64-bit CUDA ELF, PTX is NUL-terminated text with .version
// and .target).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_CUDA_ARTIFACT_H
#define REWIRE_RUNTIME_CUDA_ARTIFACT_H

#include "../ArtifactMetadata.h"
#include "rewire/Runtime/Runtime.h"

#include <array>

namespace rewire::runtime::cuda {

struct BufferDesc {
  enum class Kind { input, parameter, constant, temp } kind;
  int64_t index = -1; ///< input / parameter position
  int64_t bytes = 0;
  int64_t offset = -1; ///< arena (temp) or blob (constant) offset
};

struct Step {
  enum class Kind { launch, gemm } kind;
  // launch
  int kernel = -1;
  std::array<unsigned, 3> grid{}, block{};
  std::vector<int> args;
  std::vector<int64_t> extents; ///< bytes of each argument the kernel may touch
  // gemm (row-major C[b] += op(A[b]) op(B[b]); offsets and strides in f32s)
  int a = -1, b = -1, c = -1;
  bool ta = false, tb = false;
  float beta = 1; ///< 0: C is overwritten (its zero fill was folded in), 1: accumulated
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0, oa = 0, ob = 0, oc = 0, batch = 1,
          sa = 0, sb = 0, sc = 0;
};

struct Function {
  FunctionInfo info;
  /// Checks of input values made on the host before each call (the
  /// kernels clamp indices but cannot report them).
  std::vector<InputValueCheck> inputChecks;
  int64_t arena = 0;
  std::vector<BufferDesc> buffers;
  std::vector<Step> steps;
  std::vector<std::pair<int, int64_t>> results; ///< buffer, byte offset
};

struct Image {
  bool cubin = false;
  const char *data = nullptr;
  size_t size = 0;
};

struct Artifact {
  std::string file; ///< the whole file; images and constants point into it
  std::string chip, parametersFile, metadata;
  const char *blob = nullptr;
  size_t blobSize = 0;
  std::vector<Image> images;
  std::vector<std::string> kernels;
  std::vector<Function> functions;
};

/// Reads and validates `path`; returns what is wrong.
std::optional<std::string> readArtifact(const std::string &path, Artifact &out);

/// Validates the artifact `bytes` (named `path` in messages), taking them
/// into `out.file`; returns what is wrong. The fuzzing entry point.
std::optional<std::string> readArtifactBytes(std::string bytes, const std::string &path,
                                             Artifact &out);

} // namespace rewire::runtime::cuda

#endif // REWIRE_RUNTIME_CUDA_ARTIFACT_H
