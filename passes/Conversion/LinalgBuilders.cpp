//===- LinalgBuilders.cpp - Helpers shared by the linalg conversions ------===//
//
// Implements the helpers of LinalgBuilders.h.
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

Value rewire::parallelGeneric(OpBuilder &b, Location loc, Value init,
                              ValueRange inputs, ArrayRef<AffineMap> maps,
                              GenericBodyFn body) {
  auto type = cast<RankedTensorType>(init.getType());
  SmallVector<AffineMap> all(maps);
  all.push_back(b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iters(type.getRank(),
                                         utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, inputs, ValueRange{init}, all, iters,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, body(nb, l, args.drop_back()));
             })
      .getResult(0);
}

bool rewire::isMultiplyAccumulate(mlir::linalg::LinalgOp op) {
  using namespace mlir;
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || op->getNumRegions() != 1)
    return false;
  Block &body = op->getRegion(0).front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield.getNumOperands() != 1)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = body.getArgument(2);
  Value other = add.getLhs() == acc ? add.getRhs() : add.getRhs() == acc ? add.getLhs() : Value();
  auto mul = other ? other.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) || (mul.getLhs() == b && mul.getRhs() == a);
}

rewire::BufferView rewire::describeBuffer(OpBuilder &b, Location loc, Value memref) {
  auto md = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  rewire::BufferView r;
  r.ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  r.offset = md.getOffset();
  r.sizes.assign(md.getSizes().begin(), md.getSizes().end());
  r.strides.assign(md.getStrides().begin(), md.getStrides().end());
  return r;
}

Value rewire::readOnlyBuffer(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                                       SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic));
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType(), layout);
  return bufferization::ToBufferOp::create(b, loc, memrefType, t, /*readOnly=*/true);
}

func::FuncOp rewire::declareRuntimeFunction(ModuleOp module, StringRef name, TypeRange args) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType(args, {}));
  f.setPrivate();
  return f;
}
