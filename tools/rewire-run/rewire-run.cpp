//===- rewire-run.cpp - Run a compiled model ------------------------------===//
//
// Runs an entry point of a Rewire artifact with IREE-style I/O. Links the
// runtime only (no MLIR): an .onnx or .mlir model is compiled first by
// running rewire-compile (from this tool's folder) into a cache keyed by the
// model's bytes and the compile flags.
//
//   rewire-run gpt.rwx --input=2x8xi64=@ids.npy --output=@logits.npy
//   rewire-run m.rwx --input="2x2xf32=[1 2][3 4]" --expected_output=2x2xf32=@y.npy
//   rewire-run gpt.onnx --input=@ids.npy --benchmark=20
//
// Exit codes: 0 ran (and matched any expected outputs); 1 bad command line;
// 2 an input or expected output is malformed or does not fit the function;
// 3 an output did not match its expected value; 4 the model could not be
// compiled, loaded or a file not read/written.
//
//===----------------------------------------------------------------------===//
#include "rewire/Runtime/CudaRuntime.h"
#include "rewire/Runtime/Runtime.h"
#include "rewire/Runtime/TensorSpec.h"
#include "rewire/Support/Npy.h"
#include "rewire/Support/Printable.h"
#include "rewire/Support/ReadFile.h"
#include "rewire/Version.h"
#include "tools/common/CompileCache.h"
#include "tools/common/Flags.h"
#include "tools/common/OutOfMemory.h"

#include <oneapi/dnnl/dnnl_version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <type_traits>

using namespace rewire;
using namespace rewire::runtime;

namespace {

struct Options {
  std::string model, function = "forward", params;
  std::vector<std::string> inputs, outputs, expected, compileFlags;
  /// The --input tensors when main already parsed them (an .onnx model's
  /// shapes bind its symbolic dims before compiling).
  std::vector<HostTensor> parsedInputs;
  double rtol = 1e-5, atol = 1e-6;
  int benchmark = 0;
  int64_t printMax = 1024;
  bool describe = false;
  std::string device; ///< cpu, cuda, or empty: the artifact's target
  int profile = 0;    ///< --profile=N (CUDA): time each step N times
};

[[noreturn]] void die(const std::string &message, int code) {
  std::cerr << "rewire-run: error: " << printable(message) << "\n";
  std::exit(code);
}

Options parseArgs(int argc, char **argv) {
  Options o;
  tools::FlagParser flags(
      "usage: rewire-run MODEL.(rwx|rwcu|onnx|mlir) [options]\n",
      "exit codes: 0 ok, 1 usage, 2 bad input, 3 mismatch, 4 load/compile/IO\n",
      "rewire-run " REWIRE_VERSION_STRING "\nCPU artifacts' GEMMs: oneDNN " +
          std::to_string(DNNL_VERSION_MAJOR) + "." + std::to_string(DNNL_VERSION_MINOR) + "." +
          std::to_string(DNNL_VERSION_PATCH) +
          " (the ISA it picks on this CPU: rewire-run MODEL.rwx --describe)",
      [](const std::string &m, int c) { die(m, c); });
  auto countIn = [&](const std::string &v, const char *flag, int64_t lo) {
    int64_t n = flags.count(v, flag);
    if (n < lo || n > 1000000)
      die(std::string("--") + flag + " expects a count from " + std::to_string(lo) +
              " to 1000000, got '" + v + "'", 1);
    return static_cast<int>(n);
  };
  flags
      .value("function", "NAME", "entry point (default forward)", [&](auto v) { o.function = v; })
      .value("input", "SPEC",
             "one per input, in order:\n"
             "2x3xf32=[1 2 3][4 5 6] | 2x3xf32=1,2,3,4,5,6 |\n"
             "2x3xf32=7 (splat) | @x.npy | 2x3xf32=@x.bin (raw)",
             [&](auto v) { o.inputs.push_back(v); })
      .value("output", "@y.npy", "write output i (in order; '' skips one)",
             [&](auto v) { o.outputs.push_back(v); })
      .value("expected_output", "SPEC", "compare output i (same syntax as --input; '' skips one)",
             [&](auto v) { o.expected.push_back(v); })
      .value("rtol", "R", "tolerance |got-want| <= atol + rtol*|want| (default 1e-5);\n"
                          "inf and NaN must match exactly",
             [&](auto v) { o.rtol = flags.nonNegative(v, "rtol"); })
      .value("atol", "A", "(default 1e-6)", [&](auto v) { o.atol = flags.nonNegative(v, "atol"); })
      .value("benchmark", "N", "run N more times (into the same output buffers),\nprint median/min/mean latency",
             [&](auto v) { o.benchmark = countIn(v, "benchmark", 0); })
      .value("params", "FILE", "parameter file (default: the one the artifact names)",
             [&](auto v) { o.params = v; })
      .value("profile", "N", "CUDA: time every kernel and GEMM alone (N repetitions)",
             [&](auto v) { o.profile = countIn(v, "profile", 1); })
      .value("device", "cpu|cuda",
             "where to run (default: the artifact's target; .onnx/.mlir\n"
             "models are compiled for it)",
             [&](auto v) {
               if (v != "cpu" && v != "cuda")
                 die("--device expects cpu or cuda, got '" + v + "'", 1);
               o.device = v;
             })
      .value("print-max-elements", "N", "print at most N elements per result (default 1024)",
             [&](auto v) { o.printMax = flags.count(v, "print-max-elements"); })
      .toggle("describe", "print the entry points and the GEMM kernels that run them, and exit",
              [&] { o.describe = true; })
      .value("compile-flag", "FLAG", "pass FLAG to rewire-compile for .onnx/.mlir models",
             [&](auto v) { o.compileFlags.push_back(v); })
      .value("residual", "KIND[:opts]",
             "rewrite the residual streams when compiling (rewire-compile's)",
             [&](auto v) { o.compileFlags.push_back("--residual=" + v); })
      .toggle("allow-no-residual", "with --residual: run a model without residual adds unchanged",
              [&] { o.compileFlags.push_back("--allow-no-residual"); });
  flags.parse(argc, argv, [&](const std::string &a) {
    if (!o.model.empty())
      die("more than one model given ('" + o.model + "', '" + a + "')", 1);
    o.model = a;
  });
  if (o.model.empty()) {
    flags.usage(std::cerr);
    std::exit(1);
  }
  return o;
}


} // namespace

