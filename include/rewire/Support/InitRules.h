//===- InitRules.h - Paper initializations for residual forms ----*- C++ -*-===//
//
// The initial values the papers prescribe for the learned parameters of each
// residual form (papers.md): LayerScale's depth rule from CaiT, NAG's
// alpha_l = l^{-1/2}, and the sigmoid inverse used for gates that must start
// at a given opening. Pure C++ so the rewrite passes and the runtime agree.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_INITRULES_H
#define REWIRE_SUPPORT_INITRULES_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rewire {

/// LayerScale's initial lambda for a network of `depth` residual blocks
/// (CaiT): 0.1 up to 18 blocks, 1e-5 up to 24, 1e-6 deeper. std::nullopt for
/// depth < 1.
std::optional<double> layerScaleInit(int64_t depth);

/// NAG's initial alpha for 1-based sublayer index `l`: l^{-1/2}.
/// std::nullopt for l < 1.
std::optional<double> nagAlphaInit(int64_t l);

/// The logit x with sigmoid(x) == p, for p in (0, 1); std::nullopt otherwise.
std::optional<double> logit(double p);

/// Kinds of parameter initializers (mirrors #nn.init).
enum class InitRule { zeros, ones, constant, normal, uniform };

/// Materializes `numel` float values of initializer `rule` with arguments
/// `a`, `b` (constant value; normal mean and std; uniform low and high).
/// Random rules draw from splitmix64 seeded with `seed` mixed with the FNV-1a
/// hash of `name`, so each parameter gets its own reproducible stream
/// (normal values by Box-Muller). The runtime and the exporter share this.
std::vector<float> materializeInit(InitRule rule, double a, double b,
                                   int64_t numel, uint64_t seed,
                                   const std::string &name);

} // namespace rewire

#endif // REWIRE_SUPPORT_INITRULES_H
