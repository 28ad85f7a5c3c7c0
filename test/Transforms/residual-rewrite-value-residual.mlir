// kind=value-residual (ResFormer, papers.md 6.4): the values of every
// attention after the first become lambda1 V_1 + lambda2 V, right where the
// attention weights multiply them.
// RUN: rewire-opt %s --residual-rewrite=kind=value-residual | FileCheck %s --check-prefix=FIXED
// RUN: rewire-opt %s --residual-rewrite="kind=value-residual lambda=learned" | FileCheck %s --check-prefix=LEARNED
// RUN: rewire-opt %s --residual-rewrite="kind=value-residual lambda=learned init=identity" | FileCheck %s --check-prefix=IDENTITY
// RUN: rewire-opt %s --residual-rewrite=kind=value-residual | rewire-opt | FileCheck %s --check-prefix=FIXED
// RUN: not rewire-opt %s --residual-rewrite="kind=value-residual init=identity" 2>&1 | FileCheck %s --check-prefix=NOID
// RUN: not rewire-opt %S/Inputs/hc-postln.mlir --residual-rewrite=kind=value-residual 2>&1 | FileCheck %s --check-prefix=NOATT

// FIXED-LABEL: func.func @two_attentions
// FIXED: %[[P0:.*]] = nn.softmax
// FIXED: nn.matmul %[[P0]], %arg1 :
// FIXED: %[[P1:.*]] = nn.softmax
// FIXED: %[[HALF:.*]] = nn.constant dense<5.000000e-01> : tensor<f32>
// FIXED: %[[MIX:.*]] = residual.value_mix %arg2, %arg1, %[[HALF]], %{{.*}} stream 0 layer 1 : tensor<2x4x4xf32>, tensor<f32>, tensor<f32>
// FIXED: nn.matmul %[[P1]], %[[MIX]] :

// LEARNED-LABEL: func.func @two_attentions
// LEARNED: residual.value_mix %arg2, %arg1, %stream0.layer1.value-residual.lambda1, %stream0.layer1.value-residual.lambda2 stream 0 layer 1
// LEARNED-DAG: ml_program.global private @"stream0.layer1.value-residual.lambda1"(dense<5.000000e-01> : tensor<f32>)
// LEARNED-DAG: ml_program.global private @"stream0.layer1.value-residual.lambda2"(dense<5.000000e-01> : tensor<f32>)

// IDENTITY-DAG: ml_program.global private @"stream0.layer1.value-residual.lambda1"(dense<0.000000e+00> : tensor<f32>)
// IDENTITY-DAG: ml_program.global private @"stream0.layer1.value-residual.lambda2"(dense<1.000000e+00> : tensor<f32>)

// NOID: residual-rewrite: kind=value-residual lambda=fixed mixes 1/2 of the first layer's values in, which changes the function; use lambda=learned with init=identity
// NOATT: residual-rewrite: kind=value-residual mixes a stream's first attention layer's values into its later ones, but no stream has two attention layers

func.func @two_attentions(%h: tensor<2x4x4xf32>, %v0: tensor<2x4x4xf32>, %v1: tensor<2x4x4xf32>, %s: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %p0 = nn.softmax %s {axis = 2 : i64} : tensor<2x4x4xf32>
  %a0 = nn.matmul %p0, %v0 : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %h1 = residual.add %h, %a0 stream 0 layer 0 {residual.branch = "attention"} : tensor<2x4x4xf32>
  %p1 = nn.softmax %h1 {axis = 2 : i64} : tensor<2x4x4xf32>
  %a1 = nn.matmul %p1, %v1 : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %h2 = residual.add %h1, %a1 stream 0 layer 1 {residual.branch = "attention"} : tensor<2x4x4xf32>
  return %h2 : tensor<2x4x4xf32>
}
