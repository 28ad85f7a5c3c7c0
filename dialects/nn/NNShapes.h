//===- NNShapes.h - Shape inference helpers of the nn dialect ---*- C++ -*-===//
//
// Shape functions shared by several nn ops (broadcasting, reductions) and the
// refinement rule used to compare declared and inferred result types.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_DIALECTS_NN_NNSHAPES_H
#define REWIRE_DIALECTS_NN_NNSHAPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/TypeRange.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace rewire::nn {

/// True when every declared type may stand for the inferred one: same rank
/// and element type, and each dimension equal or dynamic on either side.
bool areRefinableTypes(mlir::TypeRange inferred, mlir::TypeRange declared);

/// Result type of an elementwise op over `operands` with ONNX
/// multidirectional broadcasting; all operands share an element type, except
/// that an i1 first operand (nn.where's condition) only contributes a shape.
llvm::LogicalResult inferBroadcast(std::optional<mlir::Location> loc,
                                   llvm::StringRef opName,
                                   llvm::ArrayRef<mlir::Type> operands,
                                   llvm::SmallVectorImpl<mlir::Type> &results);

/// Result type of a reduction of `input` over `axes` (all when empty).
llvm::LogicalResult inferReduce(std::optional<mlir::Location> loc,
                                llvm::StringRef opName, mlir::Type input,
                                llvm::ArrayRef<int64_t> axes, bool keepdims,
                                llvm::SmallVectorImpl<mlir::Type> &results);

} // namespace rewire::nn

#endif // REWIRE_DIALECTS_NN_NNSHAPES_H
