//===- StridedCopiesToLoops.cpp - Strided buffer copies as loops ----------===//
//
// Implements rewire-strided-copies-to-loops (see Passes.td): a memref.copy
// that finalize-memref-to-llvm would hand to the runtime's row-by-row
// memrefCopy (a view that is not one contiguous block) becomes linalg.copy,
// which lowers to the same parallel, vectorized loops as every other nest.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"

namespace rewire {
#define GEN_PASS_DEF_STRIDEDCOPIESTOLOOPS
#include "passes/Conversion/Passes.h.inc"
} // namespace rewire

using namespace mlir;
using namespace rewire;

namespace {

/// What finalize-memref-to-llvm copies with one memcpy (MemRefCopyOpLowering's
/// test): an identity layout, or a static shape laid out row-major without gaps.
bool isOneBlock(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref &&
         (memref.getLayout().isIdentity() || memref::isStaticShapeAndContiguousRowMajor(memref));
}

struct StridedCopiesToLoops : rewire::impl::StridedCopiesToLoopsBase<StridedCopiesToLoops> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      Type source = copy.getSource().getType(), target = copy.getTarget().getType();
      // Unranked copies keep the runtime's call: loops need a rank.
      if (!isa<MemRefType>(source) || !isa<MemRefType>(target))
        return;
      if (!isOneBlock(source) || !isOneBlock(target))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};

} // namespace
