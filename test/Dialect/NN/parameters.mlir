// The parameter representation: immutable ml_program.global symbols whose
// initial value is #ml_program.extern (values in the parameter file) or an
// #nn.init rule; read with ml_program.global_load_const.
// RUN: rewire-opt %s --split-input-file | rewire-opt --split-input-file | FileCheck %s

// CHECK: #[[EXT:.*]] = #ml_program.extern : tensor<64x192xf32>
// CHECK-LABEL: module attributes {nn.parameter_file = "tiny.safetensors"}
module attributes {nn.parameter_file = "tiny.safetensors"} {
  // CHECK: ml_program.global private @"/h.0/attn/c_attn/weight"(#[[EXT]]) : tensor<64x192xf32>
  ml_program.global private @"/h.0/attn/c_attn/weight"(#ml_program.extern : tensor<64x192xf32>) : tensor<64x192xf32>
  // CHECK: ml_program.global private @stream0.layer0.review.W(#nn.init<zeros>) : tensor<128x64xf32>
  ml_program.global private @stream0.layer0.review.W(#nn.init<zeros>) : tensor<128x64xf32>
  // CHECK: ml_program.global private @a(#nn.init<ones>) : tensor<f32>
  ml_program.global private @a(#nn.init<ones>) : tensor<f32>
  // CHECK: ml_program.global private @b(#nn.init<constant(-2.000000e+00)>) : tensor<64xf32>
  ml_program.global private @b(#nn.init<constant(-2.0)>) : tensor<64xf32>
  // CHECK: ml_program.global private @c(#nn.init<normal(0.000000e+00, 2.000000e-02)>) : tensor<64x8xf32>
  ml_program.global private @c(#nn.init<normal(0.0, 0.02)>) : tensor<64x8xf32>
  // CHECK: ml_program.global private @d(#nn.init<uniform(-1.000000e-01, 1.000000e-01)>) : tensor<8xf32>
  ml_program.global private @d(#nn.init<uniform(-0.1, 0.1)>) : tensor<8xf32>

  // CHECK-LABEL: func.func @use
  func.func @use(%x: tensor<2x64xf32>) -> tensor<2x192xf32> {
    // CHECK: ml_program.global_load_const @"/h.0/attn/c_attn/weight" : tensor<64x192xf32>
    %w = ml_program.global_load_const @"/h.0/attn/c_attn/weight" : tensor<64x192xf32>
    %0 = nn.matmul %x, %w : (tensor<2x64xf32>, tensor<64x192xf32>) -> tensor<2x192xf32>
    return %0 : tensor<2x192xf32>
  }
}
