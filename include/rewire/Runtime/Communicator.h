//===- Communicator.h - The processes a training run spans ------*- C++ -*-===//
//
// What data-parallel training needs of a distributed engine: the rank and
// the number of processes, a sum over all of them (the gradients, the
// losses; started without waiting, so the gradients finished first are
// summed while the backward goes on), a broadcast from one (the initial state) and an abort. The
// trainer (Trainer.h) uses it through this interface only, so the runtime
// links no MPI; runtime/mpi/ implements it on MPI (MpiCommunicator.h).
// Without one, training is one process.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_COMMUNICATOR_H
#define REWIRE_RUNTIME_COMMUNICATOR_H

#include <cstddef>
#include <optional>
#include <string>

namespace rewire::runtime {

class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// data[i] = the sum of data[i] over all ranks, the same bits on every
  /// rank. Errors are messages.
  virtual std::optional<std::string> allReduceSum(float *data, size_t n) = 0;
  virtual std::optional<std::string> allReduceSum(double *data, size_t n) = 0;
  /// Starts allReduceSum(data, n) and returns; `data` is the sum once
  /// finishSums returns, and not to be touched before. Every rank starts
  /// the same sums in the same order. The default sums at once.
  virtual std::optional<std::string> startSum(float *data, size_t n) {
    return allReduceSum(data, n);
  }
  /// Lets the started sums move on (cheap; called while computing).
  virtual void progress() {}
  /// Waits for every started sum.
  virtual std::optional<std::string> finishSums() { return std::nullopt; }
  /// `bytes` from rank `root` to every rank.
  virtual std::optional<std::string> broadcast(void *data, size_t bytes, int root) = 0;
  /// Ends every process of the run with `code` (a rank that failed while
  /// the others wait in a collective).
  [[noreturn]] virtual void abort(int code) = 0;
  /// Whether sums go in rank order (the same bits every run).
  virtual bool rankOrder() const { return false; }
  /// "Open MPI v4.1.4, 2 ranks, deterministic reduction", for logs.
  virtual std::string describe() const = 0;
};

/// Whether this process was started by mpirun (Open MPI's, MPICH's or a
/// PMI launcher's environment variables are set).
bool launchedByMpi();

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_COMMUNICATOR_H
