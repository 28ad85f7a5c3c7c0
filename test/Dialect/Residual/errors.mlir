// Every verifier message of the residual dialect.
// RUN: rewire-opt %s --split-input-file --verify-diagnostics

func.func @rank0(%h: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{stream state 'h' must have rank >= 1, got rank 0}}
  %0 = residual.add %h, %h stream 0 layer 0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @axis_range(%h: tensor<2x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{feature axis 2 is out of range for 'h' of rank 2}}
  %0 = residual.add %h, %h axis 2 stream 0 layer 0 : tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @axis_negative_range(%h: tensor<2x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{feature axis -3 is out of range for 'h' of rank 2}}
  %0 = residual.tap %h axis -3 stream 0 layer 0 : tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @negative_stream(%h: tensor<2x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{attribute 'stream' failed to satisfy constraint}}
  %0 = residual.add %h, %h stream -1 layer 0 : tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @negative_layer(%h: tensor<2x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{attribute 'layer' failed to satisfy constraint}}
  %0 = residual.tap %h stream 0 layer -2 : tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @add_type_mismatch(%h: tensor<2x64xf32>, %u: tensor<2x32xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{all of {h, u, result} have same type}}
  %0 = "residual.add"(%h, %u) <{stream = 0 : i64, layer = 0 : i64}> : (tensor<2x64xf32>, tensor<2x32xf32>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @scale_shape(%h: tensor<2x64xf32>, %a: tensor<32xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'alpha' must be a scalar (tensor<T> or tensor<1xT>) or one factor per channel (tensor<64xT> along feature axis 1), got 'tensor<32xf32>'}}
  %0 = residual.scale_add %h, %h, %a stream 0 layer 0 : tensor<2x64xf32>, tensor<32xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @scale_rank(%h: tensor<2x64xf32>, %a: tensor<2x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'alpha' must be a scalar}}
  %0 = residual.scale_add %h, %h, %a stream 0 layer 0 : tensor<2x64xf32>, tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @scale_dtype(%h: tensor<2x64xf32>, %a: tensor<f16>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'alpha' element type 'f16' must match the stream element type 'f32'}}
  %0 = residual.scale_add %h, %h, %a stream 0 layer 0 : tensor<2x64xf32>, tensor<f16>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @gate_weight_rank(%h: tensor<2x64xf32>, %w: tensor<128xf32>, %b: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{gate weight 'weight' must be a matrix [in, G], got 'tensor<128xf32>'}}
  %0 = residual.gated_add review additive %h, %h, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<128xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @review_rows(%h: tensor<2x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{gate weight 'weight' must have 2d = 128 rows for a review gate, got 64x64}}
  %0 = residual.gated_add review additive %h, %h, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<64x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @highway_rows(%h: tensor<2x64xf32>, %w: tensor<128x64xf32>, %b: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{gate weight 'weight' must have d = 64 rows for a highway gate, got 128x64}}
  %0 = residual.gated_add highway convex %h, %h, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<128x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @gate_width(%h: tensor<2x64xf32>, %w: tensor<128x32xf32>, %b: tensor<32xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{gate width G (columns of 'weight') must be d = 64 (per channel) or 1 (per row), got 32}}
  %0 = residual.gated_add review additive %h, %h, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<128x32xf32>, tensor<32xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @gate_bias(%h: tensor<2x64xf32>, %w: tensor<128x64xf32>, %b: tensor<1xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'bias' must be a vector of G = 64 elements, got 'tensor<1xf32>'}}
  %0 = residual.gated_add review additive %h, %h, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<128x64xf32>, tensor<1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @gate_dtype(%h: tensor<2x64xf32>, %w: tensor<128x64xbf16>, %b: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'weight' element type 'bf16' must match the stream element type 'f32'}}
  %0 = residual.gated_add review additive %h, %h, %w, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<128x64xbf16>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @gate_eps(%h: tensor<2x64xf32>, %w: tensor<128x64xf32>, %b: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'eps' must be positive and finite, got 0}}
  %0 = residual.gated_add review additive %h, %h, %w, %b eps 0.0 stream 0 layer 0 : tensor<2x64xf32>, tensor<128x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @highway_eps(%h: tensor<2x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'eps' applies only to the review gate}}
  %0 = residual.gated_add highway additive %h, %h, %w, %b eps 1.0e-6 stream 0 layer 0 : tensor<2x64xf32>, tensor<64x64xf32>, tensor<64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_kind(%h: tensor<2x64xf32>, %c: tensor<1xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{expected mix weights kind 'softmax', 'free' or 'additive', got 'hadamard'}}
  %0 = residual.mix hadamard %h, [%h], %c stream 0 layer 0 : tensor<2x64xf32>, tensor<1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_empty(%h: tensor<2x64xf32>, %c: tensor<0xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{needs at least one earlier stream state}}
  %0 = residual.mix softmax %h, [], %c tau 0.01 stream 0 layer 0 : tensor<2x64xf32>, tensor<0xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_state_type(%y: tensor<2x64xf32>, %h: tensor<2x32xf32>, %c: tensor<1xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{state #0 has type 'tensor<2x32xf32>', expected the type of 'y', 'tensor<2x64xf32>'}}
  %0 = "residual.mix"(%y, %h, %c) <{weights_kind = 0 : i32, tau = 1.0e-2 : f64, stream = 0 : i64, layer = 0 : i64}> : (tensor<2x64xf32>, tensor<2x32xf32>, tensor<1xf32>) -> tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_softmax_size(%h: tensor<2x64xf32>, %c: tensor<3xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'weights' must be 'tensor<2xf32>' (one logit per state), got 'tensor<3xf32>'}}
  %0 = residual.mix softmax %h, [%h, %h], %c tau 0.01 stream 0 layer 0 : tensor<2x64xf32>, tensor<3xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_free_size(%h: tensor<2x64xf32>, %c: tensor<2xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'weights' must be 'tensor<3xf32>' (one weight per state plus one for y), got 'tensor<2xf32>'}}
  %0 = residual.mix free %h, [%h, %h], %c stream 0 layer 0 : tensor<2x64xf32>, tensor<2xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_additive_size(%h: tensor<2x64xf32>, %c: tensor<3xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'weights' must be 'tensor<2xf32>' (one weight per state), got 'tensor<3xf32>'}}
  %0 = residual.mix additive %h, [%h, %h], %c stream 0 layer 0 : tensor<2x64xf32>, tensor<3xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_additive_tau(%h: tensor<2x64xf32>, %c: tensor<1xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'tau' applies only to softmax weights; remove it for additive weights}}
  %0 = residual.mix additive %h, [%h], %c tau 0.01 stream 0 layer 0 : tensor<2x64xf32>, tensor<1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_dtype(%h: tensor<2x64xf32>, %c: tensor<1xf16>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'weights' element type 'f16' must match the stream element type 'f32'}}
  %0 = residual.mix softmax %h, [%h], %c tau 0.01 stream 0 layer 0 : tensor<2x64xf32>, tensor<1xf16>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_no_tau(%h: tensor<2x64xf32>, %c: tensor<1xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{softmax weights need a temperature 'tau' (ANCRe's default is 0.01)}}
  %0 = residual.mix softmax %h, [%h], %c stream 0 layer 0 : tensor<2x64xf32>, tensor<1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_tau_zero(%h: tensor<2x64xf32>, %c: tensor<1xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'tau' must be positive and finite, got 0}}
  %0 = residual.mix softmax %h, [%h], %c tau 0.0 stream 0 layer 0 : tensor<2x64xf32>, tensor<1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_tau_negative(%h: tensor<2x64xf32>, %c: tensor<1xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'tau' must be positive and finite, got -1}}
  %0 = residual.mix softmax %h, [%h], %c tau -1.0 stream 0 layer 0 : tensor<2x64xf32>, tensor<1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @mix_free_tau(%h: tensor<2x64xf32>, %c: tensor<2xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'tau' applies only to softmax weights; remove it for free weights}}
  %0 = residual.mix free %h, [%h], %c tau 0.5 stream 0 layer 0 : tensor<2x64xf32>, tensor<2xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @nag_gate_w(%R: tensor<2x64xf32>, %w: tensor<32x8xf32>, %b: tensor<8xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'w' must be a matrix [d, C] with d = 64, got 'tensor<32x8xf32>'}}
  %m = residual.nag_gate %R, %w, %b, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<32x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %m : tensor<2x1xf32>
}

