// An entry point with a dynamic size (compile-errors.test).
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = nn.relu %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
