// kind=hc and kind=mhc (Hyper-Connections, mHC; papers.md 6.1, 6.2): the
// stream becomes n copies; every reader of a state reads H^pre . X, every
// add becomes a hyper_write, the readers of the last state read the mean.
// RUN: rewire-opt %s --residual-rewrite=kind=mhc | FileCheck %s --check-prefix=MHC
// RUN: rewire-opt %s --residual-rewrite="kind=hc streams=2" | FileCheck %s --check-prefix=HC
// RUN: rewire-opt %s --residual-rewrite="kind=hc dynamic=false" | FileCheck %s --check-prefix=SHC
// RUN: rewire-opt %s --residual-rewrite="kind=mhc iters=5 hc-alpha=0.1" | FileCheck %s --check-prefix=OPT
// The rewritten IR verifies and round-trips.
// RUN: rewire-opt %s --residual-rewrite=kind=mhc | rewire-opt | FileCheck %s --check-prefix=MHC
// RUN: not rewire-opt %s --residual-rewrite="kind=mhc streams=0" 2>&1 | FileCheck %s --check-prefix=STREAMS
// RUN: not rewire-opt %s --residual-rewrite="kind=mhc iters=0" 2>&1 | FileCheck %s --check-prefix=STREAMS
// RUN: not rewire-opt %S/Inputs/hc-postln.mlir --residual-rewrite=kind=hc 2>&1 | FileCheck %s --check-prefix=POSTLN
// STREAMS: residual-rewrite: streams and iters must be >= 1
// RUN: rewire-opt %s --residual-rewrite=kind=laurel | not rewire-opt --residual-rewrite=kind=mhc 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: residual-rewrite: kind=mhc rewrites a stream of plain residual adds; layer 0 is already a 'residual.laurel'

// MHC-LABEL: func.func @preln
// MHC: %[[X0:.*]] = residual.hyper_expand %arg0 stream 0 layer 0 : tensor<2x8x16xf32> -> tensor<2x8x4x16xf32>
// MHC: %[[PRE:.*]] = residual.hyper_coeffs sigmoid %[[X0]], {{.*}} stream 0 layer 0 : tensor<2x8x4x16xf32>, tensor<f32>, tensor<64x4xf32>, tensor<4xf32> -> tensor<2x8x4xf32>
// MHC: %[[R0:.*]] = residual.hyper_read %[[X0]], %[[PRE]] stream 0 layer 0
// MHC: nn.rms_norm %[[R0]]
// MHC: %[[POST:.*]] = residual.hyper_coeffs double_sigmoid %[[X0]]
// MHC: %[[RES:.*]] = residual.hyper_coeffs sinkhorn %[[X0]], {{.*}} iters 20 stream 0 layer 0 : {{.*}}, tensor<64x16xf32>, tensor<4x4xf32> -> tensor<2x8x4x4xf32>
// MHC: %[[X1:.*]] = residual.hyper_write %[[X0]], %{{.*}}, %[[POST]], %[[RES]] stream 0 layer 0 {residual.branch = "attention"}
// MHC: residual.hyper_read %[[X1]], {{.*}} stream 0 layer 1
// MHC: %[[X2:.*]] = residual.hyper_write %[[X1]], {{.*}} stream 0 layer 1
// MHC: %[[OUT:.*]] = residual.hyper_reduce %[[X2]] stream 0 layer 1 : tensor<2x8x4x16xf32> -> tensor<2x8x16xf32>
// MHC: nn.rms_norm %[[OUT]]
// MHC-NOT: residual.add
// H^pre = (n+1)/(2n) on stream l mod n, 1/(2n) elsewhere: logits ln(5/3), ln(1/7).
// MHC-DAG: ml_program.global private @stream0.layer0.mhc.pre_b(dense<[0.510825634, -1.9459101, -1.9459101, -1.9459101]> : tensor<4xf32>)
// MHC-DAG: ml_program.global private @stream0.layer1.mhc.pre_b(dense<[-1.9459101, 0.510825634, -1.9459101, -1.9459101]> : tensor<4xf32>)
// MHC-DAG: ml_program.global private @stream0.layer0.mhc.pre_alpha(#nn.init<constant(1.000000e-02)>) : tensor<f32>
// MHC-DAG: ml_program.global private @stream0.layer0.mhc.pre_W(#nn.init<zeros>) : tensor<64x4xf32>
// MHC-DAG: ml_program.global private @stream0.layer0.mhc.post_b(dense<0.000000e+00> : tensor<4xf32>)
// MHC-DAG: ml_program.global private @stream0.layer0.mhc.res_b(dense<0.000000e+00> : tensor<4x4xf32>)
// MHC-DAG: ml_program.global private @stream0.layer0.mhc.res_W(#nn.init<zeros>) : tensor<64x16xf32>

