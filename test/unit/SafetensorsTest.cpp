//===- SafetensorsTest.cpp - Safetensors writer and strict reader ---------===//
//
// Round trip through the atomic writer and the validating reader, and the
// reader's rejection of malformed headers, ranges and sizes.
//
//===----------------------------------------------------------------------===//
#include "rewire/Support/Safetensors.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace rewire;

namespace {
std::string tempPath(const char *name) {
  return std::string(::testing::TempDir()) + "rewire-st-" + name + "-" +
         std::to_string(::getpid());
}

std::string bytesOf(std::initializer_list<float> values) {
  std::string s(values.size() * 4, '\0');
  std::memcpy(s.data(), values.begin(), s.size());
  return s;
}

void writeRaw(const std::string &path, const std::string &header,
              const std::string &data) {
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out.put(static_cast<char>(n >> (8 * i)));
  out << header << data;
}
} // namespace

TEST(Safetensors, RoundTrip) {
  std::string path = tempPath("roundtrip");
  std::vector<SafetensorsEntry> entries = {
      {"a.weight", "F32", {2, 2}, bytesOf({1.5f, -2.f, 3.25f, 0.125f})},
      {"quote\"name", "F32", {1}, bytesOf({7.f})},
      {"ids", "I64", {0}, ""}};
  ASSERT_FALSE(writeSafetensors(path, entries, {{"source", "test"}}));
  SafetensorsFile file;
  auto err = readSafetensors(path, file);
  ASSERT_FALSE(err) << *err;
  ASSERT_EQ(file.tensors.size(), 3u);
  EXPECT_EQ(file.tensors["a.weight"].data, entries[0].data);
  EXPECT_EQ(file.tensors["a.weight"].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(file.tensors["quote\"name"].data, entries[1].data);
  EXPECT_EQ(file.metadata["source"], "test");
  std::remove(path.c_str());
}

TEST(Safetensors, WriterRejectsBadEntries) {
  std::string path = tempPath("bad");
  EXPECT_TRUE(writeSafetensors(path, {{"x", "F32", {3}, bytesOf({1.f})}}));
  EXPECT_TRUE(writeSafetensors(path, {{"x", "Q7", {1}, "a"}}));
  EXPECT_TRUE(writeSafetensors(path, {{"x", "F32", {1}, bytesOf({1.f})},
                                      {"x", "F32", {1}, bytesOf({2.f})}}));
  // A failed write leaves nothing behind (no partial file).
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TEST(Safetensors, ReaderRejectsMalformedFiles) {
  std::string path = tempPath("malformed");
  std::string four = bytesOf({1.f});
  struct Case {
    const char *header;
    std::string data;
    const char *why;
  } cases[] = {
      {R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", four, "outside"},
      {R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four, "its shape needs"},
      {R"({"x":{"dtype":"Q9","shape":[1],"data_offsets":[0,4]}})", four, "unknown dtype"},
      {R"({"x":{"dtype":"F32","shape":[1]}})", four, "lacks"},
      {R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", four, "overlap"},
      {R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four, "non-negative"},
      {R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} junk)", four, "trailing"},
      {R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4])", four, "expected"},
      {R"({"x\uZZZZ":{}})", four, "escape"},
  };
  for (const Case &c : cases) {
    writeRaw(path, c.header, c.data);
    SafetensorsFile file;
    auto err = readSafetensors(path, file);
    ASSERT_TRUE(err) << c.header;
    EXPECT_NE(err->find(c.why), std::string::npos) << *err;
  }
  // Header length larger than the file.
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string("\xff\xff\xff\x00\x00\x00\x00\x00", 8) << "{}";
  }
  SafetensorsFile file;
  EXPECT_TRUE(readSafetensors(path, file));
  std::remove(path.c_str());
}
