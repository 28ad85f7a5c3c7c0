//===- Module.cpp - rewire._core: the compiler and runtime for Python -----===//
//
// The nanobind module under the `rewire` package (python/rewire/): thin
// calls into the libraries the tools use (no second implementation):
//
//   import_model    ONNX (a file or bytes) or IR -> DIR/model.mlir with its
//                   parameters in DIR/params.safetensors
//   rewrite, truncate, run_pipeline
//                   DIR -> DIR2 through the residual passes
//   report          residual-report's JSON of DIR's model
//   export_onnx     DIR's model (optionally other parameters) -> .onnx
//   compile         DIR's model -> an artifact (compiler::compile)
//   Executable      a loaded artifact: its functions, and calls on arrays
//                   taken by the buffer protocol or DLPack without a copy
//                   and returned as NumPy arrays that own their memory
//
// A model lives in a folder (the Python Model owns it) so that every step
// is the tools' own code path on files. Failures raise rewire.Error with the
// diagnostics (location: message) the tools would print; warnings become
// Python warnings.
//
//===----------------------------------------------------------------------===//
#include "dialects/nn/NNParameters.h"
#include "dialects/residual/ResidualOps.h"
#include "passes/Transforms/Passes.h"
#include "rewire/Compiler/Compiler.h"
#include "rewire/Compiler/Driver.h"
#include "rewire/Export/OnnxExport.h"
#include "rewire/Import/OnnxImport.h"
#include "rewire/InitAll.h"
#include "rewire/Runtime/Executable.h"
#include "rewire/Runtime/Trainer.h"
#ifdef REWIRE_HAVE_MPI
#include "rewire/Runtime/MpiCommunicator.h"
#endif
#include "rewire/Support/ReadFile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace nb = nanobind;
using namespace rewire;

namespace {

/// rewire.Error.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One context for the process, with Rewire's dialects and passes.
mlir::MLIRContext &context() {
  static std::once_flag once;
  static std::unique_ptr<mlir::MLIRContext> ctx;
  std::call_once(once, [] {
    mlir::DialectRegistry registry;
    registerRewireDialects(registry);
    registerRewirePasses();
    ctx = std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
    ctx->printOpOnDiagnostic(false);
  });
  return *ctx;
}

/// Collects the errors (with their notes) of one call as text; warnings
/// are kept apart and raised as Python warnings when the call ends well.
class Diagnostics {
public:
  Diagnostics()
      : handler(&context(), [this](mlir::Diagnostic &d) {
          std::string line;
          llvm::raw_string_ostream os(line);
          os << d.getLocation() << ": "
             << (d.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning: " : "")
             << d.str();
          for (const mlir::Diagnostic &note : d.getNotes())
            os << "\n  " << note.getLocation() << ": note: " << note.str();
          (d.getSeverity() == mlir::DiagnosticSeverity::Warning ? warnings : errors)
              .push_back(line);
          return mlir::success();
        }) {}

  /// Raises rewire.Error for a compiler error: its message (or `fallback`
  /// when the reason is in the diagnostics only), then the diagnostics.
  [[noreturn]] void fail(llvm::Error error, const std::string &fallback) const {
    std::string message;
    llvm::handleAllErrors(std::move(error),
                          [&](const compiler::CompileError &e) { message = e.message; });
    fail(message.empty() ? fallback : message);
  }

  /// Raises rewire.Error: `what`, then the diagnostics.
  [[noreturn]] void fail(const std::string &what) const {
    std::string text = what;
    for (const std::string &e : errors)
      text += "\n" + e;
    throw Error(text);
  }
  void warn() const {
    for (const std::string &w : warnings)
      if (PyErr_WarnEx(PyExc_UserWarning, w.c_str(), 1) != 0)
        throw nb::python_error();
  }

private:
  std::vector<std::string> errors, warnings;
  mlir::ScopedDiagnosticHandler handler;
};

std::string join(const std::string &dir, const char *file) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, file);
  return p.str().str();
}

/// DIR/model.mlir, parsed (its parameter file beside it).
mlir::OwningOpRef<mlir::ModuleOp> readDir(const std::string &dir, Diagnostics &diag,
                                          llvm::SourceMgr &sm) {
  auto module = compiler::readModel(context(), sm, join(dir, "model.mlir"));
  if (!module)
    diag.fail(module.takeError(), "cannot read the model in '" + dir + "'");
  return std::move(*module);
}

