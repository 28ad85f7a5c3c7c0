//===- Options.cpp - rewire-train's command line --------------------------===//
#include "tools/rewire-train/Options.h"

#include "rewire/Support/Npy.h"
#include "rewire/Support/Printable.h"
#include "rewire/Version.h"
#include "tools/common/Flags.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace rewire::train_tool {

using namespace rewire::runtime;

namespace {
runtime::Communicator *dieComm = nullptr;
} // namespace

void setDieCommunicator(runtime::Communicator *comm) { dieComm = comm; }

void die(const std::string &message, int code) {
  bool many = dieComm && dieComm->size() > 1;
  std::cerr << "rewire-train"
            << (many ? " (rank " + std::to_string(dieComm->rank()) + ")" : std::string())
            << ": error: " << printable(message) << "\n";
  if (many)
    dieComm->abort(code);
  std::exit(code);
}

namespace {

/// Flags that shape the compiled train step: a precompiled artifact cannot
/// honor them (checked in main).
constexpr unsigned kCompileOnly = 1;

} // namespace

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
              [&] { o.gradNorms = true; }, kCompileOnly)
      .value("grad-accum", "K",
             "sum gradients over K micro-batches of the compiled\n"
             "batch per step (the global batch: batch x K x ranks)",
             [&](const std::string &v) {
               t.gradAccum = flags.count(v, "grad-accum");
               if (t.gradAccum < 1)
                 die("--grad-accum must be at least 1", 1);
             })
      .value("bucket-mb", "MB",
             "under mpirun: sum gradients in buckets of MB MiB, each\n"
             "started as soon as the backward has finished it\n"
             "(default 4)",
             [&](const std::string &v) {
               t.bucketMb = flags.nonNegative(v, "bucket-mb");
               if (!(t.bucketMb > 0) || t.bucketMb > 1e6)
                 die("--bucket-mb must be a size in MiB above 0, got '" + v + "'", 1);
             })
      .toggle("deterministic-reduce",
              "under mpirun: sum gradients in rank order (the same\n"
              "bits every run; moves N times the data)",
              [&] { o.deterministicReduce = true; });
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
  if (o.splitSteps)
    spec += ",split=true";
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

} // namespace rewire::train_tool
