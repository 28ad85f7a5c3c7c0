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

} // namespace rewire