/// Writes `module` to DIR/model.mlir naming `params` (relative to DIR).
void writeDir(mlir::ModuleOp module, const std::string &dir, const std::string &params) {
  module->setAttr(nn::kParameterFileAttrName, mlir::StringAttr::get(&context(), params));
  std::error_code ec;
  llvm::raw_fd_ostream os(join(dir, "model.mlir"), ec);
  if (ec)
    throw Error("cannot write '" + join(dir, "model.mlir") + "': " + ec.message());
  module.print(os);
}

/// The parameter file of `from` shared with `to` (a hard link: no copy;
/// a copy where links fail).
void shareParameters(const std::string &from, const std::string &to) {
  std::string src = join(from, "params.safetensors"), dst = join(to, "params.safetensors");
  if (!llvm::sys::fs::exists(src))
    return;
  llvm::sys::fs::remove(dst);
  if (llvm::sys::fs::create_hard_link(src, dst))
    if (auto ec = llvm::sys::fs::copy_file(src, dst))
      throw Error("cannot copy the parameters to '" + dst + "': " + ec.message());
}

void importModel(nb::object source, const std::string &dir,
                 const std::map<std::string, int64_t> &dims,
                 const std::vector<std::vector<int64_t>> &inputShapes) {
  Diagnostics diag;
  onnx_import::ImportOptions options;
  for (const auto &[name, size] : dims)
    options.dimBindings[name] = size;
  options.inputShapes = inputShapes;
  options.parameterFile = join(dir, "params.safetensors");
  options.parameterFileRef = "params.safetensors";
  onnx_import::ImportResult result;
  if (nb::isinstance<nb::bytes>(source)) {
    auto bytes = nb::cast<nb::bytes>(source);
    std::string_view view(bytes.c_str(), bytes.size());
    nb::gil_scoped_release release;
    result = onnx_import::importOnnxBuffer(llvm::StringRef(view.data(), view.size()), "<bytes>",
                                           "", &context(), options);
  } else {
    std::string path = nb::cast<std::string>(source);
    if (!llvm::StringRef(path).ends_with(".onnx")) {
      // IR: parsed (its parameter file confined to its folder) and written
      // with the parameters shared into DIR.
      llvm::SourceMgr sm;
      auto module = compiler::readModel(context(), sm, path);
      if (!module)
        diag.fail(module.takeError(), "cannot read '" + path + "'");
      std::string params;
      if (auto ref = (**module)->getAttrOfType<mlir::StringAttr>(nn::kParameterFileAttrName)) {
        llvm::SmallString<256> p(llvm::sys::path::parent_path(path));
        llvm::sys::path::append(p, ref.getValue());
        if (llvm::sys::fs::copy_file(p, join(dir, "params.safetensors")))
          throw Error("cannot read the parameter file '" + p.str().str() + "' the model names");
        params = "params.safetensors";
      }
      writeDir(**module, dir, params);
      diag.warn();
      return;
    }
    nb::gil_scoped_release release;
    result = onnx_import::importOnnxFile(path, &context(), options);
  }
  if (!result.module)
    diag.fail(result.status == onnx_import::ImportStatus::inputMismatch
                  ? "an input shape does not fit the model"
                  : "cannot import the model");
  writeDir(*result.module, dir, "params.safetensors");
  diag.warn();
}

/// DIR -> OUT through `apply`, the parameters shared.
template <typename F>
void transformModel(const std::string &dir, const std::string &out, const std::string &what, F apply) {
  Diagnostics diag;
  llvm::SourceMgr sm;
  auto module = readDir(dir, diag, sm);
  if (failed(apply(*module, diag)) || failed(mlir::verify(*module)))
    diag.fail(what + " failed");
  shareParameters(dir, out);
  writeDir(*module, out, "params.safetensors");
  diag.warn();
}

bool hasStreams(mlir::ModuleOp m) {
  bool found = false;
  m->walk([&](residual::StreamOpInterface) { found = true; });
  return found;
}

