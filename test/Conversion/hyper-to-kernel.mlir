// RUN: rewire-opt %s --split-input-file --rewire-hyper-to-kernel="threads=2" --cse | FileCheck %s

// Per-token coefficients (mHC): the two token dims collapsed into one for
// every operand, each read through a read-only buffer of any strides
// (pointer, offset, strides), the three results fresh 64-byte-aligned
// buffers expanded back; then tokens, n, d and the threads.
// CHECK-LABEL: func.func @per_token
func.func @per_token(%g: tensor<2x3x4x8xf32>, %x: tensor<2x3x4x8xf32>, %u: tensor<2x3x8xf32>, %post: tensor<2x3x4xf32>)
    -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>) {
  // CHECK-DAG: %[[GC:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x4x8xf32> into tensor<6x4x8xf32>
  // CHECK-DAG: %[[GB:.*]] = bufferization.to_buffer %[[GC]] read_only : tensor<6x4x8xf32> to memref<6x4x8xf32, strided<[?, ?, ?], offset: ?>>
  // CHECK-DAG: %[[UC:.*]] = tensor.collapse_shape %arg2 {{\[\[}}0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
  // CHECK-DAG: %[[PC:.*]] = tensor.collapse_shape %arg3 {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  // CHECK-DAG: %[[DU:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x8xf32>
  // CHECK-DAG: %[[DP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x4xf32>
  // CHECK-DAG: %[[DR:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x4x4xf32>
  // CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
  // CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
  // CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
  // CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
  // CHECK: call @rewire_hyper_write_grad({{.*}}, %[[C6]], %[[C4]], %[[C8]], %[[C2]])
  // CHECK: %[[T:.*]] = bufferization.to_tensor %[[DU]] restrict writable : memref<6x8xf32> to tensor<6x8xf32>
  // CHECK: tensor.expand_shape %[[T]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 8]
  // CHECK: bufferization.to_tensor %[[DP]] restrict writable
  // CHECK: bufferization.to_tensor %[[DR]] restrict writable
  // CHECK-NOT: residual.hyper_write_grad
  %du, %dpost, %dres = residual.hyper_write_grad %g, %x, %u, %post stream 0 layer 1
      : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x8xf32>, tensor<2x3x4xf32>
      -> tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>
  return %du, %dpost, %dres : tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>
}
// CHECK: func.func private @rewire_hyper_write_grad(index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index)

// -----

// Static coefficients (HC): post read as [n] with token stride 0; one
// token dim is used as it is.
// CHECK-LABEL: func.func @static_post
func.func @static_post(%g: tensor<5x2x8xf32>, %x: tensor<5x2x8xf32>, %u: tensor<5x8xf32>, %post: tensor<2xf32>)
    -> (tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>) {
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[PB:.*]] = bufferization.to_buffer %arg3 read_only : tensor<2xf32> to memref<2xf32, strided<[?], offset: ?>>
  // CHECK-DAG: %{{[^,]*}}, %[[OFF:[^,]*]], %{{[^,]*}}, %[[STRIDE:[^ ]*]] = memref.extract_strided_metadata %[[PB]]
  // CHECK-DAG: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[PB]]
  // CHECK-NOT: tensor.collapse_shape
  // CHECK: call @rewire_hyper_write_grad({{.*}}, %[[PTR]], %[[OFF]], %[[C0]], %[[STRIDE]], {{.*}})
  // CHECK-NOT: tensor.expand_shape
  %du, %dpost, %dres = residual.hyper_write_grad %g, %x, %u, %post stream 0 layer 0
      : tensor<5x2x8xf32>, tensor<5x2x8xf32>, tensor<5x8xf32>, tensor<2xf32>
      -> tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>
  return %du, %dpost, %dres : tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>
}

// -----

// Other element types stay for residual-decompose.
// CHECK-LABEL: func.func @f16
func.func @f16(%g: tensor<5x2x8xf16>, %x: tensor<5x2x8xf16>, %u: tensor<5x8xf16>, %post: tensor<5x2xf16>)
    -> (tensor<5x8xf16>, tensor<5x2xf16>, tensor<5x2x2xf16>) {
  // CHECK: residual.hyper_write_grad
  // CHECK-NOT: call
  %du, %dpost, %dres = residual.hyper_write_grad %g, %x, %u, %post stream 0 layer 0
      : tensor<5x2x8xf16>, tensor<5x2x8xf16>, tensor<5x8xf16>, tensor<5x2xf16>
      -> tensor<5x8xf16>, tensor<5x2xf16>, tensor<5x2x2xf16>
  return %du, %dpost, %dres : tensor<5x8xf16>, tensor<5x2xf16>, tensor<5x2x2xf16>
}

