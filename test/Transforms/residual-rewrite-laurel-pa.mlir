// kind=laurel with pa (LAuReL-PA, papers.md 6.3): from a stream's second
// update on, the new state also adds the states that entered its earlier
// updates, x_(i+1) = y_i + sum_(j<i) gamma_(i,j) x_j, as a residual.mix
// additive with gamma = 0 (the function is kept). With rw or lr the updates
// themselves become residual.laurel as without pa.
// RUN: rewire-opt %s --split-input-file --residual-rewrite="kind=laurel laurel=pa" | FileCheck %s --check-prefix=PA
// RUN: rewire-opt %s --split-input-file --residual-rewrite="kind=laurel laurel=rw-lr-pa rank=2" | FileCheck %s --check-prefix=ALL
// The rewritten IR verifies and round-trips.
// RUN: rewire-opt %s --split-input-file --residual-rewrite="kind=laurel laurel=rw-pa" | rewire-opt --split-input-file | FileCheck %s --check-prefix=RWPA

// PA-LABEL: func.func @three
// PA: %[[S1:.*]] = residual.add %arg0, %arg1 stream 0 layer 0
// PA-NOT: residual.mix
// PA: %[[Y1:.*]] = residual.add %[[S1]], %arg2 stream 0 layer 1
// PA: %[[G1:.*]] = ml_program.global_load_const @stream0.layer1.laurel.gamma : tensor<1xf32>
// PA: %[[S2:.*]] = residual.mix additive %[[Y1]], [%arg0], %[[G1]] stream 0 layer 1 : tensor<2x8xf32>, tensor<1xf32>
// PA: %[[Y2:.*]] = residual.add %[[S2]], %arg3 stream 0 layer 2
// PA: %[[G2:.*]] = ml_program.global_load_const @stream0.layer2.laurel.gamma : tensor<2xf32>
// PA: %[[S3:.*]] = residual.mix additive %[[Y2]], [%arg0, %[[S1]]], %[[G2]] stream 0 layer 2 : tensor<2x8xf32>, tensor<2xf32>
// PA: return %[[S3]]
// PA-NOT: stream0.layer0.laurel
// PA-DAG: ml_program.global private @stream0.layer1.laurel.gamma(#nn.init<zeros>) : tensor<1xf32>
// PA-DAG: ml_program.global private @stream0.layer2.laurel.gamma(#nn.init<zeros>) : tensor<2xf32>

// ALL-LABEL: func.func @three
// ALL: %[[S1:.*]] = residual.laurel %arg0, %arg1, {{.*}} lowrank {{.*}} stream 0 layer 0
// ALL: %[[Y1:.*]] = residual.laurel %[[S1]], %arg2, {{.*}} lowrank {{.*}} stream 0 layer 1
// ALL: %[[S2:.*]] = residual.mix additive %[[Y1]], [%arg0], %{{.*}} stream 0 layer 1
// ALL: %[[Y2:.*]] = residual.laurel %[[S2]], %arg3, {{.*}} stream 0 layer 2
// ALL: residual.mix additive %[[Y2]], [%arg0, %[[S1]]], %{{.*}} stream 0 layer 2
// ALL-DAG: ml_program.global private @stream0.layer2.laurel.gamma(#nn.init<zeros>) : tensor<2xf32>
// ALL-DAG: ml_program.global private @stream0.layer2.laurel.B(#nn.init<zeros>) : tensor<2x8xf32>

// RWPA-LABEL: func.func @three
// RWPA-COUNT-3: residual.laurel
// RWPA-NOT: lowrank
func.func @three(%h: tensor<2x8xf32>, %u0: tensor<2x8xf32>, %u1: tensor<2x8xf32>, %u2: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = residual.add %h, %u0 stream 0 layer 0 : tensor<2x8xf32>
  %1 = residual.add %0, %u1 stream 0 layer 1 : tensor<2x8xf32>
  %2 = residual.add %1, %u2 stream 0 layer 2 : tensor<2x8xf32>
  return %2 : tensor<2x8xf32>
}

// -----

// Where the stream changes shape (a ResNet stage), the earlier states start
// again: the first update of the new shape mixes nothing, the second only
// the new shape's first state.
// PA-LABEL: func.func @stages
// PA: residual.add %arg0, %arg1 stream 0 layer 0
// PA: %[[P:.*]] = nn.matmul
// PA: %[[Y2:.*]] = residual.add %[[P]], %arg3 stream 0 layer 1
// PA-NOT: residual.mix {{.*}} layer 1
// PA: %[[Y3:.*]] = residual.add %[[Y2]], %arg4 stream 0 layer 2
// PA: residual.mix additive %[[Y3]], [%[[P]]], %{{.*}} stream 0 layer 2 : tensor<2x4xf32>, tensor<1xf32>
func.func @stages(%h: tensor<2x8xf32>, %u0: tensor<2x8xf32>, %w: tensor<8x4xf32>, %u1: tensor<2x4xf32>, %u2: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = residual.add %h, %u0 stream 0 layer 0 : tensor<2x8xf32>
  %p = nn.matmul %0, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %1 = residual.add %p, %u1 stream 0 layer 1 : tensor<2x4xf32>
  %2 = residual.add %1, %u2 stream 0 layer 2 : tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}
