// RUN: rewire-opt %s --split-input-file --rewire-attention-to-kernel="threads=2" --cse | FileCheck %s

// A static f32 attention becomes one call: each operand read through a
// read-only buffer of any strides (pointer, offset, 4 strides), no bias (six
// zeros), the result a fresh 64-byte-aligned buffer; then B, H, Tq, Tk, D,
// Dv, causal, threads and the scale (the default 1/sqrt(D) made explicit).
// CHECK-LABEL: func.func @causal
func.func @causal(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  // CHECK-DAG: %[[QB:.*]] = bufferization.to_buffer %arg0 read_only : tensor<1x2x3x8xf32> to memref<1x2x3x8xf32, strided<[?, ?, ?, ?], offset: ?>>
  // CHECK-DAG: %[[KB:.*]] = bufferization.to_buffer %arg1 read_only
  // CHECK-DAG: %[[VB:.*]] = bufferization.to_buffer %arg2 read_only
  // CHECK-DAG: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x2x3x4xf32>
  // CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
  // CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
  // CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
  // CHECK-DAG: %[[C5:.*]] = arith.constant 5 : index
  // CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
  // CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
  // CHECK-DAG: %[[S:.*]] = arith.constant 0.353553{{[0-9]*}} : f32
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK: call @rewire_attention({{.*}}, %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[C1]], %[[C2]], %[[C3]], %[[C5]], %[[C8]], %[[C4]], %[[C1]], %[[C2]], %[[S]])
  // CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
  // CHECK: return %[[R]]
  %o = nn.attention %q, %k, %v {causal} : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
// CHECK: func.func private @rewire_attention(index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, f32)

// -----

// Not causal, an explicit scale: passed as is.
// CHECK-LABEL: func.func @scaled
func.func @scaled(%q: tensor<2x1x4x4xf32>, %k: tensor<2x1x4x4xf32>, %v: tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32> {
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[S:.*]] = arith.constant 1.250000e-01 : f32
  // CHECK: call @rewire_attention({{.*}}, %[[C0]], %{{[^,]*}}, %[[S]])
  %o = nn.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}

// -----

// A bias broadcast over batch and heads ([Tq, Tk]) and one over queries
// ([B, 1, 1, Tk]): stride 0 along the dimensions they broadcast, their own
// strides along the others.
// CHECK-LABEL: func.func @bias
func.func @bias(%q: tensor<2x3x4x8xf32>, %m: tensor<4x6xf32>, %p: tensor<2x1x1x6xf32>) -> (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) {
  %k = arith.constant dense<1.0> : tensor<2x3x6x8xf32>
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK: %[[MB:.*]] = bufferization.to_buffer %arg1 read_only : tensor<4x6xf32> to memref<4x6xf32, strided<[?, ?], offset: ?>>
  // CHECK-DAG: %[[MP:.*]] = memref.extract_aligned_pointer_as_index %[[MB]]
  // CHECK-DAG: %{{.*}}, %[[MOFF:.*]], %{{.*}}:2, %[[MS:.*]]:2 = memref.extract_strided_metadata %[[MB]]
  // CHECK: call @rewire_attention({{.*}}, %[[MP]], %[[MOFF]], %[[C0]], %[[C0]], %[[MS]]#0, %[[MS]]#1, {{.*}})
  %a = nn.attention %q, %k, %k bias(%m) : (tensor<2x3x4x8xf32>, tensor<2x3x6x8xf32>, tensor<2x3x6x8xf32>, tensor<4x6xf32>) -> tensor<2x3x4x8xf32>
  // CHECK: %[[PB:.*]] = bufferization.to_buffer %arg2 read_only
  // CHECK-DAG: %[[PP:.*]] = memref.extract_aligned_pointer_as_index %[[PB]]
  // CHECK-DAG: %{{.*}}, %[[POFF:.*]], %{{.*}}:4, %[[PS:.*]]:4 = memref.extract_strided_metadata %[[PB]]
  // CHECK: call @rewire_attention({{.*}}, %[[PP]], %[[POFF]], %[[PS]]#0, %[[C0]], %[[C0]], %[[PS]]#3, {{.*}})
  %b = nn.attention %q, %k, %k bias(%p) : (tensor<2x3x4x8xf32>, tensor<2x3x6x8xf32>, tensor<2x3x6x8xf32>, tensor<2x1x1x6xf32>) -> tensor<2x3x4x8xf32>
  return %a, %b : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>
}

