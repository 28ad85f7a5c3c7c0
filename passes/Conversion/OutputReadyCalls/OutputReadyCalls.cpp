//===- OutputReadyCalls.cpp - Outputs handed out as they are final --------===//
//
// Implements rewire-output-ready-calls (see Passes.td): after the last
// operation that touches an output buffer of an entry point, a call tells
// the caller the output is final, and the order of those calls is recorded
// on the entry point (`ready_order`).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "rewire/Support/CpuArtifact.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace rewire {
#define GEN_PASS_DEF_OUTPUTREADYCALLS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

/// Whether a value of `type` may carry a buffer's address: what an op
/// derives from an output (a view, a pointer, an index holding one) can
/// touch the output later, a loaded float cannot.
bool mayCarryAddress(Type type) {
  return isa<BaseMemRefType, IndexType, IntegerType>(type) ||
         type.getDialect().getNamespace() == "llvm";
}

/// The op of `block` that is or holds `op`, or null.
Operation *inBlock(Operation *op, Block &block) {
  while (op && op->getBlock() != &block)
    op = op->getParentOp();
  return op;
}

/// The last op of `block` that touches `buffer` (or what is derived from
/// it), or null when none does.
Operation *lastToucher(Value buffer, Block &block,
                       const llvm::DenseMap<Operation *, unsigned> &position) {
  SmallVector<Value> work{buffer};
  llvm::SmallPtrSet<Value, 16> seen{buffer};
  Operation *last = nullptr;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (Operation *top = inBlock(user, block);
          top && (!last || position.lookup(top) > position.lookup(last)))
        last = top;
      for (Value r : user->getResults())
        if (mayCarryAddress(r.getType()) && seen.insert(r).second)
          work.push_back(r);
      // Values a region forwards (scf.for's iter_args) and the block
      // arguments they become.
      for (Region &region : user->getRegions())
        for (Block &b : region)
          for (BlockArgument a : b.getArguments())
            if (mayCarryAddress(a.getType()) && seen.insert(a).second)
              work.push_back(a);
    }
  }
  return last;
}

struct OutputReadyCalls : rewire::impl::OutputReadyCallsBase<OutputReadyCalls> {
  using OutputReadyCallsBase::OutputReadyCallsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    auto record = module->getAttrOfType<ArrayAttr>(kEntryPointsAttrName);
    if (!record) {
      if (!functions.empty()) {
        module.emitError("rewire-output-ready-calls: the module has no entry point record; "
                         "run rewire-record-entry-points first");
        signalPassFailure();
      }
      return;
    }
    SmallVector<Attribute> entries(record.begin(), record.end());
    bool changed = false;
    for (Attribute &entryAttr : entries) {
      auto entry = cast<DictionaryAttr>(entryAttr);
      StringRef name = entry.getAs<StringAttr>("name").getValue();
      if (!llvm::is_contained(functions, name.str()))
        continue;
      auto func = module.lookupSymbol<func::FuncOp>(name);
      if (!func || func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      FailureOr<SmallVector<int64_t>> order = instrument(func, entry);
      if (failed(order))
        return signalPassFailure();
      NamedAttrList attrs(entry);
      attrs.set("ready_order", DenseI64ArrayAttr::get(ctx, *order));
      entryAttr = attrs.getDictionary(ctx);
      changed = true;
    }
    if (changed)
      module->setAttr(kEntryPointsAttrName, ArrayAttr::get(ctx, entries));
  }

  /// Puts the calls into `func`; returns the outputs in the order their
  /// calls run.
  FailureOr<SmallVector<int64_t>> instrument(func::FuncOp func, DictionaryAttr entry) {
    auto outputs = entry.getAs<ArrayAttr>("outputs");
    unsigned numOutputs = outputs ? outputs.size() : 0;
    if (func.getNumResults() != 0 || func.getNumArguments() < numOutputs) {
      func.emitError("rewire-output-ready-calls: '")
          << func.getSymName() << "' still returns results or has fewer arguments than its "
          << numOutputs << " outputs; run it after buffer-results-to-out-params";
      return failure();
    }
    Block &body = func.getBody().front();
    llvm::DenseMap<Operation *, unsigned> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = static_cast<unsigned>(i);
    unsigned first = func.getNumArguments() - numOutputs;
    // (position of the last op touching it, output), in output order.
    SmallVector<std::pair<Operation *, int64_t>> ready;
    for (unsigned k = 0; k < numOutputs; ++k) {
      BlockArgument out = func.getArgument(first + k);
      if (!isa<BaseMemRefType>(out.getType())) {
        func.emitError("rewire-output-ready-calls: output ")
            << k << " of '" << func.getSymName() << "' is a " << out.getType()
            << ", not a buffer; run it after bufferization";
        return failure();
      }
      if (Operation *last = lastToucher(out, body, position))
        ready.push_back({last, k});
    }
    // By position, outputs of one op in output order.
    llvm::sort(ready, [&](auto &a, auto &b) {
      return std::pair(position.lookup(a.first), a.second) <
             std::pair(position.lookup(b.first), b.second);
    });
    if (ready.empty())
      return SmallVector<int64_t>();
    func::FuncOp callee = declareHook(func->getParentOfType<ModuleOp>());
    SmallVector<int64_t> order;
    Operation *after = nullptr;
    OpBuilder b(func.getContext());
    for (auto [last, k] : ready) {
      // Calls for outputs finished by the same op follow each other.
      if (last != after)
        b.setInsertionPointAfter(last);
      after = last;
      if (last->hasTrait<OpTrait::IsTerminator>())
        b.setInsertionPoint(last);
      Value index = arith::ConstantIntOp::create(b, func.getLoc(), k, 64);
      func::CallOp::create(b, func.getLoc(), callee, ValueRange{index});
      order.push_back(k);
    }
    return order;
  }

  func::FuncOp declareHook(ModuleOp module) {
    if (auto f = module.lookupSymbol<func::FuncOp>(rewire::cpu::kOutputReadySymbol))
      return f;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto type = b.getFunctionType({b.getI64Type()}, {});
    auto f = func::FuncOp::create(b, module.getLoc(), rewire::cpu::kOutputReadySymbol, type);
    f.setPrivate();
    return f;
  }
};

} // namespace
