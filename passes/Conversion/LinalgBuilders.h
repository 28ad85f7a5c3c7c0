//===- LinalgBuilders.h - Helpers shared by the linalg conversions -*- C++ -*-===//
//
// Small builders both convert-nn-to-linalg and convert-residual-to-linalg use:
// a float constant, a parallel linalg.generic over a given init tensor, the
// multiply-accumulate test the fusion and BLAS passes share, and what the
// passes that call the runtime's kernels (BLAS, attention) need: a buffer's
// pointer and strides, and the kernel's declaration.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_LINALGBUILDERS_H
#define REWIRE_PASSES_CONVERSION_LINALGBUILDERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

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

/// A memref as a runtime kernel takes it (all `index`): the aligned base
/// pointer, the offset, sizes and strides in elements.
struct BufferView {
  mlir::Value ptr, offset;
  llvm::SmallVector<mlir::Value> sizes, strides;
};
BufferView describeBuffer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value memref);

/// Tensor `t` as a read-only buffer of any strides and offset
/// (`bufferization.to_buffer read_only`): what a runtime kernel reads in
/// place through describeBuffer.
mlir::Value readOnlyBuffer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value t);

/// The private declaration of runtime function `name` in `module`, created
/// (at its end) with `args -> ()` if missing.
mlir::func::FuncOp declareRuntimeFunction(mlir::ModuleOp module, llvm::StringRef name,
                                          mlir::TypeRange args);

} // namespace rewire

#endif // REWIRE_PASSES_CONVERSION_LINALGBUILDERS_H
