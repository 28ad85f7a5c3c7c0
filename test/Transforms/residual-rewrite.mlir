// residual-rewrite: every kind and option on a two-stream input.
// RUN: rewire-opt %s --residual-rewrite=kind=rezero | FileCheck %s --check-prefix=REZERO
// RUN: rewire-opt %s --residual-rewrite="kind=rezero init=identity" | FileCheck %s --check-prefix=REZERO-ID
// RUN: rewire-opt %s --residual-rewrite=kind=skipinit | FileCheck %s --check-prefix=SKIPINIT
// RUN: rewire-opt %s --residual-rewrite=kind=layerscale | FileCheck %s --check-prefix=LS
// RUN: rewire-opt %s --residual-rewrite="kind=layerscale init=identity" | FileCheck %s --check-prefix=LS-ID
// RUN: rewire-opt %s --residual-rewrite=kind=review | FileCheck %s --check-prefix=REVIEW
// RUN: rewire-opt %s --residual-rewrite="kind=review gate=row combine=convex eps=1e-5" | FileCheck %s --check-prefix=REVIEW-ROW
// RUN: rewire-opt %s --residual-rewrite="kind=review init=identity" | FileCheck %s --check-prefix=REVIEW-ID
// RUN: rewire-opt %s --residual-rewrite=kind=highway | FileCheck %s --check-prefix=HIGHWAY
// RUN: rewire-opt %s --residual-rewrite="kind=highway highway-bias=-1" | FileCheck %s --check-prefix=HIGHWAY-B1
// RUN: rewire-opt %s --residual-rewrite="kind=laurel laurel=rw" | FileCheck %s --check-prefix=LAUREL-RW
// The rewritten IR verifies and round-trips.
// RUN: rewire-opt %s --residual-rewrite=kind=review | rewire-opt | FileCheck %s --check-prefix=REVIEW

// REZERO-LABEL: func.func @block
// REZERO: %[[A0:.*]] = ml_program.global_load_const @stream0.layer0.rezero.alpha : tensor<f32>
// REZERO: residual.scale_add %{{.*}}, %{{.*}}, %[[A0]] stream 0 layer 0 : tensor<2x8x16xf32>, tensor<f32>
// REZERO: residual.scale_add {{.*}} stream 0 layer 1
// REZERO: residual.scale_add {{.*}} axis 1 stream 1 layer 0 : tensor<1x4x3x3xf32>, tensor<f32>
// REZERO-NOT: residual.add
// REZERO-DAG: ml_program.global private @stream0.layer0.rezero.alpha(#nn.init<zeros>) : tensor<f32>
// REZERO-DAG: ml_program.global private @stream0.layer1.rezero.alpha(#nn.init<zeros>) : tensor<f32>
// REZERO-DAG: ml_program.global private @stream1.layer0.rezero.alpha(#nn.init<zeros>) : tensor<f32>

// REZERO-ID: ml_program.global private @stream0.layer0.rezero.alpha(#nn.init<ones>) : tensor<f32>

// SKIPINIT: residual.scale_add
// SKIPINIT: ml_program.global private @stream0.layer0.skipinit.alpha(#nn.init<zeros>) : tensor<f32>

// LS-LABEL: func.func @block
// LS: %[[L:.*]] = ml_program.global_load_const @stream0.layer0.layerscale.lambda : tensor<16xf32>
// LS: residual.scale_add %{{.*}}, %{{.*}}, %[[L]] stream 0 layer 0 : tensor<2x8x16xf32>, tensor<16xf32>
// Per-channel along the NCHW feature axis (axis 1, 4 channels):
// LS: residual.scale_add {{.*}} axis 1 stream 1 layer 0 : tensor<1x4x3x3xf32>, tensor<4xf32>
// LS-DAG: ml_program.global private @stream0.layer0.layerscale.lambda(#nn.init<constant(1.000000e-01)>) : tensor<16xf32>
// LS-DAG: ml_program.global private @stream1.layer0.layerscale.lambda(#nn.init<constant(1.000000e-01)>) : tensor<4xf32>

