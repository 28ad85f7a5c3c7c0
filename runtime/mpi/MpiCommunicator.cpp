//===- MpiCommunicator.cpp - Communicator on MPI --------------------------===//
#include "rewire/Runtime/MpiCommunicator.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace rewire::runtime {

namespace {

/// Values per bucket of a sum (16 MiB of f32).
constexpr size_t kBucket = size_t(1) << 22;

std::optional<std::string> mpiError(int code, const char *what) {
  if (code == MPI_SUCCESS)
    return std::nullopt;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string("MPI ") + what + " failed: " + std::string(text, static_cast<size_t>(len));
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(int rank, int size, bool deterministic)
      : rank_(rank), size_(size), deterministic(deterministic) {}
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::optional<std::string> allReduceSum(float *data, size_t n) override {
    return sum(data, n, MPI_FLOAT);
  }
  std::optional<std::string> allReduceSum(double *data, size_t n) override {
    return sum(data, n, MPI_DOUBLE);
  }

  std::optional<std::string> startSum(float *data, size_t n) override {
    return start(data, n, MPI_FLOAT);
  }

  void progress() override {
    if (pending.empty())
      return;
    // Open MPI moves non-blocking collectives on only inside MPI calls.
    int done = 0;
    if (MPI_Testall(static_cast<int>(pending.size()), pending.data(), &done,
                    MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
        done)
      pending.clear();
  }

  std::optional<std::string> finishSums() override {
    if (pending.empty())
      return std::nullopt;
    auto e = mpiError(MPI_Waitall(static_cast<int>(pending.size()), pending.data(),
                                  MPI_STATUSES_IGNORE),
                      "all-reduce");
    pending.clear();
    return e;
  }

  std::optional<std::string> broadcast(void *data, size_t bytes, int root) override {
    auto *p = static_cast<char *>(data);
    for (size_t at = 0; at < bytes; at += INT_MAX) {
      int n = static_cast<int>(std::min<size_t>(INT_MAX, bytes - at));
      if (auto e = mpiError(MPI_Bcast(p + at, n, MPI_BYTE, root, MPI_COMM_WORLD), "broadcast"))
        return e;
    }
    return std::nullopt;
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  bool rankOrder() const override { return deterministic; }

  std::string describe() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<size_t>(len));
    v = v.substr(0, v.find_first_of(",\n"));
    return v + ", " + std::to_string(size_) + " ranks" +
           (deterministic ? ", deterministic reduction (rank order)" : "");
  }

private:
  template <typename T>
  std::optional<std::string> sum(T *data, size_t n, MPI_Datatype type) {
    if (auto e = start(data, n, type))
      return e;
    return finishSums();
  }

  /// Starts the sum of `data`; the rank-order sum gathers every rank's
  /// values, so it is done at once.
  template <typename T>
  std::optional<std::string> start(T *data, size_t n, MPI_Datatype type) {
    if (size_ == 1 || n == 0)
      return std::nullopt;
    if (deterministic)
      return rankOrderSum(data, n, type);
    return post(data, n, type);
  }

  /// Posts the sum of `data` in buckets of kBucket values.
  template <typename T>
  std::optional<std::string> post(T *data, size_t n, MPI_Datatype type) {
    for (size_t at = 0; at < n; at += kBucket) {
      pending.emplace_back();
      int count = static_cast<int>(std::min(kBucket, n - at));
      if (auto e = mpiError(MPI_Iallreduce(MPI_IN_PLACE, data + at, count, type, MPI_SUM,
                                           MPI_COMM_WORLD, &pending.back()),
                            "all-reduce")) {
        pending.pop_back();
        return e;
      }
    }
    return std::nullopt;
  }

  template <typename T>
  std::optional<std::string> rankOrderSum(T *data, size_t n, MPI_Datatype type) {
    std::vector<T> all;
    for (size_t at = 0; at < n; at += kBucket) {
      size_t count = std::min(kBucket, n - at);
      all.resize(count * static_cast<size_t>(size_));
      if (auto e = mpiError(MPI_Allgather(data + at, static_cast<int>(count), type, all.data(),
                                          static_cast<int>(count), type, MPI_COMM_WORLD),
                            "all-gather"))
        return e;
      for (size_t i = 0; i < count; ++i) {
        T s = all[i];
        for (int r = 1; r < size_; ++r)
          s += all[static_cast<size_t>(r) * count + i];
        data[at + i] = s;
      }
    }
    return std::nullopt;
  }

  int rank_, size_;
  bool deterministic;
  /// Sums started and not yet waited for.
  std::vector<MPI_Request> pending;
};

} // namespace

std::unique_ptr<Communicator> createMpiCommunicator(bool deterministic, std::string &error) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
    error = "MPI_Init failed (is this process started by mpirun?)";
    return nullptr;
  }
  // Errors come back as codes (and messages), not as the default abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::make_unique<MpiCommunicator>(rank, size, deterministic);
}

} // namespace rewire::runtime
