//===- Shape.h - Shape arithmetic without MLIR -------------------*- C++ -*-===//
//
// Pure C++ shape helpers shared by the dialects' verifiers, the importer and
// the runtime (which links no MLIR): ONNX multidirectional broadcasting, axis
// normalization and overflow-checked element counts. Dynamic dimensions use
// the same sentinel as mlir::ShapedType::kDynamic.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_SHAPE_H
#define REWIRE_SUPPORT_SHAPE_H

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace rewire {

/// Marks a dimension whose size is not known statically (equal to
/// mlir::ShapedType::kDynamic; checked where both are visible).
constexpr int64_t kDynamicDim = std::numeric_limits<int64_t>::min();

inline bool isDynamicDim(int64_t d) { return d == kDynamicDim; }

/// Two dimension sizes agree when equal or when either is dynamic.
inline bool dimsAgree(int64_t a, int64_t b) {
  return a == b || isDynamicDim(a) || isDynamicDim(b);
}

/// ONNX/NumPy multidirectional broadcast of two shapes. Returns std::nullopt
/// when two static dimensions differ and neither is 1. A dynamic dimension
/// broadcast against 1 stays dynamic; against a static size N > 1 it becomes N
/// (the only size that can be valid at run time).
std::optional<std::vector<int64_t>>
broadcastShapes(const std::vector<int64_t> &lhs,
                const std::vector<int64_t> &rhs);

/// Maps an ONNX-style axis in [-rank, rank) to [0, rank). Returns std::nullopt
/// when it is out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// The product of a static shape, or std::nullopt when a dimension is dynamic
/// or negative, or the product exceeds `cap` (overflow-checked).
std::optional<int64_t>
checkedNumElements(const std::vector<int64_t> &shape,
                   int64_t cap = std::numeric_limits<int64_t>::max());

/// Output size of one spatial dimension of a convolution or pooling window:
/// floor((in + padBegin + padEnd - dilation*(kernel-1) - 1) / stride) + 1.
/// Returns kDynamicDim for a dynamic input and std::nullopt when the
/// arguments are invalid (non-positive kernel, stride or dilation, negative
/// padding, or a window larger than the padded input).
std::optional<int64_t> convOutputSize(int64_t in, int64_t kernel,
                                      int64_t stride, int64_t padBegin,
                                      int64_t padEnd, int64_t dilation);

} // namespace rewire

#endif // REWIRE_SUPPORT_SHAPE_H
