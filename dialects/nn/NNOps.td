//===- NNOps.td - nn dialect ops ----------------------------*- tablegen -*-===//
//
// The ops of the `nn` dialect, grouped by family: elementwise, linear
// algebra, normalization and reduction, shape manipulation, convolutional,
// selection/conversion, and the causal attention composite. Result shapes are
// inferred in NNShapes.cpp; extra verification lives in NNOps.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_NN_OPS_TD
#define REWIRE_NN_OPS_TD

include "dialects/nn/NNDialect.td"
include "dialects/nn/NNAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// A declared result type may refine the inferred one (a static size where
// inference gives a dynamic one); see nn::areRefinableTypes.
defvar RefinableReturnTypes = [{
  bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange l,
                                          ::mlir::TypeRange r) {
    return ::rewire::nn::areRefinableTypes(l, r);
  }
}];

class NN_InferOp<string mnemonic, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat(traits,
                                  [Pure, InferTypeOpAdaptorWithIsCompatible])> {
  let extraClassDefinition = RefinableReturnTypes;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class NN_BinaryOp<string mnemonic, string what>
    : NN_InferOp<mnemonic> {
  let summary = "elementwise " # what # " with multidirectional broadcasting";
  let description = [{
    ONNX semantics: the operands broadcast NumPy-style (trailing dimensions
    aligned, a dimension of 1 stretches) and must share an element type.

    Example:
    ```mlir
    %y = nn.}] # mnemonic # [{ %a, %b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = !strconcat(RefinableReturnTypes, [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::rewire::nn::inferBroadcast(loc, getOperationName(),
          {adaptor.getLhs().getType(), adaptor.getRhs().getType()}, types);
    }
  }]);
}

def NN_AddOp : NN_BinaryOp<"add", "addition">;
def NN_SubOp : NN_BinaryOp<"sub", "subtraction">;
def NN_MulOp : NN_BinaryOp<"mul", "multiplication">;
def NN_DivOp : NN_BinaryOp<"div", "division">;
def NN_PowOp : NN_BinaryOp<"pow", "power (`lhs ^ rhs`)">;
def NN_MaxOp : NN_BinaryOp<"max", "maximum (NaN if either operand is NaN; ONNX Max)">;
def NN_MinOp : NN_BinaryOp<"min", "minimum (NaN if either operand is NaN; ONNX Min)">;

def NN_ArgReduceOp : NN_Op<"arg_reduce", [Pure]> {
  let summary = "index of the max or min along an axis (ONNX ArgMax, ArgMin)";
  let description = [{
    The i64 index of the first (`select_last_index`: last) maximum or
    minimum of `x` along `axis`, which is kept as a size-1 dimension unless
    `keepdims = false`. NaN elements are never selected. Not differentiable.

    Example:
    ```mlir
    %i = nn.arg_reduce max %x {axis = 1 : i64, keepdims = false} : tensor<2x10xf32> -> tensor<2xi64>
    ```
  }];
  let arguments = (ins NN_ArgReduceKind:$kind, NN_FloatTensor:$x, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       UnitAttr:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$kind $x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def NN_CumSumOp : NN_Op<"cumsum", [Pure, AllTypesMatch<["x", "result"]>]> {
  let summary = "cumulative sum along an axis (ONNX CumSum)";
  let description = [{
    `y[..., i, ...] = sum of x[..., j, ...]` for `j <= i` (`j < i` with
    `exclusive`; `j >= i` / `j > i` with `reverse`), along `axis`, for float
    and integer tensors (integers wrap, as ONNX Runtime's do). RoBERTa's
    position ids are the cumulative sum of the attention mask.

    Example:
    ```mlir
    %p = nn.cumsum %mask {axis = 1 : i64} : tensor<2x8xi64>
    ```
  }];
  let arguments = (ins NN_Tensor:$x, I64Attr:$axis, UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def NN_CompareOp : NN_InferOp<"compare"> {
  let summary = "elementwise comparison with broadcasting, to i1";
  let description = [{
    `lhs <predicate> rhs` per element (ONNX Equal, Less, LessOrEqual, Greater,
    GreaterOrEqual; `ne` also expresses IsNaN as `x ne x`). The operands
    broadcast NumPy-style and share an element type (float, integer or i1);
    float comparisons are ordered except `ne`, which is true for NaN, so
    `eq`/`lt`/... are false when either side is NaN, as in IEEE 754.
    Integers compare as signed. The result is not differentiable.

    Example:
    ```mlir
    %m = nn.compare lt %pos, %len : (tensor<2x8xi64>, tensor<2x1xi64>) -> tensor<2x8xi1>
    ```
  }];
  let arguments = (ins NN_ComparePredicate:$predicate, NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs NN_BoolTensor:$result);
  let assemblyFormat =
      "$predicate $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def NN_LogicalOp : NN_InferOp<"logical"> {
  let summary = "elementwise and / or / xor with broadcasting: logical on i1, bitwise on integers";
  let description = [{
    ONNX And, Or and Xor on i1 tensors, and BitwiseAnd, BitwiseOr and
    BitwiseXor on integer tensors, broadcasting NumPy-style. Both operands
    have one element type, which the result has.

    Example:
    ```mlir
    %m = nn.logical and %causal, %padding : (tensor<8x8xi1>, tensor<2x1x1x8xi1>) -> tensor<2x1x8x8xi1>
    ```
  }];
  let arguments = (ins NN_LogicalKind:$kind, NN_BitsTensor:$lhs, NN_BitsTensor:$rhs);
  let results = (outs NN_BitsTensor:$result);
  let assemblyFormat =
      "$kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def NN_NotOp : NN_Op<"not", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "elementwise negation: logical on i1 (ONNX Not), bitwise on integers (BitwiseNot)";
  let description = [{
    Example:
    ```mlir
    %y = nn.not %mask : tensor<2x8xi1>
    ```
  }];
  let arguments = (ins NN_BitsTensor:$x);
  let results = (outs NN_BitsTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

class NN_UnaryOp<string mnemonic, string what, list<Trait> traits = []>
    : NN_Op<mnemonic, !listconcat(traits, [Pure, Elementwise,
                                           SameOperandsAndResultType,
                                           InferTypeOpInterface])> {
  let summary = "elementwise " # what;
  let description = [{
    Applies the function to every element; the result has the operand's type.

    Example:
    ```mlir
    %y = nn.}] # mnemonic # [{ %x : tensor<2x16x256xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def NN_ReluOp : NN_UnaryOp<"relu", "rectified linear unit `max(x, 0)`">;
def NN_SigmoidOp : NN_UnaryOp<"sigmoid", "logistic sigmoid `1 / (1 + exp(-x))`">;
def NN_TanhOp : NN_UnaryOp<"tanh", "hyperbolic tangent">;
def NN_ErfOp : NN_UnaryOp<"erf", "Gauss error function">;
def NN_ExpOp : NN_UnaryOp<"exp", "natural exponential">;
def NN_SqrtOp : NN_UnaryOp<"sqrt", "square root">;
def NN_NegOp : NN_UnaryOp<"neg", "negation">;
def NN_AbsOp : NN_UnaryOp<"abs", "absolute value">;
def NN_LogOp : NN_UnaryOp<"log", "natural logarithm">;
def NN_SinOp : NN_UnaryOp<"sin", "sine">;
def NN_CosOp : NN_UnaryOp<"cos", "cosine">;
def NN_FloorOp : NN_UnaryOp<"floor", "rounding down to an integer value">;
def NN_CeilOp : NN_UnaryOp<"ceil", "rounding up to an integer value">;
def NN_RoundOp : NN_UnaryOp<"round", "rounding to the nearest integer, halves to even (ONNX Round)">;
def NN_TanOp : NN_UnaryOp<"tan", "tangent">;
def NN_AsinOp : NN_UnaryOp<"asin", "arcsine">;
def NN_AcosOp : NN_UnaryOp<"acos", "arccosine">;
def NN_AtanOp : NN_UnaryOp<"atan", "arctangent">;
def NN_SinhOp : NN_UnaryOp<"sinh", "hyperbolic sine">;
def NN_CoshOp : NN_UnaryOp<"cosh", "hyperbolic cosine">;
def NN_AsinhOp : NN_UnaryOp<"asinh", "inverse hyperbolic sine">;
def NN_AcoshOp : NN_UnaryOp<"acosh", "inverse hyperbolic cosine">;
def NN_AtanhOp : NN_UnaryOp<"atanh", "inverse hyperbolic tangent">;

def NN_GeluOp : NN_Op<"gelu", [Pure, Elementwise, SameOperandsAndResultType,
                               InferTypeOpInterface]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `x * Phi(x)` with the exact Gaussian CDF (`approximate = none`, default)
    or its tanh approximation (`approximate = tanh`, GPT-2's `gelu_new`), as
    ONNX Gelu (opset 20).

    Example:
    ```mlir
    %y = nn.gelu %x approximate tanh : tensor<2x16x256xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x,
      DefaultValuedAttr<NN_GeluApproximation,
                        "::rewire::nn::GeluApproximation::none">:$approximate);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x (`approximate` $approximate^)? attr-dict `:` type($x)";
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def NN_MatMulOp : NN_InferOp<"matmul"> {
  let summary = "matrix product with NumPy semantics (ONNX MatMul)";
  let description = [{
    1-D operands are promoted to matrices (and the added dimension removed
    from the result); leading batch dimensions broadcast.

    Example:
    ```mlir
    %y = nn.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$lhs, NN_Tensor:$rhs);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def NN_GemmOp : NN_InferOp<"gemm"> {
  let summary = "general matrix multiply `alpha * A' . B' + beta * C` (ONNX Gemm)";
  let description = [{
    `A' = transA ? A^T : A` is `[M, K]`, `B' = transB ? B^T : B` is `[K, N]`;
    the optional `C` broadcasts to `[M, N]`.

    Example:
    ```mlir
    %y = nn.gemm %a, %w, %b {transB} : (tensor<8x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<8x256xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$a, NN_FloatTensor:$b,
                       Optional<NN_FloatTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       UnitAttr:$transA, UnitAttr:$transB);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat =
      "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Normalization and reduction
//===----------------------------------------------------------------------===//

def NN_SoftmaxOp : NN_Op<"softmax", [Pure, SameOperandsAndResultType,
                                     InferTypeOpInterface]> {
  let summary = "softmax along one axis (ONNX Softmax, opset >= 13)";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along `axis` (default -1).

    Example:
    ```mlir
    %p = nn.softmax %scores {axis = -1 : i64} : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def NN_LayerNormOp : NN_Op<"layer_norm", [Pure, AllTypesMatch<["x", "result"]>]> {
  let summary = "layer normalization (ONNX LayerNormalization)";
  let description = [{
    Normalizes over the dimensions from `axis` (default -1) to the last:
    `(x - mean) / sqrt(var + epsilon) * scale + bias`. `scale` and the
    optional `bias` have the shape of those trailing dimensions.

    Example:
    ```mlir
    %y = nn.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$scale,
                       Optional<NN_FloatTensor>:$bias,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x `,` $scale (`,` $bias^)? attr-dict `:` type($x) "
                       "`,` type($scale) (`,` type($bias)^)?";
  let hasVerifier = 1;
}

def NN_RMSNormOp : NN_Op<"rms_norm", [Pure, AllTypesMatch<["x", "result"]>]> {
  let summary = "RMS normalization (LLaMA; ONNX RMSNormalization)";
  let description = [{
    `x * rsqrt(mean(x^2) + epsilon) * scale` over the dimensions from `axis`
    (default -1) to the last; `scale` has the shape of those dimensions.

    Example:
    ```mlir
    %y = nn.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : tensor<2x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$scale,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x `,` $scale attr-dict `:` type($x) `,` type($scale)";
  let hasVerifier = 1;
}

def NN_BatchNormOp : NN_Op<"batch_norm", [Pure, AllTypesMatch<["x", "result"]>,
    AllTypesMatch<["scale", "bias", "mean", "var"]>]> {
  let summary = "batch normalization (ONNX BatchNormalization)";
  let description = [{
    `(x - m) / sqrt(v + epsilon) * scale + bias` per channel (axis 1);
    `scale`, `bias`, `mean` and `var` are `[C]`.

    In inference mode (the default) `m` and `v` are the `mean` and `var`
    operands (running statistics). With `training` (ONNX `training_mode = 1`,
    a model exported from PyTorch in train mode) `m` and `v` are the batch's
    mean and biased variance over every axis but 1, and `mean` and `var` are
    only read by the training step, which updates them as
    `running = momentum * running + (1 - momentum) * batch` with the unbiased
    batch variance (PyTorch's rule; ONNX's `momentum`, default 0.9).

    Example:
    ```mlir
    %y = nn.batch_norm %x, %s, %b, %m, %v : tensor<1x64x56x56xf32>, tensor<64xf32>
    %t = nn.batch_norm %x, %s, %b, %m, %v {training, momentum = 0.9 : f32} : tensor<8x64x56x56xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$scale,
                       NN_FloatTensor:$bias, NN_FloatTensor:$mean,
                       NN_FloatTensor:$var,
                       DefaultValuedAttr<F32Attr, "1e-5">:$epsilon,
                       DefaultValuedAttr<F32Attr, "0.9">:$momentum,
                       UnitAttr:$training);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x `,` $scale `,` $bias `,` $mean `,` $var attr-dict "
                       "`:` type($x) `,` type($scale)";
  let hasVerifier = 1;
}

class NN_ReduceOp<string mnemonic, string what, Type tensor = NN_FloatTensor>
    : NN_InferOp<mnemonic> {
  let summary = what # " over axes (ONNX Reduce" # what # ")";
  let description = [{
    Reduces over `axes` (all axes when empty), keeping them as size-1
    dimensions unless `keepdims = false`. Axes may be negative and must be
    distinct.

    Example:
    ```mlir
    %m = nn.}] # mnemonic # [{ %x {axes = array<i64: -1>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
    ```
  }];
  let arguments = (ins tensor:$x,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = !strconcat(RefinableReturnTypes, [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      // Default-valued attributes are not populated yet while parsing.
      auto axes = adaptor.getAxesAttr();
      auto keepdims = adaptor.getKeepdimsAttr();
      return ::rewire::nn::inferReduce(loc, getOperationName(),
          adaptor.getX().getType(),
          axes ? axes.asArrayRef() : ::llvm::ArrayRef<int64_t>(),
          keepdims ? keepdims.getValue() : true, types);
    }
  }]);
}

def NN_ReduceMeanOp : NN_ReduceOp<"reduce_mean", "Mean">;
// Sum, max, min and product also take integers (and i1: max is any, min
// all); integer sums and products wrap.
def NN_ReduceSumOp : NN_ReduceOp<"reduce_sum", "Sum", NN_NumericTensor>;
def NN_ReduceMaxOp : NN_ReduceOp<"reduce_max", "Max", NN_NumericTensor>;
def NN_ReduceMinOp : NN_ReduceOp<"reduce_min", "Min", NN_NumericTensor>;
def NN_ReduceProdOp : NN_ReduceOp<"reduce_prod", "Prod", NN_NumericTensor>;

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def NN_ReshapeOp : NN_Op<"reshape", [Pure]> {
  let summary = "reshape to the result type (ONNX Reshape with a constant shape)";
  let description = [{
    Reinterprets the elements in row-major order with the result's shape. The
    importer resolves ONNX's `0` and `-1` entries; the element count must be
    preserved (checked when both shapes are static; at most one dynamic
    dimension otherwise).

    Example:
    ```mlir
    %y = nn.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$x);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def NN_TransposeOp : NN_InferOp<"transpose"> {
  let summary = "permute dimensions (ONNX Transpose)";
  let description = [{
    Result dimension `i` is operand dimension `perm[i]`; `perm` defaults to
    the reversal.

    Example:
    ```mlir
    %y = nn.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$x, OptionalAttr<DenseI64ArrayAttr>:$perm);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def NN_ConcatOp : NN_InferOp<"concat"> {
  let summary = "concatenate along an axis (ONNX Concat)";
  let description = [{
    All inputs share rank and element type and agree on every dimension but
    `axis`.

    Example:
    ```mlir
    %y = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x64x8x8xf32>, tensor<1x32x8x8xf32>) -> tensor<1x96x8x8xf32>
    ```
  }];
  let arguments = (ins Variadic<NN_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def NN_SplitOp : NN_InferOp<"split"> {
  let summary = "split along an axis into pieces of given sizes (ONNX Split)";
  let description = [{
    Produces one result per entry of `sizes`; the sizes must add up to the
    dimension (when it is static).

    Example:
    ```mlir
    %q, %k, %v = nn.split %qkv {axis = -1 : i64, sizes = array<i64: 64, 64, 64>} : (tensor<2x16x192xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>)
    ```
  }];
  let arguments = (ins NN_Tensor:$x, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<NN_Tensor>:$results);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def NN_SliceOp : NN_InferOp<"slice"> {
  let summary = "strided slice (ONNX Slice with constant starts/ends/axes/steps)";
  let description = [{
    For each listed axis, takes `starts[i] : ends[i] : steps[i]` with ONNX's
    clamping of out-of-range and negative indices. `axes` defaults to
    `0..n-1` and `steps` to 1; a step must not be 0.

    Example:
    ```mlir
    %y = nn.slice %x {starts = array<i64: 0>, ends = array<i64: 8>, axes = array<i64: 1>} : (tensor<2x16x64xf32>) -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$x, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends,
                       OptionalAttr<DenseI64ArrayAttr>:$axes,
                       OptionalAttr<DenseI64ArrayAttr>:$steps);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def NN_GatherOp : NN_InferOp<"gather"> {
  let summary = "gather slices along an axis (ONNX Gather; embedding lookup)";
  let description = [{
    The result shape is `data.shape[:axis] + indices.shape + data.shape[axis+1:]`.

    Example:
    ```mlir
    %e = nn.gather %wte, %ids {axis = 0 : i64} : (tensor<50257x768xf32>, tensor<2x16xi64>) -> tensor<2x16x768xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$data, NN_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def NN_ScatterAddOp : NN_Op<"scatter_add", [Pure]> {
  let summary = "sum rows into a table at indices (the gradient of gather on axis 0)";
  let description = [{
    The adjoint of `nn.gather` along axis 0: `result[indices[j], ...] +=
    updates[j, ...]` over every index position `j`, in order, into a zero
    table of the result type, or into `base` where it is given (`into`:
    `base` plus the sums, one pass where `nn.add` of a zero table's result
    would take two, as Mixture-of-Depths' update of the stream does), so
    `updates.shape = indices.shape + result.shape[1:]` and `base` has the
    result type. Negative indices count from the end (as gather's do).
    Reverse-mode differentiation produces it for embedding tables.

    Example:
    ```mlir
    %d = nn.scatter_add %g, %ids : (tensor<2x16x64xf32>, tensor<2x16xi64>) -> tensor<256x64xf32>
    %s = nn.scatter_add %u, %rows into %r : (tensor<4x6x8xf32>, tensor<4x6xi64>, tensor<32x8xf32>) -> tensor<32x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$updates, NN_IndexTensor:$indices,
                       Optional<NN_FloatTensor>:$base);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$updates `,` $indices (`into` $base^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$updates, "::mlir::Value":$indices), [{
      build($_builder, $_state, result, updates, indices, ::mlir::Value());
    }]>
  ];
}

def NN_CrossEntropyOp : NN_Op<"cross_entropy", [Pure]> {
  let summary = "mean softmax cross-entropy over the rows of logits, with an ignore index";
  let description = [{
    `logits : [..., C]`, integer `labels : [...]`: the mean over rows whose
    label is not `ignore_index` of `logsumexp(logits_row) - logits_row[label]`
    (PyTorch's `F.cross_entropy(..., ignore_index=)` with mean reduction; 0
    when every row is ignored). Labels outside `[0, C)` other than the
    ignore index read as no class (their logit term is 0); validate data
    before training.

    Example:
    ```mlir
    %l = nn.cross_entropy %z, %y {ignore_index = -100 : i64} : (tensor<2x16x256xf32>, tensor<2x16xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_CrossEntropyGradOp : NN_Op<"cross_entropy_grad", [Pure]> {
  let summary = "the gradient of nn.cross_entropy with respect to the logits, fused";
  let description = [{
    `g * (softmax(logits_row) - onehot(label)) / count` per row (0 for
    ignored rows), with `count` the number of rows not ignored and `g` the
    loss's adjoint (a 0-d tensor): one pass per row, as reverse-mode
    differentiation of `nn.cross_entropy` produces it.

    Example:
    ```mlir
    %d = nn.cross_entropy_grad %z, %y, %g : (tensor<32x256xf32>, tensor<32xi64>, tensor<f32>) -> tensor<32x256xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$logits, NN_IndexTensor:$labels, NN_FloatTensor:$grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$logits `,` $labels `,` $grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_UnsqueezeOp : NN_InferOp<"unsqueeze"> {
  let summary = "insert size-1 dimensions (ONNX Unsqueeze)";
  let description = [{
    `axes` index the result (rank + number of axes) and must be distinct.

    Example:
    ```mlir
    %y = nn.unsqueeze %x {axes = array<i64: 0>} : (tensor<16x64xf32>) -> tensor<1x16x64xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$x, DenseI64ArrayAttr:$axes);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def NN_SqueezeOp : NN_InferOp<"squeeze"> {
  let summary = "remove size-1 dimensions (ONNX Squeeze)";
  let description = [{
    Removes the listed `axes`, each of which must have size 1 (or be dynamic);
    without `axes`, removes every static dimension of size 1.

    Example:
    ```mlir
    %y = nn.squeeze %x {axes = array<i64: 2, 3>} : (tensor<1x512x1x1xf32>) -> tensor<1x512xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$x, OptionalAttr<DenseI64ArrayAttr>:$axes);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Convolutional networks
//===----------------------------------------------------------------------===//

def NN_ConvOp : NN_InferOp<"conv"> {
  let summary = "N-d grouped convolution, NCHW (ONNX Conv)";
  let description = [{
    `x : [N, C, D1..Dk]`, `w : [M, C/group, K1..Kk]`, optional `b : [M]`.
    `strides` and `dilations` default to 1, `pads` (begin values then end
    values) to 0. The kernel size comes from `w`.

    Example:
    ```mlir
    %y = nn.conv %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$w,
                       Optional<NN_FloatTensor>:$b,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat =
      "$x `,` $w (`,` $b^)? attr-dict `:` functional-type(operands, results)";
}

def NN_MaxPoolOp : NN_InferOp<"max_pool"> {
  let summary = "N-d max pooling, NCHW (ONNX MaxPool, floor mode)";
  let description = [{
    Window `kernel_shape`, `strides` (default 1) and `pads` (begin values then
    end values, default 0) over the spatial dimensions.

    Example:
    ```mlir
    %y = nn.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, DenseI64ArrayAttr:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def NN_ConvInputGradOp : NN_Op<"conv_input_grad", [Pure]> {
  let summary = "gradient of a 2-D convolution with respect to its input";
  let description = [{
    For `y = nn.conv(x, w)` with these `strides`, `pads`, `dilations` and
    `group`, `dy : [N, M, OH, OW]` and `w : [M, C/group, KH, KW]` give
    `dx = dL/dx : [N, C, H, W]` (the result type names the input's shape,
    which the output size alone does not determine). The reverse rule of
    `nn.conv` creates it.

    Example:
    ```mlir
    %dx = nn.conv_input_grad %dy, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x8x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<2x3x8x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$dy, NN_FloatTensor:$w,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$dy `,` $w attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_ConvWeightGradOp : NN_Op<"conv_weight_grad", [Pure]> {
  let summary = "gradient of a 2-D convolution with respect to its weights";
  let description = [{
    For `y = nn.conv(x, w)` with these `strides`, `pads`, `dilations` and
    `group`, `x : [N, C, H, W]` and `dy : [N, M, OH, OW]` give
    `dw = dL/dw : [M, C/group, KH, KW]` (the result type names the kernel
    size). The reverse rule of `nn.conv` creates it.

    Example:
    ```mlir
    %dw = nn.conv_weight_grad %x, %dy {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<2x8x8x8xf32>) -> tensor<8x3x3x3xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$dy,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_MaxPoolGradOp : NN_Op<"max_pool_grad", [Pure, AllTypesMatch<["x", "result"]>]> {
  let summary = "gradient of 2-D max pooling with respect to its input";
  let description = [{
    For `y = nn.max_pool(x)` with this window, `dy` (shaped like `y`) is
    routed to the first maximum of each window in row-major order (PyTorch's
    and ONNX Runtime's choice when a window holds equal maxima, as after a
    ReLU); windows overlapping at an element add up there. The reverse rule of
    `nn.max_pool` creates it.

    Example:
    ```mlir
    %dx = nn.max_pool_grad %x, %dy {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x8x8x8xf32>, tensor<2x8x4x4xf32>) -> tensor<2x8x8x8xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x, NN_FloatTensor:$dy,
                       DenseI64ArrayAttr:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$pads);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x `,` $dy attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_GlobalAveragePoolOp : NN_InferOp<"global_average_pool"> {
  let summary = "mean over all spatial dimensions, NCHW (ONNX GlobalAveragePool)";
  let description = [{
    `[N, C, D1..Dk] -> [N, C, 1..1]`.

    Example:
    ```mlir
    %y = nn.global_average_pool %x : (tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$x);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Selection, conversion and constants
//===----------------------------------------------------------------------===//

def NN_WhereOp : NN_InferOp<"where"> {
  let summary = "select by a boolean condition with broadcasting (ONNX Where)";
  let description = [{
    `cond ? x : y` elementwise; the three operands broadcast together and
    `x`, `y` share an element type.

    Example:
    ```mlir
    %s = nn.where %mask, %scores, %neg_inf : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins NN_BoolTensor:$cond, NN_Tensor:$x, NN_Tensor:$y);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat =
      "$cond `,` $x `,` $y attr-dict `:` functional-type(operands, results)";
}

def NN_CastOp : NN_Op<"cast", [Pure, Elementwise]> {
  let summary = "convert the element type (ONNX Cast)";
  let description = [{
    Same shape (checked by the `Elementwise` trait), element type of the
    result.

    Example:
    ```mlir
    %y = nn.cast %ids : tensor<2x16xi32> -> tensor<2x16xi64>
    ```
  }];
  let arguments = (ins NN_Tensor:$x);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasFolder = 1;
}

def NN_BitcastOp : NN_Op<"bitcast", [Pure, Elementwise]> {
  let summary = "reinterpret each element's bits as another type of the same width (ONNX BitCast)";
  let description = [{
    Same shape, the element type of the result, the bits unchanged: f32 <->
    i32/ui32, f64 <-> i64, f16/bf16 <-> i16/ui16, between integer types of
    one width. A bool (one byte in ONNX) reinterprets as an 8-bit integer
    0 or 1; an 8-bit integer as a bool is true when nonzero. No gradient
    flows through it.

    Example:
    ```mlir
    %y = nn.bitcast %x : tensor<2x16xf32> -> tensor<2x16xi32>
    ```
  }];
  let arguments = (ins NN_Tensor:$x);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def NN_StopGradientOp : NN_Op<"stop_gradient", [Pure, AllTypesMatch<["x", "result"]>]> {
  let summary = "identity whose reverse rule passes no gradient";
  let description = [{
    Returns `x`. Reverse-mode differentiation treats the result as a
    constant: no adjoint reaches `x` through it (PyTorch's `detach`). LPA's
    residual-fitting variant reads each block's input through it. It lowers
    to nothing and exports as ONNX Identity; no folder removes it, so it
    survives canonicalization until differentiation has run.

    Example:
    ```mlir
    %h = nn.stop_gradient %x : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins NN_Tensor:$x);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def NN_ConstantOp : NN_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a small constant tensor (ONNX Constant)";
  let description = [{
    For small constants of the graph (scalars, masks, shape vectors). Weights
    are never constants: they are named parameters (`ml_program.global`), so
    large literals never appear in the IR.

    Example:
    ```mlir
    %c = nn.constant dense<1.0e-05> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs NN_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

def NN_AttentionOp : NN_InferOp<"attention"> {
  let summary = "scaled dot-product attention, optionally causal";
  let description = [{
    `softmax(q . k^T * scale + bias) . v` per batch and head, with
    `q : [B, H, Tq, Dk]`, `k : [B, H, Tk, Dk]`, `v : [B, H, Tk, Dv]` and
    result `[B, H, Tq, Dv]`. `scale` defaults to `1/sqrt(Dk)`; `causal` masks
    key positions after the query position (aligned at the end when
    `Tq != Tk`). The optional `bias` is added to the scaled scores; it
    broadcasts (NumPy-style, trailing dimensions aligned) to `[B, H, Tq, Tk]`
    and holds masks as exporters write them (0 where a key is attended,
    `-inf` or a large negative number where it is not). The fused CPU kernel
    computes no score that a bias element at or below -1e30 masks (as
    `causal` computes none after the query), so a NaN score there (a NaN
    key) does not reach its row, as `where(mask, s, -inf)` writes it; the
    expansion adds the bias to it. With
    `zero_masked_rows`, a row of weights that is NaN (every key masked with
    `-inf`, or a NaN score) gives 0 instead of NaN, as PyTorch's dynamo
    exporter writes it (`where(isnan(p), 0, p)` after the softmax). The importer forms
    the op from ONNX `Attention`, nn-fuse-attention from the exporters'
    matmul/softmax/matmul subgraph; lowering expands it or calls a fused
    kernel.

    Example:
    ```mlir
    %o = nn.attention %q, %k, %v {causal} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    %p = nn.attention %q, %k, %v bias(%mask) {scale = 0.25 : f32} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$q, NN_FloatTensor:$k, NN_FloatTensor:$v,
                       Optional<NN_FloatTensor>:$bias,
                       UnitAttr:$causal, UnitAttr:$zero_masked_rows,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat =
      "$q `,` $k `,` $v (`bias` `(` $bias^ `)`)? attr-dict `:` functional-type(operands, results)";
}

def NN_AttentionGradOp : NN_InferOp<"attention_grad"> {
  let summary = "the vector-Jacobian product of nn.attention";
  let description = [{
    The gradients `dq`, `dk`, `dv` of `out = nn.attention(q, k, v, bias)`
    (same attributes, same meaning) given the forward result `out` and its
    adjoint `dout : [B, H, Tq, Dv]`, with `p` the attention weights:
    `dv = p^T . dout`, `dp = dout . v^T`,
    `ds = p * (dp - rowsum(dout * out))`, `dq = scale * ds . k`,
    `dk = scale * ds^T . q`. The weights are computed again from `q` and `k`
    (nothing of the forward but `out` is kept), so training does not hold a
    `[Tq, Tk]` tensor per layer. The bias gets no gradient: rewire-autodiff
    builds this op only where the bias does not depend on a differentiated
    value. Under `zero_masked_rows` a row with no key to attend (its weights
    set to 0) passes no gradient; without it such a row's NaN reaches `dq`,
    `dk` and `dv` as it does through the expanded softmax. Lowering expands it or
    calls the CPU runtime's fused backward kernel.

    Example:
    ```mlir
    %dq, %dk, %dv = nn.attention_grad %q, %k, %v, %o, %do {causal, scale = 0.25 : f32} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>)
    ```
  }];
  let arguments = (ins NN_FloatTensor:$q, NN_FloatTensor:$k, NN_FloatTensor:$v,
                       NN_FloatTensor:$out, NN_FloatTensor:$dout,
                       Optional<NN_FloatTensor>:$bias,
                       UnitAttr:$causal, UnitAttr:$zero_masked_rows,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs NN_FloatTensor:$dq, NN_FloatTensor:$dk, NN_FloatTensor:$dv);
  let assemblyFormat =
      "$q `,` $k `,` $v `,` $out `,` $dout (`bias` `(` $bias^ `)`)? attr-dict `:` functional-type(operands, results)";
}

def NN_SinkhornOp : NN_Op<"sinkhorn", [Pure, SameOperandsAndResultType,
                                       InferTypeOpInterface]> {
  let summary = "Sinkhorn-Knopp normalization of exp(z) to a doubly stochastic matrix";
  let description = [{
    For every matrix `z : [..., n, n]` of the operand (the last two axes):
    `m = exp(z - max(z))` (the matrix's largest entry subtracted so nothing
    overflows; the result does not depend on it), then `iters` rounds of
    dividing every row by its sum and then every column by its sum. Each
    column of the result sums to 1 exactly (up to rounding) and each row up
    to the last round's error: mHC's residual mixing (papers.md 6.2).
    `nn::decomposeSinkhorn` writes the same arithmetic in nn ops (the ONNX
    export uses it); the lowering computes each matrix in one fused loop
    body, with the matrix in registers.

    Example:
    ```mlir
    %m = nn.sinkhorn %z {iters = 20 : i64} : tensor<2x16x4x4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$z, ConfinedAttr<I64Attr, [IntPositive]>:$iters);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$z attr-dict `:` type($z)";
  let hasVerifier = 1;
}

def NN_SinkhornGradOp : NN_Op<"sinkhorn_grad", [Pure, SameOperandsAndResultType,
                                                InferTypeOpInterface]> {
  let summary = "the vector-Jacobian product of nn.sinkhorn, by recomputation";
  let description = [{
    `dz` for `m = nn.sinkhorn(z)` (same `iters`) and the adjoint `dm` of
    its result. The forward is computed again from `z` (nothing of it is
    kept between the passes); then, from the last round back, a division
    `y = x / s` of a row (column) by its sum passes back
    `dx = (dy - sum(dy * y)) / s` over that row (column), and the
    exponential `dz = dm0 * m0`. `nn::decomposeSinkhornGrad` writes the same
    in nn ops, the reference the fused lowering is tested against.

    Example:
    ```mlir
    %dz = nn.sinkhorn_grad %z, %dm {iters = 20 : i64} : tensor<2x16x4x4xf32>
    ```
  }];
  let arguments = (ins NN_FloatTensor:$z, NN_FloatTensor:$dm,
                       ConfinedAttr<I64Attr, [IntPositive]>:$iters);
  let results = (outs NN_FloatTensor:$result);
  let assemblyFormat = "$z `,` $dm attr-dict `:` type($z)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Import
//===----------------------------------------------------------------------===//

def NN_OnnxNodeOp : NN_Op<"onnx_node"> {
  let summary = "an ONNX node in generic form, before or instead of legalization";
  let description = [{
    The faithful generic form of one ONNX node: its operator type, domain and
    the opset the model imports for that domain, its node name, and all of
    its attributes (`attrs`, converted to MLIR attributes). The importer
    creates one per node and immediately legalizes it into nn ops with the
    handler registered for `(domain, op_type, opset)`; it stays in the IR only
    when the op is unsupported and `--allow-unsupported` is given. Absent
    optional inputs (ONNX's empty input names) are listed by position in
    `absent_inputs`. Results whose type the model does not declare have type
    `none`.

    Example:
    ```mlir
    %y = nn.onnx_node "MyCustomOp"(%x) {domain = "com.example", opset = 1 : i64,
        node_name = "/block/custom", attrs = {alpha = 5.000000e-01 : f32}}
        : (tensor<2x8xf32>) -> none
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, StrAttr:$op_type,
                       StrAttr:$domain, I64Attr:$opset, StrAttr:$node_name,
                       DictionaryAttr:$attrs,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$absent_inputs);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat =
      "$op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, results)";
}

#endif // REWIRE_NN_OPS_TD
