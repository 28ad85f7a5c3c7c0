//===- Simt.cpp - GPU threads as fibers -----------------------------------===//
//
// A block runs as one fiber (ucontext) per thread on the calling OS thread.
// The kernels call back for their ids, barriers and shuffles (the
// rewire_emu_* functions, see rewire-kernels-to-emulator): a barrier or a
// shuffle parks the fiber; when every running fiber is parked, the lanes
// of a warp's shuffle (its member mask) exchange values once all wait at
// it (PTX shfl.sync semantics), and a block whose live threads all wait at
// a barrier goes on. Anything else is divergence the GPU would not survive either
// (a shuffle whose member lanes exited, a barrier some threads never reach):
// the launch fails with a message saying which.
//
//===----------------------------------------------------------------------===//
#include "Emulator.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sys/mman.h>
#include <ucontext.h>

namespace rewire::runtime::cuda::emulator {
namespace {

constexpr unsigned kWarpSize = 32;
constexpr size_t kStackBytes = 256 << 10;

enum class State { ready, barrier, shuffle, done, faulted };

struct Thread {
  ucontext_t context;
  State state = State::ready;
  unsigned id[3] = {0, 0, 0};
  unsigned lane = 0, warp = 0;
  uint32_t value = 0, result = 0;
  int offset = 0, width = 0, mode = 0;
};

/// The launch in progress (one at a time: `launchMutex`).
struct Launch {
  const Kernel *kernel = nullptr;
  void **buffers = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, blockId[3] = {0, 0, 0};
  std::vector<Thread> threads;
  Thread *current = nullptr;
  ucontext_t scheduler;
  /// The first out-of-bounds access of the block: its number in the kernel.
  int faultSite = -1;
};

std::mutex launchMutex;
Launch launch;
std::vector<char *> stacks;

void threadMain() { launch.kernel->call(launch.buffers); launch.current->state = State::done; }

void park(State state) {
  Thread *t = launch.current;
  t->state = state;
  swapcontext(&t->context, &launch.scheduler);
}

/// The lane `t`'s shuffle reads, and whether it is in range, as
/// shfl.sync computes them from the clamp value the NVVM lowering passes
/// (width - 1, or (32 - width) << 8 for `up`).
std::pair<unsigned, bool> source(unsigned lane, int offset, int width, int mode) {
  unsigned c = mode == 2 ? (32u - width) << 8 : static_cast<unsigned>(width - 1);
  unsigned b = static_cast<unsigned>(offset) & 31, clamp = c & 31, segmask = (c >> 8) & 31;
  unsigned maxLane = (lane & segmask) | (clamp & ~segmask), minLane = lane & segmask;
  int j;
  bool valid;
  switch (mode) {
  case 2: // up
    j = static_cast<int>(lane) - static_cast<int>(b);
    valid = j >= static_cast<int>(maxLane);
    break;
  case 1: // down
    j = static_cast<int>(lane + b);
    valid = j <= static_cast<int>(maxLane);
    break;
  case 3: // idx
    j = static_cast<int>(minLane | (b & ~segmask));
    valid = j <= static_cast<int>(maxLane);
    break;
  default: // xor
    j = static_cast<int>(lane ^ b);
    valid = j <= static_cast<int>(maxLane);
    break;
  }
  return {valid ? static_cast<unsigned>(j) : lane, valid};
}

std::string where() {
  return "kernel '" + launch.kernel->name + "', block (" + std::to_string(launch.blockId[0]) +
         "," + std::to_string(launch.blockId[1]) + "," + std::to_string(launch.blockId[2]) + ")";
}

/// Exchanges the values of warps whose shuffle's member lanes (0 to
/// width - 1: the mask the NVVM lowering passes) all wait at it; lanes
/// outside the mask may be anywhere. Returns false with `error` set for a
/// shuffle the GPU cannot do (lanes disagreeing on the width, a lane
/// outside its own mask, a member lane that exited).
bool shuffle(bool &progressed, std::string &error) {
  std::vector<Thread> &ts = launch.threads;
  for (size_t first = 0; first < ts.size(); first += kWarpSize) {
    size_t end = std::min(ts.size(), first + kWarpSize);
    int width = 0;
    for (size_t i = first; i < end; ++i) {
      const Thread &t = ts[i];
      if (t.state != State::shuffle)
        continue;
      if (t.width < 1 || t.width > 32 || (width && t.width != width) ||
          t.lane >= static_cast<unsigned>(t.width)) {
        error = where() + ": lane " + std::to_string(t.lane) + " of warp " +
                std::to_string(t.warp) + " shuffles with width " + std::to_string(t.width) +
                (width && t.width != width ? ", another lane with " + std::to_string(width)
                                           : std::string(", which excludes it"));
        return false;
      }
      width = t.width;
    }
    if (!width)
      continue;
    size_t members = first + static_cast<size_t>(width);
    bool ready = true;
    for (size_t i = first; i < members; ++i) {
      if (i >= end || ts[i].state == State::done) {
        error = where() + ": warp " + std::to_string(first / kWarpSize) +
                " shuffles over " + std::to_string(width) + " lanes but lane " +
                std::to_string(i - first) + (i >= end ? " does not exist" : " has exited");
        return false;
      }
      ready &= ts[i].state == State::shuffle;
    }
    if (!ready)
      continue;
    for (size_t i = first; i < members; ++i) {
      Thread &t = ts[i];
      t.result = ts[first + source(t.lane, t.offset, t.width, t.mode).first].value;
    }
    for (size_t i = first; i < members; ++i)
      ts[i].state = State::ready;
    progressed = true;
  }
  return true;
}

/// Thread `i` of the block, fresh: its ids, lane and warp.
void reset(Thread &t, size_t i) {
  t = Thread{};
  t.id[0] = i % launch.block[0];
  t.id[1] = (i / launch.block[0]) % launch.block[1];
  t.id[2] = i / (launch.block[0] * launch.block[1]);
  t.lane = i % kWarpSize;
  t.warp = i / kWarpSize;
}

void reportFault(const Thread &t) {
  report(where() + ", thread (" + std::to_string(t.id[0]) + "," + std::to_string(t.id[1]) + "," +
         std::to_string(t.id[2]) + "): memory access #" + std::to_string(launch.faultSite) +
         " of the kernel is out of its buffer's bounds (rewire-opt "
         "--rewire-kernels-to-emulator numbers the accesses)");
}

/// A block of a kernel whose threads never wait for each other: each runs
/// to its end in turn, on the calling stack (a bounds check still parks:
/// it switches back to `scheduler`, captured before each thread).
CUresult runBlockPlain() {
  std::vector<Thread> &ts = launch.threads;
  launch.faultSite = -1;
  for (size_t i = 0; i < ts.size(); ++i) {
    Thread &t = ts[i];
    reset(t, i);
    launch.current = &t;
    volatile bool faulted = false;
    getcontext(&launch.scheduler);
    if (faulted && t.state != State::faulted) {
      report(where() + ": internal error: a kernel marked as not synchronizing waited");
      return kLaunchFailed;
    }
    if (faulted) {
      reportFault(t);
      return kIllegalAddress;
    }
    faulted = true;
    launch.kernel->call(launch.buffers);
    faulted = false;
  }
  return kSuccess;
}

CUresult runBlock() {
  if (!launch.kernel->sync)
    return runBlockPlain();
  std::vector<Thread> &ts = launch.threads;
  for (size_t i = 0; i < ts.size(); ++i) {
    Thread &t = ts[i];
    reset(t, i);
    getcontext(&t.context);
    t.context.uc_stack.ss_sp = stacks[i];
    t.context.uc_stack.ss_size = kStackBytes;
    t.context.uc_link = &launch.scheduler;
    makecontext(&t.context, threadMain, 0);
  }
  launch.faultSite = -1;
  for (;;) {
    size_t done = 0, barrier = 0, waiting = 0;
    for (Thread &t : ts) {
      if (t.state == State::ready) {
        launch.current = &t;
        swapcontext(&launch.scheduler, &t.context);
      }
      if (t.state == State::faulted) {
        reportFault(t);
        return kIllegalAddress;
      }
      done += t.state == State::done;
      barrier += t.state == State::barrier;
      waiting += t.state == State::shuffle;
    }
    if (done == ts.size())
      return kSuccess;
    bool progressed = false;
    std::string error;
    if (!shuffle(progressed, error)) {
      report(error);
      return kLaunchFailed;
    }
    if (progressed)
      continue;
    if (barrier + done == ts.size()) {
      for (Thread &t : ts)
        if (t.state == State::barrier)
          t.state = State::ready;
      continue;
    }
    report(where() + ": deadlock: " + std::to_string(barrier) + " threads wait at a barrier, " +
           std::to_string(waiting) + " at a shuffle whose member lanes are elsewhere, " +
           std::to_string(done) + " have exited");
    return kLaunchFailed;
  }
}

} // namespace

void report(const std::string &message) {
  std::fprintf(stderr, "rewire CUDA emulator: %s\n", message.c_str());
}

CUresult runGrid(const Kernel &kernel, const unsigned grid[3], const unsigned block[3],
                 std::vector<void *> buffers) {
  std::lock_guard<std::mutex> lock(launchMutex);
  size_t threads = static_cast<size_t>(block[0]) * block[1] * block[2];
  if (threads == 0 || threads > 1024 || block[2] > 64 || grid[0] == 0 || grid[1] == 0 ||
      grid[2] == 0 || grid[1] > 65535 || grid[2] > 65535) {
    report("kernel '" + kernel.name + "': invalid launch geometry");
    return kInvalidValue;
  }
  while (stacks.size() < threads) {
    void *s = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED)
      return kOutOfMemory;
    stacks.push_back(static_cast<char *>(s));
  }
  launch.kernel = &kernel;
  launch.buffers = buffers.data();
  std::memcpy(launch.grid, grid, sizeof(launch.grid));
  std::memcpy(launch.block, block, sizeof(launch.block));
  launch.threads.assign(threads, Thread{});
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        launch.blockId[0] = x;
        launch.blockId[1] = y;
        launch.blockId[2] = z;
        if (CUresult r = runBlock())
          return r;
      }
  return kSuccess;
}

} // namespace rewire::runtime::cuda::emulator

