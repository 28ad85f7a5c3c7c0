// Folders of the nn ops.
// RUN: rewire-opt %s --canonicalize --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<2x8xf32>)
// CHECK-NOT: nn.reshape
// CHECK: return %[[X]]
func.func @reshape_same_type(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = nn.reshape %x : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_kept
// CHECK: nn.reshape
func.func @reshape_kept(%x: tensor<2x8xf32>) -> tensor<16xf32> {
  %0 = nn.reshape %x : tensor<2x8xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<4xi64>)
// CHECK-NOT: nn.cast
// CHECK: return %[[X]]
func.func @cast_same_type(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = nn.cast %x : tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// Constants fold, so a residual op fed by a constant nn.constant simplifies.
// CHECK-LABEL: func.func @constant_feeds_residual_fold
// CHECK-SAME: (%[[H:[a-z0-9_]+]]: tensor<2x8xf32>, %{{.*}}: tensor<2x8xf32>)
// CHECK-NOT: residual.scale_add
// CHECK: return %[[H]]
func.func @constant_feeds_residual_fold(%h: tensor<2x8xf32>, %u: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %a = nn.constant dense<0.0> : tensor<f32>
  %0 = residual.scale_add %h, %u, %a stream 0 layer 0 : tensor<2x8xf32>, tensor<f32>
  return %0 : tensor<2x8xf32>
}
