// RUN: rewire-opt %s --rewire-autodiff="frozen=b.,c." | FileCheck %s

// A frozen table needs no rule: only values depending on differentiated
// arguments get adjoints, so the gather is not differentiated at all.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32> {nn.name = "grad:scale"})
// CHECK-COUNT-1: nn.gather
// CHECK: return
func.func @forward(%t: tensor<16x4xf32> {nn.parameter = "b.emb"}, %i: tensor<2xi64>,
                   %s: tensor<4xf32> {nn.parameter = "scale"}) -> tensor<f32> {
  %e = nn.gather %t, %i {axis = 0 : i64} : (tensor<16x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %m = nn.mul %e, %s : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %l = nn.reduce_sum %m {axes = array<i64>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
