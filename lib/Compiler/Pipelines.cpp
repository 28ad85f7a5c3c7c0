//===- Pipelines.cpp - The lowering stages of rewire-compile --------------===//
//
// The pass pipelines behind each --emit stage, and the entry-point records
// the artifact metadata is made of.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"

#include "dialects/nn/NNDialect.h"
#include "dialects/nn/NNParameters.h"
#include "dialects/residual/ResidualOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;
using namespace rewire::compiler;

namespace {

bool passTiming = false;

} // namespace

LogicalResult rewire::compiler::runPipeline(ModuleOp module, const std::string &pipeline,
                                            StringRef what) {
  PassManager manager(module.getContext());
  if (passTiming)
    manager.enableTiming();
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (failed(parsePassPipeline(pipeline, manager, os)))
    return module.emitError() << "rewire-compile: cannot build the " << what
                              << " pipeline: " << errors;
  return manager.run(module);
}

namespace {

/// MLIR's spelling of an element type ("f32", "i64", "i1").
std::optional<std::string> dtypeOf(Type t) {
  if (t.isF32()) return "f32";
  if (t.isF64()) return "f64";
  if (t.isF16()) return "f16";
  if (t.isBF16()) return "bf16";
  if (t.isUnsignedInteger(64)) return "ui64";
  if (t.isUnsignedInteger(32)) return "ui32";
  if (t.isUnsignedInteger(16)) return "ui16";
  if (t.isUnsignedInteger(8)) return "ui8";
  if (t.isInteger(64)) return "i64";
  if (t.isInteger(32)) return "i32";
  if (t.isInteger(16)) return "i16";
  if (t.isInteger(8)) return "i8";
  if (t.isInteger(1)) return "i1";
  return std::nullopt;
}

LogicalResult specOf(Operation *where, Type type, std::string name, StringRef role,
                     TensorSpec &spec, bool allowEmpty) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  std::optional<std::string> dtype = tensor ? dtypeOf(tensor.getElementType()) : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !dtype)
    return where->emitError() << "rewire-compile: " << role << " '" << name << "' has type "
                              << type
                              << "; entry points take and return statically shaped tensors of "
                                 "f32/f64/f16/bf16/i64/i32/i16/i8/ui64/ui32/ui16/ui8/i1 (bind symbolic sizes "
                                 "with --dim NAME=SIZE)";
  if (tensor.getNumElements() == 0 && !allowEmpty)
    return where->emitError() << "rewire-compile: " << role << " '" << name << "' has type "
                              << type << " with no elements; the CUDA target's entry points "
                              << "take no empty tensors";
  spec.name = std::move(name);
  spec.dtype = *dtype;
  spec.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  return success();
}

/// Entry tensors with no elements carry no data: the function stops taking
/// (or returning) them, its uses of one read a tensor.empty, and the CPU
/// artifact's call wrapper skips their pointers (Emit.cpp, isEmptySpec).
void elideEmptyTensors(func::FuncOp func) {
  auto empty = [](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && r.hasStaticShape() && r.getNumElements() == 0;
  };
  Block &entry = func.getBody().front();
  llvm::BitVector args(func.getNumArguments()), results(func.getNumResults());
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    BlockArgument arg = func.getArgument(i);
    if (!empty(arg.getType()))
      continue;
    auto t = cast<RankedTensorType>(arg.getType());
    arg.replaceAllUsesWith(
        tensor::EmptyOp::create(b, func.getLoc(), t.getShape(), t.getElementType()));
    args.set(i);
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (empty(func.getResultTypes()[i]))
      results.set(i);
  if (results.any())
    func.walk([&](func::ReturnOp ret) {
      for (unsigned i = ret.getNumOperands(); i-- > 0;)
        if (results.test(i))
          ret->eraseOperand(i);
    });
  (void)func.eraseArguments(args);
  (void)func.eraseResults(results);
}

} // namespace

bool rewire::compiler::isEmptySpec(const TensorSpec &spec) {
  return llvm::is_contained(spec.shape, 0);
}