// -----

func.func @nag_gate_c0(%R: tensor<2x64xf32>, %w: tensor<64x0xf32>, %b: tensor<0xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'w' must have at least one gate component (C >= 1), got C = 0}}
  %m = residual.nag_gate %R, %w, %b, %b stream 0 layer 0 : tensor<2x64xf32>, tensor<64x0xf32>, tensor<0xf32>, tensor<0xf32>
  return %m : tensor<2x1xf32>
}

// -----

func.func @nag_gate_b(%R: tensor<2x64xf32>, %w: tensor<64x8xf32>, %b: tensor<4xf32>, %pi: tensor<8xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'b' must be a vector of C = 8 elements, got 'tensor<4xf32>'}}
  %m = residual.nag_gate %R, %w, %b, %pi stream 0 layer 0 : tensor<2x64xf32>, tensor<64x8xf32>, tensor<4xf32>, tensor<8xf32>
  return %m : tensor<2x1xf32>
}

// -----

func.func @nag_gate_pi(%R: tensor<2x64xf32>, %w: tensor<64x8xf32>, %b: tensor<8xf32>, %pi: tensor<8x1xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'pi' must be a vector of C = 8 elements, got 'tensor<8x1xf32>'}}
  %m = residual.nag_gate %R, %w, %b, %pi stream 0 layer 0 : tensor<2x64xf32>, tensor<64x8xf32>, tensor<8xf32>, tensor<8x1xf32>
  return %m : tensor<2x1xf32>
}

