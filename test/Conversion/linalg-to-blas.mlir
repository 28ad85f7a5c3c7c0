// RUN: rewire-opt %s --split-input-file --rewire-linalg-to-blas --canonicalize | FileCheck %s

// A plain 2-D matmul after a zero fill: one call, beta = 0, the fill gone.
// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  // CHECK-NOT: linalg.fill
  linalg.fill ins(%zero : f32) outs(%c : memref<8x4xf32>)
  // CHECK-DAG: %[[F:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
  // CHECK-DAG: %[[M:.*]] = arith.constant 8 : index
  // CHECK-DAG: %[[N:.*]] = arith.constant 4 : index
  // CHECK-DAG: %[[K:.*]] = arith.constant 16 : index
  // CHECK: call @rewire_sgemm(%[[F]], %[[F]], %[[M]], %[[N]], %[[K]], {{.*}}, %[[BETA]])
  // CHECK-NOT: linalg.matmul
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  return
}
// CHECK: func.func private @rewire_sgemm(index, index, index, index, index, index, index, index, index, index, index, index, index, index, f32)

// -----

// A batched generic with a transposed right operand (attention's Q K^T):
// a loop over the batch, transB = 1, beta = 1 (no fill before it).
#lhs = affine_map<(b, m, n, k) -> (b, m, k)>
#rhs = affine_map<(b, m, n, k) -> (b, n, k)>
#out = affine_map<(b, m, n, k) -> (b, m, n)>
// CHECK-LABEL: func.func @batched
func.func @batched(%q: memref<3x8x16xf32>, %k: memref<3x8x16xf32>, %s: memref<3x8x8xf32>) {
  // CHECK-DAG: %[[ONE_F:.*]] = arith.constant 1.000000e+00 : f32
  // CHECK-DAG: %[[T:.*]] = arith.constant 1 : index
  // CHECK-DAG: %[[N:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[B:.*]] = arith.constant 3 : index
  // CHECK: scf.for %{{.*}} = %[[N]] to %[[B]] step %[[T]]
  // CHECK: call @rewire_sgemm(%[[N]], %[[T]], {{.*}}, %[[ONE_F]])
  linalg.generic {indexing_maps = [#lhs, #rhs, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<3x8x16xf32>, memref<3x8x16xf32>) outs(%s : memref<3x8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The right operand broadcast over the batch (a weight) and dense left and
// result operands: the batch stacks into the rows, one call with
// M = 3 x 8 = 24 and no loop.
#lhs = affine_map<(b, m, n, k) -> (b, m, k)>
#rhs = affine_map<(b, m, n, k) -> (0, n, k)>
#out = affine_map<(b, m, n, k) -> (b, m, n)>
// CHECK-LABEL: func.func @stacked
func.func @stacked(%x: memref<3x8x16xf32>, %w: memref<1x8x16xf32>, %y: memref<3x8x8xf32>) {
  // CHECK-DAG: %[[T:.*]] = arith.constant 1 : index
  // CHECK-DAG: %[[N:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[M:.*]] = arith.constant 24 : index
  // CHECK-NOT: scf.for
  // CHECK: call @rewire_sgemm(%[[N]], %[[T]], %[[M]],
  linalg.generic {indexing_maps = [#lhs, #rhs, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x8x16xf32>, memref<1x8x16xf32>) outs(%y : memref<3x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Rows that do not stack (the left operand a strided view, its batch
// stride not 8 rows): one call per batch.
#lhs = affine_map<(b, m, n, k) -> (b, m, k)>
#rhs = affine_map<(b, m, n, k) -> (k, n)>
#out = affine_map<(b, m, n, k) -> (b, m, n)>
// CHECK-LABEL: func.func @not_stacked
func.func @not_stacked(%x: memref<3x8x16xf32, strided<[256, 16, 1]>>, %w: memref<16x8xf32>, %y: memref<3x8x8xf32>) {
  // CHECK: scf.for
  // CHECK: call @rewire_sgemm
  linalg.generic {indexing_maps = [#lhs, #rhs, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<3x8x16xf32, strided<[256, 16, 1]>>, memref<16x8xf32>) outs(%y : memref<3x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Not a GEMM BLAS can take: a strided innermost dimension stays a linalg op,
// and so does a non-f32 contraction.
// CHECK-LABEL: func.func @left_alone
func.func @left_alone(%a: memref<8x16xf32, strided<[32, 2]>>, %b: memref<16x4xf32>, %c: memref<8x4xf32>,
                      %ai: memref<8x16xf64>, %bi: memref<16x4xf64>, %ci: memref<8x4xf64>) {
  // CHECK-NOT: rewire_sgemm
  // CHECK: linalg.matmul
  linalg.matmul ins(%a, %b : memref<8x16xf32, strided<[32, 2]>>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  // CHECK: linalg.matmul
  linalg.matmul ins(%ai, %bi : memref<8x16xf64>, memref<16x4xf64>) outs(%ci : memref<8x4xf64>)
  return
}

// -----

// Many tiny products, one per token (a hyper-connection's [n, n] . [n, d]
// mixing): a call each would cost more than the arithmetic, so they stay
// loops.
#lhs = affine_map<(b, t, m, n, k) -> (b, t, m, k)>
#rhs = affine_map<(b, t, m, n, k) -> (b, t, k, n)>
#out = affine_map<(b, t, m, n, k) -> (b, t, m, n)>
// CHECK-LABEL: func.func @many_tiny
func.func @many_tiny(%r: memref<8x16x4x4xf32>, %x: memref<8x16x4x32xf32>, %y: memref<8x16x4x32xf32>) {
  // CHECK-NOT: rewire_sgemm
  // CHECK: linalg.generic
  linalg.generic {indexing_maps = [#lhs, #rhs, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%r, %x : memref<8x16x4x4xf32>, memref<8x16x4x32xf32>) outs(%y : memref<8x16x4x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The same small per-token products against one shared weight (the
// projection [B, T, n, d] . [d, k] of hyper-connection coefficients) stack
// into a single [B x T x n, d] . [d, k] call: not tiny.
#lhs = affine_map<(b, t, m, n, k) -> (b, t, m, k)>
#rhs = affine_map<(b, t, m, n, k) -> (k, n)>
#out = affine_map<(b, t, m, n, k) -> (b, t, m, n)>
// CHECK-LABEL: func.func @many_tiny_stacked
func.func @many_tiny_stacked(%x: memref<8x16x4x32xf32>, %w: memref<32x4xf32>, %y: memref<8x16x4x4xf32>) {
  // CHECK-DAG: %[[M:.*]] = arith.constant 512 : index
  // CHECK-NOT: scf.for
  // CHECK: call @rewire_sgemm(%{{.*}}, %{{.*}}, %[[M]],
  linalg.generic {indexing_maps = [#lhs, #rhs, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<8x16x4x32xf32>, memref<32x4xf32>) outs(%y : memref<8x16x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
