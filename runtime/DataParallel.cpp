//===- DataParallel.cpp - Split steps: accumulation and data parallelism --===//
//
// An artifact compiled with split steps (rewire-train-step{split=true})
// has grad_step (loss and gradients of one micro-batch) and apply_step (the
// optimizer update from gradients scaled by grad_scale). One training step
// here: each rank runs grad_step on its `accum` micro-batches of the global
// batch, sums their gradients on the host, the communicator sums them over
// the ranks (in buckets), and every rank applies the same update with
// grad_scale = 1 / (accum x ranks), so the ranks' parameters stay equal
// without being sent again. The losses are averaged the same way (in
// double). Batch normalization's running statistics chain through the
// micro-batches and come from rank 0 (PyTorch DDP's broadcast_buffers).
//
// The sum over the ranks overlaps the backward: grad_step tells its output
// hook each gradient as soon as it is final (rewire-output-ready-calls; the
// artifact's readyOrder, fixed when it is compiled), the gradients lie in
// gradSum in that order, and a bucket of --bucket-mb (4 MiB) is started
// (Communicator::startSum) as soon as it and every bucket before it are
// complete, so every rank starts the same sums in the same order. What the
// hook did not hand out is started after grad_step returns; then the
// trainer waits for all (commSeconds: the part of the sums the backward
// did not hide).
//
// The global batch is cut as rank r, micro-batch k <- rows [(r accum + k)
// b, +b) of what one process would train on: with 2 ranks and 1
// micro-batch, or 1 rank and 2, the sum is g0 + g1 either way, the same
// bits.
//
//===----------------------------------------------------------------------===//
#include "TrainerImpl.h"

#include "rewire/Support/Checked.h"
#include "rewire/Support/TrainStepAbi.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace rewire::runtime {

using namespace rewire::trainstep;

Communicator::~Communicator() = default;

bool launchedByMpi() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v))
      return true;
  return false;
}

TrainStatus Trainer::Impl::selectSteps(const std::string &artifactPath) {
  comm = o.comm;
  rank = comm ? comm->rank() : 0;
  ranks = comm ? comm->size() : 1;
  accum = o.gradAccum;
  if (accum < 1)
    return trainError(TrainFailure::usage, "--grad-accum must be at least 1");
  train = model->function(kTrainFunction);
  gradFn = model->function(kGradFunction);
  applyFn = model->function(kApplyFunction);
  bool needSplit = accum > 1 || ranks > 1;
  if (train && needSplit)
    return trainError(TrainFailure::usage,
                      "'" + artifactPath + "' has a fused train_step; " +
                          (accum > 1 ? "--grad-accum" : "training on several ranks") +
                          " sums gradients between its halves: compile it with "
                          "rewire-compile --train=OPTIMIZER:split=true (rewire-train does when "
                          "given the .onnx or .mlir model)");
  if (train)
    return std::nullopt;
  if (!gradFn || !applyFn)
    return trainError(TrainFailure::io, "'" + artifactPath +
                                            "' has no train_step (nor grad_step and apply_step); "
                                            "compile it with rewire-compile --train");
  split = true;
  // train_step's signature, made up: grad_step's inputs, then apply_step's
  // (state, grad_scale, lr, bias corrections; not the gradients, which are
  // the trainer's); the loss, apply_step's outputs, the per-depth losses.
  view.name = kTrainFunction;
  view.inputs = gradFn->inputs;
  for (const TensorInfo &t : applyFn->inputs) {
    if (startsWith(t.name, kGradPrefix))
      continue;
    bool have = false;
    for (const TensorInfo &v : view.inputs)
      have |= v.name == t.name;
    if (!have)
      view.inputs.push_back(t);
  }
  for (const TensorInfo &t : gradFn->outputs)
    if (t.name == kLoss)
      view.outputs.push_back(t);
  for (const TensorInfo &t : applyFn->outputs)
    view.outputs.push_back(t);
  for (const TensorInfo &t : gradFn->outputs)
    if (startsWith(t.name, kDepthLossPrefix))
      view.outputs.push_back(t);
  train = &view;
  return std::nullopt;
}

