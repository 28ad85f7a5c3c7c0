// rewire-train-step: the named signatures of eval_step and train_step, the
// optimizer update, LPA's per-depth loss, batch-norm running statistics, and
// its errors.
// RUN: rewire-opt %s --split-input-file --rewire-train-step="depth-weights=linear" | FileCheck %s --check-prefix=LPA
// RUN: rewire-opt %s --split-input-file --rewire-train-step="optimizer=adamw grad-norms=true" | FileCheck %s --check-prefix=ADAM
// RUN: not rewire-opt %s --split-input-file --rewire-train-step="depth-weights=0.5" 2>&1 | FileCheck %s --check-prefix=BADW
// RUN: not rewire-opt %s --split-input-file --rewire-train-step="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=BADOPT

// A model with an LPA readout at depth 1 (`y_depth1`); the output is depth 2.
// LPA-LABEL: func.func @eval_step(
// LPA-SAME: {nn.name = "target"}, %{{.*}}: tensor<3x2xf32> {nn.name = "param:w"})
// LPA-SAME: -> (tensor<f32> {nn.name = "loss"}, tensor<f32> {nn.name = "loss:depth1"}, tensor<f32> {nn.name = "loss:depth2"})
// Linear weights: 1/3 and 2/3.
// LPA-DAG: nn.constant dense<0.333333343> : tensor<f32>
// LPA-DAG: nn.constant dense<0.666666686> : tensor<f32>
// LPA-LABEL: func.func @train_step(
// LPA-SAME: %{{.*}}: tensor<f32> {nn.name = "lr"})
// LPA-SAME: -> (tensor<f32> {nn.name = "loss"}, tensor<3x2xf32> {nn.name = "param:w"}, tensor<f32> {nn.name = "loss:depth1"}, tensor<f32> {nn.name = "loss:depth2"})
// LPA: %[[LR:.*]] = nn.mul %arg3, %{{.*}}
// LPA: %[[NEW:.*]] = nn.sub %arg2, %[[LR]]
// LPA: return %{{.*}}, %[[NEW]], %{{.*}}, %{{.*}} :

// ADAM-LABEL: func.func @train_step(
// ADAM-SAME: {nn.name = "state:w:m"}, %{{.*}}: tensor<3x2xf32> {nn.name = "state:w:v"}, %{{.*}}: tensor<f32> {nn.name = "lr"}, %{{.*}}: tensor<f32> {nn.name = "bias_correction1"}, %{{.*}}: tensor<f32> {nn.name = "bias_correction2"})
// ADAM-SAME: {nn.name = "state:w:m"}, tensor<3x2xf32> {nn.name = "state:w:v"}, tensor<f32> {nn.name = "loss:depth1"}, tensor<f32> {nn.name = "loss:depth2"}, tensor<f32> {nn.name = "gradnorm:w"})

// BADW: error: rewire-train-step: depth-weights has 1 values; the model has 2 depths
// BADOPT: for the --optimizer option: Cannot find option named 'lion'!

func.func @forward(%x: tensor<4x3xf32>, %w: tensor<3x2xf32> {nn.parameter = "w"}) -> (tensor<4x2xf32> {nn.name = "y"}, tensor<4x2xf32> {nn.name = "y_depth1"}) {
  %y1 = nn.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y = nn.tanh %y1 : tensor<4x2xf32>
  return %y, %y1 : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// Batch norm in training mode: the running statistics are buffers, returned
// updated (0.9 running + 0.1 batch, from the f32 momentum; the variance
// unbiased, n/(n-1) = 8/7),
// never differentiated; eval_step normalizes with them.
// LPA-LABEL: func.func @eval_step(
// LPA: nn.batch_norm %{{.*}} : tensor<2x3x2x2xf32>, tensor<3xf32>
// LPA-NOT: training
// LPA-LABEL: func.func @train_step(
// LPA-SAME: -> (tensor<f32> {nn.name = "loss"}, tensor<3xf32> {nn.name = "param:s"}, tensor<3xf32> {nn.name = "param:m"}, tensor<3xf32> {nn.name = "param:v"})
// LPA-DAG: nn.constant dense<0.899999976> : tensor<f32>
// LPA-DAG: nn.constant dense<0.100000024> : tensor<f32>
// LPA-DAG: nn.constant dense<0.114285745> : tensor<f32>
// LPA-NOT: grad:m
func.func @forward(%x: tensor<2x3x2x2xf32>, %s: tensor<3xf32> {nn.parameter = "s"}, %m: tensor<3xf32> {nn.parameter = "m"}, %v: tensor<3xf32> {nn.parameter = "v"}) -> tensor<2x3x2x2xf32> {
  %y = nn.batch_norm %x, %s, %s, %m, %v {training, momentum = 0.9 : f32} : tensor<2x3x2x2xf32>, tensor<3xf32>
  return %y : tensor<2x3x2x2xf32>
}
