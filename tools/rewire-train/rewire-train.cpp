//===- rewire-train.cpp - Train a model with the compiled train step ------===//
//
// Compiles the model with `rewire-compile --train` (loss, gradients and the
// optimizer update are IR, see rewire-train-step) and trains it with the
// runtime's Trainer (include/rewire/Runtime/Trainer.h: the loop, the
// schedule, validation, logs, checkpoints). This file runs the compile, the
// trainer with its progress line, and --export; Options.cpp is the flags.
//
//   rewire-train model.onnx --inputs x.npy --targets y.npy --steps 200 \
//       --optimizer adamw --lr 1e-3 --metrics m.csv --checkpoint ckpt/
//
// Checkpoints are `model-<step>.safetensors` (parameters and state) plus
// `state.json` naming it, each written atomically; state.json is written
// last, so a kill at any moment leaves a consistent pair. --resume continues
// from it and reproduces the uninterrupted run bit for bit.
//
// Under mpirun every rank runs this: rank 0 compiles first (the others
// then find the artifact in the cache), trains with the others on its share
// of each global batch (docs/distributed.md) and alone writes checkpoints,
// logs and --output/--export. A rank that fails ends the run.
//
// Exit codes: 0 trained; 1 bad command line; 2 data that does not fit the
// model; 3 the loss became NaN or infinite; 4 compile, load or file I/O.
//
//===----------------------------------------------------------------------===//
#include "tools/rewire-train/Options.h"

#include "rewire/Runtime/CudaRuntime.h"
#include "rewire/Runtime/Executable.h"
#include "rewire/Support/AtomicFile.h"
#include "tools/common/CompileCache.h"
#include "tools/common/OutOfMemory.h"
#ifdef REWIRE_HAVE_MPI
#include "rewire/Runtime/MpiCommunicator.h"
#endif

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <unistd.h>

using namespace rewire;
using namespace rewire::runtime;
using namespace rewire::train_tool;

int main(int argc, char **argv) {
  rewire::tools::exitOnOutOfMemory("rewire-train", 4);
  Options o = parse(argc, argv);
  std::unique_ptr<Communicator> comm;
  if (launchedByMpi()) {
#ifdef REWIRE_HAVE_MPI
    std::string err;
    comm = createMpiCommunicator(o.deterministicReduce, err);
    if (!comm)
      die(err, 4);
    setDieCommunicator(comm.get());
#else
    die("started by mpirun, but this rewire-train was built without MPI (apt-get install "
        "libopenmpi-dev, then rebuild)", 1);
#endif
  }
  int ranks = comm ? comm->size() : 1;
  bool root = !comm || comm->rank() == 0;
  o.splitSteps = o.train.gradAccum > 1 || ranks > 1;
  o.train.comm = ranks > 1 ? comm.get() : nullptr;
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
    if (!path->empty() && root)
      if (auto err = checkOutputPath(*path))
        die(std::string(flag) + ": " + *err, 4);
  // Rank 0 compiles; the others wait, then find it in the cache.
  auto compile = [&] {
    return compiled ? o.model
                    : tools::compileCached(o.model, compileFlags(o), die, !o.exportOnnx.empty());
  };
  std::string artifact = root ? compile() : "";
  if (ranks > 1) {
    int done = 1;
    if (auto err = comm->broadcast(&done, sizeof done, 0))
      die(*err, 4);
    if (!root)
      artifact = compile();
  }

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
  if (o.train.resume && root)
    std::cerr << "rewire-train: resumed from step " << start << "\n";
  if (ranks > 1 && root)
    std::cerr << "rewire-train: " << comm->describe() << ", global batch "
              << trainer->batchSize() << "; gradients summed " << trainer->gradientSums()
              << "\n";

  auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](const StepResult &r) {
    int64_t step = r.step;
    if (!root || o.logEvery <= 0 || ((step + 1) % o.logEvery != 0 && step + 1 != end))
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
  if (!root)
    return 0; // rank 0 writes what was trained
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
