func.func @postln(%h: tensor<2x16xf32>, %w: tensor<16x16xf32>, %g: tensor<16xf32>) -> tensor<2x16xf32> {
  %u0 = nn.matmul %h, %w : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %h1 = residual.add %h, %u0 stream 0 layer 0 : tensor<2x16xf32>
  %n1 = nn.layer_norm %h1, %g : tensor<2x16xf32>, tensor<16xf32>
  %u1 = nn.matmul %n1, %w : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
  %h2 = residual.add %n1, %u1 stream 0 layer 1 : tensor<2x16xf32>
  return %h2 : tensor<2x16xf32>
}
