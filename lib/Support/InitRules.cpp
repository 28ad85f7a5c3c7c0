//===- InitRules.cpp - Paper initializations for residual forms -----------===//
//
// Implements the initialization rules of InitRules.h.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/InitRules.h"

#include <cmath>

namespace rewire {

std::optional<double> layerScaleInit(int64_t depth) {
  if (depth < 1)
    return std::nullopt;
  if (depth <= 18)
    return 0.1;
  if (depth <= 24)
    return 1e-5;
  return 1e-6;
}

std::optional<double> nagAlphaInit(int64_t l) {
  if (l < 1)
    return std::nullopt;
  return 1.0 / std::sqrt(static_cast<double>(l));
}

std::optional<double> logit(double p) {
  if (!(p > 0.0 && p < 1.0))
    return std::nullopt;
  return std::log(p / (1.0 - p));
}

static uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Uniform in (0, 1): 53 random bits, never exactly 0.
static double unit(uint64_t &state) {
  return (static_cast<double>(splitmix64(state) >> 11) + 0.5) *
         (1.0 / 9007199254740992.0);
}

std::vector<float> materializeInit(InitRule rule, double a, double b,
                                   int64_t numel, uint64_t seed,
                                   const std::string &name) {
  std::vector<float> out(numel > 0 ? static_cast<size_t>(numel) : 0);
  uint64_t h = 0xCBF29CE484222325ULL; // FNV-1a
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001B3ULL;
  uint64_t state = seed ^ h;
  const double twoPi = 6.283185307179586;
  for (size_t i = 0; i < out.size(); ++i) {
    switch (rule) {
    case InitRule::zeros:
      out[i] = 0.0f;
      break;
    case InitRule::ones:
      out[i] = 1.0f;
      break;
    case InitRule::constant:
      out[i] = static_cast<float>(a);
      break;
    case InitRule::uniform:
      out[i] = static_cast<float>(a + (b - a) * unit(state));
      break;
    case InitRule::normal: {
      double u1 = unit(state), u2 = unit(state);
      out[i] = static_cast<float>(
          a + b * std::sqrt(-2.0 * std::log(u1)) * std::cos(twoPi * u2));
      break;
    }
    }
  }
  return out;
}

} // namespace rewire
