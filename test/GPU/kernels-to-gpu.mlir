// rewire-kernels-to-gpu: launch geometry and the shape of each kernel.
// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(convert-nn-to-linalg{scatter-as-reduction},convert-residual-to-linalg,canonicalize,rewire-fuse-elementwise,canonicalize),rewire-outline-kernels,canonicalize,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=infer-layout-map},buffer-results-to-out-params,canonicalize,rewire-kernels-to-gpu,canonicalize)" | FileCheck %s

// Narrow rows: a warp per row, 8 rows per block (15 rows: 2 blocks, the
// last row-guarded), 16-byte vectors, warp reductions as xor shuffles.
// CHECK-LABEL: func.func @rms_64(
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: gpu.launch_func @kernels::@rms_64_k0 blocks in (%[[C2]], %{{.*}}, %{{.*}}) threads in (%[[C32]], %[[C8]], %{{.*}})
// CHECK: gpu.func @rms_64_k0(%{{.*}}: memref<3x5x64xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: memref<3x5x64xf32>) kernel attributes {known_block_size = array<i32: 32, 8, 1>}
// CHECK: scf.if
// CHECK: vector.load {{.*}} {alignment = 16 : i64}
// CHECK: gpu.shuffle  xor
// CHECK: vector.store {{.*}} {alignment = 16 : i64}
// CHECK-NOT: gpu.all_reduce
func.func @rms_64(%x: tensor<3x5x64xf32>, %g: tensor<64xf32>) -> tensor<3x5x64xf32> {
  %0 = nn.rms_norm %x, %g {epsilon = 1.0e-06 : f32} : tensor<3x5x64xf32>, tensor<64xf32>
  return %0 : tensor<3x5x64xf32>
}

// -----

// Wide rows: a block per row (1000 features = 250 vectors: 64 threads x 4
// chunks, the last partial), block reductions.
// CHECK-LABEL: func.func @softmax_1000(
// CHECK: gpu.launch_func @kernels::@softmax_1000_k0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}})
// CHECK: gpu.func @softmax_1000_k0({{.*}} kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// CHECK: gpu.all_reduce  maximumf
// CHECK: gpu.all_reduce  add
func.func @softmax_1000(%x: tensor<6x1000xf32>) -> tensor<6x1000xf32> {
  %0 = nn.softmax %x : tensor<6x1000xf32>
  return %0 : tensor<6x1000xf32>
}

// -----

// Views need no copies: the slices of a split are passed as their
// buffer, the offset compiled into the kernel's parameter type.
// CHECK-LABEL: func.func @slices(
// CHECK-NOT: memref.copy
// CHECK: gpu.launch_func @kernels::@slices_k0 {{.*}} args(%{{.*}} : memref<4x64xf32, strided<[128, 1]>>, %{{.*}} : memref<4x64xf32, strided<[128, 1], offset: 64>>
// CHECK: gpu.func @slices_k0(%{{.*}}: memref<4x64xf32, strided<[128, 1]>>, %{{.*}}: memref<4x64xf32, strided<[128, 1], offset: 64>>
func.func @slices(%x: tensor<4x128xf32>) -> tensor<4x64xf32> {
  %a = tensor.extract_slice %x[0, 0] [4, 64] [1, 1] : tensor<4x128xf32> to tensor<4x64xf32>
  %b = tensor.extract_slice %x[0, 64] [4, 64] [1, 1] : tensor<4x128xf32> to tensor<4x64xf32>
  %0 = nn.add %a, %b : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// A sum over the rows per column (a bias gradient): few outputs, a long
// reduction: 32 outputs per block, each reduction split over 16 threads
// and combined through shared memory. The init's zero fill is folded into
// the kernel (one launch; the combine starts from the constant, not a load).
// CHECK-LABEL: func.func @bias_grad(
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.launch_func @kernels::@bias_grad_k0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%arg0 : memref<64x128x768xf32>
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @bias_grad_k0({{.*}}) workgroup(%{{.*}} : memref<16x32xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 32, 16, 1>}
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK-NOT: memref.load {{.*}} : memref<1x1x768xf32>
// CHECK-COUNT-16: memref.load {{.*}}#gpu.address_space<workgroup>>
func.func @bias_grad(%x: tensor<64x128x768xf32>) -> tensor<768xf32> {
  %0 = nn.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<64x128x768xf32>) -> tensor<768xf32>
  return %0 : tensor<768xf32>
}

// -----