// -----

func.func @nag_gate_beta(%R: tensor<2x64xf32>, %w: tensor<64x8xf32>, %b: tensor<8xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'beta' must be positive and finite, got -5.000000e-01}}
  %m = residual.nag_gate %R, %w, %b, %b beta -0.5 stream 0 layer 0 : tensor<2x64xf32>, tensor<64x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %m : tensor<2x1xf32>
}

// -----

func.func @nag_gate_axis(%R: tensor<2x64xf32>, %w: tensor<64x8xf32>, %b: tensor<8xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'residual.nag_gate' op feature axis 5 is out of range for 'R' of rank 2}}
  %m = residual.nag_gate %R, %w, %b, %b axis 5 stream 0 layer 0 : tensor<2x64xf32>, tensor<64x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %m : tensor<2x1xf32>
}

// -----

func.func @nag_gate_result(%R: tensor<2x64xf32>, %w: tensor<64x8xf32>, %b: tensor<8xf32>) -> tensor<2x64xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2x64xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %m = "residual.nag_gate"(%R, %w, %b, %b) <{stream = 0 : i64, layer = 0 : i64}> : (tensor<2x64xf32>, tensor<64x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x64xf32>
  return %m : tensor<2x64xf32>
}

// -----

func.func @nag_alpha(%R: tensor<2x64xf32>, %a: tensor<64xf32>, %m: tensor<2x1xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'alpha' must be a scalar (tensor<T> or tensor<1xT>), got 'tensor<64xf32>'}}
  %0 = residual.nag_add %R, %R, %a, %m stream 0 layer 0 : tensor<2x64xf32>, tensor<64xf32>, tensor<2x1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @nag_m_shape(%R: tensor<2x8x64xf32>, %a: tensor<f32>, %m: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{modulator 'm' must have the shape of 'R' with the feature axis reduced to 1 (2x8x1), got 'tensor<2x8x64xf32>'}}
  %0 = residual.nag_add %R, %R, %a, %m stream 0 layer 0 : tensor<2x8x64xf32>, tensor<f32>, tensor<2x8x64xf32>
  return %0 : tensor<2x8x64xf32>
}

// -----

