// rewire-opt runs rewire-compile's CPU pipeline by name: nn ops to MLIR's
// LLVM dialect, the entry point recorded, the GEMM a BLAS call (its inner
// dimension above 8: shorter sums are unrolled, rewire-unroll-short-reductions).
// RUN: rewire-opt %s --rewire-cpu-pipeline | FileCheck %s
// RUN: rewire-opt %s --rewire-cpu-pipeline='blas=false opt-level=0' | FileCheck %s --check-prefix=LOOPS
// RUN: rewire-opt %s --rewire-lower-to-linalg | FileCheck %s --check-prefix=LINALG

// CHECK: module attributes {rewire.entry_points = [{input_checks = [], inputs = [{name = "x", type = tensor<2x16xf32>}, {name = "input1", type = tensor<16x5xf32>}], name = "forward", outputs = [{name = "y", type = tensor<2x5xf32>}], parameters = []}]}
// CHECK-LABEL: llvm.func @forward
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.
// CHECK: llvm.call @rewire_sgemm

// LOOPS-LABEL: llvm.func @forward
// LOOPS-NOT: rewire_sgemm
// LOOPS: llvm.fmul
// LOOPS: llvm.fadd

// LINALG-LABEL: func.func @forward
// LINALG-SAME: bufferization.writable = false
// LINALG-NOT: nn.name
// LINALG: linalg.generic
func.func @forward(%x: tensor<2x16xf32> {nn.name = "x"}, %w: tensor<16x5xf32>)
    -> (tensor<2x5xf32> {nn.name = "y"}) {
  %0 = nn.matmul %x, %w : (tensor<2x16xf32>, tensor<16x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}
