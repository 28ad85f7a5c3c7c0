//===- RuntimeTest.cpp - Runtime loading errors and the C API -------------===//
//
// Loading what is not an artifact fails with a message, never a crash; the
// C API answers bad handles and indices with -1/NULL and a message. Running
// real artifacts is covered by the lit tests (they need rewire-compile).
//
//===----------------------------------------------------------------------===//
#include "rewire/Runtime/Runtime.h"
#include "rewire/Runtime/rewire_runtime.h"

#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace rewire::runtime;

TEST(Runtime, MissingFile) {
  std::string error;
  EXPECT_FALSE(Model::load("/nonexistent/model.rwx", error));
  EXPECT_NE(error.find("cannot load artifact '/nonexistent/model.rwx'"), std::string::npos) << error;
}

TEST(Runtime, NotASharedObject) {
  std::string path = std::string(::testing::TempDir()) + "/rewire-rt-" + std::to_string(::getpid());
  std::ofstream(path) << "not an ELF file";
  std::string error;
  EXPECT_FALSE(Model::load(path, error));
  EXPECT_NE(error.find("cannot load artifact"), std::string::npos) << error;
  ::unlink(path.c_str());
}

TEST(Runtime, SharedObjectThatIsNotAnArtifact) {
  std::string error;
  // A system library by absolute path: loads, but has no Rewire metadata.
  for (const char *lib : {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"}) {
    if (::access(lib, R_OK) != 0)
      continue;
    EXPECT_FALSE(Model::load(lib, error));
    EXPECT_NE(error.find("is a shared object but not a Rewire artifact"), std::string::npos) << error;
    return;
  }
  GTEST_SKIP() << "no libm.so.6 at the Debian paths";
}

TEST(RuntimeCApi, NullAndBadIndices) {
  EXPECT_EQ(rewire_model_load(nullptr, nullptr), nullptr);
  EXPECT_STREQ(rewire_last_error(), "rewire_model_load: artifact path is NULL");
  EXPECT_EQ(rewire_model_load("/nonexistent.rwx", nullptr), nullptr);
  EXPECT_NE(std::string(rewire_last_error()).find("cannot load artifact"), std::string::npos);
  EXPECT_EQ(rewire_function_count(nullptr), -1);
  EXPECT_EQ(rewire_function_name(nullptr, 0), nullptr);
  EXPECT_EQ(rewire_function_find(nullptr, "forward"), -1);
  EXPECT_EQ(rewire_function_num_inputs(nullptr, 3), -1);
  rewire_tensor t;
  EXPECT_EQ(rewire_function_input(nullptr, 0, 0, &t), -1);
  EXPECT_EQ(rewire_model_run(nullptr, 0, 0, nullptr, 0, nullptr), -1);
  EXPECT_EQ(rewire_model_check(nullptr, 0, 0, nullptr, 0, nullptr), -1);
  EXPECT_STREQ(rewire_last_error(), "invalid model or function index 0");
  EXPECT_EQ(rewire_model_describe(nullptr), nullptr);
  EXPECT_STREQ(rewire_last_error(), "rewire_model_describe: model is NULL");
  rewire_model_free(nullptr);
}