func.func @nag_m_dtype(%R: tensor<2x64xf32>, %a: tensor<f32>, %m: tensor<2x1xf16>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'m' element type 'f16' must match the stream element type 'f32'}}
  %0 = residual.nag_add %R, %R, %a, %m stream 0 layer 0 : tensor<2x64xf32>, tensor<f32>, tensor<2x1xf16>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @nag_eps(%R: tensor<2x64xf32>, %a: tensor<f32>, %m: tensor<2x1xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'eps' must be positive and finite, got -1}}
  %0 = residual.nag_add %R, %R, %a, %m eps -1.0 stream 0 layer 0 : tensor<2x64xf32>, tensor<f32>, tensor<2x1xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @tap_name(%h: tensor<2x64xf32>) -> tensor<2x64xf32> {
  // expected-error @+1 {{'name' must not be empty; omit it instead}}
  %0 = residual.tap %h name "" stream 0 layer 0 : tensor<2x64xf32>
  return %0 : tensor<2x64xf32>
}

// -----

func.func @int_state(%h: tensor<2x64xi32>) -> tensor<2x64xi32> {
  // expected-error @+1 {{must be ranked tensor of floating-point values}}
  %0 = residual.add %h, %h stream 0 layer 0 : tensor<2x64xi32>
  return %0 : tensor<2x64xi32>
}

// -----

func.func @route_rate_high(%m: tensor<2x1xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{skip rate must be in [0, 1), got 1.5}}
  %0 = residual.route %m rate 1.5 : tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @route_rate_negative(%m: tensor<2x1xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{skip rate must be in [0, 1), got -1.000000e-01}}
  %0 = residual.route %m rate -0.1 : tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @route_inf(%m: tensor<2x1xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'value' must be finite}}
  %0 = residual.route %m threshold 0x7FF0000000000000 : tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @laurel_vector_alpha(%h: tensor<2x8xf32>, %a: tensor<8xf32>, %b: tensor<f32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'alpha' must be a scalar (tensor<T> or tensor<1xT>), got 'tensor<8xf32>'}}
  %0 = residual.laurel %h, %h, %a, %b stream 0 layer 0 : tensor<2x8xf32>, tensor<8xf32>, tensor<f32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @laurel_rank_mismatch(%h: tensor<2x8xf32>, %a: tensor<f32>, %A: tensor<8x4xf32>, %B: tensor<3x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{the low-rank map must be 'a' : [8, r] and 'b' : [r, 8], got 'tensor<8x4xf32>' and 'tensor<3x8xf32>'}}
  %0 = residual.laurel %h, %h, %a, %a lowrank %A, %B stream 0 layer 0 : tensor<2x8xf32>, tensor<f32>, tensor<f32>, tensor<8x4xf32>, tensor<3x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @laurel_lowrank_axis(%h: tensor<2x8x3xf32>, %a: tensor<f32>, %A: tensor<8x4xf32>, %B: tensor<4x8xf32>) -> tensor<2x8x3xf32> {
  // expected-error @+1 {{the low-rank map needs the feature axis last, got axis 1 of rank 3}}
  %0 = residual.laurel %h, %h, %a, %a lowrank %A, %B axis 1 stream 0 layer 0 : tensor<2x8x3xf32>, tensor<f32>, tensor<f32>, tensor<8x4xf32>, tensor<4x8xf32>
  return %0 : tensor<2x8x3xf32>
}

// -----

func.func @laurel_half_lowrank(%h: tensor<2x8xf32>, %a: tensor<f32>, %A: tensor<8x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{the low-rank map needs both 'a' and 'b'}}
  %0 = "residual.laurel"(%h, %h, %a, %a, %A) <{stream = 0 : i64, layer = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>}> : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<f32>, tensor<f32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @hyper_expand_shape(%h: tensor<2x8xf32>) -> tensor<2x4x9xf32> {
  // expected-error @+1 {{result must be 'h' : 'tensor<2x8xf32>' with a stream axis before its feature axis ([2, 4, 8]), got 'tensor<2x4x9xf32>'}}
  %0 = residual.hyper_expand %h stream 0 layer 0 : tensor<2x8xf32> -> tensor<2x4x9xf32>
  return %0 : tensor<2x4x9xf32>
}

// -----

func.func @hyper_axis(%h: tensor<2x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{a hyper stream needs the feature axis last (axis -1 or 1), got axis 0}}
  %0 = residual.hyper_expand %h axis 0 stream 0 layer 0 : tensor<2x8xf32> -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

