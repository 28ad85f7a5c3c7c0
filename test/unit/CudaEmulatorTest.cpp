//===- CudaEmulatorTest.cpp - The CUDA emulator's SIMT engine -------------===//
//
// Kernels written by hand against the calls rewire-kernels-to-emulator
// generates: shuffles follow PTX shfl.sync (member lanes, out-of-range
// lanes reading their own value), barriers order the block, and the
// divergence a GPU would not survive fails the launch.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/emulator/Emulator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

extern "C" {
int64_t rewire_emu_thread_id(int32_t);
int64_t rewire_emu_block_id(int32_t);
int64_t rewire_emu_block_dim(int32_t);
void rewire_emu_barrier();
void rewire_emu_check(bool, int32_t);
float rewire_emu_shuffle_f32(float, int32_t, int32_t, int32_t);
bool rewire_emu_shuffle_valid(int32_t, int32_t, int32_t);
}

namespace {

using namespace rewire::runtime::cuda;
using namespace rewire::runtime::cuda::emulator;

constexpr int kXor = 0, kDown = 1, kUp = 2, kIdx = 3;

CUresult launch(void (*fn)(void **), unsigned blocks, unsigned threads, float *out,
                bool sync = true) {
  Kernel k{"test", fn, 1, sync};
  unsigned grid[3] = {blocks, 1, 1}, block[3] = {threads, 1, 1};
  return runGrid(k, grid, block, {out});
}

int64_t globalId() { return rewire_emu_block_id(0) * rewire_emu_block_dim(0) + rewire_emu_thread_id(0); }

TEST(CudaEmulator, WarpButterflySumsEachWarp) {
  std::vector<float> out(128, -1.0f);
  auto kernel = [](void **b) {
    float v = static_cast<float>(rewire_emu_thread_id(0));
    for (int offset = 16; offset > 0; offset /= 2)
      v += rewire_emu_shuffle_f32(v, offset, 32, kXor);
    static_cast<float *>(b[0])[globalId()] = v;
  };
  ASSERT_EQ(launch(kernel, 2, 64, out.data()), kSuccess);
  for (int i = 0; i < 128; ++i) {
    int warp = (i % 64) / 32;
    EXPECT_EQ(out[i], 32.0f * 32 * warp + 31 * 32 / 2) << i;
  }
}

TEST(CudaEmulator, ModesReadOwnValueOutOfRange) {
  std::vector<float> out(4 * 32);
  auto kernel = [](void **b) {
    float *o = static_cast<float *>(b[0]);
    int t = static_cast<int>(rewire_emu_thread_id(0));
    float v = static_cast<float>(t);
    o[t] = rewire_emu_shuffle_f32(v, 1, 32, kDown);
    o[32 + t] = rewire_emu_shuffle_f32(v, 1, 32, kUp);
    o[64 + t] = rewire_emu_shuffle_f32(v, 5, 32, kIdx);
    o[96 + t] = rewire_emu_shuffle_valid(1, 32, kDown) ? 1.0f : 0.0f;
  };
  ASSERT_EQ(launch(kernel, 1, 32, out.data()), kSuccess);
  for (int t = 0; t < 32; ++t) {
    EXPECT_EQ(out[t], t == 31 ? 31 : t + 1);
    EXPECT_EQ(out[32 + t], t == 0 ? 0 : t - 1);
    EXPECT_EQ(out[64 + t], 5);
    EXPECT_EQ(out[96 + t], t == 31 ? 0 : 1);
  }
}

TEST(CudaEmulator, PartialWarpShuffleWhileOthersWaitAtBarrier) {
  // As MLIR's all-reduce lowering does: only the first lanes (one per warp
  // of the block) combine the partial results.
  std::vector<float> out(64, -1.0f);
  auto kernel = [](void **b) {
    int t = static_cast<int>(rewire_emu_thread_id(0));
    float v = static_cast<float>(t + 1);
    if (t < 2)
      v += rewire_emu_shuffle_f32(v, 1, 2, kXor);
    rewire_emu_barrier();
    static_cast<float *>(b[0])[t] = v;
  };
  ASSERT_EQ(launch(kernel, 1, 64, out.data()), kSuccess);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], 3.0f);
  EXPECT_EQ(out[2], 3.0f);
}

