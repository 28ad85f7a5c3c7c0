//===- Stats.h - Per-layer statistics of a trained model --------*- C++ -*-===//
#ifndef REWIRE_TOOLS_REWIRE_REPORT_STATS_H
#define REWIRE_TOOLS_REWIRE_REPORT_STATS_H

#include <cstdint>
#include <string>

namespace rewire::report {

struct StatsOptions {
  std::string model, residual, params, inputs, targets, output, plotsDir;
  int64_t batches = 8;
  double tau = 0.01; // ANCRe's softmax temperature, for the connection heatmap
};

/// rewire-report --layer-stats: compile with --instrument, run on the inputs,
/// write the HTML page (and PNGs under plotsDir when given). Returns the
/// exit code (errors exit directly: 1 usage, 2 data, 3 nothing to report,
/// 4 compile/load/IO).
int runStats(const StatsOptions &options);

} // namespace rewire::report

#endif // REWIRE_TOOLS_REWIRE_REPORT_STATS_H
