//===- RecordEntryPoints.cpp - The artifact's entry points ----------------===//
//
// Implements rewire-record-entry-points (see Passes.td): checks the public
// functions' signatures against what the runtime can pass and records them
// on the module, where the compiler reads them for the artifact metadata.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "dialects/nn/NNParameters.h"
#include "rewire/Support/DType.h"

#include "llvm/ADT/BitVector.h"

namespace rewire {
#define GEN_PASS_DEF_RECORDENTRYPOINTS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

/// Whether the runtime carries tensors of `t`: its MLIR spelling is one of
/// rewire/Support/DType.h's.
bool isEntryElementType(Type t) {
  std::string spelling;
  llvm::raw_string_ostream os(spelling);
  t.print(os);
  return rewire::parseDTypeName(spelling).has_value();
}

bool isEmptyTensor(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.hasStaticShape() && r.getNumElements() == 0;
}

/// Entry tensors with no elements carry no data: the function stops taking
/// (or returning) them and its uses of one read a tensor.empty.
void elideEmptyTensors(func::FuncOp func) {
  Block &entry = func.getBody().front();
  llvm::BitVector args(func.getNumArguments()), results(func.getNumResults());
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    BlockArgument arg = func.getArgument(i);
    if (!isEmptyTensor(arg.getType()))
      continue;
    auto t = cast<RankedTensorType>(arg.getType());
    arg.replaceAllUsesWith(
        tensor::EmptyOp::create(b, func.getLoc(), t.getShape(), t.getElementType()));
    args.set(i);
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (isEmptyTensor(func.getResultTypes()[i]))
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

struct RecordEntryPointsPass
    : public rewire::impl::RecordEntryPointsBase<RecordEntryPointsPass> {
  using RecordEntryPointsBase::RecordEntryPointsBase;
  void runOnOperation() override;

  /// `{name, type}` for one tensor, or failure with an error on `func`.
  FailureOr<DictionaryAttr> spec(func::FuncOp func, Type type, StringRef name,
                                 StringRef role) {
    MLIRContext *ctx = func.getContext();
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() || !isEntryElementType(tensor.getElementType())) {
      func.emitError() << "rewire-compile: " << role << " '" << name << "' has type " << type
                       << "; entry points take and return statically shaped tensors of "
                          "f32/f64/f16/bf16/i64/i32/i16/i8/ui64/ui32/ui16/ui8/i1 (bind "
                          "symbolic sizes with --dim NAME=SIZE)";
      return failure();
    }
    if (tensor.getNumElements() == 0 && !elideEmpty) {
      func.emitError() << "rewire-compile: " << role << " '" << name << "' has type " << type
                       << " with no elements; the CUDA target's entry points take no empty "
                          "tensors";
      return failure();
    }
    return DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, "name"),
                                                    StringAttr::get(ctx, name)),
                                     NamedAttribute(StringAttr::get(ctx, "type"),
                                                    TypeAttr::get(type))});
  }

  FailureOr<DictionaryAttr> record(func::FuncOp func);
};

FailureOr<DictionaryAttr> RecordEntryPointsPass::record(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  SmallVector<Attribute> inputs, parameters, outputs;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    Type type = func.getArgument(i).getType();
    if (auto p = func.getArgAttrOfType<StringAttr>(i, nn::kParameterAttrName)) {
      FailureOr<DictionaryAttr> s = spec(func, type, p.getValue(), "parameter");
      if (failed(s))
        return failure();
      parameters.push_back(*s);
      continue;
    }
    if (!parameters.empty()) {
      func.emitError() << "rewire-compile: input " << i << " follows a parameter";
      return failure();
    }
    auto name = func.getArgAttrOfType<StringAttr>(i, nn::kNameAttrName);
    FailureOr<DictionaryAttr> s =
        spec(func, type, name ? name.str() : "input" + std::to_string(i), "input");
    if (failed(s))
      return failure();
    inputs.push_back(*s);
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, nn::kNameAttrName);
    FailureOr<DictionaryAttr> s = spec(func, func.getResultTypes()[i],
                                       name ? name.str() : "output" + std::to_string(i), "output");
    if (failed(s))
      return failure();
    outputs.push_back(*s);
  }
  if (outputs.empty()) {
    func.emitError() << "rewire-compile: entry point '" << func.getSymName()
                     << "' returns nothing";
    return failure();
  }
  auto checks = func->getAttrOfType<ArrayAttr>(kInputChecksAttrName);
  func->removeAttr(kInputChecksAttrName);
  auto named = [&](StringRef key, Attribute value) {
    return NamedAttribute(StringAttr::get(ctx, key), value);
  };
  return DictionaryAttr::get(
      ctx, {named("name", func.getSymNameAttr()), named("inputs", ArrayAttr::get(ctx, inputs)),
            named("parameters", ArrayAttr::get(ctx, parameters)),
            named("outputs", ArrayAttr::get(ctx, outputs)),
            named("input_checks", checks ? checks : ArrayAttr::get(ctx, {}))});
}

void RecordEntryPointsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  SmallVector<Attribute> entries;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    FailureOr<DictionaryAttr> entry = record(func);
    if (failed(entry))
      return signalPassFailure();
    entries.push_back(*entry);
    // Recorded; the LLVM translation has no use for the names. Inputs are
    // the caller's buffers: never written in place.
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      func.removeArgAttr(i, nn::kParameterAttrName);
      func.removeArgAttr(i, nn::kNameAttrName);
      func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                      BoolAttr::get(ctx, false));
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      func.removeResultAttr(i, StringAttr::get(ctx, nn::kNameAttrName));
    if (elideEmpty)
      elideEmptyTensors(func);
  }
  if (entries.empty()) {
    module.emitError() << "rewire-compile: the module has no public function to compile";
    return signalPassFailure();
  }
  module->setAttr(kEntryPointsAttrName, ArrayAttr::get(ctx, entries));
}

} // namespace
