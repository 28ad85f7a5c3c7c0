//===- LoadExecutable.cpp - A CPU or CUDA artifact, by its content --------===//
#include "rewire/Runtime/CudaRuntime.h"
#include "rewire/Runtime/Runtime.h"

using namespace rewire::runtime;

std::unique_ptr<Executable> Executable::load(const std::string &artifactPath, std::string &error,
                                             const std::string &parametersPath) {
  if (isCudaArtifact(artifactPath))
    return CudaModel::load(artifactPath, error, parametersPath);
  return Model::load(artifactPath, error, parametersPath);
}
