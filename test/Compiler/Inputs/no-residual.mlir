// A model with no skip connection: --residual has nothing to rewrite
// (compile-errors.test).
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = nn.relu %x : tensor<2x4xf32>
  %z = nn.add %y, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %z : tensor<2x4xf32>
}
