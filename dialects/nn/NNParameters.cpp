//===- NNParameters.cpp - Named model parameters --------------------------===//
//
// Enumeration, creation and loading of parameters (see NNParameters.h).
//
//===----------------------------------------------------------------------===//
#include "dialects/nn/NNParameters.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace rewire::nn;

SmallVector<Parameter> rewire::nn::getParameters(ModuleOp module) {
  SmallVector<Parameter> params;
  for (auto global : module.getOps<ml_program::GlobalOp>()) {
    auto type = dyn_cast<RankedTensorType>(global.getType());
    if (!type || global.getIsMutable())
      continue;
    params.push_back({global, global.getSymName(), type,
                      global.getValue().value_or(Attribute())});
  }
  return params;
}

int64_t rewire::nn::countParameterElements(ModuleOp module) {
  int64_t total = 0;
  for (const Parameter &p : getParameters(module))
    if (p.type.hasStaticShape())
      total += p.type.getNumElements();
  return total;
}

FailureOr<ml_program::GlobalOp>
rewire::nn::createParameter(ModuleOp module, Location loc, StringRef name,
                            RankedTensorType type, Attribute init) {
  if (SymbolTable::lookupSymbolIn(module, name))
    return emitError(loc) << "cannot add parameter '" << name
                          << "': the name is already taken";
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto global = ml_program::GlobalOp::create(
      builder, loc, builder.getStringAttr(name), TypeAttr::get(type),
      /*is_mutable=*/UnitAttr(), init, builder.getStringAttr("private"));
  return global;
}

FailureOr<ml_program::GlobalOp>
rewire::nn::createParameter(SymbolTable &symbols, Location loc, StringRef name,
                            RankedTensorType type, Attribute init) {
  if (symbols.lookup(name))
    return emitError(loc) << "cannot add parameter '" << name
                          << "': the name is already taken";
  auto module = cast<ModuleOp>(symbols.getOp());
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto global = ml_program::GlobalOp::create(
      builder, loc, builder.getStringAttr(name), TypeAttr::get(type),
      /*is_mutable=*/UnitAttr(), init, builder.getStringAttr("private"));
  symbols.insert(global);
  return global;
}

Value rewire::nn::loadParameter(OpBuilder &builder, Location loc,
                                ml_program::GlobalOp param) {
  return ml_program::GlobalLoadConstOp::create(
      builder, loc, param.getType(),
      FlatSymbolRefAttr::get(param.getSymNameAttr()));
}

mlir::LogicalResult rewire::nn::checkParameterFileRef(mlir::ModuleOp module,
                                                      llvm::StringRef irPath) {
  auto file = module->getAttrOfType<mlir::StringAttr>(kParameterFileAttrName);
  if (!file)
    return mlir::success();
  llvm::StringRef ref = file.getValue();
  bool escapes = ref.empty() || llvm::sys::path::is_absolute(ref);
  for (auto it = llvm::sys::path::begin(ref), e = llvm::sys::path::end(ref); it != e; ++it)
    escapes |= *it == "..";
  if (!escapes)
    return mlir::success();
  return module.emitError() << "nn.parameter_file '" << ref << "' of '" << irPath
                            << "' is not a file in the IR's folder: the parameter file must "
                               "sit beside (or below) the .mlir file that names it, as a "
                               "relative path without '..'; move it there and name it so";
}
