// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(nn-fuse-attention))" | FileCheck %s

// GPT-2 as the TorchScript exporter writes it: q . k^T (k transposed by an
// nn.transpose), divided by sqrt(D), masked by a constant causal boolean
// with -inf, softmax over the keys, times v.
// CHECK-LABEL: func.func @gpt2
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x4x8xf32>, %[[K:.*]]: tensor<1x2x4x8xf32>, %[[V:.*]]: tensor<1x2x4x8xf32>)
func.func @gpt2(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %mask = arith.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %c = arith.constant dense<2.828427> : tensor<f32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = nn.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %d = nn.div %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = nn.where %mask, %d, %ninf : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = nn.softmax %m {axis = -1 : i64} : tensor<1x2x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  // CHECK-NOT: nn.softmax
  // CHECK-NOT: nn.transpose
  // CHECK: %[[O:.*]] = nn.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 0.353553{{[0-9]*}} : f32}
  // CHECK: return %[[O]]
  return %o : tensor<1x2x4x8xf32>
}

// -----

// An additive mask (0 kept, finfo(float32).min masked) applied before a
// multiplicative scale, with Tk > Tq (queries aligned at the end), and k
// reaching the product as [B, T, H, D] through one transpose: the new k is
// that source permuted to [B, H, T, D].
// CHECK-LABEL: func.func @additive_mask_scale_after
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3x2x4xf32>, %[[KS:.*]]: tensor<2x3x3x4xf32>, %[[V:.*]]: tensor<2x3x3x4xf32>)
func.func @additive_mask_scale_after(%q: tensor<2x3x2x4xf32>, %ks: tensor<2x3x3x4xf32>, %v: tensor<2x3x3x4xf32>) -> tensor<2x3x2x4xf32> {
  %bias = arith.constant dense<[[0.0, 0.0, -3.40282347e+38], [0.0, 0.0, 0.0]]> : tensor<2x3xf32>
  %c = arith.constant dense<0.5> : tensor<f32>
  %kt = nn.transpose %ks {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x3x4xf32>) -> tensor<2x3x4x3xf32>
  %s = nn.matmul %q, %kt : (tensor<2x3x2x4xf32>, tensor<2x3x4x3xf32>) -> tensor<2x3x2x3xf32>
  %m = nn.add %s, %bias : (tensor<2x3x2x3xf32>, tensor<2x3xf32>) -> tensor<2x3x2x3xf32>
  %d = nn.mul %c, %m : (tensor<f32>, tensor<2x3x2x3xf32>) -> tensor<2x3x2x3xf32>
  %p = nn.softmax %d {axis = 3 : i64} : tensor<2x3x2x3xf32>
  %o = nn.matmul %p, %v : (tensor<2x3x2x3xf32>, tensor<2x3x3x4xf32>) -> tensor<2x3x2x4xf32>
  // CHECK: %[[K:.*]] = nn.transpose %[[KS]] {perm = array<i64: 0, 2, 1, 3>}
  // CHECK: nn.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 5.000000e-01 : f32}
  // CHECK-NOT: nn.softmax
  return %o : tensor<2x3x2x4xf32>
}

// -----

// No mask and no scale (ViT/BERT without padding): scale 1, not causal;
// k^T given directly (no transpose to fold): k is k^T transposed back.
// CHECK-LABEL: func.func @unmasked
func.func @unmasked(%q: tensor<1x1x3x2xf32>, %kt: tensor<1x1x2x5xf32>, %v: tensor<1x1x5x6xf32>) -> tensor<1x1x3x6xf32> {
  %s = nn.matmul %q, %kt : (tensor<1x1x3x2xf32>, tensor<1x1x2x5xf32>) -> tensor<1x1x3x5xf32>
  %p = nn.softmax %s {axis = -1 : i64} : tensor<1x1x3x5xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x3x5xf32>, tensor<1x1x5x6xf32>) -> tensor<1x1x3x6xf32>
  // CHECK: %[[K:.*]] = nn.transpose %arg1 {perm = array<i64: 0, 1, 3, 2>}
  // CHECK: nn.attention %arg0, %[[K]], %arg2 {scale = 1.000000e+00 : f32}
  return %o : tensor<1x1x3x6xf32>
}

// -----

// What must stay as it is.

// The softmax is also a result (a backward pass or a caller reads it).
// CHECK-LABEL: func.func @probabilities_used
func.func @probabilities_used(%q: tensor<1x1x3x2xf32>, %kt: tensor<1x1x2x3xf32>, %v: tensor<1x1x3x2xf32>) -> (tensor<1x1x3x2xf32>, tensor<1x1x3x3xf32>) {
  %s = nn.matmul %q, %kt : (tensor<1x1x3x2xf32>, tensor<1x1x2x3xf32>) -> tensor<1x1x3x3xf32>
  %p = nn.softmax %s {axis = -1 : i64} : tensor<1x1x3x3xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x3x3xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32>
  // CHECK-NOT: nn.attention
  return %o, %p : tensor<1x1x3x2xf32>, tensor<1x1x3x3xf32>
}

// -----

// A mask that is not causal (a padding mask, held as a boolean): fused
// with an additive bias where(mask, 0, -inf) that the kernel adds to the
// scaled scores.
// CHECK-LABEL: func.func @padding_mask
func.func @padding_mask(%q: tensor<1x1x2x2xf32>, %kt: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %mask = arith.constant dense<[[true, false], [true, false]]> : tensor<2x2xi1>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %s = nn.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %m = nn.where %mask, %s, %ninf : (tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>) -> tensor<1x1x2x2xf32>
  %p = nn.softmax %m {axis = -1 : i64} : tensor<1x1x2x2xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  // CHECK-DAG: %[[ZERO:.*]] = nn.constant dense<0.000000e+00> : tensor<f32>
  // CHECK-DAG: %[[NINF:.*]] = nn.constant dense<0xFF800000> : tensor<f32>
  // CHECK: %[[BIAS:.*]] = nn.where %{{.*}}, %[[ZERO]], %[[NINF]] : (tensor<2x2xi1>, tensor<f32>, tensor<f32>) -> tensor<2x2xf32>
  // CHECK: nn.attention %arg0, %{{.*}}, %arg2 bias(%[[BIAS]]) {scale = 1.000000e+00 : f32}
  // CHECK-NOT: nn.softmax
  return %o : tensor<1x1x2x2xf32>
}

