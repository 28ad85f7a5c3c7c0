//===- DType.cpp - Element types shared by the compiler and runtime -------===//
#include "rewire/Support/DType.h"

#include <cstring>

namespace rewire {

namespace {
struct Info {
  DType t;
  size_t size;
  const char *name, *st;
};
constexpr Info kInfo[] = {
    {DType::F32, 4, "f32", "F32"},  {DType::F64, 8, "f64", "F64"},
    {DType::F16, 2, "f16", "F16"},  {DType::BF16, 2, "bf16", "BF16"},
    {DType::I64, 8, "i64", "I64"},  {DType::I32, 4, "i32", "I32"},
    {DType::I16, 2, "i16", "I16"},  {DType::I8, 1, "i8", "I8"},
    {DType::U8, 1, "ui8", "U8"},    {DType::U16, 2, "ui16", "U16"},
    {DType::U32, 4, "ui32", "U32"}, {DType::U64, 8, "ui64", "U64"},
    {DType::Bool, 1, "i1", "BOOL"},
};
const Info &info(DType t) {
  for (const Info &i : kInfo)
    if (i.t == t)
      return i;
  return kInfo[0];
}
} // namespace

size_t dtypeSize(DType t) { return info(t).size; }
const char *dtypeName(DType t) { return info(t).name; }
const char *dtypeSafetensorsName(DType t) { return info(t).st; }

std::optional<DType> parseDTypeName(const std::string &s) {
  for (const Info &i : kInfo)
    if (s == i.name)
      return i.t;
  if (s == "u8")
    return DType::U8;
  return std::nullopt;
}

std::optional<DType> parseSafetensorsDType(const std::string &s) {
  for (const Info &i : kInfo)
    if (s == i.st)
      return i.t;
  return std::nullopt;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

std::string HostTensor::typeString() const {
  std::string s = shapeString(shape);
  return s + (s.empty() ? "" : "x") + dtypeName(dtype);
}

static float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {
      exp = 127 - 15 + 1;
      while (!(man & 0x400)) {
        man <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((man & 0x3FF) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double HostTensor::at(int64_t i) const {
  const uint8_t *p = data.data() + i * static_cast<int64_t>(dtypeSize(dtype));
  auto load = [&](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return static_cast<double>(v);
  };
  switch (dtype) {
  case DType::F32: return load(float());
  case DType::F64: return load(double());
  case DType::I64: return load(int64_t());
  case DType::I32: return load(int32_t());
  case DType::I16: return load(int16_t());
  case DType::I8: return load(int8_t());
  case DType::U8: return load(uint8_t());
  case DType::U16: return load(uint16_t());
  case DType::U32: return load(uint32_t());
  case DType::U64: return load(uint64_t());
  case DType::Bool: return *p ? 1.0 : 0.0;
  case DType::F16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return halfToFloat(h);
  }
  case DType::BF16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  }
  return 0;
}

} // namespace rewire
