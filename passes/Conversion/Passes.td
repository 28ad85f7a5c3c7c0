//===- Passes.td - Conversions of Rewire's dialects ---------*- tablegen -*-===//
//
// Declares the conversion passes (one folder each).
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_CONVERSION_PASSES_TD
#define REWIRE_PASSES_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertResidualToLinalg : Pass<"convert-residual-to-linalg", "::mlir::func::FuncOp"> {
  let summary = "Lower residual ops to linalg on tensors";
  let description = [{
    Lowers the residual ops to `linalg.generic` / `linalg.matmul` on tensors:
    every elementwise part of an update (scale, gate epilogue, combine, mix)
    is one `linalg.generic` over the state, per-row norms are one reduction
    each, and the review gate's GEMM is two `linalg.matmul`s over the split
    weight (`W = [W_h | W_u]`, so `concat[rms h, rms u]` is never
    materialized). `residual.tap` disappears.

    Supported: `add`, `scale_add` (any feature axis), `gated_add` (review and
    highway, both combines, both gate widths), `mix` (softmax and free),
    `nag_gate`, `nag_add`, `route` by threshold and by rate (each row's rank
    among all N rows in one O(N^2) comparison reduction, ties by position, no
    sort), `tap`; gates and NAG need a static shape with the feature axis
    last. Anything else is reported by name and fails the conversion, never
    left behind silently.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
  ];
}

