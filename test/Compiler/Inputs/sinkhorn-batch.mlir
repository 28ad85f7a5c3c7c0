module {
  func.func @forward(%z: tensor<4x128x4x4xf32>, %dm: tensor<4x128x4x4xf32>) -> (tensor<4x128x4x4xf32>, tensor<4x128x4x4xf32>) {
    %m = nn.sinkhorn %z {iters = 20 : i64} : tensor<4x128x4x4xf32>
    %dz = nn.sinkhorn_grad %z, %dm {iters = 20 : i64} : tensor<4x128x4x4xf32>
    return %m, %dz : tensor<4x128x4x4xf32>, tensor<4x128x4x4xf32>
  }
}
