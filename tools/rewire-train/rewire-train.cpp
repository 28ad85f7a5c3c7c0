//===- rewire-train.cpp - Train a model with the compiled train step ------===//
//
// Compiles the model with `rewire-compile --train` (loss, gradients and the
// optimizer update are IR, see rewire-train-step) and runs train_step in a
// loop with the runtime: parameters and optimizer state live in two sets of
// buffers that swap roles each step (no copies), batches come from .npy
// files, the learning-rate schedule is computed here.
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
#include "rewire/Plot/Plot.h"
#include "rewire/Runtime/CudaRuntime.h"
#include "rewire/Runtime/Runtime.h"
#include "rewire/Support/AtomicFile.h"
#include "rewire/Support/Json.h"
#include "rewire/Support/Npy.h"
#include "rewire/Support/Printable.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Support/Safetensors.h"
#include "rewire/Version.h"
#include "tools/common/CompileCache.h"
#include "tools/common/Flags.h"
#include "tools/common/OutOfMemory.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <climits>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace rewire;
using namespace rewire::runtime;

namespace {

[[noreturn]] void die(const std::string &message, int code) {
  std::cerr << "rewire-train: error: " << printable(message) << "\n";
  std::exit(code);
}

struct Options {
  std::vector<std::string> compileOnly; ///< compile-shaping flags given
  bool optimizerGiven = false;
  std::string model, inputs, targets, optimizer = "sgd", schedule = "constant", metrics,
      checkpoint, output, residual, frozen, depthWeights, plot, params, data, text, tokenDtype = "uint16", loss, exportOnnx,
      valData, valInputs, valTargets, jsonl, device; ///< device: cpu, cuda, or "" (the artifact's)
  double lr = 1e-3, minLr = 0, momentum = 0, weightDecay = 0, beta1 = 0.9, beta2 = 0.999,
         eps = 1e-8, clip = 0;
  int64_t steps = 100, stopAfter = -1, warmup = 0, logEvery = 10, checkpointEvery = 0, seed = 0, evalEvery = 0,
          evalBatches = 8, batch = 0, seqLen = 0;
  bool shuffle = false, resume = false, gradNorms = false, allowNoResidual = false;
};

/// Marks the checkpoints this tool writes (safetensors metadata "writer"):
/// --resume deletes only stale files that carry it.
const char *const kCheckpointWriter = "rewire-train checkpoint";

/// Flags that shape the compiled train step: a precompiled artifact cannot
/// honor them (checked in main).
constexpr unsigned kCompileOnly = 1;

Options parse(int argc, char **argv) {
  Options o;
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
      .value("inputs", "X.npy", "training inputs (one example per row)", text(o.inputs))
      .value("targets", "Y.npy", "training targets", text(o.targets))
      .value("data", "TOKENS.bin", "token stream (windows of the model's sequence length)",
             text(o.data))
      .value("text", "FILE.txt", "a text file whose bytes are the tokens", text(o.text))
      .value("token-dtype", "uint16|uint32", "width of the tokens in --data (default uint16)",
             text(o.tokenDtype))
      .value("loss", "mse|cross_entropy", "default: cross_entropy for token data, else mse",
             text(o.loss), kCompileOnly)
      .value("steps", "N", "training steps (default 100)", count(o.steps, "steps"))
      .value("lr", "LR", "learning rate (default 1e-3)", number(o.lr, "lr"))
      .value("optimizer", "sgd|adamw", "default sgd", text(o.optimizer), kCompileOnly)
      .value("momentum", "M", "SGD momentum", number(o.momentum, "momentum"), kCompileOnly)
      .value("weight-decay", "WD", "decoupled weight decay", number(o.weightDecay, "weight-decay"),
             kCompileOnly)
      .value("beta1", "B1", "AdamW (default 0.9)", number(o.beta1, "beta1"), kCompileOnly)
      .value("beta2", "B2", "AdamW (default 0.999)", number(o.beta2, "beta2"), kCompileOnly)
      .value("eps", "E", "AdamW (default 1e-8)", number(o.eps, "eps"), kCompileOnly)
      .value("clip", "NORM", "clip gradients to a global L2 norm", number(o.clip, "clip"),
             kCompileOnly)
      .value("schedule", "constant|cosine", "learning-rate schedule", text(o.schedule))
      .value("warmup", "W", "linear warm-up steps", count(o.warmup, "warmup"))
      .value("min-lr", "LR", "the cosine schedule's floor", number(o.minLr, "min-lr"))
      .toggle("shuffle", "shuffle examples per epoch (seeded)", [&] { o.shuffle = true; })
      .value("seed", "S", "shuffle seed", count(o.seed, "seed"))
      .value("residual", "KIND[:opts]", "rewrite the residual stream first", text(o.residual),
             kCompileOnly)
      .toggle("allow-no-residual",
              "with --residual: train a model without residual\nadds unchanged (default: an error)",
              [&] { o.allowNoResidual = true; }, kCompileOnly)
      .value("params", "FILE.safetensors",
             "initial parameters (default: the model's own);\n"
             "the new parameters of a rewrite may be omitted",
             text(o.params))
      .value("frozen", "PREFIX,PREFIX", "parameters not to train", text(o.frozen), kCompileOnly)
      .value("depth-weights", "uniform|linear|last|W1,..,WK",
             "LPA (--residual=lpa): per-depth loss weights", text(o.depthWeights), kCompileOnly)
      .value("metrics", "FILE.csv", "step,loss,lr per step (loss before the update)",
             text(o.metrics))
      .value("log-every", "K", "progress line every K steps (0: none)",
             count(o.logEvery, "log-every"))
      .value("plot", "FILE.png",
             "loss curves (training, validation, per depth),\n"
             "redrawn at each checkpoint and at the end",
             text(o.plot))
      .value("checkpoint", "DIR", "write checkpoints (state.json + model-STEP.safetensors)",
             text(o.checkpoint))
      .value("checkpoint-every", "K", "a checkpoint every K steps (and at the end)",
             count(o.checkpointEvery, "checkpoint-every"))
      .toggle("resume", "continue from --checkpoint's state, bit for bit",
              [&] { o.resume = true; })
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
             count(o.stopAfter, "stop-after"))
      .value("output", "FILE.safetensors", "the trained parameters (model names)", text(o.output))
      .value("export", "FILE.onnx", "the trained (and rewritten) model as ONNX",
             text(o.exportOnnx))
      .value("val-data", "TOKENS.bin", "validation tokens", text(o.valData))
      .value("val-inputs", "X.npy", "validation inputs (with --val-targets)", text(o.valInputs))
      .value("val-targets", "Y.npy", "validation targets", text(o.valTargets))
      .value("eval-every", "K", "validation loss every K steps", count(o.evalEvery, "eval-every"))
      .value("batch", "N",
             "for a model exported with dynamic axes: its batch size\n"
             "(binds the symbolic batch dim of an .onnx model)",
             count(o.batch, "batch"), kCompileOnly)
      .value("seq-len", "T",
             "with --data/--text and a dynamic sequence axis: the\n"
             "window length (with --batch)",
             count(o.seqLen, "seq-len"), kCompileOnly)
      .value("eval-batches", "N", "batches per validation (mean; default 8)",
             count(o.evalBatches, "eval-batches"))
      .value("jsonl", "FILE.jsonl", "one JSON object per step (and per validation)",
             text(o.jsonl))
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
  bool tokens = !o.data.empty() || !o.text.empty();
  if (o.model.empty() || (!tokens && (o.inputs.empty() || o.targets.empty())) ||
      (!o.data.empty() && !o.text.empty())) {
    flags.usage(std::cerr);
    std::exit(1);
  }
  if (o.loss.empty())
    o.loss = tokens ? "cross_entropy" : "mse";
  if (o.loss != "mse" && o.loss != "cross_entropy")
    die("--loss must be mse or cross_entropy", 1);
  if (o.tokenDtype != "uint16" && o.tokenDtype != "uint32")
    die("--token-dtype must be uint16 or uint32", 1);
  if (o.optimizer != "sgd" && o.optimizer != "adamw")
    die("--optimizer must be sgd or adamw", 1);
  if (o.schedule != "constant" && o.schedule != "cosine")
    die("--schedule must be constant or cosine", 1);
  if (o.beta1 >= 1 || o.beta2 >= 1)
    die("--beta1 and --beta2 must be below 1", 1);
  if (o.resume && o.checkpoint.empty())
    die("--resume needs --checkpoint=DIR", 1);
  for (const std::string *s : {&o.residual, &o.frozen, &o.depthWeights})
    for (char c : *s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("_-.=:,", c))
        die("'" + *s + "' contains '" + std::string(1, c) + "'", 1);
  return o;
}

