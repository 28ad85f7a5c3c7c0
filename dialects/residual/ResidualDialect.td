//===- ResidualDialect.td - The residual dialect ------------*- tablegen -*-===//
//
// Declares the `residual` dialect, its enums and the base class of its ops.
// A residual stream is the chain h_0 -> h_1 -> ... -> h_L of values updated by
// residual adds; every op of the dialect is one step of a stream and carries
// the stream id and the layer index.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RESIDUAL_DIALECT_TD
#define REWIRE_RESIDUAL_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"

def Residual_Dialect : Dialect {
  let name = "residual";
  let cppNamespace = "::rewire::residual";
  let summary = "Residual streams and their learned and gated update forms";
  let description = [{
    The `residual` dialect represents the residual streams of a neural network
    explicitly. A *stream* is the chain `h_0 -> h_1 -> ... -> h_L` of tensors
    updated by residual adds (`h = h + f(h)`); each op of the dialect is one
    update of one stream and carries its stream id (`stream`) and its layer
    index (`layer`). The plain form (`residual.add`) is what detection raises
    standard adds into; the other ops are the learned and gated forms of the
    research literature (ReZero, LayerScale, Highway, Review Residuals,
    DenseFormer, ANCRe, NAG, LPA, LAuReL, Hyper-Connections and mHC).

    Conventions shared by all ops:
    * The stream state is a ranked float tensor of rank >= 1. Its *feature
      axis* (`axis`, default -1 = last; 1 for NCHW convolutional networks)
      has size `d`; a *row* is the set of elements sharing all other indices.
    * `rms(x) = x * rsqrt(mean_d(x^2) + eps)`, computed per row, no gain.
    * Weight matrices are stored input-major (`[in, out]`, so a gate is
      `x . W`), the layout of ONNX `MatMul`.
    * A *hyper stream* (Hyper-Connections, mHC) carries `n` copies of the
      state: its layout is the state's shape with a stream axis of size `n`
      inserted before the feature axis, which must be the last
      (`[..., n, d]`). `residual.hyper_expand` enters it, `hyper_read` gives
      a branch its input, `hyper_write` is the update, `hyper_reduce` leaves
      it; the ops verify the layout.
    * Learned operands are ordinary SSA values; in a model they come from the
      named parameters of the `nn` dialect (`ml_program.global`).
  }];
  let useDefaultAttributePrinterParser = 0;
  // Canonicalizations materialize folded gate values as arith.constant.
  let dependentDialects = ["::mlir::arith::ArithDialect", "::rewire::nn::NNDialect"];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Residual_GateKind : I32EnumAttr<"GateKind",
    "what a gated update's gate is conditioned on", [
      I32EnumAttrCase<"review", 0>,
      I32EnumAttrCase<"highway", 1>
    ]> {
  let cppNamespace = "::rewire::residual";
}

def Residual_Combine : I32EnumAttr<"Combine",
    "how a gated update combines the state and the update", [
      I32EnumAttrCase<"additive", 0>,
      I32EnumAttrCase<"convex", 1>
    ]> {
  let cppNamespace = "::rewire::residual";
}

def Residual_MixWeights : I32EnumAttr<"MixWeights",
    "how a depth mix turns its weight operand into mixing coefficients", [
      I32EnumAttrCase<"softmax", 0>,
      I32EnumAttrCase<"free", 1>,
      I32EnumAttrCase<"additive", 2>
    ]> {
  let cppNamespace = "::rewire::residual";
}

def Residual_RouteMode : I32EnumAttr<"RouteMode",
    "how Mixture-of-Depths routing picks the rows that skip a sublayer", [
      I32EnumAttrCase<"threshold", 0>,
      I32EnumAttrCase<"rate", 1>
    ]> {
  let cppNamespace = "::rewire::residual";
}

def Residual_HyperMap : I32EnumAttr<"HyperMap",
    "how residual.hyper_coeffs turns the projected stream into coefficients", [
      I32EnumAttrCase<"tanh", 0>,
      I32EnumAttrCase<"sigmoid", 1>,
      I32EnumAttrCase<"double_sigmoid", 2>,
      I32EnumAttrCase<"sinkhorn", 3>
    ]> {
  let cppNamespace = "::rewire::residual";
}

//===----------------------------------------------------------------------===//
// Base op class
//===----------------------------------------------------------------------===//

class Residual_Op<string mnemonic, list<Trait> traits = []>
    : Op<Residual_Dialect, mnemonic, traits>;

#endif // REWIRE_RESIDUAL_DIALECT_TD
