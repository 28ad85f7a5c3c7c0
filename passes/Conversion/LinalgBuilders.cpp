//===- LinalgBuilders.cpp - Helpers shared by the linalg conversions ------===//
//
// Implements parallelGeneric (see LinalgBuilders.h).
//
//===----------------------------------------------------------------------===//
#include "passes/Conversion/LinalgBuilders.h"

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