// -----

// No token dims: one unit token, the operands expanded to [1, ...] and the
// results collapsed back.
// CHECK-LABEL: func.func @one_token
func.func @one_token(%g: tensor<4x8xf32>, %x: tensor<4x8xf32>, %u: tensor<8xf32>, %post: tensor<4xf32>)
    -> (tensor<8xf32>, tensor<4xf32>, tensor<4x4xf32>) {
  // CHECK-DAG: tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  // CHECK-DAG: tensor.expand_shape %arg2 {{\[\[}}0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  // CHECK-DAG: tensor.expand_shape %arg3 {{\[\[}}0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
  // CHECK: call @rewire_hyper_write_grad(
  // CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<1x8xf32> into tensor<8xf32>
  // CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<1x4x4xf32> into tensor<4x4xf32>
  %du, %dpost, %dres = residual.hyper_write_grad %g, %x, %u, %post stream 0 layer 0
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>
      -> tensor<8xf32>, tensor<4xf32>, tensor<4x4xf32>
  return %du, %dpost, %dres : tensor<8xf32>, tensor<4xf32>, tensor<4x4xf32>
}

// -----

// An mHC site's three projection reverses (one stream, equal rms scales
// computed apart) become one call on dz and p concatenated (4 + 4 + 16
// columns) and W in its three parts (no concatenated copy); the first two
// dX only entered the running sum, which now skips them; dW comes back in
// the same parts, each its own buffer.
// CHECK-LABEL: func.func @site
func.func @site(%x: tensor<2x3x4x8xf32>, %acc: tensor<2x3x4x8xf32>, %ms: tensor<2x3x1xf32>,
                %dz1: tensor<2x3x4xf32>, %p1: tensor<2x3x4xf32>, %w1: tensor<32x4xf32>,
                %dz2: tensor<2x3x4xf32>, %p2: tensor<2x3x4xf32>, %w2: tensor<32x4xf32>,
                %dz3: tensor<2x3x16xf32>, %p3: tensor<2x3x16xf32>, %w3: tensor<32x16xf32>)
    -> (tensor<2x3x4x8xf32>, tensor<32x4xf32>, tensor<32x4xf32>, tensor<32x16xf32>) {
  // CHECK-DAG: %[[DZ:.*]] = nn.concat %arg9, %arg6, %arg3 {axis = 2 : i64} : (tensor<2x3x16xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x24xf32>
  // CHECK-DAG: nn.concat %arg10, %arg7, %arg4 {axis = 2 : i64}
  // CHECK-DAG: %[[W3:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<32x16xf32, strided<[?, ?], offset: ?>>
  // CHECK-DAG: %[[W2:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<32x4xf32, strided<[?, ?], offset: ?>>
  // CHECK-DAG: %[[DX:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x4x8xf32>
  // CHECK-DAG: %[[DW3:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32x16xf32>
  // CHECK-DAG: %[[DW2:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32x4xf32>
  // CHECK-DAG: %[[DW1:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32x4xf32>
  // CHECK: call @rewire_hyper_project_grad({{.*}}, %[[W3]], %{{.*}}, %{{.*}}, %{{.*}}, %c16, %[[W2]], %{{.*}}, %{{.*}}, %{{.*}}, %c4, %{{.*}}, %c4, {{.*}}, %c6{{.*}}, %c4{{.*}}, %c8{{.*}}, %c24{{.*}}, %c2{{.*}})
  // CHECK: %[[DXT:.*]] = bufferization.to_tensor %[[DX]] restrict writable
  // CHECK: %[[DXE:.*]] = tensor.expand_shape %[[DXT]]
  // CHECK: %[[G3:.*]] = bufferization.to_tensor %[[DW3]] restrict writable
  // CHECK: %[[G2:.*]] = bufferization.to_tensor %[[DW2]] restrict writable
  // CHECK: %[[G1:.*]] = bufferization.to_tensor %[[DW1]] restrict writable
  // CHECK: %[[SUM:.*]] = nn.add %arg1, %[[DXE]]
  // CHECK: return %[[SUM]], %[[G1]], %[[G2]], %[[G3]]
  // CHECK-NOT: residual.hyper_project_grad
  // CHECK-NOT: nn.split
  %r1 = nn.sqrt %ms : tensor<2x3x1xf32>
  %dx3, %dw3 = residual.hyper_project_grad %dz3, %p3, %r1, %x, %w3
      : tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x1xf32>, tensor<2x3x4x8xf32>, tensor<32x16xf32>
      -> tensor<2x3x4x8xf32>, tensor<32x16xf32>
  %s1 = nn.add %acc, %dx3 : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  %r2 = nn.sqrt %ms : tensor<2x3x1xf32>
  %dx2, %dw2 = residual.hyper_project_grad %dz2, %p2, %r2, %x, %w2
      : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x4x8xf32>, tensor<32x4xf32>
      -> tensor<2x3x4x8xf32>, tensor<32x4xf32>
  %s2 = nn.add %dx2, %s1 : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  %dx1, %dw1 = residual.hyper_project_grad %dz1, %p1, %r1, %x, %w1
      : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x4x8xf32>, tensor<32x4xf32>
      -> tensor<2x3x4x8xf32>, tensor<32x4xf32>
  %s3 = nn.add %s2, %dx1 : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %s3, %dw1, %dw2, %dw3 : tensor<2x3x4x8xf32>, tensor<32x4xf32>, tensor<32x4xf32>, tensor<32x16xf32>
}
// The W and dW concatenations are gone.
// CHECK-NOT: nn.concat %arg11
// CHECK: func.func private @rewire_hyper_project_grad(index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index)

