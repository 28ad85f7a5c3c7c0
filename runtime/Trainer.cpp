//===- Trainer.cpp - Training loops over a compiled train_step ------------===//
//
// Binding train_step by name, the initial state, the step and the loop
// (Trainer.h). Data: TrainingData.cpp; checkpoints and logs: Checkpoint.cpp.
//
//===----------------------------------------------------------------------===//
#include "TrainerImpl.h"

#include "rewire/Runtime/Runtime.h"
#include "rewire/Support/Json.h"
#include "rewire/Support/Npy.h"
#include "rewire/Support/Printable.h"
#include "rewire/Support/Safetensors.h"
#include "rewire/Support/TrainStepAbi.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>

namespace rewire::runtime {

using namespace rewire::trainstep;

namespace {

HostTensor scalarTensor(double v) {
  HostTensor t;
  t.dtype = DType::F32;
  float f = static_cast<float>(v);
  t.data.resize(4);
  std::memcpy(t.data.data(), &f, 4);
  return t;
}

/// The parameters a rewrite adds (stream<S>.layer<L>.<kind>.<name>,
/// docs/parameters.md): they may be missing from --params.
bool addedByRewrite(const std::string &n) {
  size_t i = 0;
  auto digits = [&] {
    size_t s = i;
    while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i])))
      ++i;
    return i > s;
  };
  if (n.compare(0, 6, "stream") != 0)
    return false;
  i = 6;
  if (!digits() || n.compare(i, 6, ".layer") != 0)
    return false;
  i += 6;
  return digits() && i < n.size() && n[i] == '.';
}

} // namespace

TrainError callError(const std::string &err) {
  return trainError(isInputDataError(err) ? TrainFailure::data : TrainFailure::io, err);
}

std::optional<std::string> tensorMismatch(const std::string &dtype,
                                          const std::vector<int64_t> &shape,
                                          const HostTensor &want) {
  auto dt = parseSafetensorsDType(dtype);
  if (dt && *dt == want.dtype && shape == want.shape)
    return std::nullopt;
  return "is " + dtype + " [" + shapeString(shape) + "], the model's is " +
         dtypeSafetensorsName(want.dtype) + " [" + shapeString(want.shape) + "]";
}

Trainer::Impl::~Impl() {
  for (FILE *log : {metrics, jsonl})
    if (log)
      std::fclose(log);
}

double Trainer::Impl::learningRate(int64_t t) const {
  if (t < o.warmup)
    return o.lr * static_cast<double>(t + 1) / static_cast<double>(o.warmup);
  if (!o.cosine)
    return o.lr;
  double span = static_cast<double>(std::max<int64_t>(1, o.steps - o.warmup));
  double progress = std::min(1.0, static_cast<double>(t - o.warmup) / span);
  return o.minLr + 0.5 * (o.lr - o.minLr) * (1.0 + std::cos(M_PI * progress));
}

TrainStatus Trainer::Impl::readData() {
  if (o.callerBatches)
    return std::nullopt; // batches come with each step
  if (tokens) {
    if (auto e = readTokens(o.data.empty() ? o.text : o.data, !o.text.empty(), o.tokenDtype,
                            data.tokens))
      return e;
    if (!o.valData.empty())
      if (auto e = readTokens(o.valData, !o.text.empty(), o.tokenDtype, val.tokens))
        return e;
  } else {
    if (auto err = readNpy(o.inputs, data.inputs))
      return trainError(TrainFailure::data, *err);
    if (auto err = readNpy(o.targets, data.targets))
      return trainError(TrainFailure::data, *err);
    if (o.valInputs.empty() != o.valTargets.empty())
      return trainError(TrainFailure::usage,
                        "--val-inputs and --val-targets go together: give both");
    if (!o.valInputs.empty()) {
      if (auto err = readNpy(o.valInputs, val.inputs))
        return trainError(TrainFailure::data, *err);
      if (auto err = readNpy(o.valTargets, val.targets))
        return trainError(TrainFailure::data, *err);
    }
  }
  validate = o.evalEvery > 0 && !val.empty();
  if (o.evalEvery > 0 && !validate)
    return trainError(TrainFailure::usage, "--eval-every needs --val-data (tokens) or "
                                           "--val-inputs and --val-targets");
  return std::nullopt;
}

