//===- CallerBatches.cpp - Training on batches the caller gives -----------===//
//
// The Python Trainer's calls (Trainer.h, TrainerOptions::callerBatches):
// a step on a batch in memory is the file loop's step on a data set that is
// that batch (the rows of step t of a set of exactly one global batch are
// all of it, in order), so the fused and split steps, the schedule and the
// logs are the same code as rewire-train's.
//
//===----------------------------------------------------------------------===//
#include "TrainerImpl.h"

#include "rewire/Support/TrainStepAbi.h"

#include <cstring>

namespace rewire::runtime {

using namespace rewire::trainstep;

TrainStatus Trainer::Impl::checkBatch(const HostTensor &x, const HostTensor &y, int64_t rows,
                                      const char *what) const {
  const TensorInfo &xi = train->inputs[xIndex], &ti = train->inputs[tIndex];
  auto fits = [&](const HostTensor &h, const TensorInfo &want, const char *name) -> TrainStatus {
    std::vector<int64_t> shape = want.shape;
    if (!shape.empty())
      shape[0] = rows;
    if (h.dtype != want.dtype || h.shape != shape ||
        h.data.size() != static_cast<size_t>(h.numel()) * dtypeSize(h.dtype))
      return trainError(TrainFailure::data,
                        std::string(what) + ": the " + name + " are " + h.typeString() +
                            "; the model takes " + std::string(dtypeName(want.dtype)) + " [" +
                            shapeString(shape) + "]" +
                            (rows != batch ? " (the global batch: " + std::to_string(batch) +
                                                 " x " + std::to_string(accum) + " micro-batches)"
                                           : std::string()));
    return std::nullopt;
  };
  if (auto e = fits(x, xi, "inputs"))
    return e;
  return fits(y, ti, "targets");
}

TrainStatus Trainer::step(const HostTensor &inputs, const HostTensor &targets,
                          StepResult &result) {
  Impl &t = *impl;
  if (!t.o.callerBatches)
    return trainError(TrainFailure::usage, "this trainer reads its batches from files: use run()");
  if (t.next >= t.o.steps)
    return trainError(TrainFailure::usage,
                      "the schedule's " + std::to_string(t.o.steps) +
                          " steps are done (give more steps to the Trainer)");
  if (auto e = t.checkBatch(inputs, targets, t.globalBatch(), "step"))
    return e;
  t.data.inputs = inputs;
  t.data.targets = targets;
  t.order.shuffle = false;
  if (auto e = t.step(t.next, result))
    return e;
  ++t.next;
  return std::nullopt;
}

TrainStatus Trainer::evaluate(const HostTensor &inputs, const HostTensor &targets,
                              std::vector<double> &losses) {
  Impl &t = *impl;
  if (!t.eval)
    return trainError(TrainFailure::io, "'" + t.artifact + "' has no eval_step");
  if (auto e = t.checkBatch(inputs, targets, t.batch, "evaluate"))
    return e;
  Examples saved = std::move(t.val);
  bool tokens = t.tokens;
  int64_t batches = t.o.evalBatches;
  t.val.inputs = inputs;
  t.val.targets = targets;
  t.tokens = false;
  t.o.evalBatches = 1;
  TrainStatus status = t.validationLoss(losses);
  t.val = std::move(saved);
  t.tokens = tokens;
  t.o.evalBatches = batches;
  return status;
}

TrainStatus Trainer::checkpoint(const std::string &dir) {
  Impl &t = *impl;
  t.o.checkpoint = dir;
  return t.writeCheckpoint(t.next);
}

TrainStatus Trainer::parameters(std::vector<std::pair<std::string, HostTensor>> &out) {
  Impl &t = *impl;
  if (auto e = t.syncHost())
    return e;
  out.clear();
  for (size_t i : t.paramIn)
    out.push_back({t.train->inputs[i].name.substr(std::strlen(kParamPrefix)), t.in[i]});
  return std::nullopt;
}

int64_t Trainer::nextStep() const { return impl->next; }

} // namespace rewire::runtime
