//===- Checked.h - Overflow-checked integer arithmetic -----------*- C++ -*-===//
//
// The one place where arithmetic on untrusted integers (ONNX attributes and
// constants, tensor shapes, file headers, command-line sizes) is done: each
// helper returns std::nullopt instead of wrapping or trapping (INT64_MIN / -1,
// division by zero). Plain C++ (the runtime links no LLVM or MLIR).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_SUPPORT_CHECKED_H
#define REWIRE_SUPPORT_CHECKED_H

#include <cstdint>
#include <limits>
#include <optional>

namespace rewire {

inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

inline std::optional<int64_t> checkedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// Truncating division (C++ and ONNX semantics); std::nullopt for a zero
/// divisor and for INT64_MIN / -1.
inline std::optional<int64_t> checkedDiv(int64_t a, int64_t b) {
  if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1))
    return std::nullopt;
  return a / b;
}

/// Unsigned sizes (byte counts, offsets).
inline std::optional<uint64_t> checkedAddU(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

inline std::optional<uint64_t> checkedMulU(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// Whether `v` fits a signed integer of `bits` bits (1 <= bits <= 64).
inline bool fitsSignedBits(int64_t v, unsigned bits) {
  if (bits >= 64)
    return true;
  int64_t lo = -(int64_t(1) << (bits - 1)), hi = (int64_t(1) << (bits - 1)) - 1;
  return v >= lo && v <= hi;
}

} // namespace rewire

#endif // REWIRE_SUPPORT_CHECKED_H