TrainStatus Trainer::Impl::bind() {
  in.resize(train->inputs.size());
  for (size_t i = 0; i < train->inputs.size(); ++i) {
    inIndex[train->inputs[i].name] = i;
    in[i].dtype = train->inputs[i].dtype;
    in[i].shape = train->inputs[i].shape;
    in[i].data.assign(static_cast<size_t>(train->inputs[i].byteSize()), 0);
  }
  for (size_t i = 0; i < train->outputs.size(); ++i)
    outIndex[train->outputs[i].name] = i;
  tIndex = inIndex.count(kTarget) ? inIndex[kTarget] : SIZE_MAX;
  if (tIndex != 1 || startsWith(train->inputs[0].name, kParamPrefix))
    return trainError(TrainFailure::data, "train_step must take one data input and then the target");
  const TensorInfo &xi = train->inputs[xIndex], &ti = train->inputs[tIndex];
  batch = xi.shape.empty() ? 0 : xi.shape[0];
  auto fits = [&](const HostTensor &d, const TensorInfo &want, const char *what) -> TrainStatus {
    std::vector<int64_t> rest(want.shape.begin() + 1, want.shape.end());
    if (d.dtype != want.dtype || d.shape.size() != want.shape.size() || d.shape[0] < 1 ||
        !std::equal(rest.begin(), rest.end(), d.shape.begin() + 1))
      return trainError(TrainFailure::data,
                        std::string(what) + " is " + d.typeString() +
                            "; the model takes batches of " + want.typeString() +
                            " (first axis: examples)");
    return std::nullopt;
  };
  // Inputs and targets of one set of examples: the model's shapes, as many.
  auto fitsRows = [&](const Examples &ex, const std::string &xFlag,
                      const std::string &yFlag) -> TrainStatus {
    if (auto e = fits(ex.inputs, xi, xFlag.c_str()))
      return e;
    if (auto e = fits(ex.targets, ti, yFlag.c_str()))
      return e;
    if (ex.inputs.shape[0] != ex.targets.shape[0])
      return trainError(TrainFailure::data,
                        xFlag + " has " + std::to_string(ex.inputs.shape[0]) + " examples, " +
                            yFlag + " " + std::to_string(ex.targets.shape[0]));
    return std::nullopt;
  };
  if (o.callerBatches) {
    examples = globalBatch();
  } else if (tokens) {
    if (xi.shape.size() != 2 || xi.dtype != DType::I64 || ti.dtype != DType::I64 ||
        ti.shape != xi.shape)
      return trainError(TrainFailure::data,
                        "token training needs a model taking [batch, tokens] i64 ids and the "
                        "cross_entropy loss; it takes " + xi.typeString());
    seqLen = xi.shape[1];
    if (static_cast<int64_t>(data.tokens.size()) < seqLen + 1)
      return trainError(TrainFailure::data,
                        "the token data holds " + std::to_string(data.tokens.size()) +
                            " tokens, fewer than one window of " + std::to_string(seqLen + 1));
    const FunctionInfo *fwd = model->function("forward");
    int64_t vocab = fwd && !fwd->outputs.empty() && !fwd->outputs[0].shape.empty()
                        ? fwd->outputs[0].shape.back()
                        : INT64_MAX;
    for (const std::vector<int64_t> *d : {&data.tokens, &val.tokens})
      for (int64_t t : *d)
        if (t >= vocab)
          return trainError(TrainFailure::data,
                            "token " + std::to_string(t) + (d == &data.tokens ? "" : " of --val-data") +
                                " is outside the model's vocabulary of " + std::to_string(vocab));
    examples = (static_cast<int64_t>(data.tokens.size()) - 1) / seqLen; // windows
  } else {
    if (auto e = fitsRows(data, "--inputs", "--targets"))
      return e;
    examples = data.inputs.shape[0];
  }
  if (examples < globalBatch())
    return trainError(TrainFailure::data,
                      "fewer examples (" + std::to_string(examples) + ") than " +
                          (globalBatch() == batch
                               ? "the compiled batch (" + std::to_string(batch) + ")"
                               : "the global batch (" + std::to_string(globalBatch()) + " = " +
                                     std::to_string(batch) + " x " + std::to_string(accum) +
                                     " micro-batches x " + std::to_string(ranks) + " ranks)"));
  eval = model->function(kEvalFunction);
  if (validate) {
    if (!eval)
      return trainError(TrainFailure::io, "'" + artifact + "' has no eval_step");
    if (tokens && static_cast<int64_t>(val.tokens.size()) < seqLen + 1)
      return trainError(TrainFailure::data, "the validation tokens are fewer than one window");
    if (!tokens) {
      if (auto e = fitsRows(val, "--val-inputs", "--val-targets"))
        return e;
      if (val.inputs.shape[0] < batch)
        return trainError(TrainFailure::data,
                          "fewer validation examples (" + std::to_string(val.inputs.shape[0]) +
                              ") than the compiled batch (" + std::to_string(batch) + ")");
    }
  }
  return std::nullopt;
}

