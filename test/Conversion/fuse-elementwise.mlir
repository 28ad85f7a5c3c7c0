// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(rewire-fuse-elementwise))" | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
// Bias add then tanh: one loop nest.
// CHECK-LABEL: func.func @chain
func.func @chain(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  // CHECK: linalg.generic
  // CHECK: arith.addf
  // CHECK: math.tanh
  // CHECK-NOT: linalg.generic
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<8x16xf32>, tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// An elementwise producer is never pulled into a GEMM (it would be
// recomputed for every output column, and BLAS could no longer take it).
// CHECK-LABEL: func.func @not_into_gemm
func.func @not_into_gemm(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  // CHECK: linalg.generic
  // CHECK: math.tanh
  // CHECK: linalg.generic
  // CHECK-NOT: math.tanh
  // CHECK: arith.mulf
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>,
                                        affine_map<(i, j, k) -> (i, j)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%0, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%f : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %m : tensor<8x4xf32>
}
