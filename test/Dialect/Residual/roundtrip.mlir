// Printer/parser round trip of every residual op and variant, in the custom
// and in the generic form.
// RUN: rewire-opt %s | rewire-opt | FileCheck %s
// RUN: rewire-opt %s --mlir-print-op-generic | rewire-opt | FileCheck %s

// CHECK-LABEL: func.func @add
func.func @add(%h: tensor<2x8x64xf32>, %u: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  // CHECK: residual.add %{{.*}}, %{{.*}} stream 0 layer 0 : tensor<2x8x64xf32>
  %0 = residual.add %h, %u stream 0 layer 0 : tensor<2x8x64xf32>
  return %0 : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @add_nchw_dynamic
func.func @add_nchw_dynamic(%h: tensor<?x64x8x8xf16>, %u: tensor<?x64x8x8xf16>) -> tensor<?x64x8x8xf16> {
  // CHECK: residual.add %{{.*}}, %{{.*}} axis 1 stream 2 layer 7 : tensor<?x64x8x8xf16>
  %0 = residual.add %h, %u axis 1 stream 2 layer 7 : tensor<?x64x8x8xf16>
  return %0 : tensor<?x64x8x8xf16>
}

// CHECK-LABEL: func.func @laurel
func.func @laurel(%h: tensor<2x8x64xf32>, %u: tensor<2x8x64xf32>, %a: tensor<f32>,
                  %b: tensor<1xf32>, %A: tensor<64x16xf32>, %B: tensor<16x64xf32>) -> tensor<2x8x64xf32> {
  // CHECK: residual.laurel %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} stream 0 layer 0 : tensor<2x8x64xf32>, tensor<f32>, tensor<1xf32>
  %0 = residual.laurel %h, %u, %a, %b stream 0 layer 0 : tensor<2x8x64xf32>, tensor<f32>, tensor<1xf32>
  // CHECK: residual.laurel {{.*}} lowrank %{{.*}}, %{{.*}} stream 0 layer 1 : tensor<2x8x64xf32>, tensor<f32>, tensor<1xf32>, tensor<64x16xf32>, tensor<16x64xf32>
  %1 = residual.laurel %0, %u, %a, %b lowrank %A, %B stream 0 layer 1 : tensor<2x8x64xf32>, tensor<f32>, tensor<1xf32>, tensor<64x16xf32>, tensor<16x64xf32>
  return %1 : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @scale_add
func.func @scale_add(%h: tensor<2x8x64xf32>, %u: tensor<2x8x64xf32>, %s: tensor<f32>,
                     %s1: tensor<1xf32>, %lam: tensor<64xf32>) -> tensor<2x8x64xf32> {
  // CHECK: residual.scale_add %{{.*}}, %{{.*}}, %{{.*}} stream 0 layer 0 : tensor<2x8x64xf32>, tensor<f32>
  %0 = residual.scale_add %h, %u, %s stream 0 layer 0 : tensor<2x8x64xf32>, tensor<f32>
  // CHECK: residual.scale_add {{.*}} stream 0 layer 1 : tensor<2x8x64xf32>, tensor<1xf32>
  %1 = residual.scale_add %0, %u, %s1 stream 0 layer 1 : tensor<2x8x64xf32>, tensor<1xf32>
  // CHECK: residual.scale_add {{.*}} stream 0 layer 2 : tensor<2x8x64xf32>, tensor<64xf32>
  %2 = residual.scale_add %1, %u, %lam stream 0 layer 2 : tensor<2x8x64xf32>, tensor<64xf32>
  return %2 : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @gated_add
func.func @gated_add(%h: tensor<2x8x64xf32>, %u: tensor<2x8x64xf32>,
                     %Wr: tensor<128x64xf32>, %Wr1: tensor<128x1xf32>,
                     %Wh: tensor<64x64xf32>, %b: tensor<64xf32>, %b1: tensor<1xf32>) -> tensor<2x8x64xf32> {
  // CHECK: residual.gated_add review additive {{.*}} stream 0 layer 0 : tensor<2x8x64xf32>, tensor<128x64xf32>, tensor<64xf32>
  %0 = residual.gated_add review additive %h, %u, %Wr, %b stream 0 layer 0 : tensor<2x8x64xf32>, tensor<128x64xf32>, tensor<64xf32>
  // CHECK: residual.gated_add review convex {{.*}} eps 1.000000e-05 stream 0 layer 1 : tensor<2x8x64xf32>, tensor<128x1xf32>, tensor<1xf32>
  %1 = residual.gated_add review convex %0, %u, %Wr1, %b1 eps 1.0e-5 stream 0 layer 1 : tensor<2x8x64xf32>, tensor<128x1xf32>, tensor<1xf32>
  // CHECK: residual.gated_add highway additive {{.*}} stream 0 layer 2 : tensor<2x8x64xf32>, tensor<64x64xf32>, tensor<64xf32>
  %2 = residual.gated_add highway additive %1, %u, %Wh, %b stream 0 layer 2 : tensor<2x8x64xf32>, tensor<64x64xf32>, tensor<64xf32>
  // CHECK: residual.gated_add highway convex {{.*}} stream 0 layer 3
  %3 = residual.gated_add highway convex %2, %u, %Wh, %b stream 0 layer 3 : tensor<2x8x64xf32>, tensor<64x64xf32>, tensor<64xf32>
  return %3 : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @mix
func.func @mix(%h0: tensor<2x8x64xf32>, %h1: tensor<2x8x64xf32>, %y: tensor<2x8x64xf32>,
               %c: tensor<2xf32>, %f: tensor<3xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) {
  // CHECK: residual.mix softmax %{{.*}}, [%{{.*}}, %{{.*}}], %{{.*}} tau 1.000000e-02 stream 0 layer 1 : tensor<2x8x64xf32>, tensor<2xf32>
  %0 = residual.mix softmax %y, [%h0, %h1], %c tau 0.01 stream 0 layer 1 : tensor<2x8x64xf32>, tensor<2xf32>
  // CHECK: residual.mix free %{{.*}}, [%{{.*}}, %{{.*}}], %{{.*}} stream 0 layer 1 {note = "dwa"} : tensor<2x8x64xf32>, tensor<3xf32>
  %1 = residual.mix free %y, [%h0, %h1], %f stream 0 layer 1 {note = "dwa"} : tensor<2x8x64xf32>, tensor<3xf32>
  // CHECK: residual.mix additive %{{.*}}, [%{{.*}}, %{{.*}}], %{{.*}} stream 0 layer 1 : tensor<2x8x64xf32>, tensor<2xf32>
  %2 = residual.mix additive %y, [%h0, %h1], %c stream 0 layer 1 : tensor<2x8x64xf32>, tensor<2xf32>
  return %0, %1 : tensor<2x8x64xf32>, tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @mix_nchw
func.func @mix_nchw(%h0: tensor<1x16x4x4xf32>, %y: tensor<1x16x4x4xf32>, %c: tensor<1xf32>) -> tensor<1x16x4x4xf32> {
  // CHECK: residual.mix softmax {{.*}} tau 1.000000e+00 axis 1 stream 0 layer 0
  %0 = residual.mix softmax %y, [%h0], %c tau 1.0 axis 1 stream 0 layer 0 : tensor<1x16x4x4xf32>, tensor<1xf32>
  return %0 : tensor<1x16x4x4xf32>
}

// CHECK-LABEL: func.func @nag
func.func @nag(%R: tensor<2x8x64xf32>, %f: tensor<2x8x64xf32>, %w: tensor<64x8xf32>,
               %b: tensor<8xf32>, %pi: tensor<8xf32>, %alpha: tensor<f32>) -> tensor<2x8x64xf32> {
  // CHECK: %[[M:.*]] = residual.nag_gate %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} stream 0 layer 3 : tensor<2x8x64xf32>, tensor<64x8xf32>, tensor<8xf32>, tensor<8xf32>
  %m = residual.nag_gate %R, %w, %b, %pi stream 0 layer 3 : tensor<2x8x64xf32>, tensor<64x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: residual.nag_gate {{.*}} beta 2.000000e+00 stream 0 layer 4
  %m2 = residual.nag_gate %R, %w, %b, %pi beta 2.0 stream 0 layer 4 : tensor<2x8x64xf32>, tensor<64x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: residual.nag_add %{{.*}}, %{{.*}}, %{{.*}}, %[[M]] stream 0 layer 3 : tensor<2x8x64xf32>, tensor<f32>, tensor<2x8x1xf32>
  %0 = residual.nag_add %R, %f, %alpha, %m stream 0 layer 3 : tensor<2x8x64xf32>, tensor<f32>, tensor<2x8x1xf32>
  // CHECK: residual.nag_add {{.*}} eps 1.000000e-08 stream 0 layer 4
  %1 = residual.nag_add %0, %f, %alpha, %m2 eps 1.0e-8 stream 0 layer 4 : tensor<2x8x64xf32>, tensor<f32>, tensor<2x8x1xf32>
  return %1 : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @nag_nchw
func.func @nag_nchw(%R: tensor<1x16x4x4xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<1x1x4x4xf32> {
  // CHECK: residual.nag_gate {{.*}} axis 1 stream 0 layer 0 : tensor<1x16x4x4xf32>
  %m = residual.nag_gate %R, %w, %b, %b axis 1 stream 0 layer 0 : tensor<1x16x4x4xf32>, tensor<16x4xf32>, tensor<4xf32>, tensor<4xf32>
  return %m : tensor<1x1x4x4xf32>
}

// CHECK-LABEL: func.func @tap
func.func @tap(%h: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  // CHECK: residual.tap %{{.*}} stream 0 layer 2 : tensor<2x8x64xf32>
  %0 = residual.tap %h stream 0 layer 2 : tensor<2x8x64xf32>
  // CHECK: residual.tap %{{.*}} name "depth3" stream 0 layer 3 : tensor<2x8x64xf32>
  %1 = residual.tap %0 name "depth3" stream 0 layer 3 : tensor<2x8x64xf32>
  return %1 : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @route
func.func @route(%m: tensor<2x8x1xf32>) -> (tensor<2x8x1xf32>, tensor<2x8x1xf32>) {
  // CHECK: residual.route %{{.*}} threshold 5.000000e-01 : tensor<2x8x1xf32>
  %0 = residual.route %m threshold 0.5 : tensor<2x8x1xf32>
  // CHECK: residual.route %{{.*}} rate 2.500000e-01 : tensor<2x8x1xf32>
  %1 = residual.route %m rate 0.25 : tensor<2x8x1xf32>
  return %0, %1 : tensor<2x8x1xf32>, tensor<2x8x1xf32>
}

// CHECK-LABEL: func.func @route_select
func.func @route_select(%m: tensor<2x8x1xf32>) -> tensor<2x6xi64> {
  // CHECK: residual.route_select %{{.*}} rate 2.500000e-01 : tensor<2x8x1xf32> -> tensor<2x6xi64>
  %0 = residual.route_select %m rate 0.25 : tensor<2x8x1xf32> -> tensor<2x6xi64>
  return %0 : tensor<2x6xi64>
}

// CHECK-LABEL: func.func @hyper
func.func @hyper(%h: tensor<2x8x64xf32>, %u: tensor<2x8x64xf32>, %a: tensor<f32>, %wp: tensor<256x4xf32>,
                 %wr: tensor<256x16xf32>, %wt: tensor<64x1xf32>, %b: tensor<4xf32>, %bb: tensor<4x4xf32>)
    -> tensor<2x8x64xf32> {
  // CHECK: residual.hyper_expand %{{.*}} stream 0 layer 0 : tensor<2x8x64xf32> -> tensor<2x8x4x64xf32>
  %X = residual.hyper_expand %h stream 0 layer 0 : tensor<2x8x64xf32> -> tensor<2x8x4x64xf32>
  // CHECK: residual.hyper_coeffs sigmoid {{.*}} stream 0 layer 0 : tensor<2x8x4x64xf32>, tensor<f32>, tensor<256x4xf32>, tensor<4xf32> -> tensor<2x8x4xf32>
  %pre = residual.hyper_coeffs sigmoid %X, %a, %wp, %b stream 0 layer 0 : tensor<2x8x4x64xf32>, tensor<f32>, tensor<256x4xf32>, tensor<4xf32> -> tensor<2x8x4xf32>
  // CHECK: residual.hyper_coeffs double_sigmoid {{.*}} eps 1.000000e-05 stream 0 layer 0
  %post = residual.hyper_coeffs double_sigmoid %X, %a, %wp, %b eps 1.0e-5 stream 0 layer 0 : tensor<2x8x4x64xf32>, tensor<f32>, tensor<256x4xf32>, tensor<4xf32> -> tensor<2x8x4xf32>
  // CHECK: residual.hyper_coeffs sinkhorn {{.*}} iters 20 stream 0 layer 0 : {{.*}} -> tensor<2x8x4x4xf32>
  %res = residual.hyper_coeffs sinkhorn %X, %a, %wr, %bb iters 20 stream 0 layer 0 : tensor<2x8x4x64xf32>, tensor<f32>, tensor<256x16xf32>, tensor<4x4xf32> -> tensor<2x8x4x4xf32>
  // CHECK: residual.hyper_coeffs tanh {{.*}} : tensor<2x8x4x64xf32>, tensor<f32>, tensor<64x1xf32>, tensor<4xf32> -> tensor<2x8x4xf32>
  %tp = residual.hyper_coeffs tanh %X, %a, %wt, %b stream 0 layer 0 : tensor<2x8x4x64xf32>, tensor<f32>, tensor<64x1xf32>, tensor<4xf32> -> tensor<2x8x4xf32>
  // CHECK: residual.hyper_read {{.*}} : tensor<2x8x4x64xf32>, tensor<2x8x4xf32> -> tensor<2x8x64xf32>
  %x = residual.hyper_read %X, %pre stream 0 layer 0 : tensor<2x8x4x64xf32>, tensor<2x8x4xf32> -> tensor<2x8x64xf32>
  // CHECK: residual.hyper_read {{.*}} : tensor<2x8x4x64xf32>, tensor<4xf32> -> tensor<2x8x64xf32>
  %x2 = residual.hyper_read %X, %b stream 0 layer 0 : tensor<2x8x4x64xf32>, tensor<4xf32> -> tensor<2x8x64xf32>
  // CHECK: residual.hyper_write {{.*}} stream 0 layer 0 : tensor<2x8x4x64xf32>, tensor<2x8x64xf32>, tensor<2x8x4xf32>, tensor<2x8x4x4xf32>
  %X1 = residual.hyper_write %X, %u, %post, %res stream 0 layer 0 : tensor<2x8x4x64xf32>, tensor<2x8x64xf32>, tensor<2x8x4xf32>, tensor<2x8x4x4xf32>
  // CHECK: residual.hyper_write {{.*}} stream 0 layer 1 : tensor<2x8x4x64xf32>, tensor<2x8x64xf32>, tensor<4xf32>, tensor<4x4xf32>
  %X2 = residual.hyper_write %X1, %x, %b, %bb stream 0 layer 1 : tensor<2x8x4x64xf32>, tensor<2x8x64xf32>, tensor<4xf32>, tensor<4x4xf32>
  // CHECK: residual.hyper_reduce {{.*}} stream 0 layer 1 : tensor<2x8x4x64xf32> -> tensor<2x8x64xf32>
  %o = residual.hyper_reduce %X2 stream 0 layer 1 : tensor<2x8x4x64xf32> -> tensor<2x8x64xf32>
  // CHECK: residual.hyper_write_grad {{.*}} stream 0 layer 1 : tensor<2x8x4x64xf32>, tensor<2x8x4x64xf32>, tensor<2x8x64xf32>, tensor<4xf32> -> tensor<2x8x64xf32>, tensor<2x8x4xf32>, tensor<2x8x4x4xf32>
  %du, %dp, %dr = residual.hyper_write_grad %X2, %X1, %x, %b stream 0 layer 1 : tensor<2x8x4x64xf32>, tensor<2x8x4x64xf32>, tensor<2x8x64xf32>, tensor<4xf32> -> tensor<2x8x64xf32>, tensor<2x8x4xf32>, tensor<2x8x4x4xf32>
  return %o : tensor<2x8x64xf32>
}

// CHECK-LABEL: func.func @value_mix
func.func @value_mix(%v: tensor<2x4x8x16xf32>, %v1: tensor<2x4x8x16xf32>, %a: tensor<f32>, %b: tensor<1xf32>) -> tensor<2x4x8x16xf32> {
  // CHECK: residual.value_mix %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} stream 0 layer 2 : tensor<2x4x8x16xf32>, tensor<f32>, tensor<1xf32>
  %0 = residual.value_mix %v, %v1, %a, %b stream 0 layer 2 : tensor<2x4x8x16xf32>, tensor<f32>, tensor<1xf32>
  return %0 : tensor<2x4x8x16xf32>
}
