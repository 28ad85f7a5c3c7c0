// LayerScale's paper init depends on the stream depth (CaiT): 0.1 up to 18
// blocks, 1e-5 up to 24, 1e-6 deeper. A 20-update stream gets 1e-5.
// RUN: %python %S/../utils/gen_stream.py --layers 20 --d 8 | rewire-opt --residual-rewrite=kind=layerscale | FileCheck %s --check-prefix=D20
// RUN: %python %S/../utils/gen_stream.py --layers 18 --d 8 | rewire-opt --residual-rewrite=kind=layerscale | FileCheck %s --check-prefix=D18
// RUN: %python %S/../utils/gen_stream.py --layers 25 --d 8 | rewire-opt --residual-rewrite=kind=layerscale | FileCheck %s --check-prefix=D25

// D20: ml_program.global private @stream0.layer19.layerscale.lambda(#nn.init<constant(1.000000e-05)>) : tensor<8xf32>
// D18: ml_program.global private @stream0.layer17.layerscale.lambda(#nn.init<constant(1.000000e-01)>) : tensor<8xf32>
// D25: ml_program.global private @stream0.layer24.layerscale.lambda(#nn.init<constant(9.9999999999999995E-7)>) : tensor<8xf32>
