// Printer/parser round trip of every nn op, custom and generic forms.
// RUN: rewire-opt %s | rewire-opt | FileCheck %s
// RUN: rewire-opt %s --mlir-print-op-generic | rewire-opt | FileCheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<2x16x64xf32>, %b: tensor<64xf32>, %s: tensor<f32>) -> tensor<2x16x64xf32> {
  // CHECK: nn.add %{{.*}}, %{{.*}} : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %0 = nn.add %a, %b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: nn.sub
  %1 = nn.sub %0, %s : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  // CHECK: nn.mul
  %2 = nn.mul %1, %b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: nn.div
  %3 = nn.div %b, %2 : (tensor<64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: nn.pow
  %4 = nn.pow %3, %s : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  // CHECK: nn.relu %{{.*}} : tensor<2x16x64xf32>
  %5 = nn.relu %4 : tensor<2x16x64xf32>
  // CHECK: nn.sigmoid
  %6 = nn.sigmoid %5 : tensor<2x16x64xf32>
  // CHECK: nn.tanh
  %7 = nn.tanh %6 : tensor<2x16x64xf32>
  // CHECK: nn.erf
  %8 = nn.erf %7 : tensor<2x16x64xf32>
  // CHECK: nn.exp
  %9 = nn.exp %8 : tensor<2x16x64xf32>
  // CHECK: nn.sqrt
  %10 = nn.sqrt %9 : tensor<2x16x64xf32>
  // CHECK: nn.neg
  %11 = nn.neg %10 : tensor<2x16x64xf32>
  // CHECK: nn.gelu %{{.*}} : tensor<2x16x64xf32>
  %12 = nn.gelu %11 : tensor<2x16x64xf32>
  // CHECK: nn.gelu %{{.*}} approximate tanh : tensor<2x16x64xf32>
  %13 = nn.gelu %12 approximate tanh : tensor<2x16x64xf32>
  return %13 : tensor<2x16x64xf32>
}

// CHECK-LABEL: func.func @dynamic_broadcast
func.func @dynamic_broadcast(%a: tensor<?x16x64xf32>, %b: tensor<1x1x64xf32>) -> tensor<?x16x64xf32> {
  // CHECK: nn.add {{.*}} -> tensor<?x16x64xf32>
  %0 = nn.add %a, %b : (tensor<?x16x64xf32>, tensor<1x1x64xf32>) -> tensor<?x16x64xf32>
  return %0 : tensor<?x16x64xf32>
}

// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<2x16x64xf32>, %w: tensor<64x256xf32>, %a: tensor<8x64xf32>,
                  %wt: tensor<256x64xf32>, %bias: tensor<256xf32>, %v: tensor<64xf32>) {
  // CHECK: nn.matmul {{.*}} : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %0 = nn.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  // CHECK: nn.matmul {{.*}} : (tensor<64xf32>, tensor<64x256xf32>) -> tensor<256xf32>
  %1 = nn.matmul %v, %w : (tensor<64xf32>, tensor<64x256xf32>) -> tensor<256xf32>
  // CHECK: nn.matmul {{.*}} : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16xf32>
  %2 = nn.matmul %x, %v : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16xf32>
  // CHECK: nn.gemm {{.*}} {transB} : (tensor<8x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<8x256xf32>
  %3 = nn.gemm %a, %wt, %bias {transB} : (tensor<8x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<8x256xf32>
  // CHECK: nn.gemm {{.*}} {alpha = 5.000000e-01 : f32} : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  %4 = nn.gemm %a, %w {alpha = 0.5 : f32} : (tensor<8x64xf32>, tensor<64x256xf32>) -> tensor<8x256xf32>
  return
}

// CHECK-LABEL: func.func @normalization
func.func @normalization(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %img: tensor<1x8x4x4xf32>, %c: tensor<8xf32>) {
  // CHECK: nn.softmax %{{.*}} {axis = 1 : i64} : tensor<2x16x64xf32>
  %0 = nn.softmax %x {axis = 1 : i64} : tensor<2x16x64xf32>
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>
  %1 = nn.layer_norm %x, %g, %g : tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}} {epsilon = 9.99999997E-7 : f32} : tensor<2x16x64xf32>, tensor<64xf32>
  %2 = nn.layer_norm %x, %g {epsilon = 1.0e-6 : f32} : tensor<2x16x64xf32>, tensor<64xf32>
  // CHECK: nn.rms_norm %{{.*}}, %{{.*}} : tensor<2x16x64xf32>, tensor<64xf32>
  %3 = nn.rms_norm %x, %g : tensor<2x16x64xf32>, tensor<64xf32>
  // CHECK: nn.batch_norm {{.*}} : tensor<1x8x4x4xf32>, tensor<8xf32>
  %4 = nn.batch_norm %img, %c, %c, %c, %c : tensor<1x8x4x4xf32>, tensor<8xf32>
  // CHECK: nn.batch_norm {{.*}} {momentum = 8.000000e-01 : f32, training}
  %t = nn.batch_norm %img, %c, %c, %c, %c {training, momentum = 0.8 : f32} : tensor<1x8x4x4xf32>, tensor<8xf32>
  // CHECK: nn.reduce_mean %{{.*}} {axes = array<i64: -1>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  %5 = nn.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x16x64xf32>) -> tensor<2x16x1xf32>
  // CHECK: nn.reduce_sum %{{.*}} {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x16x64xf32>) -> tensor<64xf32>
  %6 = nn.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x16x64xf32>) -> tensor<64xf32>
  // CHECK: nn.reduce_sum %{{.*}} : (tensor<2x16x64xf32>) -> tensor<1x1x1xf32>
  %7 = nn.reduce_sum %x : (tensor<2x16x64xf32>) -> tensor<1x1x1xf32>
  return
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x16x64xf32>, %ids: tensor<2x16xi64>, %wte: tensor<100x64xf32>) {
  // CHECK: nn.reshape %{{.*}} : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %0 = nn.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  // CHECK: nn.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %1 = nn.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  // CHECK: nn.transpose %{{.*}} : (tensor<2x16x64xf32>) -> tensor<64x16x2xf32>
  %2 = nn.transpose %x : (tensor<2x16x64xf32>) -> tensor<64x16x2xf32>
  // CHECK: nn.concat {{.*}} {axis = -1 : i64} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x128xf32>
  %3 = nn.concat %x, %x {axis = -1 : i64} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x128xf32>
  // CHECK: nn.split {{.*}} -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>)
  %4:2 = nn.split %x {axis = 2 : i64, sizes = array<i64: 32, 32>} : (tensor<2x16x64xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>)
  // CHECK: nn.slice {{.*}} -> tensor<2x8x64xf32>
  %5 = nn.slice %x {starts = array<i64: 0>, ends = array<i64: 8>, axes = array<i64: 1>} : (tensor<2x16x64xf32>) -> tensor<2x8x64xf32>
  // CHECK: nn.slice {{.*}} -> tensor<2x16x32xf32>
  %6 = nn.slice %x {starts = array<i64: -1>, ends = array<i64: -1000>, axes = array<i64: -1>, steps = array<i64: -2>} : (tensor<2x16x64xf32>) -> tensor<2x16x32xf32>
  // CHECK: nn.gather {{.*}} : (tensor<100x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %7 = nn.gather %wte, %ids : (tensor<100x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  // CHECK: nn.unsqueeze {{.*}} -> tensor<1x2x16x1x64xf32>
  %8 = nn.unsqueeze %x {axes = array<i64: 0, -2>} : (tensor<2x16x64xf32>) -> tensor<1x2x16x1x64xf32>
  // CHECK: nn.squeeze {{.*}} -> tensor<2x16x64xf32>
  %9 = nn.squeeze %8 {axes = array<i64: 0, 3>} : (tensor<1x2x16x1x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: nn.squeeze {{.*}} -> tensor<2x16x64xf32>
  %10 = nn.squeeze %8 : (tensor<1x2x16x1x64xf32>) -> tensor<2x16x64xf32>
  return
}

// CHECK-LABEL: func.func @conv
func.func @conv(%x: tensor<1x64x56x56xf32>, %w: tensor<64x64x3x3xf32>, %b: tensor<64xf32>,
                %dw: tensor<64x1x3x3xf32>, %stem: tensor<1x3x224x224xf32>, %w7: tensor<64x3x7x7xf32>) {
  // CHECK: nn.conv {{.*}} -> tensor<1x64x56x56xf32>
  %0 = nn.conv %x, %w, %b {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x56x56xf32>
  // CHECK: nn.conv {{.*}} -> tensor<1x64x28x28xf32>
  %1 = nn.conv %x, %dw {group = 64 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x56x56xf32>, tensor<64x1x3x3xf32>) -> tensor<1x64x28x28xf32>
  // CHECK: nn.conv {{.*}} -> tensor<1x64x112x112xf32>
  %2 = nn.conv %stem, %w7 {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32>
  // CHECK: nn.max_pool {{.*}} -> tensor<1x64x56x56xf32>
  %3 = nn.max_pool %2 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
  // CHECK: nn.global_average_pool {{.*}} -> tensor<1x64x1x1xf32>
  %4 = nn.global_average_pool %3 : (tensor<1x64x56x56xf32>) -> tensor<1x64x1x1xf32>
  // CHECK: nn.conv_input_grad {{.*}} -> tensor<1x64x56x56xf32>
  %5 = nn.conv_input_grad %1, %dw {group = 64 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x28x28xf32>, tensor<64x1x3x3xf32>) -> tensor<1x64x56x56xf32>
  // CHECK: nn.conv_weight_grad {{.*}} -> tensor<64x3x7x7xf32>
  %6 = nn.conv_weight_grad %stem, %2 {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>} : (tensor<1x3x224x224xf32>, tensor<1x64x112x112xf32>) -> tensor<64x3x7x7xf32>
  // CHECK: nn.max_pool_grad {{.*}} -> tensor<1x64x112x112xf32>
  %7 = nn.max_pool_grad %2, %3 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x64x112x112xf32>, tensor<1x64x56x56xf32>) -> tensor<1x64x112x112xf32>
  return
}

// CHECK-LABEL: func.func @misc
func.func @misc(%mask: tensor<16x16xi1>, %s: tensor<2x4x16x16xf32>, %ids: tensor<2x16xi32>,
                %q: tensor<2x4x16x16xf32>, %k: tensor<2x4x24x16xf32>, %v: tensor<2x4x24x8xf32>) {
  // CHECK: nn.constant dense<0xFF800000> : tensor<f32>
  %ninf = nn.constant dense<0xFF800000> : tensor<f32>
  // CHECK: nn.where {{.*}} : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %0 = nn.where %mask, %s, %ninf : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  // CHECK: nn.cast %{{.*}} : tensor<2x16xi32> -> tensor<2x16xi64>
  %1 = nn.cast %ids : tensor<2x16xi32> -> tensor<2x16xi64>
  // CHECK: nn.attention {{.*}} {causal} : (tensor<2x4x16x16xf32>, tensor<2x4x24x16xf32>, tensor<2x4x24x8xf32>) -> tensor<2x4x16x8xf32>
  %2 = nn.attention %q, %k, %v {causal} : (tensor<2x4x16x16xf32>, tensor<2x4x24x16xf32>, tensor<2x4x24x8xf32>) -> tensor<2x4x16x8xf32>
  // CHECK: nn.attention {{.*}} {scale = 1.250000e-01 : f32}
  %3 = nn.attention %q, %k, %v {scale = 0.125 : f32} : (tensor<2x4x16x16xf32>, tensor<2x4x24x16xf32>, tensor<2x4x24x8xf32>) -> tensor<2x4x16x8xf32>
  // CHECK: nn.attention %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {causal} : (tensor<2x4x16x16xf32>, tensor<2x4x24x16xf32>, tensor<2x4x24x8xf32>, tensor<2x1x1x24xf32>) -> tensor<2x4x16x8xf32>
  %bias = nn.constant dense<0.0> : tensor<2x1x1x24xf32>
  %4 = nn.attention %q, %k, %v bias(%bias) {causal} : (tensor<2x4x16x16xf32>, tensor<2x4x24x16xf32>, tensor<2x4x24x8xf32>, tensor<2x1x1x24xf32>) -> tensor<2x4x16x8xf32>
  // CHECK: nn.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {causal, zero_masked_rows} : (tensor<2x4x16x16xf32>, tensor<2x4x24x16xf32>, tensor<2x4x24x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x1x1x24xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x24x16xf32>, tensor<2x4x24x8xf32>)
  %dq, %dk, %dv = nn.attention_grad %q, %k, %v, %4, %4 bias(%bias) {causal, zero_masked_rows} : (tensor<2x4x16x16xf32>, tensor<2x4x24x16xf32>, tensor<2x4x24x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x1x1x24xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x24x16xf32>, tensor<2x4x24x8xf32>)
  return
}

// CHECK-LABEL: func.func @training_ops
func.func @training_ops(%g: tensor<2x16x64xf32>, %ids: tensor<2x16xi64>, %z: tensor<2x16x256xf32>, %s: tensor<f32>, %t: tensor<256x64xf32>) {
  // CHECK: nn.scatter_add %{{.*}}, %{{.*}} : (tensor<2x16x64xf32>, tensor<2x16xi64>) -> tensor<256x64xf32>
  %0 = nn.scatter_add %g, %ids : (tensor<2x16x64xf32>, tensor<2x16xi64>) -> tensor<256x64xf32>
  // CHECK: nn.scatter_add %{{.*}}, %{{.*}} into %{{.*}} : (tensor<2x16x64xf32>, tensor<2x16xi64>, tensor<256x64xf32>) -> tensor<256x64xf32>
  %3 = nn.scatter_add %g, %ids into %t : (tensor<2x16x64xf32>, tensor<2x16xi64>, tensor<256x64xf32>) -> tensor<256x64xf32>
  // CHECK: nn.cross_entropy %{{.*}}, %{{.*}} {ignore_index = 0 : i64} : (tensor<2x16x256xf32>, tensor<2x16xi64>) -> tensor<f32>
  %1 = nn.cross_entropy %z, %ids {ignore_index = 0 : i64} : (tensor<2x16x256xf32>, tensor<2x16xi64>) -> tensor<f32>
  // CHECK: nn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x16x256xf32>, tensor<2x16xi64>, tensor<f32>) -> tensor<2x16x256xf32>
  %2 = nn.cross_entropy_grad %z, %ids, %s : (tensor<2x16x256xf32>, tensor<2x16xi64>, tensor<f32>) -> tensor<2x16x256xf32>
  return
}

// -----

// CHECK-LABEL: func.func @stop_gradient
func.func @stop_gradient(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK: nn.stop_gradient %{{.*}} : tensor<2x8xf32>
  %0 = nn.stop_gradient %x : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @sinkhorn
func.func @sinkhorn(%z: tensor<2x16x4x4xf32>, %dm: tensor<2x16x4x4xf32>) -> (tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>) {
  // CHECK: nn.sinkhorn %{{.*}} {iters = 20 : i64} : tensor<2x16x4x4xf32>
  %m = nn.sinkhorn %z {iters = 20 : i64} : tensor<2x16x4x4xf32>
  // CHECK: nn.sinkhorn_grad %{{.*}}, %{{.*}} {iters = 20 : i64} : tensor<2x16x4x4xf32>
  %dz = nn.sinkhorn_grad %z, %dm {iters = 20 : i64} : tensor<2x16x4x4xf32>
  return %m, %dz : tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>
}