func.func @hyper_dynamic_streams(%X: tensor<2x?x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{hyper stream 'X' : 'tensor<2x?x8xf32>' needs a static stream count n >= 1 (its second-to-last dimension)}}
  %0 = residual.hyper_reduce %X stream 0 layer 0 : tensor<2x?x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @hyper_rank1(%X: tensor<8xf32>, %p: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{hyper stream 'X' must be [..., n, d] (rank >= 2), got 'tensor<8xf32>'}}
  %0 = residual.hyper_read %X, %p stream 0 layer 0 : tensor<8xf32>, tensor<4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @hyper_read_pre(%X: tensor<2x4x8xf32>, %p: tensor<3xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'pre' must be [4] or [2, 4] for the hyper stream 'tensor<2x4x8xf32>', got 'tensor<3xf32>'}}
  %0 = residual.hyper_read %X, %p stream 0 layer 0 : tensor<2x4x8xf32>, tensor<3xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @hyper_read_result(%X: tensor<2x4x8xf32>, %p: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{result must be [2, 8] of 'f32', got 'tensor<2x4xf32>'}}
  %0 = residual.hyper_read %X, %p stream 0 layer 0 : tensor<2x4x8xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @hyper_write_u(%X: tensor<2x4x8xf32>, %u: tensor<2x4x8xf32>, %q: tensor<4xf32>, %r: tensor<4x4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'u' must be the hyper stream 'tensor<2x4x8xf32>' without its stream axis ([2, 8]), got 'tensor<2x4x8xf32>'}}
  %0 = residual.hyper_write %X, %u, %q, %r stream 0 layer 0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4xf32>, tensor<4x4xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

func.func @hyper_write_res(%X: tensor<2x4x8xf32>, %u: tensor<2x8xf32>, %q: tensor<4xf32>, %r: tensor<4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'res' must be [4, 4] or [2, 4, 4] for the hyper stream 'tensor<2x4x8xf32>', got 'tensor<4xf32>'}}
  %0 = residual.hyper_write %X, %u, %q, %r stream 0 layer 0 : tensor<2x4x8xf32>, tensor<2x8xf32>, tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

func.func @hyper_write_element(%X: tensor<2x4x8xf32>, %u: tensor<2x8xf32>, %q: tensor<4xf16>, %r: tensor<4x4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'post' element type 'f16' must match the hyper stream's 'f32'}}
  %0 = residual.hyper_write %X, %u, %q, %r stream 0 layer 0 : tensor<2x4x8xf32>, tensor<2x8xf32>, tensor<4xf16>, tensor<4x4xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

func.func @hyper_coeffs_weight(%X: tensor<2x4x8xf32>, %a: tensor<f32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'weight' must be [n * d, n] = [32, 4] for map sigmoid, got 'tensor<8x4xf32>'}}
  %0 = residual.hyper_coeffs sigmoid %X, %a, %w, %b stream 0 layer 0 : tensor<2x4x8xf32>, tensor<f32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @hyper_coeffs_tanh_weight(%X: tensor<2x4x8xf32>, %a: tensor<f32>, %w: tensor<8x3xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'weight' must be [d, 1 or n] = [8, 4] or [8, 1] for map tanh, got 'tensor<8x3xf32>'}}
  %0 = residual.hyper_coeffs tanh %X, %a, %w, %b stream 0 layer 0 : tensor<2x4x8xf32>, tensor<f32>, tensor<8x3xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @hyper_coeffs_iters(%X: tensor<2x4x8xf32>, %a: tensor<f32>, %w: tensor<32x16xf32>, %b: tensor<4x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{map sinkhorn needs 'iters'}}
  %0 = residual.hyper_coeffs sinkhorn %X, %a, %w, %b stream 0 layer 0 : tensor<2x4x8xf32>, tensor<f32>, tensor<32x16xf32>, tensor<4x4xf32> -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// -----

