//===- CpuFeatures.cpp - x86 features an artifact needs ------------------===//
//
// The table of CpuArtifact.h: each feature with its run-time test
// (__builtin_cpu_supports, which reads CPUID once per process).
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/CpuArtifact.h"

#include <algorithm>
#include <utility>

namespace rewire::cpu {
namespace {

struct Feature {
  const char *name;
  bool (*present)();
};

#if defined(__x86_64__) || defined(__i386__)
#define REWIRE_FEATURE(n) {n, [] { return __builtin_cpu_supports(n) != 0; }}
const Feature kFeatures[] = {
    REWIRE_FEATURE("sse3"),        REWIRE_FEATURE("ssse3"),
    REWIRE_FEATURE("sse4.1"),      REWIRE_FEATURE("sse4.2"),
    REWIRE_FEATURE("popcnt"),      REWIRE_FEATURE("avx"),
    REWIRE_FEATURE("avx2"),        REWIRE_FEATURE("fma"),
    REWIRE_FEATURE("f16c"),        REWIRE_FEATURE("bmi"),
    REWIRE_FEATURE("bmi2"),        REWIRE_FEATURE("lzcnt"),
    REWIRE_FEATURE("movbe"),       REWIRE_FEATURE("avx512f"),
    REWIRE_FEATURE("avx512dq"),    REWIRE_FEATURE("avx512cd"),
    REWIRE_FEATURE("avx512bw"),    REWIRE_FEATURE("avx512vl"),
    REWIRE_FEATURE("avx512ifma"),  REWIRE_FEATURE("avx512vbmi"),
    REWIRE_FEATURE("avx512vbmi2"), REWIRE_FEATURE("avx512vnni"),
    REWIRE_FEATURE("avx512bitalg"), REWIRE_FEATURE("avx512vpopcntdq"),
    REWIRE_FEATURE("avx512bf16"),  REWIRE_FEATURE("avx512fp16"),
    REWIRE_FEATURE("avx512vp2intersect"), REWIRE_FEATURE("avxvnni"),
    REWIRE_FEATURE("gfni"),        REWIRE_FEATURE("vaes"),
    REWIRE_FEATURE("vpclmulqdq"),
#if defined(__clang__) && __clang_major__ >= 16
    REWIRE_FEATURE("avxifma"),     REWIRE_FEATURE("avxvnniint8"),
    REWIRE_FEATURE("avxneconvert"),
#endif
};
#undef REWIRE_FEATURE
#else
const Feature kFeatures[] = {{"", [] { return false; }}};
#endif

} // namespace

const std::vector<std::string> &checkedFeatures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Feature &f : kFeatures)
      if (*f.name)
        v.push_back(f.name);
    return v;
  }();
  return names;
}

std::vector<std::string> missingFeatures(const std::vector<std::string> &required) {
  std::vector<std::string> missing;
  for (const std::string &name : required) {
    auto it = std::find_if(std::begin(kFeatures), std::end(kFeatures),
                           [&](const Feature &f) { return name == f.name; });
    if (it == std::end(kFeatures) || !it->present())
      missing.push_back(name);
  }
  return missing;
}

} // namespace rewire::cpu
