//===- ReverseMode.td - Reverse-mode differentiation interface -*- tablegen -*-===//
//
// The op interface `rewire-autodiff` differentiates through (Enzyme-MLIR's
// structure: one rule per op, attached to the op, building backward IR in
// the same dialects so it lowers, fuses and exports like forward IR).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_AUTODIFF_REVERSEMODE_TD
#define REWIRE_AUTODIFF_REVERSEMODE_TD

include "mlir/IR/OpBase.td"

def ReverseModeOpInterface : OpInterface<"ReverseModeOpInterface"> {
  let cppNamespace = "::rewire::autodiff";
  let description = [{
    An op that knows its vector-Jacobian product: given the adjoint of each
    result (the gradient of a scalar loss with respect to it; never null:
    unused results get zeros), build ops that compute the adjoint of each
    operand, or a null Value for operands with no gradient (integer indices,
    shapes). The builder's insertion point is where the backward ops go; the
    forward values (operands and results) are available to the rule.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the operand adjoints; fills `operandAdjoints` with one Value
        (or null) per operand. Fails with a diagnostic on the op when the
        rule does not cover this instance (for example a per-channel scale
        on a non-final axis).
      }],
      "::llvm::LogicalResult", "buildAdjoints",
      (ins "::mlir::ImplicitLocOpBuilder &":$b,
           "::mlir::ArrayRef<::mlir::Value>":$resultAdjoints,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandAdjoints)>,
  ];
}

#endif // REWIRE_AUTODIFF_REVERSEMODE_TD
