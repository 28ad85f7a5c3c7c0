//===- InlineParameters.cpp - Parameters as constants ---------------------===//
//
// Implements nn-inline-parameters (a test and debugging aid; see Passes.td).
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "dialects/nn/NNDialect.h"
#include "rewire/Support/InitRules.h"
#include "rewire/Support/Safetensors.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/SymbolTable.h"

namespace rewire {
#define GEN_PASS_DEF_INLINEPARAMETERS
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {
struct InlineParametersPass
    : public rewire::impl::InlineParametersBase<InlineParametersPass> {
  using InlineParametersBase::InlineParametersBase;
  void runOnOperation() override;
};
} // namespace

void InlineParametersPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<SafetensorsFile> values;
  SymbolTable symbols(module);
  SmallVector<ml_program::GlobalLoadConstOp> loads;
  module.walk([&](ml_program::GlobalLoadConstOp op) { loads.push_back(op); });
  for (auto load : loads) {
    auto global = symbols.lookup<ml_program::GlobalOp>(
        load.getGlobal().getRootReference());
    auto type = global ? dyn_cast<RankedTensorType>(global.getType()) : nullptr;
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32()) {
      load.emitError() << "nn-inline-parameters: '" << load.getGlobal()
                       << "' is not a static f32 parameter";
      return signalPassFailure();
    }
    Attribute init = global.getValue().value_or(Attribute());
    DenseElementsAttr attr;
    if (auto elements = dyn_cast_or_null<DenseElementsAttr>(init)) {
      attr = elements;
    } else if (auto rule = dyn_cast_or_null<nn::InitAttr>(init)) {
      auto data = materializeInit(
          static_cast<InitRule>(static_cast<int>(rule.getKind())),
          rule.getA().convertToDouble(), rule.getB().convertToDouble(),
          type.getNumElements(), seed, global.getSymName().str());
      attr = DenseElementsAttr::get(type, ArrayRef<float>(data));
    } else {
      if (!values) {
        if (file.empty()) {
          load.emitError() << "nn-inline-parameters: '" << load.getGlobal()
                           << "' is external; give file=<safetensors>";
          return signalPassFailure();
        }
        values.emplace();
        if (auto err = readSafetensors(file, *values)) {
          load.emitError() << "nn-inline-parameters: " << *err;
          return signalPassFailure();
        }
      }
      auto it = values->tensors.find(global.getSymName().str());
      std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
      if (it == values->tensors.end() || it->second.dtype != "F32" ||
          it->second.shape != shape) {
        load.emitError() << "nn-inline-parameters: no F32 tensor of shape "
                         << type << " named '" << global.getSymName()
                         << "' in '" << file << "'";
        return signalPassFailure();
      }
      const std::string &raw = it->second.data;
      attr = DenseElementsAttr::getFromRawBuffer(
          type, ArrayRef<char>(raw.data(), raw.size()));
    }
    OpBuilder b(load);
    auto cst = arith::ConstantOp::create(b, load.getLoc(), type, attr);
    load.replaceAllUsesWith(cst.getResult());
    load.erase();
  }
  for (auto global :
       llvm::make_early_inc_range(module.getOps<ml_program::GlobalOp>()))
    if (global.isPrivate() && SymbolTable::symbolKnownUseEmpty(global, module))
      global.erase();
}
