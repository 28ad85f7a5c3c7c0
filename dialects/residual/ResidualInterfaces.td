//===- ResidualInterfaces.td - Stream op interface ----------*- tablegen -*-===//
//
// The interface every residual op implements, so passes (detection, rewrite,
// truncation, report) can walk streams without knowing each op.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RESIDUAL_INTERFACES_TD
#define REWIRE_RESIDUAL_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Residual_StreamOpInterface : OpInterface<"StreamOpInterface"> {
  let cppNamespace = "::rewire::residual";
  let description = [{
    An op that is one step of a residual stream: it reads the stream state
    (`getStreamInput`, always operand 0), identifies its place in the model
    by a stream id and a layer index, and says what it computes in nn ops
    (`decompose`).
  }];
  let methods = [
    InterfaceMethod<"The id of the stream this op belongs to.",
      "int64_t", "getStreamId", (ins), [{}],
      [{ return static_cast<int64_t>($_op.getStream()); }]>,
    InterfaceMethod<"The layer index of this update within its stream.",
      "int64_t", "getLayerIndex", (ins), [{}],
      [{ return static_cast<int64_t>($_op.getLayer()); }]>,
    InterfaceMethod<"The stream state this op reads.",
      "::mlir::Value", "getStreamInput", (ins), [{}],
      [{ return $_op->getOperand(0); }]>,
    InterfaceMethod<[{
        The feature axis normalized to [0, rank), or -1 when the stored axis is
        out of range (the verifier reports that).
      }],
      "int64_t", "getFeatureAxisIndex", (ins), [{}],
      [{
        auto type = ::llvm::cast<::mlir::RankedTensorType>(
            $_op->getOperand(0).getType());
        int64_t axis = $_op.getAxis(), rank = type.getRank();
        if (axis < -rank || axis >= rank)
          return -1;
        return axis < 0 ? axis + rank : axis;
      }]>,
    InterfaceMethod<[{
        The op's result written in nn ops, built with `b` on `operands` (the
        op's own operands, or values of their types): the one definition of
        the form's arithmetic (dialects/residual/ResidualDecompose.cpp).
        Reverse-mode differentiation, the ONNX export (residual-decompose)
        and the instrumentation build on it; the fused lowering to linalg
        must compute the same values (test/Conversion/decompose-parity.test).
        Forms that normalize rows do so with the feature axis moved last
        (nn.transpose) when it is not. Fails, with an error on the op, for a
        case the decomposition does not cover.
      }],
      "::mlir::FailureOr<::mlir::Value>", "decompose",
      (ins "::mlir::ImplicitLocOpBuilder &":$b, "::mlir::ValueRange":$operands)>,
  ];
}

#endif // REWIRE_RESIDUAL_INTERFACES_TD
