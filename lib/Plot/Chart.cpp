//===- Chart.cpp - Line charts and heatmaps --------------------------------===//
//
// Axes with "nice" ticks (1, 2, 5 times a power of ten; decades on a log
// axis), light grid lines, a legend, and the series clipped to the plot box.
//
//===----------------------------------------------------------------------===//
#include "lib/Plot/Canvas.h"
#include "rewire/Plot/Plot.h"
#include "rewire/Support/AtomicFile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace rewire::plot {
namespace {

constexpr uint32_t kPalette[] = {0x009E73, 0xCC79A7, 0xE69F00, 0x56B4E9,
                                 0x999933, 0x0072B2, 0xD55E00, 0x000000};
constexpr uint32_t kInk = 0x222222, kGrid = 0xE4E4E4;

std::string format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", std::fabs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

/// Tick positions covering [lo, hi] with about `want` steps of 1, 2 or 5
/// times a power of ten.
std::vector<double> niceTicks(double lo, double hi, int want) {
  double raw = (hi - lo) / want;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(t);
  return ticks;
}

std::optional<std::string> save(const std::string &path, const Canvas &c) {
  std::string png = encodePng(c.width(), c.height(), c.pixels());
  return writeFileAtomically(path, {&png});
}

void title(Canvas &c, const std::string &s) {
  c.text((c.width() - Canvas::textWidth(s, 2)) / 2, 10, s, kInk, 2);
}

} // namespace

std::optional<std::string> writeLineChart(const std::string &path, const std::vector<Series> &series,
                                          const Axes &axes, int width, int height) {
  if (width < 200 || height < 150 || width > 8000 || height > 8000)
    return std::string("plot size must be between 200x150 and 8000x8000");
  Canvas c(width, height);
  int left = 80, right = 20, top = 40, bottom = 56;
  int x0 = left, x1 = width - right, y0 = top, y1 = height - bottom;
  auto ty = [&](double v) { return axes.logY ? (v > 0 ? std::log10(v) : NAN) : v; };

  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const Series &s : series)
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      double y = ty(s.y[i]);
      if (!std::isfinite(s.x[i]) || !std::isfinite(y))
        continue;
      xlo = std::min(xlo, s.x[i]);
      xhi = std::max(xhi, s.x[i]);
      ylo = std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
  title(c, axes.title);
  bool empty = !(xlo <= xhi);
  if (empty) {
    xlo = 0, xhi = 1, ylo = 0, yhi = 1;
  }
  if (xhi - xlo < 1e-12)
    xlo -= 0.5, xhi += 0.5;
  if (yhi - ylo < 1e-12 * std::max(1.0, std::fabs(yhi))) {
    double pad = std::max(0.5 * std::fabs(yhi), 1e-3);
    ylo -= pad, yhi += pad;
  } else {
    double pad = 0.04 * (yhi - ylo);
    ylo -= pad, yhi += pad;
  }
  auto px = [&](double x) { return x0 + (x - xlo) / (xhi - xlo) * (x1 - x0); };
  auto py = [&](double y) { return y1 - (y - ylo) / (yhi - ylo) * (y1 - y0); };

  // Grid, ticks and labels.
  std::vector<double> yt = niceTicks(ylo, yhi, 6);
  if (axes.logY && yhi - ylo >= 1.0) {
    yt.clear();
    int step = std::max(1, static_cast<int>(std::ceil((yhi - ylo) / 8)));
    for (double t = std::ceil(ylo); t <= yhi; t += step)
      yt.push_back(t);
  }
  for (double t : yt) {
    int y = static_cast<int>(std::lround(py(t)));
    c.line(x0, y, x1, y, kGrid);
    std::string label = format(axes.logY ? std::pow(10.0, t) : t);
    c.text(x0 - 6 - Canvas::textWidth(label), y - 3, label, kInk);
  }
  for (double t : niceTicks(xlo, xhi, 6)) {
    int x = static_cast<int>(std::lround(px(t)));
    c.line(x, y0, x, y1, kGrid);
    std::string label = format(t);
    c.text(x - Canvas::textWidth(label) / 2, y1 + 8, label, kInk);
  }
  c.line(x0, y1, x1, y1, kInk);
  c.line(x0, y0, x0, y1, kInk);
  c.text((x0 + x1 - Canvas::textWidth(axes.xLabel, 2)) / 2, height - 22, axes.xLabel, kInk, 2);
  c.text(12, (y0 + y1 + Canvas::textWidth(axes.yLabel, 2)) / 2, axes.yLabel, kInk, 2, true);
  if (empty)
    c.text((x0 + x1 - Canvas::textWidth("NO DATA", 2)) / 2, (y0 + y1) / 2, "NO DATA", kInk, 2);

  // Series, clipped to the box by drawing only segments inside it.
  size_t next = 0;
  std::vector<uint32_t> colors;
  for (const Series &s : series) {
    uint32_t color = s.color ? s.color : kPalette[next++ % (sizeof(kPalette) / sizeof(kPalette[0]))];
    colors.push_back(color);
    bool have = false;
    double lx = 0, ly = 0;
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      double y = ty(s.y[i]);
      if (!std::isfinite(s.x[i]) || !std::isfinite(y)) {
        have = false;
        continue;
      }
      double cx = px(s.x[i]), cy = py(y);
      if (have)
        c.line(lx, ly, cx, cy, color, 2);
      if (s.markers)
        c.fill(static_cast<int>(cx) - 2, static_cast<int>(cy) - 2, static_cast<int>(cx) + 2,
               static_cast<int>(cy) + 2, color);
      lx = cx, ly = cy, have = true;
    }
  }
  // Legend, top right inside the box.
  int ly = y0 + 8;
  for (size_t k = 0; k < series.size(); ++k) {
    if (series[k].name.empty())
      continue;
    int tw = Canvas::textWidth(series[k].name);
    int lx = x1 - 12 - tw - 18;
    c.fill(lx - 4, ly - 3, x1 - 6, ly + 10, 0xFFFFFF);
    c.fill(lx, ly + 2, lx + 12, ly + 4, colors[k]);
    c.text(lx + 18, ly, series[k].name, kInk);
    ly += 14;
  }
  return save(path, c);
}

