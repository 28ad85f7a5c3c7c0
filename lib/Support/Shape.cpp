//===- Shape.cpp - Shape arithmetic without MLIR --------------------------===//
//
// Implements the broadcasting, axis and element-count helpers of Shape.h.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Shape.h"

#include <algorithm>

namespace rewire {

std::optional<std::vector<int64_t>>
broadcastShapes(const std::vector<int64_t> &lhs,
                const std::vector<int64_t> &rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the trailing dimension; missing leading dimensions are 1.
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (a == b) {
      out[i] = a;
    } else if (a == 1) {
      out[i] = b;
    } else if (b == 1) {
      out[i] = a;
    } else if (isDynamicDim(a)) {
      out[i] = b;
    } else if (isDynamicDim(b)) {
      out[i] = a;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (rank < 0 || axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::optional<int64_t> checkedNumElements(const std::vector<int64_t> &shape,
                                          int64_t cap) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && n > cap / d)
      return std::nullopt;
    n *= d;
  }
  if (n > cap)
    return std::nullopt;
  return n;
}

std::optional<int64_t> convOutputSize(int64_t in, int64_t kernel,
                                      int64_t stride, int64_t padBegin,
                                      int64_t padEnd, int64_t dilation) {
  if (kernel < 1 || stride < 1 || dilation < 1 || padBegin < 0 || padEnd < 0)
    return std::nullopt;
  // Guard the arithmetic against overflow from hostile attributes.
  constexpr int64_t kLimit = int64_t(1) << 40;
  if (kernel > kLimit || dilation > kLimit || padBegin > kLimit ||
      padEnd > kLimit)
    return std::nullopt;
  if (isDynamicDim(in))
    return kDynamicDim;
  if (in < 0 || in > kLimit)
    return std::nullopt;
  int64_t span = dilation * (kernel - 1) + 1;
  int64_t padded = in + padBegin + padEnd;
  if (padded < span)
    return std::nullopt;
  return (padded - span) / stride + 1;
}

} // namespace rewire
