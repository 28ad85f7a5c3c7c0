//===- Options.h - rewire-train's command line ---------------*- C++ -*-===//
//
// The flags: what the Trainer takes (TrainerOptions) and what shapes the
// compiled train step (rewire-compile's --train, --residual, ...).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_TOOLS_REWIRE_TRAIN_OPTIONS_H
#define REWIRE_TOOLS_REWIRE_TRAIN_OPTIONS_H

#include "rewire/Runtime/Trainer.h"

#include <string>
#include <vector>

namespace rewire::train_tool {

/// Prints "rewire-train: error: MESSAGE" and exits with `code`; in a run
/// of several ranks (setDieCommunicator) it names the rank and ends every
/// rank, which may be waiting for this one in a collective.
[[noreturn]] void die(const std::string &message, int code);
void setDieCommunicator(runtime::Communicator *comm);

struct Options {
  runtime::TrainerOptions train;
  std::vector<std::string> compileOnly; ///< compile-shaping flags given
  bool optimizerGiven = false;
  std::string model, optimizer = "sgd", schedule = "constant", output, residual, frozen,
      depthWeights, loss, exportOnnx, device; ///< device: cpu, cuda, or "" (the artifact's)
  double momentum = 0, weightDecay = 0, eps = 1e-8, clip = 0;
  int64_t logEvery = 10, batch = 0, seqLen = 0;
  bool gradNorms = false, allowNoResidual = false;
  /// Split steps: --grad-accum > 1 or several ranks (mpirun).
  bool splitSteps = false, deterministicReduce = false;
};

/// The command line, checked (usage errors exit 1).
Options parse(int argc, char **argv);

/// rewire-compile's flags for the train step the options describe.
std::vector<std::string> compileFlags(const Options &o);

} // namespace rewire::train_tool

#endif // REWIRE_TOOLS_REWIRE_TRAIN_OPTIONS_H
