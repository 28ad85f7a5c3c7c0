// convert-nn-to-linalg{scatter-as-reduction} (the CUDA target's lowering of
// an embedding gradient): one reduction over table rows x features x
// positions, no host loop; negative indices wrap as in the loop lowering.
// RUN: rewire-opt %s --pass-pipeline="builtin.module(func.func(convert-nn-to-linalg{scatter-as-reduction}))" | FileCheck %s
// RUN: rewire-opt %s --pass-pipeline="builtin.module(func.func(convert-nn-to-linalg))" | FileCheck %s --check-prefix=LOOP

// CHECK-LABEL: func.func @embedding_grad(
// CHECK-NOT: scf.for
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: arith.cmpi slt
// CHECK: linalg.index 0
// CHECK: arith.cmpi eq
// CHECK: arith.select
// LOOP-LABEL: func.func @embedding_grad(
// LOOP: scf.for
func.func @embedding_grad(%idx: tensor<2x8xi64>, %upd: tensor<2x8x32xf32>) -> tensor<64x32xf32> {
  %0 = nn.scatter_add %upd, %idx : (tensor<2x8x32xf32>, tensor<2x8xi64>) -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// Into a base: the table starts as the base, not zeros, in both lowerings.
// CHECK-LABEL: func.func @into_base(
// CHECK-SAME: %[[BASE:[^:]*]]: tensor<64x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins({{.*}}) outs(%[[BASE]] : tensor<64x32xf32>)
// LOOP-LABEL: func.func @into_base(
// LOOP-SAME: %[[BASE:[^:]*]]: tensor<64x32xf32>
// LOOP-NOT: linalg.fill
// LOOP: scf.for {{.*}} iter_args(%{{.*}} = %[[BASE]]) -> (tensor<64x32xf32>)
func.func @into_base(%idx: tensor<2x8xi64>, %upd: tensor<2x8x32xf32>, %base: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %0 = nn.scatter_add %upd, %idx into %base : (tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<64x32xf32>) -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}