TrainStatus Trainer::Impl::bindSplit() {
  // The gradients in one flat buffer: first in the order grad_step
  // finishes them (its readyOrder), the rest in apply_step's order; the
  // buckets of the sum over the ranks follow that order.
  std::vector<const TensorInfo *> layout;
  for (size_t k : gradFn->readyOrder)
    if (startsWith(gradFn->outputs[k].name, kGradPrefix))
      for (const TensorInfo &t : applyFn->inputs)
        if (t.name == gradFn->outputs[k].name)
          layout.push_back(&t);
  for (const TensorInfo &t : applyFn->inputs)
    if (startsWith(t.name, kGradPrefix) &&
        std::find(layout.begin(), layout.end(), &t) == layout.end())
      layout.push_back(&t);
  std::map<std::string, size_t> gradIndex;
  size_t total = 0;
  for (const TensorInfo *t : layout) {
    if (t->dtype != DType::F32)
      return trainError(TrainFailure::io, "apply_step's '" + t->name + "' is not f32");
    gradIndex[t->name] = gradOffset.size();
    gradOffset.push_back(total);
    auto n = checkedAddU(total, static_cast<uint64_t>(t->byteSize() / 4));
    if (!n)
      return trainError(TrainFailure::io, "the gradients do not fit in memory");
    total = static_cast<size_t>(*n);
  }
  gradOffset.push_back(total);
  // Buckets of whole gradients, at least --bucket-mb each (the last may be
  // smaller).
  size_t bucketValues =
      std::max<size_t>(1, static_cast<size_t>(std::min(o.bucketMb, 1e6) * (1 << 20) / 4));
  slotBucket.assign(layout.size(), 0);
  bucketStart.assign(1, 0);
  for (size_t s = 0; s < layout.size(); ++s) {
    slotBucket[s] = bucketStart.size() - 1;
    if (gradOffset[s + 1] - bucketStart.back() >= bucketValues && s + 1 < layout.size())
      bucketStart.push_back(gradOffset[s + 1]);
  }
  bucketStart.push_back(total);
  gradSum.assign(total, 0.0f);
  if (accum > 1)
    gradMicro.assign(total, 0.0f);
  for (const TensorInfo &t : gradFn->outputs) {
    if (t.name == kLoss) {
      gradOuts.push_back({GradOut::loss, 0});
    } else if (startsWith(t.name, kGradPrefix)) {
      auto it = gradIndex.find(t.name);
      if (it == gradIndex.end())
        return trainError(TrainFailure::io, "grad_step's '" + t.name + "' is no apply_step input");
      gradOuts.push_back({GradOut::grad, it->second});
    } else if (startsWith(t.name, kDepthLossPrefix)) {
      gradOuts.push_back({GradOut::depth, 0});
    } else if (inIndex.count(t.name)) {
      gradOuts.push_back({GradOut::buffer, bufferOut.size()});
      bufferIn.push_back(inIndex[t.name]);
      HostTensor h;
      h.dtype = t.dtype;
      h.shape = t.shape;
      h.data.assign(static_cast<size_t>(t.byteSize()), 0);
      bufferOut.push_back(std::move(h));
    } else {
      return trainError(TrainFailure::io, "grad_step output '" + t.name + "' matches no input");
    }
  }
  if (gradIndex.size() + 1 != gradOffset.size() || gradOuts.empty())
    return trainError(TrainFailure::io, "grad_step and apply_step do not match");
  for (const TensorInfo &t : applyFn->inputs) {
    auto it = gradIndex.find(t.name);
    applyGradSlot.push_back(it == gradIndex.end() ? SIZE_MAX : it->second);
  }
  return std::nullopt;
}

TrainStatus Trainer::Impl::broadcastState() {
  if (ranks == 1)
    return std::nullopt;
  int64_t first = start;
  if (auto err = comm->broadcast(&first, sizeof first, 0))
    return trainError(TrainFailure::io, *err);
  start = first;
  for (const std::vector<size_t> *group : {&paramIn, &stateIn})
    for (size_t i : *group)
      if (auto err = comm->broadcast(in[i].data.data(), in[i].data.size(), 0))
        return trainError(TrainFailure::io, *err);
  return std::nullopt;
}

