//===- rewire-train.cpp - Train a model with the compiled train step ------===//
//
// Compiles the model with `rewire-compile --train` (loss, gradients and the
// optimizer update are IR, see rewire-train-step) and trains it with the
// runtime's Trainer (include/rewire/Runtime/Trainer.h: the loop, the
// schedule, validation, logs, checkpoints). This file is the flags, the
// progress line and --export.
//
//   rewire-train model.onnx --inputs x.npy --targets y.npy --steps 200 \
//       --optimizer adamw --lr 1e-3 --metrics m.csv --checkpoint ckpt/
//
// Checkpoints are `model-<step>.safetensors` (parameters and state) plus
// `state.json` naming it, each written atomically; state.json is written
// last, so a kill at any moment leaves a consistent pair. --resume continues
// from it and reproduces the uninterrupted run bit for bit.
//
// Exit codes: 0 trained; 1 bad command line; 2 data that does not fit the
// model; 3 the loss became NaN or infinite; 4 compile, load or file I/O.
//
//===----------------------------------------------------------------------===//
#include "rewire/Runtime/CudaRuntime.h"
#include "rewire/Runtime/Trainer.h"
#include "rewire/Support/AtomicFile.h"
#include "rewire/Support/Npy.h"
#include "rewire/Support/Printable.h"
#include "rewire/Version.h"
#include "tools/common/CompileCache.h"
#include "tools/common/Flags.h"
#include "tools/common/OutOfMemory.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <unistd.h>

using namespace rewire;
using namespace rewire::runtime;