TrainStatus Trainer::Impl::loadInitialParameters() {
  // From the artifact's file (or --params, where it has them); the state
  // starts at zero.
  SafetensorsMapping init, given;
  JsonValue root;
  (void)parseJson(model->metadata(), root);
  const JsonValue *pf = root.get("parameters_file");
  size_t slash = artifact.rfind('/');
  std::string dir = artifact.substr(0, slash == std::string::npos ? 0 : slash);
  std::string path = pf && pf->isString()
                         ? (pf->text[0] == '/' ? pf->text : (dir.empty() ? "." : dir) + "/" + pf->text)
                         : "";
  if (auto err = init.open(path))
    return trainError(TrainFailure::io, "cannot read the initial parameters: " + *err);
  if (!o.params.empty())
    if (auto err = given.open(o.params))
      return trainError(TrainFailure::io, "--params: " + *err);
  size_t fromGiven = 0;
  // A parameter of the model missing from --params is an error (a partial
  // file would silently train a mix of two states), but for those a
  // rewrite adds.
  std::vector<std::string> missing;
  for (size_t i = 0; i < train->inputs.size(); ++i) {
    const std::string &name = train->inputs[i].name;
    if (startsWith(name, kParamPrefix)) {
      std::string param = name.substr(std::strlen(kParamPrefix));
      const auto *t = o.params.empty() ? nullptr : given.find(param);
      if (t)
        if (auto why = tensorMismatch(t->dtype, t->shape, in[i]))
          return trainError(TrainFailure::data,
                            "--params: '" + param + "' in '" + o.params + "' " + *why);
      fromGiven += t != nullptr;
      if (!t && !o.params.empty() && !addedByRewrite(param))
        missing.push_back(param);
      if (!t)
        t = init.find(param);
      if (!t)
        return trainError(TrainFailure::io, "initial value of '" + param + "' missing");
      if (auto why = tensorMismatch(t->dtype, t->shape, in[i]))
        return trainError(TrainFailure::io, "initial value of '" + param + "' " + *why);
      std::memcpy(in[i].data.data(), t->data, t->bytes);
      paramIn.push_back(i);
    } else if (startsWith(name, kStatePrefix)) {
      stateIn.push_back(i);
    }
  }
  if (!o.params.empty() && fromGiven == 0)
    return trainError(TrainFailure::data,
                      "--params: '" + o.params + "' names none of the model's parameters");
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 5; ++i)
      list += (i ? ", '" : "'") + printable(missing[i]) + "'";
    return trainError(TrainFailure::data,
                      "--params: '" + o.params + "' lacks " + std::to_string(missing.size()) +
                          " of the model's parameters (" + list +
                          (missing.size() > 5 ? ", ..." : "") +
                          "); give a complete file (rewire-train --output writes one)");
  }
  // Outputs: loss, then updated parameters and state, each matched by name
  // to the input it replaces.
  out.resize(train->outputs.size());
  for (size_t i = 0; i < train->outputs.size(); ++i) {
    out[i].dtype = train->outputs[i].dtype;
    out[i].shape = train->outputs[i].shape;
    out[i].data.assign(static_cast<size_t>(train->outputs[i].byteSize()), 0);
    const std::string &name = train->outputs[i].name;
    if (startsWith(name, kGradNormPrefix)) {
      normOut.push_back(i); // grad-norms: logged in the JSONL rows
    } else if (startsWith(name, kDepthLossPrefix)) {
      depthOut.push_back(i); // LPA: the loss at each depth, logged
    } else if (name != kLoss) {
      auto it = inIndex.find(name);
      if (it == inIndex.end())
        return trainError(TrainFailure::io, "train_step output '" + name + "' matches no input");
      carry.push_back({i, it->second});
    }
  }
  if (!outIndex.count(kLoss))
    return trainError(TrainFailure::io, "train_step has no loss output");
  lossOut = outIndex[kLoss];
  histDepth.resize(depthOut.size());
  // On the GPU, weights and optimizer state stay on the device between
  // steps; the host copies in `in` are brought up to date (syncHost) only
  // where they are read: validation, checkpoints, the trained weights.
  if (split)
    return bindSplit(); // the gradients come to the host: nothing is kept
  if (auto err = model->keepOnDevice(kTrainFunction, carry))
    return trainError(TrainFailure::io, *err);
  return std::nullopt;
}

