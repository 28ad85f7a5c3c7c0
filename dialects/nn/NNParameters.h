//===- NNParameters.h - Named model parameters ------------------*- C++ -*-===//
//
// The one representation of model parameters (weights) in Rewire: an
// immutable `ml_program.global` symbol per parameter, named after the source
// model's initializer (or after its layer, for parameters a rewrite adds),
// read with `ml_program.global_load_const`. Its initial value is
// `#ml_program.extern` (the values live in the parameter file named by the
// module attribute `nn.parameter_file`) or an `#nn.init<...>` rule. This file
// enumerates, creates and loads them.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_DIALECTS_NN_NNPARAMETERS_H
#define REWIRE_DIALECTS_NN_NNPARAMETERS_H

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace rewire::nn {

/// Module attribute naming the safetensors file that holds the values of
/// parameters initialized with #ml_program.extern.
constexpr llvm::StringLiteral kParameterFileAttrName = "nn.parameter_file";

/// Argument attribute of an entry point's parameter (nn-parameters-to-
/// arguments): the parameter's name.
constexpr llvm::StringLiteral kParameterAttrName = "nn.parameter";

/// Argument and result attribute: the tensor's name (the ONNX graph's input
/// and output names; train_step's `target`, `param:<name>`, `loss`, ...).
constexpr llvm::StringLiteral kNameAttrName = "nn.name";

/// Checks the `nn.parameter_file` of a module read from a file: it must name
/// a file in the IR file's folder or below it (a relative path without
/// `..`), so that IR from elsewhere cannot copy arbitrary files from disk
/// into compiled or exported outputs. Returns the message (naming `irPath`)
/// when it does not; success when the module names no file.
mlir::LogicalResult checkParameterFileRef(mlir::ModuleOp module, llvm::StringRef irPath);

/// One named parameter of a model.
struct Parameter {
  mlir::ml_program::GlobalOp global;
  llvm::StringRef name;
  mlir::RankedTensorType type;
  mlir::Attribute init; ///< #ml_program.extern, #nn.init or elements.
};

/// All parameters of `module` in definition order: the immutable
/// ml_program.global ops with a ranked tensor type.
llvm::SmallVector<Parameter> getParameters(mlir::ModuleOp module);

/// Total number of scalar elements in the parameters of `module`; dynamic
/// shapes count as zero.
int64_t countParameterElements(mlir::ModuleOp module);

/// Adds parameter `name` of `type` initialized by `init` at the end of
/// `module`'s body. Fails with a diagnostic at `loc` when the name is taken.
mlir::FailureOr<mlir::ml_program::GlobalOp>
createParameter(mlir::ModuleOp module, mlir::Location loc,
                llvm::StringRef name, mlir::RankedTensorType type,
                mlir::Attribute init);

/// The same, looking the name up in (and adding the new symbol to) a symbol
/// table the caller keeps: O(1) per parameter instead of a scan of the module.
mlir::FailureOr<mlir::ml_program::GlobalOp>
createParameter(mlir::SymbolTable &symbols, mlir::Location loc,
                llvm::StringRef name, mlir::RankedTensorType type,
                mlir::Attribute init);

/// Reads `param` at the builder's insertion point.
mlir::Value loadParameter(mlir::OpBuilder &builder, mlir::Location loc,
                          mlir::ml_program::GlobalOp param);

} // namespace rewire::nn

#endif // REWIRE_DIALECTS_NN_NNPARAMETERS_H