def ConvertNNToLinalg : Pass<"convert-nn-to-linalg", "::mlir::func::FuncOp"> {
  // Also lowers the training ops (cross_entropy and its fused gradient,
  // scatter_add through an scf.for over index positions).
  let summary = "Lower nn ops to linalg on tensors";
  let description = [{
    Lowers the tensor-graph ops to linalg on tensors: elementwise ops (with
    ONNX broadcasting expressed in indexing maps) and activations to
    `linalg.generic`, matmul with batch broadcasting to one `linalg.generic`
    with a reduction loop, softmax, layer_norm, rms_norm and reductions to
    reductions plus one fused elementwise generic, transpose to
    `linalg.transpose`, reshape to collapse/expand, constants to
    `arith.constant`;

    gather (with ONNX negative indices), split, where, gemm, batch_norm,
    2-D convolution (`linalg.conv_2d_nchw_fchw` on a `tensor.pad`),
    max pooling (`linalg.pooling_nchw_max`) and global average pooling are
    lowered too, and so are slice (extract_slice; negative steps as a
    gather), concat (insert_slice chain), squeeze/unsqueeze (reshape) and cast
    (ONNX semantics: nonzero is true, float to int truncates). Elementwise
    add/sub/mul/div/pow/max/min and compare also take integers. ONNX's
    unsigned types (ui8 ... ui64) become signless first: each nn op notes
    whether its operands or results were unsigned, and the patterns use
    arith's unsigned forms (divui, maxui/minui, cmpi ult, uitofp, extui)
    where that changes the result. Grouped and depthwise
    convolutions use `linalg.conv_2d_ngchw_gfchw` on reshaped operands;
    `nn.attention` expands to a scores contraction (k read transposed through
    its map), one scale + causal-mask generic, softmax and a matmul. Static
    shapes only.

    `scatter_add` (an embedding's gradient) is an `scf.for` over the index
    positions adding each row into the table (O(N·D)); with
    `scatter-as-reduction` it is instead one reduction `linalg.generic` over
    table rows x features x positions that adds the updates whose index
    matches (O(V·D·N), no loop on the host, every table element a
    sequential sum in position order: the same result as the loop). The
    CUDA target uses the latter.
  }];
  let options = [
    Option<"scatterAsReduction", "scatter-as-reduction", "bool", "false",
           "Lower scatter_add to one comparison reduction instead of a loop">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def CheckIndices : Pass<"rewire-check-indices", "::mlir::ModuleOp"> {
  let summary = "Check index, label and divisor values at run time";
  let description = [{
    Index values inside tensors (token ids, class labels) are untrusted
    input. Before every `nn.gather`, `nn.scatter_add`, `nn.cross_entropy` and
    `nn.cross_entropy_grad`, and before every integer `nn.div`, this pass
    inserts one reduction over the values that finds the first (row-major)
    element outside the valid range (`[-n, n)` for a gather over `n` rows,
    ONNX's negative indices included; `[0, C)` or the ignore index for
    labels; nonzero for divisors). When there is one, the code calls

    ```c
    // what, requirement: NUL-terminated strings; shape: rank int64s; the
    // three pointers are passed as int64_t addresses.
    void rewire_check_failed(int64_t what, int64_t requirement, int64_t shape,
                             int64_t rank, int64_t position, int64_t value);
    ```

    (`func.func private @rewire_check_failed`, declared by the pass; the
    CPU runtime's `runtime/Kernels.c` makes it the call's error, naming the
    op, its ONNX node, the input the values come from, the value, its
    coordinates and the valid range). The same values are checked once per
    function. The lowerings clamp indices and make integer division total
    independently of this pass, so code without the checks (the CUDA target)
    never reads out of bounds or traps; it just cannot report the error.

    Example: `%e = nn.gather %table, %ids` over 10 rows becomes, before it,
    a `linalg.generic` reduction over `%ids` to a `tensor<i64>` and an
    `scf.if` calling `@rewire_check_failed` with
    `"nn.gather 'emb': index (from input 'ids')"` and
    `"must be in [-10, 10)"`.

    With `record-inputs` (the CUDA target, which has no error path in its
    kernels), no code is inserted: every check whose values are a function
    input (through shape-only ops and casts) is recorded on the function as
    `rewire.input_checks`, an array of dictionaries
    `{input = "ids", what = "...", lo, hi[, also], nonzero}`, which the
    compiler writes into the artifact for the runtime to apply to the host
    inputs before they are uploaded. Values computed inside the model are
    only clamped there.
  }];
  let options = [
    Option<"recordInputs", "record-inputs", "bool", /*default=*/"false",
           "Record the checks of function inputs as rewire.input_checks instead "
           "of inserting code">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
    "::mlir::affine::AffineDialect",
  ];
}

def RecordEntryPoints : Pass<"rewire-record-entry-points", "::mlir::ModuleOp"> {
  let summary = "Record the public functions' signatures as the artifact's entry points";
  let description = [{
    The contract between the compiler and the runtime, taken while tensor
    types and names are still visible (after `nn-parameters-to-arguments`,
    before bufferization). For every public function with a body it checks
    that every argument and result is a statically shaped tensor of a type
    the runtime carries (f32/f64/f16/bf16/i64/i32/i16/i8/ui64/ui32/ui16/ui8/i1),
    that parameters (`nn.parameter` arguments) come after the inputs and
    that the function returns something, and records on the module

    ```mlir
    rewire.entry_points = [
      { name = "forward",
        inputs = [ { name = "ids", type = tensor<2x8xi64> }, ... ],
        parameters = [ { name = "wte", type = tensor<50x16xf32> }, ... ],
        outputs = [ { name = "logits", type = tensor<2x8x50xf32> } ],
        input_checks = [ ... ] } ]
    ```

    in the functions' order. Unnamed inputs and outputs are called
    `input<i>` / `output<i>`; `input_checks` are the function's
    `rewire.input_checks` (rewire-check-indices `record-inputs`), moved.
    The names (`nn.name`, `nn.parameter`) are then dropped from the
    signature, and every argument is marked not writable (the caller's
    buffers are never written in place).

    With `elide-empty` (the CPU target), tensors with no elements stop being
    arguments or results (uses read a `tensor.empty`): the artifact's call
    wrapper skips their pointers. The record keeps them.
  }];
  let options = [
    Option<"elideEmpty", "elide-empty", "bool", /*default=*/"true",
           "Drop arguments and results with no elements from the signature "
           "(else an empty tensor is an error)">,
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def DistinctResultBuffers : Pass<"rewire-distinct-result-buffers", "::mlir::func::FuncOp"> {
  let summary = "Give every returned buffer its own allocation";
  let description = [{
    After bufferization a function may return one buffer in several
    positions: an ONNX graph whose outputs name one value twice, or `y` and
    `Identity(y)`. `buffer-results-to-out-params{hoist-static-allocs}` turns
    each returned allocation into the caller's out-parameter and erases the
    allocation, which it cannot do twice (upstream MLIR 22 then reads the
    erased op). This pass runs just before it and returns, in each repeated
    position, a fresh allocation holding a copy (`memref.alloc` sized by
    `memref.dim` where dynamic, then `memref.copy`), so every result has its
    own buffer and each out-parameter is written.

    ```mlir
    return %a, %a : memref<2x3xf32>, memref<2x3xf32>
    // becomes
    %c = memref.alloc() : memref<2x3xf32>
    memref.copy %a, %c : memref<2x3xf32> to memref<2x3xf32>
    return %a, %c : memref<2x3xf32>, memref<2x3xf32>
    ```

    A repeated buffer that is unranked or has a layout map is an error (the
    bufferization of entry points gives identity layouts).
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def StridedCopiesToLoops : Pass<"rewire-strided-copies-to-loops", "::mlir::func::FuncOp"> {
  let summary = "Copy views that are not one contiguous block with loops, not the runtime's call";
  let description = [{
    Bufferization writes `memref.copy` for every `tensor.insert_slice` into a
    larger tensor: a concatenation of three weights into one `[3072, 24]`
    operand (nn-fuse-sibling-matmuls), of three gradients into one
    `[512, 24]`. Where a side is a view with gaps (a few columns of a wider
    buffer), finalize-memref-to-llvm lowers the copy to a call of the
    runtime's `memrefCopy`, which walks the view one row at a time with a
    `memcpy` per row on the calling thread while the other threads wait:
    3072 calls of 16 bytes for a `[3072, 4]` block. This pass, on buffers
    before the loop lowering, turns exactly those copies (the ones that
    lowering would not make one `memcpy`: neither an identity layout nor a
    static, gap-free row-major view) into `linalg.copy`, which becomes loops
    like any other nest: vectorized, and shared by the threads where
    rewire-parallel-outer-loops finds the work large enough.

    ```mlir
    memref.copy %w, %v : memref<3072x4xf32> to memref<3072x4xf32, strided<[24, 1], offset: 16>>
    // becomes
    linalg.copy ins(%w : memref<3072x4xf32>)
                outs(%v : memref<3072x4xf32, strided<[24, 1], offset: 16>>)
    ```

    Copies between single blocks and unranked copies are left alone.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def OutputReadyCalls : Pass<"rewire-output-ready-calls", "::mlir::ModuleOp"> {
  let summary = "Tell the caller as soon as each output of an entry point is final";
  let description = [{
    Data-parallel training sums each gradient over the ranks; started only
    after `grad_step` returns, the sum waits for the whole backward. This pass
    runs on buffers, after `buffer-results-to-out-params` (the outputs are
    the trailing arguments of the entry points rewire-record-entry-points
    recorded), and puts `func.call @rewire_output_ready(k)` right after the
    last operation of the function's body that touches output `k` (reads or
    writes it, or a view of it, or a pointer taken from it; an operation in
    a loop or a parallel region counts as the top-level op that holds it).
    After the call nothing in the function touches the buffer again, so the
    caller may send it, or sum into it in place, while the rest runs. The
    runtime passes the calls to a hook (`rewire_set_output_hook`,
    runtime/Kernels.c); without one they do nothing.

    The order of the calls is recorded on the entry point as `ready_order`
    (output indices, in the order the code finishes them): the trainer lays
    out its gradient buckets in that order, fixed when the step is compiled.
    An output no operation touches gets no call (the caller treats it as
    final when the call returns). Functions whose body is not one block are
    left as they are.

    ```mlir
    func.func @grad_step(%x: memref<4xf32>, %g0: memref<4xf32>, %g1: memref<4xf32>) {
      linalg.generic ... outs(%g1 : memref<4xf32>)
      linalg.generic ... outs(%g0 : memref<4xf32>)
      return
    }
    // becomes (ready_order = [1, 0])
      linalg.generic ... outs(%g1 : memref<4xf32>)
      %c1 = arith.constant 1 : i64
      func.call @rewire_output_ready(%c1) : (i64) -> ()
      linalg.generic ... outs(%g0 : memref<4xf32>)
      %c0 = arith.constant 0 : i64
      func.call @rewire_output_ready(%c0) : (i64) -> ()
    ```
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "The entry points to instrument (by name)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect"];
}

def FuseElementwise : Pass<"rewire-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuse elementwise linalg producers into their consumers";
  let description = [{
    Upstream elementwise fusion (`linalg::populateElementwiseOpsFusionPatterns`)
    with Rewire's cost rule: a producer is fused only into its single user,
    and never into a contraction (a matmul body `acc + a * b`), so GEMMs stay
    recognizable for `rewire-linalg-to-blas` and nothing is recomputed inside
    a reduction loop. Chains such as bias add + GELU, or a residual gate's
    epilogue, become one loop nest.

    A producer that upstream leaves alone because it has other users, or
    because its consumer reads several of its results, is merged into its
    first consumer when both are all-parallel over the same space element
    for element (identity maps between them) and its other users come
    later: the merged op computes it once and returns the results the later
    users read (upstream would compute it again inside the consumer). So a
    train step's bias add and GELU are one pass instead of five, AdamW's
    moment and parameter updates one instead of three, and a backward chain
    whose pieces are used twice one loop.

    Such a producer whose other users come before the consumer (a forward
    value its backward reads) is instead computed again inside the consumer
    when that reads fewer tensors at full size -- the producer's inputs in
    place of several of its results -- and its body is at most 48 ops: a
    GELU's backward reads the pre-activation instead of the four values its
    forward stored, and the forward stops writing them. Reads are counted
    per operand and indexing map, and only where the map reads a different
    element at every point of the loops (a broadcast bias or per-row
    statistic is not a full-size read): a hyper stream's read `sum_i pre_i
    X_i` reads its `[.., n, d]` stream through n maps, so a layer norm after
    it reads its one result instead of recomputing it from the stream
    (a hyper-connection train step's stream reads 204 -> 104).

    ```mlir
    %t = linalg.generic ... ins(%x) { exp }            // used below and returned
    %u = linalg.generic ... ins(%t, %y) { add, tanh }
    // becomes
    %m:2 = linalg.generic ... ins(%x, %y) { exp, add, tanh } // %m#0 replaces %t
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def UnrollShortReductions : Pass<"rewire-unroll-short-reductions", "::mlir::func::FuncOp"> {
  let summary = "Reductions over at most 8 terms as elementwise ops (CPU)";
  let description = [{
    A `linalg.generic` with one reduction dimension of static extent at most
    8 -- a hyper-connection's mix of its n = 4 streams, `out[b, t, i, d] =
    sum_j a[b, t, i, j] * h[b, t, j, d]`, or a product whose inner dimension
    is that small -- becomes an all-parallel generic whose body applies the
    original body once per term, in order (the same sequence of operations
    as the loop it replaces), reading each operand that depends on the
    reduced dimension once per term through a map with that dimension fixed.
    The accumulator starts from the init's value: a `linalg.fill`'s scalar
    (the filled tensor is no longer written and read back: 2 MB of zeros per
    mix in HC's train step), or the init read as an input.

    Lowered as a reduction, the sum was the innermost loop of four
    iterations around a load and a store of the output, which neither
    vectorizes nor stays in registers; unrolled, the innermost loop is the
    contiguous feature dimension, and `rewire-fuse-elementwise` can merge
    the op with its neighbours. Runs on the CPU before fusion; GPU kernels
    stream such sums already (`isShortContraction`).

    ```mlir
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x128x4x256xf32>) -> ...
    %m = linalg.generic {iterators [p, p, p, p, reduction j < 4]} ins(%a, %h) outs(%z) { acc + a * h }
    // becomes
    %m = linalg.generic {iterators [p, p, p, p]}
        ins(%a[.., 0], %a[.., 1], %a[.., 2], %a[.., 3], %h[.., 0, ..], ...) outs(%e) {
      ((((0 + a0 * h0) + a1 * h1) + a2 * h2) + a3 * h3)
    }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect"];
}

def FuseRows : Pass<"rewire-fuse-rows", "::mlir::func::FuncOp"> {
  let summary = "Compute each row group as one parallel loop over tiles of rows (CPU)";
  let description = [{
    The CPU's counterpart of `rewire-outline-kernels`' row groups (the same
    analysis, `collectRowGroups`): consecutive linalg ops over the same rows
    x features -- elementwise ops, per-row reductions over the features and
    per-row scalars between them, as in a layer norm, its backward, a
    softmax, a residual form's norms and gates -- become one `scf.forall`
    over tiles of rows (up to 16 rows of the last row dimension, one of the
    others; a tile's row of a value at most 16 KiB). Inside, each op is
    computed on the tile: the values only the group reads live in tile-sized
    stack buffers (`memref.alloca` behind a `restrict` `to_tensor`, at most
    128 KiB a tile), the ones read outside the group are written into their
    full tensors (the loop's shared outputs). So a layer norm's five passes
    over the activations, each its own parallel region, become one region
    whose intermediates stay in L1; row indices (`linalg.index`) are offset
    to the tile's rows.

    Rows wider than 8192 features and groups of one op are left alone. The
    loop becomes an `scf.parallel` after bufferization
    (`scf-forall-to-parallel`), whose OpenMP lowering scopes the stack
    buffers to each iteration; rewire-compile runs the pass on the CPU
    with more than one thread.

    ```mlir
    %m = linalg.generic {reduction} ins(%x) outs(%fill)         // [4, 128, 1]
    %y = linalg.generic ins(%x, %m) outs(%e)                    // [4, 128, 256]
    // becomes
    %y = scf.forall (%t) in (32) shared_outs(%o = %e) {
      %xs = tensor.extract_slice %x[%b, %r, 0] [1, 16, 256] [1, 1, 1]
      %ms = linalg.generic {reduction} ins(%xs) outs(<16 rows on the stack>)
      %ys = linalg.generic ins(%xs, %ms) outs(<%o's slice>)
      scf.forall.in_parallel { tensor.parallel_insert_slice %ys into %o[%b, %r, 0] ... }
    }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::arith::ArithDialect"];
}

def AttentionToKernel : Pass<"rewire-attention-to-kernel", "::mlir::ModuleOp"> {
  let summary = "Call the runtime's fused attention kernels for f32 nn.attention and nn.attention_grad";
  let description = [{
    Replaces every `nn.attention` on static f32 `[B, H, T, D]` tensors by a
    call to `rewire_attention`, the CPU runtime's flash-attention-style
    kernel (runtime/Attention.c): query blocks in parallel, keys in tiles
    with an online softmax, tiles wholly after a block's last query skipped
    under `causal` (and tiles wholly masked by the bias), so no `[Tq, Tk]`
    score tensor is ever allocated. The
    operands are read through `bufferization.to_buffer` (read-only, any
    strides: the kernel gets the aligned pointer, offset and the four
    strides of each; an optional bias likewise, with stride 0 along the
    dimensions it broadcasts) and the result is a fresh buffer wrapped by
    `bufferization.to_tensor restrict`, so one-shot bufferization keeps the
    producers' buffers as they are. An operand defined by a rank-4
    `nn.transpose` (the exporters' `[B, T, H, D]` -> `[B, H, T, D]`) is read
    through its source's buffer with the strides permuted, and a result
    whose one use is such a transpose is written straight into a buffer of
    the transpose's shape, so the heads are never copied into place.
    `nn.attention_grad` (attention's reverse rule) becomes a call to
    `rewire_attention_backward` the same way: q, k, v, the bias, the
    forward's output and its adjoint read in place; dq, dk, dv fresh
    buffers -- or, when each is only (transposed back and) reshaped to
    `[B, T, H * D]` and the three are one `nn.concat` along that axis (the
    gradient of a fused QKV projection), views of one buffer of the
    concatenation's shape, which replaces the concat: the kernel writes
    each gradient in its place and nothing is copied. rewire-compile runs it for CPU targets
    before convert-nn-to-linalg (which otherwise expands the op) unless
    `--fused-attention=false`. Other element types and dynamic shapes are
    left to the expansion.

    ```mlir
    %o = nn.attention %q, %k, %v {causal, scale = 1.250000e-01 : f32} : (...) -> tensor<1x12x512x64xf32>
    // becomes
    %qb = bufferization.to_buffer %q read_only : ... to memref<1x12x512x64xf32, strided<[?, ?, ?, ?], offset: ?>>
    ...
    %out = memref.alloc() {alignment = 64 : i64} : memref<1x12x512x64xf32>
    call @rewire_attention(%qp, %qoff, %qs0, ..., %causal, %threads, %scale) : (index, ..., f32) -> ()
    %o = bufferization.to_tensor %out restrict writable : ...
    ```
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "0",
           "OpenMP threads of the kernel (0: all, as --loop-threads)">,
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect"];
}

def HyperToKernel : Pass<"rewire-hyper-to-kernel", "::mlir::ModuleOp"> {
  let summary = "Call the runtime's fused kernels for f32 mHC writes with the next site's projection, hyper_write_grad and hyper_project_grad";
  let description = [{
    First, a `residual.hyper_write` (or the `residual.hyper_expand` that
    starts the stream) on static f32 tensors whose result feeds mHC
    `residual.hyper_coeffs` (sigmoid, double_sigmoid or sinkhorn maps: each
    token's streams flattened are the rows) becomes one call of
    `rewire_hyper_write_project`, which writes the stream and returns, for
    those coefficient sets (block order, one eps, weights `[n d, k_i]`
    available at the write), `p = rows . [W_1 | W_2 | ...]` and the rows'
    rms scale `r` in the same pass. Each set becomes its map of its columns
    of `p` times `r` (`residual::hyperCoeffsMap`, the decomposition's
    arithmetic after the product). The reverse rules' own `rows . W_i` and
    rms scales of that stream (recomputed for the maps' reverse and for
    `hyper_project_grad`) are found by structural equivalence with the same
    computation and take the kernel's values; ops left unused are erased,
    so later fusions never combine them with live work.

    Replaces every `residual.hyper_write_grad` on static f32 tensors (the
    sums of a hyper stream write's reverse that read the stream's adjoint:
    `du`, `dpost`, `dres`) by a call to `rewire_hyper_write_grad`
    (runtime/HyperKernels.c), which reads each token's `n` rows of the
    adjoint and of the stream once and takes every sum from the cache: one
    pass instead of the three of the op's decomposition (a `hyper_read` and
    two reductions, each reading the `[..., n, d]` adjoint). The token
    dimensions are collapsed into one (a view of the producers' buffers;
    bufferization copies where a layout cannot be collapsed); operands are
    read through `bufferization.to_buffer` (read-only, any strides: the
    kernel gets the aligned pointer, offset and strides of each, a static
    `post` with token stride 0); results are fresh buffers wrapped by
    `bufferization.to_tensor restrict`. rewire-compile runs it for CPU
    targets before `residual-decompose`, which expands the ops left (other
    element types, dynamic shapes) and, for CUDA, all of them.

    Where the adjoint `g` is the sum the autodiff engine makes after the
    next site's reverse -- a tree of `nn.add` (inner adds used only by it)
    of `res^T h` (`nn.matmul` of `nn.transpose` of the next write's `res`,
    per token or static, and `h`, the adjoint of that write's output), at
    most one `pre (x) dh` (`nn.mul` of `nn.unsqueeze`s of the next read's
    `pre` and the branch's input gradient) and at most one other term of
    the stream's type (the projections' reverse) -- and the op's other
    operands are defined before the sum, the call is
    `rewire_hyper_write_grad_sum` in the sum's place: it writes each
    token's rows of `g` (a fresh buffer, which the sum's other readers
    take) and takes the reductions from L1, so `g` is not written by one
    pass and read back by the next. Sums of other terms (HC's dynamic
    coefficients) stay.

    Likewise `residual.hyper_project_grad` (the reverse of an mHC
    coefficient projection): first the ops of one site -- same stream, rms
    scales that compute the same -- are merged into one on their `dz`, `p`
    and `W` concatenated along the coefficients, when each earlier op's `dX`
    only enters the autodiff engine's running sums (`nn.add`, which then skip
    it) and its `dW` is used only after the last op (an `nn.split` of the
    merged `dW`); then each op becomes a call of
    `rewire_hyper_project_grad`, which reads the stream once for `dX` and
    `dW` where the two products and the sum read it three times.

    Both kernels take `W` as up to three column blocks, each its own buffer
    (pointer, offset, strides, columns; unused blocks 0): a `W` that is an
    `nn.concat` of at most three weights along its columns passes as those
    weights, so no concatenation is copied each step; where the merged
    reverse's `dW` is only split back into the same blocks, each block's
    gradient is its own dense buffer, which replaces the `nn.split` (the
    optimizer then reads each gradient contiguously).

    ```mlir
    %y = residual.hyper_write %x, %u, %post, %res stream 0 layer 0 : ...
    %pre = residual.hyper_coeffs sigmoid %y, %a, %w1, %b1 stream 0 layer 1 : ...
    // becomes
    call @rewire_hyper_write_project(%xp, ..., %w1p, %w1off, %c4, %c1, %c4, %w2p, ..., %c32, %c4, %c64, %c24, %eps, %threads) : (index, ..., f32, index) -> ()
    %pre = nn.sigmoid ...  // of alpha (p[:, 0:4] r) + b

    %du, %dpost, %dres = residual.hyper_write_grad %g, %X, %u, %post stream 0 layer 1 : ...
    // becomes
    %gb = bufferization.to_buffer %g_tokens read_only : ... to memref<32x4x64xf32, strided<[?, ?, ?], offset: ?>>
    ...
    %du_buf = memref.alloc() {alignment = 64 : i64} : memref<32x64xf32>
    call @rewire_hyper_write_grad(%gp, %goff, %gs0, %gs1, %gs2, ..., %c32, %c4, %c64, %threads) : (index, ...) -> ()
    %du_t = bufferization.to_tensor %du_buf restrict writable : ...

    %m = nn.matmul %resT, %h : ...      // %resT = nn.transpose %res
    %s = nn.add %m, %pre_dh : ...       // nn.mul of the unsqueezed pre and dh
    %g = nn.add %s, %e : ...
    %du, %dpost, %dres = residual.hyper_write_grad %g, %X, %u, %post stream 0 layer 1 : ...
    // becomes
    %g_buf = memref.alloc() {alignment = 64 : i64} : memref<32x4x64xf32>
    call @rewire_hyper_write_grad_sum(%hp, ..., %gp, %goff, %xp, ..., %c32, %c4, %c64, %threads) : (index, ...) -> ()
    %g_t = bufferization.to_tensor %g_buf restrict writable : ...  // %g's other readers
    ```
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "0",
           "OpenMP threads of the kernel (0: all, as --loop-threads)">,
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect",
                           "::rewire::nn::NNDialect"];
}

def LinalgToBlas : Pass<"rewire-linalg-to-blas", "::mlir::ModuleOp"> {
  let summary = "Call the runtime's BLAS GEMM for f32 contractions on buffers";
  let description = [{
    Replaces every f32 linalg contraction on memrefs whose body is
    `acc + a * b`, whose output is `[batch..., m, n]`, and whose operands are
    `[batch..., m|k, k|m]` and `[batch..., k|n, n|k]` with unit stride in the
    innermost dimension, by a loop over the batch dimensions around calls to
    `rewire_sgemm` (row-major SGEMM on aligned pointers, offsets and leading
    dimensions; transposes from the indexing maps; broadcast batch dimensions
    read with stride 0). The Rewire CPU runtime provides `rewire_sgemm` on
    top of oneDNN's `dnnl_sgemm`. A zero `linalg.fill` of the output right before the
    contraction is folded into `beta = 0`. When the right operand is the
    same matrix for every batch (a weight: broadcast batch dimensions) and
    the left operand (not transposed) and the output are dense across their
    batch dimensions, the batch is stacked into the rows instead: one call
    with `m' = batch x m` and no loop (`[4, 128, 256] . [256, 1024]` is one
    512 x 256 x 1024 GEMM, a better shape than four 128-row ones).
    Other contractions are left alone,
    and so are those that would be 64 or more calls of under 32768 FLOPs
    each (a hyper-connection's `[n, n] . [n, d]` per token): a call costs
    more than such a product, whose loop nest vectorizes and runs in
    parallel over the batch.
    The pass declares `func.func private @rewire_sgemm` when it uses it.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def OutlineLoopNests : Pass<"rewire-outline-loop-nests", "::mlir::ModuleOp"> {
  let summary = "Move each top-level scf.for nest into its own function";
  let description = [{
    A whole train step lowered to loops is one function with thousands of
    loop nests; LLVM's loop passes (IndVarSimplify, LoopVectorize) then cost
    time superlinear in the function's size (a 6-layer GPT's train step:
    99 s of LLVM optimization, 63 s of it in IndVarSimplify). Each top-level
    `scf.for` of a public function becomes a call to a private function
    `<function>.loop<N>` taking the values the nest uses (constants are
    cloned in) and returning its results, so LLVM optimizes many small
    functions instead. rewire-compile marks them `noinline` in LLVM IR (they
    are called once and would be inlined straight back); a call per loop
    nest costs nothing next to the nest. Runs on any types, so it can follow
    finalize-memref-to-llvm (memrefs are then LLVM values and need no
    calling convention).
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"];
}

def ParallelOuterLoops : Pass<"rewire-parallel-outer-loops", "::mlir::func::FuncOp"> {
  let summary = "Keep the innermost dimension of each parallel loop nest sequential";
  let description = [{
    Runs between `convert-linalg-to-parallel-loops` and
    `convert-scf-to-openmp` (rewire-compile --loop-threads other than 1).
    Each outermost `scf.parallel` without results becomes an `scf.parallel`
    over all its dimensions but the last, around an `scf.for` over the last:
    OpenMP collapses the parallel dimensions into one index, which the LLVM
    loop vectorizer cannot see through, so an innermost parallel dimension
    cost twice its sequential time; kept as a loop it vectorizes as before,
    and the threads share the outer iterations. Nests of less work than
    `min-iterations` iterations in all (the parallel dimensions times the
    static trip counts of the loops inside; an iteration whose body holds
    more than 16 operations counts as body / 16 of them, so that a body
    unrolling a whole small problem -- nn.sinkhorn's rounds on a 4 x 4
    matrix, thousands of operations -- is shared at 512 iterations), and
    those whose outer parallel
    dimensions hold a single iteration, become sequential `scf.for` nests: a
    parallel region costs more than they do. An `scf.parallel` nested in
    another (a reduction dimension between parallel ones: `scf.parallel
    (b, t) { scf.for i { scf.parallel d } }`) always becomes sequential
    loops first, so the inner one neither forks once per outer iteration
    nor escapes the iteration count of its enclosing nest.

    An outermost `scf.parallel` inside a perfect nest of sequential
    `scf.for` loops with constant bounds -- a sum over leading dimensions,
    as a bias gradient sums `[b, t, d]` over `b` and `t` -- moves out of
    them when the nest has `min-iterations` iterations and its last
    dimension two chunks of 64 or more: `scf.parallel` over the chunks of
    its last dimension around the sequential loops, then a loop over the
    chunk's columns. Left in place it would fork once per row, and below
    the threshold (as each such sum alone is) run on one thread; moved out,
    each thread sweeps its columns of every row, and each output is summed
    in the same order as before (the interchange is valid for what linalg
    lowers to: an iteration of the parallel loop touches only its outputs).

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c512, %c768) step (%c1, %c1) { ... }
    // becomes
    scf.parallel (%i) = (%c0) to (%c512) step (%c1) {
      scf.for %j = %c0 to %c768 step %c1 { ... }
    }
    ```
  }];
  let options = [
    Option<"minIterations", "min-iterations", "int64_t", "32768",
           "nests with fewer iterations in all run sequentially">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def PromoteAccumulators : Pass<"rewire-promote-accumulators", "::mlir::func::FuncOp"> {
  let summary = "Carry reduction accumulators through loops in registers";
  let description = [{
    A linalg reduction lowered to loops loads and stores its output element
    in every iteration of the reduction loop (`out[i] = out[i] + x[i, k]`
    over k). LLVM cannot keep the element in a register when it cannot
    prove that no other pointer of the loop writes it (the loop nests are
    outlined into functions taking memref descriptors), so each iteration
    waits on a store-to-load round trip and nothing vectorizes: the row
    reductions of norms and of the hyper stream's backward ran at ~1 element
    per 8 cycles.

    For each `scf.for` (innermost first), a `memref.load` and a later
    `memref.store` in its body at the same indices of the same buffer, all
    defined outside the loop, become an iter_arg: loaded once before the
    loop and stored once after it. This holds only when nothing else in the
    loop reads or writes that buffer through any view of it, and every op
    in the loop touches memory through loads and stores only (no calls).
    A bufferized linalg op never reads an input through its output's buffer
    at other indices (one-shot bufferization keeps such operands apart), so
    other buffers of the nest do not alias the accumulator.

    The accumulation `acc + x` is marked `fastmath<reassoc>`, which lets
    LLVM's loop vectorizer split the sum over vector lanes: sums are then
    taken in another (fixed) order than one by one, within fp32 rounding.

    ```mlir
    scf.for %k = %c0 to %c256 step %c1 {
      %a = memref.load %out[%i] : memref<512xf32>
      %x = memref.load %in[%i, %k] : memref<512x256xf32>
      %s = arith.addf %a, %x : f32
      memref.store %s, %out[%i] : memref<512xf32>
    }
    // becomes
    %a0 = memref.load %out[%i] : memref<512xf32>
    %r = scf.for %k = %c0 to %c256 step %c1 iter_args(%a = %a0) -> (f32) {
      %x = memref.load %in[%i, %k] : memref<512x256xf32>
      %s = arith.addf %a, %x fastmath<reassoc> : f32
      scf.yield %s : f32
    }
    memref.store %r, %out[%i] : memref<512xf32>
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def MathApproximation : Pass<"rewire-math-approximation", "::mlir::func::FuncOp"> {
  let summary = "Replace f32 transcendental functions by vectorizable polynomials";
  let description = [{
    Upstream's polynomial approximations (`populateMathPolynomialApproximationPatterns`:
    exp, expm1, log, log1p, tanh, erf, sin, cos, atan, ...) in place of libm
    calls, so softmax, GELU, sigmoid and the residual gates vectorize in the
    LLVM loop vectorizer instead of calling scalar `expf`/`tanhf` per
    element. Accuracy: a few ulp (checked against NumPy and PyTorch by the
    execution tests at 1e-4 relative). rewire-compile runs it at -O2 and
    above unless `--precise-math` is given.
  }];
  let dependentDialects = ["::mlir::math::MathDialect", "::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}


def SplitLongReductions : Pass<"rewire-split-long-reductions", "::mlir::func::FuncOp"> {
  let summary = "Split reductions to a few values into partial sums and a combine (GPU)";
  let description = [{
    The first step of the CUDA pipeline, on tensors. A reduction with few
    outputs and a long reduction — the gradient of a scalar gate (ReZero's
    alpha, LAuReL's weights) sums `dy * f` over every token and feature:
    one output, 1.5 million terms for a GPT at B 8, T 256, d 768 — gets
    at most 16 GPU threads per output from `rewire-kernels-to-gpu`: tens
    of milliseconds of latency-bound loads per call on an H200. This pass
    rewrites it, with MLIR's `linalg::splitReduction`, into `P` partial
    sums (a parallel dimension, element `k` of the reduction going to
    partial `k mod P`, so neighbouring threads read neighbouring
    addresses) and a second reduction over the partials into the original
    init, so the first op has `outputs x P` independent sums.

    Applies to ops with static shapes, no `linalg.index` (a position-
    dependent body, an arg-max), one combiner MLIR recognizes (add, mul,
    min, max, and, or) and at most `max-outputs` outputs whose
    reduction covers at least `min-length` points; several reduction
    dimensions are first collapsed into one where every operand reads
    them contiguously (`linalg::collapseOpIterationDims`). `P` is the
    largest power of two, at most `partials` / outputs, that divides the
    reduction into parts of at least 16 points (and P is at least 16). The
    default `min-length` (1024) is where splitting pays on an H200: unsplit,
    16 threads per output each load reduction/16 points one after another
    (about 0.2 us each), so a 4-output, 2048-token reduction (a hyper-
    connection's static coefficient gradient) took 26 us. Contractions are
    left to cuBLAS. The sums change order (fp32 results differ from the
    CPU's in the last bits: partial sums, closer to pairwise summation).

    The CPU pipeline (rewire-compile at -O1 and up, at any thread count, so
    that results do not depend on it) runs it too, with `interleave=false`
    (partial `k` sums the `k`-th run of consecutive points: a thread
    streams its runs), `min-length=65536`, `max-outputs=4` and
    `partials=64` (so at least 16 partials an output): unsplit, such a sum
    has no parallel loop and runs on one thread while the other waits.
    LAuReL's two scalar gradients per site (`[4, 128, 768]` each, d 768)
    took ~115 us of serial time a site in the train step. The partials are
    fixed by the shapes, so the bits do not depend on the thread count.
  }];
  let options = [
    Option<"minLength", "min-length", "int64_t", /*default=*/"1024",
           "Split only reductions of at least this many points">,
    Option<"maxOutputs", "max-outputs", "int64_t", /*default=*/"1024",
           "Split only reductions with at most this many outputs">,
    Option<"partials", "partials", "int64_t", /*default=*/"4096",
           "Partial sums in all (outputs x P) at most">,
    Option<"interleave", "interleave", "bool", /*default=*/"true",
           "Partial k takes the points k mod P (true) or the k-th run of "
           "reduction / P consecutive points (false)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def OutlineKernels : Pass<"rewire-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Group linalg ops over the same rows into kernel functions (GPU)";
  let description = [{
    The first step of the CUDA pipeline, on tensors. Consecutive
    `linalg.generic` ops that iterate over the same rows x features (the
    feature loop last; every operand read through an in-order projection of
    the loops: a full tensor, a per-feature vector, a per-row value or a
    scalar) form a row group: elementwise ops, per-row reductions over the
    features, and per-row scalar computations between them. A residual
    form's norms, gate and combine, a layer norm, a softmax all become one
    group. Each group moves into a private function `<fn>.kernel<N>` marked
    `rewire.row_kernel` that returns the values used outside it, so
    bufferization keeps the group together and `rewire-kernels-to-gpu`
    emits one kernel for it with the intermediates in registers.

    Named linalg ops other than `linalg.fill` are generalized first;
    contractions (GEMMs, for cuBLAS) and everything that is not a row op
    stay in place (`rewire-kernels-to-gpu` gives each its own kernel).
    Constants, `tensor.empty`, fills and constant-index `tensor.extract`s
    that a group uses are cloned into its function.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}


def KernelsToGPU : Pass<"rewire-kernels-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Emit a GPU kernel per row group and per remaining linalg op (buffers)";
  let description = [{
    The second step of the CUDA pipeline, after bufferization: every call
    of a `rewire.row_kernel` function becomes a `gpu.launch_func` of a row
    kernel, and every other linalg op on buffers but the f32 contractions
    (left for cuBLAS) and every `memref.copy` a launch of a generic kernel.
    Kernels go to `gpu.module @kernels`.

    Row kernels (one per row group): a warp per row where a row has at most
    128 vectors of features (8 rows per block, `gpu.subgroup_reduce` for
    per-row reductions, lowered here to `shfl.sync.bfly` butterflies), a
    block per row otherwise (up to 1024 threads, `gpu.all_reduce`). A thread
    holds at most 16 chunks of V features in registers (V = 4, 2 or 1, the
    largest dividing the row width), loaded and stored as 16-byte vectors
    where the buffer's layout is contiguous and aligned; every intermediate
    of the group stays in registers. Generic kernels: a thread per parallel
    point (innermost fastest), reductions as loops.

    Buffers are passed as their allocation's base pointer with the layout
    (offset, strides) compiled into the kernel: views need no copies. Entry
    points' arguments get identity layouts. Launch geometry is static.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect", "::mlir::affine::AffineDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}


def KernelsToEmulator : Pass<"rewire-kernels-to-emulator", "::mlir::ModuleOp"> {
  let summary = "GPU kernels as host functions for the CUDA emulator (tests without a GPU)";
  let description = [{
    Turns every `gpu.func` of the module's `gpu.module`s into a host
    `func.func` of the same name and arguments that the CUDA emulator
    (`runtime/cuda/emulator`, `librewire_cuda_emu.so`) runs with one fiber
    per GPU thread: `gpu.thread_id`, `gpu.block_id`, `gpu.block_dim` and
    `gpu.grid_dim` become calls of `rewire_emu_thread_id` etc. (the
    dimension as an i32), `gpu.barrier` a call of `rewire_emu_barrier`, and
    `gpu.shuffle` (f32 or i32; the modes as in PTX `shfl.sync`, with
    `width` as the NVVM lowering's clamp) calls of `rewire_emu_shuffle_f32`
    / `_i32` and `rewire_emu_shuffle_valid`. All-reduces, global ids and
    64-bit shuffles are first expanded by the patterns
    `convert-gpu-to-nvvm` applies. Workgroup attributions become private
    `memref.global`s (the emulator runs one block at a time), private
    attributions `memref.alloca`s; gpu address spaces are dropped. Every
    `memref.load`/`store` and `vector.load`/`store` is preceded by a call
    of `rewire_emu_check(in_bounds, access_number)` against its view's
    static shape (a vector access: its last element), so an out-of-bounds
    access fails the launch instead of reading a neighbour's data.

    Everything else in the module (the host functions: the artifact's
    schedule is the host side) is erased. Any other gpu op is an error.
    Used by `rewire-compile --target=cuda --emulator-kernels=FILE`; see
    docs/cuda.md for what the emulator checks and what it cannot.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // REWIRE_PASSES_CONVERSION_PASSES_TD
