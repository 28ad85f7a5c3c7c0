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

/// A failed call of the artifact: bad input data, or anything else (I/O).
TrainError callError(const std::string &err);

inline bool startsWith(const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; }

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

  /// Split steps (DataParallel.cpp): `train` is then `view`, train_step's
  /// signature as grad_step and apply_step make it up, so binding,
  /// checkpoints and validation do not tell the two apart.
  bool split = false;
  const FunctionInfo *gradFn = nullptr, *applyFn = nullptr;
  FunctionInfo view;
  Communicator *comm = nullptr;
  int rank = 0, ranks = 1;
  int64_t accum = 1;
  bool root() const { return rank == 0; }
  int64_t globalBatch() const { return batch * accum * ranks; }
  /// Gradients: one flat buffer, parameters in apply_step's order (the sum,
  /// reduced across ranks), and one micro-batch's.
  std::vector<float> gradSum, gradMicro;
  std::vector<size_t> gradOffset;
  /// grad_step's outputs: where each goes (see bindSplit).
  enum class GradOut { loss, grad, buffer, depth };
  std::vector<std::pair<GradOut, size_t>> gradOuts;
  /// The buckets of the sum over the ranks: bucket b is gradSum's values
  /// [bucketStart[b], bucketStart[b + 1]); slotBucket: each gradient's.
  /// gradOffset has one more entry, the total.
  std::vector<size_t> bucketStart, slotBucket;
  struct SumState;
  /// apply_step's inputs: the gradient slot of each (SIZE_MAX: not one).
  std::vector<size_t> applyGradSlot;
  std::vector<HostTensor> bufferOut; ///< batch-norm running statistics
  std::vector<size_t> bufferIn;      ///< their inputs in `in`
  double commSeconds = 0;            ///< the last step's wait for sums after grad_step
  size_t earlyBuckets = 0;           ///< the last step's buckets started during grad_step

  int64_t lastCheckpoint = -1;
  std::string lastCheckpointDir; ///< the folder lastCheckpoint is in
  int64_t next = 0;              ///< caller batches: the next step
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

  // CallerBatches.cpp
  /// `x` and `y` checked against the model's data input and target, with
  /// `rows` examples.
  TrainStatus checkBatch(const HostTensor &x, const HostTensor &y, int64_t rows,
                         const char *what) const;

  // DataParallel.cpp
  /// Makes `view` from grad_step and apply_step; an error when the options
  /// need split steps and the artifact has train_step only.
  TrainStatus selectSteps(const std::string &artifact);
  /// Gradient buffers and grad_step's output routing (after binding).
  TrainStatus bindSplit();
  /// Rank 0's parameters, state and start step to every rank.
  TrainStatus broadcastState();
  /// On a GPU, several ranks, one micro-batch: grad_step's gradients summed
  /// on the devices (NCCL) instead of on the host; `sums` says which.
  TrainStatus setupDeviceSums();
  bool deviceSums = false;
  std::string sums; ///< how gradients are summed over ranks (Trainer::gradientSums)
  /// One update from grad_step over the micro-batches and ranks, then
  /// apply_step; the mean loss (and per-depth losses) into `out`.
  TrainStatus splitStep(int64_t step);
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
