//===- DistinctResultBuffers.cpp - One buffer per returned result ---------===//
//
// Implements rewire-distinct-result-buffers (see Passes.td): a function that
// returns one buffer in several positions (an ONNX graph whose two outputs
// name one value, `y` and `Identity(y)`) returns a copy in each repeat, so
// every result owns its buffer before the calling convention turns results
// into out-parameters.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "llvm/ADT/DenseSet.h"

namespace rewire {
#define GEN_PASS_DEF_DISTINCTRESULTBUFFERS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

/// A fresh buffer of `v`'s type holding a copy of `v`, or null for a type
/// it cannot allocate (unranked, or with a layout).
Value copyOf(OpBuilder &b, Location loc, Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.getLayout().isIdentity())
    return Value();
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      sizes.push_back(memref::DimOp::create(b, loc, v, i));
  Value copy = memref::AllocOp::create(b, loc, type, sizes);
  memref::CopyOp::create(b, loc, v, copy);
  return copy;
}

struct DistinctResultBuffers
    : rewire::impl::DistinctResultBuffersBase<DistinctResultBuffers> {
  void runOnOperation() override {
    WalkResult r = getOperation().walk([&](func::ReturnOp ret) {
      llvm::SmallDenseSet<Value> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        if (!isa<BaseMemRefType>(v.getType()) || seen.insert(v).second)
          continue;
        Value copy = copyOf(b, ret.getLoc(), v);
        if (!copy) {
          ret.emitError("rewire-distinct-result-buffers: result ")
              << operand.getOperandNumber() << " repeats an earlier result of type "
              << v.getType() << ", which cannot be copied (unranked or with a layout)";
          return WalkResult::interrupt();
        }
        operand.set(copy);
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
