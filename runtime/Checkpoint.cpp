//===- Checkpoint.cpp - The trainer's checkpoints, logs and plot ----------===//
//
// Checkpoints are `model-<step>.safetensors` (parameters and state) plus
// `state.json` naming it, each written atomically; state.json is written
// last, so a kill at any moment leaves a consistent pair. Resuming reads
// them back, removes only the stale files this trainer wrote, and cuts the
// logs back to the checkpoint's step.
//
//===----------------------------------------------------------------------===//
#include "TrainerImpl.h"

#include "rewire/Plot/Plot.h"
#include "rewire/Support/AtomicFile.h"
#include "rewire/Support/Json.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Support/Safetensors.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rewire::runtime {

namespace {

/// Marks the checkpoints the trainer writes (safetensors metadata
/// "writer"): resuming deletes only stale files that carry it.
const char *const kCheckpointWriter = "rewire-train checkpoint";

/// `model-<step>.safetensors` (the step's digits, `end` past the suffix).
std::optional<std::string> stepOf(const std::string &n, size_t &end) {
  const std::string pre = "model-", suf = ".safetensors";
  size_t i = pre.size();
  if (n.rfind(pre, 0) != 0)
    return std::nullopt;
  while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i])))
    ++i;
  if (i == pre.size() || i - pre.size() > 18 || n.compare(i, suf.size(), suf) != 0)
    return std::nullopt;
  end = i + suf.size();
  return n.substr(pre.size(), i - pre.size());
}