TrainStatus Trainer::Impl::syncHost() {
  // A no-op where the host buffers are the state (Executable::pull).
  if (split)
    return std::nullopt;
  std::vector<void *> ptrs;
  for (HostTensor &t : in)
    ptrs.push_back(t.data.data());
  if (auto err = model->pull(kTrainFunction, ptrs.data()))
    return trainError(TrainFailure::io, *err);
  return std::nullopt;
}

TrainStatus Trainer::Impl::openLogs() {
  if (!root())
    return std::nullopt; // rank 0 logs
  if (!o.jsonl.empty()) {
    jsonl = std::fopen(o.jsonl.c_str(), o.resume ? "a" : "w");
    if (!jsonl)
      return trainError(TrainFailure::io, "cannot write '" + o.jsonl + "'");
  }
  if (!o.metrics.empty()) {
    metrics = std::fopen(o.metrics.c_str(), o.resume ? "a" : "w");
    if (!metrics)
      return trainError(TrainFailure::io, "cannot write '" + o.metrics + "'");
    if (!o.resume) {
      std::fprintf(metrics, "step,loss,lr");
      for (size_t k = 0; k < depthOut.size(); ++k)
        std::fprintf(metrics, ",loss_depth%zu", k + 1);
      std::fprintf(metrics, "\n");
    }
  }
  return std::nullopt;
}

TrainStatus Trainer::Impl::validationLoss(std::vector<double> &sum) {
  // eval_step over the first `evalBatches` batches of the validation data
  // (the same batches every time), with the current parameters (its
  // inputs: data, target, parameters, bound to train_step's by name).
  if (auto e = syncHost())
    return e;
  std::vector<const void *> ip(eval->inputs.size());
  for (size_t i = 0; i < eval->inputs.size(); ++i) {
    auto it = inIndex.find(eval->inputs[i].name);
    if (it == inIndex.end())
      return trainError(TrainFailure::io, "eval_step input '" + eval->inputs[i].name +
                                              "' matches no train_step input");
    ip[i] = in[it->second].data.data();
  }
  HostTensor x = in[xIndex], t = in[tIndex];
  size_t xi0 = SIZE_MAX, ti0 = SIZE_MAX;
  for (size_t i = 0; i < eval->inputs.size(); ++i) {
    if (eval->inputs[i].name == train->inputs[xIndex].name)
      xi0 = i;
    if (eval->inputs[i].name == kTarget)
      ti0 = i;
  }
  ip[xi0] = x.data.data();
  ip[ti0] = t.data.data();
  int64_t n = tokens ? (static_cast<int64_t>(val.tokens.size()) - 1) / seqLen : val.inputs.shape[0];
  // Outputs: the loss, then (LPA) the loss at each depth; all scalars.
  std::vector<HostTensor> eout(eval->outputs.size());
  std::vector<void *> op;
  for (size_t i = 0; i < eout.size(); ++i) {
    if (eval->outputs[i].dtype != DType::F32 || eval->outputs[i].byteSize() != 4)
      return trainError(TrainFailure::io,
                        "eval_step output '" + eval->outputs[i].name + "' is not a scalar loss");
    eout[i].dtype = DType::F32;
    eout[i].data.assign(4, 0);
    op.push_back(eout[i].data.data());
  }
  sum.assign(eout.size(), 0.0);
  for (int64_t k = 0; k < o.evalBatches; ++k) {
    std::vector<int64_t> rows(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i)
      rows[static_cast<size_t>(i)] = (k * batch + i) % n;
    if (tokens) {
      fillWindows(val.tokens, rows, seqLen, x, t);
    } else {
      gatherRows(val.inputs, rows, x);
      gatherRows(val.targets, rows, t);
    }
    if (auto err = model->runRaw(kEvalFunction, ip.data(), op.data()))
      return callError(*err);
    for (size_t i = 0; i < eout.size(); ++i)
      sum[i] += eout[i].at(0);
  }
  for (double &v : sum)
    v /= static_cast<double>(o.evalBatches);
  return std::nullopt;
}

