// residual-rewrite rejects what it cannot do, with a message saying why.
// RUN: not rewire-opt %s --split-input-file --residual-rewrite="kind=review combine=convex init=identity" 2>&1 | FileCheck %s --check-prefix=CONVEX-ID
// RUN: not rewire-opt %s --split-input-file --residual-rewrite="kind=rezero combine=convex" 2>&1 | FileCheck %s --check-prefix=CONVEX-SCALE
// RUN: not rewire-opt %s --split-input-file --residual-rewrite="kind=review eps=0" 2>&1 | FileCheck %s --check-prefix=EPS
// RUN: not rewire-opt %s --split-input-file --residual-rewrite="kind=densenet" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: rewire-opt %s --split-input-file --verify-diagnostics --residual-rewrite=kind=layerscale

// CONVEX-ID: residual-rewrite: kind=review combine=convex has no identity initialization (a gate of 1 drops the state h); use init=paper or combine=additive
// CONVEX-SCALE: residual-rewrite: combine=convex applies only to the gated kinds (review, highway), not kind=rezero
// EPS: residual-rewrite: eps must be positive, got 0
// KIND: Cannot find option named 'densenet'!

func.func @dynamic_feature(%h: tensor<2x?xf32>, %u: tensor<2x?xf32>) -> tensor<2x?xf32> {
  // expected-error @+1 {{residual-rewrite: kind=layerscale needs a static feature size to create per-channel parameters}}
  %0 = residual.add %h, %u stream 0 layer 0 : tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

func.func @duplicate_layer(%h: tensor<2x4xf32>, %u: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = residual.add %h, %u stream 0 layer 0 : tensor<2x4xf32>
  // expected-error @+1 {{cannot add parameter 'stream0.layer0.layerscale.lambda': the name is already taken}}
  %1 = residual.add %0, %u stream 0 layer 0 : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