void runPipeline(const std::string &dir, const std::string &out, const std::string &pipeline) {
  transformModel(dir, out, "the pass pipeline", [&](mlir::ModuleOp m, Diagnostics &) {
    mlir::PassManager pm(&context());
    std::string err;
    llvm::raw_string_ostream os(err);
    // rewire-opt's --pass-pipeline form, `builtin.module(...)`, names the
    // module this manager already runs on: its contents are the pipeline.
    llvm::StringRef text = llvm::StringRef(pipeline).trim();
    if (text.consume_front("builtin.module(") && text.consume_back(")"))
      ;
    else
      text = llvm::StringRef(pipeline).trim();
    if (failed(mlir::parsePassPipeline(text, pm, os)))
      throw Error("pass pipeline '" + pipeline + "': " + err);
    return pm.run(m);
  });
}

void truncateModel(const std::string &dir, const std::string &out, int64_t depth,
              const std::string &granularity) {
  if (granularity != "block" && granularity != "sublayer")
    throw Error("granularity must be 'block' or 'sublayer', got '" + granularity + "'");
  transformModel(dir, out, "truncating to depth " + std::to_string(depth),
            [&](mlir::ModuleOp m, Diagnostics &) {
    mlir::PassManager pm(&context());
    if (!hasStreams(m))
      pm.addNestedPass<mlir::func::FuncOp>(createResidualDetect());
    ResidualTruncateOptions options;
    options.depth = depth;
    options.granularity = granularity == "block" ? Granularity::block : Granularity::sublayer;
    pm.addPass(createResidualTruncate(options));
    return pm.run(m);
  });
}

std::string report(const std::string &dir, const std::string &scratch) {
  Diagnostics diag;
  llvm::SourceMgr sm;
  auto module = readDir(dir, diag, sm);
  mlir::PassManager pm(&context());
  if (!hasStreams(*module))
    pm.addNestedPass<mlir::func::FuncOp>(createResidualDetect());
  ResidualReportOptions options;
  options.format = "json";
  options.output = scratch;
  pm.addPass(createResidualReport(options));
  if (failed(pm.run(*module)))
    diag.fail("the report failed");
  std::string text;
  if (auto err = readRegularFile(scratch, text))
    throw Error(*err);
  return text;
}

void exportOnnx(const std::string &dir, const std::string &path, const std::string &params,
                const std::string &function, uint64_t seed) {
  Diagnostics diag;
  llvm::SourceMgr sm;
  auto module = readDir(dir, diag, sm);
  onnx_export::ExportOptions options;
  options.parameterDir = dir;
  options.parameterFile = params;
  options.function = function;
  options.seed = seed;
  if (failed(onnx_export::exportOnnxFile(*module, path, options)))
    diag.fail("cannot export the model to '" + path + "'");
  diag.warn();
}

void compileModel(const std::string &dir, const std::string &output, const std::string &target,
                  const std::string &train, const std::string &residual, bool allowNoResidual,
                  const std::string &rewrittenIR, bool instrument, unsigned optLevel,
                  const std::string &cpu, bool preciseMath, const std::string &runtimeLibDir,
                  const std::string &emulatorKernels, uint64_t seed) {
  Diagnostics diag;
  compiler::CompileJob job;
  job.input = join(dir, "model.mlir");
  job.output = output;
  job.train = train;
  job.rewrittenIR = rewrittenIR;
  job.instrument = instrument;
  job.runtimeLibDir = runtimeLibDir;
  job.emulatorKernels = emulatorKernels;
  std::string printed;
  llvm::raw_string_ostream printedStream(printed);
  job.diagnostics = &printedStream;
  job.options.residual = residual;
  job.options.allowNoResidual = allowNoResidual;
  job.options.optLevel = optLevel;
  job.options.cpu = cpu;
  job.options.preciseMath = preciseMath;
  job.options.seed = seed;
  if (target == "cuda")
    job.options.cuda = true;
  else if (target != "cpu")
    throw Error("target '" + target + "' is not a target; use 'cpu' or 'cuda'");
  llvm::Error err = llvm::Error::success();
  {
    nb::gil_scoped_release release;
    err = compiler::compile(context(), job);
  }
  // The compile's diagnostics (with their source lines): errors into the
  // exception, anything else (warnings) as a Python warning.
  if (err)
    diag.fail(std::move(err), "the compile failed" + (printed.empty() ? "" : ":\n" + printed));
  if (!printed.empty() && PyErr_WarnEx(PyExc_UserWarning, printed.c_str(), 1) != 0)
    throw nb::python_error();
  diag.warn();
}

