// Stream-level and NAG forms of residual-rewrite on a two-block stream
// (attention then MLP per block, as residual-detect marks them).
// RUN: rewire-opt %s --residual-rewrite=kind=ancre | FileCheck %s --check-prefix=ANCRE
// RUN: rewire-opt %s --residual-rewrite="kind=ancre granularity=sublayer tau=0.5" | FileCheck %s --check-prefix=ANCRE-SUB
// RUN: rewire-opt %s --residual-rewrite=kind=denseformer | FileCheck %s --check-prefix=DENSE
// RUN: rewire-opt %s --residual-rewrite=kind=denseformer --canonicalize | FileCheck %s --check-prefix=DENSE-CANON
// RUN: rewire-opt %s --residual-rewrite=kind=lpa | FileCheck %s --check-prefix=LPA
// RUN: rewire-opt %s --residual-rewrite="kind=lpa stop-gradient=true" | FileCheck %s --check-prefix=LPA-SG
// RUN: not rewire-opt %s --residual-rewrite="kind=ancre stop-gradient=true" 2>&1 | FileCheck %s --check-prefix=SG-KIND
// RUN: rewire-opt %s --residual-rewrite="kind=nag nag-c=4" | FileCheck %s --check-prefix=NAG
// RUN: rewire-opt %s --residual-truncate=depth=1 | FileCheck %s --check-prefix=TRUNC
// RUN: not rewire-opt %s --residual-rewrite="kind=ancre init=identity" 2>&1 | FileCheck %s --check-prefix=ANCRE-ID
// RUN: not rewire-opt %s --residual-rewrite="kind=nag init=identity" 2>&1 | FileCheck %s --check-prefix=NAG-ID
// RUN: not rewire-opt %s --residual-truncate=depth=3 2>&1 | FileCheck %s --check-prefix=TRUNC-RANGE

