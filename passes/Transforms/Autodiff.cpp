//===- Autodiff.cpp - Reverse-mode differentiation of a loss --------------===//
//
// Implements rewire-autodiff (see Passes.td): clones the loss function into
// `<name>_grad`, then walks its ops backwards from the loss, asking each
// op's ReverseModeOpInterface rule for its operands' adjoints and summing
// adjoints that reach a value from several uses.
//
//===----------------------------------------------------------------------===//
#include "passes/Transforms/Passes.h"

#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"

namespace rewire {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/Transforms/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

struct AutodiffPass : public rewire::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;
  void runOnOperation() override;
  LogicalResult differentiate(func::FuncOp grad);
};

bool isFloatTensor(Type t) {
  auto tt = dyn_cast<RankedTensorType>(t);
  return tt && isa<FloatType>(tt.getElementType());
}

LogicalResult AutodiffPass::differentiate(func::FuncOp fn) {
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("rewire-autodiff: '") << fn.getSymName() << "' has control flow";
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    return fn.emitError("rewire-autodiff: '") << fn.getSymName() << "' returns nothing";
  Value loss = ret.getOperand(0);
  auto lossType = dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || !isa<FloatType>(lossType.getElementType()) || !lossType.hasStaticShape() ||
      lossType.getNumElements() != 1)
    return fn.emitError("rewire-autodiff: the first result of '")
           << fn.getSymName() << "' must be a scalar float loss, got " << loss.getType();

  // Which arguments to differentiate.
  SmallVector<std::string> frozenPrefixes;
  for (StringRef p : llvm::split(StringRef(frozen), ','))
    if (!p.trim().empty())
      frozenPrefixes.push_back(p.trim().str());
  SmallVector<BlockArgument> wrtArgs;
  for (BlockArgument arg : fn.getArguments()) {
    if (!isFloatTensor(arg.getType()))
      continue;
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "nn.parameter");
    if (wrt == "parameters" && !name)
      continue;
    if (name && llvm::any_of(frozenPrefixes, [&](const std::string &p) {
          return name.getValue().starts_with(p);
        }))
      continue;
    wrtArgs.push_back(arg);
  }

  // Activity analysis: only values that depend on a differentiated argument
  // need adjoints. Frozen parameters (an embedding table, a pretrained
  // model's weights) then cost nothing and need no rule.
  llvm::DenseSet<Value> varied(wrtArgs.begin(), wrtArgs.end());
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getOperands(), [&](Value v) { return varied.contains(v); }))
      varied.insert(op.result_begin(), op.result_end());

  ImplicitLocOpBuilder b(ret.getLoc(), ret);
  DenseMap<Value, Value> adjoint;
  adjoint[loss] = autodiff::splat(b, lossType, 1.0);
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (llvm::none_of(op->getResults(), [&](Value r) { return adjoint.count(r); }) ||
        llvm::none_of(op->getOperands(), [&](Value v) { return varied.contains(v); }))
      continue;
    auto rule = dyn_cast<autodiff::ReverseModeOpInterface>(op);
    if (!rule)
      return op->emitError("rewire-autodiff: no reverse rule for '")
             << op->getName() << "' (the loss depends on it)";
    SmallVector<Value> resultAdjoints;
    for (Value r : op->getResults()) {
      Value a = adjoint.lookup(r);
      if (!a) {
        if (!isFloatTensor(r.getType()))
          return op->emitError("rewire-autodiff: result of non-float type ") << r.getType();
        a = autodiff::splat(b, cast<RankedTensorType>(r.getType()), 0.0);
      }
      resultAdjoints.push_back(a);
    }
    b.setLoc(op->getLoc());
    SmallVector<Value> operandAdjoints;
    if (failed(rule.buildAdjoints(b, resultAdjoints, operandAdjoints)))
      return failure();
    if (operandAdjoints.size() != op->getNumOperands())
      return op->emitError("rewire-autodiff: internal error: the rule returned ")
             << operandAdjoints.size() << " adjoints for " << op->getNumOperands() << " operands";
    for (auto [operand, a] : llvm::zip(op->getOperands(), operandAdjoints)) {
      if (!a || !varied.contains(operand))
        continue;
      if (a.getType() != operand.getType())
        return op->emitError("rewire-autodiff: internal error: adjoint of type ")
               << a.getType() << " for an operand of type " << operand.getType();
      Value &slot = adjoint[operand];
      slot = slot ? nn::AddOp::create(b, slot, a).getResult() : a;
    }
  }

  SmallVector<Value> results = {loss};
  SmallVector<Type> types = {loss.getType()};
  SmallVector<DictionaryAttr> resultAttrs = {fn.getResultAttrDict(0)};
  MLIRContext *ctx = fn.getContext();
  for (BlockArgument arg : wrtArgs) {
    Value a = adjoint.lookup(arg);
    if (!a)
      a = autodiff::splat(b, cast<RankedTensorType>(arg.getType()), 0.0);
    results.push_back(a);
    types.push_back(a.getType());
    std::string name;
    if (auto p = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "nn.parameter"))
      name = p.str();
    else if (auto n = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "nn.name"))
      name = n.str();
    else
      name = "arg" + std::to_string(arg.getArgNumber());
    resultAttrs.push_back(
        DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, "nn.name"),
                                                 StringAttr::get(ctx, "grad:" + name))}));
  }
  func::ReturnOp::create(b, results);
  ret.erase();
  fn.setFunctionType(FunctionType::get(ctx, fn.getArgumentTypes(), types));
  fn.setAllResultAttrs(resultAttrs);
  return success();
}

void AutodiffPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto fn = module.lookupSymbol<func::FuncOp>(function);
  if (!fn || fn.isExternal()) {
    module.emitError("rewire-autodiff: no function '") << function << "' with a body";
    return signalPassFailure();
  }
  if (wrt != "parameters" && wrt != "all") {
    module.emitError("rewire-autodiff: wrt must be 'parameters' or 'all', got '") << wrt << "'";
    return signalPassFailure();
  }
  std::string name = function + "_grad";
  if (module.lookupSymbol(name)) {
    module.emitError("rewire-autodiff: '") << name << "' exists already";
    return signalPassFailure();
  }
  auto grad = fn.clone();
  grad.setSymName(name);
  SymbolTable(module).insert(grad, std::next(Block::iterator(fn)));
  if (failed(differentiate(grad)))
    return signalPassFailure();
}

} // namespace
