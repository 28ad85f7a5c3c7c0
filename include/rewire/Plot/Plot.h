//===- Plot.h - Line charts and heatmaps as PNG files -----------*- C++ -*-===//
//
// Small, dependency-light plotting (zlib for PNG) for training curves and
// per-layer statistics: rewire-train's loss plot, rewire-report's figures.
// No MLIR, no LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PLOT_PLOT_H
#define REWIRE_PLOT_PLOT_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rewire::plot {

/// One line of a chart. Points with a non-finite coordinate are skipped
/// (the line breaks there). `color` is 0xRRGGBB; 0 picks the next of a
/// colour-blind-safe palette.
struct Series {
  std::string name;
  std::vector<double> x, y;
  uint32_t color = 0;
  bool markers = false; // draw a dot at each point (sparse series)
};

struct Axes {
  std::string title, xLabel, yLabel;
  bool logY = false; // log10 y axis (non-positive values skipped)
};

/// Renders `series` as a line chart and writes it to `path` as PNG
/// (atomically). Returns an error message, or nullopt.
std::optional<std::string> writeLineChart(const std::string &path,
                                          const std::vector<Series> &series, const Axes &axes,
                                          int width = 800, int height = 480);

/// A matrix as a heatmap (row 0 at the top), `rowLabels`/`colLabels`
/// optional; non-finite cells are left blank. Values map linearly from the
/// matrix's minimum (white) to its maximum (dark blue); the range is printed.
std::optional<std::string> writeHeatmap(const std::string &path,
                                        const std::vector<std::vector<double>> &matrix,
                                        const Axes &axes,
                                        const std::vector<std::string> &rowLabels = {},
                                        const std::vector<std::string> &colLabels = {});

/// PNG bytes of an 8-bit RGB image (`rgb` holds width * height * 3 bytes).
std::string encodePng(int width, int height, const std::vector<uint8_t> &rgb);

} // namespace rewire::plot

#endif // REWIRE_PLOT_PLOT_H
