// RUN: rewire-opt %s --split-input-file --rewire-autodiff --verify-diagnostics | FileCheck %s
// RUN: rewire-opt %s --split-input-file --rewire-autodiff="frozen=b" --verify-diagnostics | FileCheck %s --check-prefix=FROZEN

// Gradients with respect to the parameters only, named; adjoints that reach
// a value twice (x feeds the matmul and the residual add) are summed; the
// forward function is kept.
// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<8x8xf32> {nn.name = "grad:w"}, tensor<8xf32> {nn.name = "grad:b"})
// CHECK: %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK: nn.transpose %{{.*}} {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK: %[[DW:.*]] = nn.matmul
// CHECK: return %{{.*}}, %[[DW]], %{{.*}} : tensor<f32>, tensor<8x8xf32>, tensor<8xf32>
// FROZEN-LABEL: func.func @forward_grad(
// FROZEN-SAME: -> (tensor<f32>, tensor<8x8xf32> {nn.name = "grad:w"})
func.func @forward(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {nn.parameter = "w"},
                   %b: tensor<8xf32> {nn.parameter = "b"}) -> tensor<f32> {
  %y = nn.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %z = nn.add %y, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %h = residual.add %x, %z stream 0 layer 0 : tensor<4x8xf32>
  %l = nn.reduce_sum %h {axes = array<i64>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An op without a reverse rule on the path to the loss is named.
func.func @forward(%q: tensor<1x1x4x8xf32> {nn.parameter = "q"}, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<f32> {
  // expected-error @+1 {{rewire-autodiff: no reverse rule for 'nn.attention' (the loss depends on it)}}
  %y = nn.attention %q, %k, %v : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  %l = nn.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<1x1x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A rule that covers part of an op's attributes says which.
func.func @forward(%x: tensor<4x8xf32> {nn.parameter = "x"}) -> tensor<f32> {
  // expected-error @+1 {{rewire-autodiff: nn.slice is differentiated with unit steps and static shapes only}}
  %y = nn.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, axes = array<i64: 0>, steps = array<i64: 2>} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %l = nn.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The loss must be a scalar.
// expected-error @+1 {{rewire-autodiff: the first result of 'forward_grad' must be a scalar float loss, got 'tensor<4xf32>'}}
func.func @forward(%x: tensor<4xf32> {nn.parameter = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Embedding tables: the gradient of gather (axis 0) is a scatter_add.
// CHECK-LABEL: func.func @forward_grad(
// CHECK: nn.scatter_add %{{.*}}, %{{.*}} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<16x4xf32>
func.func @forward(%t: tensor<16x4xf32> {nn.parameter = "emb"}, %i: tensor<2xi64>) -> tensor<f32> {
  %e = nn.gather %t, %i {axis = 0 : i64} : (tensor<16x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %l = nn.reduce_sum %e {axes = array<i64>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