// -----

// Reverses whose rms scales differ (other streams' or other epsilons') are
// not merged: two calls. A dX used other than in a sum also keeps its own.
// CHECK-LABEL: func.func @apart
func.func @apart(%x: tensor<6x2x8xf32>, %r1: tensor<6x1xf32>, %r2: tensor<6x1xf32>,
                 %dz: tensor<6x2xf32>, %p: tensor<6x2xf32>, %w: tensor<16x2xf32>)
    -> (tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<16x2xf32>, tensor<16x2xf32>) {
  // CHECK-COUNT-2: call @rewire_hyper_project_grad
  // CHECK-NOT: nn.concat
  %dx1, %dw1 = residual.hyper_project_grad %dz, %p, %r1, %x, %w
      : tensor<6x2xf32>, tensor<6x2xf32>, tensor<6x1xf32>, tensor<6x2x8xf32>, tensor<16x2xf32>
      -> tensor<6x2x8xf32>, tensor<16x2xf32>
  %dx2, %dw2 = residual.hyper_project_grad %dz, %p, %r2, %x, %w
      : tensor<6x2xf32>, tensor<6x2xf32>, tensor<6x1xf32>, tensor<6x2x8xf32>, tensor<16x2xf32>
      -> tensor<6x2x8xf32>, tensor<16x2xf32>
  return %dx1, %dx2, %dw1, %dw2 : tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<16x2xf32>, tensor<16x2xf32>
}

// -----

