//===- Canvas.cpp - An RGB raster with lines, boxes and text --------------===//
#include "lib/Plot/Canvas.h"
#include "lib/Plot/Font.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace rewire::plot {

Canvas::Canvas(int width, int height)
    : w(width), h(height), rgb(static_cast<size_t>(width) * height * 3, 0xFF) {}

void Canvas::set(int x, int y, uint32_t color) {
  if (x < 0 || y < 0 || x >= w || y >= h)
    return;
  size_t i = (static_cast<size_t>(y) * w + x) * 3;
  rgb[i] = static_cast<uint8_t>(color >> 16);
  rgb[i + 1] = static_cast<uint8_t>(color >> 8);
  rgb[i + 2] = static_cast<uint8_t>(color);
}

void Canvas::fill(int x0, int y0, int x1, int y1, uint32_t color) {
  for (int y = std::max(0, std::min(y0, y1)); y <= std::min(h - 1, std::max(y0, y1)); ++y)
    for (int x = std::max(0, std::min(x0, x1)); x <= std::min(w - 1, std::max(x0, x1)); ++x)
      set(x, y, color);
}

void Canvas::line(double fx0, double fy0, double fx1, double fy1, uint32_t color, int thickness) {
  // Clamp far-away coordinates so the walk stays short.
  auto clampc = [](double v) { return std::max(-1e5, std::min(1e5, v)); };
  int x0 = static_cast<int>(std::lround(clampc(fx0))), y0 = static_cast<int>(std::lround(clampc(fy0)));
  int x1 = static_cast<int>(std::lround(clampc(fx1))), y1 = static_cast<int>(std::lround(clampc(fy1)));
  int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
  int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
  int err = dx + dy, lo = -(thickness - 1) / 2, hi = thickness / 2;
  while (true) {
    for (int oy = lo; oy <= hi; ++oy)
      for (int ox = lo; ox <= hi; ++ox)
        set(x0 + ox, y0 + oy, color);
    if (x0 == x1 && y0 == y1)
      break;
    int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

int Canvas::textWidth(const std::string &s, int scale) {
  return s.empty() ? 0 : (static_cast<int>(s.size()) * kGlyphAdvance - 1) * scale;
}

int Canvas::text(int x, int y, const std::string &s, uint32_t color, int scale, bool vertical) {
  int pos = 0;
  for (char c : s) {
    if (const unsigned char *rows = glyph(c))
      for (int r = 0; r < kGlyphHeight; ++r)
        for (int col = 0; col < kGlyphWidth; ++col)
          if (rows[r] & (0x10 >> col))
            for (int a = 0; a < scale; ++a)
              for (int b = 0; b < scale; ++b) {
                int gx = (pos + col) * scale + a, gy = r * scale + b;
                if (vertical)
                  set(x + gy, y - gx, color);
                else
                  set(x + gx, y + gy, color);
              }
    pos += kGlyphAdvance;
  }
  return textWidth(s, scale);
}

} // namespace rewire::plot
