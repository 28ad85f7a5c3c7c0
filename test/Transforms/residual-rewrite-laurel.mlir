// kind=laurel (LAuReL, papers.md 6.3): residual.laurel with learned scalars
// (rw), a low-rank map of the state (lr), or both (rw-lr, the default); all
// start as h + u (alpha = beta = 1, B = 0).
// RUN: rewire-opt %s --residual-rewrite=kind=laurel | FileCheck %s --check-prefix=RWLR
// RUN: rewire-opt %s --residual-rewrite="kind=laurel laurel=rw" | FileCheck %s --check-prefix=RW
// RUN: rewire-opt %s --residual-rewrite="kind=laurel laurel=lr rank=4" | FileCheck %s --check-prefix=LR
// RUN: not rewire-opt %s --residual-rewrite="kind=laurel rank=0" 2>&1 | FileCheck %s --check-prefix=RANK
// The low-rank map needs the features last (rw works on any axis: residual-rewrite.mlir).
// RUN: printf 'func.func @nchw(%%%%x: tensor<1x4x3x3xf32>, %%%%y: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {\n  %%%%0 = residual.add %%%%x, %%%%y axis 1 stream 0 layer 0 : tensor<1x4x3x3xf32>\n  return %%%%0 : tensor<1x4x3x3xf32>\n}\n' > %t.nchw.mlir
// RUN: not rewire-opt %t.nchw.mlir --residual-rewrite=kind=laurel 2>&1 | FileCheck %s --check-prefix=NCHW
// The rewritten IR verifies and round-trips.
// RUN: rewire-opt %s --residual-rewrite=kind=laurel | rewire-opt | FileCheck %s --check-prefix=RWLR

// RWLR-LABEL: func.func @block
// RWLR-DAG: %[[A:.*]] = ml_program.global_load_const @stream0.layer0.laurel.alpha : tensor<f32>
// RWLR-DAG: %[[B:.*]] = ml_program.global_load_const @stream0.layer0.laurel.beta : tensor<f32>
// RWLR-DAG: %[[LA:.*]] = ml_program.global_load_const @stream0.layer0.laurel.A : tensor<16x16xf32>
// RWLR-DAG: %[[LB:.*]] = ml_program.global_load_const @stream0.layer0.laurel.B : tensor<16x16xf32>
// RWLR: residual.laurel %{{.*}}, %{{.*}}, %[[A]], %[[B]] lowrank %[[LA]], %[[LB]] stream 0 layer 0 : tensor<2x8x16xf32>, tensor<f32>, tensor<f32>, tensor<16x16xf32>, tensor<16x16xf32>
// RWLR: residual.laurel {{.*}} stream 0 layer 1
// RWLR-NOT: residual.add
// RWLR-DAG: ml_program.global private @stream0.layer0.laurel.alpha(#nn.init<ones>) : tensor<f32>
// RWLR-DAG: ml_program.global private @stream0.layer0.laurel.beta(#nn.init<ones>) : tensor<f32>
// RWLR-DAG: ml_program.global private @stream0.layer0.laurel.A(#nn.init<normal(0.000000e+00, 2.000000e-02)>) : tensor<16x16xf32>
// RWLR-DAG: ml_program.global private @stream0.layer0.laurel.B(#nn.init<zeros>) : tensor<16x16xf32>

// RW-LABEL: func.func @block
// RW: residual.laurel %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} stream 0 layer 0 : tensor<2x8x16xf32>, tensor<f32>, tensor<f32>{{$}}
// RW-NOT: laurel.A
// RW-NOT: lowrank

// LR-LABEL: func.func @block
// LR: %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32>
// LR: residual.laurel %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}} lowrank {{.*}} : tensor<2x8x16xf32>, tensor<f32>, tensor<f32>, tensor<16x4xf32>, tensor<4x16xf32>
// LR-NOT: laurel.alpha
// LR-DAG: ml_program.global private @stream0.layer0.laurel.B(#nn.init<zeros>) : tensor<4x16xf32>

// RANK: residual-rewrite: rank must be >= 1, got 0
// NCHW: residual-rewrite: kind=laurel laurel=rw-lr needs a static feature axis last for its low-rank map (this update's is axis 1 of 'tensor<1x4x3x3xf32>'); use laurel=rw

func.func @block(%h: tensor<2x8x16xf32>, %u0: tensor<2x8x16xf32>, %u1: tensor<2x8x16xf32>)
    -> tensor<2x8x16xf32> {
  %0 = residual.add %h, %u0 stream 0 layer 0 : tensor<2x8x16xf32>
  %1 = residual.add %0, %u1 stream 0 layer 1 : tensor<2x8x16xf32>
  return %1 : tensor<2x8x16xf32>
}