ml_program.global private @head(#ml_program.extern : tensor<8x10xf32>) : tensor<8x10xf32>

func.func @forward(%h0: tensor<2x8xf32>, %a0: tensor<2x8xf32>, %m0: tensor<2x8xf32>,
                   %a1: tensor<2x8xf32>, %m1: tensor<2x8xf32>) -> (tensor<2x10xf32> {nn.name = "logits"}) {
  %h1 = residual.add %h0, %a0 stream 0 layer 0 {residual.branch = "attention"} : tensor<2x8xf32>
  %h2 = residual.add %h1, %m0 stream 0 layer 1 {residual.branch = "mlp"} : tensor<2x8xf32>
  %h3 = residual.add %h2, %a1 stream 0 layer 2 {residual.branch = "attention"} : tensor<2x8xf32>
  %h4 = residual.add %h3, %m1 stream 0 layer 3 {residual.branch = "mlp"} : tensor<2x8xf32>
  %w = ml_program.global_load_const @head : tensor<8x10xf32>
  %y = nn.matmul %h4, %w : (tensor<2x8xf32>, tensor<8x10xf32>) -> tensor<2x10xf32>
  return %y : tensor<2x10xf32>
}

// ANCRe after each block: h_{k+1} = y_k + sum_j softmax(c_k / tau)_j h_j,
// c_k with k+1 logits, 0 at init; K(K+1)/2 = 3 parameters for K = 2 blocks.
// ANCRE-LABEL: func.func @forward
// ANCRE: %[[H2:.*]] = residual.add %{{.*}}, %arg2 stream 0 layer 1
// ANCRE: %[[C0:.*]] = ml_program.global_load_const @stream0.layer1.ancre.c : tensor<1xf32>
// ANCRE: %[[S1:.*]] = residual.mix softmax %[[H2]], [%arg0], %[[C0]] tau 1.000000e-02 stream 0 layer 1
// ANCRE: residual.add %[[S1]], %arg3 stream 0 layer 2
// ANCRE: %[[H4:.*]] = residual.add %{{.*}}, %arg4 stream 0 layer 3
// ANCRE: %[[C1:.*]] = ml_program.global_load_const @stream0.layer3.ancre.c : tensor<2xf32>
// ANCRE: %[[S2:.*]] = residual.mix softmax %[[H4]], [%arg0, %[[S1]]], %[[C1]] tau 1.000000e-02 stream 0 layer 3
// ANCRE: nn.matmul %[[S2]]
// ANCRE-DAG: ml_program.global private @stream0.layer1.ancre.c(#nn.init<zeros>) : tensor<1xf32>
// ANCRE-DAG: ml_program.global private @stream0.layer3.ancre.c(#nn.init<zeros>) : tensor<2xf32>

// ANCRE-SUB-COUNT-4: residual.mix softmax {{.*}} tau 5.000000e-01
// ANCRE-SUB: ml_program.global private @stream0.layer3.ancre.c(#nn.init<zeros>) : tensor<4xf32>

// DenseFormer: free weights over the earlier states and the block output,
// initialized to weight 1 on the block output (exactly the standard network).
// DENSE: residual.mix free %{{.*}}, [%arg0], %{{.*}} stream 0 layer 1 : tensor<2x8xf32>, tensor<2xf32>
// DENSE: residual.mix free %{{.*}}, [%arg0, %{{.*}}], %{{.*}} stream 0 layer 3 : tensor<2x8xf32>, tensor<3xf32>
// DENSE-DAG: ml_program.global private @stream0.layer1.denseformer.c(dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32>) : tensor<2xf32>
// DENSE-DAG: ml_program.global private @stream0.layer3.denseformer.c(dense<[0.000000e+00, 0.000000e+00, 1.000000e+00]> : tensor<3xf32>) : tensor<3xf32>

// The weights are parameters (loads), not constants: canonicalization keeps them.
// DENSE-CANON-COUNT-2: residual.mix free

// LPA adds a tap after each block; the head is cloned onto depth 1 and returned.
// LPA: func.func @forward({{.*}}) -> (tensor<2x10xf32> {nn.name = "logits"}, tensor<2x10xf32> {nn.name = "logits_depth1"})
// LPA: %[[T1:.*]] = residual.tap %{{.*}} name "depth1" stream 0 layer 1
// LPA: %[[T2:.*]] = residual.tap %{{.*}} name "depth2" stream 0 layer 3
// LPA: %[[Y:.*]] = nn.matmul %[[T2]]
// LPA: %[[Y1:.*]] = nn.matmul %[[T1]]
// LPA: return %[[Y]], %[[Y1]]

// LPA's residual-fitting variant: block 2 reads the detached state, the
// depth-1 readout the state itself.
// LPA-SG: %[[T1:.*]] = residual.tap %{{.*}} name "depth1" stream 0 layer 1
// LPA-SG-NEXT: %[[D1:.*]] = nn.stop_gradient %[[T1]]
// LPA-SG-NOT: residual.{{.*}} %[[T1]],
// LPA-SG: residual.add %[[D1]],
// LPA-SG: nn.matmul %[[T1]]
// SG-KIND: residual-rewrite: stop-gradient applies only to kind=lpa, not kind=ancre

// NAG gates from the sublayer input, then makes the norm-agnostic update;
// alpha_l = l^{-1/2} (l 1-based), w ~ N(0, 0.02), b = pi = 0, C = nag-c.
// NAG: %[[M:.*]] = residual.nag_gate %arg0, %{{.*}}, %{{.*}}, %{{.*}} stream 0 layer 0 : tensor<2x8xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>
// NAG: residual.nag_add %arg0, %arg1, %{{.*}}, %[[M]] stream 0 layer 0 {residual.branch = "attention"}
// NAG-DAG: ml_program.global private @stream0.layer0.nag.alpha(#nn.init<ones>) : tensor<f32>
// NAG-DAG: ml_program.global private @stream0.layer3.nag.alpha(#nn.init<constant(5.000000e-01)>) : tensor<f32>
// NAG-DAG: ml_program.global private @stream0.layer1.nag.w(#nn.init<normal(0.000000e+00, 2.000000e-02)>) : tensor<8x4xf32>

// Truncation to one block: the head reads the state after block 1.
// TRUNC: %[[K:.*]] = residual.add %{{.*}}, %arg2 stream 0 layer 1
// TRUNC-NOT: layer 2
// TRUNC: nn.matmul %[[K]]

// ANCRE-ID: residual-rewrite: kind=ancre has no identity initialization (softmax weights cannot all be 0, so earlier states are always added); use init=paper
// NAG-ID: residual-rewrite: kind=nag has no identity initialization (it renormalizes every update); use init=paper
// TRUNC-RANGE: residual-truncate: depth must be between 1 and 2 (the blocks of 'forward'), got 3
