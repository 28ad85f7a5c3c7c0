// residual-detect on hand-written nn graphs: each residual pattern, and each
// add that must not be raised.
// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(residual-detect))" | FileCheck %s

ml_program.global private @w1(#ml_program.extern : tensor<16x16xf32>) : tensor<16x16xf32>
ml_program.global private @w2(#ml_program.extern : tensor<16x16xf32>) : tensor<16x16xf32>
ml_program.global private @g(#ml_program.extern : tensor<16xf32>) : tensor<16xf32>
ml_program.global private @b(#ml_program.extern : tensor<16xf32>) : tensor<16xf32>

// Pre-LN: h + W2 relu(W1 ln(h)), twice: one stream, layers 0 and 1.
// CHECK-LABEL: func.func @pre_ln
// CHECK: %[[H1:.*]] = residual.add %arg0, %{{.*}} stream 0 layer 0 {residual.branch = "mlp", residual.skip = "identity"}
// CHECK: residual.add %[[H1]], %{{.*}} stream 0 layer 1
// CHECK-NOT: nn.add
func.func @pre_ln(%h: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %w1 = ml_program.global_load_const @w1 : tensor<16x16xf32>
  %w2 = ml_program.global_load_const @w2 : tensor<16x16xf32>
  %g = ml_program.global_load_const @g : tensor<16xf32>
  %n = nn.layer_norm %h, %g : tensor<2x16xf32>, tensor<16xf32>
  %a = nn.matmul %n, %w1 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %r = nn.relu %a : tensor<2x16xf32>
  %u = nn.matmul %r, %w2 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %h1 = nn.add %h, %u : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %n2 = nn.layer_norm %h1, %g : tensor<2x16xf32>, tensor<16xf32>
  %u2 = nn.matmul %n2, %w1 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %h2 = nn.add %u2, %h1 : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %h2 : tensor<2x16xf32>
}

// Post-LN: ln(h + W h), the stream continues through the norm.
// CHECK-LABEL: func.func @post_ln
// CHECK: residual.add %arg0, %{{.*}} stream 0 layer 0
// CHECK: %[[N:.*]] = nn.layer_norm
// CHECK: residual.add %[[N]], %{{.*}} stream 0 layer 1
func.func @post_ln(%h: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %w1 = ml_program.global_load_const @w1 : tensor<16x16xf32>
  %g = ml_program.global_load_const @g : tensor<16xf32>
  %u = nn.matmul %h, %w1 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %s = nn.add %h, %u : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %n = nn.layer_norm %s, %g : tensor<2x16xf32>, tensor<16xf32>
  %u2 = nn.matmul %n, %w1 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %s2 = nn.add %n, %u2 : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %s2 : tensor<2x16xf32>
}

// Parallel (GPT-J): both branches read ln(h); the second add's skip is the
// first add, whose input the branch came from.
// CHECK-LABEL: func.func @parallel
// CHECK: %[[A:.*]] = residual.add %arg0, %{{.*}} stream 0 layer 0
// CHECK: residual.add %[[A]], %{{.*}} stream 0 layer 1
func.func @parallel(%h: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %w1 = ml_program.global_load_const @w1 : tensor<16x16xf32>
  %w2 = ml_program.global_load_const @w2 : tensor<16x16xf32>
  %g = ml_program.global_load_const @g : tensor<16xf32>
  %n = nn.layer_norm %h, %g : tensor<2x16xf32>, tensor<16xf32>
  %att = nn.matmul %n, %w1 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %mlp = nn.matmul %n, %w2 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %a = nn.add %h, %att : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %b = nn.add %a, %mlp : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %b : tensor<2x16xf32>
}

// Not residual: bias adds (broadcast), an add of two independent values
// (token + position embeddings), an add without a parameterized op on the
// branch (x + c * x^3 inside GELU), an attention-mask add.
// CHECK-LABEL: func.func @negatives
// CHECK-NOT: residual.add
// CHECK: return
func.func @negatives(%x: tensor<2x16xf32>, %pos: tensor<2x16xf32>, %mask: tensor<2x2xf32>) -> (tensor<2x16xf32>, tensor<2x2xf32>) {
  %w1 = ml_program.global_load_const @w1 : tensor<16x16xf32>
  %b = ml_program.global_load_const @b : tensor<16xf32>
  %e = nn.add %x, %pos : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %m = nn.matmul %e, %w1 : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %mb = nn.add %m, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %c = nn.constant dense<0.044715> : tensor<f32>
  %sq = nn.mul %mb, %mb : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %cube = nn.mul %sq, %mb : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %cc = nn.mul %cube, %c : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %inner = nn.add %mb, %cc : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %kt = nn.transpose %inner : (tensor<2x16xf32>) -> tensor<16x2xf32>
  %scores = nn.matmul %inner, %kt : (tensor<2x16xf32>, tensor<16x2xf32>) -> tensor<2x2xf32>
  %masked = nn.add %scores, %mask : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %inner, %masked : tensor<2x16xf32>, tensor<2x2xf32>
}

// -----

ml_program.global private @c1(#ml_program.extern : tensor<8x4x3x3xf32>) : tensor<8x4x3x3xf32>
ml_program.global private @c2(#ml_program.extern : tensor<8x8x3x3xf32>) : tensor<8x8x3x3xf32>
ml_program.global private @p(#ml_program.extern : tensor<8x4x1x1xf32>) : tensor<8x4x1x1xf32>
ml_program.global private @c3(#ml_program.extern : tensor<4x4x3x3xf32>) : tensor<4x4x3x3xf32>

// ResNet: an identity block, then a block whose shortcut is a 1x1
// projection; relu continues the stream; feature axis 1 (NCHW).
// CHECK-LABEL: func.func @resnet
// CHECK: %[[B1:.*]] = residual.add %arg0, %{{.*}} axis 1 stream 0 layer 0 {residual.branch = "conv", residual.skip = "identity"}
// CHECK: %[[R:.*]] = nn.relu %[[B1]]
// CHECK: residual.add %{{.*}}, %{{.*}} axis 1 stream 0 layer 1 {residual.branch = "conv", residual.skip = "projection"}
func.func @resnet(%x: tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %c3 = ml_program.global_load_const @c3 : tensor<4x4x3x3xf32>
  %c1 = ml_program.global_load_const @c1 : tensor<8x4x3x3xf32>
  %c2 = ml_program.global_load_const @c2 : tensor<8x8x3x3xf32>
  %p = ml_program.global_load_const @p : tensor<8x4x1x1xf32>
  %y = nn.conv %x, %c3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %b1 = nn.add %y, %x : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %r = nn.relu %b1 : tensor<1x4x8x8xf32>
  %z = nn.conv %r, %c1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  %z2 = nn.conv %z, %c2 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
  %sc = nn.conv %r, %p : (tensor<1x4x8x8xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x8x8xf32>
  %b2 = nn.add %sc, %z2 : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %b2 : tensor<1x8x8x8xf32>
}

// U-Net skips are concatenations, never adds: nothing is raised.
// CHECK-LABEL: func.func @unet
// CHECK-NOT: residual.add
func.func @unet(%x: tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %c3 = ml_program.global_load_const @c3 : tensor<4x4x3x3xf32>
  %y = nn.conv %x, %c3 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %cat = nn.concat %y, %x {axis = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %cat : tensor<1x8x8x8xf32>
}

// -----

ml_program.global private @w1(#ml_program.extern : tensor<16x16xf32>) : tensor<16x16xf32>

// OPT computes the MLP update on [B*T, D] rows and reshapes back: the add
// moves into the state's [B, T, D] shape, so both updates are one stream.
// CHECK-LABEL: func.func @row_reshape
// CHECK: %[[H1:.*]] = residual.add %arg0, %{{.*}} stream 0 layer 0
// CHECK: %[[U:.*]] = nn.reshape %{{.*}} : tensor<6x16xf32> -> tensor<2x3x16xf32>
// CHECK: %[[H2:.*]] = residual.add %[[H1]], %[[U]] stream 0 layer 1
// CHECK: return %[[H2]]
func.func @row_reshape(%h: tensor<2x3x16xf32>) -> tensor<2x3x16xf32> {
  %w1 = ml_program.global_load_const @w1 : tensor<16x16xf32>
  %a = nn.matmul %h, %w1 : (tensor<2x3x16xf32>, tensor<16x16xf32>) -> tensor<2x3x16xf32>
  %h1 = nn.add %h, %a : (tensor<2x3x16xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  %rows = nn.reshape %h1 : tensor<2x3x16xf32> -> tensor<6x16xf32>
  %m = nn.matmul %rows, %w1 : (tensor<6x16xf32>, tensor<16x16xf32>) -> tensor<6x16xf32>
  %s = nn.add %rows, %m : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  %h2 = nn.reshape %s : tensor<6x16xf32> -> tensor<2x3x16xf32>
  return %h2 : tensor<2x3x16xf32>
}