// --- The runtime ----------------------------------------------------------

nb::dlpack::dtype dlpackType(DType t) {
  switch (t) {
  case DType::F32: return nb::dtype<float>();
  case DType::F64: return nb::dtype<double>();
  case DType::F16: return {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
  case DType::BF16: return {static_cast<uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
  case DType::I64: return nb::dtype<int64_t>();
  case DType::I32: return nb::dtype<int32_t>();
  case DType::I16: return nb::dtype<int16_t>();
  case DType::I8: return nb::dtype<int8_t>();
  case DType::U8: return nb::dtype<uint8_t>();
  case DType::U16: return nb::dtype<uint16_t>();
  case DType::U32: return nb::dtype<uint32_t>();
  case DType::U64: return nb::dtype<uint64_t>();
  case DType::Bool: return nb::dtype<bool>();
  }
  return nb::dtype<float>();
}

/// The DType of a DLPack dtype, if Rewire has it.
std::optional<DType> fromDlpack(nb::dlpack::dtype t) {
  for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32,
                  DType::I16, DType::I8, DType::U8, DType::U16, DType::U32, DType::U64,
                  DType::Bool})
    if (dlpackType(d) == t)
      return d;
  return std::nullopt;
}

/// "f32", "i64", ... of a DLPack dtype (as the artifact names them).
std::string dlpackName(nb::dlpack::dtype t) {
  auto d = fromDlpack(t);
  return d ? dtypeName(*d) : "an unsupported dtype";
}

using AnyArray = nb::ndarray<nb::device::cpu, nb::c_contig>;
using NumpyArray = nb::ndarray<nb::numpy>;

class PyExecutable {
public:
  PyExecutable(const std::string &path, const std::string &params) {
    std::string error;
    exe = runtime::Executable::load(path, error, params);
    if (!exe)
      throw Error(error);
  }

  nb::list functions() const {
    nb::list fns;
    auto specs = [](const std::vector<runtime::TensorInfo> &ts) {
      nb::list l;
      for (const runtime::TensorInfo &t : ts) {
        nb::dict d;
        d["name"] = t.name;
        d["dtype"] = std::string(dtypeName(t.dtype));
        d["shape"] = t.shape;
        l.append(d);
      }
      return l;
    };
    for (const runtime::FunctionInfo &f : exe->functions()) {
      nb::dict d;
      d["name"] = f.name;
      d["inputs"] = specs(f.inputs);
      d["outputs"] = specs(f.outputs);
      fns.append(d);
    }
    return fns;
  }

  std::string device() const { return exe->device(); }

  nb::list run(const std::string &name, const std::vector<AnyArray> &inputs) const {
    const runtime::FunctionInfo *fn = exe->function(name);
    if (!fn)
      throw Error("the artifact has no function '" + name + "'");
    if (inputs.size() != fn->inputs.size())
      throw Error("'" + name + "' takes " + std::to_string(fn->inputs.size()) + " input(s), got " +
                  std::to_string(inputs.size()));
    std::vector<const void *> in;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const runtime::TensorInfo &want = fn->inputs[i];
      const AnyArray &a = inputs[i];
      std::vector<int64_t> shape;
      for (size_t d = 0; d < a.ndim(); ++d)
        shape.push_back(static_cast<int64_t>(a.shape(d)));
      nb::dlpack::dtype dt = dlpackType(want.dtype);
      if (a.dtype() != dt || shape != want.shape) {
        std::string got;
        for (size_t d = 0; d < shape.size(); ++d)
          got += std::to_string(shape[d]) + "x";
        throw Error("input " + std::to_string(i) + " ('" + want.name + "') of '" + name +
                    "' must be " + want.typeString() + ", got " + got +
                    dlpackName(a.dtype()) +
                    " (NumPy: np.ascontiguousarray(x, dtype=...) with the shape above)");
      }
      in.push_back(a.data());
    }
    std::vector<void *> out;
    std::vector<NumpyArray> arrays;
    for (const runtime::TensorInfo &t : fn->outputs) {
      size_t bytes = static_cast<size_t>(t.byteSize());
      auto *buffer = new uint8_t[bytes > 0 ? bytes : 1]();
      nb::capsule owner(buffer, [](void *p) noexcept { delete[] static_cast<uint8_t *>(p); });
      std::vector<size_t> shape(t.shape.begin(), t.shape.end());
      arrays.emplace_back(buffer, shape.size(), shape.data(), owner, nullptr, dlpackType(t.dtype));
      out.push_back(buffer);
    }
    std::optional<std::string> err;
    {
      nb::gil_scoped_release release;
      err = exe->runRaw(name, in.data(), out.data());
    }
    if (err)
      throw Error(*err);
    nb::list result;
    for (NumpyArray &a : arrays)
      result.append(nb::cast(a));
    return result;
  }