int runWith(const Executable *model, Options &o) {
  auto *cuda = dynamic_cast<const CudaModel *>(model);
  if (o.describe) {
    for (const FunctionInfo &f : model->functions()) {
      std::cout << "function " << printable(f.name) << "\n";
      for (const TensorInfo &t : f.inputs)
        std::cout << "  input  " << printable(t.name) << ": " << t.typeString() << "\n";
      for (const TensorInfo &t : f.outputs)
        std::cout << "  output " << printable(t.name) << ": " << t.typeString() << "\n";
      std::cout << "  parameters: " << f.parameters.size() << "\n";
      if (!f.readyOrder.empty()) {
        // rewire-output-ready-calls: outputs handed out as they are final.
        std::cout << "  outputs final early, in order:";
        for (size_t k : f.readyOrder)
          std::cout << " " << k;
        std::cout << "\n";
      }
    }
    std::cout << printable(model->whatRuns());
    return 0;
  }
  const FunctionInfo *fn = model->function(o.function);
  if (!fn) {
    std::string names;
    for (const FunctionInfo &f : model->functions())
      names += (names.empty() ? "" : ", ") + f.name;
    die("the model has no function '" + o.function + "' (it has: " + names + ")", 1);
  }
  std::string expected;
  for (const TensorInfo &t : fn->inputs)
    expected += " --input=" + t.typeString() + "=...";
  std::vector<HostTensor> inputs = std::move(o.parsedInputs);
  for (size_t i = inputs.size(); i < o.inputs.size(); ++i) {
    HostTensor t;
    // No more elements than the function takes: a typo'd shape
    // (777777x772x6xf32=1, 14 GB) is refused before it is materialized.
    int64_t limit = kMaxInputElements;
    if (i < fn->inputs.size()) {
      limit = 1;
      for (int64_t d : fn->inputs[i].shape)
        limit = d <= 0 ? 0 : limit <= kMaxInputElements / d ? limit * d : kMaxInputElements;
    }
    bool tooLarge = false;
    if (auto err = parseTensorSpec(o.inputs[i], t, limit, &tooLarge)) {
      // More elements than the function takes: the shape is wrong (the
      // parser's other errors say what else is).
      std::string type = o.inputs[i].substr(0, o.inputs[i].find('='));
      if (i < fn->inputs.size() && tooLarge)
        die("input " + std::to_string(i) + " ('" + printable(fn->inputs[i].name) + "') of '" +
                printable(o.function) + "' must be " + fn->inputs[i].typeString() + ", got " +
                printable(type) + " (expected:" + expected + ")",
            2);
      die("--input " + std::to_string(i) + ": " + *err, 2);
    }
    inputs.push_back(std::move(t));
  }
  if (auto err = checkInputs(*fn, inputs))
    die(*err + " (expected:" + expected + ")", 2);
  std::vector<HostTensor> outputs;
  if (auto err = model->run(o.function, inputs, outputs))
    die(*err, rewire::runtime::isOutOfMemoryError(*err) ? 4 : 2);

  if (cuda && (o.benchmark > 0 || o.describe))
    std::cerr << "rewire-run: device: " << model->device() << "\n";
  if (o.benchmark > 0) {
    // Into the first run's outputs, as a host that keeps its buffers does:
    // a fresh 100 MB logits tensor a run was 25 000 page faults.
    std::vector<const void *> in;
    for (const HostTensor &t : inputs)
      in.push_back(t.data.data());
    std::vector<void *> out;
    for (HostTensor &t : outputs)
      out.push_back(t.data.data());
    std::vector<double> ms;
    for (int i = 0; i < o.benchmark; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      if (auto err = model->runRaw(o.function, in.data(), out.data()))
        die(*err, rewire::runtime::isOutOfMemoryError(*err) ? 4 : 2);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                       .count());
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    double mean = 0;
    for (double v : ms)
      mean += v / ms.size();
    std::printf("benchmark: %s median %.3f ms, min %.3f ms, mean %.3f ms over %d runs\n",
                o.function.c_str(), sorted[sorted.size() / 2], sorted.front(), mean,
                o.benchmark);
    if (cuda) {
      // Device time alone: the schedule replayed back to back, no copies.
      double deviceMs = 0;
      if (auto err = cuda->time(o.function, o.benchmark, deviceMs))
        die(*err, 4);
      std::printf("benchmark: %s device time %.4f ms per run (CUDA events, %d replays)\n",
                  o.function.c_str(), deviceMs, o.benchmark);
    }
  }

  if (cuda) {
    if (o.profile > 0) {
      std::vector<CudaModel::StepProfile> steps;
      if (auto err = cuda->profile(o.function, o.profile, steps))
        die(*err, 4);
      double total = 0;
      for (const auto &s : steps)
        total += s.ms;
      std::printf("profile: %s, %zu steps, %.4f ms in total (each step alone, mean of %d)\n",
                  o.function.c_str(), steps.size(), total, o.profile);
      for (const auto &s : steps)
        std::printf("profile: %-36s %10.4f ms %10.1f MB %9.1f GB/s\n", s.what.c_str(), s.ms,
                    s.bytes / 1e6, s.ms > 0 ? s.bytes / (s.ms * 1e6) : 0.0);
    }
  } else if (o.profile > 0) {
    die("--profile needs a CUDA artifact", 1);
  }

  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i < o.outputs.size() && !o.outputs[i].empty()) {
      if (o.outputs[i][0] != '@')
        die("--output expects @file.npy, got '" + o.outputs[i] + "'", 1);
      if (auto err = writeNpy(o.outputs[i].substr(1), outputs[i]))
        die(*err, 4);
    }
    if (o.benchmark == 0 || o.expected.empty()) {
      std::cout << "result[" << i << "]: ";
      printTensor(outputs[i], o.printMax, std::cout);
    }
  }
  if (o.outputs.size() > outputs.size())
    die(std::to_string(o.outputs.size()) + " --output given, '" + o.function + "' has " +
            std::to_string(outputs.size()) + " outputs", 1);

  if (!o.expected.empty()) {
    if (o.expected.size() != outputs.size())
      die(std::to_string(o.expected.size()) + " --expected_output given, '" + o.function +
              "' has " + std::to_string(outputs.size()) + " outputs", 1);
    bool ok = true;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (o.expected[i].empty())
        continue; // '' skips an output (an LPA readout beside the model's own)
      HostTensor want;
      if (auto err = parseTensorSpec(o.expected[i], want))
        die("--expected_output " + std::to_string(i) + ": " + *err, 2);
      if (want.shape != outputs[i].shape) {
        std::cout << "[FAILED] result[" << i << "]: shape " << outputs[i].typeString()
                  << " differs from the expected " << want.typeString() << "\n";
        ok = false;
        continue;
      }
      double maxAbs = 0;
      int64_t bad = -1, badCount = 0;
      for (int64_t k = 0; k < want.numel(); ++k) {
        double g = outputs[i].at(k), w = want.at(k);
        // A tolerance does not apply to NaN or an infinity: NaN matches NaN
        // only, inf matches inf of the same sign only (atol + rtol*inf would
        // accept anything).
        bool match;
        if (std::isfinite(g) && std::isfinite(w)) {
          double diff = std::fabs(g - w);
          maxAbs = std::max(maxAbs, diff);
          match = diff <= o.atol + o.rtol * std::fabs(w);
        } else {
          match = (std::isnan(g) && std::isnan(w)) || g == w;
          if (!match)
            maxAbs = std::numeric_limits<double>::infinity();
        }
        if (!match) {
          if (bad < 0)
            bad = k;
          ++badCount;
        }
      }
      if (bad >= 0) {
        std::cout << "[FAILED] result[" << i << "]: " << badCount << " of " << want.numel()
                  << " elements differ beyond atol " << o.atol << " + rtol " << o.rtol
                  << "; first at index " << bad << ": got " << formatTensorValue(outputs[i], bad)
                  << ", expected " << formatTensorValue(want, bad) << "; max abs diff " << maxAbs
                  << "\n";
        ok = false;
      } else {
        std::cout << "result[" << i << "]: max abs diff " << maxAbs << "\n";
      }
    }
    if (!ok)
      return 3;
    std::cout << "[SUCCESS] all function outputs matched their expected values.\n";
  }
  return 0;
}