// An embedding gradient (convert-nn-to-linalg{scatter-as-reduction}): a
// block per table row (1000 blocks), 256 threads over the 768 features (3
// each); tiles of 256 positions are checked with a block reduction and only
// tiles with a hit are walked in order.
// CHECK-LABEL: func.func @embedding_grad(
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 1000 : index
// CHECK-DAG: %[[T:.*]] = arith.constant 256 : index
// CHECK: gpu.launch_func @kernels::@embedding_grad_k{{[0-9]+}} blocks in (%[[ROWS]], %{{.*}}, %{{.*}}) threads in (%[[T]], %{{.*}}, %{{.*}}) args(%{{.*}} : memref<1024xi64>, %{{.*}} : memref<1024x768xf32>, %{{.*}} : memref<1000x768xf32>)
// CHECK: gpu.func @embedding_grad_k{{[0-9]+}}(%{{.*}}: memref<1024xi64>, %{{.*}}: memref<1024x768xf32>, %{{.*}}: memref<1000x768xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: scf.for {{.*}} -> (f32, f32, f32)
// CHECK: arith.cmpi eq
// CHECK: gpu.all_reduce  add
// CHECK: scf.if {{.*}} -> (f32, f32, f32)
// CHECK: scf.for {{.*}} -> (f32, f32, f32)
// CHECK-COUNT-3: memref.store {{.*}} : memref<1000x768xf32>
func.func @embedding_grad(%ids: tensor<8x128xi64>, %g: tensor<8x128x768xf32>) -> tensor<1000x768xf32> {
  %0 = nn.scatter_add %g, %ids : (tensor<8x128x768xf32>, tensor<8x128xi64>) -> tensor<1000x768xf32>
  return %0 : tensor<1000x768xf32>
}

// -----

// Rows too wide for a row kernel's registers (a vocabulary-wide softmax):
// no row group; each reduction is a block of 256 threads per row reading
// along it, combined by gpu.all_reduce; elementwise ops a thread per point.
// CHECK-LABEL: func.func @wide_softmax(
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 512 : index
// CHECK-DAG: %[[T:.*]] = arith.constant 256 : index
// CHECK: gpu.launch_func @kernels::@wide_softmax_k{{[0-9]+}} blocks in (%[[ROWS]], %{{.*}}, %{{.*}}) threads in (%[[T]], %{{.*}}, %{{.*}})
// CHECK: gpu.func @wide_softmax_k{{[0-9]+}}({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: scf.for
// CHECK: arith.maximumf
// CHECK: gpu.all_reduce  maximumf
// CHECK-NOT: rewire.row_kernel
func.func @wide_softmax(%x: tensor<512x50257xf32>) -> tensor<512x50257xf32> {
  %0 = nn.softmax %x : tensor<512x50257xf32>
  return %0 : tensor<512x50257xf32>
}

// -----

// A contraction of 4 terms per output (a hyper-connection's gradient
// res^T . g over 2048 tokens) is a generated kernel, a thread per output
// point summing the 4 products, not a cuBLAS call (which leaves no
// linalg.generic behind: the GEMM stays on the host).
// CHECK-LABEL: func.func @short_contraction(
// CHECK: gpu.launch_func @kernels::@short_contraction_k{{[0-9]+}} blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%arg0 : memref<2048x4x4xf32>, %arg1 : memref<2048x4x768xf32>
// CHECK-NOT: linalg.generic
// CHECK: gpu.func @short_contraction_k{{[0-9]+}}({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: scf.for {{.*}} -> (f32)
func.func @short_contraction(%res: tensor<2048x4x4xf32>, %g: tensor<2048x4x768xf32>) -> tensor<2048x4x768xf32> {
  %0 = nn.matmul %res, %g : (tensor<2048x4x4xf32>, tensor<2048x4x768xf32>) -> tensor<2048x4x768xf32>
  return %0 : tensor<2048x4x768xf32>
}

// -----

// Few points of long work each (mHC's Sinkhorn: one 4 x 4 matrix per token,
// 2048 tokens): blocks of a warp, so the 64 blocks reach 64 multiprocessors
// instead of 8 blocks of 256 threads filling 8.
// CHECK-LABEL: func.func @few_points(
// CHECK-DAG: %[[BLOCKS:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[WARP:.*]] = arith.constant 32 : index
// CHECK: gpu.launch_func @kernels::@few_points_k{{[0-9]+}} blocks in (%[[BLOCKS]], %{{.*}}, %{{.*}}) threads in (%[[WARP]], %{{.*}}, %{{.*}})
// CHECK: gpu.func @few_points_k{{[0-9]+}}({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>}
func.func @few_points(%z: tensor<8x256x4x4xf32>) -> tensor<8x256x4x4xf32> {
  %0 = nn.sinkhorn %z {iters = 20 : i64} : tensor<8x256x4x4xf32>
  return %0 : tensor<8x256x4x4xf32>
}