/// What the output hook of the last micro-batch's grad_step works on.
struct Trainer::Impl::SumState {
  Impl &t;
  bool addMicro;                 ///< gradients go to gradMicro, then into gradSum
  std::vector<bool> ready;       ///< per gradient slot
  std::vector<size_t> remaining; ///< per bucket: slots not ready yet
  size_t nextBucket = 0;         ///< the next bucket to start (buckets start in order)
  size_t early = 0;              ///< buckets started while grad_step ran
  std::optional<std::string> error;

  SumState(Impl &t, bool addMicro)
      : t(t), addMicro(addMicro), ready(t.slotBucket.size(), false),
        remaining(t.bucketStart.size() - 1, 0) {
    for (size_t b : t.slotBucket)
      ++remaining[b];
  }

  /// Slot `s` is final: added into the sum, its bucket started when it is
  /// the next one and complete.
  void markReady(size_t s) {
    if (ready[s])
      return;
    ready[s] = true;
    if (addMicro)
      for (size_t i = t.gradOffset[s]; i < t.gradOffset[s + 1]; ++i)
        t.gradSum[i] += t.gradMicro[i];
    --remaining[t.slotBucket[s]];
    startBuckets();
  }

  void startBuckets() {
    while (!error && nextBucket < remaining.size() && remaining[nextBucket] == 0) {
      size_t from = t.bucketStart[nextBucket], to = t.bucketStart[nextBucket + 1];
      error = t.comm->startSum(t.gradSum.data() + from, to - from);
      ++nextBucket;
    }
  }

  static void hook(void *context, int64_t output) {
    auto *s = static_cast<SumState *>(context);
    if (output >= 0 && static_cast<size_t>(output) < s->t.gradOuts.size()) {
      auto [kind, at] = s->t.gradOuts[static_cast<size_t>(output)];
      if (kind == GradOut::grad) {
        size_t before = s->nextBucket;
        s->markReady(at);
        s->early += s->nextBucket - before;
      }
    }
    s->t.comm->progress();
  }
};

TrainStatus Trainer::Impl::setupDeviceSums() {
  if (!split || ranks == 1)
    return std::nullopt;
  sums = "on the host (" + std::string(comm->rankOrder() ? "rank order" : "MPI") + ")";
  if (!model->isCuda() || comm->rankOrder() || accum > 1) {
    if (model->isCuda())
      sums += ": NCCL takes --grad-accum 1 without --deterministic-reduce";
    return std::nullopt;
  }
  std::vector<size_t> grads;
  for (size_t i = 0; i < gradOuts.size(); ++i)
    if (gradOuts[i].first == GradOut::grad)
      grads.push_back(i);
  bool fatal = false;
  if (auto why = model->sumOutputsOverRanks(kGradFunction, grads, *comm, fatal)) {
    if (fatal)
      return trainError(TrainFailure::io, *why);
    sums += ": " + *why;
    return std::nullopt;
  }
  deviceSums = true;
  sums = "on the GPUs (" + model->deviceSums() + ")";
  return std::nullopt;
}

