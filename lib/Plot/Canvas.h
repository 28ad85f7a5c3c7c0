//===- Canvas.h - An RGB raster with lines, boxes and text ------*- C++ -*-===//
#ifndef REWIRE_LIB_PLOT_CANVAS_H
#define REWIRE_LIB_PLOT_CANVAS_H

#include <cstdint>
#include <string>
#include <vector>

namespace rewire::plot {

class Canvas {
public:
  Canvas(int width, int height); // white
  int width() const { return w; }
  int height() const { return h; }
  const std::vector<uint8_t> &pixels() const { return rgb; }

  void set(int x, int y, uint32_t color);
  void fill(int x0, int y0, int x1, int y1, uint32_t color); // inclusive box
  /// A line `thickness` pixels wide (Bresenham, square brush).
  void line(double x0, double y0, double x1, double y1, uint32_t color, int thickness = 1);
  /// Text in the 5x7 font, `scale` pixels per font pixel, top-left at (x, y);
  /// `vertical` runs it bottom to top. Returns the advance in pixels.
  int text(int x, int y, const std::string &s, uint32_t color, int scale = 1, bool vertical = false);
  static int textWidth(const std::string &s, int scale = 1);

private:
  int w, h;
  std::vector<uint8_t> rgb;
};

} // namespace rewire::plot

#endif // REWIRE_LIB_PLOT_CANVAS_H
