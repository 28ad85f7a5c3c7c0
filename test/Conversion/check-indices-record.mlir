// RUN: rewire-opt %s --rewire-check-indices="record-inputs=true" --split-input-file | FileCheck %s

// record-inputs (the CUDA target): no code, the checks of function inputs
// recorded on the function for the runtime; computed ids, float divisors
// and inputs without a name are left to the lowering's clamping.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: rewire.input_checks = [{hi = 10 : i64, input = "ids", lo = -10 : i64, nonzero = false, what = "nn.gather 'embed': index (from input 'ids')"}]
// CHECK-NOT: linalg.generic
// CHECK-NOT: rewire_check_failed
func.func @gather(%ids: tensor<2x3xi64> {nn.name = "ids"}, %t: tensor<10x4xf32>) -> tensor<6x4xf32> {
  %r = nn.reshape %ids : tensor<2x3xi64> -> tensor<6xi64>
  %y = nn.gather %t, %r {axis = 0 : i64} : (tensor<10x4xf32>, tensor<6xi64>) -> tensor<6x4xf32> loc("embed")
  return %y : tensor<6x4xf32>
}

// -----

// CHECK-LABEL: func.func @computed
// CHECK-NOT: rewire.input_checks
func.func @computed(%a: tensor<4xi64> {nn.name = "a"}, %x: tensor<4xf32> {nn.name = "x"}, %t: tensor<10x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  %s = nn.add %a, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %y = nn.gather %t, %s {axis = 0 : i64} : (tensor<10x4xf32>, tensor<4xi64>) -> tensor<4x4xf32>
  %f = nn.div %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y, %f : tensor<4x4xf32>, tensor<4xf32>
}
