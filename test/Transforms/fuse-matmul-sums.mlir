// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(nn-fuse-matmul-sums))" | FileCheck %s

// Three narrow products summed with another term: one product of the
// left operands side by side and the right operands stacked, then the
// other leaf.
// CHECK-LABEL: func.func @three_products
// CHECK-SAME: (%[[A1:.*]]: tensor<2x8x4xf32>, %[[A2:.*]]: tensor<2x8x4xf32>, %[[A3:.*]]: tensor<2x8x16xf32>, %[[W1:.*]]: tensor<4x64xf32>, %[[W2:.*]]: tensor<4x64xf32>, %[[W3:.*]]: tensor<16x64xf32>, %[[X:.*]]: tensor<2x8x64xf32>)
func.func @three_products(%a1: tensor<2x8x4xf32>, %a2: tensor<2x8x4xf32>, %a3: tensor<2x8x16xf32>,
                          %w1: tensor<4x64xf32>, %w2: tensor<4x64xf32>, %w3: tensor<16x64xf32>,
                          %x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  // CHECK: %[[A:.*]] = nn.concat %[[A1]], %[[A2]], %[[A3]] {axis = 2 : i64} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x16xf32>) -> tensor<2x8x24xf32>
  // CHECK: %[[W:.*]] = nn.concat %[[W1]], %[[W2]], %[[W3]] {axis = 0 : i64} : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<16x64xf32>) -> tensor<24x64xf32>
  // CHECK: %[[P:.*]] = nn.matmul %[[A]], %[[W]] : (tensor<2x8x24xf32>, tensor<24x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: %[[S:.*]] = nn.add %[[P]], %[[X]]
  // CHECK-NOT: nn.matmul
  // CHECK: return %[[S]]
  %p1 = nn.matmul %a1, %w1 : (tensor<2x8x4xf32>, tensor<4x64xf32>) -> tensor<2x8x64xf32>
  %s1 = nn.add %p1, %x : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %p2 = nn.matmul %a2, %w2 : (tensor<2x8x4xf32>, tensor<4x64xf32>) -> tensor<2x8x64xf32>
  %s2 = nn.add %s1, %p2 : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %p3 = nn.matmul %a3, %w3 : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
  %s3 = nn.add %s2, %p3 : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %s3 : tensor<2x8x64xf32>
}

// -----

// Products behind reshapes of one source shape (a hyper stream's flattened
// rows): summed before one reshape, the products fused inside.
// CHECK-LABEL: func.func @behind_reshapes
func.func @behind_reshapes(%a1: tensor<4x32x4xf32>, %a2: tensor<4x32x16xf32>, %w1: tensor<4x64xf32>,
                           %w2: tensor<16x64xf32>, %c1: tensor<4x32x64xf32>, %c2: tensor<4x32x64xf32>,
                           %g: tensor<4x32x4x16xf32>) -> tensor<4x32x4x16xf32> {
  // CHECK: %[[P:.*]] = nn.matmul %{{.*}}, %{{.*}} : (tensor<4x32x20xf32>, tensor<20x64xf32>) -> tensor<4x32x64xf32>
  // CHECK: %[[T1:.*]] = nn.add %[[P]], %{{.*}} : (tensor<4x32x64xf32>
  // CHECK: %[[T2:.*]] = nn.add %[[T1]], %{{.*}} : (tensor<4x32x64xf32>
  // CHECK: %[[R:.*]] = nn.reshape %[[T2]] : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
  // CHECK: %[[S:.*]] = nn.add %[[R]], %{{.*}} : (tensor<4x32x4x16xf32>
  // CHECK-NOT: nn.reshape
  // CHECK: return %[[S]]
  %p1 = nn.matmul %a1, %w1 : (tensor<4x32x4xf32>, tensor<4x64xf32>) -> tensor<4x32x64xf32>
  %d1 = nn.add %p1, %c1 : (tensor<4x32x64xf32>, tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %r1 = nn.reshape %d1 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
  %p2 = nn.matmul %a2, %w2 : (tensor<4x32x16xf32>, tensor<16x64xf32>) -> tensor<4x32x64xf32>
  %d2 = nn.add %p2, %c2 : (tensor<4x32x64xf32>, tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %r2 = nn.reshape %d2 : tensor<4x32x64xf32> -> tensor<4x32x4x16xf32>
  %s1 = nn.add %g, %r1 : (tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>) -> tensor<4x32x4x16xf32>
  %s2 = nn.add %s1, %r2 : (tensor<4x32x4x16xf32>, tensor<4x32x4x16xf32>) -> tensor<4x32x4x16xf32>
  return %s2 : tensor<4x32x4x16xf32>
}

// -----

// Left alone: full-width products whose operand copies cost more than the
// results they save (q, k gradients [16, 64] . [64, 64]), a product with
// another use, a broadcasting add, and products with different row shapes.
// CHECK-LABEL: func.func @left_alone
func.func @left_alone(%a1: tensor<16x64xf32>, %a2: tensor<16x64xf32>, %w1: tensor<64x64xf32>,
                      %w2: tensor<64x64xf32>, %b1: tensor<16x4xf32>, %b2: tensor<16x4xf32>,
                      %v1: tensor<4x64xf32>, %v2: tensor<4x64xf32>, %bias: tensor<64xf32>,
                      %c1: tensor<8x4xf32>, %u1: tensor<4x64xf32>)
    -> (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<8x64xf32>) {
  // CHECK-NOT: nn.concat
  %p1 = nn.matmul %a1, %w1 : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %p2 = nn.matmul %a2, %w2 : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %s = nn.add %p1, %p2 : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %q1 = nn.matmul %b1, %v1 : (tensor<16x4xf32>, tensor<4x64xf32>) -> tensor<16x64xf32>
  %q2 = nn.matmul %b2, %v2 : (tensor<16x4xf32>, tensor<4x64xf32>) -> tensor<16x64xf32>
  %t = nn.add %q1, %q2 : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %q3 = nn.matmul %b1, %v2 : (tensor<16x4xf32>, tensor<4x64xf32>) -> tensor<16x64xf32>
  %u = nn.add %q3, %bias : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %e = nn.matmul %c1, %u1 : (tensor<8x4xf32>, tensor<4x64xf32>) -> tensor<8x64xf32>
  return %s, %t, %q1, %u, %e : tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<8x64xf32>
}
