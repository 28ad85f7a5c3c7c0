//===- Driver.h - One compile, from a model file to an artifact --*- C++ -*-===//
//
// What rewire-compile does, as one call: read or import the model, apply
// the residual rewrite, the instrumentation and the training steps, lower
// for the target and write the stage asked for (IR, PTX, an object, or the
// artifact and its parameter file). Tools map flags to a CompileJob and a
// failure to their exit code; the Python API and the runtime tools' compile
// cache make the same call.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_COMPILER_DRIVER_H
#define REWIRE_COMPILER_DRIVER_H

#include "rewire/Compiler/Compiler.h"
#include "rewire/Import/OnnxImport.h"

#include "mlir/IR/MLIRContext.h"

#include <map>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace rewire::compiler {

/// One compile, as rewire-compile's flags describe it.
struct CompileJob {
  /// An ONNX model (`.onnx`) or nn/residual IR (a file, or "-" for stdin).
  std::string input;
  /// Where the stage goes: "-" = stdout (IR and PTX only); empty = the input
  /// with .rwx (.rwcu for CUDA, .o for objects), or stdout for IR.
  std::string output;
  /// The parameter file (empty: OUTPUT without .rwx + .params.safetensors).
  std::string params;
  Stage emit = Stage::artifact;
  /// ONNX only: symbolic dimensions ("batch" -> 2) and input shapes.
  std::map<std::string, int64_t> dims;
  std::vector<std::vector<int64_t>> inputShapes;
  /// `OPTIMIZER[:option=value,...]`: also compile eval_step and train_step.
  std::string train;
  /// Also write the model after the residual rewrite (before --train's
  /// steps) as IR to this file, its nn.parameter_file naming the
  /// artifact's parameter file: what rewire-export needs to export the
  /// rewritten model with trained parameters, without importing and
  /// rewriting again.
  std::string rewrittenIR;
  /// Return per-layer residual-stream statistics (residual-instrument).
  bool instrument = false;
  /// Print each stage's wall time and MLIR's pass timing to stderr.
  bool timing = false;
  /// The folder of librewire_kernels.a and librewire_cuda_emu.so.
  std::string runtimeLibDir;
  /// --target=cuda: also write the kernels compiled for the CUDA emulator.
  std::string emulatorKernels;
  /// Where the diagnostics go, with their source lines (null: stderr); the
  /// Python API collects them into its exception.
  llvm::raw_ostream *diagnostics = nullptr;
  CompileOptions options;
};

/// Reads a model: `path` ending in .onnx is imported with `importOptions`,
/// anything else is parsed as MLIR (a regular file, or "-" for stdin, its
/// nesting bounded and its nn.parameter_file confined to its folder) into
/// `sourceMgr`, which the diagnostics of the parse refer to.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
readModel(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr, const std::string &path,
          const rewire::onnx_import::ImportOptions &importOptions = {});

/// The job's settings checked together (a CPU stage for CUDA, -O7, ...):
/// a CompileError(Failure::usage) saying what to change.
llvm::Error validate(const CompileJob &job);

/// Runs `job` in `context` (which must have Rewire's dialects and passes
/// registered: rewire::registerRewireDialects/-Passes). Diagnostics go to
/// the context's handler.
llvm::Error compile(mlir::MLIRContext &context, const CompileJob &job);

/// The failure category of an error from compile(); consumes it, printing
/// its message (if any) as "`tool`: error: message".
Failure reportError(llvm::Error error, llvm::StringRef tool);

} // namespace rewire::compiler

#endif // REWIRE_COMPILER_DRIVER_H