TrainStatus Trainer::Impl::step(int64_t step, StepResult &result) {
  auto t0 = std::chrono::steady_clock::now();
  double lr = learningRate(step);
  in[inIndex[kLearningRate]] = scalarTensor(lr);
  if (adam) {
    double t = static_cast<double>(step + 1);
    in[inIndex[kBiasCorrection1]] = scalarTensor(1.0 / (1.0 - std::pow(o.beta1, t)));
    in[inIndex[kBiasCorrection2]] = scalarTensor(1.0 / (1.0 - std::pow(o.beta2, t)));
  }
  if (split) {
    if (auto e = splitStep(step))
      return e;
  } else {
    std::vector<int64_t> rows = order.batchRows(step, batch, examples);
    if (tokens) {
      fillWindows(data.tokens, rows, seqLen, in[xIndex], in[tIndex]);
    } else {
      gatherRows(data.inputs, rows, in[xIndex]);
      gatherRows(data.targets, rows, in[tIndex]);
    }
    std::vector<const void *> ip;
    std::vector<void *> op;
    for (HostTensor &t : in)
      ip.push_back(t.data.data());
    for (HostTensor &t : out)
      op.push_back(t.data.data());
    if (auto err = model->runRaw(kTrainFunction, ip.data(), op.data()))
      return callError(*err);
  }
  double loss = out[lossOut].at(0);
  if (!std::isfinite(loss))
    return trainError(TrainFailure::diverged, "the loss is " + std::to_string(loss) +
                                                  " at step " + std::to_string(step) +
                                                  "; lower --lr or add --warmup");
  for (auto [oi, ii] : carry)
    std::swap(out[oi].data, in[ii].data);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.commSeconds = split ? commSeconds : 0.0;
  result.buckets = split && ranks > 1 ? bucketStart.size() - 1 : 0;
  result.bucketsEarly = split && ranks > 1 ? earlyBuckets : 0;
  result.step = step;
  result.loss = loss;
  result.lr = lr;
  result.depthLosses.clear();
  for (size_t k : depthOut)
    result.depthLosses.push_back(out[k].at(0));
  histStep.push_back(static_cast<double>(step));
  histLoss.push_back(loss);
  for (size_t k = 0; k < depthOut.size(); ++k)
    histDepth[k].push_back(result.depthLosses[k]);
  if (metrics) {
    std::fprintf(metrics, "%lld,%.9g,%.9g", static_cast<long long>(step), loss, lr);
    for (double d : result.depthLosses)
      std::fprintf(metrics, ",%.9g", d);
    std::fprintf(metrics, "\n");
  }
  if (jsonl) {
    std::fprintf(jsonl, "{\"step\":%lld,\"loss\":%.9g,\"lr\":%.9g", static_cast<long long>(step),
                 loss, lr);
    for (size_t k = 0; k < depthOut.size(); ++k)
      std::fprintf(jsonl, ",\"loss_depth%zu\":%.9g", k + 1, result.depthLosses[k]);
    std::fprintf(jsonl, ",\"step_ms\":%.4f", result.seconds * 1e3);
    if (ranks > 1)
      std::fprintf(jsonl, ",\"allreduce_ms\":%.4f,\"allreduce_buckets\":%zu,"
                          "\"allreduce_buckets_early\":%zu",
                   result.commSeconds * 1e3, result.buckets, result.bucketsEarly);
    if (!normOut.empty()) {
      std::fprintf(jsonl, ",\"grad_norms\":{");
      for (size_t k = 0; k < normOut.size(); ++k)
        std::fprintf(jsonl, "%s%s:%.9g", k ? "," : "",
                     jsonQuote(train->outputs[normOut[k]].name.substr(std::strlen(kGradNormPrefix)))
                         .c_str(),
                     out[normOut[k]].at(0));
      std::fprintf(jsonl, "}");
    }
    std::fprintf(jsonl, "}\n");
  }
  for (FILE *log : {metrics, jsonl})
    if (log)
      std::fflush(log);
  return std::nullopt;
}

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Trainer::~Trainer() = default;