using namespace rewire::runtime::cuda::emulator;

// What the emulator kernels call (rewire-kernels-to-emulator).
extern "C" {
int64_t rewire_emu_thread_id(int32_t d) { return launch.current->id[d % 3]; }
int64_t rewire_emu_block_id(int32_t d) { return launch.blockId[d % 3]; }
int64_t rewire_emu_block_dim(int32_t d) { return launch.block[d % 3]; }
int64_t rewire_emu_grid_dim(int32_t d) { return launch.grid[d % 3]; }
void rewire_emu_barrier() { park(State::barrier); }
// A faulted thread is never resumed: its access does not happen.
void rewire_emu_check(bool inBounds, int32_t site) {
  if (inBounds)
    return;
  launch.faultSite = site;
  park(State::faulted);
}

static uint32_t shuffleBits(uint32_t value, int32_t offset, int32_t width, int32_t mode) {
  Thread *t = launch.current;
  t->value = value;
  t->offset = offset;
  t->width = width;
  t->mode = mode;
  park(State::shuffle);
  return launch.current->result;
}

float rewire_emu_shuffle_f32(float value, int32_t offset, int32_t width, int32_t mode) {
  uint32_t bits, out;
  float result;
  std::memcpy(&bits, &value, 4);
  out = shuffleBits(bits, offset, width, mode);
  std::memcpy(&result, &out, 4);
  return result;
}
int32_t rewire_emu_shuffle_i32(int32_t value, int32_t offset, int32_t width, int32_t mode) {
  return static_cast<int32_t>(shuffleBits(static_cast<uint32_t>(value), offset, width, mode));
}
bool rewire_emu_shuffle_valid(int32_t offset, int32_t width, int32_t mode) {
  return source(launch.current->lane, offset, width, mode).second;
}
}
