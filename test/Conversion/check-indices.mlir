// RUN: rewire-opt %s --rewire-check-indices --split-input-file | FileCheck %s

// A gather over 10 rows: one reduction over the ids finds the first one
// outside [-10, 10); the call names the op, its node and the input.
// CHECK-DAG: memref.global "private" constant @{{.*}} : memref<{{[0-9]+}}xi8> = dense<
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "reduction"]
// CHECK: arith.minsi
// CHECK: scf.if
// CHECK: affine.delinearize_index
// CHECK: call @rewire_check_failed
// CHECK: nn.gather
// CHECK: func.func private @rewire_check_failed(i64, i64, i64, i64, i64, i64)
func.func @gather(%ids: tensor<2x3xi64> {nn.name = "ids"}, %t: tensor<10x4xf32>) -> tensor<2x3x4xf32> {
  %y = nn.gather %t, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32> loc("embed")
  return %y : tensor<2x3x4xf32>
}

// -----

// Float division needs no check; integer division checks the divisor once
// even when it divides twice.
// CHECK-LABEL: func.func @divide
// CHECK-COUNT-1: call @rewire_check_failed
// CHECK-NOT: call @rewire_check_failed
func.func @divide(%a: tensor<4xi64>, %b: tensor<4xi64>, %x: tensor<4xf32>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xf32>) {
  %q = nn.div %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %r = nn.div %q, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %f = nn.div %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %q, %r, %f : tensor<4xi64>, tensor<4xi64>, tensor<4xf32>
}