int main(int argc, char **argv) {
  rewire::tools::exitOnOutOfMemory("rewire-run", 4);
  Options o = parseArgs(argc, argv);
  std::string artifact = o.model;
  auto endsWith = [&](const char *ext) {
    size_t n = std::strlen(ext);
    return o.model.size() >= n && o.model.compare(o.model.size() - n, n, ext) == 0;
  };
  if (endsWith(".onnx") || endsWith(".mlir")) {
    if (o.device == "cuda")
      o.compileFlags.push_back("--target=cuda");
    if (endsWith(".onnx") && !o.inputs.empty()) {
      // The shapes of the inputs bind the model's symbolic dimensions
      // (batch, sequence): each shape compiles (and caches) a variant.
      for (size_t i = 0; i < o.inputs.size(); ++i) {
        HostTensor t;
        if (auto err = parseTensorSpec(o.inputs[i], t))
          die("--input " + std::to_string(i) + ": " + *err, 2);
        std::string shape;
        for (int64_t d : t.shape)
          shape += (shape.empty() ? "" : "x") + std::to_string(d);
        o.compileFlags.push_back("--input-shape=" + (shape.empty() ? "scalar" : shape));
        o.parsedInputs.push_back(std::move(t));
      }
    }
    artifact = tools::compileCached(o.model, o.compileFlags, [](const std::string &m, int c) { die(m, c); });
  }
  else if (!o.compileFlags.empty())
    die("--compile-flag and --residual apply to .onnx/.mlir models only: '" + o.model +
        "' is compiled already (recompile it with rewire-compile and the flag)", 1);

  std::string error;
  bool cudaArtifact = isCudaArtifact(artifact);
  if (cudaArtifact && o.describe) {
    // Described from the file alone: no GPU needed.
    std::string text;
    if (auto err = describeCudaArtifact(artifact, text))
      die(*err, 4);
    std::cout << printable(text);
    return 0;
  }
  std::string device = o.device.empty() ? (cudaArtifact ? "cuda" : "cpu") : o.device;
  if (device == "cuda" && !cudaArtifact)
    die("'" + artifact + "' is not a CUDA artifact; compile it with rewire-compile "
        "--target=cuda, or run it with --device=cpu", 1);
  if (device == "cpu" && cudaArtifact)
    die("'" + artifact + "' is a CUDA artifact: run it with --device=cuda", 1);
  auto model = Executable::load(artifact, error, o.params);
  if (!model)
    die(error, 4);
  return runWith(model.get(), o);
}
