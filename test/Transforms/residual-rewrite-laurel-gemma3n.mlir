// kind=laurel laurel=gemma3n (Gemma 3n's merge, papers.md 6.3): on attention
// sublayers only, with a = the branch's input norm,
//   x' = (h + u + a + rms(a A B) w) / sqrt 2,
// the low-rank path in nn ops on the branch output and the update a
// residual.laurel with constant scalars 1/sqrt 2. MLP sublayers keep their
// add. `a` is what the branch's first projection reads (its input norm's
// output, fused or spelled out as LLaMA's exported RMSNorm). The merge
// changes the function: init=identity is refused; so is a branch whose first
// projection reads the state itself (post-LN), and a model without attention.
// RUN: rewire-opt %s --split-input-file --verify-diagnostics --residual-rewrite="kind=laurel laurel=gemma3n rank=4" | FileCheck %s
// RUN: not rewire-opt %s --split-input-file --residual-rewrite="kind=laurel laurel=gemma3n init=identity" 2>&1 | FileCheck %s --check-prefix=IDENTITY

// IDENTITY: kind=laurel laurel=gemma3n adds the branch's input norm and scales every attention update by 1/sqrt 2, which changes the function; use init=paper

// CHECK-LABEL: func.func @pre_ln
// CHECK-DAG: %[[A:.*]] = ml_program.global_load_const @stream0.layer0.laurel.A : tensor<16x4xf32>
// CHECK-DAG: %[[B:.*]] = ml_program.global_load_const @stream0.layer0.laurel.B : tensor<4x16xf32>
// CHECK-DAG: %[[W:.*]] = ml_program.global_load_const @stream0.layer0.laurel.norm : tensor<16xf32>
// CHECK: %[[LEFT:.*]] = nn.matmul %[[NORM:.*]], %[[A]] : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<2x8x4xf32>
// CHECK: %[[RIGHT:.*]] = nn.matmul %[[LEFT]], %[[B]]
// CHECK: %[[R:.*]] = nn.rms_norm %[[RIGHT]], %[[W]] {epsilon = 9.99999997E-7 : f32}
// CHECK: %[[Z:.*]] = nn.add %[[NORM]], %[[R]]
// CHECK: %[[U:.*]] = nn.add %[[ATTN:.*]], %[[Z]]
// CHECK: %[[HALF:.*]] = nn.constant dense<0.707106769> : tensor<f32>
// CHECK: %[[X1:.*]] = residual.laurel %arg0, %[[U]], %[[HALF]], %[[HALF]] stream 0 layer 0 {residual.branch = "attention"}
// CHECK: residual.add %[[X1]], %{{.*}} stream 0 layer 1 {residual.branch = "mlp"}
// CHECK-NOT: laurel.A
// A and B as linear layers (std 1/sqrt(fan_in): 1/4, 1/2), w = 1.
// CHECK-DAG: ml_program.global private @stream0.layer0.laurel.A(#nn.init<normal(0.000000e+00, 2.500000e-01)>) : tensor<16x4xf32>
// CHECK-DAG: ml_program.global private @stream0.layer0.laurel.B(#nn.init<normal(0.000000e+00, 5.000000e-01)>) : tensor<4x16xf32>
// CHECK-DAG: ml_program.global private @stream0.layer0.laurel.norm(#nn.init<ones>) : tensor<16xf32>
func.func @pre_ln(%h: tensor<2x8x16xf32>, %g: tensor<16xf32>, %wq: tensor<16x16xf32>, %m: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %a = nn.layer_norm %h, %g : tensor<2x8x16xf32>, tensor<16xf32>
  %attn = nn.matmul %a, %wq : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %0 = residual.add %h, %attn stream 0 layer 0 {residual.branch = "attention"} : tensor<2x8x16xf32>
  %1 = residual.add %0, %m stream 0 layer 1 {residual.branch = "mlp"} : tensor<2x8x16xf32>
  return %1 : tensor<2x8x16xf32>
}

// -----

// Post-LN: the branch reads the state itself.
func.func @post_ln(%h: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  %attn = nn.matmul %h, %wq : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  // expected-error @+1 {{kind=laurel laurel=gemma3n reads the attention branch's normalized input, but its first projection reads the state itself (a post-LN model); use laurel=rw-lr}}
  %0 = residual.add %h, %attn stream 0 layer 0 {residual.branch = "attention"} : tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

// A spelled-out RMS norm (LLaMA's export): a is what the projection reads.
// CHECK-LABEL: func.func @spelled_out_norm
// CHECK: %[[A:.*]] = nn.mul %{{.*}}, %arg1
// CHECK: nn.matmul %[[A]], %{{.*}} : (tensor<2x8x16xf32>, tensor<16x4xf32>)
func.func @spelled_out_norm(%h: tensor<2x8x16xf32>, %g: tensor<16xf32>, %wq: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  %sq = nn.mul %h, %h : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %ms = nn.reduce_mean %sq {axes = array<i64: -1>} : (tensor<2x8x16xf32>) -> tensor<2x8x1xf32>
  %r = nn.sqrt %ms : tensor<2x8x1xf32>
  %n = nn.div %h, %r : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %a = nn.mul %n, %g : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %attn = nn.matmul %a, %wq : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %0 = residual.add %h, %attn stream 0 layer 0 {residual.branch = "attention"} : tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

// No attention sublayer: nothing for the merge to attach to.
// expected-error @below {{kind=laurel laurel=gemma3n adds LAuReL to attention sublayers (as Gemma 3n does), but no residual update's branch is attention (residual.branch); use laurel=rw-lr}}
module {
  func.func @mlp_only(%h: tensor<2x16xf32>, %m: tensor<2x16xf32>) -> tensor<2x16xf32> {
    %0 = residual.add %h, %m stream 0 layer 0 {residual.branch = "mlp"} : tensor<2x16xf32>
    return %0 : tensor<2x16xf32>
  }
}
