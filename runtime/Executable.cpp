//===- Executable.cpp - One interface over CPU and CUDA artifacts ---------===//
//
// What every Executable shares; Executable::load, which needs both models,
// is in LoadExecutable.cpp (so readers of one kind link without the other).
//
//===----------------------------------------------------------------------===//
#include "rewire/Runtime/Executable.h"

using namespace rewire;
using namespace rewire::runtime;

std::string TensorInfo::typeString() const {
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  return t.typeString();
}

int64_t TensorInfo::byteSize() const {
  int64_t n = static_cast<int64_t>(dtypeSize(dtype));
  for (int64_t d : shape)
    n *= d;
  return n;
}

Executable::~Executable() = default;

std::string Executable::whatRuns() const {
  std::string text = "kernels: " + kernels() + "\n";
  if (std::string pools = threads(); !pools.empty())
    text += "threads: " + pools + "\n";
  if (std::string fused = attention(); !fused.empty())
    text += "attention: " + fused + "\n";
  return text;
}

const FunctionInfo *Executable::function(const std::string &name) const {
  for (const FunctionInfo &f : functions())
    if (f.name == name)
      return &f;
  return nullptr;
}
