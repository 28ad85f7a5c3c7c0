//===- Stages.cpp - The stages of rewire-compile on a module --------------===//
//
// The residual rewrite, the training steps and the lowerings as calls on a
// module, and what they record for the artifact: the entry points
// (rewire-record-entry-points) and where the parameters' values come from.
//
//===----------------------------------------------------------------------===//
#include "rewire/Compiler/Compiler.h"
#include "rewire/Compiler/Pipelines.h"

#include "dialects/nn/NNDialect.h"
#include "dialects/nn/NNParameters.h"
#include "dialects/residual/ResidualOps.h"
#include "passes/Conversion/Passes.h"
#include "passes/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;
using namespace rewire::compiler;

namespace {

/// MLIR's spelling of an element type ("f32", "ui8", "i1"): DType.h's names,
/// which rewire-record-entry-points admitted.
std::string dtypeOf(Type t) {
  std::string spelling;
  llvm::raw_string_ostream os(spelling);
  t.print(os);
  return spelling;
}

std::vector<TensorSpec> specsOf(ArrayAttr specs) {
  std::vector<TensorSpec> out;
  for (auto d : specs.getAsRange<DictionaryAttr>()) {
    auto type = cast<RankedTensorType>(d.getAs<TypeAttr>("type").getValue());
    out.push_back(TensorSpec{d.getAs<StringAttr>("name").str(), dtypeOf(type.getElementType()),
                             std::vector<int64_t>(type.getShape().begin(), type.getShape().end())});
  }
  return out;
}

/// The record rewire-record-entry-points leaves on the module.
std::vector<EntryPoint> entryPointsOf(ModuleOp module) {
  std::vector<EntryPoint> entries;
  auto record = module->getAttrOfType<ArrayAttr>(rewire::kEntryPointsAttrName);
  if (!record)
    return entries;
  for (auto e : record.getAsRange<DictionaryAttr>()) {
    EntryPoint entry;
    entry.name = e.getAs<StringAttr>("name").str();
    entry.inputs = specsOf(e.getAs<ArrayAttr>("inputs"));
    entry.parameters = specsOf(e.getAs<ArrayAttr>("parameters"));
    entry.outputs = specsOf(e.getAs<ArrayAttr>("outputs"));
    for (auto c : e.getAs<ArrayAttr>("input_checks").getAsRange<DictionaryAttr>()) {
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
    if (auto order = e.getAs<DenseI64ArrayAttr>("ready_order"))
      entry.readyOrder.assign(order.asArrayRef().begin(), order.asArrayRef().end());
    entries.push_back(std::move(entry));
  }
  return entries;
}

/// `KIND[:option=value,...]` as pass options (`kind=KIND option=value ...`);
/// list values joined by '+' become ','.
FailureOr<std::string> passOptions(ModuleOp module, StringRef flag, StringRef first,
                                   StringRef spec, ArrayRef<StringRef> listOptions) {
  // Options are `name=value` pairs separated by commas; nothing else.
  for (char c : spec)
    if (!llvm::isAlnum(c) && !StringRef("_-.=:,+").contains(c))
      return module.emitError() << "rewire-compile: " << flag << "='" << spec << "' contains '"
                                << c << "'; expected " << first.upper()
                                << "[:option=value,...]";
  auto [head, rest] = spec.split(':');
  std::string options = first.str() + "=" + head.str();
  SmallVector<StringRef> parts;
  rest.split(parts, ',', -1, false);
  for (StringRef p : parts) {
    if (!p.contains('='))
      return module.emitError() << "rewire-compile: " << flag << " option '" << p
                                << "' is not option=value";
    auto [key, value] = p.split('=');
    if (key == first)
      return module.emitError() << "rewire-compile: " << flag << "='" << spec << "' sets " << first
                                << " twice; give it once, before ':'";
    std::string v = value.str();
    if (llvm::is_contained(listOptions, key))
      std::replace(v.begin(), v.end(), '+', ',');
    options += " " + key.str() + "=" + v;
  }
  return options;
}

/// `pass` with `options` (its own syntax), or an error naming `what`. The
/// option parser prints what it rejects (an unknown kind, a value that is
/// not a number) before this error.
LogicalResult configure(ModuleOp module, Pass &pass, StringRef options, StringRef what) {
  if (succeeded(pass.initializeOptions(options, [&](const Twine &message) {
        std::string text = message.str();
        if (!text.empty())
          module.emitError() << "rewire-compile: " << what << ": " << text;
        return failure();
      })))
    return success();
  return module.emitError() << "rewire-compile: " << what << ": not options of "
                            << pass.getArgument()
                            << " (see above; `rewire-opt --help` lists its options and values)";
}

} // namespace

bool rewire::compiler::isEmptySpec(const TensorSpec &spec) {
  return llvm::is_contained(spec.shape, 0);
}

LogicalResult rewire::compiler::applyResidualRewrite(ModuleOp module, StringRef spec,
                                                     bool allowNone) {
  std::string what = "--residual='" + spec.str() + "'";
  FailureOr<std::string> options = passOptions(module, "--residual", "kind", spec, {});
  if (failed(options))
    return failure();
  std::unique_ptr<Pass> rewrite = rewire::createResidualRewrite();
  if (failed(configure(module, *rewrite, *options, what)))
    return failure();
  if (failed(runPipeline(module, [](OpPassManager &pm) {
        pm.nest<func::FuncOp>().addPass(rewire::createResidualDetect());
      })))
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
  return runPipeline(module, [&](OpPassManager &pm) { pm.addPass(std::move(rewrite)); });
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

LogicalResult rewire::compiler::instrumentResidualStreams(ModuleOp module) {
  return runPipeline(module, [](OpPassManager &pm) {
    pm.nest<func::FuncOp>().addPass(rewire::createResidualDetect());
    pm.addPass(rewire::createResidualInstrument());
  });
}

LogicalResult rewire::compiler::addTrainingSteps(ModuleOp module, StringRef spec,
                                                 const CompileOptions &compileOptions,
                                                 ModuleInfo &info) {
  collectParameterSources(module, info);
  FailureOr<std::string> options =
      passOptions(module, "--train", "optimizer", spec, {"frozen", "depth-weights"});
  if (failed(options))
    return failure();
  std::unique_ptr<Pass> step = rewire::createTrainStep();
  if (failed(configure(module, *step, *options, "--train='" + spec.str() + "'")))
    return failure();
  return runPipeline(module, [&](OpPassManager &pm) {
    pm.addPass(rewire::createParametersToArguments());
    // Formed before differentiation, the attention's weights are never a
    // value the backward reads (the chain would not fuse after it).
    if (compileOptions.fusedAttention && !compileOptions.cuda)
      pm.nest<func::FuncOp>().addPass(rewire::createFuseAttention());
    pm.addPass(std::move(step));
  });
}

LogicalResult rewire::compiler::lowerToLinalg(ModuleOp module, const CompileOptions &options,
                                              ModuleInfo &info) {
  collectParameterSources(module, info);
  if (failed(runPipeline(module, [&](OpPassManager &pm) { buildLinalgPipeline(pm, options); })))
    return failure();
  info.entries = entryPointsOf(module);
  return success();
}

LogicalResult rewire::compiler::lowerToLLVMDialect(ModuleOp module,
                                                   const CompileOptions &options,
                                                   std::vector<EntryPoint> *entries) {
  if (failed(runPipeline(module,
                         [&](OpPassManager &pm) { buildLLVMDialectPipeline(pm, options); })))
    return failure();
  if (entries)
    for (const EntryPoint &now : entryPointsOf(module))
      for (EntryPoint &e : *entries)
        if (e.name == now.name)
          e.readyOrder = now.readyOrder;
  return success();
}