private:
  std::unique_ptr<runtime::Executable> exe;
};

/// An array from Python as a HostTensor (copied), or a message.
HostTensor hostTensor(const AnyArray &a, const char *what) {
  HostTensor h;
  auto dtype = fromDlpack(a.dtype());
  if (!dtype)
    throw Error(std::string(what) + " has a dtype Rewire does not take");
  h.dtype = *dtype;
  for (size_t d = 0; d < a.ndim(); ++d)
    h.shape.push_back(static_cast<int64_t>(a.shape(d)));
  const auto *p = static_cast<const uint8_t *>(a.data());
  h.data.assign(p, p + a.nbytes());
  return h;
}

NumpyArray numpyCopy(const HostTensor &t) {
  auto *buffer = new uint8_t[t.data.size() > 0 ? t.data.size() : 1];
  std::memcpy(buffer, t.data.data(), t.data.size());
  nb::capsule owner(buffer, [](void *p) noexcept { delete[] static_cast<uint8_t *>(p); });
  std::vector<size_t> shape(t.shape.begin(), t.shape.end());
  return NumpyArray(buffer, shape.size(), shape.data(), owner, nullptr, dlpackType(t.dtype));
}

/// The process's MPI communicator, started on first use (Trainer(comm="mpi")),
/// finalized at exit.
runtime::Communicator *mpiWorld(bool deterministic) {
#ifdef REWIRE_HAVE_MPI
  static std::unique_ptr<runtime::Communicator> world;
  if (!world) {
    std::string error;
    world = runtime::createMpiCommunicator(deterministic, error);
    if (!world)
      throw Error(error);
  }
  return world.get();
#else
  (void)deterministic;
  throw Error("this rewire was built without MPI (apt-get install libopenmpi-dev, then rebuild)");
#endif
}

/// runtime::Trainer on caller batches (the Python Trainer's engine).
class PyTrainer {
public:
  PyTrainer(const std::string &artifact, const nb::dict &kw) {
    runtime::TrainerOptions o;
    o.callerBatches = true;
    for (auto [key, value] : kw) {
      std::string k = nb::cast<std::string>(key);
      if (k == "steps") o.steps = nb::cast<int64_t>(value);
      else if (k == "lr") o.lr = nb::cast<double>(value);
      else if (k == "min_lr") o.minLr = nb::cast<double>(value);
      else if (k == "warmup") o.warmup = nb::cast<int64_t>(value);
      else if (k == "cosine") o.cosine = nb::cast<bool>(value);
      else if (k == "beta1") o.beta1 = nb::cast<double>(value);
      else if (k == "beta2") o.beta2 = nb::cast<double>(value);
      else if (k == "params") o.params = nb::cast<std::string>(value);
      else if (k == "checkpoint") o.checkpoint = nb::cast<std::string>(value);
      else if (k == "resume") o.resume = nb::cast<bool>(value);
      else if (k == "grad_accum") o.gradAccum = nb::cast<int64_t>(value);
      else if (k == "bucket_mb") o.bucketMb = nb::cast<double>(value);
      else if (k == "metrics") o.metrics = nb::cast<std::string>(value);
      else if (k == "jsonl") o.jsonl = nb::cast<std::string>(value);
      else if (k == "comm") {
        std::string c = nb::cast<std::string>(value);
        if (c != "mpi" && c != "mpi-deterministic")
          throw Error("comm must be 'mpi' or 'mpi-deterministic', got '" + c + "'");
        runtime::Communicator *world = mpiWorld(c == "mpi-deterministic");
        if (world->size() > 1)
          o.comm = world;
        rank = world->rank();
        ranks = world->size();
      }
      else throw Error("unknown trainer option '" + k + "'");
    }
    std::string error;
    exe = runtime::Executable::load(artifact, error);
    if (!exe)
      throw Error(error);
    runtime::TrainError failed;
    trainer = runtime::Trainer::create(*exe, artifact, o, failed);
    if (!trainer)
      throw Error(failed.message);
  }

