// Every verifier and shape-inference message of the nn dialect. Shape
// inference failures also produce MLIR's generic "failed to infer returned
// types" note.
// RUN: rewire-opt %s --split-input-file --verify-diagnostics

func.func @bcast_dtype(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{operand #1 has element type f16, expected f32 like the other operands}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @bcast_shape(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operand #1 of shape [4] does not broadcast with shape [2x3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.mul %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @bcast_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @unary_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "nn.relu"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @unary_int(%a: tensor<2x3xi32>) {
  // expected-error @+1 {{must be ranked tensor of floating-point values}}
  %0 = nn.exp %a : tensor<2x3xi32>
  return
}

// -----

func.func @matmul_dtype(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+2 {{'lhs' element type f32 must match 'rhs' element type f16}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_rank0(%a: tensor<f32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{operands must have rank >= 1, got ranks 0 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.matmul %a, %b : (tensor<f32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_k(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{contraction sizes differ: 'lhs' [2x3] has K = 3, 'rhs' [4x5] has K = 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x5xf32>) {
  // expected-error @+2 {{batch dimensions [2] and [3] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x3x5xf32>) -> tensor<2x2x5xf32>
  return
}

// -----

func.func @gemm_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'a' and 'b' must be matrices, got [2x3x4] and [4x5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_dtype(%a: tensor<2x4xf32>, %b: tensor<4x5xf16>) {
  // expected-error @+2 {{'a' and 'b' must share an element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.gemm %a, %b : (tensor<2x4xf32>, tensor<4x5xf16>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_k(%a: tensor<2x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{contraction sizes differ: K = 4 from 'a', 5 from 'b'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.gemm %a, %b {transB} : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @gemm_c_dtype(%a: tensor<2x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf16>) {
  // expected-error @+2 {{'c' must have the element type of 'a'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x5xf32>, tensor<5xf16>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_c_shape(%a: tensor<2x4xf32>, %b: tensor<4x5xf32>, %c: tensor<3x5xf32>) {
  // expected-error @+2 {{'c' of shape [3x5] does not broadcast to [M, N] = [2x5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.gemm %a, %b, %c : (tensor<2x4xf32>, tensor<4x5xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = nn.softmax %a {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @ln_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{axis -3 is out of range for 'x' of rank 2}}
  %0 = nn.layer_norm %x, %g {axis = -3 : i64} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @ln_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'scale' must have the shape of the normalized dimensions of 'x' (from axis 1), got 'tensor<4xf32>'}}
  %0 = nn.layer_norm %x, %g : tensor<2x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @ln_bias(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<2x8xf32>) {
  // expected-error @+1 {{'bias' must have the shape of the normalized dimensions of 'x' (from axis 1), got 'tensor<2x8xf32>'}}
  %0 = nn.layer_norm %x, %g, %b : tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @ln_dtype(%x: tensor<2x8xf32>, %g: tensor<8xf16>) {
  // expected-error @+1 {{'scale' must have element type 'f32'}}
  %0 = nn.layer_norm %x, %g : tensor<2x8xf32>, tensor<8xf16>
  return
}

// -----

func.func @ln_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'epsilon' must be positive and finite, got 0}}
  %0 = nn.layer_norm %x, %g {epsilon = 0.0 : f32} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @rms_scale(%x: tensor<2x8xf32>, %g: tensor<2x8xf32>) {
  // expected-error @+1 {{'scale' must have the shape of the normalized dimensions of 'x' (from axis 1), got 'tensor<2x8xf32>'}}
  %0 = nn.rms_norm %x, %g {axis = 1 : i64} : tensor<2x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @rms_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'epsilon' must be positive and finite, got -1}}
  %0 = nn.rms_norm %x, %g {epsilon = -1.0 : f32} : tensor<2x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @bn_rank(%x: tensor<8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'x' must be [N, C, ...] with rank >= 2, got 'tensor<8xf32>'}}
  %0 = nn.batch_norm %x, %c, %c, %c, %c : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @bn_param(%x: tensor<1x8x4x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{'scale', 'bias', 'mean' and 'var' must be vectors of C = 8 elements of 'f32', got 'tensor<4xf32>'}}
  %0 = nn.batch_norm %x, %c, %c, %c, %c : tensor<1x8x4x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @bn_eps(%x: tensor<1x8x4x4xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'epsilon' must be positive and finite, got 0}}
  %0 = nn.batch_norm %x, %c, %c, %c, %c {epsilon = 0.0 : f32} : tensor<1x8x4x4xf32>, tensor<8xf32>
  return
}

// -----

func.func @reduce_axis(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.reduce_mean %x {axes = array<i64: 2>} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @reduce_repeat(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{axis -1 is repeated}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.reduce_sum %x {axes = array<i64: 1, -1>} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{cannot reshape 16 elements ('tensor<2x8xf32>') into 15 ('tensor<3x5xf32>')}}
  %0 = nn.reshape %x : tensor<2x8xf32> -> tensor<3x5xf32>
  return
}

// -----

func.func @reshape_dtype(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{result element type 'f16' must match the operand's, 'f32'}}
  %0 = nn.reshape %x : tensor<2x8xf32> -> tensor<16xf16>
  return
}

// -----

func.func @reshape_dyn(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{result may have at most one dynamic dimension, got 'tensor<?x?xf32>'}}
  %0 = nn.reshape %x : tensor<?x8xf32> -> tensor<?x?xf32>
  return
}

// -----

func.func @reshape_overflow(%x: tensor<4294967296x4294967296xf32>) {
  // expected-error @+1 {{operand element count overflows}}
  %0 = nn.reshape %x : tensor<4294967296x4294967296xf32> -> tensor<?xf32>
  return
}

// -----

func.func @transpose_len(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'perm' has 1 entries for an operand of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.transpose %x {perm = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'perm' must be a permutation of 0..1, got entry 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.transpose %x {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+2 {{needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.concat {axis = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{input #1 of type tensor<3xf32> must have the rank and element type of input #0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{input #1 has size 4 in dimension 1, expected 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @split_axis(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{axis 3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.split %x {axis = 3 : i64, sizes = array<i64: 3, 3>} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @split_empty(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{'sizes' must not be empty}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.split %x {axis = 1 : i64, sizes = array<i64>} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @split_negative(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{split size -1 is invalid}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.split %x {axis = 1 : i64, sizes = array<i64: 7, -1>} : (tensor<2x6xf32>) -> (tensor<2x7xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @split_sum(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{'sizes' add up to 5, but dimension 1 has size 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = nn.split %x {axis = 1 : i64, sizes = array<i64: 3, 2>} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @slice_len(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{'starts', 'ends', 'axes' and 'steps' must have the same length, got 2, 1, 2 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 1>} : (tensor<2x6xf32>) -> tensor<1x6xf32>
  return
}

// -----

func.func @slice_step(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{step for axis 0 must not be 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.slice %x {starts = array<i64: 0>, ends = array<i64: 1>, steps = array<i64: 0>} : (tensor<2x6xf32>) -> tensor<1x6xf32>
  return
}

// -----

func.func @slice_axis(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{axis 4 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.slice %x {starts = array<i64: 0>, ends = array<i64: 1>, axes = array<i64: 4>} : (tensor<2x6xf32>) -> tensor<1x6xf32>
  return
}

// -----

func.func @gather_axis(%d: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{axis 2 is out of range for 'data' of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.gather %d, %i {axis = 2 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @gather_index_type(%d: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = nn.gather %d, %i : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @unsqueeze_empty(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{'axes' must not be empty}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.unsqueeze %x {axes = array<i64>} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @unsqueeze_axis(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{axis 3 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.unsqueeze %x {axes = array<i64: 3>} : (tensor<2x6xf32>) -> tensor<2x6x1xf32>
  return
}

// -----

func.func @squeeze_size(%x: tensor<2x6xf32>) {
  // expected-error @+2 {{cannot squeeze axis 1 of size 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.squeeze %x {axes = array<i64: 1>} : (tensor<2x6xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<1x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+2 {{'x' must be [N, C, D1..Dk] with k >= 1, got [1x8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @conv_wrank(%x: tensor<1x8x4x4xf32>, %w: tensor<4x8x3xf32>) {
  // expected-error @+2 {{'w' must have the rank of 'x' (4), got [4x8x3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w : (tensor<1x8x4x4xf32>, tensor<4x8x3xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @conv_dtype(%x: tensor<1x8x4x4xf32>, %w: tensor<4x8x3x3xf16>) {
  // expected-error @+2 {{'w' must have the element type of 'x'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf16>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @conv_group0(%x: tensor<1x8x4x4xf32>, %w: tensor<4x8x3x3xf32>) {
  // expected-error @+2 {{'group' must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w {group = 0 : i64} : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @conv_group_in(%x: tensor<1x8x4x4xf32>, %w: tensor<3x2x3x3xf32>) {
  // expected-error @+2 {{input channels 8 are not divisible by group 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w {group = 3 : i64} : (tensor<1x8x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
  return
}

// -----

func.func @conv_cin(%x: tensor<1x8x4x4xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+2 {{'w' must have C/group = 8 input channels, got 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w : (tensor<1x8x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @conv_group_out(%x: tensor<1x8x4x4xf32>, %w: tensor<3x4x3x3xf32>) {
  // expected-error @+2 {{output channels 3 are not divisible by group 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w {group = 2 : i64} : (tensor<1x8x4x4xf32>, tensor<3x4x3x3xf32>) -> tensor<1x3x2x2xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x8x4x4xf32>, %w: tensor<4x8x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{'b' must be a vector of M = 4 elements, got tensor<8xf32>}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w, %b : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>, tensor<8xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @conv_strides(%x: tensor<1x8x4x4xf32>, %w: tensor<4x8x3x3xf32>) {
  // expected-error @+2 {{'strides' must have 2 entries for 2 spatial dimensions, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w {strides = array<i64: 1>} : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @conv_pads(%x: tensor<1x8x4x4xf32>, %w: tensor<4x8x3x3xf32>) {
  // expected-error @+2 {{'pads' must have 4 entries for 2 spatial dimensions, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w {pads = array<i64: 1, 1>} : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @conv_window(%x: tensor<1x8x2x2xf32>, %w: tensor<4x8x3x3xf32>) {
  // expected-error @+2 {{spatial dimension 0: window 3 (stride 1, dilation 1, pads 0+0) does not fit input size 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w : (tensor<1x8x2x2xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

func.func @conv_dilations(%x: tensor<1x8x4x4xf32>, %w: tensor<4x8x3x3xf32>) {
  // expected-error @+2 {{'dilations' must have 2 entries for 2 spatial dimensions, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.conv %x, %w {dilations = array<i64: 1, 1, 1>} : (tensor<1x8x4x4xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<8x4xf32>) {
  // expected-error @+2 {{'x' must be [N, C, D1..Dk] with k >= 1, got [8x4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.max_pool %x {kernel_shape = array<i64: 2>} : (tensor<8x4xf32>) -> tensor<8x2xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x8x4x4xf32>) {
  // expected-error @+2 {{'kernel_shape' must have 2 entries, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.max_pool %x {kernel_shape = array<i64: 2>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x2x2xf32>
  return
}

// -----

func.func @pool_stride0(%x: tensor<1x8x4x4xf32>) {
  // expected-error @+2 {{spatial dimension 0: window 2 (stride 0, dilation 1, pads 0+0) does not fit input size 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 0, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x2x2xf32>
  return
}

// -----

func.func @gap_rank(%x: tensor<8x4xf32>) {
  // expected-error @+2 {{'x' must be [N, C, D1..Dk] with k >= 1, got [8x4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.global_average_pool %x : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @where_dtype(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+2 {{operand #2 has element type f16, expected f32 like the other operands}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @where_cond(%c: tensor<4xi32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{must be ranked tensor of 1-bit signless integer values}}
  %0 = nn.where %c, %x, %x : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = nn.cast %x : tensor<4xf32> -> tensor<2x2xf16>
  return
}

// -----

func.func @attn_rank(%q: tensor<4x16x8xf32>) {
  // expected-error @+2 {{'q', 'k' and 'v' must be [B, H, T, D], got [4x16x8], [4x16x8] and [4x16x8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %q, %q, %q : (tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  return
}

// -----

func.func @attn_dtype(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf16>) {
  // expected-error @+2 {{'q', 'k' and 'v' must share an element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %q, %k, %q : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf16>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  return
}

// -----

func.func @attn_heads(%q: tensor<1x2x16x8xf32>, %k: tensor<1x4x16x8xf32>) {
  // expected-error @+2 {{batch and head dimensions must agree}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %q, %k, %k : (tensor<1x2x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x2x16x8xf32>
  return
}

// -----

func.func @attn_dk(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x4xf32>) {
  // expected-error @+2 {{'q' and 'k' must have the same head size, got 8 and 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %q, %k, %k : (tensor<1x2x16x8xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x4xf32>) -> tensor<1x2x16x4xf32>
  return
}

// -----

func.func @attn_len(%q: tensor<1x2x16x8xf32>, %v: tensor<1x2x12x8xf32>) {
  // expected-error @+2 {{'k' and 'v' must have the same length, got 16 and 12}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %q, %q, %v : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x12x8xf32>) -> tensor<1x2x16x8xf32>
  return
}

// -----

func.func @attn_scale(%q: tensor<1x2x16x8xf32>) {
  // expected-error @+2 {{'scale' must be positive and finite, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %q, %q, %q {scale = -1.0 : f32} : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  return
}

// -----

func.func @attn_bias_shape(%q: tensor<1x2x16x8xf32>, %m: tensor<16x8xf32>) {
  // expected-error @+2 {{'bias' [16x8] does not broadcast to the scores [B, H, Tq, Tk] = [1x2x16x16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %q, %q, %q bias(%m) : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<16x8xf32>) -> tensor<1x2x16x8xf32>
  return
}

// -----

func.func @attn_bias_type(%q: tensor<1x2x16x8xf32>, %m: tensor<16x16xf16>) {
  // expected-error @+2 {{'bias' must have the element type of 'q'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.attention %q, %q, %q bias(%m) : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<16x16xf16>) -> tensor<1x2x16x8xf32>
  return
}

// -----

func.func @attn_grad_dout(%q: tensor<1x2x16x8xf32>, %g: tensor<1x2x16x4xf32>) {
  // expected-error @+2 {{'dout' must be the attention's result [B, H, Tq, Dv] = [1x2x16x8] of the operands' element type, got [1x2x16x4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = nn.attention_grad %q, %q, %q, %q, %g : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

func.func @attn_grad_operands(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x4xf32>) {
  // expected-error @+2 {{'q' and 'k' must have the same head size, got 8 and 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = nn.attention_grad %q, %k, %q, %q, %q : (tensor<1x2x16x8xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x2x16x8xf32>, tensor<1x2x16x4xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

func.func @div_shape(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{operand #1 of shape [2] does not broadcast with shape [2x3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.div %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @pow_dtype(%a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+2 {{operand #1 has element type i32, expected f32 like the other operands}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = nn.pow %a, %b : (tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  return
}

// -----

func.func @sigmoid_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "nn.sigmoid"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return
}

// -----

func.func @tanh_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "nn.tanh"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return
}

// -----

func.func @erf_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "nn.erf"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return
}

// -----

func.func @sqrt_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "nn.sqrt"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return
}

// -----

func.func @neg_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "nn.neg"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return
}

// -----

func.func @gelu_int(%a: tensor<2x3xi32>) {
  // expected-error @+1 {{must be ranked tensor of floating-point values}}
  %0 = nn.gelu %a : tensor<2x3xi32>
  return
}

// -----

func.func @gelu_approx(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]}}
  %0 = nn.gelu %a approximate erf : tensor<2x3xf32>
  return
}

// -----

func.func @constant_type() {
  // expected-error @+1 {{all of {value, result} have same type}}
  %0 = "nn.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @scatter_add_shape(%g: tensor<2x16x32xf32>, %ids: tensor<2x16xi64>) -> tensor<256x64xf32> {
  // expected-error @+1 {{'updates' must have shape indices.shape + result.shape[1:], got 'tensor<2x16x32xf32>' for indices 'tensor<2x16xi64>' and result 'tensor<256x64xf32>'}}
  %0 = nn.scatter_add %g, %ids : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<256x64xf32>
  return %0 : tensor<256x64xf32>
}

// -----

func.func @scatter_add_base(%g: tensor<2x16x64xf32>, %ids: tensor<2x16xi64>, %t: tensor<128x64xf32>) -> tensor<256x64xf32> {
  // expected-error @+1 {{'base' must have the result type 'tensor<256x64xf32>', got 'tensor<128x64xf32>'}}
  %0 = nn.scatter_add %g, %ids into %t : (tensor<2x16x64xf32>, tensor<2x16xi64>, tensor<128x64xf32>) -> tensor<256x64xf32>
  return %0 : tensor<256x64xf32>
}

// -----

func.func @cross_entropy_labels(%z: tensor<2x16x256xf32>, %y: tensor<2x8xi64>) -> tensor<f32> {
  // expected-error @+1 {{'labels' must have the shape of 'logits' without its last (class) dimension, got 'tensor<2x8xi64>' for 'tensor<2x16x256xf32>'}}
  %0 = nn.cross_entropy %z, %y : (tensor<2x16x256xf32>, tensor<2x8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_result(%z: tensor<4x8xf32>, %y: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{result must be a 0-d tensor of the logits' element type, got 'tensor<4xf32>'}}
  %0 = nn.cross_entropy %z, %y : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cross_entropy_grad_scalar(%z: tensor<4x8xf32>, %y: tensor<4xi64>, %g: tensor<4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'grad' must be a 0-d tensor, got 'tensor<4xf32>'}}
  %0 = nn.cross_entropy_grad %z, %y, %g : (tensor<4x8xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @bn_momentum(%x: tensor<4x8x4x4xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'momentum' must be in [0, 1], got 1.5}}
  %0 = nn.batch_norm %x, %c, %c, %c, %c {training, momentum = 1.5 : f32} : tensor<4x8x4x4xf32>, tensor<8xf32>
  return
}

// -----

func.func @conv_input_grad_dy(%dy: tensor<2x8x4x4xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+1 {{'dy' must be the forward op's result type [2x8x8x8] of f32, got tensor<2x8x4x4xf32>}}
  %0 = nn.conv_input_grad %dy, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x8x4x4xf32>, tensor<8x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

func.func @conv_weight_grad_channels(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x8x6x6xf32>) {
  // expected-error @+1 {{'w' must have C/group = 3 input channels, got 4}}
  %0 = nn.conv_weight_grad %x, %dy : (tensor<2x3x8x8xf32>, tensor<2x8x6x6xf32>) -> tensor<8x4x3x3xf32>
  return
}

// -----

func.func @max_pool_grad_dy(%x: tensor<1x8x4x4xf32>, %dy: tensor<1x8x3x3xf32>) {
  // expected-error @+1 {{'dy' must be the forward op's result type [1x8x2x2] of f32, got tensor<1x8x3x3xf32>}}
  %0 = nn.max_pool_grad %x, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>, tensor<1x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  return
}

// -----

func.func @sinkhorn_rank(%z: tensor<4xf32>) {
  // expected-error @+1 {{expects matrices in the last two axes, got rank 1}}
  %0 = nn.sinkhorn %z {iters = 20 : i64} : tensor<4xf32>
  return
}

// -----

func.func @sinkhorn_square(%z: tensor<2x4x3xf32>) {
  // expected-error @+1 {{expects square matrices, got 4x3}}
  %0 = nn.sinkhorn %z {iters = 20 : i64} : tensor<2x4x3xf32>
  return
}

// -----

func.func @sinkhorn_iters(%z: tensor<2x4x4xf32>) {
  // expected-error @+1 {{attribute 'iters' failed to satisfy constraint}}
  %0 = nn.sinkhorn %z {iters = 0 : i64} : tensor<2x4x4xf32>
  return
}

// -----

func.func @sinkhorn_grad_square(%z: tensor<3x2xf32>, %dm: tensor<3x2xf32>) {
  // expected-error @+1 {{expects square matrices, got 3x2}}
  %0 = nn.sinkhorn_grad %z, %dm {iters = 1 : i64} : tensor<3x2xf32>
  return
}