namespace {

[[noreturn]] void die(const std::string &message, int code) {
  std::cerr << "rewire-train: error: " << printable(message) << "\n";
  std::exit(code);
}

struct Options {
  TrainerOptions train;
  std::vector<std::string> compileOnly; ///< compile-shaping flags given
  bool optimizerGiven = false;
  std::string model, optimizer = "sgd", schedule = "constant", output, residual, frozen,
      depthWeights, loss, exportOnnx, device; ///< device: cpu, cuda, or "" (the artifact's)
  double momentum = 0, weightDecay = 0, eps = 1e-8, clip = 0;
  int64_t logEvery = 10, batch = 0, seqLen = 0;
  bool gradNorms = false, allowNoResidual = false;
};

/// Flags that shape the compiled train step: a precompiled artifact cannot
/// honor them (checked in main).
constexpr unsigned kCompileOnly = 1;

Options parse(int argc, char **argv) {
  Options o;
  TrainerOptions &t = o.train;
  tools::FlagParser flags(
      "usage: rewire-train MODEL.(onnx|mlir|rwx) --inputs X.npy --targets Y.npy [options]\n"
      "       rewire-train MODEL --data TOKENS.bin [--token-dtype=uint16|uint32] [options]\n"
      "       rewire-train MODEL --text FILE.txt [options]       (bytes are the tokens)\n",
      "exit codes: 0 ok, 1 usage, 2 data, 3 loss not finite, 4 compile/load/IO\n",
      "rewire-train " REWIRE_VERSION_STRING, [](const std::string &m, int c) { die(m, c); });
  auto text = [](std::string &field) { return [&field](const std::string &v) { field = v; }; };
  auto number = [&](double &field, const char *flag) {
    return [&field, &flags, flag](const std::string &v) { field = flags.nonNegative(v, flag); };
  };
  auto count = [&](int64_t &field, const char *flag) {
    return [&field, &flags, flag](const std::string &v) { field = flags.count(v, flag); };
  };
  flags
      .value("inputs", "X.npy", "training inputs (one example per row)", text(t.inputs))
      .value("targets", "Y.npy", "training targets", text(t.targets))
      .value("data", "TOKENS.bin", "token stream (windows of the model's sequence length)",
             text(t.data))
      .value("text", "FILE.txt", "a text file whose bytes are the tokens", text(t.text))
      .value("token-dtype", "uint16|uint32", "width of the tokens in --data (default uint16)",
             text(t.tokenDtype))
      .value("loss", "mse|cross_entropy", "default: cross_entropy for token data, else mse",
             text(o.loss), kCompileOnly)
      .value("steps", "N", "training steps (default 100)", count(t.steps, "steps"))
      .value("lr", "LR", "learning rate (default 1e-3)", number(t.lr, "lr"))
      .value("optimizer", "sgd|adamw", "default sgd", text(o.optimizer), kCompileOnly)
      .value("momentum", "M", "SGD momentum", number(o.momentum, "momentum"), kCompileOnly)
      .value("weight-decay", "WD", "decoupled weight decay", number(o.weightDecay, "weight-decay"),
             kCompileOnly)
      .value("beta1", "B1", "AdamW (default 0.9)", number(t.beta1, "beta1"), kCompileOnly)
      .value("beta2", "B2", "AdamW (default 0.999)", number(t.beta2, "beta2"), kCompileOnly)
      .value("eps", "E", "AdamW (default 1e-8)", number(o.eps, "eps"), kCompileOnly)
      .value("clip", "NORM", "clip gradients to a global L2 norm", number(o.clip, "clip"),
             kCompileOnly)
      .value("schedule", "constant|cosine", "learning-rate schedule", text(o.schedule))
      .value("warmup", "W", "linear warm-up steps", count(t.warmup, "warmup"))
      .value("min-lr", "LR", "the cosine schedule's floor", number(t.minLr, "min-lr"))
      .toggle("shuffle", "shuffle examples per epoch (seeded)", [&] { t.shuffle = true; })
      .value("seed", "S", "shuffle seed", count(t.seed, "seed"))
      .value("residual", "KIND[:opts]", "rewrite the residual stream first", text(o.residual),
             kCompileOnly)
      .toggle("allow-no-residual",
              "with --residual: train a model without residual\nadds unchanged (default: an error)",
              [&] { o.allowNoResidual = true; }, kCompileOnly)
      .value("params", "FILE.safetensors",
             "initial parameters (default: the model's own);\n"
             "the new parameters of a rewrite may be omitted",
             text(t.params))
      .value("frozen", "PREFIX,PREFIX", "parameters not to train", text(o.frozen), kCompileOnly)
      .value("depth-weights", "uniform|linear|last|W1,..,WK",
             "LPA (--residual=lpa): per-depth loss weights", text(o.depthWeights), kCompileOnly)
      .value("metrics", "FILE.csv", "step,loss,lr per step (loss before the update)",
             text(t.metrics))
      .value("log-every", "K", "progress line every K steps (0: none)",
             count(o.logEvery, "log-every"))
      .value("plot", "FILE.png",
             "loss curves (training, validation, per depth),\n"
             "redrawn at each checkpoint and at the end",
             text(t.plot))
      .value("checkpoint", "DIR", "write checkpoints (state.json + model-STEP.safetensors)",
             text(t.checkpoint))
      .value("checkpoint-every", "K", "a checkpoint every K steps (and at the end)",
             count(t.checkpointEvery, "checkpoint-every"))
      .toggle("resume", "continue from --checkpoint's state, bit for bit",
              [&] { t.resume = true; })
      .value("device", "cpu|cuda",
             "where train_step runs (cuda: compiled with --target=cuda;\n"
             "weights and optimizer state stay on the GPU, docs/cuda.md)",
             [&](const std::string &v) {
               if (v != "cpu" && v != "cuda")
                 die("--device expects cpu or cuda, got '" + v + "'", 1);
               o.device = v;
             })
      .value("stop-after", "N",
             "stop (and checkpoint) after step N of --steps; the\n"
             "schedule still spans --steps (resume to go on)",
             count(t.stopAfter, "stop-after"))
      .value("output", "FILE.safetensors", "the trained parameters (model names)", text(o.output))
      .value("export", "FILE.onnx", "the trained (and rewritten) model as ONNX",
             text(o.exportOnnx))
      .value("val-data", "TOKENS.bin", "validation tokens", text(t.valData))
      .value("val-inputs", "X.npy", "validation inputs (with --val-targets)", text(t.valInputs))
      .value("val-targets", "Y.npy", "validation targets", text(t.valTargets))
      .value("eval-every", "K", "validation loss every K steps", count(t.evalEvery, "eval-every"))
      .value("batch", "N",
             "for a model exported with dynamic axes: its batch size\n"
             "(binds the symbolic batch dim of an .onnx model)",
             count(o.batch, "batch"), kCompileOnly)
      .value("seq-len", "T",
             "with --data/--text and a dynamic sequence axis: the\n"
             "window length (with --batch)",
             count(o.seqLen, "seq-len"), kCompileOnly)
      .value("eval-batches", "N", "batches per validation (mean; default 8)",
             count(t.evalBatches, "eval-batches"))
      .value("jsonl", "FILE.jsonl", "one JSON object per step (and per validation)",
             text(t.jsonl))
      .toggle("grad-norms", "add each parameter's gradient norm to the JSONL rows",
              [&] { o.gradNorms = true; }, kCompileOnly);
  flags.parse(argc, argv, [&](const std::string &a) {
    if (!o.model.empty())
      die("more than one model given ('" + o.model + "', '" + a + "')", 1);
    o.model = a;
  });
  for (const std::string &f : flags.given(kCompileOnly)) {
    if (f == "--optimizer")
      o.optimizerGiven = true;
    else if (std::find(o.compileOnly.begin(), o.compileOnly.end(), f) == o.compileOnly.end())
      o.compileOnly.push_back(f);
  }
  bool tokens = !t.data.empty() || !t.text.empty();
  if (o.model.empty() || (!tokens && (t.inputs.empty() || t.targets.empty())) ||
      (!t.data.empty() && !t.text.empty())) {
    flags.usage(std::cerr);
    std::exit(1);
  }
  if (o.loss.empty())
    o.loss = tokens ? "cross_entropy" : "mse";
  if (o.loss != "mse" && o.loss != "cross_entropy")
    die("--loss must be mse or cross_entropy", 1);
  if (t.tokenDtype != "uint16" && t.tokenDtype != "uint32")
    die("--token-dtype must be uint16 or uint32", 1);
  if (o.optimizer != "sgd" && o.optimizer != "adamw")
    die("--optimizer must be sgd or adamw", 1);
  if (o.schedule != "constant" && o.schedule != "cosine")
    die("--schedule must be constant or cosine", 1);
  t.cosine = o.schedule == "cosine";
  if (t.beta1 >= 1 || t.beta2 >= 1)
    die("--beta1 and --beta2 must be below 1", 1);
  if (t.resume && t.checkpoint.empty())
    die("--resume needs --checkpoint=DIR", 1);
  for (const std::string *s : {&o.residual, &o.frozen, &o.depthWeights})
    for (char c : *s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("_-.=:,", c))
        die("'" + *s + "' contains '" + std::string(1, c) + "'", 1);
  if (o.optimizerGiven)
    t.optimizer = o.optimizer;
  return o;
}

/// rewire-compile's flags for the train step the options describe.
std::vector<std::string> compileFlags(const Options &o) {
  const TrainerOptions &t = o.train;
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                ",momentum=%.17g,weight-decay=%.17g,beta1=%.17g,beta2=%.17g,eps=%.17g,clip=%.17g",
                o.momentum, o.weightDecay, t.beta1, t.beta2, o.eps, o.clip);
  // Lists are joined by '+' inside --train (',' separates its options).
  auto list = [](std::string s) {
    std::replace(s.begin(), s.end(), ',', '+');
    return s;
  };
  std::string spec = o.optimizer + ":loss=" + o.loss + buf;
  if (!o.frozen.empty())
    spec += ",frozen=" + list(o.frozen);
  if (o.gradNorms)
    spec += ",grad-norms=true";
  if (!o.depthWeights.empty())
    spec += ",depth-weights=" + list(o.depthWeights);
  std::vector<std::string> flags = {"--train=" + spec};
  if (!o.residual.empty())
    flags.push_back("--residual=" + o.residual);
  if (o.allowNoResidual)
    flags.push_back("--allow-no-residual");
  if (o.device == "cuda")
    flags.push_back("--target=cuda");
  if (o.batch <= 0) {
    if (o.seqLen > 0)
      die("--seq-len needs --batch", 1);
    return flags;
  }
  // The model's one input at the batch asked for: [N, rest of an example]
  // for --inputs, [N, T] token windows for --data/--text.
  std::string shape = std::to_string(o.batch);
  if (!t.inputs.empty()) {
    HostTensor x;
    if (auto err = readNpy(t.inputs, x))
      die("--inputs: " + *err, 2);
    for (size_t d = 1; d < x.shape.size(); ++d)
      shape += "x" + std::to_string(x.shape[d]);
  } else {
    if (o.seqLen <= 0)
      die("--batch with token data needs --seq-len (the window length)", 1);
    shape += "x" + std::to_string(o.seqLen);
  }
  if (o.model.size() < 5 || o.model.compare(o.model.size() - 5, 5, ".onnx") != 0)
    die("--batch binds an .onnx model's symbolic batch dim; '" + o.model +
            "' is not an .onnx model (its shapes are fixed)", 1);
  flags.push_back("--input-shape=" + shape);
  return flags;
}

} // namespace

