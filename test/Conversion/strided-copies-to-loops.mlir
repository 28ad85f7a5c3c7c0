// RUN: rewire-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(rewire-strided-copies-to-loops))' | FileCheck %s
// RUN: rewire-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(rewire-strided-copies-to-loops,convert-linalg-to-loops),finalize-memref-to-llvm)' \
// RUN:   | FileCheck %s --check-prefix=LLVM

// A weight written into 4 of a concatenation's 24 columns (a view with
// gaps): loops, not the runtime's memrefCopy.
// CHECK-LABEL: func.func @into_columns
// CHECK-SAME:    (%[[W:.*]]: memref<3072x4xf32>, %[[C:.*]]: memref<3072x24xf32>)
// CHECK:         %[[V:.*]] = memref.subview %[[C]][0, 16] [3072, 4] [1, 1]
// CHECK:         linalg.copy ins(%[[W]] : memref<3072x4xf32>) outs(%[[V]] : memref<3072x4xf32, strided<[24, 1], offset: 16>>)
// CHECK-NOT:     memref.copy
// LLVM-LABEL: func.func @into_columns
// LLVM-NOT:     memrefCopy
func.func @into_columns(%w: memref<3072x4xf32>, %c: memref<3072x24xf32>) {
  %v = memref.subview %c[0, 16] [3072, 4] [1, 1]
      : memref<3072x24xf32> to memref<3072x4xf32, strided<[24, 1], offset: 16>>
  memref.copy %w, %v : memref<3072x4xf32> to memref<3072x4xf32, strided<[24, 1], offset: 16>>
  return
}

// -----

// Columns read out of a wider buffer with a dynamic offset: the source has
// the gaps.
// CHECK-LABEL: func.func @from_columns
// CHECK:         linalg.copy ins(%{{.*}} : memref<8x3xf32, strided<[5, 1], offset: ?>>) outs(%{{.*}} : memref<8x3xf32>)
// CHECK-NOT:     memref.copy
func.func @from_columns(%s: memref<8x3xf32, strided<[5, 1], offset: ?>>, %d: memref<8x3xf32>) {
  memref.copy %s, %d : memref<8x3xf32, strided<[5, 1], offset: ?>> to memref<8x3xf32>
  return
}

// -----

// One contiguous block each side (identity layouts; whole rows of a larger
// buffer at an offset): left for the lowering's single memcpy.
// CHECK-LABEL: func.func @blocks
// CHECK-COUNT-2: memref.copy
// CHECK-NOT:     linalg.copy
// LLVM-LABEL: func.func @blocks
// LLVM-NOT:     memrefCopy
// LLVM:         "llvm.intr.memcpy"
func.func @blocks(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<16x8xf32>) {
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  %rows = memref.subview %c[4, 0] [4, 8] [1, 1]
      : memref<16x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  memref.copy %a, %rows : memref<4x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 32>>
  return
}

// -----

// Unranked copies keep the runtime's call: loops need a rank.
// CHECK-LABEL: func.func @unranked
// CHECK:         memref.copy %{{.*}}, %{{.*}} : memref<*xf32> to memref<*xf32>
// CHECK-NOT:     linalg.copy
func.func @unranked(%a: memref<*xf32>, %b: memref<*xf32>) {
  memref.copy %a, %b : memref<*xf32> to memref<*xf32>
  return
}
