// A branch that cannot run on a subset of the rows keeps the masked form,
// with a warning that says why.
// RUN: rewire-opt %s --residual-rewrite=kind=nag --residual-mod=rate=0.25 --split-input-file --verify-diagnostics | FileCheck %s

// A position table from outside the branch is taken at the kept positions.
// CHECK-LABEL: func.func @table_from_outside
// CHECK: %[[I:.*]] = residual.route_select
// CHECK: %[[T:.*]] = nn.gather %{{.*}} : (tensor<128xf32>, tensor<2x6x16xi64>) -> tensor<2x6x16xf32>
// CHECK: nn.mul %{{.*}}, %[[T]] : (tensor<2x6x16xf32>, tensor<2x6x16xf32>)
// CHECK-NOT: residual.route {{.*}}rate
func.func @table_from_outside(%x: tensor<2x8x16xf32>, %pos: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  %u = nn.mul %x, %pos : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
  %h1 = residual.add %x, %u stream 0 layer 0 : tensor<2x8x16xf32>
  return %h1 : tensor<2x8x16xf32>
}

// -----

// Where the batch axis is lost (a sum over the batch), a tensor from outside
// with a token axis cannot be aligned.
// CHECK-LABEL: func.func @batch_lost
// CHECK: residual.route %{{.*}} rate 2.500000e-01
func.func @batch_lost(%x: tensor<2x8x16xf32>, %pos: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  %s = nn.reduce_sum %x {axes = array<i64: 0>} : (tensor<2x8x16xf32>) -> tensor<1x8x16xf32>
  %p = nn.mul %s, %pos : (tensor<1x8x16xf32>, tensor<8x16xf32>) -> tensor<1x8x16xf32>
  %u = nn.add %x, %p : (tensor<2x8x16xf32>, tensor<1x8x16xf32>) -> tensor<2x8x16xf32>
  // expected-warning @+1 {{residual-mod: this sublayer keeps computing every row (its skipped rows are masked): 'nn.mul'}}
  %h1 = residual.add %x, %u stream 0 layer 0 : tensor<2x8x16xf32>
  return %h1 : tensor<2x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @token_slice
// CHECK: residual.route %{{.*}} rate 2.500000e-01
func.func @token_slice(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %s = nn.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, axes = array<i64: 1>} : (tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  %u = nn.concat %s, %s {axis = 1 : i64} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  // expected-warning @+1 {{'nn.slice' at}}
  %h1 = residual.add %x, %u stream 0 layer 0 : tensor<2x8x16xf32>
  return %h1 : tensor<2x8x16xf32>
}

// -----

// A 2-D stream has no sequence axis to gather along.
// CHECK-LABEL: func.func @flat_rows
// CHECK: residual.route %{{.*}} rate 2.500000e-01
func.func @flat_rows(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %u = nn.gelu %x : tensor<8x16xf32>
  // expected-warning @+1 {{the stream is not a static [batch, tokens, features] tensor}}
  %h1 = residual.add %x, %u stream 0 layer 0 : tensor<8x16xf32>
  return %h1 : tensor<8x16xf32>
}

// -----

// floor(0.25 * 3) = 0: no token skips, so nothing is routed.
// CHECK-LABEL: func.func @too_short
// CHECK-NOT: residual.route
// CHECK: residual.nag_add
// CHECK-NOT: nn.gather
func.func @too_short(%x: tensor<2x3x16xf32>) -> tensor<2x3x16xf32> {
  %u = nn.gelu %x : tensor<2x3x16xf32>
  %h1 = residual.add %x, %u stream 0 layer 0 : tensor<2x3x16xf32>
  return %h1 : tensor<2x3x16xf32>
}
