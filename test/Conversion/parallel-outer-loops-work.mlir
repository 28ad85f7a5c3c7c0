// RUN: rewire-opt %s --split-input-file --rewire-parallel-outer-loops=min-iterations=64 | FileCheck %s

// A nest's work counts its body's operations beyond a typical body's 16:
// 4 x 8 = 32 iterations of 32 operations are 64 iterations' work, enough
// for a parallel region at min-iterations = 64 (nn.sinkhorn's gradient: 512
// matrices of ~4000 operations each ran on one thread while the other
// waited).
// CHECK-LABEL: func.func @long_body
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}})
// CHECK-NEXT: scf.for
func.func @long_body(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<4x8xf32>
    %v0 = arith.mulf %x, %x : f32
    %v1 = arith.mulf %v0, %x : f32
    %v2 = arith.mulf %v1, %x : f32
    %v3 = arith.mulf %v2, %x : f32
    %v4 = arith.mulf %v3, %x : f32
    %v5 = arith.mulf %v4, %x : f32
    %v6 = arith.mulf %v5, %x : f32
    %v7 = arith.mulf %v6, %x : f32
    %v8 = arith.mulf %v7, %x : f32
    %v9 = arith.mulf %v8, %x : f32
    %v10 = arith.mulf %v9, %x : f32
    %v11 = arith.mulf %v10, %x : f32
    %v12 = arith.mulf %v11, %x : f32
    %v13 = arith.mulf %v12, %x : f32
    %v14 = arith.mulf %v13, %x : f32
    %v15 = arith.mulf %v14, %x : f32
    %v16 = arith.mulf %v15, %x : f32
    %v17 = arith.mulf %v16, %x : f32
    %v18 = arith.mulf %v17, %x : f32
    %v19 = arith.mulf %v18, %x : f32
    %v20 = arith.mulf %v19, %x : f32
    %v21 = arith.mulf %v20, %x : f32
    %v22 = arith.mulf %v21, %x : f32
    %v23 = arith.mulf %v22, %x : f32
    %v24 = arith.mulf %v23, %x : f32
    %v25 = arith.mulf %v24, %x : f32
    %v26 = arith.mulf %v25, %x : f32
    %v27 = arith.mulf %v26, %x : f32
    %v28 = arith.mulf %v27, %x : f32
    %v29 = arith.mulf %v28, %x : f32
    memref.store %v29, %b[%i, %j] : memref<4x8xf32>
    scf.reduce
  }
  return
}

// -----

// The same iterations with a body of 14 operations: 32 iterations' work,
// under min-iterations: sequential.
// CHECK-LABEL: func.func @short_body
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK-NEXT: scf.for
func.func @short_body(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<4x8xf32>
    %v0 = arith.mulf %x, %x : f32
    %v1 = arith.mulf %v0, %x : f32
    %v2 = arith.mulf %v1, %x : f32
    %v3 = arith.mulf %v2, %x : f32
    %v4 = arith.mulf %v3, %x : f32
    %v5 = arith.mulf %v4, %x : f32
    %v6 = arith.mulf %v5, %x : f32
    %v7 = arith.mulf %v6, %x : f32
    %v8 = arith.mulf %v7, %x : f32
    %v9 = arith.mulf %v8, %x : f32
    %v10 = arith.mulf %v9, %x : f32
    %v11 = arith.mulf %v10, %x : f32
    memref.store %v11, %b[%i, %j] : memref<4x8xf32>
    scf.reduce
  }
  return
}
