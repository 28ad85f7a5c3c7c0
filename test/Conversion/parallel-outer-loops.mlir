// RUN: rewire-opt %s --split-input-file --rewire-parallel-outer-loops | FileCheck %s

// An elementwise nest: the outer dimensions stay parallel, the innermost
// becomes a loop (it vectorizes; OpenMP's collapsed index would not).
// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: memref<4x512x768xf32>, %b: memref<4x512x768xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c512 = arith.constant 512 : index
  %c768 = arith.constant 768 : index
  // CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}})
  // CHECK-NEXT: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
  // CHECK-NEXT: memref.load %{{.*}}[%[[I]], %[[J]], %[[K]]]
  // CHECK: memref.store
  // CHECK-NEXT: }
  // CHECK-NEXT: scf.reduce
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c4, %c512, %c768) step (%c1, %c1, %c1) {
    %x = memref.load %a[%i, %j, %k] : memref<4x512x768xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %b[%i, %j, %k] : memref<4x512x768xf32>
    scf.reduce
  }
  return
}

// -----

// A unit outer dimension (batch 1) does not count: the rows are shared
// among the threads, the columns stay a loop.
// CHECK-LABEL: func.func @unit_batch
func.func @unit_batch(%a: memref<1x512x768xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c768 = arith.constant 768 : index
  %f = arith.constant 1.0 : f32
  // CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%{{.*}})
  // CHECK: scf.for %[[I:.*]] =
  // CHECK: scf.for %[[K:.*]] =
  // CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]], %[[J]], %[[K]]]
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c1, %c512, %c768) step (%c1, %c1, %c1) {
    memref.store %f, %a[%i, %j, %k] : memref<1x512x768xf32>
    scf.reduce
  }
  return
}

// -----