func.func @hyper_coeffs_iters_other(%X: tensor<2x4x8xf32>, %a: tensor<f32>, %w: tensor<32x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'iters' applies only to map sinkhorn}}
  %0 = residual.hyper_coeffs sigmoid %X, %a, %w, %b iters 3 stream 0 layer 0 : tensor<2x4x8xf32>, tensor<f32>, tensor<32x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @hyper_coeffs_bias(%X: tensor<2x4x8xf32>, %a: tensor<f32>, %w: tensor<32x16xf32>, %b: tensor<4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{'bias' must be [4, 4], got 'tensor<4xf32>'}}
  %0 = residual.hyper_coeffs sinkhorn %X, %a, %w, %b iters 2 stream 0 layer 0 : tensor<2x4x8xf32>, tensor<f32>, tensor<32x16xf32>, tensor<4xf32> -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// -----

func.func @hyper_coeffs_alpha(%X: tensor<2x4x8xf32>, %a: tensor<2xf32>, %w: tensor<32x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'alpha' must be a scalar (tensor<T> or tensor<1xT>), got 'tensor<2xf32>'}}
  %0 = residual.hyper_coeffs sigmoid %X, %a, %w, %b stream 0 layer 0 : tensor<2x4x8xf32>, tensor<2xf32>, tensor<32x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @hyper_coeffs_eps(%X: tensor<2x4x8xf32>, %a: tensor<f32>, %w: tensor<32x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{eps must be positive, got 0}}
  %0 = residual.hyper_coeffs sigmoid %X, %a, %w, %b eps 0.0 stream 0 layer 0 : tensor<2x4x8xf32>, tensor<f32>, tensor<32x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @hyper_coeffs_result(%X: tensor<2x4x8xf32>, %a: tensor<f32>, %w: tensor<32x4xf32>, %b: tensor<4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{result must be [2, 4] of 'f32', got 'tensor<2x4x4xf32>'}}
  %0 = residual.hyper_coeffs sigmoid %X, %a, %w, %b stream 0 layer 0 : tensor<2x4x8xf32>, tensor<f32>, tensor<32x4xf32>, tensor<4xf32> -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// -----

func.func @value_mix_lambda(%v: tensor<2x8xf32>, %a: tensor<2xf32>, %b: tensor<f32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'lambda1' must be a scalar (tensor<T> or tensor<1xT>), got 'tensor<2xf32>'}}
  %0 = residual.value_mix %v, %v, %a, %b stream 0 layer 1 : tensor<2x8xf32>, tensor<2xf32>, tensor<f32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @route_select_count(%m: tensor<2x8x1xf32>) -> tensor<2x8xi64> {
  // expected-error @+1 {{result must be [2, 6] (the rows kept of 8 at rate 2.500000e-01), got 'tensor<2x8xi64>'}}
  %0 = residual.route_select %m rate 0.25 : tensor<2x8x1xf32> -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

// -----

func.func @route_select_rank(%m: tensor<16x1xf32>) -> tensor<2x6xi64> {
  // expected-error @+1 {{'m' must be a static [B, T, 1] tensor, got 'tensor<16x1xf32>'}}
  %0 = residual.route_select %m rate 0.25 : tensor<16x1xf32> -> tensor<2x6xi64>
  return %0 : tensor<2x6xi64>
}

// -----

func.func @route_select_rate(%m: tensor<2x8x1xf32>) -> tensor<2x1xi64> {
  // expected-error @+1 {{skip rate must be in [0, 1), got 1.000000e+00}}
  %0 = residual.route_select %m rate 1.0 : tensor<2x8x1xf32> -> tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// -----

func.func @hyper_write_grad_g(%g: tensor<2x4x16xf32>, %X: tensor<2x4x8xf32>, %u: tensor<2x8xf32>, %p: tensor<2x4xf32>) {
  // expected-error @+1 {{'g' (the adjoint of the write's result) must have the type of 'X', 'tensor<2x4x8xf32>', got 'tensor<2x4x16xf32>'}}
  %du, %dp, %dr = residual.hyper_write_grad %g, %X, %u, %p stream 0 layer 0 : tensor<2x4x16xf32>, tensor<2x4x8xf32>, tensor<2x8xf32>, tensor<2x4xf32> -> tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>
  return
}

// -----

func.func @hyper_write_grad_dynamic(%g: tensor<?x4x8xf32>, %X: tensor<?x4x8xf32>, %u: tensor<?x8xf32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{needs static shapes, got 'X' : 'tensor<?x4x8xf32>'}}
  %du, %dp, %dr = residual.hyper_write_grad %g, %X, %u, %p stream 0 layer 0 : tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x8xf32>, tensor<4xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>
  return
}

// -----

func.func @hyper_write_grad_post(%g: tensor<2x4x8xf32>, %X: tensor<2x4x8xf32>, %u: tensor<2x8xf32>, %p: tensor<3xf32>) {
  // expected-error @+1 {{'post' must be [4] or [2, 4] for the hyper stream 'tensor<2x4x8xf32>', got 'tensor<3xf32>'}}
  %du, %dp, %dr = residual.hyper_write_grad %g, %X, %u, %p stream 0 layer 0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8xf32>, tensor<3xf32> -> tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>
  return
}

// -----

func.func @hyper_write_grad_dres(%g: tensor<2x4x8xf32>, %X: tensor<2x4x8xf32>, %u: tensor<2x8xf32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{result 'dres' must be [2, 4, 4] of 'f32', got 'tensor<4x4xf32>'}}
  %du, %dp, %dr = residual.hyper_write_grad %g, %X, %u, %p stream 0 layer 0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8xf32>, tensor<4xf32> -> tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x4xf32>
  return
}