/// The learning rate of step `t` (0-based).
double learningRate(const Options &o, int64_t t) {
  if (t < o.warmup)
    return o.lr * static_cast<double>(t + 1) / static_cast<double>(o.warmup);
  if (o.schedule == "constant")
    return o.lr;
  double span = static_cast<double>(std::max<int64_t>(1, o.steps - o.warmup));
  double progress = std::min(1.0, static_cast<double>(t - o.warmup) / span);
  return o.minLr + 0.5 * (o.lr - o.minLr) * (1.0 + std::cos(M_PI * progress));
}

HostTensor scalarTensor(double v) {
  HostTensor t;
  t.dtype = DType::F32;
  float f = static_cast<float>(v);
  t.data.resize(4);
  std::memcpy(t.data.data(), &f, 4);
  return t;
}

/// Example indices of the batch for step t (a per-epoch permutation when
/// shuffling, seeded by seed and epoch, so a resumed run sees the same data).
std::vector<int64_t> batchRows(const Options &o, int64_t t, int64_t batch, int64_t n) {
  std::vector<int64_t> rows(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) {
    int64_t k = t * batch + i;
    int64_t epoch = k / n, pos = k % n;
    if (!o.shuffle) {
      rows[static_cast<size_t>(i)] = pos;
      continue;
    }
    static thread_local int64_t cachedEpoch = -1;
    static thread_local std::vector<int64_t> perm;
    if (cachedEpoch != epoch) {
      perm.resize(static_cast<size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      std::mt19937_64 rng(static_cast<uint64_t>(o.seed) * 1000003u + static_cast<uint64_t>(epoch));
      for (int64_t j = n - 1; j > 0; --j)
        std::swap(perm[static_cast<size_t>(j)],
                  perm[static_cast<size_t>(rng() % static_cast<uint64_t>(j + 1))]);
      cachedEpoch = epoch;
    }
    rows[static_cast<size_t>(i)] = perm[static_cast<size_t>(pos)];
  }
  return rows;
}

void gather(const HostTensor &data, const std::vector<int64_t> &rows, HostTensor &out) {
  size_t rowBytes = data.data.size() / static_cast<size_t>(data.shape[0]);
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(out.data.data() + i * rowBytes, data.data.data() + static_cast<size_t>(rows[i]) * rowBytes,
                rowBytes);
}

} // namespace

