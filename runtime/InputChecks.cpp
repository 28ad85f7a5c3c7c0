//===- InputChecks.cpp - Input values checked on the host -----------------===//
//
// Code that cannot report a bad index itself (CUDA kernels clamp) gets the
// checks of its inputs' values from the compiler (rewire-check-indices
// record-inputs); the runtime applies them to the host inputs before each
// call, with the message the compiled CPU checks give.
//
//===----------------------------------------------------------------------===//
#include "ArtifactMetadata.h"

#include "rewire/Runtime/CallErrors.h"

#include <cstring>

namespace rewire::runtime {

std::optional<std::string> parseInputChecks(const JsonValue &list, const std::string &where,
                                            const std::vector<TensorInfo> &inputs,
                                            std::vector<InputValueCheck> &out) {
  if (!list.isArray())
    return where + ": input_checks is not an array";
  for (const JsonValue &c : list.array) {
    InputValueCheck check;
    const JsonValue *input = c.get("input"), *what = c.get("what"), *lo = c.get("lo"),
                    *hi = c.get("hi"), *also = c.get("also"), *nonzero = c.get("nonzero");
    auto index = input ? input->asInt() : std::nullopt;
    if (!index || *index < 0 || static_cast<size_t>(*index) >= inputs.size() || !what ||
        !what->isString() || !lo || !lo->asInt() || !hi || !hi->asInt() || !nonzero ||
        nonzero->kind != JsonValue::Kind::Bool || (also && !also->asInt()))
      return where + ": an input check is malformed";
    DType t = inputs[static_cast<size_t>(*index)].dtype;
    if (t != DType::I64 && t != DType::I32 && t != DType::I16 && t != DType::I8 &&
        t != DType::U8 && t != DType::U16 && t != DType::U32 && t != DType::U64)
      return where + ": an input check names a non-integer input";
    check.input = static_cast<size_t>(*index);
    check.what = what->text;
    check.lo = *lo->asInt();
    check.hi = *hi->asInt();
    if (also)
      check.also = *also->asInt();
    check.nonzero = nonzero->boolean;
    out.push_back(std::move(check));
  }
  return std::nullopt;
}

std::optional<std::string> checkInputValues(const InputValueCheck &check,
                                            const TensorInfo &input, const void *data) {
  int64_t n = 1;
  for (int64_t d : input.shape)
    n *= d;
  auto *bytes = static_cast<const unsigned char *>(data);
  size_t width = dtypeSize(input.dtype);
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char *p = bytes + static_cast<size_t>(i) * width;
    int64_t v = 0;
    switch (input.dtype) {
    case DType::I64: { int64_t x; std::memcpy(&x, p, 8); v = x; break; }
    case DType::I32: { int32_t x; std::memcpy(&x, p, 4); v = x; break; }
    case DType::I16: { int16_t x; std::memcpy(&x, p, 2); v = x; break; }
    case DType::I8: v = static_cast<int8_t>(*p); break;
    case DType::U8: v = *p; break;
    case DType::U16: { uint16_t x; std::memcpy(&x, p, 2); v = x; break; }
    case DType::U32: { uint32_t x; std::memcpy(&x, p, 4); v = x; break; }
    // Above INT64_MAX reads as negative: out of any index range, as it is.
    case DType::U64: { uint64_t x; std::memcpy(&x, p, 8); v = static_cast<int64_t>(x); if (v < 0) v = INT64_MAX; break; }
    default: return std::nullopt; // refused when the artifact was read
    }
    bool bad = check.nonzero ? v == 0
                             : (v < check.lo || v >= check.hi) && !(check.also && v == *check.also);
    if (!bad)
      continue;
    std::string coords, dims;
    int64_t rest = i;
    std::vector<int64_t> at(input.shape.size());
    for (size_t d = input.shape.size(); d-- > 0;) {
      at[d] = rest % input.shape[d];
      rest /= input.shape[d];
    }
    for (size_t d = 0; d < at.size(); ++d) {
      coords += (d ? ", " : "") + std::to_string(at[d]);
      dims += (d ? "x" : "") + std::to_string(input.shape[d]);
    }
    std::string requirement =
        check.nonzero ? "must not be 0"
                      : "must be in [" + std::to_string(check.lo) + ", " +
                            std::to_string(check.hi) + ")" +
                            (check.also ? " or equal " + std::to_string(*check.also) : "");
    return check.what + ": value " + std::to_string(v) + " at [" + coords + "] of the " +
           (at.empty() ? "scalar" : dims) + " tensor " + requirement + " " +
           REWIRE_INPUT_DATA_SUFFIX;
  }
  return std::nullopt;
}

} // namespace rewire::runtime