// HC-LABEL: func.func @preln
// HC: residual.hyper_expand %arg0 stream 0 layer 0 : tensor<2x8x16xf32> -> tensor<2x8x2x16xf32>
// HC: residual.hyper_coeffs tanh {{.*}} : tensor<2x8x2x16xf32>, tensor<f32>, tensor<16x1xf32>, tensor<2xf32> -> tensor<2x8x2xf32>
// HC: residual.hyper_coeffs tanh {{.*}} : tensor<2x8x2x16xf32>, tensor<f32>, tensor<16x2xf32>, tensor<2x2xf32> -> tensor<2x8x2x2xf32>
// HC-DAG: ml_program.global private @stream0.layer0.hc.pre_b(dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>)
// HC-DAG: ml_program.global private @stream0.layer1.hc.pre_b(dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32>)
// HC-DAG: ml_program.global private @stream0.layer0.hc.post_b(dense<1.000000e+00> : tensor<2xf32>)
// HC-DAG: ml_program.global private @stream0.layer0.hc.res_b(dense<{{\[\[}}1.000000e+00, 0.000000e+00], [0.000000e+00, 1.000000e+00]]> : tensor<2x2xf32>)
// HC-DAG: ml_program.global private @stream0.layer0.hc.res_W(#nn.init<zeros>) : tensor<16x2xf32>

// SHC-LABEL: func.func @preln
// SHC-NOT: hyper_coeffs
// SHC: %[[PRE:.*]] = ml_program.global_load_const @stream0.layer0.hc.pre_b : tensor<4xf32>
// SHC: residual.hyper_read %{{.*}}, %[[PRE]] stream 0 layer 0 : tensor<2x8x4x16xf32>, tensor<4xf32> -> tensor<2x8x16xf32>
// SHC: residual.hyper_write {{.*}} : tensor<2x8x4x16xf32>, tensor<2x8x16xf32>, tensor<4xf32>, tensor<4x4xf32>
// SHC-NOT: _alpha

// OPT-LABEL: func.func @preln
// OPT: residual.hyper_coeffs sinkhorn {{.*}} iters 5
// OPT: ml_program.global private @stream0.layer0.mhc.pre_alpha(#nn.init<constant(1.000000e-01)>)

// POSTLN: error: residual-rewrite: kind=hc: layer 1 reads the state after layer 0 through 'nn.layer_norm', not directly. Hyper-connections keep n copies of the state between updates, which leaves no place for an op on the stream itself (a post-LN norm or a projection shortcut); they apply to pre-LN streams, where every branch starts with its own norm

func.func @preln(%h: tensor<2x8x16xf32>, %w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>, %g: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %n0 = nn.rms_norm %h, %g : tensor<2x8x16xf32>, tensor<16xf32>
  %u0 = nn.matmul %n0, %w0 : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %h1 = residual.add %h, %u0 stream 0 layer 0 {residual.branch = "attention"} : tensor<2x8x16xf32>
  %n1 = nn.rms_norm %h1, %g : tensor<2x8x16xf32>, tensor<16xf32>
  %u1 = nn.matmul %n1, %w1 : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
  %h2 = residual.add %h1, %u1 stream 0 layer 1 {residual.branch = "mlp"} : tensor<2x8x16xf32>
  %o = nn.rms_norm %h2, %g : tensor<2x8x16xf32>, tensor<16xf32>
  return %o : tensor<2x8x16xf32>
}