// -----

func.func @hyper_write_grad_axis(%g: tensor<2x4x8xf32>, %X: tensor<2x4x8xf32>, %u: tensor<2x8xf32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{a hyper stream needs the feature axis last (axis -1 or 2), got axis 1}}
  %du, %dp, %dr = residual.hyper_write_grad %g, %X, %u, %p axis 1 stream 0 layer 0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8xf32>, tensor<4xf32> -> tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x4x4xf32>
  return
}

// -----

func.func @hyper_project_grad_w(%dz: tensor<2x4xf32>, %p: tensor<2x4xf32>, %r: tensor<2x1xf32>, %X: tensor<2x4x8xf32>, %W: tensor<16x4xf32>) {
  // expected-error @+1 {{'W' must be [n * d, k] = [32, k], got 'tensor<16x4xf32>'}}
  %dX, %dW = residual.hyper_project_grad %dz, %p, %r, %X, %W : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x4x8xf32>, tensor<16x4xf32> -> tensor<2x4x8xf32>, tensor<16x4xf32>
  return
}

// -----

func.func @hyper_project_grad_r(%dz: tensor<2x4xf32>, %p: tensor<2x4xf32>, %r: tensor<2xf32>, %X: tensor<2x4x8xf32>, %W: tensor<32x4xf32>) {
  // expected-error @+1 {{'r' must be 'tensor<2x1xf32>', got 'tensor<2xf32>'}}
  %dX, %dW = residual.hyper_project_grad %dz, %p, %r, %X, %W : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<2x4x8xf32>, tensor<32x4xf32> -> tensor<2x4x8xf32>, tensor<32x4xf32>
  return
}

// -----

func.func @hyper_project_grad_dynamic(%dz: tensor<?x4xf32>, %p: tensor<?x4xf32>, %r: tensor<?x1xf32>, %X: tensor<?x4x8xf32>, %W: tensor<32x4xf32>) {
  // expected-error @+1 {{'X' must be a static hyper stream [..., n, d], got 'tensor<?x4x8xf32>'}}
  %dX, %dW = residual.hyper_project_grad %dz, %p, %r, %X, %W : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x1xf32>, tensor<?x4x8xf32>, tensor<32x4xf32> -> tensor<?x4x8xf32>, tensor<32x4xf32>
  return
}

// -----

func.func @hyper_project_grad_result(%dz: tensor<2x4xf32>, %p: tensor<2x4xf32>, %r: tensor<2x1xf32>, %X: tensor<2x4x8xf32>, %W: tensor<32x4xf32>) {
  // expected-error @+1 {{results must have the types of 'X' and 'W'}}
  %dX, %dW = residual.hyper_project_grad %dz, %p, %r, %X, %W : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x4x8xf32>, tensor<32x4xf32> -> tensor<2x32xf32>, tensor<32x4xf32>
  return
}