// -----

// PyTorch's SDPA decomposition (TorchScript exporter): q and k^T each
// scaled by sqrt(scale), a mask computed by the graph added to the scores
// (runtime data: a bias operand), and the dynamo exporter's k^T written as
// reshape -> 3-D transpose -> reshape. A scale outside the mask scales the
// bias too.
// CHECK-LABEL: func.func @sdpa
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x8xf32>, %[[K:.*]]: tensor<2x4x8x8xf32>, %[[V:.*]]: tensor<2x4x8x8xf32>, %[[M:.*]]: tensor<2x1x8x8xf32>)
func.func @sdpa(%q: tensor<2x4x8x8xf32>, %k: tensor<2x4x8x8xf32>, %v: tensor<2x4x8x8xf32>, %mask: tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %c = arith.constant dense<0.594603539> : tensor<f32>
  %r = nn.reshape %k : tensor<2x4x8x8xf32> -> tensor<8x8x8xf32>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1>} : (tensor<8x8x8xf32>) -> tensor<8x8x8xf32>
  %kt = nn.reshape %t : tensor<8x8x8xf32> -> tensor<2x4x8x8xf32>
  %qs = nn.mul %q, %c : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %ks = nn.mul %kt, %c : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %s = nn.matmul %qs, %ks : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %a = nn.add %s, %mask : (tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %d = nn.mul %a, %two : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %p = nn.softmax %d {axis = 3 : i64} : tensor<2x4x8x8xf32>
  %o = nn.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: %[[TWO:.*]] = nn.constant dense<2.000000e+00> : tensor<f32>
  // CHECK: %[[B:.*]] = nn.mul %[[M]], %[[TWO]]
  // CHECK: nn.attention %[[Q]], %[[K]], %[[V]] bias(%[[B]]) {scale = 0.70710{{[0-9]*}} : f32}
  // CHECK-NOT: nn.softmax
  return %o : tensor<2x4x8x8xf32>
}

// -----

// The dynamo exporter's k^T of grouped-query attention (LLaMA: 2 key-value
// heads, each read by 2 query heads): the expansion [B, Hkv, H/Hkv, T, D]
// reshaped to [B*H, T, D], transposed, reshaped back. k is that expansion
// reshaped to [B, H, T, D], rows of keys, not k^T transposed.
// CHECK-LABEL: func.func @grouped_keys
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x8x16xf32>, %[[KV:.*]]: tensor<1x2x2x8x16xf32>, %[[V:.*]]: tensor<1x4x8x16xf32>)
func.func @grouped_keys(%q: tensor<1x4x8x16xf32>, %kv: tensor<1x2x2x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %r = nn.reshape %kv : tensor<1x2x2x8x16xf32> -> tensor<4x8x16xf32>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %kt = nn.reshape %t : tensor<4x16x8xf32> -> tensor<1x4x16x8xf32>
  %s = nn.matmul %q, %kt : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
  %p = nn.softmax %s {axis = 3 : i64} : tensor<1x4x8x8xf32>
  %o = nn.matmul %p, %v : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  // CHECK: %[[K:.*]] = nn.reshape %[[KV]] : tensor<1x2x2x8x16xf32> -> tensor<1x4x8x16xf32>
  // CHECK-NOT: nn.transpose
  // CHECK: nn.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+00 : f32}
  return %o : tensor<1x4x8x16xf32>
}

// -----

// A causal pattern whose fill is not low enough to zero a weight (-100 is a
// real score next to others near 0): the mask changes the result, not fused.
// CHECK-LABEL: func.func @soft_fill
func.func @soft_fill(%q: tensor<1x1x2x2xf32>, %kt: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %mask = arith.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  %fill = arith.constant dense<-100.0> : tensor<f32>
  %s = nn.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %m = nn.where %mask, %s, %fill : (tensor<2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>) -> tensor<1x1x2x2xf32>
  %p = nn.softmax %m {axis = -1 : i64} : tensor<1x1x2x2xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  // CHECK-NOT: nn.attention
  return %o : tensor<1x1x2x2xf32>
}

// -----

// A softmax over the queries (axis 2), and a negative scale: neither is
// attention as the kernel computes it.
// CHECK-LABEL: func.func @wrong_axis
func.func @wrong_axis(%q: tensor<1x1x2x2xf32>, %kt: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %s = nn.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = nn.softmax %s {axis = 2 : i64} : tensor<1x1x2x2xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  // CHECK-NOT: nn.attention
  return %o : tensor<1x1x2x2xf32>
}

// CHECK-LABEL: func.func @negative_scale
func.func @negative_scale(%q: tensor<1x1x2x2xf32>, %kt: tensor<1x1x2x2xf32>, %v: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %c = arith.constant dense<-2.0> : tensor<f32>
  %s = nn.matmul %q, %kt : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %d = nn.div %s, %c : (tensor<1x1x2x2xf32>, tensor<f32>) -> tensor<1x1x2x2xf32>
  %p = nn.softmax %d {axis = -1 : i64} : tensor<1x1x2x2xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  // CHECK: nn.div
  // CHECK-NOT: nn.attention
  return %o : tensor<1x1x2x2xf32>
}