std::optional<std::string> writeHeatmap(const std::string &path,
                                        const std::vector<std::vector<double>> &m,
                                        const Axes &axes, const std::vector<std::string> &rowLabels,
                                        const std::vector<std::string> &colLabels) {
  size_t rows = m.size(), cols = 0;
  for (const auto &r : m)
    cols = std::max(cols, r.size());
  if (rows == 0 || cols == 0)
    return std::string("the heatmap has no cells");
  if (rows > 512 || cols > 512)
    return std::string("the heatmap has more than 512 rows or columns");
  double lo = INFINITY, hi = -INFINITY;
  for (const auto &r : m)
    for (double v : r)
      if (std::isfinite(v))
        lo = std::min(lo, v), hi = std::max(hi, v);
  int cell = static_cast<int>(std::max<size_t>(6, std::min<size_t>(48, 560 / std::max(rows, cols))));
  int left = 90, top = 64, bottom = 56;
  int width = std::max<int>(320, left + cell * static_cast<int>(cols) + 30);
  int height = top + cell * static_cast<int>(rows) + bottom;
  Canvas c(width, height);
  title(c, axes.title);
  std::string range = lo <= hi ? "RANGE " + format(lo) + " TO " + format(hi) : "NO FINITE VALUES";
  c.text((width - Canvas::textWidth(range)) / 2, 34, range, kInk);
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < m[i].size(); ++j) {
      double v = m[i][j];
      if (!std::isfinite(v))
        continue;
      double t = hi > lo ? (v - lo) / (hi - lo) : 1.0;
      auto mix = [&](int a, int b) { return static_cast<uint32_t>(std::lround(a + t * (b - a))); };
      uint32_t color = (mix(0xFF, 0x08) << 16) | (mix(0xFF, 0x30) << 8) | mix(0xFF, 0x6B);
      int cx = left + static_cast<int>(j) * cell, cy = top + static_cast<int>(i) * cell;
      c.fill(cx, cy, cx + cell - 2, cy + cell - 2, color);
      std::string label = format(v);
      if (cell >= 40 && Canvas::textWidth(label) <= cell - 4)
        c.text(cx + (cell - 1 - Canvas::textWidth(label)) / 2, cy + cell / 2 - 4, label,
               t > 0.5 ? 0xFFFFFF : kInk);
    }
  for (size_t i = 0; i < rows && i < rowLabels.size(); ++i)
    c.text(left - 6 - Canvas::textWidth(rowLabels[i]), top + static_cast<int>(i) * cell + cell / 2 - 4,
           rowLabels[i], kInk);
  for (size_t j = 0; j < cols && j < colLabels.size(); ++j)
    c.text(left + static_cast<int>(j) * cell + (cell - Canvas::textWidth(colLabels[j])) / 2,
           top + static_cast<int>(rows) * cell + 6, colLabels[j], kInk);
  c.text((width - Canvas::textWidth(axes.xLabel, 2)) / 2, height - 22, axes.xLabel, kInk, 2);
  c.text(12, top + (static_cast<int>(rows) * cell + Canvas::textWidth(axes.yLabel, 2)) / 2,
         axes.yLabel, kInk, 2, true);
  return save(path, c);
}

} // namespace rewire::plot
