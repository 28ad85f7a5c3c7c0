// RUN: rewire-opt %s --split-input-file --verify-diagnostics -allow-unregistered-dialect \
// RUN:   --pass-pipeline='builtin.module(func.func(rewire-distinct-result-buffers))' | FileCheck %s
// RUN: rewire-opt %s --split-input-file --verify-diagnostics -allow-unregistered-dialect \
// RUN:   --pass-pipeline='builtin.module(func.func(rewire-distinct-result-buffers),buffer-results-to-out-params{hoist-static-allocs modify-public-functions})' \
// RUN:   | FileCheck %s --check-prefix=HOIST

// One alloc returned twice: the repeat returns a copy. With hoisting, the
// first becomes out-parameter 0 and the copy writes out-parameter 1.
// CHECK-LABEL: func.func @twice
// CHECK:         %[[A:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK:         %[[C:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK:         memref.copy %[[A]], %[[C]]
// CHECK:         return %[[A]], %[[C]]
// HOIST-LABEL: func.func @twice
// HOIST-SAME:    (%{{.*}}: memref<2x3xf32>, %[[OUT0:.*]]: memref<2x3xf32>, %[[OUT1:.*]]: memref<2x3xf32>)
// HOIST:         linalg.fill {{.*}} outs(%[[OUT0]]
// HOIST:         memref.copy %[[OUT0]], %[[OUT1]]
// HOIST-NEXT:    return
func.func @twice(%x: memref<2x3xf32>) -> (memref<2x3xf32>, memref<2x3xf32>) {
  %a = memref.alloc() : memref<2x3xf32>
  %c = arith.constant 1.0 : f32
  linalg.fill ins(%c : f32) outs(%a : memref<2x3xf32>)
  return %a, %a : memref<2x3xf32>, memref<2x3xf32>
}

// -----

// Three times, around a distinct result; the argument returned twice is
// copied too (each result is written through its own out-parameter).
// CHECK-LABEL: func.func @thrice
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>)
// CHECK:         %[[A:.*]] = memref.alloc()
// CHECK:         %[[B:.*]] = memref.alloc()
// CHECK:         %[[C1:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         memref.copy %[[A]], %[[C1]]
// CHECK:         %[[C2:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         memref.copy %[[A]], %[[C2]]
// CHECK:         %[[C3:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         memref.copy %[[X]], %[[C3]]
// CHECK:         return %[[A]], %[[B]], %[[C1]], %[[C2]], %[[X]], %[[C3]]
func.func @thrice(%x: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  "test.fill"(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  return %a, %b, %a, %a, %x, %x : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>
}

// -----

// Dynamic sizes are read off the repeated buffer; non-buffer results are
// left alone.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME:    (%[[X:.*]]: memref<?x3xf32>, %[[N:.*]]: index)
// CHECK:         %[[D:.*]] = memref.dim %[[X]], %{{.*}} : memref<?x3xf32>
// CHECK:         %[[C:.*]] = memref.alloc(%[[D]]) : memref<?x3xf32>
// CHECK:         memref.copy %[[X]], %[[C]]
// CHECK:         return %[[X]], %[[C]], %[[N]], %[[N]]
// HOIST-LABEL: func.func @dynamic
func.func @dynamic(%x: memref<?x3xf32>, %n: index) -> (memref<?x3xf32>, memref<?x3xf32>, index, index) {
  return %x, %x, %n, %n : memref<?x3xf32>, memref<?x3xf32>, index, index
}

// -----

// CHECK-LABEL: func.func @distinct
// CHECK-NOT:     memref.copy
// CHECK:         return
func.func @distinct(%x: memref<4xf32>, %y: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
  return %x, %y : memref<4xf32>, memref<4xf32>
}

// -----

func.func @strided(%x: memref<4xf32, strided<[2]>>) -> (memref<4xf32, strided<[2]>>, memref<4xf32, strided<[2]>>) {
  // expected-error @+1 {{rewire-distinct-result-buffers: result 1 repeats an earlier result of type 'memref<4xf32, strided<[2]>>', which cannot be copied (unranked or with a layout)}}
  return %x, %x : memref<4xf32, strided<[2]>>, memref<4xf32, strided<[2]>>
}
