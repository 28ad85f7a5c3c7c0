// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(rewire-fuse-rows))" | FileCheck %s

#id = affine_map<(b, t, f) -> (b, t, f)>
#row = affine_map<(b, t, f) -> (b, t, 0)>
// A mean over the features, then the centered values: one loop over 8 tiles
// of 16 rows ([4, 32] rows: 2 tiles per batch entry). The mean lives on the
// stack; the result is written into its full tensor.
// CHECK-LABEL: func.func @center
func.func @center(%x: tensor<4x32x64xf32>) -> tensor<4x32x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x32x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x32x1xf32>) -> tensor<4x32x1xf32>
  %e = tensor.empty() : tensor<4x32x64xf32>
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<4x32x64xf32>
  // CHECK: %[[R:.*]] = scf.forall (%[[T:.*]]) in (8) shared_outs(%[[O:.*]] = %[[E]])
  // CHECK: %[[C2:.*]] = arith.constant 2 : index
  // CHECK: %[[IN:.*]] = arith.remui %[[T]], %[[C2]]
  // CHECK: %[[C16:.*]] = arith.constant 16 : index
  // CHECK: %[[ROW:.*]] = arith.muli %[[IN]], %[[C16]]
  // CHECK: %[[B:.*]] = arith.divui %[[T]], %[[C2]]
  // CHECK: %[[XS:.*]] = tensor.extract_slice %arg0[%[[B]], %[[ROW]], 0] [1, 16, 64] [1, 1, 1]
  // CHECK: %[[STACK:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1x16x1xf32>
  // CHECK: %[[M0:.*]] = bufferization.to_tensor %[[STACK]] restrict writable
  // CHECK: %[[MF:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[M0]] : tensor<1x16x1xf32>)
  // CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[XS]] : tensor<1x16x64xf32>) outs(%[[MF]] : tensor<1x16x1xf32>)
  // CHECK: %[[OS:.*]] = tensor.extract_slice %[[O]][%[[B]], %[[ROW]], 0] [1, 16, 64] [1, 1, 1]
  // CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[XS]], %[[M]] : tensor<1x16x64xf32>, tensor<1x16x1xf32>) outs(%[[OS]] : tensor<1x16x64xf32>)
  // CHECK: scf.forall.in_parallel
  // CHECK-NEXT: tensor.parallel_insert_slice %[[Y]] into %[[O]][%[[B]], %[[ROW]], 0] [1, 16, 64] [1, 1, 1]
  // CHECK-NOT: linalg.generic
  // CHECK: return %[[R]]
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<4x32x64xf32>) outs(%f : tensor<4x32x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x32x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %m : tensor<4x32x64xf32>, tensor<4x32x1xf32>) outs(%e : tensor<4x32x64xf32>) {
  ^bb0(%a: f32, %mean: f32, %o: f32):
    %c = arith.subf %a, %mean : f32
    linalg.yield %c : f32
  } -> tensor<4x32x64xf32>
  return %y : tensor<4x32x64xf32>
}

// -----

#id = affine_map<(r, f) -> (r, f)>
#row = affine_map<(r, f) -> (r)>
#rows = affine_map<(r) -> (r)>
// A row sum that is also returned (a saved statistic) is a second shared
// output; a per-row op over the rows only (rowwise) joins the group, and
// its row index is offset to the tile's rows. Tiles of one row: eight
// tiles at least, for the threads.
// CHECK-LABEL: func.func @saved_and_indexed
func.func @saved_and_indexed(%x: tensor<8x32xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8xf32>) -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  // CHECK: %[[R:.*]]:2 = scf.forall (%[[T:.*]]) in (8) shared_outs(%[[S:.*]] = %{{.*}}, %[[O:.*]] = %{{.*}})
  // CHECK: %[[ROW:.*]] = arith.muli %[[T]], %{{.*}}
  // CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1xf32>)
  // CHECK: %[[I:.*]] = linalg.index 0 : index
  // CHECK-NEXT: %[[SHIFTED:.*]] = arith.addi %[[I]], %[[ROW]] : index
  // CHECK-NEXT: arith.index_cast %[[SHIFTED]]
  // CHECK: scf.forall.in_parallel
  // CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[S]][%[[ROW]]] [1] [1]
  // CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[O]][%[[ROW]]] [1] [1]
  // CHECK: return %[[R]]#0, %[[R]]#1
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x32xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel"]}
      ins(%s : tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %r = arith.addf %a, %fi : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %s, %y : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(r, f) -> (r, f)>
#row = affine_map<(r, f) -> (r, 0)>
// Rows wider than 8192 features (a vocabulary-wide softmax) and a lone op
// stay as they are.
// CHECK-LABEL: func.func @too_wide_or_alone
func.func @too_wide_or_alone(%x: tensor<4x10000xf32>, %z: tensor<4x16xf32>) -> (tensor<4x10000xf32>, tensor<4x16xf32>) {
  // CHECK-NOT: scf.forall
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %e = tensor.empty() : tensor<4x10000xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x10000xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<4x10000xf32>, tensor<4x1xf32>) outs(%e : tensor<4x10000xf32>) {
  ^bb0(%a: f32, %mx: f32, %o: f32):
    %c = arith.subf %a, %mx : f32
    linalg.yield %c : f32
  } -> tensor<4x10000xf32>
  %c1 = arith.constant 1.0 : f32
  %e2 = tensor.empty() : tensor<4x16xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<4x16xf32>) outs(%e2 : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %c1 : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %y, %w : tensor<4x10000xf32>, tensor<4x16xf32>
}
