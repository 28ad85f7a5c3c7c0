// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(nn-fuse-sibling-matmuls))" | FileCheck %s

// A hyper stream's three coefficient projections of one stream: one
// product with the weights side by side, split back in order.
// CHECK-LABEL: func.func @coefficients
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4x8xf32>, %[[A:.*]]: tensor<8x1xf32>, %[[B:.*]]: tensor<8x1xf32>, %[[C:.*]]: tensor<8x4xf32>)
func.func @coefficients(%x: tensor<2x3x4x8xf32>, %a: tensor<8x1xf32>, %b: tensor<8x1xf32>, %c: tensor<8x4xf32>)
    -> (tensor<2x3x4x1xf32>, tensor<2x3x4x1xf32>, tensor<2x3x4x4xf32>) {
  // CHECK: %[[W:.*]] = nn.concat %[[A]], %[[B]], %[[C]] {axis = 1 : i64} : (tensor<8x1xf32>, tensor<8x1xf32>, tensor<8x4xf32>) -> tensor<8x6xf32>
  // CHECK: %[[P:.*]] = nn.matmul %[[X]], %[[W]] : (tensor<2x3x4x8xf32>, tensor<8x6xf32>) -> tensor<2x3x4x6xf32>
  // CHECK: %[[S:.*]]:3 = nn.split %[[P]] {axis = 3 : i64, sizes = array<i64: 1, 1, 4>}
  // CHECK-NOT: nn.matmul
  // CHECK: return %[[S]]#0, %[[S]]#1, %[[S]]#2
  %pa = nn.matmul %x, %a : (tensor<2x3x4x8xf32>, tensor<8x1xf32>) -> tensor<2x3x4x1xf32>
  %pb = nn.matmul %x, %b : (tensor<2x3x4x8xf32>, tensor<8x1xf32>) -> tensor<2x3x4x1xf32>
  %pc = nn.matmul %x, %c : (tensor<2x3x4x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4x4xf32>
  return %pa, %pb, %pc : tensor<2x3x4x1xf32>, tensor<2x3x4x1xf32>, tensor<2x3x4x4xf32>
}

// -----

// A right operand computed after the first product (a backward value) cannot
// join it, and the first product's result is used before the late one, so
// they cannot meet there either: the first two fuse, the late one stays; a
// different row count, a batched right operand and another left operand stay
// apart too.
// CHECK-LABEL: func.func @late_and_mismatched
func.func @late_and_mismatched(%x: tensor<64x8xf32>, %y: tensor<64x8xf32>, %a: tensor<8x2xf32>, %b: tensor<8x3xf32>,
                               %k: tensor<4x8xf32>, %bat: tensor<64x8x2xf32>)
    -> (tensor<64x2xf32>, tensor<64x3xf32>, tensor<64x2xf32>, tensor<64x2xf32>, tensor<64x64x2xf32>) {
  // CHECK: %[[W:.*]] = nn.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<8x2xf32>, tensor<8x3xf32>) -> tensor<8x5xf32>
  // CHECK: %[[P:.*]] = nn.matmul %{{.*}}, %[[W]] : (tensor<64x8xf32>, tensor<8x5xf32>) -> tensor<64x5xf32>
  // CHECK: nn.split %[[P]] {axis = 1 : i64, sizes = array<i64: 2, 3>}
  %p1 = nn.matmul %x, %a : (tensor<64x8xf32>, tensor<8x2xf32>) -> tensor<64x2xf32>
  %p2 = nn.matmul %x, %b : (tensor<64x8xf32>, tensor<8x3xf32>) -> tensor<64x3xf32>
  %used = nn.sigmoid %p1 : tensor<64x2xf32>
  // CHECK: %[[LATE:.*]] = nn.tanh
  // CHECK: nn.matmul %{{.*}}, %[[LATE]] : (tensor<64x8xf32>, tensor<8x2xf32>) -> tensor<64x2xf32>
  %late = nn.tanh %a : tensor<8x2xf32>
  %p3 = nn.matmul %x, %late : (tensor<64x8xf32>, tensor<8x2xf32>) -> tensor<64x2xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} : (tensor<64x8xf32>, tensor<8x2xf32>) -> tensor<64x2xf32>
  %p4 = nn.matmul %y, %a : (tensor<64x8xf32>, tensor<8x2xf32>) -> tensor<64x2xf32>
  // CHECK: nn.matmul %{{.*}}, %{{.*}} : (tensor<64x8xf32>, tensor<64x8x2xf32>) -> tensor<64x64x2xf32>
  %p5 = nn.matmul %x, %bat : (tensor<64x8xf32>, tensor<64x8x2xf32>) -> tensor<64x64x2xf32>
  // CHECK-NOT: nn.concat
  return %used, %p2, %p3, %p4, %p5 : tensor<64x2xf32>, tensor<64x3xf32>, tensor<64x2xf32>, tensor<64x2xf32>, tensor<64x64x2xf32>
}