// -----

// Dynamic shapes and other element types are left to the expansion.
// CHECK-LABEL: func.func @left
func.func @left(%q: tensor<?x1x4x4xf32>, %h: tensor<1x1x4x4xf16>) -> (tensor<?x1x4x4xf32>, tensor<1x1x4x4xf16>) {
  // CHECK-NOT: call @rewire_attention
  // CHECK: nn.attention
  // CHECK: nn.attention
  %a = nn.attention %q, %q, %q : (tensor<?x1x4x4xf32>, tensor<?x1x4x4xf32>, tensor<?x1x4x4xf32>) -> tensor<?x1x4x4xf32>
  %b = nn.attention %h, %h, %h : (tensor<1x1x4x4xf16>, tensor<1x1x4x4xf16>, tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf16>
  return %a, %b : tensor<?x1x4x4xf32>, tensor<1x1x4x4xf16>
}
// CHECK-NOT: func.func private @rewire_attention

// -----

// nn.attention_grad calls the backward kernel: q, k, v, the bias (none:
// six zeros), o and do read in place, dq, dk, dv fresh buffers, then the
// same sizes, flags and scale.
// CHECK-LABEL: func.func @backward
func.func @backward(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>,
                    %o: tensor<1x2x3x4xf32>, %g: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x4xf32>) {
  // CHECK-DAG: %[[OB:.*]] = bufferization.to_buffer %arg3 read_only
  // CHECK-DAG: %[[GB:.*]] = bufferization.to_buffer %arg4 read_only
  // CHECK-DAG: %[[DQ:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x2x3x8xf32>
  // CHECK-DAG: %[[DK:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x2x5x8xf32>
  // CHECK-DAG: %[[DV:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x2x5x4xf32>
  // CHECK: call @rewire_attention_backward(
  // CHECK-DAG: bufferization.to_tensor %[[DQ]] restrict writable
  // CHECK-DAG: bufferization.to_tensor %[[DK]] restrict writable
  // CHECK-DAG: bufferization.to_tensor %[[DV]] restrict writable
  %dq, %dk, %dv = nn.attention_grad %q, %k, %v, %o, %g {causal} : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x4xf32>)
  return %dq, %dk, %dv : tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x4xf32>
}
// CHECK: func.func private @rewire_attention_backward(index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, index, f32)

// -----

// Heads moved by transposes, as exporters write them: q read through its
// [B, T, H, D] source's strides (dims 0, 2, 1, 3), no copy; the result's one
// use transposes it back, so the kernel writes the [B, T, H, Dv] buffer.
// CHECK-LABEL: func.func @heads_moved
func.func @heads_moved(%x: tensor<1x3x2x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x3x2x8xf32> {
  // CHECK-NOT: nn.transpose
  // CHECK-DAG: %[[XB:.*]] = bufferization.to_buffer %arg0 read_only : tensor<1x3x2x8xf32>
  // CHECK-DAG: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x3x2x8xf32>
  // CHECK-DAG: %[[BX:.*]], %[[OX:.*]], %{{.*}}:4, %[[SX:.*]]:4 = memref.extract_strided_metadata %[[XB]]
  // CHECK: call @rewire_attention(%{{.*}}, %[[OX]], %[[SX]]#0, %[[SX]]#2, %[[SX]]#1, %[[SX]]#3,
  // CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
  // CHECK-NOT: nn.transpose
  // CHECK: return %[[R]]
  %q = nn.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x8xf32>) -> tensor<1x2x3x8xf32>
  %o = nn.attention %q, %k, %v {causal} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  %y = nn.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x8xf32>) -> tensor<1x3x2x8xf32>
  return %y : tensor<1x3x2x8xf32>
}

