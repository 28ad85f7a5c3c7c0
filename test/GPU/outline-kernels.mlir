// rewire-outline-kernels: ops over the same rows x features become one
// kernel function; contractions and other loop structures stay.
// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(convert-nn-to-linalg,canonicalize,rewire-fuse-elementwise,canonicalize),rewire-outline-kernels,canonicalize)" | FileCheck %s

// A layer norm (two reductions, two elementwise ops) is one group; the
// gamma/beta vectors are arguments, the zero inits are cloned in.
// CHECK-LABEL: func.func private @ln.kernel0(
// CHECK-SAME: tensor<4x6x1000xf32>, %{{.*}}: tensor<1000xf32>, %{{.*}}: tensor<1000xf32>) -> tensor<4x6x1000xf32>
// CHECK-SAME: rewire.row_kernel
// CHECK: linalg.fill
// CHECK-COUNT-4: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @ln(
// CHECK-NEXT: %[[R:.*]] = call @ln.kernel0(%arg0, %arg1, %arg2)
// CHECK-NEXT: return %[[R]]
func.func @ln(%x: tensor<4x6x1000xf32>, %g: tensor<1000xf32>, %b: tensor<1000xf32>) -> tensor<4x6x1000xf32> {
  %0 = nn.layer_norm %x, %g, %b : tensor<4x6x1000xf32>, tensor<1000xf32>, tensor<1000xf32>
  return %0 : tensor<4x6x1000xf32>
}

// -----

// A matmul ends the group before it; the one after starts a new one; the
// contraction stays in the host function (cuBLAS).
// CHECK-LABEL: func.func private @mlp.kernel0(
// CHECK-LABEL: func.func private @mlp.kernel1(
// CHECK-LABEL: func.func @mlp(
// CHECK: call @mlp.kernel0
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: call @mlp.kernel1
func.func @mlp(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>) -> tensor<8x32xf32> {
  %0 = nn.relu %x : tensor<8x64xf32>
  %1 = nn.matmul %0, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %2 = nn.softmax %1 : tensor<8x32xf32>
  return %2 : tensor<8x32xf32>
}

// -----

// A transpose is not a row op: no kernel function for it.
// CHECK-LABEL: func.func @transpose(
// CHECK-NOT: call
// CHECK: linalg.generic
func.func @transpose(%x: tensor<8x64xf32>) -> tensor<64x8xf32> {
  %0 = nn.transpose %x {perm = array<i64: 1, 0>} : (tensor<8x64xf32>) -> tensor<64x8xf32>
  return %0 : tensor<64x8xf32>
}