// -----

// Weight gradients x^T . dz_i of one stream's coefficient sets, as a
// backward computes them: each dz_i after the previous product, every result
// used only at the end. They become one product where the last one was,
// with the input gradients side by side.
// CHECK-LABEL: func.func @weight_gradients
// CHECK-SAME: (%[[XT:.*]]: tensor<64x16xf32>, %[[G1:.*]]: tensor<16x4xf32>, %[[G2:.*]]: tensor<16x4xf32>, %[[G3:.*]]: tensor<16x16xf32>)
func.func @weight_gradients(%xt: tensor<64x16xf32>, %g1: tensor<16x4xf32>, %g2: tensor<16x4xf32>, %g3: tensor<16x16xf32>)
    -> (tensor<64x4xf32>, tensor<64x4xf32>, tensor<64x16xf32>) {
  // CHECK: %[[D1:.*]] = nn.tanh %[[G1]]
  // CHECK-NEXT: %[[D2:.*]] = nn.tanh %[[G2]]
  // CHECK-NEXT: %[[D3:.*]] = nn.tanh %[[G3]]
  // CHECK-NEXT: %[[D:.*]] = nn.concat %[[D1]], %[[D2]], %[[D3]] {axis = 1 : i64} : (tensor<16x4xf32>, tensor<16x4xf32>, tensor<16x16xf32>) -> tensor<16x24xf32>
  // CHECK-NEXT: %[[P:.*]] = nn.matmul %[[XT]], %[[D]] : (tensor<64x16xf32>, tensor<16x24xf32>) -> tensor<64x24xf32>
  // CHECK-NEXT: %[[S:.*]]:3 = nn.split %[[P]] {axis = 1 : i64, sizes = array<i64: 4, 4, 16>}
  // CHECK-NOT: nn.matmul
  // CHECK: return %[[S]]#0, %[[S]]#1, %[[S]]#2
  %d1 = nn.tanh %g1 : tensor<16x4xf32>
  %w1 = nn.matmul %xt, %d1 : (tensor<64x16xf32>, tensor<16x4xf32>) -> tensor<64x4xf32>
  %d2 = nn.tanh %g2 : tensor<16x4xf32>
  %w2 = nn.matmul %xt, %d2 : (tensor<64x16xf32>, tensor<16x4xf32>) -> tensor<64x4xf32>
  %d3 = nn.tanh %g3 : tensor<16x16xf32>
  %w3 = nn.matmul %xt, %d3 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
  return %w1, %w2, %w3 : tensor<64x4xf32>, tensor<64x4xf32>, tensor<64x16xf32>
}

// -----

// A late product whose earlier sibling's result is used before it (here by
// the late product's own right operand) stays apart.
// CHECK-LABEL: func.func @used_before_the_last
func.func @used_before_the_last(%xt: tensor<64x16xf32>, %g1: tensor<16x8xf32>, %m: tensor<16x64xf32>)
    -> (tensor<64x8xf32>, tensor<64x8xf32>) {
  // CHECK-NOT: nn.concat
  // CHECK-COUNT-3: nn.matmul
  // CHECK-NOT: nn.concat
  %d1 = nn.tanh %g1 : tensor<16x8xf32>
  %w1 = nn.matmul %xt, %d1 : (tensor<64x16xf32>, tensor<16x8xf32>) -> tensor<64x8xf32>
  %d2 = nn.matmul %m, %w1 : (tensor<16x64xf32>, tensor<64x8xf32>) -> tensor<16x8xf32>
  %w2 = nn.matmul %xt, %d2 : (tensor<64x16xf32>, tensor<16x8xf32>) -> tensor<64x8xf32>
  return %w1, %w2 : tensor<64x8xf32>, tensor<64x8xf32>
}

// -----

// Where the copy of the right operands would cost more than the reads it
// saves (q and k projections [8, 8] of two tokens: 128 copied against 16
// saved) and with a dynamic left operand, the products stay apart.
// CHECK-LABEL: func.func @not_worth_it
func.func @not_worth_it(%x: tensor<2x8xf32>, %q: tensor<8x8xf32>, %k: tensor<8x8xf32>,
                        %d: tensor<?x8xf32>, %a: tensor<8x2xf32>, %b: tensor<8x2xf32>)
    -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<?x2xf32>, tensor<?x2xf32>) {
  // CHECK-NOT: nn.concat
  // CHECK-COUNT-4: nn.matmul
  %pq = nn.matmul %x, %q : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %pk = nn.matmul %x, %k : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %p1 = nn.matmul %d, %a : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32>
  %p2 = nn.matmul %d, %b : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32>
  return %pq, %pk, %p1, %p2 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<?x2xf32>, tensor<?x2xf32>
}
