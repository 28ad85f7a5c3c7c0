//===- Font.h - A 5x7 bitmap font for plot labels ---------------*- C++ -*-===//
#ifndef REWIRE_LIB_PLOT_FONT_H
#define REWIRE_LIB_PLOT_FONT_H

namespace rewire::plot {

constexpr int kGlyphWidth = 5, kGlyphHeight = 7, kGlyphAdvance = 6;

/// The 7 rows (5 bits each, MSB left) of `c`'s glyph; null for a blank.
const unsigned char *glyph(char c);

} // namespace rewire::plot

#endif // REWIRE_LIB_PLOT_FONT_H
