// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(rewire-unroll-short-reductions))" | FileCheck %s

#a = affine_map<(b, i, d, j) -> (b, i, j)>
#h = affine_map<(b, i, d, j) -> (b, j, d)>
#o = affine_map<(b, i, d, j) -> (b, i, d)>
// A hyper stream's mix, out[b, i, d] = sum over j < 3 of a[b, i, j] * h[b, j, d],
// from a zero fill: one all-parallel op reading a and h once per term, the
// sum taken in the loop's order from the fill's scalar; the fill is gone.
// CHECK-DAG: #[[A0:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
// CHECK-DAG: #[[A1:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, 1)>
// CHECK-DAG: #[[A2:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, 2)>
// CHECK-DAG: #[[H0:.*]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG: #[[H2:.*]] = affine_map<(d0, d1, d2) -> (d0, 2, d2)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @mix
func.func @mix(%a: tensor<2x3x3xf32>, %h: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  // CHECK-NOT: linalg.fill
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3x8xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[A0]], #[[A1]], #[[A2]], #[[H0]], #{{.*}}, #[[H2]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
  // CHECK-SAME: ins(%arg0, %arg0, %arg0, %arg1, %arg1, %arg1 : {{.*}}) outs(%[[E]] : tensor<2x3x8xf32>)
  // CHECK-NEXT: ^bb0(%[[X0:.*]]: f32, %[[X1:.*]]: f32, %[[X2:.*]]: f32, %[[Y0:.*]]: f32, %[[Y1:.*]]: f32, %[[Y2:.*]]: f32, %{{.*}}: f32):
  // CHECK-NEXT: %[[P0:.*]] = arith.mulf %[[X0]], %[[Y0]]
  // CHECK-NEXT: %[[S0:.*]] = arith.addf %cst, %[[P0]]
  // CHECK-NEXT: %[[P1:.*]] = arith.mulf %[[X1]], %[[Y1]]
  // CHECK-NEXT: %[[S1:.*]] = arith.addf %[[S0]], %[[P1]]
  // CHECK-NEXT: %[[P2:.*]] = arith.mulf %[[X2]], %[[Y2]]
  // CHECK-NEXT: %[[S2:.*]] = arith.addf %[[S1]], %[[P2]]
  // CHECK-NEXT: linalg.yield %[[S2]]
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %m = linalg.generic {indexing_maps = [#a, #h, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %h : tensor<2x3x3xf32>, tensor<2x3x8xf32>) outs(%z : tensor<2x3x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x8xf32>
  return %m : tensor<2x3x8xf32>
}

// -----

#x = affine_map<(i, j) -> (i, j)>
#s = affine_map<(i, j) -> (i)>
// Accumulating into a given tensor (not a fill): it is read as an input and
// the sum starts from it; an operand that does not depend on the reduced
// dimension is read once; the reduced index becomes each term's constant.
// CHECK-LABEL: func.func @onto_init
func.func @onto_init(%x: tensor<16x2xf32>, %w: tensor<16xf32>, %init: tensor<16xf32>) -> tensor<16xf32> {
  // CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]
  // CHECK-SAME: ins(%arg0, %arg0, %arg1, %arg2 : tensor<16x2xf32>, tensor<16x2xf32>, tensor<16xf32>, tensor<16xf32>) outs(%arg2 : tensor<16xf32>)
  // CHECK-NEXT: ^bb0(%[[X0:.*]]: f32, %[[X1:.*]]: f32, %[[W:.*]]: f32, %[[I:.*]]: f32, %{{.*}}: f32):
  // CHECK: %[[K0:.*]] = arith.constant 0 : index
  // CHECK: arith.index_cast %[[K0]]
  // CHECK: %[[K1:.*]] = arith.constant 1 : index
  // CHECK: arith.index_cast %[[K1]]
  // CHECK-NOT: linalg.index
  %r = linalg.generic {indexing_maps = [#x, #s, #s], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : tensor<16x2xf32>, tensor<16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %jf = arith.sitofp %ji : i32 to f32
    %p = arith.mulf %a, %b : f32
    %q = arith.mulf %p, %jf : f32
    %s = arith.addf %acc, %q : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

#x = affine_map<(i, j) -> (i, j)>
#s = affine_map<(i, j) -> (i)>
// Nine terms or more, or two reduced dimensions, stay reductions.
// CHECK-LABEL: func.func @long_or_two
func.func @long_or_two(%x: tensor<16x9xf32>, %y: tensor<4x4x4xf32>, %i1: tensor<16xf32>, %i2: tensor<4xf32>) -> (tensor<16xf32>, tensor<4xf32>) {
  // CHECK: iterator_types = ["parallel", "reduction"]
  // CHECK: iterator_types = ["parallel", "reduction", "reduction"]
  %r = linalg.generic {indexing_maps = [#x, #s], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x9xf32>) outs(%i1 : tensor<16xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i)>], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%y : tensor<4x4x4xf32>) outs(%i2 : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r, %t : tensor<16xf32>, tensor<4xf32>
}
