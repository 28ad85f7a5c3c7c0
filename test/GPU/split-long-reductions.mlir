// rewire-split-long-reductions: reductions to a few values over many points
// become partial sums (a parallel dimension, element k to partial k mod P)
// and a combine into the original init; the rest stays.
// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(rewire-split-long-reductions))" | FileCheck %s

// A scalar gate's gradient (sum of dy * f over B x T x d = 1572864 points):
// the three reduction loops collapse into one, 4096 partials of 384 terms
// each, then one sum of the partials into the zero init.
// CHECK-LABEL: func.func @scalar_grad(
// CHECK: %[[INIT:.*]] = linalg.fill {{.*}} -> tensor<f32>
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1, 2]] : tensor<8x256x768xf32> into tensor<1572864xf32>
// CHECK: tensor.expand_shape {{.*}} output_shape [384, 4096] : tensor<1572864xf32> into tensor<384x4096xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<4096xf32>
// CHECK: %[[PART:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} {{.*}} outs(%[[ZERO]] : tensor<4096xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[PART]] : tensor<4096xf32>) outs(%[[INIT]] : tensor<f32>)
// CHECK: return %[[SUM]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#scalar3 = affine_map<(d0, d1, d2) -> ()>
func.func @scalar_grad(%dy: tensor<8x256x768xf32>, %f: tensor<8x256x768xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #scalar3], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%dy, %f : tensor<8x256x768xf32>, tensor<8x256x768xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// keepdims (the output read through constant 0s) and a max combiner: the
// unit dims are dropped first; partials start at max's neutral element.
// CHECK-LABEL: func.func @keepdims_max(
// CHECK: tensor.expand_shape {{.*}} output_shape [16, 4096]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4096xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]}
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]}
// CHECK: arith.maximumf
// CHECK: tensor.expand_shape {{.*}} : tensor<f32> into tensor<1x1xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#zero2 = affine_map<(d0, d1) -> (0, 0)>
func.func @keepdims_max(%x: tensor<256x256xf32>, %init: tensor<1x1xf32>) -> tensor<1x1xf32> {
  %r = linalg.generic {indexing_maps = [#id2, #zero2], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<256x256xf32>) outs(%init : tensor<1x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x1xf32>
  return %r : tensor<1x1xf32>
}

// -----

// A per-channel sum over all tokens (4 outputs): 4096 / 4 = 1024 partials
// per output, the partials first ([1024, 4]).
// CHECK-LABEL: func.func @few_outputs(
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<256x256x4xf32> into tensor<65536x4xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} {{.*}} outs(%{{.*}} : tensor<1024x4xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%{{.*}} : tensor<1024x4xf32>) outs(%arg1 : tensor<4xf32>)
#in3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#ch3 = affine_map<(d0, d1, d2) -> (d2)>
func.func @few_outputs(%x: tensor<256x256x4xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#in3, #ch3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : tensor<256x256x4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Hyper-connection coefficient gradients: a scalar over [8, 256, 4, 4]
// (32768 points: 2048 partials of 16, not 4096 of 8) and a static [4]
// coefficient over 2048 tokens (128 partials of 16 per output).
// CHECK-LABEL: func.func @short(
// CHECK: tensor.expand_shape {{.*}} output_shape [16, 2048] : tensor<32768xf32> into tensor<16x2048xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} {{.*}} outs(%{{.*}} : tensor<2048xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<2048xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} {{.*}} outs(%{{.*}} : tensor<128x4xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%{{.*}} : tensor<128x4xf32>) outs(%arg3 : tensor<4xf32>)
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#zero4 = affine_map<(d0, d1, d2, d3) -> (0, 0, 0, 0)>
#tok3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#n3 = affine_map<(d0, d1, d2) -> (d2)>
func.func @short(%g: tensor<8x256x4x4xf32>, %x: tensor<8x256x4x4xf32>, %s: tensor<1x1x1x1xf32>,
                 %b: tensor<4xf32>, %p: tensor<8x256x4xf32>) -> (tensor<1x1x1x1xf32>, tensor<4xf32>) {
  %0 = linalg.generic {indexing_maps = [#id4, #id4, #zero4], iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%g, %x : tensor<8x256x4x4xf32>, tensor<8x256x4x4xf32>) outs(%s : tensor<1x1x1x1xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %m = arith.mulf %a, %c : f32
    %y = arith.addf %m, %acc : f32
    linalg.yield %y : f32
  } -> tensor<1x1x1x1xf32>
  %1 = linalg.generic {indexing_maps = [#tok3, #n3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%p : tensor<8x256x4xf32>) outs(%b : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %a, %acc : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %0, %1 : tensor<1x1x1x1xf32>, tensor<4xf32>
}

// -----

// Left as they are: a bias gradient (768 outputs, 2048 rows: enough
// threads already), a reduction whose length has no power-of-two factor
// >= 16 (32771 is prime), and a matrix-vector product (cuBLAS's).
// CHECK-LABEL: func.func @kept(
// CHECK-NOT: tensor.expand_shape
// CHECK-COUNT-2: linalg.generic
// CHECK: linalg.matmul
// CHECK-NOT: linalg.generic
#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
#all1 = affine_map<(d0) -> (d0)>
#none1 = affine_map<(d0) -> ()>
func.func @kept(%g: tensor<2048x768xf32>, %b: tensor<768xf32>, %p: tensor<32771xf32>, %s: tensor<f32>,
                %a: tensor<1x65536xf32>, %v: tensor<65536x1xf32>, %o: tensor<1x1xf32>)
    -> (tensor<768xf32>, tensor<f32>, tensor<1x1xf32>) {
  %0 = linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%g : tensor<2048x768xf32>) outs(%b : tensor<768xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<768xf32>
  %1 = linalg.generic {indexing_maps = [#all1, #none1], iterator_types = ["reduction"]}
      ins(%p : tensor<32771xf32>) outs(%s : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %x, %acc : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  %2 = linalg.matmul ins(%a, %v : tensor<1x65536xf32>, tensor<65536x1xf32>) outs(%o : tensor<1x1xf32>) -> tensor<1x1xf32>
  return %0, %1, %2 : tensor<768xf32>, tensor<f32>, tensor<1x1xf32>
}

// -----

// A body that reads its position (linalg.index) stays: its partial sums
// would see other positions.
// CHECK-LABEL: func.func @indexed(
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.index 0
#all = affine_map<(d0) -> (d0)>
#none = affine_map<(d0) -> ()>
func.func @indexed(%p: tensor<65536xf32>, %s: tensor<f32>) -> tensor<f32> {
  %0 = linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction"]}
      ins(%p : tensor<65536xf32>) outs(%s : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    %f = arith.sitofp %c : i64 to f32
    %w = arith.mulf %x, %f : f32
    %y = arith.addf %w, %acc : f32
    linalg.yield %y : f32
  } -> tensor<f32>
  return %0 : tensor<f32>
}
