//===- NNDialect.td - The nn dialect ------------------------*- tablegen -*-===//
//
// Declares the `nn` dialect (the tensor graph of an imported model, with ONNX
// semantics), its enums, and the base classes of its ops.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_NN_DIALECT_TD
#define REWIRE_NN_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/CommonTypeConstraints.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::rewire::nn";
  let summary = "Tensor graph of a neural network with ONNX semantics";
  let description = [{
    The `nn` dialect is the tensor graph Rewire imports models into: one op
    per ONNX operator family that transformer (GPT, BERT, LLaMA, ViT,
    MLP-Mixer) and convolutional (ResNet) models use, with ONNX semantics
    (multidirectional broadcasting, negative axes, attribute defaults).
    Operands that ONNX passes as constant tensors (Reshape's shape, Slice's
    starts, Reduce's axes) are attributes here; the importer folds them.

    Every op whose result shape follows from its operands implements
    `InferTypeOpInterface`, so builders need no result type and the verifier
    checks the declared type against the inferred one (a declared static size
    may refine an inferred dynamic one).

    Parameters (weights) are not ops of this dialect: they are
    `ml_program.global` symbols named after the source model's initializers,
    read with `ml_program.global_load_const`, whose initial value is either
    `#ml_program.extern` (values live in the model's safetensors file) or an
    `#nn.init<...>` initializer (new parameters added by a rewrite). See
    docs/parameters.md.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

def NN_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how nn.gelu evaluates the Gaussian CDF", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"tanh", 1>
    ]> {
  let cppNamespace = "::rewire::nn";
}

def NN_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "how nn.compare compares its operands", [
      I32EnumAttrCase<"eq", 0>,
      I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>,
      I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>,
      I32EnumAttrCase<"ge", 5>
    ]> {
  let cppNamespace = "::rewire::nn";
}

def NN_ArgReduceKind : I32EnumAttr<"ArgReduceKind",
    "which extremum nn.arg_reduce finds", [
      I32EnumAttrCase<"max", 0>,
      I32EnumAttrCase<"min", 1>
    ]> {
  let cppNamespace = "::rewire::nn";
}

def NN_LogicalKind : I32EnumAttr<"LogicalKind",
    "the boolean function of nn.logical", [
      I32EnumAttrCase<"and_", 0, "and">,
      I32EnumAttrCase<"or_", 1, "or">,
      I32EnumAttrCase<"xor_", 2, "xor">
    ]> {
  let cppNamespace = "::rewire::nn";
}

def NN_InitKind : I32EnumAttr<"InitKind", "parameter initializer kind", [
      I32EnumAttrCase<"zeros", 0>,
      I32EnumAttrCase<"ones", 1>,
      I32EnumAttrCase<"constant", 2>,
      I32EnumAttrCase<"normal", 3>,
      I32EnumAttrCase<"uniform", 4>
    ]> {
  let cppNamespace = "::rewire::nn";
}

//===----------------------------------------------------------------------===//
// Type constraints and op base classes
//===----------------------------------------------------------------------===//

def NN_Tensor : RankedTensorOf<[AnyType]>;
def NN_FloatTensor : RankedTensorOf<[AnyFloat]>;
def NN_IndexTensor : RankedTensorOf<[I32, I64]>;
def NN_BoolTensor : RankedTensorOf<[I1]>;
def NN_BitsTensor : RankedTensorOf<[AnyInteger]>;
def NN_NumericTensor : RankedTensorOf<[AnyFloat, AnyInteger]>;

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, traits>;

#endif // REWIRE_NN_DIALECT_TD
