//===- InputSpecFuzzer.cpp - libFuzzer target: --input / --expected_output -===//
//
// The tensor specs of rewire-run's command line (TYPE=VALUES): sizes must be
// limited before allocation, integers must fit their dtype, and an accepted
// tensor holds exactly numel x dtype-size bytes. Specs naming files (@) are
// skipped: the file readers have their own targets.
//
//===----------------------------------------------------------------------===//
#include "rewire/Runtime/TensorSpec.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string spec(reinterpret_cast<const char *>(data), size);
  if (spec.find('@') != std::string::npos)
    return 0;
  rewire::HostTensor t;
  // A smaller limit than the tools' 2^32 keeps allocations under the
  // fuzzer's memory limit; the checks are the same code.
  if (rewire::runtime::parseTensorSpec(spec, t, int64_t(1) << 24))
    return 0;
  if (t.data.size() != static_cast<size_t>(t.numel()) * rewire::dtypeSize(t.dtype))
    std::abort();
  return 0;
}
