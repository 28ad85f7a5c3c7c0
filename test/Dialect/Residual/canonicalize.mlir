// Folders and canonicalization patterns of the residual ops.
// RUN: rewire-opt %s --canonicalize --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @add_zero_update
// CHECK-SAME: (%[[H:[a-z0-9_]+]]: tensor<2x64xf32>)
// CHECK-NOT: residual.add
// CHECK: return %[[H]]
func.func @add_zero_update(%h: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %z = arith.constant dense<0.0> : tensor<2x64xf32>
  %0 = residual.add %h, %z stream 0 layer 0 : tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// CHECK-LABEL: func.func @scale_add_alpha_zero
// CHECK-SAME: (%[[H:[a-z0-9_]+]]: tensor<2x64xf32>, %{{.*}}: tensor<2x64xf32>)
// CHECK-NOT: residual.scale_add
// CHECK: return %[[H]]
func.func @scale_add_alpha_zero(%h: tensor<2x64xf32>, %u: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %a = arith.constant dense<0.0> : tensor<f32>
  %0 = residual.scale_add %h, %u, %a stream 0 layer 0 : tensor<2x64xf32>, tensor<f32>
  return %0 : tensor<2x64xf32>
}

// -----

// CHECK-LABEL: func.func @scale_add_alpha_one
// CHECK: %[[R:.*]] = residual.add %{{.*}}, %{{.*}} stream 3 layer 5 : tensor<2x64xf32>
// CHECK: return %[[R]]
func.func @scale_add_alpha_one(%h: tensor<2x64xf32>, %u: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %a = arith.constant dense<1.0> : tensor<64xf32>
  %0 = residual.scale_add %h, %u, %a stream 3 layer 5 : tensor<2x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// A learned (non-constant) alpha stays.
// CHECK-LABEL: func.func @scale_add_learned
// CHECK: residual.scale_add
func.func @scale_add_learned(%h: tensor<2x64xf32>, %u: tensor<2x64xf32>, %a: tensor<f32>) -> tensor<2x64xf32> {
  %0 = residual.scale_add %h, %u, %a stream 0 layer 0 : tensor<2x64xf32>, tensor<f32>
  return %0 : tensor<2x64xf32>
}

// -----

// A gate closed in f32 (sigmoid(-200) == 0) leaves the state.
// CHECK-LABEL: func.func @gate_closed
// CHECK-SAME: (%[[H:[a-z0-9_]+]]: tensor<2x64xf32>, %{{.*}}: tensor<2x64xf32>)
// CHECK-NOT: residual.gated_add
// CHECK: return %[[H]]
func.func @gate_closed(%h: tensor<2x64xf32>, %u: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %w = arith.constant dense<0.0> : tensor<128x64xf32>
  %b = arith.constant dense<-200.0> : tensor<64xf32>
  %0 = residual.gated_add review convex %h, %u, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<128x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// A saturated convex gate passes the update through.
// CHECK-LABEL: func.func @gate_open_convex
// CHECK-SAME: (%{{.*}}: tensor<2x64xf32>, %[[U:[a-z0-9_]+]]: tensor<2x64xf32>)
// CHECK-NOT: residual.gated_add
// CHECK: return %[[U]]
func.func @gate_open_convex(%h: tensor<2x64xf32>, %u: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %w = arith.constant dense<0.0> : tensor<64x1xf32>
  %b = arith.constant dense<50.0> : tensor<1xf32>
  %0 = residual.gated_add highway convex %h, %u, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<64x1xf32>, tensor<1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// Gate constant 1 with the additive combine is the plain residual add.
// CHECK-LABEL: func.func @gate_open_additive
// CHECK-NOT: residual.gated_add
// CHECK-NOT: residual.scale_add
// CHECK: %[[R:.*]] = residual.add %{{.*}}, %{{.*}} stream 0 layer 4 : tensor<2x64xf32>
// CHECK: return %[[R]]
func.func @gate_open_additive(%h: tensor<2x64xf32>, %u: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %w = arith.constant dense<0.0> : tensor<128x64xf32>
  %b = arith.constant dense<20.0> : tensor<64xf32>
  %0 = residual.gated_add review additive %h, %u, %w, %b stream 0 layer 4 : tensor<2x64xf32>, tensor<128x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// Review's paper init (W = 0, b = 0) is a constant gate of 0.5: a scale_add.
// CHECK-LABEL: func.func @gate_half
// CHECK: %[[A:.*]] = arith.constant dense<5.000000e-01> : tensor<64xf32>
// CHECK: residual.scale_add %{{.*}}, %{{.*}}, %[[A]] stream 0 layer 0 : tensor<2x64xf32>, tensor<64xf32>
func.func @gate_half(%h: tensor<2x64xf32>, %u: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %w = arith.constant dense<0.0> : tensor<128x64xf32>
  %b = arith.constant dense<0.0> : tensor<64xf32>
  %0 = residual.gated_add review additive %h, %u, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<128x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// A per-row constant gate becomes a scalar (tensor<1xf32>) factor.
// CHECK-LABEL: func.func @gate_row_constant
// CHECK: %[[A:.*]] = arith.constant dense<0.268941{{[0-9]*}}> : tensor<1xf32>
// CHECK: residual.scale_add %{{.*}}, %{{.*}}, %[[A]] stream 0 layer 0 : tensor<2x64xf32>, tensor<1xf32>
func.func @gate_row_constant(%h: tensor<2x64xf32>, %u: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %w = arith.constant dense<0.0> : tensor<64x1xf32>
  %b = arith.constant dense<-1.0> : tensor<1xf32>
  %0 = residual.gated_add highway additive %h, %u, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<64x1xf32>, tensor<1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// An input-dependent gate (learned W) stays.
// CHECK-LABEL: func.func @gate_learned
// CHECK: residual.gated_add review additive
func.func @gate_learned(%h: tensor<2x64xf32>, %u: tensor<2x64xf32>, %w: tensor<128x64xf32>) -> tensor<2x64xf32> {
  %b = arith.constant dense<0.0> : tensor<64xf32>
  %0 = residual.gated_add review additive %h, %u, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<128x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// DenseFormer's identity init (weight 1 on y, 0 elsewhere) is the block output.
// CHECK-LABEL: func.func @mix_free_identity
// CHECK-SAME: (%{{.*}}: tensor<2x64xf32>, %{{.*}}: tensor<2x64xf32>, %[[Y:[a-z0-9_]+]]: tensor<2x64xf32>)
// CHECK-NOT: residual.mix
// CHECK: return %[[Y]]
func.func @mix_free_identity(%h0: tensor<2x64xf32>, %h1: tensor<2x64xf32>, %y: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %c = arith.constant dense<[0.0, 0.0, 1.0]> : tensor<3xf32>
  %0 = residual.mix free %y, [%h0, %h1], %c stream 0 layer 1 : tensor<2x64xf32>, tensor<3xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// CHECK-LABEL: func.func @mix_free_select_state
// CHECK-SAME: (%[[H0:[a-z0-9_]+]]: tensor<2x64xf32>, %{{.*}}: tensor<2x64xf32>, %{{.*}}: tensor<2x64xf32>)
// CHECK-NOT: residual.mix
// CHECK: return %[[H0]]
func.func @mix_free_select_state(%h0: tensor<2x64xf32>, %h1: tensor<2x64xf32>, %y: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %c = arith.constant dense<[1.0, 0.0, 0.0]> : tensor<3xf32>
  %0 = residual.mix free %y, [%h0, %h1], %c stream 0 layer 1 : tensor<2x64xf32>, tensor<3xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// Non-one-hot weights stay.
// CHECK-LABEL: func.func @mix_free_general
// CHECK: residual.mix free
func.func @mix_free_general(%h0: tensor<2x64xf32>, %y: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %c = arith.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %0 = residual.mix free %y, [%h0], %c stream 0 layer 0 : tensor<2x64xf32>, tensor<2xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// softmax over one logit is 1, whatever the logit: y + h_0.
// CHECK-LABEL: func.func @mix_softmax_single
// CHECK-SAME: (%[[H0:[a-z0-9_]+]]: tensor<2x64xf32>, %[[Y:[a-z0-9_]+]]: tensor<2x64xf32>, %{{.*}}: tensor<1xf32>)
// CHECK: %[[R:.*]] = residual.add %[[H0]], %[[Y]] stream 0 layer 0 : tensor<2x64xf32>
// CHECK: return %[[R]]
func.func @mix_softmax_single(%h0: tensor<2x64xf32>, %y: tensor<2x64xf32>, %c: tensor<1xf32>) -> tensor<2x64xf32> {
  %0 = residual.mix softmax %y, [%h0], %c tau 0.01 stream 0 layer 0 : tensor<2x64xf32>, tensor<1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// CHECK-LABEL: func.func @nag_alpha_zero
// CHECK-SAME: (%[[R:[a-z0-9_]+]]: tensor<2x64xf32>
// CHECK-NOT: residual.nag_add
// CHECK: return %[[R]]
func.func @nag_alpha_zero(%R: tensor<2x64xf32>, %f: tensor<2x64xf32>, %m: tensor<2x1xf32>) -> tensor<2x64xf32> {
  %a = arith.constant dense<0.0> : tensor<f32>
  %0 = residual.nag_add %R, %f, %a, %m stream 0 layer 0 : tensor<2x64xf32>, tensor<f32>, tensor<2x1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// A Mixture-of-Depths skip of every row (m = 0) leaves the stream.
// CHECK-LABEL: func.func @nag_m_zero
// CHECK-SAME: (%[[R:[a-z0-9_]+]]: tensor<2x64xf32>
// CHECK-NOT: residual.nag_add
// CHECK: return %[[R]]
func.func @nag_m_zero(%R: tensor<2x64xf32>, %f: tensor<2x64xf32>, %a: tensor<f32>) -> tensor<2x64xf32> {
  %m = arith.constant dense<0.0> : tensor<2x1xf32>
  %0 = residual.nag_add %R, %f, %a, %m stream 0 layer 0 : tensor<2x64xf32>, tensor<f32>, tensor<2x1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// A tap is a readout point and is never folded away.
// CHECK-LABEL: func.func @tap_kept
// CHECK: residual.tap
func.func @tap_kept(%h: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %0 = residual.tap %h stream 0 layer 0 : tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

// Routing nobody (rate 0) is the modulator itself.
// CHECK-LABEL: func.func @route_rate_zero
// CHECK-SAME: (%[[M:[a-z0-9_]+]]: tensor<2x1xf32>)
// CHECK-NOT: residual.route
// CHECK: return %[[M]]
func.func @route_rate_zero(%m: tensor<2x1xf32>) -> tensor<2x1xf32> {
  %0 = residual.route %m rate 0.0 : tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}