/// The training loop over a loaded model (CPU Model or CudaModel: both
/// run entry points on host buffers through runRaw).
template <class M>
int train(M *model, Options &o, const std::string &artifact, bool tokens) {
  const FunctionInfo *train = model->function("train_step");
  if (!train)
    die("'" + artifact + "' has no train_step; compile it with rewire-compile --train", 4);

  auto readTokens = [&](const std::string &path, bool text, std::vector<int64_t> &out) {
    std::string bytes;
    if (auto err = readRegularFile(path, bytes))
      die(*err, 4);
    if (text) {
      for (unsigned char c : bytes)
        out.push_back(c);
      return;
    }
    size_t w = o.tokenDtype == "uint16" ? 2 : 4;
    if (bytes.size() % w)
      die("'" + path + "' is not a whole number of " + o.tokenDtype + " tokens", 2);
    for (size_t i = 0; i < bytes.size(); i += w) {
      uint32_t v = 0;
      std::memcpy(&v, bytes.data() + i, w);
      out.push_back(v);
    }
  };
  HostTensor xs, ys, vxs, vys;
  std::vector<int64_t> stream, valStream; // token data
  if (tokens) {
    readTokens(o.data.empty() ? o.text : o.data, !o.text.empty(), stream);
    if (!o.valData.empty())
      readTokens(o.valData, !o.text.empty(), valStream);
  } else {
    if (auto err = readNpy(o.inputs, xs))
      die(*err, 2);
    if (auto err = readNpy(o.targets, ys))
      die(*err, 2);
    if (o.valInputs.empty() != o.valTargets.empty())
      die("--val-inputs and --val-targets go together: give both", 1);
    if (!o.valInputs.empty()) {
      if (auto err = readNpy(o.valInputs, vxs))
        die(*err, 2);
      if (auto err = readNpy(o.valTargets, vys))
        die(*err, 2);
    }
  }
  bool validate = o.evalEvery > 0 && (tokens ? !valStream.empty() : !vxs.data.empty());
  if (o.evalEvery > 0 && !validate)
    die("--eval-every needs --val-data (tokens) or --val-inputs and --val-targets", 1);
  // Bind train_step's inputs by name.
  std::vector<HostTensor> in(train->inputs.size());
  std::map<std::string, size_t> inIndex, outIndex;
  for (size_t i = 0; i < train->inputs.size(); ++i) {
    inIndex[train->inputs[i].name] = i;
    in[i].dtype = train->inputs[i].dtype;
    in[i].shape = train->inputs[i].shape;
    in[i].data.assign(static_cast<size_t>(train->inputs[i].byteSize()), 0);
  }
  for (size_t i = 0; i < train->outputs.size(); ++i)
    outIndex[train->outputs[i].name] = i;
  size_t xIndex = 0, tIndex = inIndex.count("target") ? inIndex["target"] : SIZE_MAX;
  if (tIndex != 1 || train->inputs[0].name.rfind("param:", 0) == 0)
    die("train_step must take one data input and then the target", 2);
  const TensorInfo &xi = train->inputs[xIndex], &ti = train->inputs[tIndex];
  int64_t batch = xi.shape.empty() ? 0 : xi.shape[0];
  auto fits = [&](const HostTensor &data, const TensorInfo &want, const char *what) {
    std::vector<int64_t> rest(want.shape.begin() + 1, want.shape.end());
    if (data.dtype != want.dtype || data.shape.size() != want.shape.size() || data.shape[0] < 1 ||
        !std::equal(rest.begin(), rest.end(), data.shape.begin() + 1))
      die(std::string(what) + " is " + data.typeString() + "; the model takes batches of " +
              want.typeString() + " (first axis: examples)", 2);
  };
  int64_t examples = 0, seqLen = 0;
  if (tokens) {
    if (xi.shape.size() != 2 || xi.dtype != DType::I64 || ti.dtype != DType::I64 || ti.shape != xi.shape)
      die("token training needs a model taking [batch, tokens] i64 ids and the cross_entropy "
          "loss; it takes " + xi.typeString(), 2);
    seqLen = xi.shape[1];
    if (static_cast<int64_t>(stream.size()) < seqLen + 1)
      die("the token data holds " + std::to_string(stream.size()) + " tokens, fewer than one "
          "window of " + std::to_string(seqLen + 1), 2);
    const FunctionInfo *fwd = model->function("forward");
    int64_t vocab = fwd && !fwd->outputs.empty() && !fwd->outputs[0].shape.empty()
                        ? fwd->outputs[0].shape.back() : INT64_MAX;
    for (const std::vector<int64_t> *data : {&stream, &valStream})
      for (int64_t t : *data)
        if (t >= vocab)
          die("token " + std::to_string(t) + (data == &stream ? "" : " of --val-data") +
                  " is outside the model's vocabulary of " + std::to_string(vocab), 2);
    examples = (static_cast<int64_t>(stream.size()) - 1) / seqLen; // windows
  } else {
    fits(xs, xi, "--inputs");
    fits(ys, ti, "--targets");
    if (xs.shape[0] != ys.shape[0])
      die("--inputs has " + std::to_string(xs.shape[0]) + " examples, --targets " +
              std::to_string(ys.shape[0]), 2);
    examples = xs.shape[0];
  }
  if (examples < batch)
    die("fewer examples (" + std::to_string(examples) + ") than the compiled batch (" +
            std::to_string(batch) + ")", 2);

  const FunctionInfo *eval = model->function("eval_step");
  if (validate) {
    if (!eval)
      die("'" + artifact + "' has no eval_step", 4);
    if (tokens && static_cast<int64_t>(valStream.size()) < seqLen + 1)
      die("the validation tokens are fewer than one window", 2);
    if (!tokens) {
      fits(vxs, xi, "--val-inputs");
      fits(vys, ti, "--val-targets");
      if (vxs.shape[0] != vys.shape[0])
        die("--val-inputs has " + std::to_string(vxs.shape[0]) + " examples, --val-targets " +
                std::to_string(vys.shape[0]), 2);
      if (vxs.shape[0] < batch)
        die("fewer validation examples (" + std::to_string(vxs.shape[0]) +
                ") than the compiled batch (" + std::to_string(batch) + ")", 2);
    }
  }

  // Initial parameters from the artifact's file (or --params, where it has
  // them); the state starts at zero.
  SafetensorsMapping init, given;
  {
    std::string meta = model->metadata();
    JsonValue root;
    (void)parseJson(meta, root);
    const JsonValue *pf = root.get("parameters_file");
    std::string dir = artifact.substr(0, artifact.rfind('/') == std::string::npos ? 0 : artifact.rfind('/'));
    std::string path = pf && pf->isString() ? (pf->text[0] == '/' ? pf->text : (dir.empty() ? "." : dir) + "/" + pf->text) : "";
    if (auto err = init.open(path))
      die("cannot read the initial parameters: " + *err, 4);
    if (!o.params.empty())
      if (auto err = given.open(o.params))
        die("--params: " + *err, 4);
  }
  // A tensor from a file is used only when its dtype and shape are the
  // model's: a transposed, int32 or f16 tensor of the right byte count is
  // not an f32 weight.
  auto mismatch = [](const std::string &dtype, const std::vector<int64_t> &shape,
                     const HostTensor &want) -> std::optional<std::string> {
    auto dt = parseSafetensorsDType(dtype);
    if (dt && *dt == want.dtype && shape == want.shape)
      return std::nullopt;
    return "is " + dtype + " [" + shapeString(shape) + "], the model's is " +
           dtypeSafetensorsName(want.dtype) + " [" + shapeString(want.shape) + "]";
  };
  std::vector<size_t> paramIn, stateIn;
  size_t fromGiven = 0;
  // A parameter of the model missing from --params is an error (a partial
  // file would silently train a mix of two states); only the parameters a
  // rewrite adds (stream<S>.layer<L>.<kind>.<name>, docs/parameters.md)
  // may be omitted and start from their initializer.
  auto addedByRewrite = [](const std::string &n) {
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
  };
  std::vector<std::string> missing;
  for (size_t i = 0; i < train->inputs.size(); ++i) {
    const std::string &name = train->inputs[i].name;
    if (name.rfind("param:", 0) == 0) {
      const auto *t = o.params.empty() ? nullptr : given.find(name.substr(6));
      if (t)
        if (auto why = mismatch(t->dtype, t->shape, in[i]))
          die("--params: '" + name.substr(6) + "' in '" + o.params + "' " + *why, 2);
      fromGiven += t != nullptr;
      if (!t && !o.params.empty() && !addedByRewrite(name.substr(6)))
        missing.push_back(name.substr(6));
      if (!t)
        t = init.find(name.substr(6));
      if (!t)
        die("initial value of '" + name.substr(6) + "' missing", 4);
      if (auto why = mismatch(t->dtype, t->shape, in[i]))
        die("initial value of '" + name.substr(6) + "' " + *why, 4);
      std::memcpy(in[i].data.data(), t->data, t->bytes);
      paramIn.push_back(i);
    } else if (name.rfind("state:", 0) == 0) {
      stateIn.push_back(i);
    }
  }
  if (!o.params.empty() && fromGiven == 0)
    die("--params: '" + o.params + "' names none of the model's parameters", 2);
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 5; ++i)
      list += (i ? ", '" : "'") + printable(missing[i]) + "'";
    die("--params: '" + o.params + "' lacks " + std::to_string(missing.size()) +
            " of the model's parameters (" + list + (missing.size() > 5 ? ", ..." : "") +
            "); give a complete file (rewire-train --output writes one)", 2);
  }
  // Outputs: loss, then updated parameters and state, each matched by name
  // to the input it replaces.
  std::vector<HostTensor> out(train->outputs.size());
  std::vector<std::pair<size_t, size_t>> carry; // (output, input)
  std::vector<size_t> depthOut, normOut;
  for (size_t i = 0; i < train->outputs.size(); ++i) {
    out[i].dtype = train->outputs[i].dtype;
    out[i].shape = train->outputs[i].shape;
    out[i].data.assign(static_cast<size_t>(train->outputs[i].byteSize()), 0);
    const std::string &name = train->outputs[i].name;
    if (name.rfind("gradnorm:", 0) == 0) {
      normOut.push_back(i); // --grad-norms: logged in the JSONL rows
    } else if (name.rfind("loss:", 0) == 0) {
      depthOut.push_back(i); // LPA: the loss at each depth, logged
    } else if (name != "loss") {
      auto it = inIndex.find(name);
      if (it == inIndex.end())
        die("train_step output '" + name + "' matches no input", 4);
      carry.push_back({i, it->second});
    }
  }
  size_t lossOut = outIndex.count("loss") ? outIndex["loss"] : SIZE_MAX;
  if (lossOut == SIZE_MAX)
    die("train_step has no loss output", 4);
  // On the GPU, weights and optimizer state stay on the device between
  // steps; the host copies in `in` are brought up to date (syncHost) only
  // where they are read: validation, checkpoints, the trained weights.
  if constexpr (std::is_same_v<M, CudaModel>)
    if (auto err = model->keepOnDevice("train_step", carry))
      die(*err, 4);
  auto syncHost = [&] {
    if constexpr (std::is_same_v<M, CudaModel>) {
      std::vector<void *> ptrs;
      for (HostTensor &t : in)
        ptrs.push_back(t.data.data());
      if (auto err = model->pull("train_step", ptrs.data()))
        die(*err, 4);
    }
  };

  int64_t start = 0;
  auto checkpointPath = [&](int64_t step) {
    return o.checkpoint + "/model-" + std::to_string(step) + ".safetensors";
  };
  if (o.resume) {
    std::string text;
    if (auto err = readRegularFile(o.checkpoint + "/state.json", text, 1 << 20))
      die("--resume: " + *err, 4);
    JsonValue st;
    if (parseJson(text, st) || !st.get("step") || !st.get("step")->asInt())
      die("no valid checkpoint state in '" + o.checkpoint + "/state.json'", 4);
    start = *st.get("step")->asInt();
    if (start < 0 || start > o.steps)
      die("the checkpoint is at step " + std::to_string(start) + ", outside 0.." +
              std::to_string(o.steps) + " (--steps)", 4);
    SafetensorsFile ck;
    if (auto err = readSafetensors(checkpointPath(start), ck))
      die(*err, 4);
    for (const std::vector<size_t> *group : {&paramIn, &stateIn})
      for (size_t i : *group) {
        auto it = ck.tensors.find(train->inputs[i].name);
        if (it == ck.tensors.end())
          die("checkpoint '" + checkpointPath(start) + "' lacks '" + train->inputs[i].name +
                  "' (was it written for another model or --optimizer?)", 4);
        if (auto why = mismatch(it->second.dtype, it->second.shape, in[i]))
          die("checkpoint '" + checkpointPath(start) + "': '" + train->inputs[i].name + "' " + *why +
                  " (was it written for another model?)", 4);
        std::memcpy(in[i].data.data(), it->second.data.data(), in[i].data.size());
      }
    // A run killed while checkpointing can leave a temp file or a newer
    // checkpoint state.json does not name yet: both are stale now.
    if (DIR *d = ::opendir(o.checkpoint.c_str())) {
      std::string keep = "model-" + std::to_string(start) + ".safetensors";
      std::vector<std::string> stale;
      // Only files this tool wrote: `model-<step>.safetensors` whose
      // metadata says it is a rewire-train checkpoint of that step, and the
      // temp files of the atomic writes (`<name>.tmp.<pid>` of those names).
      auto stepOf = [](const std::string &n, size_t &end) -> std::optional<std::string> {
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
      };
      auto isTemp = [](const std::string &n, size_t at) {
        const std::string tmp = ".tmp.";
        if (n.compare(at, tmp.size(), tmp) != 0 || at + tmp.size() == n.size())
          return false;
        return std::all_of(n.begin() + static_cast<long>(at + tmp.size()), n.end(),
                           [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      };
      while (dirent *e = ::readdir(d)) {
        std::string n = e->d_name;
        size_t end = 0;
        bool ours = false;
        if (n.rfind("state.json.tmp.", 0) == 0) {
          ours = isTemp(n, std::strlen("state.json"));
        } else if (auto step = stepOf(n, end)) {
          if (end == n.size()) {
            SafetensorsMapping ck;
            ours = n != keep && !ck.open(o.checkpoint + "/" + n) &&
                   ck.metadata().count("writer") && ck.metadata().at("writer") == kCheckpointWriter &&
                   ck.metadata().count("step") && ck.metadata().at("step") == *step;
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
    std::cerr << "rewire-train: resumed from step " << start << "\n";
  }
  int64_t lastCheckpoint = o.resume ? start : -1;
  // Loss history for --plot: this run's steps, after the logged ones a
  // resumed run reads back from --metrics.
  std::vector<double> histStep, histLoss, valStep, valLoss;
  std::vector<std::vector<double>> histDepth(depthOut.size());
  auto drawPlot = [&]() {
    if (o.plot.empty())
      return;
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
      die("cannot write the plot: " + *err, 4);
  };
  // The logs are flushed every step (readable while training) and synced
  // before each checkpoint, so the rows before a checkpoint survive a kill.
  FILE *jsonl = nullptr, *metrics = nullptr;
  auto writeCheckpoint = [&](int64_t step) {
    syncHost();
    drawPlot();
    for (FILE *log : {metrics, jsonl})
      if (log && (std::fflush(log) != 0 || ::fsync(fileno(log)) != 0))
        die("cannot write the training log: " + std::string(std::strerror(errno)), 4);
    ::mkdir(o.checkpoint.c_str(), 0755);
    std::vector<SafetensorsEntry> entries;
    for (size_t i : paramIn)
      entries.push_back({train->inputs[i].name, "F32", in[i].shape,
                         std::string(in[i].data.begin(), in[i].data.end())});
    for (size_t i : stateIn)
      entries.push_back({train->inputs[i].name, "F32", in[i].shape,
                         std::string(in[i].data.begin(), in[i].data.end())});
    if (auto err = writeSafetensors(checkpointPath(step), entries,
                                    {{"step", std::to_string(step)}, {"writer", kCheckpointWriter}}))
      die(*err, 4);
    std::string state = "{\"format\":\"rewire-train-state\",\"version\":1,\"step\":" +
                        std::to_string(step) + ",\"seed\":" + std::to_string(o.seed) +
                        ",\"parameters\":" + jsonQuote("model-" + std::to_string(step) + ".safetensors") + "}\n";
    if (auto err = writeFileAtomically(o.checkpoint + "/state.json", {&state}))
      die(*err, 4);
    // The previous checkpoint is no longer referenced.
    if (lastCheckpoint >= 0 && lastCheckpoint != step)
      ::unlink(checkpointPath(lastCheckpoint).c_str());
    lastCheckpoint = step;
  };

  // Token window w: ids = tokens[w T, (w+1) T), targets shifted by one.
  auto fillWindows = [&](const std::vector<int64_t> &from, const std::vector<int64_t> &rows,
                         HostTensor &ids, HostTensor &targets) {
    auto *x = reinterpret_cast<int64_t *>(ids.data.data());
    auto *y = reinterpret_cast<int64_t *>(targets.data.data());
    size_t t = static_cast<size_t>(seqLen);
    for (size_t i = 0; i < rows.size(); ++i)
      for (size_t j = 0; j < t; ++j) {
        size_t at = static_cast<size_t>(rows[i]) * t + j;
        x[i * t + j] = from[at];
        y[i * t + j] = from[at + 1];
      }
  };
  // Validation loss: eval_step over the first `evalBatches` batches of the
  // validation data (the same batches every time), with the current
  // parameters (eval_step's inputs: data, target, parameters by name).
  auto validationLoss = [&]() {
    syncHost();
    std::vector<HostTensor> ein(eval->inputs.size());
    std::vector<const void *> ip(eval->inputs.size());
    for (size_t i = 0; i < eval->inputs.size(); ++i) {
      const std::string &name = eval->inputs[i].name;
      auto it = inIndex.find(name);
      if (it == inIndex.end())
        die("eval_step input '" + name + "' matches no train_step input", 4);
      ip[i] = in[it->second].data.data();
    }
    HostTensor x = in[xIndex], t = in[tIndex];
    size_t xi0 = SIZE_MAX, ti0 = SIZE_MAX;
    for (size_t i = 0; i < eval->inputs.size(); ++i) {
      if (eval->inputs[i].name == train->inputs[xIndex].name) xi0 = i;
      if (eval->inputs[i].name == "target") ti0 = i;
    }
    ip[xi0] = x.data.data();
    ip[ti0] = t.data.data();
    int64_t n = tokens ? (static_cast<int64_t>(valStream.size()) - 1) / seqLen : vxs.shape[0];
    // Outputs: the loss, then (LPA) the loss at each depth; all scalars.
    std::vector<HostTensor> eout(eval->outputs.size());
    std::vector<void *> op;
    for (size_t i = 0; i < eout.size(); ++i) {
      if (eval->outputs[i].dtype != DType::F32 || eval->outputs[i].byteSize() != 4)
        die("eval_step output '" + eval->outputs[i].name + "' is not a scalar loss", 4);
      eout[i].dtype = DType::F32;
      eout[i].data.assign(4, 0);
      op.push_back(eout[i].data.data());
    }
    std::vector<double> sum(eout.size(), 0.0);
    for (int64_t k = 0; k < o.evalBatches; ++k) {
      std::vector<int64_t> rows(static_cast<size_t>(batch));
      for (int64_t i = 0; i < batch; ++i)
        rows[static_cast<size_t>(i)] = (k * batch + i) % n;
      if (tokens) {
        fillWindows(valStream, rows, x, t);
      } else {
        gather(vxs, rows, x);
        gather(vys, rows, t);
      }
      if (auto err = model->runRaw("eval_step", ip.data(), op.data()))
        die(*err, rewire::runtime::isInputDataError(*err) ? 2 : 4);
      for (size_t i = 0; i < eout.size(); ++i)
        sum[i] += eout[i].at(0);
    }
    for (double &v : sum)
      v /= static_cast<double>(o.evalBatches);
    return sum;
  };
  // On resume, a log keeps only the rows before the checkpoint's step: a run
  // killed after its last checkpoint logged steps that are now run again.
  auto truncateLog = [&](const std::string &path, bool csv) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      return; // nothing logged yet
    std::string logged;
    if (auto err = readRegularFile(path, logged))
      die("--resume: " + *err, 4);
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
      die(*err, 4);
  };
  if (o.resume) {
    if (!o.metrics.empty()) {
      truncateLog(o.metrics, true);
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
      truncateLog(o.jsonl, false);
  }
  if (!o.jsonl.empty()) {
    jsonl = std::fopen(o.jsonl.c_str(), o.resume ? "a" : "w");
    if (!jsonl)
      die("cannot write '" + o.jsonl + "'", 4);
  }

  if (!o.metrics.empty()) {
    metrics = std::fopen(o.metrics.c_str(), o.resume ? "a" : "w");
    if (!metrics)
      die("cannot write '" + o.metrics + "'", 4);
    if (!o.resume) {
      std::fprintf(metrics, "step,loss,lr");
      for (size_t k = 0; k < depthOut.size(); ++k)
        std::fprintf(metrics, ",loss_depth%zu", k + 1);
      std::fprintf(metrics, "\n");
    }
  }

  bool adam = inIndex.count("bias_correction1") > 0;
  if (o.optimizerGiven && adam != (o.optimizer == "adamw"))
    die("--optimizer=" + o.optimizer + ": '" + artifact + "' was compiled for " +
        (adam ? "adamw" : "sgd") + " (its train step fixes the optimizer)", 1);
  auto t0 = std::chrono::steady_clock::now();
  int64_t end = o.stopAfter >= 0 ? std::min(o.stopAfter, o.steps) : o.steps;
  if (end < start)
    die("--stop-after=" + std::to_string(o.stopAfter) + " is before the checkpoint's step " +
            std::to_string(start), 1);
  for (int64_t step = start; step < end; ++step) {
    std::vector<int64_t> rows = batchRows(o, step, batch, examples);
    if (tokens) {
      fillWindows(stream, rows, in[xIndex], in[tIndex]);
    } else {
      gather(xs, rows, in[xIndex]);
      gather(ys, rows, in[tIndex]);
    }
    double lr = learningRate(o, step);
    in[inIndex["lr"]] = scalarTensor(lr);
    if (adam) {
      double t = static_cast<double>(step + 1);
      in[inIndex["bias_correction1"]] = scalarTensor(1.0 / (1.0 - std::pow(o.beta1, t)));
      in[inIndex["bias_correction2"]] = scalarTensor(1.0 / (1.0 - std::pow(o.beta2, t)));
    }
    std::vector<const void *> ip;
    std::vector<void *> op;
    for (HostTensor &t : in)
      ip.push_back(t.data.data());
    for (HostTensor &t : out)
      op.push_back(t.data.data());
    if (auto err = model->runRaw("train_step", ip.data(), op.data()))
      die(*err, rewire::runtime::isInputDataError(*err) ? 2 : 4);
    double loss = out[lossOut].at(0);
    if (!std::isfinite(loss))
      die("the loss is " + std::to_string(loss) + " at step " + std::to_string(step) +
              "; lower --lr or add --warmup", 3);
    for (auto [oi, ii] : carry)
      std::swap(out[oi].data, in[ii].data);
    histStep.push_back(static_cast<double>(step));
    histLoss.push_back(loss);
    for (size_t k = 0; k < depthOut.size(); ++k)
      histDepth[k].push_back(out[depthOut[k]].at(0));
    if (metrics) {
      std::fprintf(metrics, "%lld,%.9g,%.9g", static_cast<long long>(step), loss, lr);
      for (size_t k : depthOut)
        std::fprintf(metrics, ",%.9g", out[k].at(0));
      std::fprintf(metrics, "\n");
    }
    if (jsonl) {
      std::fprintf(jsonl, "{\"step\":%lld,\"loss\":%.9g,\"lr\":%.9g",
                   static_cast<long long>(step), loss, lr);
      for (size_t k = 0; k < depthOut.size(); ++k)
        std::fprintf(jsonl, ",\"loss_depth%zu\":%.9g", k + 1, out[depthOut[k]].at(0));
      if (!normOut.empty()) {
        std::fprintf(jsonl, ",\"grad_norms\":{");
        for (size_t k = 0; k < normOut.size(); ++k)
          std::fprintf(jsonl, "%s%s:%.9g", k ? "," : "",
                       jsonQuote(train->outputs[normOut[k]].name.substr(9)).c_str(), out[normOut[k]].at(0));
        std::fprintf(jsonl, "}");
      }
      std::fprintf(jsonl, "}\n");
    }
    for (FILE *log : {metrics, jsonl})
      if (log)
        std::fflush(log);
    if (validate && (step + 1) % o.evalEvery == 0) {
      std::vector<double> vl = validationLoss();
      valStep.push_back(static_cast<double>(step + 1));
      valLoss.push_back(vl[0]);
      std::fprintf(stderr, "step %lld  validation loss %.6f", static_cast<long long>(step + 1), vl[0]);
      for (size_t k = 1; k < vl.size(); ++k)
        std::fprintf(stderr, "%s%.4f", k == 1 ? "  by depth " : " ", vl[k]);
      std::fprintf(stderr, "\n");
      if (jsonl) {
        std::fprintf(jsonl, "{\"step\":%lld,\"val_loss\":%.9g", static_cast<long long>(step + 1), vl[0]);
        for (size_t k = 1; k < vl.size(); ++k)
          std::fprintf(jsonl, ",\"val_loss_depth%zu\":%.9g", k, vl[k]);
        std::fprintf(jsonl, "}\n");
      }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o.logEvery > 0 && ((step + 1) % o.logEvery == 0 || step + 1 == end)) {
      double perStep = secs / static_cast<double>(step + 1 - start);
      std::fprintf(stderr, "step %lld/%lld  loss %.6f  lr %.3g  %.0f %s/s  ETA %.0fs\n",
                   static_cast<long long>(step + 1), static_cast<long long>(o.steps), loss, lr,
                   static_cast<double>(batch * (tokens ? seqLen : 1)) / perStep,
                   tokens ? "tokens" : "examples",
                   perStep * static_cast<double>(o.steps - step - 1));
    }
    if (!o.checkpoint.empty() && o.checkpointEvery > 0 && (step + 1) % o.checkpointEvery == 0)
      writeCheckpoint(step + 1);
  }
  if (!o.checkpoint.empty())
    writeCheckpoint(end);
  else
    drawPlot();
  for (FILE *log : {metrics, jsonl})
    if (log && std::fclose(log) != 0)
      die("cannot write the training log: " + std::string(std::strerror(errno)), 4);
  metrics = jsonl = nullptr;
  // --export's intermediate files live in a private temporary folder, so
  // nothing next to the export (X.params.safetensors, X.rewire.mlir, ...)
  // is overwritten or deleted; only the folder's own files are removed.
  std::string work;
  if (!o.exportOnnx.empty()) {
    const char *tmpdir = std::getenv("TMPDIR");
    std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/rewire-export-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      die("exporting: cannot create a temporary folder '" + pattern + "': " + std::strerror(errno), 4);
    work = buf.data();
  }
  std::string trained = o.output;
  if (trained.empty() && !o.exportOnnx.empty())
    trained = work + "/trained.safetensors";
  if (!trained.empty()) {
    syncHost();
    std::vector<SafetensorsEntry> entries;
    for (size_t i : paramIn)
      entries.push_back({train->inputs[i].name.substr(6), "F32", in[i].shape,
                         std::string(in[i].data.begin(), in[i].data.end())});
    if (auto err = writeSafetensors(trained, entries, {{"producer", "rewire-train"}}))
      die(*err, 4);
  }
  if (!o.exportOnnx.empty()) {
    // The model as imported (and rewritten), its parameters replaced by the
    // trained ones: rewire-import, rewire-compile --emit=residual, rewire-export.
    bool onnx = o.model.size() > 5 && o.model.compare(o.model.size() - 5, 5, ".onnx") == 0;
    std::string dir = tools::toolDir();
    std::string source = o.model;
    std::vector<std::string> made;
    auto cleanup = [&] {
      for (const std::string &f : made)
        ::unlink(f.c_str());
      ::rmdir(work.c_str());
    };
    if (onnx) {
      source = work + "/model.mlir";
      made = {source, work + "/model.params.safetensors"};
      if (tools::runTool({dir + "/rewire-import", o.model, "-o", source, "--params", made[1]}) != 0) {
        cleanup();
        die("exporting: rewire-import failed", 4);
      }
    }
    std::string rewritten = source;
    if (!o.residual.empty()) {
      rewritten = work + "/rewritten.mlir";
      made.push_back(rewritten);
      if (tools::runTool({dir + "/rewire-compile", source, "--emit=residual",
                          "--residual=" + o.residual, "--allow-no-residual", "-o", rewritten}) != 0) {
        cleanup();
        die("exporting: the residual rewrite failed", 4);
      }
    }
    if (o.output.empty())
      made.push_back(trained);
    int rc = tools::runTool({dir + "/rewire-export", rewritten, "--params", trained, "-o", o.exportOnnx});
    cleanup();
    if (rc != 0)
      die("exporting: rewire-export failed", 4);
  }
  return 0;
}

int main(int argc, char **argv) {
  rewire::tools::exitOnOutOfMemory("rewire-train", 4);
  Options o = parse(argc, argv);
  bool tokens = !o.data.empty() || !o.text.empty();
  std::string artifact = o.model;
  auto endsWith = [&](const char *ext) {
    size_t n = std::strlen(ext);
    return o.model.size() > n && o.model.compare(o.model.size() - n, n, ext) == 0;
  };
  if ((endsWith(".rwx") || endsWith(".rwcu")) && !o.compileOnly.empty()) {
    std::string list;
    for (const std::string &f : o.compileOnly)
      list += (list.empty() ? "" : ", ") + f;
    die(list + ": '" + o.model + "' is compiled already, with its train step fixed; pass the .onnx "
        "or .mlir model (rewire-train compiles it with these flags) or recompile with "
        "rewire-compile --train=...", 1);
  }
  if (!o.exportOnnx.empty() && !endsWith(".onnx") && !endsWith(".mlir"))
    die("--export needs the model as .onnx or .mlir, not a compiled artifact", 1);
  // Every output is checked before training, not after the last step.
  for (auto [flag, path] : {std::pair<const char *, const std::string *>{"--output", &o.output},
                            {"--export", &o.exportOnnx}, {"--metrics", &o.metrics},
                            {"--jsonl", &o.jsonl}, {"--plot", &o.plot}})
    if (!path->empty())
      if (auto err = checkOutputPath(*path))
        die(std::string(flag) + ": " + *err, 4);
  if (!endsWith(".rwx") && !endsWith(".rwcu")) {
    std::string spec = o.optimizer + ":loss=" + o.loss;
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  ",momentum=%.17g,weight-decay=%.17g,beta1=%.17g,beta2=%.17g,eps=%.17g,clip=%.17g",
                  o.momentum, o.weightDecay, o.beta1, o.beta2, o.eps, o.clip);
    spec += buf;
    if (!o.frozen.empty()) {
      std::string f = o.frozen;
      std::replace(f.begin(), f.end(), ',', '+');
      spec += ",frozen=" + f;
    }
    if (o.gradNorms)
      spec += ",grad-norms=true";
    if (!o.depthWeights.empty()) {
      std::string w = o.depthWeights;
      std::replace(w.begin(), w.end(), ',', '+');
      spec += ",depth-weights=" + w;
    }
    std::vector<std::string> flags = {"--train=" + spec};
    if (!o.residual.empty())
      flags.push_back("--residual=" + o.residual);
    if (o.allowNoResidual)
      flags.push_back("--allow-no-residual");
    if (o.device == "cuda")
      flags.push_back("--target=cuda");
    if (o.batch > 0) {
      // The model's one input at the batch asked for: [N, rest of an example]
      // for --inputs, [N, T] token windows for --data/--text.
      std::string shape = std::to_string(o.batch);
      if (!o.inputs.empty()) {
        HostTensor x;
        if (auto err = readNpy(o.inputs, x))
          die("--inputs: " + *err, 2);
        for (size_t d = 1; d < x.shape.size(); ++d)
          shape += "x" + std::to_string(x.shape[d]);
      } else {
        if (o.seqLen <= 0)
          die("--batch with token data needs --seq-len (the window length)", 1);
        shape += "x" + std::to_string(o.seqLen);
      }
      if (endsWith(".onnx"))
        flags.push_back("--input-shape=" + shape);
      else
        die("--batch binds an .onnx model's symbolic batch dim; '" + o.model +
                "' is not an .onnx model (its shapes are fixed)", 1);
    } else if (o.seqLen > 0) {
      die("--seq-len needs --batch", 1);
    }
    artifact = tools::compileCached(o.model, flags, die);
  }
  std::string error;
  bool cudaArtifact = isCudaArtifact(artifact);
  if (o.device == "cuda" && !cudaArtifact)
    die("'" + artifact + "' is not a CUDA artifact; compile it with rewire-compile --target=cuda "
        "--train=..., or train with --device=cpu", 1);
  if (cudaArtifact && o.device == "cpu")
    die("'" + artifact + "' is a CUDA artifact: train with --device=cuda", 1);
  if (cudaArtifact) {
    auto model = CudaModel::load(artifact, error);
    if (!model)
      die(error, 4);
    return train(model.get(), o, artifact, tokens);
  }
  auto model = Model::load(artifact, error);
  if (!model)
    die(error, 4);
  return train(model.get(), o, artifact, tokens);
}
