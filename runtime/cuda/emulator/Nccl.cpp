//===- Nccl.cpp - The NCCL calls Rewire makes, on MPI ---------------------===//
//
// The emulator's stand-in for libnccl.so.2 ($REWIRE_LIBNCCL): each rank of
// an mpirun is one emulated GPU, and ncclAllReduce is MPI_Allreduce on its
// "device" memory (host memory), run in stream order like the emulator's
// other work. What it checks is the runtime's use of NCCL: the id made on
// one rank and given to all (ncclCommInitRank compares every rank's), the
// rank count and ranks, buffers in device memory, f32 sums. Not NCCL's own
// algorithms, transports or the GPU (docs/distributed.md). Built where MPI
// is (REWIRE_HAVE_MPI); needs MPI initialized (rewire-train does it).
//
//===----------------------------------------------------------------------===//
#include "Emulator.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <string>
#include <unistd.h>

using namespace rewire::runtime::cuda;
using namespace rewire::runtime::cuda::emulator;

struct rewire::runtime::cuda::ncclComm {
  MPI_Comm comm = MPI_COMM_NULL;
};

namespace {

// ncclResult_t values (nccl.h) beyond Driver.h's kNcclSuccess.
constexpr int kNcclSystemError = 2, kNcclInvalidArgument = 4, kNcclInvalidUsage = 5;

uint64_t hashId(const NcclUniqueId &id) {
  uint64_t h = 1469598103934665603ull;
  for (char c : id.internal)
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

} // namespace

extern "C" {

int ncclGetVersion(int *version) {
  if (!version)
    return kNcclInvalidArgument;
  *version = 22800; // the API of NCCL 2.28, emulated
  return kNcclSuccess;
}

const char *ncclGetErrorString(int result) {
  switch (result) {
  case kNcclSuccess:
    return "no error";
  case kNcclSystemError:
    return "unhandled system error (emulated NCCL: an MPI call failed)";
  case kNcclInvalidArgument:
    return "invalid argument (emulated NCCL)";
  case kNcclInvalidUsage:
    return "invalid usage (emulated NCCL: run under mpirun, one rank per emulated GPU)";
  default:
    return "unknown result (emulated NCCL)";
  }
}

int ncclGetUniqueId(NcclUniqueId *id) {
  if (!id)
    return kNcclInvalidArgument;
  // Different on every call and process, as NCCL's (which names a socket).
  uint64_t seed = static_cast<uint64_t>(
                      std::chrono::steady_clock::now().time_since_epoch().count()) ^
                  (static_cast<uint64_t>(::getpid()) << 32);
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    id->internal[i] = static_cast<char>(seed >> 56);
  }
  return kNcclSuccess;
}

int ncclCommInitRank(ncclComm_t *comm, int nranks, NcclUniqueId id, int rank) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!comm || !initialized)
    return kNcclInvalidUsage;
  int worldRank = 0, worldSize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (nranks != worldSize || rank != worldRank) {
    report("ncclCommInitRank(nranks " + std::to_string(nranks) + ", rank " +
           std::to_string(rank) + ") in an mpirun of " + std::to_string(worldSize) +
           " ranks, this one " + std::to_string(worldRank));
    return kNcclInvalidUsage;
  }
  // Every rank must have been given the same id.
  uint64_t h = hashId(id), lo = 0, hi = 0;
  if (MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS ||
      MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    return kNcclSystemError;
  if (lo != hi) {
    report("ncclCommInitRank: the ranks were given different ids (each must get rank 0's)");
    return kNcclInvalidArgument;
  }
  auto *c = new ncclComm;
  if (MPI_Comm_dup(MPI_COMM_WORLD, &c->comm) != MPI_SUCCESS) {
    delete c;
    return kNcclSystemError;
  }
  *comm = c;
  return kNcclSuccess;
}

int ncclCommDestroy(ncclComm_t comm) {
  if (!comm)
    return kNcclInvalidArgument;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Comm_free(&comm->comm);
  delete comm;
  return kNcclSuccess;
}

// Work runs as it is enqueued, in order: a group needs nothing more.
int ncclGroupStart() { return kNcclSuccess; }
int ncclGroupEnd() { return kNcclSuccess; }

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, ncclComm_t comm,
                  CUstream stream) {
  if (!comm || type != kNcclFloat32 || op != kNcclSum || count > static_cast<size_t>(INT_MAX) ||
      !isDeviceMemory(send, count * 4) || !isDeviceMemory(recv, count * 4)) {
    report("ncclAllReduce: only f32 sums of device memory are emulated");
    return kNcclInvalidArgument;
  }
  CUresult r = enqueue(stream, [=]() -> CUresult {
    const void *from = send == recv ? MPI_IN_PLACE : send;
    if (MPI_Allreduce(from, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm->comm) !=
        MPI_SUCCESS) {
      report("ncclAllReduce: MPI_Allreduce failed");
      return kLaunchFailed;
    }
    return kSuccess;
  });
  return r == kSuccess ? kNcclSuccess : kNcclSystemError;
}

} // extern "C"