LogicalResult rewire::compiler::applyResidualRewrite(ModuleOp module, StringRef spec,
                                                     bool allowNone) {
  auto [kind, rest] = spec.split(':');
  // Options are `name=value` pairs separated by commas; refuse anything
  // that could be read as pipeline syntax.
  for (char c : spec)
    if (!llvm::isAlnum(c) && !StringRef("_-.=:,").contains(c))
      return module.emitError() << "rewire-compile: --residual='" << spec
                                << "' contains '" << c
                                << "'; expected KIND[:option=value,...]";
  std::string options = "kind=" + kind.str();
  SmallVector<StringRef> parts;
  rest.split(parts, ',', -1, false);
  for (StringRef p : parts) {
    if (!p.contains('='))
      return module.emitError() << "rewire-compile: --residual option '" << p
                                << "' is not option=value";
    options += " " + p.str();
  }
  std::string what = "--residual='" + spec.str() + "'";
  if (failed(runPipeline(module, "func.func(residual-detect)", what)))
    return failure();
  // A rewrite that finds nothing would silently hand back the original
  // model: say so instead (issue: users took exit 0 for a rewritten model).
  bool hasStream = false;
  module.walk([&](rewire::residual::StreamOpInterface) {
    hasStream = true;
    return WalkResult::interrupt();
  });
  if (!hasStream && !allowNone)
    return module.emitError()
           << "rewire-compile: " << what
           << ": no residual add found in the model, so there is nothing to rewrite. "
              "residual-detect takes an add `h + f(h)` whose operands have one type (no "
              "broadcast) and whose branch f reaches a parameterized matmul, gemm, conv or "
              "attention; bias, positional and mask adds do not count. Check that the model "
              "has skip connections (rewire-report MODEL lists what is found), or pass "
              "--allow-no-residual to compile it unchanged";
  // With nothing to rewrite the pass still runs: it validates the options.
  return runPipeline(module, "residual-rewrite{" + options + "}", what);
}

void rewire::compiler::collectParameterSources(ModuleOp module, ModuleInfo &info) {
  if (info.collected)
    return;
  info.collected = true;
  if (auto file = module->getAttrOfType<StringAttr>(nn::kParameterFileAttrName))
    info.parameterFile = file.str();
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    Attribute value = global.getValue().value_or(Attribute());
    ParameterSource src;
    if (auto rule = dyn_cast_or_null<nn::InitAttr>(value)) {
      src.external = false;
      src.initRule = static_cast<int>(rule.getKind());
      src.a = rule.getA().convertToDouble();
      src.b = rule.getB().convertToDouble();
    } else if (auto dense = dyn_cast_or_null<DenseFPElementsAttr>(value)) {
      src.external = false;
      for (APFloat v : dense.getValues<APFloat>())
        src.dense.push_back(v.convertToFloat());
    } else if (!isa_and_nonnull<ml_program::ExternAttr>(value)) {
      continue;
    }
    info.parameters[global.getSymName().str()] = src;
  }
}

void rewire::compiler::setPassTiming(bool enable) { passTiming = enable; }

LogicalResult rewire::compiler::instrumentResidualStreams(ModuleOp module) {
  return runPipeline(module, "func.func(residual-detect),residual-instrument", "--instrument");
}
bool rewire::compiler::passTimingEnabled() { return passTiming; }

LogicalResult rewire::compiler::addTrainingSteps(ModuleOp module, StringRef spec,
                                                 ModuleInfo &info) {
  collectParameterSources(module, info);
  for (char c : spec)
    if (!llvm::isAlnum(c) && !StringRef("_-.=:,+").contains(c))
      return module.emitError() << "rewire-compile: --train='" << spec << "' contains '" << c
                                << "'; expected OPTIMIZER[:option=value,...]";
  auto [optimizer, rest] = spec.split(':');
  std::string options = "optimizer=" + optimizer.str();
  SmallVector<StringRef> parts;
  rest.split(parts, ',', -1, false);
  for (StringRef p : parts) {
    if (!p.contains('='))
      return module.emitError() << "rewire-compile: --train option '" << p
                                << "' is not option=value";
    auto [key, value] = p.split('=');
    // frozen and depth-weights take lists, joined by '+' on the command line
    // (',' separates options). Other values pass through as they are.
    std::string v = value.str();
    if (key == "frozen" || key == "depth-weights")
      std::replace(v.begin(), v.end(), '+', ',');
    options += " " + key.str() + "=" + v;
  }
  return runPipeline(module, "nn-parameters-to-arguments,rewire-train-step{" + options + "}",
                     "--train='" + spec.str() + "'");
}