std::unique_ptr<Trainer> Trainer::create(const Executable &model, const std::string &artifact,
                                         const TrainerOptions &options, TrainError &error) {
  auto impl = std::make_unique<Impl>();
  Impl &t = *impl;
  t.model = &model;
  t.o = options;
  t.artifact = artifact;
  t.tokens = !options.data.empty() || !options.text.empty();
  t.order.shuffle = options.shuffle;
  t.order.seed = options.seed;
  TrainStatus status = t.selectSteps(artifact);
  if (!status)
    status = t.readData();
  if (!status)
    status = t.bind();
  if (!status)
    status = t.loadInitialParameters();
  // Rank 0 resumes (and cleans up the checkpoint folder); every rank then
  // starts from its state.
  if (!status && options.resume && t.root())
    status = t.resume();
  if (!status)
    status = t.broadcastState();
  if (!status)
    status = t.setupDeviceSums();
  if (!status) {
    t.lastCheckpoint = options.resume ? t.start : -1;
    t.lastCheckpointDir = options.checkpoint;
    t.next = t.start;
    if (options.resume && t.root())
      status = t.resumeLogs();
  }
  if (!status)
    status = t.openLogs();
  if (!status) {
    t.adam = t.inIndex.count(kBiasCorrection1) > 0;
    if (!options.optimizer.empty() && t.adam != (options.optimizer == "adamw"))
      status = trainError(TrainFailure::usage,
                          "--optimizer=" + options.optimizer + ": '" + artifact +
                              "' was compiled for " + (t.adam ? "adamw" : "sgd") +
                              " (its train step fixes the optimizer)");
  }
  if (!status) {
    t.end = options.stopAfter >= 0 ? std::min(options.stopAfter, options.steps) : options.steps;
    if (t.end < t.start)
      status = trainError(TrainFailure::usage,
                          "--stop-after=" + std::to_string(options.stopAfter) +
                              " is before the checkpoint's step " + std::to_string(t.start));
  }
  if (status) {
    error = *status;
    return nullptr;
  }
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

std::string Trainer::gradientSums() const { return impl->sums; }
int64_t Trainer::firstStep() const { return impl->start; }
int64_t Trainer::endStep() const { return impl->end; }
int64_t Trainer::batchSize() const { return impl->globalBatch(); }
int Trainer::rank() const { return impl->rank; }
int Trainer::ranks() const { return impl->ranks; }
int64_t Trainer::itemsPerExample() const { return impl->tokens ? impl->seqLen : 1; }
bool Trainer::tokenData() const { return impl->tokens; }

TrainStatus Trainer::run(const std::function<void(const StepResult &)> &onStep,
                         const std::function<void(int64_t, const std::vector<double> &)> &onValidation) {
  Impl &t = *impl;
  const TrainerOptions &o = t.o;
  StepResult result;
  for (int64_t step = t.start; step < t.end; ++step) {
    if (auto e = t.step(step, result))
      return e;
    if (t.validate && t.root() && (step + 1) % o.evalEvery == 0) {
      std::vector<double> vl;
      if (auto e = t.validationLoss(vl))
        return e;
      t.valStep.push_back(static_cast<double>(step + 1));
      t.valLoss.push_back(vl[0]);
      if (onValidation)
        onValidation(step + 1, vl);
      if (t.jsonl) {
        std::fprintf(t.jsonl, "{\"step\":%lld,\"val_loss\":%.9g", static_cast<long long>(step + 1),
                     vl[0]);
        for (size_t k = 1; k < vl.size(); ++k)
          std::fprintf(t.jsonl, ",\"val_loss_depth%zu\":%.9g", k, vl[k]);
        std::fprintf(t.jsonl, "}\n");
      }
    }
    if (onStep)
      onStep(result);
    if (!o.checkpoint.empty() && o.checkpointEvery > 0 && (step + 1) % o.checkpointEvery == 0)
      if (auto e = t.writeCheckpoint(step + 1))
        return e;
  }
  if (!o.checkpoint.empty()) {
    if (auto e = t.writeCheckpoint(t.end))
      return e;
  } else if (auto e = t.drawPlot()) {
    return e;
  }
  for (FILE **log : {&t.metrics, &t.jsonl}) {
    if (*log && std::fclose(*log) != 0) {
      *log = nullptr;
      return trainError(TrainFailure::io,
                        "cannot write the training log: " + std::string(std::strerror(errno)));
    }
    *log = nullptr;
  }
  return std::nullopt;
}

TrainStatus Trainer::saveParameters(const std::string &path) {
  Impl &t = *impl;
  if (auto e = t.syncHost())
    return e;
  std::vector<SafetensorsEntry> entries;
  for (size_t i : t.paramIn)
    entries.push_back({t.train->inputs[i].name.substr(std::strlen(kParamPrefix)), "F32",
                       t.in[i].shape, std::string(t.in[i].data.begin(), t.in[i].data.end())});
  if (auto err = writeSafetensors(path, entries, {{"producer", "rewire-train"}}))
    return trainError(TrainFailure::io, *err);
  return std::nullopt;
}

} // namespace rewire::runtime