// A row reduction (softmax's max): the rows in parallel, the reduction
// loop inside untouched; a single parallel dimension stays as it is.
// CHECK-LABEL: func.func @rows
func.func @rows(%a: memref<4096x512xf32>, %m: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c4096 = arith.constant 4096 : index
  // CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}})
  // CHECK-NEXT: scf.for
  // CHECK-NOT: scf.parallel
  scf.parallel (%i) = (%c0) to (%c4096) step (%c1) {
    scf.for %k = %c0 to %c512 step %c1 {
      %x = memref.load %a[%i, %k] : memref<4096x512xf32>
      %y = memref.load %m[%i] : memref<4096xf32>
      %z = arith.maximumf %x, %y : f32
      memref.store %z, %m[%i] : memref<4096xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Under min-iterations (32768) in all, counting the loops inside: sequential.
// CHECK-LABEL: func.func @small
func.func @small(%a: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  // CHECK-NOT: scf.parallel
  // CHECK: scf.for
  // CHECK-NEXT: scf.for
  // CHECK-NEXT: memref.store
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
    memref.store %f, %a[%i, %j] : memref<16x64xf32>
    scf.reduce
  }
  return
}

// -----

// Dynamic bounds count as many iterations; a parallel loop with a reduction
// (results) is left to scf-to-openmp as it is.
// CHECK-LABEL: func.func @dynamic_and_reduce
func.func @dynamic_and_reduce(%a: memref<?x?xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %f = arith.constant 1.0 : f32
  // CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}})
  // CHECK-NEXT: scf.for
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    memref.store %f, %a[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  // CHECK: scf.parallel (%{{.*}}, %{{.*}}) = {{.*}} init
  %s = scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) init (%zero) -> f32 {
    %x = memref.load %a[%i, %j] : memref<?x?xf32>
    scf.reduce(%x : f32) {
    ^bb0(%l: f32, %r: f32):
      %t = arith.addf %l, %r : f32
      scf.reduce.return %t : f32
    }
  }
  return %s : f32
}

// -----

// A parallel loop nested in another (hyper_read: tokens parallel, the
// stream reduced, the features parallel) runs sequentially inside the
// outer one, and counts toward its iterations: one region for the whole
// nest, never one per outer iteration.
// CHECK-LABEL: func.func @nested
func.func @nested(%x: memref<4x128x4x256xf32>, %w: memref<4x128x4xf32>, %y: memref<4x128x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  // CHECK: scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%{{.*}})
  // CHECK-NEXT: scf.for %[[T:.*]] =
  // CHECK-NEXT: scf.for %[[I:.*]] =
  // CHECK-NEXT: scf.for %[[D:.*]] =
  // CHECK-NOT: scf.parallel
  // CHECK: memref.store %{{.*}}, %{{.*}}[%[[B]], %[[T]], %[[D]]]
  scf.parallel (%b, %t) = (%c0, %c0) to (%c4, %c128) step (%c1, %c1) {
    scf.for %i = %c0 to %c4 step %c1 {
      scf.parallel (%d) = (%c0) to (%c256) step (%c1) {
        %a = memref.load %x[%b, %t, %i, %d] : memref<4x128x4x256xf32>
        %s = memref.load %w[%b, %t, %i] : memref<4x128x4xf32>
        %o = memref.load %y[%b, %t, %d] : memref<4x128x256xf32>
        %p = arith.mulf %a, %s : f32
        %q = arith.addf %o, %p : f32
        memref.store %q, %y[%b, %t, %d] : memref<4x128x256xf32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// -----

// Nested in a small nest: all sequential, the inner region too.
// CHECK-LABEL: func.func @nested_small
func.func @nested_small(%y: memref<2x3x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  // CHECK-NOT: scf.parallel
  // CHECK: memref.store
  scf.parallel (%b) = (%c0) to (%c2) step (%c1) {
    scf.for %i = %c0 to %c3 step %c1 {
      scf.parallel (%d) = (%c0) to (%c8) step (%c1) {
        memref.store %f, %y[%b, %i, %d] : memref<2x3x8xf32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// -----

// A column sum (a bias gradient: [4, 128, 160] summed over the first two
// dimensions) lowers to a parallel loop inside the sequential ones: it
// moves out of them in chunks of 64 columns (3 chunks, the last one 32
// wide), each thread summing its columns of every row in the same order.
// CHECK-LABEL: func.func @column_sum
func.func @column_sum(%x: memref<4x128x160xf32>, %y: memref<160xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %c160 = arith.constant 160 : index
  // CHECK: %[[N:.*]] = arith.constant 3 : index
  // CHECK: scf.parallel (%[[C:.*]]) = (%{{.*}}) to (%[[N]]) step
  // CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
  // CHECK-NEXT: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
  // CHECK: %[[LO:.*]] = arith.addi %{{.*}}, %{{.*}}
  // CHECK: %[[HI:.*]] = arith.minsi
  // CHECK: scf.for %[[D:.*]] = %[[LO]] to %[[HI]] step
  // CHECK: memref.load %{{.*}}[%[[B]], %[[T]], %[[D]]]
  // CHECK: memref.store %{{.*}}, %{{.*}}[%[[D]]]
  // CHECK-NOT: scf.parallel
  scf.for %b = %c0 to %c4 step %c1 {
    scf.for %t = %c0 to %c128 step %c1 {
      scf.parallel (%d) = (%c0) to (%c160) step (%c1) {
        %a = memref.load %x[%b, %t, %d] : memref<4x128x160xf32>
        %o = memref.load %y[%d] : memref<160xf32>
        %s = arith.addf %o, %a : f32
        memref.store %s, %y[%d] : memref<160xf32>
        scf.reduce
      }
    }
  }
  return
}

// -----

// Too few columns for two chunks: the nest stays as it was, and being small
// runs sequentially.
// CHECK-LABEL: func.func @column_sum_narrow
func.func @column_sum_narrow(%x: memref<512x64x100xf32>, %y: memref<100xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c100 = arith.constant 100 : index
  %c512 = arith.constant 512 : index
  // CHECK-NOT: scf.parallel
  // CHECK: scf.for
  // CHECK-NEXT: scf.for
  // CHECK-NEXT: scf.for
  scf.for %b = %c0 to %c512 step %c1 {
    scf.for %t = %c0 to %c64 step %c1 {
      scf.parallel (%d) = (%c0) to (%c100) step (%c1) {
        %a = memref.load %x[%b, %t, %d] : memref<512x64x100xf32>
        %o = memref.load %y[%d] : memref<100xf32>
        %s = arith.addf %o, %a : f32
        memref.store %s, %y[%d] : memref<100xf32>
        scf.reduce
      }
    }
  }
  return
}
