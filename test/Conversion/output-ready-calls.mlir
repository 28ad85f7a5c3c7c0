// RUN: rewire-opt %s --rewire-output-ready-calls=functions=grad_step --split-input-file --verify-diagnostics | FileCheck %s

// Each output's call follows the last op that touches it: a write, a later
// read, a write through a view inside a loop, an address taken and used
// later; outputs finished by one op are told in output order; an output
// nothing touches gets no call. The order is recorded on the entry point.

// CHECK: rewire.entry_points = [{input_checks = []{{.*}}name = "grad_step"{{.*}}ready_order = array<i64: 1, 0, 3, 4, 5, 2>}]
// CHECK-LABEL: func.func @grad_step
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>, %[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>, %[[C:.*]]: memref<2x2xf32>, %[[D:.*]]: memref<4xf32>, %[[E:.*]]: memref<4xf32>, %[[F:.*]]: memref<4xf32>, %{{.*}}: memref<4xf32>)
// CHECK: memref.copy %[[X]], %[[B]]
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @rewire_output_ready(%[[C1]])
// CHECK: memref.copy %[[X]], %[[A]]
// CHECK: linalg.add ins(%[[A]], %[[X]] : {{.*}}) outs(%[[D]] : {{.*}})
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @rewire_output_ready(%[[C0]])
// CHECK: scf.for
// CHECK: memref.store
// CHECK: }
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[D]]
// CHECK: call @sink(%[[PTR]])
// CHECK-NEXT: %[[C3:.*]] = arith.constant 3 : i64
// CHECK-NEXT: call @rewire_output_ready(%[[C3]])
// CHECK: linalg.add ins(%[[X]], %[[X]] : {{.*}}) outs(%[[E]] : {{.*}})
// CHECK: memref.copy %[[E]], %[[F]]
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : i64
// CHECK-NEXT: call @rewire_output_ready(%[[C4]])
// CHECK-NEXT: %[[C5:.*]] = arith.constant 5 : i64
// CHECK-NEXT: call @rewire_output_ready(%[[C5]])
// CHECK: memref.collapse_shape %[[C]]
// CHECK: linalg.fill
// CHECK-NEXT: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-NEXT: call @rewire_output_ready(%[[C2]])
// CHECK-NOT: arith.constant 6 : i64
// CHECK: return
module attributes {rewire.entry_points = [{name = "grad_step",
    inputs = [{name = "x", type = tensor<4xf32>}], parameters = [],
    outputs = [{name = "grad.a", type = tensor<4xf32>}, {name = "grad.b", type = tensor<4xf32>},
               {name = "grad.c", type = tensor<2x2xf32>}, {name = "grad.d", type = tensor<4xf32>},
               {name = "grad.e", type = tensor<4xf32>}, {name = "grad.f", type = tensor<4xf32>},
               {name = "grad.g", type = tensor<4xf32>}],
    input_checks = []}]} {
  func.func private @sink(index)
  func.func @grad_step(%x: memref<4xf32>, %a: memref<4xf32>, %b: memref<4xf32>,
                       %c: memref<2x2xf32>, %d: memref<4xf32>, %e: memref<4xf32>,
                       %f: memref<4xf32>, %g: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.0 : f32
    memref.copy %x, %b : memref<4xf32> to memref<4xf32>
    memref.copy %x, %a : memref<4xf32> to memref<4xf32>
    // %a is read here: its call comes after this op, not after its write.
    linalg.add ins(%a, %x : memref<4xf32>, memref<4xf32>) outs(%d : memref<4xf32>)
    %v = memref.subview %c[0, 0] [1, 2] [1, 1] : memref<2x2xf32> to memref<1x2xf32, strided<[2, 1]>>
    scf.for %i = %c0 to %c2 step %c1 {
      memref.store %zero, %v[%c0, %i] : memref<1x2xf32, strided<[2, 1]>>
    }
    %p = memref.extract_aligned_pointer_as_index %d : memref<4xf32> -> index
    func.call @sink(%p) : (index) -> ()
    // Two outputs, one op: %e is read by the copy that writes %f.
    linalg.add ins(%x, %x : memref<4xf32>, memref<4xf32>) outs(%e : memref<4xf32>)
    memref.copy %e, %f : memref<4xf32> to memref<4xf32>
    %flat = memref.collapse_shape %c [[0, 1]] : memref<2x2xf32> into memref<4xf32>
    linalg.fill ins(%zero : f32) outs(%flat : memref<4xf32>)
    return
  }
  // Not named in `functions`: no calls.
  // CHECK-LABEL: func.func @apply_step
  // CHECK-NOT: rewire_output_ready
  // CHECK: return
  // CHECK: func.func private @rewire_output_ready(i64)
  func.func @apply_step(%x: memref<4xf32>, %y: memref<4xf32>) {
    memref.copy %x, %y : memref<4xf32> to memref<4xf32>
    return
  }
}

// -----

// Before the results became out-parameters: refused with what to do.
module attributes {rewire.entry_points = [{name = "grad_step",
    inputs = [{name = "x", type = tensor<4xf32>}], parameters = [],
    outputs = [{name = "grad.a", type = tensor<4xf32>}], input_checks = []}]} {
  // expected-error @below {{'grad_step' still returns results or has fewer arguments than its 1 outputs; run it after buffer-results-to-out-params}}
  func.func @grad_step(%x: memref<4xf32>) -> memref<4xf32> {
    return %x : memref<4xf32>
  }
}

// -----

// No entry point record at all.
// expected-error @below {{the module has no entry point record; run rewire-record-entry-points first}}
module {
  func.func @grad_step(%x: memref<4xf32>) {
    return
  }
}
