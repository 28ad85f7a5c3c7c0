// rewire-split-long-reductions as the CPU pipeline runs it (interleave=false,
// min-length 65536, max-outputs 4, partials 64): a scalar's long sum
// becomes 64 partial sums of consecutive runs -- a parallel loop the
// threads share -- and a combine into the original init; shorter sums and
// sums to many values stay.
// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(rewire-split-long-reductions{interleave=false min-length=65536 max-outputs=4 partials=64}))" | FileCheck %s

// LAuReL's scalar gradient at d 768, B 4 x T 128 (393216 points): partial
// k sums points [6144 k, 6144 (k + 1)) (the partial index outer).
// CHECK-LABEL: func.func @scalar_grad(
// CHECK: %[[INIT:.*]] = linalg.fill {{.*}} -> tensor<f32>
// CHECK: tensor.expand_shape {{.*}} output_shape [64, 6144] : tensor<393216xf32> into tensor<64x6144xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<64xf32>
// CHECK: %[[PART:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} {{.*}} outs(%[[ZERO]] : tensor<64xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[PART]] : tensor<64xf32>) outs(%[[INIT]] : tensor<f32>)
// CHECK: return %[[SUM]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#scalar3 = affine_map<(d0, d1, d2) -> ()>
func.func @scalar_grad(%dy: tensor<4x128x768xf32>, %f: tensor<4x128x768xf32>) -> tensor<f32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id3, #id3, #scalar3], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%dy, %f : tensor<4x128x768xf32>, tensor<4x128x768xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A bias gradient (768 outputs, 512 points each) and a short scalar sum
// (4096 points) are left alone.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]}
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]}
// CHECK-NOT: linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#scalar2 = affine_map<(d0, d1) -> ()>
func.func @left_alone(%dy: tensor<512x768xf32>, %s: tensor<64x64xf32>) -> (tensor<768xf32>, tensor<f32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<768xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<768xf32>) -> tensor<768xf32>
  %b = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]}
      ins(%dy : tensor<512x768xf32>) outs(%i : tensor<768xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<768xf32>
  %e2 = tensor.empty() : tensor<f32>
  %i2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#id2, #scalar2], iterator_types = ["reduction", "reduction"]}
      ins(%s : tensor<64x64xf32>) outs(%i2 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %b, %r : tensor<768xf32>, tensor<f32>
}
