// Malformed #nn.init initializers.
// RUN: rewire-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{unknown initializer 'xavier'; expected zeros, ones, constant, normal or uniform}}
ml_program.global private @w(#nn.init<xavier>) : tensor<4xf32>

// -----

// expected-error @+1 {{normal initializer needs a positive standard deviation, got 0}}
ml_program.global private @w(#nn.init<normal(0.0, 0.0)>) : tensor<4xf32>

// -----

// expected-error @+1 {{normal initializer needs a positive standard deviation, got -1}}
ml_program.global private @w(#nn.init<normal(0.0, -1.0)>) : tensor<4xf32>

// -----

// expected-error @+1 {{uniform initializer needs low < high, got [1.000000e+00, 1.000000e+00)}}
ml_program.global private @w(#nn.init<uniform(1.0, 1.0)>) : tensor<4xf32>

// -----

// expected-error @+1 {{expected '('}}
ml_program.global private @w(#nn.init<constant>) : tensor<4xf32>

// -----

// expected-error @+1 {{expected ','}}
ml_program.global private @w(#nn.init<normal(0.0)>) : tensor<4xf32>

// -----

// expected-error @+1 {{expected '>'}}
ml_program.global private @w(#nn.init<zeros(1.0)>) : tensor<4xf32>