// -----

// The gradients going back into a fused QKV projection's: each transposed
// back to [B, T, H, D], reshaped to [B, T, H * D] and concatenated along
// that axis. The kernel writes them into one [B, T, 3 * H * D] buffer at
// their places (here the concat takes dk first, then dq, then dv): no
// separate buffers, no copies into the concatenation.
// CHECK-LABEL: func.func @into_concat
func.func @into_concat(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>,
                       %o: tensor<1x2x3x4xf32>, %g: tensor<1x2x3x4xf32>) -> tensor<1x3x24xf32> {
  // CHECK-NOT: nn.concat
  // CHECK: %[[ALL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x3x24xf32>
  // CHECK-DAG: %[[DQ:.*]] = memref.reinterpret_cast %[[ALL]] to offset: [8], sizes: [1, 3, 2, 4], strides: [72, 24, 4, 1]
  // CHECK-DAG: %[[DK:.*]] = memref.reinterpret_cast %[[ALL]] to offset: [0], sizes: [1, 3, 2, 4], strides: [72, 24, 4, 1]
  // CHECK-DAG: %[[DV:.*]] = memref.reinterpret_cast %[[ALL]] to offset: [16], sizes: [1, 3, 2, 4], strides: [72, 24, 4, 1]
  // CHECK: call @rewire_attention_backward(
  // CHECK: %[[R:.*]] = bufferization.to_tensor %[[ALL]] restrict writable : memref<1x3x24xf32>
  // CHECK-NOT: nn.
  // CHECK: return %[[R]]
  %dq, %dk, %dv = nn.attention_grad %q, %k, %v, %o, %g {causal} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>)
  %tq = nn.transpose %dq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %tk = nn.transpose %dk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %tv = nn.transpose %dv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %rq = nn.reshape %tq : tensor<1x3x2x4xf32> -> tensor<1x3x8xf32>
  %rk = nn.reshape %tk : tensor<1x3x2x4xf32> -> tensor<1x3x8xf32>
  %rv = nn.reshape %tv : tensor<1x3x2x4xf32> -> tensor<1x3x8xf32>
  %all = nn.concat %rk, %rq, %rv {axis = 2 : i64} : (tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x24xf32>
  return %all : tensor<1x3x24xf32>
}

// -----

// A concatenation with something else in it keeps its own buffer: the
// gradients get theirs, as without one.
// CHECK-LABEL: func.func @concat_with_more
func.func @concat_with_more(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>,
                            %o: tensor<1x2x3x4xf32>, %g: tensor<1x2x3x4xf32>, %x: tensor<1x3x8xf32>) -> tensor<1x3x32xf32> {
  // CHECK-NOT: memref.reinterpret_cast
  // CHECK-COUNT-3: memref.alloc() {alignment = 64 : i64} : memref<1x3x2x4xf32>
  // CHECK: call @rewire_attention_backward(
  // CHECK: nn.concat
  %dq, %dk, %dv = nn.attention_grad %q, %k, %v, %o, %g {causal} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>)
  %tq = nn.transpose %dq {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %tk = nn.transpose %dk {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %tv = nn.transpose %dv {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %rq = nn.reshape %tq : tensor<1x3x2x4xf32> -> tensor<1x3x8xf32>
  %rk = nn.reshape %tk : tensor<1x3x2x4xf32> -> tensor<1x3x8xf32>
  %rv = nn.reshape %tv : tensor<1x3x2x4xf32> -> tensor<1x3x8xf32>
  %all = nn.concat %rq, %rk, %rv, %x {axis = 2 : i64} : (tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x32xf32>
  return %all : tensor<1x3x32xf32>
}
