// rewire-train-step{split=true}: grad_step returns the loss and the
// gradients (and batch normalization's running statistics); apply_step
// scales the summed gradients by grad_scale, then clips and updates.
// RUN: rewire-opt %s --split-input-file --rewire-train-step="optimizer=adamw split=true clip=1.0 grad-norms=true" | FileCheck %s
// RUN: rewire-opt %s --split-input-file --rewire-train-step="split=true momentum=0.9 frozen=b" | FileCheck %s --check-prefix=SGD

// CHECK-NOT: func.func @train_step
// CHECK-LABEL: func.func @grad_step(
// CHECK-SAME: {nn.name = "target"}, %{{.*}}: tensor<3x2xf32> {nn.name = "param:w"}, %{{.*}}: tensor<2xf32> {nn.name = "param:b"})
// CHECK-SAME: -> (tensor<f32> {nn.name = "loss"}, tensor<3x2xf32> {nn.name = "grad:w"}, tensor<2xf32> {nn.name = "grad:b"})
// CHECK-NOT: nn.sqrt
// CHECK: return
// CHECK-LABEL: func.func @apply_step(
// CHECK-SAME: %[[W:.*]]: tensor<3x2xf32> {nn.name = "param:w"}, %{{.*}}: tensor<2xf32> {nn.name = "param:b"}, %{{.*}}: tensor<3x2xf32> {nn.name = "state:w:m"}, %{{.*}}: tensor<3x2xf32> {nn.name = "state:w:v"}, %{{.*}}: tensor<2xf32> {nn.name = "state:b:m"}, %{{.*}}: tensor<2xf32> {nn.name = "state:b:v"}, %[[GW:.*]]: tensor<3x2xf32> {nn.name = "grad:w"}, %[[GB:.*]]: tensor<2xf32> {nn.name = "grad:b"}, %[[SCALE:.*]]: tensor<f32> {nn.name = "grad_scale"}, %{{.*}}: tensor<f32> {nn.name = "lr"}, %{{.*}}: tensor<f32> {nn.name = "bias_correction1"}, %{{.*}}: tensor<f32> {nn.name = "bias_correction2"})
// CHECK-SAME: -> (tensor<3x2xf32> {nn.name = "param:w"}, tensor<2xf32> {nn.name = "param:b"}, tensor<3x2xf32> {nn.name = "state:w:m"}, tensor<3x2xf32> {nn.name = "state:w:v"}, tensor<2xf32> {nn.name = "state:b:m"}, tensor<2xf32> {nn.name = "state:b:v"}, tensor<f32> {nn.name = "gradnorm:w"}, tensor<f32> {nn.name = "gradnorm:b"})
// The scale comes first: clipping sees the mean gradient.
// CHECK-NEXT: %[[G:.*]] = nn.mul %[[GW]], %[[SCALE]]
// CHECK-NEXT: nn.mul %[[GB]], %[[SCALE]]
// CHECK-NEXT: nn.mul %[[G]], %[[G]]
// CHECK: nn.where
// CHECK: nn.sub %[[W]],

// Frozen parameters are inputs of grad_step only; SGD momentum is
// apply_step's state.
// SGD-LABEL: func.func @grad_step(
// SGD-SAME: -> (tensor<f32> {nn.name = "loss"}, tensor<3x2xf32> {nn.name = "grad:w"})
// SGD-LABEL: func.func @apply_step(
// SGD-SAME: {nn.name = "param:w"}, %{{.*}}: tensor<3x2xf32> {nn.name = "state:w:momentum"}, %{{.*}}: tensor<3x2xf32> {nn.name = "grad:w"}, %{{.*}}: tensor<f32> {nn.name = "grad_scale"}, %{{.*}}: tensor<f32> {nn.name = "lr"})
// SGD-SAME: -> (tensor<3x2xf32> {nn.name = "param:w"}, tensor<3x2xf32> {nn.name = "state:w:momentum"})
func.func @forward(%x: tensor<4x3xf32>, %w: tensor<3x2xf32> {nn.parameter = "w"}, %b: tensor<2xf32> {nn.parameter = "b"}) -> tensor<4x2xf32> {
  %y1 = nn.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %y2 = nn.add %y1, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %y = nn.tanh %y2 : tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Batch norm's running statistics leave with the gradients (grad_step runs
// the batch); apply_step has none of them.
// CHECK-LABEL: func.func @grad_step(
// CHECK-SAME: -> (tensor<f32> {nn.name = "loss"}, tensor<3xf32> {nn.name = "grad:s"}, tensor<3xf32> {nn.name = "param:m"}, tensor<3xf32> {nn.name = "param:v"})
// CHECK-LABEL: func.func @apply_step(
// CHECK-SAME: -> (tensor<3xf32> {nn.name = "param:s"}, tensor<3xf32> {nn.name = "state:s:m"}, tensor<3xf32> {nn.name = "state:s:v"}, tensor<f32> {nn.name = "gradnorm:s"})
func.func @forward(%x: tensor<2x3x2x2xf32>, %s: tensor<3xf32> {nn.parameter = "s"}, %m: tensor<3xf32> {nn.parameter = "m"}, %v: tensor<3xf32> {nn.parameter = "v"}) -> tensor<2x3x2x2xf32> {
  %y = nn.batch_norm %x, %s, %s, %m, %v {training, momentum = 0.9 : f32} : tensor<2x3x2x2xf32>, tensor<3xf32>
  return %y : tensor<2x3x2x2xf32>
}
