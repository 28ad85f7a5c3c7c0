//===- NpyTest.cpp - .npy reading and writing -----------------------------===//
#include "rewire/Support/Npy.h"

#include <cstring>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace rewire;

namespace {
std::string tempPath(const char *name) {
  return std::string(::testing::TempDir()) + "/rewire-npy-" + std::to_string(::getpid()) + name;
}
} // namespace

TEST(Npy, RoundTripsEveryDtype) {
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8, DType::Bool}) {
    HostTensor a;
    a.dtype = t;
    a.shape = {2, 3};
    a.data.resize(6 * dtypeSize(t));
    for (size_t i = 0; i < a.data.size(); ++i)
      a.data[i] = static_cast<uint8_t>(t == DType::Bool ? i % 2 : i * 7 + 1);
    std::string path = tempPath("rt.npy");
    ASSERT_FALSE(writeNpy(path, a));
    HostTensor b;
    auto err = readNpy(path, b);
    ASSERT_FALSE(err) << *err;
    EXPECT_EQ(b.dtype, t);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
    ::unlink(path.c_str());
  }
}

TEST(Npy, ScalarsAndVectors) {
  HostTensor s;
  s.dtype = DType::F32;
  float v = 2.5f;
  s.data.resize(4);
  std::memcpy(s.data.data(), &v, 4);
  std::string path = tempPath("s.npy");
  ASSERT_FALSE(writeNpy(path, s));
  HostTensor r;
  ASSERT_FALSE(readNpy(path, r));
  EXPECT_TRUE(r.shape.empty());
  EXPECT_EQ(r.at(0), 2.5);
  ::unlink(path.c_str());
}

TEST(Npy, RejectsMalformedFiles) {
  auto header = [](const std::string &dict) {
    std::string h = "\x93NUMPY";
    h += '\x01';
    h += '\x00';
    h += static_cast<char>(dict.size());
    h += '\x00';
    return h + dict;
  };
  struct Case {
    std::string bytes;
    const char *error;
  } cases[] = {
      {"nope", "bad magic"},
      {header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }") + std::string(4, 0),
       "holds 4 data bytes"},
      {header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }") + std::string(4, 0),
       "dtype '>f4' is not supported"},
      {header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }") + std::string(4, 0),
       "Fortran-ordered"},
      {header("{'descr': '<f4', 'shape': (1,), }") + std::string(4, 0), "missing"},
      {header("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }"), "non-integer"},
      {header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999,), }"),
       "too large"},
      {header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"), "unknown key"},
  };
  for (const Case &c : cases) {
    HostTensor t;
    auto err = parseNpy(c.bytes, "case", t);
    ASSERT_TRUE(err) << c.error;
    EXPECT_NE(err->find(c.error), std::string::npos) << *err;
  }
}