// An mHC write and the coefficient sets of the stream it writes (4 + 4 +
// 16 columns, in their order; a set with another eps stays an op): one
// call, taking the sets' weights as W's three parts, returns the stream, p
// and the rms scale r; each set is its map of (its columns of p) r.
// CHECK-LABEL: func.func @write_project
func.func @write_project(%x: tensor<2x3x4x8xf32>, %u: tensor<2x3x8xf32>, %post: tensor<2x3x4xf32>,
                         %res: tensor<2x3x4x4xf32>, %a: tensor<f32>, %w1: tensor<32x4xf32>,
                         %b1: tensor<4xf32>, %w2: tensor<32x4xf32>, %w3: tensor<32x16xf32>,
                         %b3: tensor<4x4xf32>)
    -> (tensor<2x3x4x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4xf32>) {
  // CHECK-NOT: nn.concat
  // CHECK-DAG: %[[W1:.*]] = bufferization.to_buffer %arg5 read_only
  // CHECK-DAG: %[[W2:.*]] = bufferization.to_buffer %arg7 read_only
  // CHECK-DAG: %[[W3:.*]] = bufferization.to_buffer %arg8 read_only
  // CHECK-DAG: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x4x8xf32>
  // CHECK-DAG: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x24xf32>
  // CHECK-DAG: %[[R:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x1xf32>
  // CHECK-DAG: %[[EPS:.*]] = arith.constant 9.99999997E-7 : f32
  // CHECK: call @rewire_hyper_write_project({{.*}}, %c4, {{.*}}, %c4, {{.*}}, %c16, {{.*}}, %c6{{.*}}, %c4{{.*}}, %c8{{.*}}, %c24{{.*}}, %[[EPS]], %c2{{.*}})
  // CHECK: %[[PS:.*]]:3 = nn.split %{{.*}} {axis = 2 : i64, sizes = array<i64: 4, 4, 16>}
  // CHECK: nn.sigmoid
  // CHECK: nn.sinkhorn
  // CHECK: residual.hyper_coeffs sigmoid {{.*}} eps 1.000000e-05
  // CHECK: func.func private @rewire_hyper_write_project(index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, f32, index)
  // CHECK-NOT: residual.hyper_write
  %y = residual.hyper_write %x, %u, %post, %res stream 0 layer 0 : tensor<2x3x4x8xf32>, tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>
  %c1 = residual.hyper_coeffs sigmoid %y, %a, %w1, %b1 stream 0 layer 1 : tensor<2x3x4x8xf32>, tensor<f32>, tensor<32x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %c2 = residual.hyper_coeffs double_sigmoid %y, %a, %w2, %b1 stream 0 layer 1 : tensor<2x3x4x8xf32>, tensor<f32>, tensor<32x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %c3 = residual.hyper_coeffs sinkhorn %y, %a, %w3, %b3 iters 20 stream 0 layer 1 : tensor<2x3x4x8xf32>, tensor<f32>, tensor<32x16xf32>, tensor<4x4xf32> -> tensor<2x3x4x4xf32>
  %c4 = residual.hyper_coeffs sigmoid %y, %a, %w1, %b1 stream 0 layer 1 {eps = 1.0e-5 : f64} : tensor<2x3x4x8xf32>, tensor<f32>, tensor<32x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  return %y, %c1, %c2, %c3, %c4 : tensor<2x3x4x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4xf32>
}

// -----

// The stream's start (n copies of h) and its first site's coefficient
// sets: the same call with no stream to mix (null x, post and res).
// CHECK-LABEL: func.func @expand_project
func.func @expand_project(%h: tensor<6x8xf32>, %a: tensor<f32>, %w1: tensor<32x4xf32>,
                          %b1: tensor<4xf32>) -> (tensor<6x4x8xf32>, tensor<6x4xf32>) {
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[H:.*]] = bufferization.to_buffer %arg0 read_only
  // CHECK-DAG: %[[HP:.*]] = memref.extract_aligned_pointer_as_index %[[H]]
  // CHECK: call @rewire_hyper_write_project(%[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[HP]], {{.*}}, %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], {{.*}}, %c6{{.*}}, %c4{{.*}}, %c8{{.*}}, %c4{{.*}})
  // CHECK: nn.sigmoid
  // CHECK-NOT: residual.hyper_expand
  // CHECK-NOT: residual.hyper_coeffs
  %x = residual.hyper_expand %h stream 0 layer 0 : tensor<6x8xf32> -> tensor<6x4x8xf32>
  %c = residual.hyper_coeffs sigmoid %x, %a, %w1, %b1 stream 0 layer 0 : tensor<6x4x8xf32>, tensor<f32>, tensor<32x4xf32>, tensor<4xf32> -> tensor<6x4xf32>
  return %x, %c : tensor<6x4x8xf32>, tensor<6x4xf32>
}

// -----

