//===- Png.cpp - PNG encoding (8-bit RGB, zlib) ---------------------------===//
#include "rewire/Plot/Plot.h"

#include <zlib.h>

namespace rewire::plot {
namespace {

void put32(std::string &out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8)
    out.push_back(static_cast<char>((v >> s) & 0xFF));
}

void chunk(std::string &out, const char type[4], const std::string &data) {
  put32(out, static_cast<uint32_t>(data.size()));
  std::string body(type, 4);
  body += data;
  out += body;
  put32(out, static_cast<uint32_t>(
                 crc32(0, reinterpret_cast<const Bytef *>(body.data()), static_cast<uInt>(body.size()))));
}

} // namespace

std::string encodePng(int width, int height, const std::vector<uint8_t> &rgb) {
  std::string out("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put32(ihdr, static_cast<uint32_t>(width));
  put32(ihdr, static_cast<uint32_t>(height));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5); // 8-bit RGB, no interlace
  chunk(out, "IHDR", ihdr);
  // Scanlines, each after filter byte 0 (none).
  size_t stride = static_cast<size_t>(width) * 3;
  std::string raw;
  raw.reserve((stride + 1) * static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) {
    raw.push_back('\0');
    raw.append(reinterpret_cast<const char *>(rgb.data()) + static_cast<size_t>(y) * stride, stride);
  }
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(size, '\0');
  compress2(reinterpret_cast<Bytef *>(packed.data()), &size,
            reinterpret_cast<const Bytef *>(raw.data()), static_cast<uLong>(raw.size()), 6);
  packed.resize(size);
  chunk(out, "IDAT", packed);
  chunk(out, "IEND", "");
  return out;
}

} // namespace rewire::plot