/// Whether `n` from `at` is an atomic write's temp suffix (`.tmp.<pid>`).
bool isTemp(const std::string &n, size_t at) {
  const std::string tmp = ".tmp.";
  if (n.compare(at, tmp.size(), tmp) != 0 || at + tmp.size() == n.size())
    return false;
  return std::all_of(n.begin() + static_cast<long>(at + tmp.size()), n.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

} // namespace

std::string Trainer::Impl::checkpointPath(int64_t step) const {
  return o.checkpoint + "/model-" + std::to_string(step) + ".safetensors";
}

TrainStatus Trainer::Impl::drawPlot() {
  if (o.plot.empty() || !root())
    return std::nullopt;
  // Drawn in order: per-depth losses under the training loss, the
  // validation points on top.
  std::vector<plot::Series> series;
  for (size_t k = 0; k < histDepth.size(); ++k)
    series.push_back({"depth " + std::to_string(k + 1), histStep, histDepth[k], 0, false});
  series.push_back({"training loss", histStep, histLoss, 0x0072B2, false});
  if (!valStep.empty())
    series.push_back({"validation loss", valStep, valLoss, 0xD55E00, true});
  plot::Axes axes{"REWIRE-TRAIN", "STEP", "LOSS", false};
  if (auto err = plot::writeLineChart(o.plot, series, axes))
    return trainError(TrainFailure::io, "cannot write the plot: " + *err);
  return std::nullopt;
}

TrainStatus Trainer::Impl::writeCheckpoint(int64_t step) {
  if (!root())
    return std::nullopt; // rank 0 writes; the ranks' states are equal
  if (auto e = syncHost())
    return e;
  if (auto e = drawPlot())
    return e;
  // The logs are flushed every step (readable while training) and synced
  // before each checkpoint, so the rows before a checkpoint survive a kill.
  for (FILE *log : {metrics, jsonl})
    if (log && (std::fflush(log) != 0 || ::fsync(fileno(log)) != 0))
      return trainError(TrainFailure::io,
                        "cannot write the training log: " + std::string(std::strerror(errno)));
  ::mkdir(o.checkpoint.c_str(), 0755);
  std::vector<SafetensorsEntry> entries;
  for (const std::vector<size_t> *group : {&paramIn, &stateIn})
    for (size_t i : *group)
      entries.push_back({train->inputs[i].name, "F32", in[i].shape,
                         std::string(in[i].data.begin(), in[i].data.end())});
  if (auto err = writeSafetensors(checkpointPath(step), entries,
                                  {{"step", std::to_string(step)}, {"writer", kCheckpointWriter}}))
    return trainError(TrainFailure::io, *err);
  std::string state = "{\"format\":\"rewire-train-state\",\"version\":1,\"step\":" +
                      std::to_string(step) + ",\"seed\":" + std::to_string(o.seed) +
                      ",\"global_batch\":" + std::to_string(globalBatch()) +
                      ",\"parameters\":" +
                      jsonQuote("model-" + std::to_string(step) + ".safetensors") + "}\n";
  if (auto err = writeFileAtomically(o.checkpoint + "/state.json", {&state}))
    return trainError(TrainFailure::io, *err);
  // The previous checkpoint is no longer referenced (only one this trainer
  // wrote in this folder).
  if (lastCheckpoint >= 0 && lastCheckpoint != step && lastCheckpointDir == o.checkpoint)
    ::unlink(checkpointPath(lastCheckpoint).c_str());
  lastCheckpoint = step;
  lastCheckpointDir = o.checkpoint;
  return std::nullopt;
}

TrainStatus Trainer::Impl::resume() {
  std::string text;
  if (auto err = readRegularFile(o.checkpoint + "/state.json", text, 1 << 20))
    return trainError(TrainFailure::io, "--resume: " + *err);
  JsonValue st;
  if (parseJson(text, st) || !st.get("step") || !st.get("step")->asInt())
    return trainError(TrainFailure::io,
                      "no valid checkpoint state in '" + o.checkpoint + "/state.json'");
  start = *st.get("step")->asInt();
  if (start < 0 || start > o.steps)
    return trainError(TrainFailure::io, "the checkpoint is at step " + std::to_string(start) +
                                            ", outside 0.." + std::to_string(o.steps) +
                                            " (--steps)");
  // The data order depends on the global batch; any split of it (ranks,
  // micro-batches) resumes. Checkpoints from before the field: any.
  if (const JsonValue *g = st.get("global_batch"))
    if (!g->asInt() || *g->asInt() != globalBatch())
      return trainError(TrainFailure::usage,
                        "the checkpoint was written at a global batch of " +
                            (g->asInt() ? std::to_string(*g->asInt()) : std::string("?")) +
                            " examples; this run's is " + std::to_string(globalBatch()) + " (" +
                            std::to_string(batch) + " x " + std::to_string(accum) +
                            " micro-batches x " + std::to_string(ranks) +
                            " ranks): resume with the same global batch");
  SafetensorsFile ck;
  if (auto err = readSafetensors(checkpointPath(start), ck))
    return trainError(TrainFailure::io, *err);
  for (const std::vector<size_t> *group : {&paramIn, &stateIn})
    for (size_t i : *group) {
      auto it = ck.tensors.find(train->inputs[i].name);
      if (it == ck.tensors.end())
        return trainError(TrainFailure::io,
                          "checkpoint '" + checkpointPath(start) + "' lacks '" +
                              train->inputs[i].name +
                              "' (was it written for another model or --optimizer?)");
      if (auto why = tensorMismatch(it->second.dtype, it->second.shape, in[i]))
        return trainError(TrainFailure::io, "checkpoint '" + checkpointPath(start) + "': '" +
                                                train->inputs[i].name + "' " + *why +
                                                " (was it written for another model?)");
      std::memcpy(in[i].data.data(), it->second.data.data(), in[i].data.size());
    }
  removeStaleCheckpointFiles();
  return std::nullopt;
}

void Trainer::Impl::removeStaleCheckpointFiles() {
  // A run killed while checkpointing can leave a temp file or a newer
  // checkpoint state.json does not name yet: both are stale now. Only files
  // this trainer wrote go: `model-<step>.safetensors` whose metadata says it
  // is a rewire-train checkpoint of that step, and the temp files of the
  // atomic writes (`<name>.tmp.<pid>` of those names).
  DIR *d = ::opendir(o.checkpoint.c_str());
  if (!d)
    return;
  std::string keep = "model-" + std::to_string(start) + ".safetensors";
  std::vector<std::string> stale;
  while (dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    size_t end = 0;
    bool ours = false;
    if (n.rfind("state.json.tmp.", 0) == 0) {
      ours = isTemp(n, std::strlen("state.json"));
    } else if (auto step = stepOf(n, end)) {
      if (end == n.size()) {
        SafetensorsMapping ck;
        ours = n != keep && !ck.open(o.checkpoint + "/" + n) && ck.metadata().count("writer") &&
               ck.metadata().at("writer") == kCheckpointWriter && ck.metadata().count("step") &&
               ck.metadata().at("step") == *step;
      } else {
        ours = isTemp(n, end);
      }
    }
    if (ours)
      stale.push_back(o.checkpoint + "/" + n);
  }
  ::closedir(d);
  for (const std::string &f : stale)
    ::unlink(f.c_str());
}

TrainStatus Trainer::Impl::truncateLog(const std::string &path, bool csv) {
  // A run killed after its last checkpoint logged steps that are now run
  // again.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return std::nullopt; // nothing logged yet
  std::string logged;
  if (auto err = readRegularFile(path, logged))
    return trainError(TrainFailure::io, "--resume: " + *err);
  std::istringstream f(logged);
  std::string line, kept;
  bool first = true;
  while (std::getline(f, line)) {
    long long step = -1;
    if (csv && first) {
      kept += line + "\n";
    } else if (csv ? std::sscanf(line.c_str(), "%lld,", &step) == 1
                   : std::sscanf(line.c_str(), "{\"step\":%lld", &step) == 1) {
      // JSONL validation rows carry the step after the update they follow.
      bool isVal = !csv && line.find("val_loss") != std::string::npos;
      if (isVal ? step <= start : step < start)
        kept += line + "\n";
    }
    first = false;
  }
  if (auto err = writeFileAtomically(path, {&kept}))
    return trainError(TrainFailure::io, *err);
  return std::nullopt;
}

TrainStatus Trainer::Impl::resumeLogs() {
  if (!o.metrics.empty()) {
    if (auto e = truncateLog(o.metrics, true))
      return e;
    // The plot continues the logged curve: step,loss,lr[,loss_depth<k>...].
    std::ifstream f(o.metrics);
    std::string line;
    std::getline(f, line); // header
    while (std::getline(f, line)) {
      std::vector<double> cols;
      std::stringstream row(line);
      for (std::string cell; std::getline(row, cell, ',');)
        cols.push_back(std::strtod(cell.c_str(), nullptr));
      if (cols.size() != 3 + depthOut.size())
        continue;
      histStep.push_back(cols[0]);
      histLoss.push_back(cols[1]);
      for (size_t k = 0; k < depthOut.size(); ++k)
        histDepth[k].push_back(cols[3 + k]);
    }
  }
  if (!o.jsonl.empty())
    if (auto e = truncateLog(o.jsonl, false))
      return e;
  return std::nullopt;
}

} // namespace rewire::runtime
