// The CPU lowering pipeline of docs/toolchain.md runs with the passes
// rewire-opt registers (a smoke test that registration is complete).
// RUN: rewire-opt %s --pass-pipeline="builtin.module(func.func(canonicalize,cse),one-shot-bufferize{bufferize-function-boundaries},buffer-deallocation-pipeline,convert-bufferization-to-memref,func.func(convert-linalg-to-loops,convert-vector-to-scf,convert-scf-to-cf),expand-strided-metadata,lower-affine,convert-vector-to-llvm,finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts)" | FileCheck %s

// CHECK-LABEL: llvm.func @axpy
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.
// CHECK: llvm.fmul
// CHECK: llvm.fadd
func.func @axpy(%a: tensor<16xf32>, %x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%a, %x, %y : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) outs(%y : tensor<16xf32>) {
  ^bb0(%ai: f32, %xi: f32, %yi: f32, %o: f32):
    %m = arith.mulf %ai, %xi : f32
    %s = arith.addf %m, %yi : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
