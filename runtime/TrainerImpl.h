//===- TrainerImpl.h - The trainer's state, shared by its files -*- C++ -*-===//
//
// Trainer.cpp binds and runs; TrainingData.cpp reads and batches the
// examples; Checkpoint.cpp writes, resumes and cleans up checkpoints and
// logs. Internal to the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_TRAINERIMPL_H
#define REWIRE_RUNTIME_TRAINERIMPL_H

#include "rewire/Runtime/Trainer.h"

#include <cstdio>
#include <map>

namespace rewire::runtime {

inline TrainError trainError(TrainFailure failure, std::string message) {
  return TrainError{failure, std::move(message)};
}

/// Why a tensor read from a file (`dtype`, `shape`) cannot stand for
/// `want`: a transposed, int32 or f16 tensor of the right byte count is not
/// an f32 weight. Nothing when it fits.
std::optional<std::string> tensorMismatch(const std::string &dtype,
                                          const std::vector<int64_t> &shape,
                                          const HostTensor &want);

/// Examples for training or validation: rows, or a token stream.
struct Examples {
  HostTensor inputs, targets;
  std::vector<int64_t> tokens;
  bool empty() const { return tokens.empty() && inputs.data.empty(); }
};

/// Reads `path` as tokens: the bytes of a text file, or uint16/uint32.
TrainStatus readTokens(const std::string &path, bool text, const std::string &dtype,
                       std::vector<int64_t> &out);

/// The order of the examples in an epoch: a permutation seeded by the seed
/// and the epoch when shuffling (so a resumed run sees the same batches).
struct EpochOrder {
  bool shuffle = false;
  int64_t seed = 0;
  int64_t epoch = -1; ///< the epoch `perm` is for
  std::vector<int64_t> perm;
  /// Example indices of the batch for step t of `n` examples.
  std::vector<int64_t> batchRows(int64_t t, int64_t batch, int64_t n);
};

/// out[i] = data[rows[i]] (rows along the first axis).
void gatherRows(const HostTensor &data, const std::vector<int64_t> &rows, HostTensor &out);

/// Token window w: ids = tokens[w T, (w+1) T), targets shifted by one.
void fillWindows(const std::vector<int64_t> &from, const std::vector<int64_t> &rows,
                 int64_t seqLen, HostTensor &ids, HostTensor &targets);

struct Trainer::Impl {
  const Executable *model = nullptr;
  const FunctionInfo *train = nullptr, *eval = nullptr;
  TrainerOptions o;
  std::string artifact;
  bool tokens = false, validate = false, adam = false;
  Examples data, val;
  EpochOrder order;
  int64_t batch = 0, seqLen = 0, examples = 0, start = 0, end = 0;

  /// train_step's inputs and outputs (host buffers), bound by name.
  std::vector<HostTensor> in, out;
  std::map<std::string, size_t> inIndex, outIndex;
  size_t xIndex = 0, tIndex = 0, lossOut = 0;
  std::vector<size_t> paramIn, stateIn, depthOut, normOut;
  std::vector<std::pair<size_t, size_t>> carry; ///< (output, input)

  int64_t lastCheckpoint = -1;
  /// Loss history for the plot (a resumed run's starts from --metrics).
  std::vector<double> histStep, histLoss, valStep, valLoss;
  std::vector<std::vector<double>> histDepth;
  FILE *jsonl = nullptr, *metrics = nullptr;

  ~Impl();

  TrainStatus readData();
  TrainStatus bind();
  TrainStatus loadInitialParameters();
  TrainStatus openLogs();
  /// Brings the host copies of the device-kept state up to date.
  TrainStatus syncHost();
  TrainStatus step(int64_t step, StepResult &result);
  TrainStatus validationLoss(std::vector<double> &losses);
  double learningRate(int64_t t) const;

  // Checkpoint.cpp
  std::string checkpointPath(int64_t step) const;
  TrainStatus writeCheckpoint(int64_t step);
  TrainStatus drawPlot();
  /// Reads the checkpoint state.json names into the buffers and removes
  /// the stale files a killed run left.
  TrainStatus resume();
  void removeStaleCheckpointFiles();
  /// Keeps only the rows of a log before the resumed step.
  TrainStatus truncateLog(const std::string &path, bool csv);
  TrainStatus resumeLogs();
};

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_TRAINERIMPL_H
