// RUN: rewire-opt %s --rewire-outline-loop-nests --split-input-file | FileCheck %s

// Each top-level loop nest of a public function moves into a private
// function taking what the nest uses; constants are cloned in.
// CHECK-LABEL: func.func private @forward.loop0(
// CHECK-SAME: %[[X:.*]]: f32, %[[M:.*]]: memref<8xf32>)
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[C8]]
// CHECK: memref.store %[[X]], %[[M]]
// CHECK-LABEL: func.func private @forward.loop1(
// CHECK-SAME: %{{.*}}: memref<8xf32>) -> f32
// CHECK: scf.for {{.*}} iter_args
// CHECK-LABEL: func.func @forward(
// CHECK: call @forward.loop0(%arg1, %arg0) : (f32, memref<8xf32>) -> ()
// CHECK: %[[S:.*]] = call @forward.loop1(%arg0) : (memref<8xf32>) -> f32
// CHECK: return %[[S]]
func.func @forward(%m: memref<8xf32>, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %x, %m[%i] : memref<8xf32>
  }
  %s = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %m[%i] : memref<8xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  }
  return %s : f32
}

// -----

// Private functions (already outlined, runtime helpers) are left alone.
// CHECK-LABEL: func.func private @helper(
// CHECK: scf.for
// CHECK-NOT: call
func.func private @helper(%m: memref<8xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %x, %m[%i] : memref<8xf32>
  }
  return
}
