//===- Differentiate.cpp - Reverse-mode differentiation of a function -----===//
//
// The algorithm behind rewire-autodiff and the train-step builder: walk a
// single-block function backwards from its scalar loss, asking each op's
// ReverseModeOpInterface rule for its operands' adjoints, summing adjoints
// that reach a value from several uses, only for values that depend on a
// differentiated argument (activity analysis).
//
//===----------------------------------------------------------------------===//
#include "lib/Autodiff/Differentiate.h"
#include "dialects/nn/NNParameters.h"
#include "lib/Autodiff/ReverseMode.h"

#include "dialects/nn/NNOps.h"
#include "dialects/residual/ResidualOps.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace rewire;

static bool isFloatTensor(Type t) {
  auto tt = dyn_cast<RankedTensorType>(t);
  return tt && isa<FloatType>(tt.getElementType());
}

LogicalResult rewire::autodiff::backpropagate(ImplicitLocOpBuilder &b, ArrayRef<Operation *> ops,
                                             DenseMap<Value, Value> &adjoint,
                                             function_ref<bool(Value)> isVaried) {
  for (Operation *op : llvm::reverse(ops)) {
    if (llvm::none_of(op->getResults(), [&](Value r) { return adjoint.count(r); }) ||
        llvm::none_of(op->getOperands(), [&](Value v) { return isVaried(v); }))
      continue;
    // A residual form without a rule of its own is differentiated through
    // its decomposition into nn ops (StreamOpInterface::decompose).
    auto rule = dyn_cast<autodiff::ReverseModeOpInterface>(op);
    auto stream = dyn_cast<residual::StreamOpInterface>(op);
    if (!rule && !stream)
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
    if (rule ? failed(rule.buildAdjoints(b, resultAdjoints, operandAdjoints))
             : failed(differentiateDecomposition(
                   b, op->getOperands(),
                   [&](ImplicitLocOpBuilder &fb, ValueRange v) { return stream.decompose(fb, v); },
                   resultAdjoints[0], operandAdjoints)))
      return failure();
    if (operandAdjoints.size() != op->getNumOperands())
      return op->emitError("rewire-autodiff: internal error: the rule returned ")
             << operandAdjoints.size() << " adjoints for " << op->getNumOperands() << " operands";
    for (auto [operand, a] : llvm::zip(op->getOperands(), operandAdjoints)) {
      if (!a || !isVaried(operand))
        continue;
      if (a.getType() != operand.getType())
        return op->emitError("rewire-autodiff: internal error: adjoint of type ")
               << a.getType() << " for an operand of type " << operand.getType();
      Value &slot = adjoint[operand];
      slot = slot ? nn::AddOp::create(b, slot, a).getResult() : a;
    }
  }

  return success();
}

LogicalResult rewire::autodiff::differentiate(func::FuncOp fn, StringRef wrt,
                                             ArrayRef<std::string> frozenPrefixes,
                                             SmallVectorImpl<unsigned> *gradArgs,
                                             ArrayRef<unsigned> buffers) {
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
  SmallVector<BlockArgument> wrtArgs;
  for (BlockArgument arg : fn.getArguments()) {
    if (!isFloatTensor(arg.getType()) || llvm::is_contained(buffers, arg.getArgNumber()))
      continue;
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kParameterAttrName);
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
  if (failed(backpropagate(b, ops, adjoint, [&](Value v) { return varied.contains(v); })))
    return failure();

  SmallVector<Value> results = {loss};
  SmallVector<Type> types = {loss.getType()};
  SmallVector<DictionaryAttr> resultAttrs = {fn.getResultAttrDict(0)};
  MLIRContext *ctx = fn.getContext();
  for (BlockArgument arg : wrtArgs) {
    if (gradArgs)
      gradArgs->push_back(arg.getArgNumber());
    Value a = adjoint.lookup(arg);
    if (!a)
      a = autodiff::splat(b, cast<RankedTensorType>(arg.getType()), 0.0);
    results.push_back(a);
    types.push_back(a.getType());
    std::string name;
    if (auto p = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kParameterAttrName))
      name = p.str();
    else if (auto n = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kNameAttrName))
      name = n.str();
    else
      name = "arg" + std::to_string(arg.getArgNumber());
    resultAttrs.push_back(
        DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, nn::kNameAttrName),
                                                 StringAttr::get(ctx, "grad:" + name))}));
  }
  func::ReturnOp::create(b, results);
  ret.erase();
  fn.setFunctionType(FunctionType::get(ctx, fn.getArgumentTypes(), types));
  fn.setAllResultAttrs(resultAttrs);
  return success();
}


LogicalResult rewire::autodiff::differentiateDecomposition(
    ImplicitLocOpBuilder &b, ValueRange operands,
    function_ref<FailureOr<Value>(ImplicitLocOpBuilder &, ValueRange)> forward,
    Value resultAdjoint,
    SmallVectorImpl<Value> &operandAdjoints) {
  Block *block = b.getInsertionBlock();
  Block::iterator before = b.getInsertionPoint();
  bool atStart = before == block->begin();
  Operation *last = atStart ? nullptr : &*std::prev(before);
  FailureOr<Value> built = forward(b, operands);
  if (failed(built))
    return failure();
  Value result = *built;
  SmallVector<Operation *> ops;
  for (Block::iterator it = atStart ? block->begin() : std::next(Block::iterator(last));
       it != b.getInsertionPoint(); ++it)
    ops.push_back(&*it);
  llvm::DenseSet<Value> varied(operands.begin(), operands.end());
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(), [&](Value v) { return varied.contains(v); }))
      varied.insert(op->result_begin(), op->result_end());
  DenseMap<Value, Value> adjoint;
  adjoint[result] = resultAdjoint;
  if (failed(backpropagate(b, ops, adjoint, [&](Value v) { return varied.contains(v); })))
    return failure();
  // An operand passed twice gets the whole adjoint once.
  llvm::DenseSet<Value> given;
  for (Value v : operands)
    operandAdjoints.push_back(given.insert(v).second ? adjoint.lookup(v) : Value());
  return success();
}