int main(int argc, char **argv) {
  rewire::tools::exitOnOutOfMemory("rewire-train", 4);
  Options o = parse(argc, argv);
  auto endsWith = [&](const char *ext) {
    size_t n = std::strlen(ext);
    return o.model.size() > n && o.model.compare(o.model.size() - n, n, ext) == 0;
  };
  bool compiled = endsWith(".rwx") || endsWith(".rwcu");
  if (compiled && !o.compileOnly.empty()) {
    std::string list;
    for (const std::string &f : o.compileOnly)
      list += (list.empty() ? "" : ", ") + f;
    die(list + ": '" + o.model + "' is compiled already, with its train step fixed; pass the .onnx "
        "or .mlir model (rewire-train compiles it with these flags) or recompile with "
        "rewire-compile --train=...", 1);
  }
  if (!o.exportOnnx.empty() && compiled)
    die("--export needs the model as .onnx or .mlir, not a compiled artifact", 1);
  // Every output is checked before training, not after the last step.
  for (auto [flag, path] : {std::pair<const char *, const std::string *>{"--output", &o.output},
                            {"--export", &o.exportOnnx}, {"--metrics", &o.train.metrics},
                            {"--jsonl", &o.train.jsonl}, {"--plot", &o.train.plot}})
    if (!path->empty())
      if (auto err = checkOutputPath(*path))
        die(std::string(flag) + ": " + *err, 4);
  std::string artifact =
      compiled ? o.model : tools::compileCached(o.model, compileFlags(o), die, !o.exportOnnx.empty());

  std::string error;
  bool cuda = isCudaArtifact(artifact);
  if (o.device == "cuda" && !cuda)
    die("'" + artifact + "' is not a CUDA artifact; compile it with rewire-compile --target=cuda "
        "--train=..., or train with --device=cpu", 1);
  if (cuda && o.device == "cpu")
    die("'" + artifact + "' is a CUDA artifact: train with --device=cuda", 1);
  auto model = Executable::load(artifact, error);
  if (!model)
    die(error, 4);
  TrainError failed;
  auto trainer = Trainer::create(*model, artifact, o.train, failed);
  if (!trainer)
    die(failed.message, static_cast<int>(failed.failure));
  int64_t start = trainer->firstStep(), end = trainer->endStep();
  if (o.train.resume)
    std::cerr << "rewire-train: resumed from step " << start << "\n";

  auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](const StepResult &r) {
    int64_t step = r.step;
    if (o.logEvery <= 0 || ((step + 1) % o.logEvery != 0 && step + 1 != end))
      return;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double perStep = secs / static_cast<double>(step + 1 - start);
    bool tokens = trainer->tokenData();
    std::fprintf(stderr, "step %lld/%lld  loss %.6f  lr %.3g  %.0f %s/s  ETA %.0fs\n",
                 static_cast<long long>(step + 1), static_cast<long long>(o.train.steps), r.loss,
                 r.lr,
                 static_cast<double>(trainer->batchSize() * trainer->itemsPerExample()) / perStep,
                 tokens ? "tokens" : "examples",
                 perStep * static_cast<double>(o.train.steps - step - 1));
  };
  auto validation = [](int64_t step, const std::vector<double> &vl) {
    std::fprintf(stderr, "step %lld  validation loss %.6f", static_cast<long long>(step), vl[0]);
    for (size_t k = 1; k < vl.size(); ++k)
      std::fprintf(stderr, "%s%.4f", k == 1 ? "  by depth " : " ", vl[k]);
    std::fprintf(stderr, "\n");
  };
  if (auto e = trainer->run(progress, validation))
    die(e->message, static_cast<int>(e->failure));
  if (!o.output.empty())
    if (auto e = trainer->saveParameters(o.output))
      die(e->message, static_cast<int>(e->failure));
  if (o.exportOnnx.empty())
    return 0;
  // The model as compiled (imported and rewritten: the IR the compile kept
  // beside the artifact, in this user's private cache), its parameters
  // replaced by the trained ones.
  std::string dir = artifact.substr(0, artifact.rfind('/') + 1);
  std::string trained = o.output.empty()
                            ? dir + "trained." + std::to_string(::getpid()) + ".safetensors"
                            : o.output;
  if (o.output.empty())
    if (auto e = trainer->saveParameters(trained))
      die(e->message, static_cast<int>(e->failure));
  int rc = tools::runTool({tools::toolDir() + "/rewire-export", dir + tools::kRewrittenIR,
                           "--params", trained, "-o", o.exportOnnx});
  if (o.output.empty())
    ::unlink(trained.c_str());
  if (rc != 0)
    die("exporting: rewire-export failed", 4);
  return 0;
}
