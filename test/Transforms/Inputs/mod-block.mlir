// One pre-LN transformer block on [2, 8, 16] (4 heads of 4): a causal
// attention sublayer (split heads, nn.attention, merged heads) and an MLP
// sublayer that flattens the rows to [16, 16] as Hugging Face GPT-2 does.
func.func @forward(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %wqkv: tensor<16x48xf32>,
                   %wo: tensor<16x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x16xf32>) -> tensor<2x8x16xf32> {
  %n0 = nn.layer_norm %x, %g : tensor<2x8x16xf32>, tensor<16xf32>
  %qkv = nn.matmul %n0, %wqkv : (tensor<2x8x16xf32>, tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %q, %k, %v = nn.split %qkv {axis = 2 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  %q4 = nn.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %k4 = nn.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %v4 = nn.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  %qt = nn.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x4xf32>) -> tensor<2x4x8x4xf32>
  %kt = nn.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x4xf32>) -> tensor<2x4x8x4xf32>
  %vt = nn.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x4xf32>) -> tensor<2x4x8x4xf32>
  %o = nn.attention %qt, %kt, %vt {causal} : (tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>) -> tensor<2x4x8x4xf32>
  %ot = nn.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x4xf32>) -> tensor<2x8x4x4xf32>
  %om = nn.reshape %ot : tensor<2x8x4x4xf32> -> tensor<2x8x16xf32>
  %a = nn.matmul %om, %wo : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %h1 = residual.add %x, %a stream 0 layer 0 {residual.branch = "attention"} : tensor<2x8x16xf32>
  %n1 = nn.layer_norm %h1, %g : tensor<2x8x16xf32>, tensor<16xf32>
  %flat = nn.reshape %n1 : tensor<2x8x16xf32> -> tensor<16x16xf32>
  %u1 = nn.matmul %flat, %w1 : (tensor<16x16xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  %gl = nn.gelu %u1 : tensor<16x32xf32>
  %u2 = nn.matmul %gl, %w2 : (tensor<16x32xf32>, tensor<32x16xf32>) -> tensor<16x16xf32>
  %m = nn.reshape %u2 : tensor<16x16xf32> -> tensor<2x8x16xf32>
  %h2 = residual.add %h1, %m stream 0 layer 1 {residual.branch = "mlp"} : tensor<2x8x16xf32>
  return %h2 : tensor<2x8x16xf32>
}
