//===- Passes.td - Conversions of Rewire's dialects ---------*- tablegen -*-===//
//
// Declares the conversion passes (one folder each).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_PASSES_TD
#define REWIRE_PASSES_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertResidualToLinalg : Pass<"convert-residual-to-linalg", "::mlir::func::FuncOp"> {
  let summary = "Lower residual ops to linalg on tensors";
  let description = [{
    Lowers the residual ops to `linalg.generic` / `linalg.matmul` on tensors:
    every elementwise part of an update (scale, gate epilogue, combine, mix)
    is one `linalg.generic` over the state, per-row norms are one reduction
    each, and the review gate's GEMM is two `linalg.matmul`s over the split
    weight (`W = [W_h | W_u]`, so `concat[rms h, rms u]` is never
    materialized). `residual.tap` disappears.

    Supported: `add`, `scale_add` (any feature axis), `gated_add` (review and
    highway, both combines, both gate widths), `mix` (softmax and free),
    `nag_gate`, `nag_add`, `route` by threshold, `tap`; gates and NAG need a
    static shape with the feature axis last. `route` by rate (it needs a
    sort) is not lowered yet: the conversion reports it by name and fails,
    never leaves an op behind silently.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
  ];
}

def ConvertNNToLinalg : Pass<"convert-nn-to-linalg", "::mlir::func::FuncOp"> {
  let summary = "Lower nn ops to linalg on tensors";
  let description = [{
    Lowers the tensor-graph ops to linalg on tensors: elementwise ops (with
    ONNX broadcasting expressed in indexing maps) and activations to
    `linalg.generic`, matmul with batch broadcasting to one `linalg.generic`
    with a reduction loop, softmax, layer_norm, rms_norm and reductions to
    reductions plus one fused elementwise generic, transpose to
    `linalg.transpose`, reshape to collapse/expand, constants to
    `arith.constant`;

    gather (with ONNX negative indices), split, where, gemm, batch_norm,
    2-D convolution (group 1; `linalg.conv_2d_nchw_fchw` on a `tensor.pad`),
    max pooling (`linalg.pooling_nchw_max`) and global average pooling are
    lowered too. Static shapes only for now. Not lowered yet (reported by
    name, never left behind silently): slice, concat, (un)squeeze, cast,
    grouped convolution, attention.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
  ];
}

#endif // REWIRE_PASSES_CONVERSION_PASSES_TD
