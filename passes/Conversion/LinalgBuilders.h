//===- LinalgBuilders.h - Helpers shared by the linalg conversions -*- C++ -*-===//
//
// Small builders both convert-nn-to-linalg and convert-residual-to-linalg use:
// a float constant, a parallel linalg.generic over a given init tensor, and
// the multiply-accumulate test the fusion and BLAS passes share.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_LINALGBUILDERS_H
#define REWIRE_PASSES_CONVERSION_LINALGBUILDERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace rewire {

using GenericBodyFn =
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// An arith.constant of float type `type` with value `v`.
inline mlir::Value floatConstant(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Type type, double v) {
  return mlir::arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
}

/// A linalg.generic with all-parallel loops writing `init` (its shape is the
/// iteration space, identity output map), reading `inputs` through `maps`;
/// `body` gets the input scalars and returns the output scalar.
mlir::Value parallelGeneric(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value init, mlir::ValueRange inputs,
                            llvm::ArrayRef<mlir::AffineMap> maps,
                            GenericBodyFn body);

/// Whether `op` has exactly two inputs, one output, one reduction loop, and
/// a body yielding `acc + a * b` (either operand order): a GEMM-like
/// contraction, whatever its indexing maps.
bool isMultiplyAccumulate(mlir::linalg::LinalgOp op);

} // namespace rewire

#endif // REWIRE_PASSES_CONVERSION_LINALGBUILDERS_H