LogicalResult rewire::compiler::lowerToLinalg(ModuleOp module, const CompileOptions &options,
                                              ModuleInfo &info) {
  collectParameterSources(module, info);

  // Index values, labels and divisors are checked at run time (the checks
  // name the inputs, so this runs before their names are dropped): in the
  // CPU code; for CUDA, whose kernels have no error path, the checks of
  // function inputs are recorded for the runtime to apply on the host
  // (computed indices are clamped).
  if (options.checkIndices &&
      failed(runPipeline(module,
                         options.cuda ? "rewire-check-indices{record-inputs=true}"
                                      : "rewire-check-indices",
                         "index check")))
    return failure();

  // Inputs are the caller's buffers: never written in place.
  MLIRContext *ctx = module.getContext();
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(ctx, false));

  // Record the signatures between the two steps: parameters are arguments
  // now, and the tensor types are still visible.
  if (failed(runPipeline(module, "nn-parameters-to-arguments", "parameter")))
    return failure();
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    EntryPoint entry;
    entry.name = func.getSymName().str();
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      TensorSpec spec;
      if (auto p = func.getArgAttrOfType<StringAttr>(i, "nn.parameter")) {
        if (failed(specOf(func, func.getArgument(i).getType(), p.str(), "parameter", spec,
                          !options.cuda)))
          return failure();
        entry.parameters.push_back(spec);
        continue;
      }
      if (!entry.parameters.empty())
        return func.emitError() << "rewire-compile: input " << i << " follows a parameter";
      auto name = func.getArgAttrOfType<StringAttr>(i, "nn.name");
      if (failed(specOf(func, func.getArgument(i).getType(),
                        name ? name.str() : "input" + std::to_string(i), "input", spec,
                        !options.cuda)))
        return failure();
      entry.inputs.push_back(spec);
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      TensorSpec spec;
      auto name = func.getResultAttrOfType<StringAttr>(i, "nn.name");
      if (failed(specOf(func, func.getResultTypes()[i],
                        name ? name.str() : "output" + std::to_string(i), "output", spec,
                        !options.cuda)))
        return failure();
      entry.outputs.push_back(spec);
    }
    if (entry.outputs.empty())
      return func.emitError() << "rewire-compile: entry point '" << entry.name
                              << "' returns nothing";
    if (auto checks = func->getAttrOfType<ArrayAttr>("rewire.input_checks")) {
      for (auto c : checks.getAsRange<DictionaryAttr>()) {
        InputCheck check;
        check.input = c.getAs<StringAttr>("input").str();
        check.what = c.getAs<StringAttr>("what").str();
        check.lo = c.getAs<IntegerAttr>("lo").getInt();
        check.hi = c.getAs<IntegerAttr>("hi").getInt();
        if (auto also = c.getAs<IntegerAttr>("also"))
          check.also = also.getInt();
        check.nonzero = c.getAs<BoolAttr>("nonzero").getValue();
        entry.inputChecks.push_back(std::move(check));
      }
      func->removeAttr("rewire.input_checks");
    }
    // Recorded in the metadata; the LLVM translation has no use for them.
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      func.removeArgAttr(i, "nn.parameter");
      func.removeArgAttr(i, "nn.name");
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      func.removeResultAttr(i, StringAttr::get(ctx, "nn.name"));
    if (!options.cuda)
      elideEmptyTensors(func);
    info.entries.push_back(std::move(entry));
  }
  if (info.entries.empty())
    return module.emitError() << "rewire-compile: the module has no public function to compile";
  // No cse here: it merges the `tensor.empty` + zero `linalg.fill` inits of
  // different ops, and one-shot bufferization then copies the shared buffer
  // for every writer (25 copies instead of 7 in a 2-layer GPT-2 stack).
  std::string pipeline = std::string("func.func(convert-nn-to-linalg") +
                         (options.cuda ? "{scatter-as-reduction}" : "") +
                         ",convert-residual-to-linalg,canonicalize";
  if (options.optLevel > 0)
    pipeline += ",rewire-fuse-elementwise,canonicalize";
  if (options.optLevel > 1 && !options.preciseMath)
    pipeline += ",rewire-math-approximation";
  pipeline += ")";
  return runPipeline(module, pipeline, "linalg");
}

LogicalResult rewire::compiler::lowerToLLVMDialect(ModuleOp module,
                                                   const CompileOptions &options) {
  std::string pipeline =
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "buffer-results-to-out-params{hoist-static-allocs modify-public-functions},"
      "buffer-deallocation-pipeline,convert-bufferization-to-memref,";
  if (options.blas)
    pipeline += "rewire-linalg-to-blas,";
  // Parallel loop dimensions become OpenMP work-sharing loops (threads > 1);
  // the alloca scopes scf-to-openmp creates must be lowered (by
  // finalize-memref-to-llvm) before scf-to-cf splits their regions.
  if (options.threads != 1)
    pipeline += "canonicalize,func.func(convert-linalg-to-parallel-loops),convert-scf-to-openmp{num-threads=" +
                std::to_string(options.threads) + "},";
  else
    pipeline += "canonicalize,func.func(convert-linalg-to-loops),";
  pipeline += "expand-strided-metadata,lower-affine,finalize-memref-to-llvm{use-generic-functions},"
              "rewire-outline-loop-nests,func.func(convert-scf-to-cf),convert-math-to-llvm,convert-math-to-libm,"
              "convert-func-to-llvm{use-bare-ptr-memref-call-conv},convert-openmp-to-llvm,"
              "convert-to-llvm,reconcile-unrealized-casts";
  return runPipeline(module, pipeline, "LLVM");
}