// A stream adjoint the autodiff engine sums after the next site's reverse
// (res^T h + pre (x) dh + e, as a tree of nn.add): one call of
// rewire_hyper_write_grad_sum in the sum's place, which writes g (a fresh
// dense buffer, pointer and offset) for the sum's other reader (here the
// reverse of the write before, ahead of the hyper_write_grad); the adds go.
// Operands: h, res (5 values each), pre, dh (4), e (5), g (2), then x, u,
// post and the results as for rewire_hyper_write_grad.
// CHECK-LABEL: func.func @write_grad_sum
func.func @write_grad_sum(%h: tensor<2x3x4x8xf32>, %res: tensor<2x3x4x4xf32>, %pre: tensor<2x3x4xf32>,
                          %dh: tensor<2x3x8xf32>, %e: tensor<2x3x4x8xf32>, %x: tensor<2x3x4x8xf32>,
                          %u: tensor<2x3x8xf32>, %post: tensor<2x3x4xf32>, %res2: tensor<2x3x4x4xf32>)
    -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) {
  // CHECK-DAG: %[[HC:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x4x8xf32> into tensor<6x4x8xf32>
  // CHECK-DAG: %[[RC:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x4x4xf32> into tensor<6x4x4xf32>
  // CHECK-DAG: %[[PC:.*]] = tensor.collapse_shape %arg2 {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  // CHECK-DAG: %[[DC:.*]] = tensor.collapse_shape %arg3 {{\[\[}}0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
  // CHECK-DAG: %[[EC:.*]] = tensor.collapse_shape %arg4 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x4x8xf32> into tensor<6x4x8xf32>
  // CHECK-DAG: %[[G:.*]] = memref.alloc() {alignment = 64 : i64} : memref<6x4x8xf32>
  // CHECK-DAG: %[[GP:.*]] = memref.extract_aligned_pointer_as_index %[[G]]
  // CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
  // CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
  // CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
  // CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
  // CHECK-NOT: nn.add
  // CHECK: call @rewire_hyper_write_grad_sum({{.*}}, %[[GP]], %{{[^,]*}}, {{.*}}, %[[C6]], %[[C4]], %[[C8]], %[[C2]])
  // CHECK: %[[GT:.*]] = bufferization.to_tensor %[[G]] restrict writable : memref<6x4x8xf32> to tensor<6x4x8xf32>
  // CHECK: %[[GE:.*]] = tensor.expand_shape %[[GT]] {{\[\[}}0, 1], [2], [3]] output_shape [2, 3, 4, 8]
  // CHECK: nn.matmul %{{.*}}, %[[GE]]
  // CHECK-NOT: residual.hyper_write_grad
  %t = nn.transpose %res {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %m = nn.matmul %t, %h : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  %p1 = nn.unsqueeze %pre {axes = array<i64: 3>} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  %d1 = nn.unsqueeze %dh {axes = array<i64: 2>} : (tensor<2x3x8xf32>) -> tensor<2x3x1x8xf32>
  %o = nn.mul %p1, %d1 : (tensor<2x3x4x1xf32>, tensor<2x3x1x8xf32>) -> tensor<2x3x4x8xf32>
  %s = nn.add %m, %o : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  %g = nn.add %s, %e : (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  %t2 = nn.transpose %res2 {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %next = nn.matmul %t2, %g : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  %du, %dpost, %dres = residual.hyper_write_grad %g, %x, %u, %post stream 0 layer 1
      : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x8xf32>, tensor<2x3x4xf32>
      -> tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>
  // An adjoint that is no sum (here an argument) in the same module: the
  // plain call.
  // CHECK: call @rewire_hyper_write_grad(
  %du2, %dpost2, %dres2 = residual.hyper_write_grad %h, %x, %u, %post stream 0 layer 2
      : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<2x3x8xf32>, tensor<2x3x4xf32>
      -> tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>
  %sum = nn.add %du, %du2 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %sum, %dpost, %dres, %next : tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>
}
// CHECK: func.func private @rewire_hyper_write_grad_sum(index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index)

// -----

// Static res and pre (HC): token stride 0; the terms in any order, without e.
// CHECK-LABEL: func.func @write_grad_sum_static
func.func @write_grad_sum_static(%h: tensor<5x2x8xf32>, %res: tensor<2x2xf32>, %pre: tensor<2xf32>,
                                 %dh: tensor<5x8xf32>, %x: tensor<5x2x8xf32>, %u: tensor<5x8xf32>, %post: tensor<2xf32>)
    -> (tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>) {
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[RB:.*]] = bufferization.to_buffer %arg1 read_only : tensor<2x2xf32> to memref<2x2xf32, strided<[?, ?], offset: ?>>
  // CHECK-DAG: %{{[^,]*}}, %[[ROFF:[^,]*]], %{{[^,]*}}:2, %[[RS:[^ ]*]]:2 = memref.extract_strided_metadata %[[RB]]
  // CHECK-DAG: %[[RP:.*]] = memref.extract_aligned_pointer_as_index %[[RB]]
  // CHECK-DAG: %[[PB:.*]] = bufferization.to_buffer %arg2 read_only : tensor<2xf32> to memref<2xf32, strided<[?], offset: ?>>
  // CHECK-DAG: %{{[^,]*}}, %[[POFF:[^,]*]], %{{[^,]*}}, %[[PS:[^ ]*]] = memref.extract_strided_metadata %[[PB]]
  // CHECK-DAG: %[[PP:.*]] = memref.extract_aligned_pointer_as_index %[[PB]]
  // CHECK: call @rewire_hyper_write_grad_sum(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[RP]], %[[ROFF]], %[[C0]], %[[RS]]#0, %[[RS]]#1, %[[PP]], %[[POFF]], %[[C0]], %[[PS]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C0]],
  // CHECK-NOT: nn.add
  %p1 = nn.unsqueeze %pre {axes = array<i64: 1>} : (tensor<2xf32>) -> tensor<2x1xf32>
  %d1 = nn.unsqueeze %dh {axes = array<i64: 1>} : (tensor<5x8xf32>) -> tensor<5x1x8xf32>
  %o = nn.mul %d1, %p1 : (tensor<5x1x8xf32>, tensor<2x1xf32>) -> tensor<5x2x8xf32>
  %t = nn.transpose %res {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %m = nn.matmul %t, %h : (tensor<2x2xf32>, tensor<5x2x8xf32>) -> tensor<5x2x8xf32>
  %g = nn.add %o, %m : (tensor<5x2x8xf32>, tensor<5x2x8xf32>) -> tensor<5x2x8xf32>
  %du, %dpost, %dres = residual.hyper_write_grad %g, %x, %u, %post stream 0 layer 0
      : tensor<5x2x8xf32>, tensor<5x2x8xf32>, tensor<5x8xf32>, tensor<2xf32>
      -> tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>
  return %du, %dpost, %dres : tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>
}

// -----

// Sums the kernel does not take stay: two terms of the stream's type
// besides res^T h (HC's dynamic coefficients add more), and a sum without
// res^T h.
// CHECK-LABEL: func.func @write_grad_sum_other
func.func @write_grad_sum_other(%h: tensor<5x2x8xf32>, %res: tensor<5x2x2xf32>, %e1: tensor<5x2x8xf32>,
                                %e2: tensor<5x2x8xf32>, %x: tensor<5x2x8xf32>, %u: tensor<5x8xf32>, %post: tensor<5x2xf32>)
    -> (tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>, tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>) {
  // CHECK: nn.add
  // CHECK: nn.add
  // CHECK: call @rewire_hyper_write_grad(
  // CHECK: nn.add
  // CHECK: call @rewire_hyper_write_grad(
  // CHECK-NOT: rewire_hyper_write_grad_sum
  %t = nn.transpose %res {perm = array<i64: 0, 2, 1>} : (tensor<5x2x2xf32>) -> tensor<5x2x2xf32>
  %m = nn.matmul %t, %h : (tensor<5x2x2xf32>, tensor<5x2x8xf32>) -> tensor<5x2x8xf32>
  %s = nn.add %m, %e1 : (tensor<5x2x8xf32>, tensor<5x2x8xf32>) -> tensor<5x2x8xf32>
  %g = nn.add %s, %e2 : (tensor<5x2x8xf32>, tensor<5x2x8xf32>) -> tensor<5x2x8xf32>
  %du, %dpost, %dres = residual.hyper_write_grad %g, %x, %u, %post stream 0 layer 0
      : tensor<5x2x8xf32>, tensor<5x2x8xf32>, tensor<5x8xf32>, tensor<5x2xf32>
      -> tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>
  %g2 = nn.add %e1, %e2 : (tensor<5x2x8xf32>, tensor<5x2x8xf32>) -> tensor<5x2x8xf32>
  %du2, %dpost2, %dres2 = residual.hyper_write_grad %g2, %x, %u, %post stream 0 layer 1
      : tensor<5x2x8xf32>, tensor<5x2x8xf32>, tensor<5x8xf32>, tensor<5x2xf32>
      -> tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>
  return %du, %dpost, %dres, %du2, %dpost2, %dres2 : tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>, tensor<5x8xf32>, tensor<5x2xf32>, tensor<5x2x2xf32>
}
