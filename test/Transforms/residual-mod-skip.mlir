// residual-mod rate=r runs each sublayer on the rows its sequence keeps
// (K = 8 - floor(0.25 * 8) = 6 of 8): gather -> branch on [2, 6, 16] ->
// scatter-add of the update into the stream. skip=false keeps the masked form.
// RUN: rewire-opt %S/Inputs/mod-block.mlir --residual-rewrite=kind=nag --residual-mod=rate=0.25 | FileCheck %s
// RUN: rewire-opt %S/Inputs/mod-block.mlir --residual-rewrite=kind=nag --residual-mod="rate=0.25 skip=false" | FileCheck %s --check-prefix=MASK
// RUN: rewire-opt %S/Inputs/mod-block.mlir --residual-rewrite=kind=nag --residual-mod=rate=0.25 | rewire-opt | FileCheck %s

// CHECK-LABEL: func.func @forward
// CHECK: %[[G0:.*]] = residual.nag_gate %arg0
// CHECK: %[[I0:.*]] = residual.route_select %[[G0]] rate 2.500000e-01 : tensor<2x8x1xf32> -> tensor<2x6xi64>
// CHECK: %[[F0:.*]] = nn.reshape %arg0 : tensor<2x8x16xf32> -> tensor<16x16xf32>
// CHECK: %[[X0:.*]] = nn.gather %[[F0]], %[[I0]] : (tensor<16x16xf32>, tensor<2x6xi64>) -> tensor<2x6x16xf32>
// CHECK: nn.layer_norm %[[X0]], %arg1 : tensor<2x6x16xf32>
// CHECK: nn.reshape %{{.*}} : tensor<2x6x16xf32> -> tensor<2x6x4x4xf32>
// CHECK: nn.attention %{{.*}} {causal} : (tensor<2x4x6x4xf32>, tensor<2x4x6x4xf32>, tensor<2x4x6x4xf32>) -> tensor<2x4x6x4xf32>
// CHECK: %[[U0:.*]] = residual.nag_add %[[X0]], %{{.*}} stream 0 layer 0 {residual.branch = "attention"} : tensor<2x6x16xf32>
// CHECK: %[[D0:.*]] = nn.sub %[[U0]], %[[X0]]
// CHECK: %[[S0:.*]] = nn.scatter_add %[[D0]], %[[I0]] into %[[F0]] : (tensor<2x6x16xf32>, tensor<2x6xi64>, tensor<16x16xf32>) -> tensor<16x16xf32>
// CHECK: %[[H1:.*]] = nn.reshape %[[S0]] : tensor<16x16xf32> -> tensor<2x8x16xf32>
// CHECK: residual.nag_gate %[[H1]]
// CHECK: residual.route_select
// CHECK: nn.reshape %{{.*}} : tensor<2x6x16xf32> -> tensor<12x16xf32>
// CHECK: nn.gelu %{{.*}} : tensor<12x32xf32>
// CHECK: nn.reshape %{{.*}} : tensor<12x16xf32> -> tensor<2x6x16xf32>
// CHECK: residual.nag_add {{.*}} stream 0 layer 1 {residual.branch = "mlp"} : tensor<2x6x16xf32>
// CHECK-NOT: tensor<2x4x8x4xf32>
// CHECK-NOT: residual.route {{.*}}rate

// MASK-LABEL: func.func @forward
// MASK: nn.attention %{{.*}} {causal} : (tensor<2x4x8x4xf32>
// MASK: residual.route %{{.*}} rate 2.500000e-01 : tensor<2x8x1xf32>
// MASK-NOT: residual.route_select
