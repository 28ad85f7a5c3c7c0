//===- Trainer.h - Training loops over a compiled train_step -----*- C++ -*-===//
//
// The training loop of rewire-train as a library (links no MLIR): binds an
// artifact's train_step by name (Support/TrainStepAbi.h), reads the data,
// the initial parameters and a checkpoint to resume from, runs the steps
// with the learning-rate schedule, validates with eval_step, logs (CSV,
// JSONL, a PNG plot) and writes checkpoints atomically. Errors are
// returned, never exits; the tool prints progress from the callbacks.
//
//   TrainError error;
//   auto trainer = Trainer::create(*model, "gpt.rwx", options, error);
//   if (!trainer) ...
//   if (auto e = trainer->run(onStep, onValidation)) ...
//   trainer->saveParameters("trained.safetensors");
//
// Parameters and optimizer state live in two sets of host buffers that
// swap roles each step (no copies); on the GPU they stay on the device and
// are pulled only for validation, checkpoints and the trained weights.
// With split steps (gradient accumulation, data parallelism:
// DataParallel.cpp) the gradients come to the host to be summed.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RUNTIME_TRAINER_H
#define REWIRE_RUNTIME_TRAINER_H

#include "rewire/Runtime/Communicator.h"
#include "rewire/Runtime/Executable.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rewire::runtime {

/// Why training failed: rewire-train's exit codes.
enum class TrainFailure { usage = 1, data = 2, diverged = 3, io = 4 };

struct TrainError {
  TrainFailure failure = TrainFailure::io;
  std::string message;
};
using TrainStatus = std::optional<TrainError>;

struct TrainerOptions {
  /// Examples: rows of --inputs and --targets (.npy), or a token stream
  /// (`data`: uint16/uint32 little-endian, `text`: bytes), cut into windows
  /// of the model's sequence length with the targets shifted by one.
  std::string inputs, targets, data, text, tokenDtype = "uint16";
  /// Validation examples, as above (tokens: the format of the training's).
  std::string valData, valInputs, valTargets;
  /// Steps in the schedule; the run stops after `stopAfter` (-1: all).
  int64_t steps = 100, stopAfter = -1;
  /// Learning rate: linear warm-up over `warmup` steps, then constant or a
  /// cosine decay to `minLr` at `steps`.
  double lr = 1e-3, minLr = 0;
  int64_t warmup = 0;
  bool cosine = false;
  /// AdamW's bias corrections (train_step takes them).
  double beta1 = 0.9, beta2 = 0.999;
  /// Shuffle the examples every epoch (seeded by seed and epoch, so a
  /// resumed run sees the same batches).
  bool shuffle = false;
  int64_t seed = 0;
  /// Validation loss every `evalEvery` steps (0: never), the mean over the
  /// first `evalBatches` batches of the validation data.
  int64_t evalEvery = 0, evalBatches = 8;
  /// Initial parameters (default: the artifact's file); the parameters a
  /// residual rewrite adds may be missing and start from their initializer.
  std::string params;
  /// Checkpoints (state.json + model-STEP.safetensors) every
  /// `checkpointEvery` steps (0: only at the end) in `checkpoint`;
  /// `resume` continues from its state.json, bit for bit.
  std::string checkpoint;
  int64_t checkpointEvery = 0;
  bool resume = false;
  /// Logs: step,loss,lr CSV; one JSON object per step; a PNG loss plot.
  std::string metrics, jsonl, plot;
  /// When given ("sgd" or "adamw"): must be the optimizer train_step was
  /// compiled for.
  std::string optimizer;
  /// Gradients summed over `gradAccum` micro-batches of the compiled batch
  /// before each update, and over the ranks of `comm` (data parallelism;
  /// null: one process). Either needs an artifact compiled with split
  /// steps (grad_step + apply_step); the global batch, what one step
  /// trains on, is batch x gradAccum x ranks. Rank 0 reads the checkpoint,
  /// writes checkpoints and logs, and validates; every rank reads the data
  /// and trains on its own share of each global batch.
  int64_t gradAccum = 1;
  Communicator *comm = nullptr;
  /// Under `comm`: the gradients are summed in buckets of at least this
  /// many MiB, each started as soon as the backward has finished it (and
  /// the buckets before it). PyTorch DDP's bucket_cap_mb; default 4.
  double bucketMb = 4.0;
  /// Batches come from the caller (step(inputs, targets): the Python
  /// Trainer) instead of data files; run() is then not used.
  bool callerBatches = false;
};

/// One step done.
struct StepResult {
  int64_t step = 0; ///< 0-based
  double loss = 0, lr = 0;
  std::vector<double> depthLosses; ///< LPA: the loss at each depth
  /// Wall time of the step, and of its sums across ranks after the
  /// backward (0 on one).
  double seconds = 0, commSeconds = 0;
  /// Gradient buckets summed across ranks, and those started while the
  /// backward still ran.
  size_t buckets = 0, bucketsEarly = 0;
};

class Trainer {
public:
  /// How gradients are summed over the ranks: "on the GPUs (NCCL 2.28.3)",
  /// "on the host (MPI)" with why not on the GPUs; empty on one process.
  std::string gradientSums() const;
  /// Binds `model`'s train_step (from `artifact`, whose folder holds its
  /// parameter file), reads the data and the initial state, and resumes
  /// from the checkpoint when asked. Null with `error` set on failure.
  static std::unique_ptr<Trainer> create(const Executable &model, const std::string &artifact,
                                         const TrainerOptions &options, TrainError &error);
  ~Trainer();

  /// The first step this run makes (the checkpoint's on resume) and the
  /// step it stops before.
  int64_t firstStep() const;
  int64_t endStep() const;
  /// Examples per step (the global batch: every micro-batch of every
  /// rank), and items (tokens, or 1) per example.
  int64_t batchSize() const;
  /// This process's rank and the number of ranks (0 and 1 alone).
  int rank() const;
  int ranks() const;
  int64_t itemsPerExample() const;
  bool tokenData() const;

  /// Runs the steps: `onStep` after each, `onValidation(step, losses)`
  /// after each validation (losses: the mean, then per depth); checkpoints
  /// as asked and at the end; closes the logs.
  TrainStatus run(const std::function<void(const StepResult &)> &onStep,
                  const std::function<void(int64_t, const std::vector<double> &)> &onValidation);

  /// Writes the current parameters under the model's names (safetensors,
  /// atomically).
  TrainStatus saveParameters(const std::string &path);

  // Caller batches (TrainerOptions::callerBatches; CallerBatches.cpp).
  /// One step on `inputs` and `targets`: the global batch (batch x
  /// gradAccum rows on one process), dtypes and other axes the model's.
  TrainStatus step(const HostTensor &inputs, const HostTensor &targets, StepResult &result);
  /// eval_step's losses (the loss, then per depth) on a batch of the
  /// compiled batch, with the current parameters.
  TrainStatus evaluate(const HostTensor &inputs, const HostTensor &targets,
                       std::vector<double> &losses);
  /// A checkpoint of the current state in `dir` (state.json and
  /// model-<step>.safetensors, atomically), as --checkpoint writes them.
  TrainStatus checkpoint(const std::string &dir);
  /// The current parameters under the model's names.
  TrainStatus parameters(std::vector<std::pair<std::string, HostTensor>> &out);
  /// The step the next update makes (0-based).
  int64_t nextStep() const;

  struct Impl;

private:
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace rewire::runtime

#endif // REWIRE_RUNTIME_TRAINER_H
