// convert-residual-to-linalg: the structure each lowering produces, and ops
// it cannot lower yet reported by name.
// RUN: rewire-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(convert-residual-to-linalg))" | FileCheck %s

// CHECK: #[[CH:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>

// The review gate: two row reductions (rms of h and u), two matmuls over the
// halves of W (no concat), one fused epilogue.
// CHECK-LABEL: func.func @review
// CHECK-NOT: residual.
// CHECK-COUNT-2: tensor.extract_slice
// CHECK-NOT: tensor.concat
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: math.exp
// CHECK: return
func.func @review(%h: tensor<2x3x8xf32>, %u: tensor<2x3x8xf32>, %W: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %0 = residual.gated_add review additive %h, %u, %W, %b stream 0 layer 0 : tensor<2x3x8xf32>, tensor<16x8xf32>, tensor<8xf32>
  return %0 : tensor<2x3x8xf32>
}

// CHECK-LABEL: func.func @review_matmuls
// CHECK-COUNT-2: linalg.matmul
func.func @review_matmuls(%h: tensor<2x3x8xf32>, %u: tensor<2x3x8xf32>, %W: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %0 = residual.gated_add review additive %h, %u, %W, %b stream 0 layer 0 : tensor<2x3x8xf32>, tensor<16x8xf32>, tensor<8xf32>
  return %0 : tensor<2x3x8xf32>
}

// A scale along the NCHW channel axis indexes alpha by dimension 1.
// CHECK-LABEL: func.func @scale_nchw
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #[[CH]], #{{.*}}]
func.func @scale_nchw(%h: tensor<1x4x3x3xf32>, %u: tensor<1x4x3x3xf32>, %a: tensor<4xf32>) -> tensor<1x4x3x3xf32> {
  %0 = residual.scale_add %h, %u, %a axis 1 stream 0 layer 0 : tensor<1x4x3x3xf32>, tensor<4xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// A tap lowers to nothing.
// CHECK-LABEL: func.func @tap
// CHECK-NEXT: return %arg0
func.func @tap(%h: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = residual.tap %h stream 0 layer 0 : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Routing by rate: ranks within each sequence from one comparison
// reduction (no sort), then a select.
// CHECK-LABEL: func.func @route_rate
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x1xf32> into tensor<2xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] {{.*}} : tensor<2xf32> into tensor<1x2xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.cmpf olt
// CHECK: linalg.generic
// CHECK: arith.select
// CHECK: tensor.collapse_shape
// CHECK: tensor.expand_shape
func.func @route_rate(%m: tensor<2x1xf32>) -> tensor<2x1xf32> {
  %0 = residual.route %m rate 0.5 : tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// Dynamic shapes are not lowered: reported by name.
func.func @route_dynamic(%m: tensor<?x1xf32>) -> tensor<?x1xf32> {
  // expected-error @+1 {{failed to legalize operation 'residual.route' that was explicitly marked illegal}}
  %0 = residual.route %m rate 0.5 : tensor<?x1xf32>
  return %0 : tensor<?x1xf32>
}

// -----

// The kept rows' indices: the ranks, each kept row's slot (a count of the
// kept rows before it), and one reduction placing b * T + t at its slot.
// CHECK-LABEL: func.func @route_select
// CHECK-COUNT-3: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: return %{{.*}} : tensor<2x6xi64>
func.func @route_select(%m: tensor<2x8x1xf32>) -> tensor<2x6xi64> {
  %0 = residual.route_select %m rate 0.25 : tensor<2x8x1xf32> -> tensor<2x6xi64>
  return %0 : tensor<2x6xi64>
}