TrainStatus Trainer::Impl::splitStep(int64_t step) {
  std::vector<int64_t> rows = order.batchRows(step, globalBatch(), examples);
  size_t depths = depthOut.size();
  std::vector<double> losses(1 + depths, 0.0);
  std::vector<HostTensor> scalars(1 + depths);
  for (HostTensor &s : scalars) {
    s.dtype = DType::F32;
    s.data.assign(4, 0);
  }
  std::vector<const void *> ip(gradFn->inputs.size());
  std::vector<void *> op(gradFn->outputs.size());
  // The last micro-batch's gradients are summed over the ranks as grad_step
  // finishes them (its output hook), the rest after it returns.
  std::optional<SumState> host;
  for (int64_t k = 0; k < accum; ++k) {
    auto from = rows.begin() + (static_cast<int64_t>(rank) * accum + k) * batch;
    std::vector<int64_t> mine(from, from + batch);
    if (tokens) {
      fillWindows(data.tokens, mine, seqLen, in[xIndex], in[tIndex]);
    } else {
      gatherRows(data.inputs, mine, in[xIndex]);
      gatherRows(data.targets, mine, in[tIndex]);
    }
    for (size_t i = 0; i < ip.size(); ++i)
      ip[i] = in[inIndex[gradFn->inputs[i].name]].data.data();
    float *grads = k == 0 ? gradSum.data() : gradMicro.data();
    size_t depth = 0;
    for (size_t i = 0; i < op.size(); ++i) {
      auto [kind, at] = gradOuts[i];
      op[i] = kind == GradOut::loss    ? scalars[0].data.data()
              : kind == GradOut::grad  ? static_cast<void *>(grads + gradOffset[at])
              : kind == GradOut::depth ? scalars[1 + depth++].data.data()
                                       : bufferOut[at].data.data();
    }
    bool last = k + 1 == accum;
    if (last && ranks > 1 && !deviceSums) {
      host.emplace(*this, k > 0);
      auto err = model->runRaw(kGradFunction, ip.data(), op.data(),
                               OutputHook{&SumState::hook, &*host});
      // The other ranks wait in sums this one may never start: the caller
      // ends the run (rewire-train aborts every rank with the error).
      if (err)
        return callError(*err);
    } else if (auto err = model->runRaw(kGradFunction, ip.data(), op.data())) {
      return callError(*err);
    }
    if (k > 0 && !host)
      for (size_t i = 0; i < gradSum.size(); ++i)
        gradSum[i] += gradMicro[i];
    for (size_t d = 0; d <= depths; ++d)
      losses[d] += scalars[d].at(0);
    // The running statistics go on from this micro-batch's.
    for (size_t j = 0; j < bufferOut.size(); ++j)
      std::swap(bufferOut[j].data, in[bufferIn[j]].data);
  }
  commSeconds = 0;
  earlyBuckets = 0;
  if (ranks > 1) {
    // Started during grad_step: the buckets before the first gradient it
    // did not hand out; the rest now.
    auto t0 = std::chrono::steady_clock::now();
    // Summed on the GPUs already (setupDeviceSums) where `host` is empty.
    if (host) {
      earlyBuckets = host->early;
      for (size_t s = 0; s < host->ready.size(); ++s)
        host->markReady(s);
      if (host->error)
        return trainError(TrainFailure::io, *host->error);
      if (auto err = comm->finishSums())
        return trainError(TrainFailure::io, *err);
    }
    if (auto err = comm->allReduceSum(losses.data(), losses.size()))
      return trainError(TrainFailure::io, *err);
    for (size_t j : bufferIn)
      if (auto err = comm->broadcast(in[j].data.data(), in[j].data.size(), 0))
        return trainError(TrainFailure::io, *err);
    commSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double n = static_cast<double>(accum * ranks);
  float scale = static_cast<float>(1.0 / n);
  std::memcpy(in[inIndex[kGradScale]].data.data(), &scale, 4);
  std::vector<const void *> aip(applyFn->inputs.size());
  std::vector<void *> aop(applyFn->outputs.size());
  for (size_t i = 0; i < aip.size(); ++i)
    aip[i] = applyGradSlot[i] != SIZE_MAX ? static_cast<const void *>(gradSum.data() +
                                                                      gradOffset[applyGradSlot[i]])
                                          : in[inIndex[applyFn->inputs[i].name]].data.data();
  for (size_t i = 0; i < aop.size(); ++i)
    aop[i] = out[outIndex[applyFn->outputs[i].name]].data.data();
  if (auto err = model->runRaw(kApplyFunction, aip.data(), aop.data()))
    return callError(*err);
  auto put = [&](size_t index, double v) {
    float f = static_cast<float>(v);
    std::memcpy(out[index].data.data(), &f, 4);
  };
  put(lossOut, losses[0] / n);
  for (size_t d = 0; d < depths; ++d)
    put(depthOut[d], losses[1 + d] / n);
  return std::nullopt;
}

} // namespace rewire::runtime
