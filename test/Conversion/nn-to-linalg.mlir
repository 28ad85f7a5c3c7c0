// convert-nn-to-linalg: broadcasting lives in indexing maps, matmul is one
// generic with a reduction loop, a padded convolution becomes tensor.pad +
// linalg.conv_2d_nchw_fchw, and ops without a lowering yet are reported.
// RUN: rewire-opt %s --split-input-file --verify-diagnostics --pass-pipeline="builtin.module(func.func(convert-nn-to-linalg))" | FileCheck %s

// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @bias
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[BIAS]], #{{.*}}]
// CHECK-NOT: nn.
func.func @bias(%x: tensor<2x3x4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = nn.add %x, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @matmul
// CHECK: linalg.generic {indexing_maps = [#[[K]], {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = nn.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// CHECK-LABEL: func.func @conv
// CHECK: tensor.pad
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = nn.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// Grouped convolutions run per group on reshaped operands (pure splits and
// merges of dims: views after bufferization).
// CHECK-LABEL: func.func @grouped_conv
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 8, 8] : tensor<1x4x8x8xf32> into tensor<1x2x2x8x8xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 2, 2, 3, 3] : tensor<4x2x3x3xf32> into tensor<2x2x2x3x3xf32>
// CHECK: linalg.conv_2d_ngchw_gfchw
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x2x6x6xf32> into tensor<1x4x6x6xf32>
func.func @grouped_conv(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = nn.conv %x, %w {group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// Dynamic shapes are not lowered: the op is named, nothing is left behind.
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{failed to legalize operation 'nn.relu' that was explicitly marked illegal}}
  %0 = nn.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Attention: the scores contraction reads k transposed through its map.
// CHECK-LABEL: func.func @attention
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK: linalg.index 3
// CHECK: arith.select
func.func @attention(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x3xf32>) -> tensor<1x2x3x3xf32> {
  %0 = nn.attention %q, %k, %v {causal} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Attention's gradient: the weights computed again (scores contraction,
// causal select, softmax), then the four products, each reading its
// transposed operand through its map (no transposed copy once the dead
// transposes are canonicalized away), no nn op left.
// CHECK-LABEL: func.func @attention_grad
// CHECK: linalg.index 3
// CHECK-COUNT-4: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-NOT: nn.
// CHECK: return
func.func @attention_grad(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x3xf32>, %o: tensor<1x2x3x3xf32>, %g: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x3xf32>) {
  %dq, %dk, %dv = nn.attention_grad %q, %k, %v, %o, %g {causal} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x3xf32>)
  return %dq, %dk, %dv : tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x3xf32>
}

// -----

// A product of a transposed operand (a reverse rule's x^T . g) reads x
// through a swapped map (BLAS takes it as transA); the transpose, now
// dead, goes at the next canonicalization.
// CHECK-DAG: #[[XT:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-LABEL: func.func @matmul_transposed
// CHECK: linalg.generic {indexing_maps = [#[[XT]], {{.*}}]{{.*}} ins(%arg0, %arg1
func.func @matmul_transposed(%x: tensor<4x8xf32>, %y: tensor<4x6xf32>) -> tensor<8x6xf32> {
  %t = nn.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %0 = nn.matmul %t, %y : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}

// -----

// ONNX's unsigned types become signless at the function boundary; the ops
// whose result depends on signedness use arith's unsigned forms.
// CHECK-LABEL: func.func @unsigned
// CHECK-SAME: (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xi8>)
// CHECK: arith.divui
// CHECK: arith.maxui
// CHECK: arith.cmpi ult
// CHECK: arith.uitofp
// CHECK: arith.extui
// CHECK: arith.constant dense<-56> : tensor<i8>
// CHECK-NOT: ui8
func.func @unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xui8>) {
  %q = nn.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %m = nn.max %q, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %lt = nn.compare lt %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %f = nn.cast %a : tensor<4xui8> -> tensor<4xf32>
  %w = nn.cast %a : tensor<4xui8> -> tensor<4xi32>
  %c = nn.constant dense<200> : tensor<ui8>
  %s = nn.add %m, %c : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  return %m, %lt, %f, %w, %s : tensor<4xui8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xui8>
}

// -----

// Signed integers keep the signed forms; integer pow is square-and-multiply.
// CHECK-LABEL: func.func @signed
// CHECK: arith.divsi
// CHECK: arith.cmpi slt
// CHECK: arith.sitofp
// CHECK: arith.muli
func.func @signed(%a: tensor<4xi8>, %b: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi8>) {
  %q = nn.div %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %lt = nn.compare lt %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi1>
  %f = nn.cast %a : tensor<4xi8> -> tensor<4xf32>
  %p = nn.pow %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %q, %lt, %f, %p : tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi8>
}

// -----

// A float power by the constant 2 or 3 is multiplies of the base alone (the
// exponent is not read); any other exponent calls powf.
// CHECK-LABEL: func.func @small_powers
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<2x4xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT: %[[CUBE:.*]] = arith.mulf %[[SQ]], %[[X]] : f32
// CHECK-NEXT: linalg.yield %[[CUBE]]
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<2x4xf32>)
// CHECK-NEXT: ^bb0(%[[X2:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[SQ2:.*]] = arith.mulf %[[X2]], %[[X2]] : f32
// CHECK-NEXT: linalg.yield %[[SQ2]]
// CHECK: math.powf
// CHECK-NOT: math.powf
func.func @small_powers(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %three = nn.constant dense<3.0> : tensor<f32>
  %cube = nn.pow %x, %three : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %two = nn.constant dense<2.0> : tensor<4xf32>
  %sq = nn.pow %x, %two : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %other = nn.constant dense<[2.0, 3.0, 2.0, 2.0]> : tensor<4xf32>
  %mixed = nn.pow %x, %other : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %cube, %sq, %mixed : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
