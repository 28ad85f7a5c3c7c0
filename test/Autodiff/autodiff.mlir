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

// An op without a reverse rule on the path to the loss is named (a
// backward op: no second derivatives).
func.func @forward(%q: tensor<1x1x4x8xf32> {nn.parameter = "q"}, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>,
                   %o: tensor<1x1x4x8xf32>, %g: tensor<1x1x4x8xf32>) -> tensor<f32> {
  // expected-error @+1 {{rewire-autodiff: no reverse rule for 'nn.attention_grad' (the loss depends on it)}}
  %dq, %dk, %dv = nn.attention_grad %q, %k, %v, %o, %g : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>)
  %l = nn.reduce_sum %dq {axes = array<i64>, keepdims = false} : (tensor<1x1x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Attention's rule is nn.attention_grad (weights computed again, from q, k,
// the forward's output and its adjoint); a bias gets its gradient from the
// expanded weights (its softmax), built only when the bias is varied.
// CHECK-LABEL: func.func @forward_grad(
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = nn.attention_grad %arg0, %arg1, %arg2, %{{.*}}, %{{.*}} bias(%arg3) {causal, scale = 5.000000e-01 : f32}
// CHECK: nn.softmax
// CHECK: return %{{.*}}, %[[DQ]], %[[DK]], %[[DV]], %{{.*}} :
// FROZEN-LABEL: func.func @forward_grad(
func.func @forward(%q: tensor<1x2x4x8xf32> {nn.parameter = "q"}, %k: tensor<1x2x4x8xf32> {nn.parameter = "k"},
                   %v: tensor<1x2x4x8xf32> {nn.parameter = "v"}, %m: tensor<4x4xf32> {nn.parameter = "m"}) -> tensor<f32> {
  %y = nn.attention %q, %k, %v bias(%m) {causal, scale = 0.5 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  %l = nn.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<1x2x4x8xf32>) -> tensor<f32>
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

// -----

// A scatter-add into a base: the base's cotangent passes through, the
// updates' is the gather of it at the indices.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: %[[B:[^:]*]]: tensor<16x4xf32> {nn.parameter = "base"}, %[[U:[^:]*]]: tensor<2x4xf32> {nn.parameter = "rows"}
// CHECK: nn.scatter_add %[[U]], %{{.*}} into %[[B]]
// CHECK: %[[G:.*]] = nn.add %{{.*}}, %{{.*}} : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
// CHECK: %[[GU:.*]] = nn.gather %[[G]], %{{.*}} : (tensor<16x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
// CHECK: return %{{.*}}, %[[G]], %[[GU]] :
func.func @forward(%b: tensor<16x4xf32> {nn.parameter = "base"}, %u: tensor<2x4xf32> {nn.parameter = "rows"}, %i: tensor<2xi64>) -> tensor<f32> {
  %s = nn.scatter_add %u, %i into %b : (tensor<2x4xf32>, tensor<2xi64>, tensor<16x4xf32>) -> tensor<16x4xf32>
  %q = nn.mul %s, %s : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  %l = nn.reduce_sum %q {axes = array<i64>, keepdims = false} : (tensor<16x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