TEST(CudaEmulator, BarrierOrdersTheBlock) {
  std::vector<float> out(256);
  auto kernel = [](void **b) {
    static float shared[256];
    int t = static_cast<int>(rewire_emu_thread_id(0));
    shared[t] = static_cast<float>(t);
    rewire_emu_barrier();
    static_cast<float *>(b[0])[t] = shared[(t + 1) % 256];
  };
  ASSERT_EQ(launch(kernel, 1, 256, out.data()), kSuccess);
  for (int t = 0; t < 256; ++t)
    EXPECT_EQ(out[t], (t + 1) % 256);
}

TEST(CudaEmulator, ShuffleWithAnExitedMemberLaneFails) {
  std::vector<float> out(32);
  auto kernel = [](void **b) {
    int t = static_cast<int>(rewire_emu_thread_id(0));
    if (t == 0)
      return;
    static_cast<float *>(b[0])[t] = rewire_emu_shuffle_f32(1.0f, 1, 32, kXor);
  };
  EXPECT_EQ(launch(kernel, 1, 32, out.data()), kLaunchFailed);
}

TEST(CudaEmulator, LaneWaitingElsewhereIsADeadlock) {
  std::vector<float> out(32);
  auto kernel = [](void **b) {
    int t = static_cast<int>(rewire_emu_thread_id(0));
    if (t == 0)
      rewire_emu_barrier();
    else
      static_cast<float *>(b[0])[t] = rewire_emu_shuffle_f32(1.0f, 1, 32, kXor);
  };
  EXPECT_EQ(launch(kernel, 1, 32, out.data()), kLaunchFailed);
}

TEST(CudaEmulator, LaneOutsideItsMaskFails) {
  std::vector<float> out(32);
  auto kernel = [](void **b) {
    int t = static_cast<int>(rewire_emu_thread_id(0));
    static_cast<float *>(b[0])[t] = rewire_emu_shuffle_f32(1.0f, 1, 16, kXor);
  };
  EXPECT_EQ(launch(kernel, 1, 32, out.data()), kLaunchFailed);
}

TEST(CudaEmulator, OutOfBoundsAccessStopsTheLaunch) {
  std::vector<float> out(64, -1.0f);
  auto kernel = [](void **b) {
    int64_t i = globalId();
    rewire_emu_check(i < 48, 3);
    static_cast<float *>(b[0])[i] = 1.0f;
  };
  EXPECT_EQ(launch(kernel, 2, 32, out.data()), kIllegalAddress);
  // The faulting thread's store never happened.
  EXPECT_EQ(out[48], -1.0f);
}

TEST(CudaEmulator, PlainKernelsRunEveryThreadAndStopOnFaults) {
  // Kernels without barriers or shuffles run as plain calls.
  std::vector<float> out(96, -1.0f);
  auto kernel = [](void **b) {
    int64_t i = globalId();
    rewire_emu_check(i < 80, 0);
    static_cast<float *>(b[0])[i] = static_cast<float>(i);
  };
  EXPECT_EQ(launch(kernel, 3, 32, out.data(), /*sync=*/false), kIllegalAddress);
  for (int i = 0; i < 80; ++i)
    EXPECT_EQ(out[i], i);
  EXPECT_EQ(out[80], -1.0f);
  std::vector<float> all(96, -1.0f);
  auto fill = [](void **b) { static_cast<float *>(b[0])[globalId()] = 2.0f; };
  ASSERT_EQ(launch(fill, 3, 32, all.data(), /*sync=*/false), kSuccess);
  for (float v : all)
    EXPECT_EQ(v, 2.0f);
}

TEST(CudaEmulator, InvalidGeometryIsRejected) {
  std::vector<float> out(1);
  auto kernel = [](void **) {};
  EXPECT_EQ(launch(kernel, 1, 2048, out.data()), kInvalidValue);
  EXPECT_EQ(launch(kernel, 0, 32, out.data()), kInvalidValue);
}

} // namespace
