// residual-mod routes every NAG update's modulator (Mixture-of-Depths).
// RUN: rewire-opt %s --residual-rewrite=kind=nag --residual-mod=rate=0.25 | FileCheck %s --check-prefix=RATE
// RUN: rewire-opt %s --residual-rewrite=kind=nag --residual-mod=threshold=0.4 | FileCheck %s --check-prefix=THRESHOLD
// RUN: not rewire-opt %s --residual-mod=rate=0.25 2>&1 | FileCheck %s --check-prefix=NO-NAG
// RUN: not rewire-opt %s --residual-rewrite=kind=nag --residual-mod="rate=0.2 threshold=0.5" 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not rewire-opt %s --residual-rewrite=kind=nag --residual-mod 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not rewire-opt %s --residual-rewrite=kind=nag --residual-mod=rate=1.0 2>&1 | FileCheck %s --check-prefix=RANGE

func.func @forward(%h0: tensor<2x8xf32>, %a0: tensor<2x8xf32>, %m0: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %h1 = residual.add %h0, %a0 stream 0 layer 0 : tensor<2x8xf32>
  %h2 = residual.add %h1, %m0 stream 0 layer 1 : tensor<2x8xf32>
  return %h2 : tensor<2x8xf32>
}

// RATE: %[[G0:.*]] = residual.nag_gate %arg0
// RATE: %[[R0:.*]] = residual.route %[[G0]] rate 2.500000e-01 : tensor<2x1xf32>
// RATE: residual.nag_add %arg0, %arg1, %{{.*}}, %[[R0]] stream 0 layer 0
// RATE: residual.route %{{.*}} rate 2.500000e-01
// THRESHOLD-COUNT-2: residual.route %{{.*}} threshold 4.000000e-01
// NO-NAG: residual-mod: no NAG updates to route; run residual-rewrite{kind=nag} first
// BOTH: residual-mod: give exactly one of threshold (>= 0) and rate (in [0, 1))
// RANGE: residual-mod: rate must be in [0, 1), got 1
