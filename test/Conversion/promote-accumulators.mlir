// RUN: rewire-opt %s --split-input-file -allow-unregistered-dialect \
// RUN:   --pass-pipeline='builtin.module(func.func(rewire-promote-accumulators))' | FileCheck %s

// A row sum: the element is loaded once, carried, stored once; the
// accumulation may be reassociated.
// CHECK-LABEL: func.func @row_sum
// CHECK:         scf.for %[[I:.*]] =
// CHECK-NEXT:      %[[A0:.*]] = memref.load %{{.*}}[%[[I]]]
// CHECK-NEXT:      %[[R:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args(%[[A:.*]] = %[[A0]]) -> (f32)
// CHECK-NEXT:        %[[X:.*]] = memref.load %{{.*}}[%[[I]], %[[K]]]
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[A]], %[[X]] fastmath<reassoc> : f32
// CHECK-NEXT:        scf.yield %[[S]] : f32
// CHECK:           memref.store %[[R]], %{{.*}}[%[[I]]]
func.func @row_sum(%in: memref<512x256xf32>, %out: memref<512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c512 step %c1 {
    scf.for %k = %c0 to %c256 step %c1 {
      %a = memref.load %out[%i] : memref<512xf32>
      %x = memref.load %in[%i, %k] : memref<512x256xf32>
      %s = arith.addf %a, %x : f32
      memref.store %s, %out[%i] : memref<512xf32>
    }
  }
  return
}

// -----

// A sum over two loops (a column sum into a scalar): promoted through both.
// Products summed (x * y + acc) are reassociated too; a max is carried but
// not reassociated.
// CHECK-LABEL: func.func @two_levels
// CHECK:         %[[S0:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK-NEXT:    %[[M0:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK-NEXT:    %[[R:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %[[S0]], %{{.*}} = %[[M0]]) -> (f32, f32)
// CHECK:           scf.for {{.*}} -> (f32, f32)
// CHECK:             arith.mulf
// CHECK-NEXT:        arith.addf %{{.*}}, %{{.*}} fastmath<reassoc>
// CHECK-NEXT:        arith.maximumf
// CHECK-NOT:         fastmath
// CHECK:         memref.store %[[R]]#0
// CHECK-NEXT:    memref.store %[[R]]#1
func.func @two_levels(%in: memref<8x16xf32>, %sum: memref<f32>, %max: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %k = %c0 to %c16 step %c1 {
      %x = memref.load %in[%i, %k] : memref<8x16xf32>
      %a = memref.load %sum[] : memref<f32>
      %m = memref.load %max[] : memref<f32>
      %p = arith.mulf %x, %x : f32
      %s = arith.addf %p, %a : f32
      %n = arith.maximumf %m, %x : f32
      memref.store %s, %sum[] : memref<f32>
      memref.store %n, %max[] : memref<f32>
    }
  }
  return
}

// -----

// Not promoted: the indices vary with the loop; the store comes first; the
// buffer is read again (through a view); a call may touch memory.
// CHECK-LABEL: func.func @kept
// CHECK-NOT:     iter_args
// CHECK:         return
func.func @kept(%in: memref<16xf32>, %out: memref<16xf32>, %acc: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  scf.for %k = %c0 to %c16 step %c1 {
    %a = memref.load %out[%k] : memref<16xf32>
    %s = arith.addf %a, %f : f32
    memref.store %s, %out[%k] : memref<16xf32>
  }
  scf.for %k = %c0 to %c16 step %c1 {
    memref.store %f, %acc[%c0] : memref<4xf32>
    %a = memref.load %acc[%c0] : memref<4xf32>
    memref.store %a, %in[%k] : memref<16xf32>
  }
  %view = memref.subview %acc[1] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 1>>
  scf.for %k = %c0 to %c16 step %c1 {
    %a = memref.load %acc[%c1] : memref<4xf32>
    %b = memref.load %view[%c0] : memref<2xf32, strided<[1], offset: 1>>
    %s = arith.addf %a, %b : f32
    memref.store %s, %acc[%c1] : memref<4xf32>
  }
  scf.for %k = %c0 to %c16 step %c1 {
    %a = memref.load %acc[%c0] : memref<4xf32>
    "test.opaque"() : () -> ()
    %s = arith.addf %a, %f : f32
    memref.store %s, %acc[%c0] : memref<4xf32>
  }
  return
}
