// RUN: rewire-opt %s --split-input-file --nn-parameters-to-arguments --verify-diagnostics | FileCheck %s

// Parameters (external, rule-initialized or with dense initial values)
// become trailing arguments, once each, in the order of first use; globals
// without uses go away.
module {
  ml_program.global private @w(#ml_program.extern : tensor<4x4xf32>) : tensor<4x4xf32>
  ml_program.global private @alpha(#nn.init<constant(1.0)>) : tensor<4xf32>
  ml_program.global private @c(dense<2.0> : tensor<4xf32>) : tensor<4xf32>
  // CHECK-LABEL: func.func @forward
  // CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>, %[[W:.*]]: tensor<4x4xf32> {bufferization.writable = false, nn.parameter = "w"}, %[[A:.*]]: tensor<4xf32> {bufferization.writable = false, nn.parameter = "alpha"}, %[[C:.*]]: tensor<4xf32> {bufferization.writable = false, nn.parameter = "c"})
  func.func @forward(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %w = ml_program.global_load_const @w : tensor<4x4xf32>
    %a = ml_program.global_load_const @alpha : tensor<4xf32>
    %c = ml_program.global_load_const @c : tensor<4xf32>
    %w2 = ml_program.global_load_const @w : tensor<4x4xf32>
    // CHECK: nn.matmul %[[X]], %[[W]]
    %y = nn.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    // CHECK: nn.mul %{{.*}}, %[[A]]
    %z = nn.mul %y, %a : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    %u = nn.add %z, %c : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    // CHECK: nn.add %{{.*}}, %[[W]]
    %v = nn.add %u, %w2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    return %v : tensor<4x4xf32>
  }
  // CHECK-NOT: ml_program.global
}

// -----

module {
  ml_program.global private @w(#ml_program.extern : tensor<4xf32>) : tensor<4xf32>
  func.func private @helper() -> tensor<4xf32> {
    // expected-error @+1 {{private function 'helper' loads parameter 'w'; only public functions receive parameters}}
    %w = ml_program.global_load_const @w : tensor<4xf32>
    return %w : tensor<4xf32>
  }
}