  nb::dict step(const AnyArray &x, const AnyArray &y) {
    HostTensor hx = hostTensor(x, "inputs"), hy = hostTensor(y, "targets");
    runtime::StepResult r;
    runtime::TrainStatus status;
    {
      nb::gil_scoped_release release;
      status = trainer->step(hx, hy, r);
    }
    if (status)
      throw Error(status->message);
    nb::dict d;
    d["step"] = r.step;
    d["loss"] = r.loss;
    d["lr"] = r.lr;
    d["depth_losses"] = r.depthLosses;
    d["seconds"] = r.seconds;
    return d;
  }

  std::vector<double> evaluate(const AnyArray &x, const AnyArray &y) {
    HostTensor hx = hostTensor(x, "inputs"), hy = hostTensor(y, "targets");
    std::vector<double> losses;
    if (auto e = trainer->evaluate(hx, hy, losses))
      throw Error(e->message);
    return losses;
  }

  void checkpoint(const std::string &dir) {
    if (auto e = trainer->checkpoint(dir))
      throw Error(e->message);
  }

  void save(const std::string &path) {
    if (auto e = trainer->saveParameters(path))
      throw Error(e->message);
  }

  nb::dict parameters() {
    std::vector<std::pair<std::string, HostTensor>> ps;
    if (auto e = trainer->parameters(ps))
      throw Error(e->message);
    nb::dict d;
    for (auto &[name, t] : ps)
      d[nb::str(name.c_str())] = nb::cast(numpyCopy(t));
    return d;
  }

  int64_t nextStep() const { return trainer->nextStep(); }
  int rankOf() const { return rank; }
  int rankCount() const { return ranks; }
  int64_t batch() const { return trainer->batchSize(); }

private:
  std::unique_ptr<runtime::Executable> exe;
  std::unique_ptr<runtime::Trainer> trainer;
  int rank = 0, ranks = 1;
};

} // namespace

NB_MODULE(_core, m) {
  m.doc() = "Rewire's compiler and runtime (use the rewire package, not this module)";
  nb::exception<Error>(m, "Error", PyExc_RuntimeError);
  m.def("import_model", &importModel, nb::arg("source"), nb::arg("dir"), nb::arg("dims"),
        nb::arg("input_shapes"));
  m.def("rewrite", [](const std::string &dir, const std::string &out, const std::string &spec,
                      bool allowNone) {
    transformModel(dir, out, "the rewrite '" + spec + "'", [&](mlir::ModuleOp mod, Diagnostics &) {
      return compiler::applyResidualRewrite(mod, spec, allowNone);
    });
  });
  m.def("run_pipeline", &runPipeline);
  m.def("truncate", &truncateModel);
  m.def("report", &report);
  m.def("export_onnx", &exportOnnx);
  m.def("compile", &compileModel);
  nb::class_<PyExecutable>(m, "Executable")
      .def(nb::init<const std::string &, const std::string &>())
      .def("functions", &PyExecutable::functions)
      .def("device", &PyExecutable::device)
      .def("run", &PyExecutable::run);
  nb::class_<PyTrainer>(m, "Trainer")
      .def(nb::init<const std::string &, const nb::dict &>())
      .def("step", &PyTrainer::step)
      .def("evaluate", &PyTrainer::evaluate)
      .def("checkpoint", &PyTrainer::checkpoint)
      .def("save", &PyTrainer::save)
      .def("parameters", &PyTrainer::parameters)
      .def_prop_ro("next_step", &PyTrainer::nextStep)
      .def_prop_ro("batch", &PyTrainer::batch)
      .def_prop_ro("rank", &PyTrainer::rankOf)
      .def_prop_ro("ranks", &PyTrainer::rankCount);
}