// LS-ID: ml_program.global private @stream0.layer0.layerscale.lambda(#nn.init<ones>) : tensor<16xf32>

// REVIEW-LABEL: func.func @block
// REVIEW: %[[W:.*]] = ml_program.global_load_const @stream0.layer0.review.W : tensor<32x16xf32>
// REVIEW: %[[B:.*]] = ml_program.global_load_const @stream0.layer0.review.b : tensor<16xf32>
// REVIEW: residual.gated_add review additive %{{.*}}, %{{.*}}, %[[W]], %[[B]] eps 9.9999999999999995E-7 stream 0 layer 0 : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<16xf32>
// REVIEW: residual.gated_add review additive {{.*}} axis 1 stream 1 layer 0 : tensor<1x4x3x3xf32>, tensor<8x4xf32>, tensor<4xf32>
// REVIEW-DAG: ml_program.global private @stream0.layer0.review.W(#nn.init<zeros>) : tensor<32x16xf32>
// REVIEW-DAG: ml_program.global private @stream0.layer0.review.b(#nn.init<zeros>) : tensor<16xf32>

// REVIEW-ROW: residual.gated_add review convex {{.*}} eps 1.000000e-05 stream 0 layer 0 : tensor<2x8x16xf32>, tensor<32x1xf32>, tensor<1xf32>
// REVIEW-ROW-DAG: ml_program.global private @stream0.layer0.review.W(#nn.init<zeros>) : tensor<32x1xf32>

// REVIEW-ID-DAG: ml_program.global private @stream0.layer0.review.W(#nn.init<zeros>) : tensor<32x16xf32>
// REVIEW-ID-DAG: ml_program.global private @stream0.layer0.review.b(#nn.init<constant(2.000000e+01)>) : tensor<16xf32>

// HIGHWAY-LABEL: func.func @block
// HIGHWAY: residual.gated_add highway additive {{.*}} stream 0 layer 0 : tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>
// HIGHWAY-NOT: eps
// HIGHWAY-DAG: ml_program.global private @stream0.layer0.highway.W(#nn.init<normal(0.000000e+00, 2.000000e-02)>) : tensor<16x16xf32>
// HIGHWAY-DAG: ml_program.global private @stream0.layer0.highway.b(#nn.init<constant(-2.000000e+00)>) : tensor<16xf32>

// HIGHWAY-B1: ml_program.global private @stream0.layer0.highway.b(#nn.init<constant(-1.000000e+00)>) : tensor<16xf32>

// LAUREL-RW-LABEL: func.func @block
// LAUREL-RW: residual.laurel {{.*}} stream 0 layer 0 : tensor<2x8x16xf32>, tensor<f32>, tensor<f32>{{$}}
// LAUREL-RW: residual.laurel {{.*}} axis 1 stream 1 layer 0 : tensor<1x4x3x3xf32>, tensor<f32>, tensor<f32>{{$}}
// LAUREL-RW-DAG: ml_program.global private @stream1.layer0.laurel.beta(#nn.init<ones>) : tensor<f32>

func.func @block(%h: tensor<2x8x16xf32>, %u0: tensor<2x8x16xf32>, %u1: tensor<2x8x16xf32>,
                 %x: tensor<1x4x3x3xf32>, %y: tensor<1x4x3x3xf32>) -> (tensor<2x8x16xf32>, tensor<1x4x3x3xf32>) {
  %0 = residual.add %h, %u0 stream 0 layer 0 : tensor<2x8x16xf32>
  %1 = residual.add %0, %u1 stream 0 layer 1 : tensor<2x8x16xf32>
  %2 = residual.add %x, %y axis 1 stream 1 layer 0 : tensor<1x4x3x3xf32>
  return %1, %2 : tensor<2x8x16xf32>, tensor<1x4x3x3xf32>
}
