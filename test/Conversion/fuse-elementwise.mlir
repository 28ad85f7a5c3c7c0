// RUN: rewire-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(rewire-fuse-elementwise))" | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
// Bias add then tanh: one loop nest.
// CHECK-LABEL: func.func @chain
func.func @chain(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  // CHECK: linalg.generic
  // CHECK: arith.addf
  // CHECK: math.tanh
  // CHECK-NOT: linalg.generic
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<8x16xf32>, tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// An elementwise producer is never pulled into a GEMM (it would be
// recomputed for every output column, and BLAS could no longer take it).
// CHECK-LABEL: func.func @not_into_gemm
func.func @not_into_gemm(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  // CHECK: linalg.generic
  // CHECK: math.tanh
  // CHECK: linalg.generic
  // CHECK-NOT: math.tanh
  // CHECK: arith.mulf
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>,
                                        affine_map<(i, j, k) -> (i, j)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%0, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%f : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %m : tensor<8x4xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// A producer with later users is computed inside its first consumer's
// loop, once, and returned by the merged op for them; the last consumer,
// reading both, then takes the merged op whole: one loop, exp once.
// CHECK-LABEL: func.func @shared_producer
func.func @shared_producer(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %e = tensor.empty() : tensor<8x16xf32>
  // CHECK: %[[M:.*]]:2 = linalg.generic
  // CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<8x16xf32>)
  // CHECK: %[[E:.*]] = math.exp
  // CHECK-NOT: math.exp
  // CHECK: math.tanh
  // CHECK: %[[P:.*]] = arith.mulf
  // CHECK: linalg.yield %[[E]], %[[P]]
  // CHECK-NOT: linalg.generic
  // CHECK: return %[[M]]#1, %[[M]]#0
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %y : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0, %1 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %2, %0 : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
// A consumer that reads two results of one producer takes the producer
// whole (upstream's one-operand fusion would compute it twice).
// CHECK-LABEL: func.func @two_results_one_reader
func.func @two_results_one_reader(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  // CHECK: linalg.generic
  // CHECK: math.exp
  // CHECK: math.tanh
  // CHECK: arith.mulf
  // CHECK-NOT: linalg.generic
  %0:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e, %e : tensor<8x16xf32>, tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32, %p: f32):
    %t = math.exp %a : f32
    %u = math.tanh %a : f32
    linalg.yield %t, %u : f32, f32
  } -> (tensor<8x16xf32>, tensor<8x16xf32>)
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0#0, %0#1 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#tr = affine_map<(i, j) -> (j, i)>
#row = affine_map<(i, j) -> (i)>
// Shared producers stay apart where the consumer reads them transposed, or
// reduces over them: each element would be needed in another iteration.
// CHECK-LABEL: func.func @shared_not_elementwise
func.func @shared_not_elementwise(%x: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>) {
  %e = tensor.empty() : tensor<16x16xf32>
  %r = tensor.empty() : tensor<16xf32>
  // CHECK: math.exp
  // CHECK: linalg.yield
  // CHECK: linalg.generic
  // CHECK-NOT: math.exp
  // CHECK: linalg.generic
  // CHECK-NOT: math.exp
  // CHECK: return
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<16x16xf32>
  %1 = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%0 : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.negf %a : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%0 : tensor<16x16xf32>) outs(%r : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %1, %2, %0 : tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
// A producer read earlier by a reduction (so it cannot move to its later
// consumer) is recomputed inside that consumer when this reads fewer
// tensors: %x instead of its two results, as a GELU's backward reads the
// pre-activation instead of what its forward stored.
// CHECK-LABEL: func.func @recompute_for_fewer_reads
func.func @recompute_for_fewer_reads(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> (tensor<8xf32>, tensor<8x16xf32>) {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = tensor.empty() : tensor<8xf32>
  // CHECK: iterator_types = ["parallel", "reduction"]
  // CHECK: linalg.generic
  // CHECK-SAME: ins(%arg0, %arg1 : tensor<8x16xf32>, tensor<8x16xf32>)
  // CHECK: math.exp
  // CHECK: math.tanh
  // CHECK: arith.mulf
  %p:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e, %e : tensor<8x16xf32>, tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32, %q: f32):
    %t = math.exp %a : f32
    %u = math.tanh %a : f32
    linalg.yield %t, %u : f32, f32
  } -> (tensor<8x16xf32>, tensor<8x16xf32>)
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%p#0 : tensor<8x16xf32>) outs(%r : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %a, %o : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p#0, %p#1, %y : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %z: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %n = arith.addf %m, %z : f32
    linalg.yield %n : f32
  } -> tensor<8x16xf32>
  return %s, %c : tensor<8xf32>, tensor<8x16xf32>
}

// -----

#s0 = affine_map<(i, j) -> (i, 0, j)>
#s1 = affine_map<(i, j) -> (i, 1, j)>
#s2 = affine_map<(i, j) -> (i, 2, j)>
#c0 = affine_map<(i, j) -> (i, 0)>
#c1 = affine_map<(i, j) -> (i, 1)>
#c2 = affine_map<(i, j) -> (i, 2)>
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
// A hyper stream's read, sum_i pre_i X_i over a [8, 3, 16] stream, read
// first by a reduction: recomputing it inside the later consumer would read
// the stream through three maps (three full-size reads, the per-row
// coefficients aside) in place of its one result, so it stays apart and the
// consumer reads the result.
// CHECK-LABEL: func.func @stream_read_not_recomputed
// CHECK-SAME: (%[[X:.*]]: tensor<8x3x16xf32>, %[[P:.*]]: tensor<8x3xf32>, %[[Y:.*]]: tensor<8x16xf32>)
func.func @stream_read_not_recomputed(%x: tensor<8x3x16xf32>, %pre: tensor<8x3xf32>, %y: tensor<8x16xf32>)
    -> (tensor<8xf32>, tensor<8x16xf32>) {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = tensor.empty() : tensor<8xf32>
  // CHECK: %[[U:.*]] = linalg.generic
  // CHECK-SAME: ins(%[[X]], %[[X]], %[[X]], %[[P]], %[[P]], %[[P]] :
  // CHECK: linalg.generic
  // CHECK-SAME: ins(%[[U]] : tensor<8x16xf32>)
  // CHECK: linalg.generic
  // CHECK-SAME: ins(%[[U]], %[[Y]] : tensor<8x16xf32>, tensor<8x16xf32>)
  %u = linalg.generic {indexing_maps = [#s0, #s1, #s2, #c0, #c1, #c2, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %x, %x, %pre, %pre, %pre : tensor<8x3x16xf32>, tensor<8x3x16xf32>, tensor<8x3x16xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>)
      outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %pa: f32, %pb: f32, %pc: f32, %o: f32):
    %m0 = arith.mulf %a, %pa : f32
    %m1 = arith.mulf %b, %pb : f32
    %m2 = arith.mulf %c, %pc : f32
    %s0 = arith.addf %m0, %m1 : f32
    %s1 = arith.addf %s0, %m2 : f32
    linalg.yield %s1 : f32
  } -> tensor<8x16xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%u : tensor<8x16xf32>) outs(%r : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.addf %a, %o : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u, %y : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %z: f32, %o: f32):
    %n = arith.subf %a, %z : f32
    linalg.yield %n : f32
  } -> tensor<8x16xf32>
  return %s, %c : tensor<8xf32>, tensor<8x16xf32>
}
