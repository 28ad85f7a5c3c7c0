//===- Passes.td - Residual stream transforms ---------------*- tablegen -*-===//
//
// Declares the transformation passes over residual streams. Each pass is
// defined in its own .cpp file through GEN_PASS_DEF_<NAME>.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_PASSES_TRANSFORMS_PASSES_TD
#define REWIRE_PASSES_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ResidualDetect : Pass<"residual-detect", "::mlir::func::FuncOp"> {
  let summary = "Raise the residual adds of an nn graph into residual.add";
  let description = [{
    Finds the residual connections of a tensor graph and replaces each
    `nn.add` that is one with `residual.add` carrying its stream id and layer
    index. An add `a + b` (operands of one type: no broadcasting) is residual
    when one operand is the skip and the other a branch computed from the
    stream through a parameterized op (`nn.matmul`, `nn.gemm`, `nn.conv` with
    a parameter operand, or `nn.attention`):

    * identity skip: the skip operand is an ancestor of the branch (pre-LN
      GPT/LLaMA, post-LN BERT, ViT, MLP-Mixer, ResNet identity blocks);
    * parallel: the skip is the output of a residual add whose *input* the
      branch was computed from (GPT-J's attention and MLP from one state);
    * projection skip: the skip is a parameterized projection (a conv or
      matmul, optionally followed by batch_norm or a bias add) of a value the
      branch also comes from (ResNet downsampling blocks).

    Bias adds, positional-embedding adds and attention-mask adds do not
    qualify (broadcast operands, or no operand is the other's stream);
    concatenation skips (U-Net) are not adds. Updates chain into streams
    through layer_norm, rms_norm and relu (post-LN and ResNet stream
    states). The feature axis is 1 when the branch contains a convolution
    and the last axis otherwise. Each update gets discardable attributes
    `residual.branch` (attention | mlp | conv | other) and `residual.skip`
    (identity | projection), which `residual-report` prints.

    A stream keeps one shape: before raising, an add computed in a
    reshaped view of a value and reshaped back (OPT's decoder computes its
    MLP update on `[B*T, D]` rows of a `[B, T, D]` state) is moved into the
    value's own shape, `reshape(reshape(x) + y) -> x + reshape(y)`, so its
    layers join the stream of `x` instead of starting one each.
  }];
  let dependentDialects = ["::rewire::residual::ResidualDialect"];
}

def ResidualRewrite : Pass<"residual-rewrite", "::mlir::ModuleOp"> {
  let summary = "Rewrite plain residual adds into a learned or gated form";
  let description = [{
    Turns every `residual.add` of the module into the form chosen by `kind`,
    adds the form's new parameters as named `ml_program.global` symbols
    (`stream<S>.layer<L>.<kind>.<name>`, see docs/parameters.md) with an
    `#nn.init` initializer, and loads them next to the update.

    | kind | becomes | parameters (`init=paper`) | `init=identity` |
    |---|---|---|---|
    | `rezero`, `skipinit` | `scale_add`, scalar alpha | alpha = 0 | alpha = 1 (exact) |
    | `layerscale` | `scale_add`, per-channel lambda | lambda by depth (CaiT: 0.1 / 1e-5 / 1e-6) | lambda = 1 (exact) |
    | `review` | `gated_add review` | W = 0, b = 0 (r = 0.5) | W = 0, b = 20: r = 1 in f32 (additive only; the gate starts saturated) |
    | `highway` | `gated_add highway` | W ~ N(0, 0.02), b = `highway-bias` | W = 0, b = 20 (additive only) |
    | `nag` | `nag_gate` + `nag_add` | alpha = l^{-1/2}, w ~ N(0, 0.02), b = pi = 0, C = `nag-c` | impossible (refused) |
    | `ancre` | `mix softmax` after each block | c = 0 (uniform), `tau` | impossible (refused) |
    | `denseformer` | `mix free` after each block | weight 1 on the block output | the same (exact) |
    | `lpa` | `tap` after each block + a readout per depth | no parameters | exact (adds outputs only) |
    | `laurel` | `laurel`: `alpha u + beta h (+ (h A) B)` (`laurel=rw|lr|rw-lr`, `rank`); with `pa` (`pa`, `rw-pa`, `lr-pa`, `rw-lr-pa`) a `mix additive` after every update from the second: `+ sum_(j<i) gamma_j x_j` over the stream's earlier states | alpha = beta = 1, A ~ N(0, 0.02), B = 0, gamma = 0 | the same (exact) |
    | `hc` | `hyper_expand`, then per update `hyper_read` (H^pre) + `hyper_write` (H^res, H^post), `hyper_reduce` at the exit; `streams` n, `dynamic` | H^pre = e_(l mod n), H^res = I, H^post = 1; dynamic: alpha = `hc-alpha`, W = 0 | the same (exact) |
    | `value-residual` | each attention after the first: V -> `value_mix` (lambda1 V_1 + lambda2 V) before `softmax(..) . V`; `lambda=fixed|learned` | lambda = 1/2, 1/2 (constants, or learned) | learned only: lambda = 0, 1 (exact) |
    | `mhc` | the same with `hyper_coeffs` sigmoid / 2 sigmoid / Sinkhorn (`iters`) | alpha = `hc-alpha`, W = 0; H^post = 1, H^res = 1/n; H^pre = (n+1)/(2n) on stream l mod n, 1/(2n) on the others | the same (exact) |

    Stream-level forms attach after each *block* (`granularity=block`: an
    update whose `residual.branch` is `attention` does not end a block, so a
    transformer layer is one block) or after every update
    (`granularity=sublayer`). LPA clones the shared head (everything after
    the last stream state) onto every depth and returns those readouts as
    extra function results named `<output>_depth<k>`; with `stop-gradient`
    each block reads its input through `nn.stop_gradient` (the readouts read
    the state itself), LPA's residual-fitting variant. rewire-train-step
    turns the readouts into a weighted per-depth loss.

    Hyper-Connections (`hc`, `mhc`) turn a stream of plain residual adds
    into `n` copies `[..., n, d]` (see the `residual` dialect): the first
    state is copied, every reader of a state (the branch, and any other
    reader) reads `H^pre . X`, and the readers of the last state read the
    mean of the copies. They need the feature axis last and each update to
    read the previous one directly (pre-LN); post-LN streams and projection
    shortcuts are refused. Both initializations keep the function exactly:
    while the copies are equal, a read whose weights sum to 1 is the state.

    `init=identity` makes the rewritten model compute exactly the original
    function at step 0; the convex combine cannot (r = 1 drops the state), and
    the pass reports an error instead. `combine` and `gate` choose the
    additive or convex combine and a per-channel or per-row gate.

    Example: `rewire-opt --residual-rewrite="kind=review gate=row" model.mlir`.
  }];
  let options = [
    Option<"kind", "kind", "::rewire::RewriteKind",
           "::rewire::RewriteKind::review",
           "Residual form to rewrite into",
           [{::llvm::cl::values(
             clEnumValN(::rewire::RewriteKind::rezero, "rezero",
                        "h + alpha * u, scalar alpha (ReZero)"),
             clEnumValN(::rewire::RewriteKind::skipinit, "skipinit",
                        "h + alpha * u, scalar alpha (SkipInit)"),
             clEnumValN(::rewire::RewriteKind::layerscale, "layerscale",
                        "h + diag(lambda) u (LayerScale, CaiT)"),
             clEnumValN(::rewire::RewriteKind::review, "review",
                        "gate conditioned on the state and the update"),
             clEnumValN(::rewire::RewriteKind::highway, "highway",
                        "gate conditioned on the state only"),
             clEnumValN(::rewire::RewriteKind::nag, "nag",
                        "norm-agnostic update with a Mixture-of-Depths gate"),
             clEnumValN(::rewire::RewriteKind::ancre, "ancre",
                        "learned softmax connections to all earlier states"),
             clEnumValN(::rewire::RewriteKind::denseformer, "denseformer",
                        "depth-weighted average of all earlier states"),
             clEnumValN(::rewire::RewriteKind::lpa, "lpa",
                        "a readout through the shared head at every depth"),
             clEnumValN(::rewire::RewriteKind::laurel, "laurel",
                        "learned scalars and a low-rank map on the state (LAuReL)"),
             clEnumValN(::rewire::RewriteKind::hc, "hc",
                        "n copies of the stream mixed by learned maps (Hyper-Connections)"),
             clEnumValN(::rewire::RewriteKind::mhc, "mhc",
                        "hyper-connections with doubly stochastic mixing (mHC))"),
             clEnumValN(::rewire::RewriteKind::valueResidual, "value-residual",
                        "later attention layers mix in the first one's values (ResFormer)"))}]>,
    Option<"granularity", "granularity", "::rewire::Granularity",
           "::rewire::Granularity::block",
           "Where ancre, denseformer and lpa attach",
           [{::llvm::cl::values(
             clEnumValN(::rewire::Granularity::block, "block",
                        "after each block (an attention update ends none)"),
             clEnumValN(::rewire::Granularity::sublayer, "sublayer",
                        "after every update"))}]>,
    Option<"tau", "tau", "double", "0.01",
           "ANCRe softmax temperature (paper default 0.01)">,
    Option<"nagComponents", "nag-c", "int64_t", "8",
           "NAG gate components C">,
    Option<"nagBeta", "nag-beta", "double", "1.0",
           "NAG gate exponent beta">,
    Option<"combine", "combine", "::rewire::residual::Combine",
           "::rewire::residual::Combine::additive",
           "How a gated form combines state and update",
           [{::llvm::cl::values(
             clEnumValN(::rewire::residual::Combine::additive, "additive",
                        "h + r * u"),
             clEnumValN(::rewire::residual::Combine::convex, "convex",
                        "(1 - r) * h + r * u"))}]>,
    Option<"gate", "gate", "::rewire::GateWidth", "::rewire::GateWidth::channel",
           "Gate width of a gated form",
           [{::llvm::cl::values(
             clEnumValN(::rewire::GateWidth::channel, "channel",
                        "one gate per channel (G = d)"),
             clEnumValN(::rewire::GateWidth::row, "row",
                        "one gate per row (G = 1)"))}]>,
    Option<"init", "init", "::rewire::InitMode", "::rewire::InitMode::paper",
           "Initialization of the new parameters",
           [{::llvm::cl::values(
             clEnumValN(::rewire::InitMode::paper, "paper",
                        "as the paper prescribes"),
             clEnumValN(::rewire::InitMode::identity, "identity",
                        "so that the model computes the original function"))}]>,
    Option<"eps", "eps", "double", "1e-6",
           "rms epsilon of the review gate">,
    Option<"highwayBias", "highway-bias", "double", "-2.0",
           "Initial gate bias of the highway form (paper: -1 to -3)">,
    Option<"stopGradient", "stop-gradient", "bool", "false",
           "lpa: each block reads its input through nn.stop_gradient, so it "
           "is trained by its own depth's loss only (residual fitting)">,
    Option<"laurelVariant", "laurel", "::rewire::LaurelVariant",
           "::rewire::LaurelVariant::rwlr", "laurel: which LAuReL",
           [{::llvm::cl::values(
             clEnumValN(::rewire::LaurelVariant::rw, "rw",
                        "alpha u + beta h, learned scalars"),
             clEnumValN(::rewire::LaurelVariant::lr, "lr",
                        "u + h + (h A) B, a low-rank map of the state"),
             clEnumValN(::rewire::LaurelVariant::rwlr, "rw-lr", "both"),
             clEnumValN(::rewire::LaurelVariant::pa, "pa",
                        "u + h + sum_j gamma_j x_j over the stream's earlier states"),
             clEnumValN(::rewire::LaurelVariant::rwpa, "rw-pa", "rw and pa"),
             clEnumValN(::rewire::LaurelVariant::lrpa, "lr-pa", "lr and pa"),
             clEnumValN(::rewire::LaurelVariant::rwlrpa, "rw-lr-pa", "all three"),
             clEnumValN(::rewire::LaurelVariant::gemma3n, "gemma3n",
                        "Gemma 3n: (h + u + a + rms(a A B) w) / sqrt 2 on attention "
                        "sublayers, a the branch's input norm"))}]>,
    Option<"laurelRank", "rank", "int64_t", "16",
           "laurel with lr or gemma3n: the rank r of A : [d, r], B : [r, d] "
           "(Gemma 3n: 64)">,
    Option<"streams", "streams", "int64_t", "4",
           "hc, mhc: the number of stream copies n (expansion rate)">,
    Option<"hcDynamic", "dynamic", "bool", "true",
           "hc: input-dependent coefficients (DHC); false: static ones (SHC)">,
    Option<"sinkhornIters", "iters", "int64_t", "20",
           "mhc: Sinkhorn rounds that make H^res doubly stochastic">,
    Option<"hcAlpha", "hc-alpha", "double", "0.01",
           "hc, mhc: initial gating factor alpha of the dynamic coefficients">,
    Option<"valueLambda", "lambda", "::rewire::ValueLambda", "::rewire::ValueLambda::fixed",
           "value-residual: the mixing weights",
           [{::llvm::cl::values(
             clEnumValN(::rewire::ValueLambda::fixed, "fixed",
                        "1/2 and 1/2, the official code's constants"),
             clEnumValN(::rewire::ValueLambda::learned, "learned",
                        "two learned scalars per layer"))}]>,
  ];
  let dependentDialects = [
    "::rewire::residual::ResidualDialect",
    "::rewire::nn::NNDialect",
    "::mlir::ml_program::MLProgramDialect",
  ];
}

def ResidualTruncate : Pass<"residual-truncate", "::mlir::ModuleOp"> {
  let summary = "Keep the first N blocks of the stream and the shared head";
  let description = [{
    LPA's "train once, use N models": the function's output head (everything
    after the last stream state) is rewired to read the state after block
    `depth`; the later blocks, their parameters and the per-depth readouts of
    depths >= `depth` are removed. Blocks are counted as in residual-rewrite
    (`granularity`). `depth` must be between 1 and the number of blocks.
  }];
  let options = [
    Option<"depth", "depth", "int64_t", "0", "Number of blocks to keep">,
    Option<"granularity", "granularity", "::rewire::Granularity",
           "::rewire::Granularity::block", "How blocks are counted",
           [{::llvm::cl::values(
             clEnumValN(::rewire::Granularity::block, "block", "transformer layers / residual blocks"),
             clEnumValN(::rewire::Granularity::sublayer, "sublayer", "every update"))}]>,
  ];
}

def ResidualMod : Pass<"residual-mod", "::mlir::ModuleOp"> {
  let summary = "Mixture-of-Depths skipping for NAG updates";
  let description = [{
    Mixture-of-Depths on every NAG update (`residual.nag_gate` ->
    `residual.nag_add`): tokens whose modulator is below `threshold`, or the
    `rate` fraction of each sequence's tokens with the smallest modulator,
    skip the sublayer and their state passes unchanged. Give exactly one of
    `threshold` (>= 0) and `rate` (in [0, 1)). The paper's exact rule is not
    known to us (papers.md); both are offered.

    * Rate mode with `skip` (the default) saves the compute: each sequence
      keeps the same number of rows, K = T - floor(rate * T), so the kept
      rows are gathered (`residual.route_select`, `nn.gather`), the sublayer
      runs on [B, K, d] only, and its update is added back into the stream
      at those rows (`nn.scatter_add ... into`). The sublayer sees the kept
      tokens, in order, as its whole sequence: in attention a skipped token
      is neither a query nor a key/value, and causal attention stays causal
      among the kept tokens. The router trains through the gathered modulator. Not causal
      as a decision: which tokens a sequence keeps depends on all of them.
      A branch that cannot run on a subset of rows (a mask or position table
      from outside it, a slice along the tokens, an op outside nn) keeps the
      masked form, with a warning naming the op.
    * Threshold mode, and rate mode with `skip=false`, mask: the modulator
      goes through `residual.route`, every row is computed and the skipped
      rows' update is zero (a skipped token is still a key and value of the
      others). Threshold mode is causal (a row's decision depends on that
      row only) but its count is data-dependent, so it does not skip work.
  }];
  let options = [
    Option<"threshold", "threshold", "double", "-1.0",
           "Skip tokens whose modulator m is below this">,
    Option<"rate", "rate", "double", "-1.0",
           "Skip this fraction of each sequence's tokens, those with the smallest m">,
    Option<"skip", "skip", "bool", "true",
           "Rate mode: run the sublayer on the kept rows only (false: mask)">,
  ];
  let dependentDialects = ["::rewire::residual::ResidualDialect", "::rewire::nn::NNDialect"];
}

def ResidualDecompose : Pass<"residual-decompose", "::mlir::func::FuncOp"> {
  let summary = "Write every residual stream op as the nn ops it stands for";
  let description = [{
    Replaces each stream op (`residual.add`, `scale_add`, `gated_add`, `mix`,
    `nag_gate`, `nag_add`, `tap`, `laurel`, the `hyper_*` ops) by its decomposition into nn ops
    (`StreamOpInterface::decompose`, dialects/residual/ResidualDecompose.cpp),
    the one definition of each form's arithmetic that differentiation and the
    ONNX export use too. `residual.route` (Mixture-of-Depths) stays. The
    result computes what the fused lowering (`convert-residual-to-linalg`)
    computes; test/Conversion/decompose-parity.test runs both on every form.

    Example: `residual.gated_add highway additive %h, %u, %w, %b` becomes
    `nn.add %h, (nn.mul (nn.sigmoid (nn.add (nn.matmul %h, %w), %b)), %u)`.

    With `ops`, only the ops named are decomposed; with `unfused`, the forms
    that have no fused lowering (`residual.laurel` and the hyper stream ops,
    `residual::unfusedStreamOps()`), which is what the CPU and CUDA pipelines
    do, so a new form runs as soon as its decomposition exists.
  }];
  let options = [
    Option<"unfused", "unfused", "bool", "false",
           "decompose only the forms without a fused lowering">,
    ListOption<"ops", "ops", "std::string",
               "decompose only these ops (e.g. residual.laurel; default: every stream op)">,
  ];
  let dependentDialects = ["::rewire::nn::NNDialect"];
}

def FuseSiblingMatmuls : Pass<"nn-fuse-sibling-matmuls", "::mlir::func::FuncOp"> {
  let summary = "One product for nn.matmul ops that share their left operand";
  let description = [{
    `x . W1`, `x . W2`, ... (the same `x`, in one block; each `Wi` a static
    2-D float tensor with the same row count) become `x . concat(W1, W2,
    ...)` along the columns, and an `nn.split` of the result into the
    original products' results: the left operand is read once, by one wider
    product, instead of once per narrow one. Example: a hyper-connection's
    three coefficient projections of its stream (`[B, T, n, d] . [d, 1]`,
    `[d, 1]`, `[d, n]`).

    The concatenation copies the right operands at every call (parameters
    are function arguments by then), so a group is fused only when that
    copy is no larger than the left-operand reads it saves ((m - 1) times
    the left operand for m products), with a static left operand: q, k and
    v projections of a few tokens (three `[d, d]` copies against `[T, d]`
    reads) stay apart.

    Products are grouped greedily from the earliest of each left operand,
    in one of two places, whichever takes more siblings: where the earliest
    was (a sibling joins when its right operand is available there;
    parameters always are), or where the latest was (a sibling joins when
    nothing uses its result before that point). The second is how a
    backward's weight gradients `x^T . dz_i` meet: each `dz_i` is computed
    after the previous product, and the optimizer uses them all at the end
    (mHC's three coefficient gradients, `[n d, 4]`, `[n d, 4]`, `[n d, 16]`,
    become one `[n d, 24]` product). The results equal the separate
    products' up to the summation order the GEMM picks for the wider shape.
    rewire-compile runs it at -O1 and up, on nn ops, after the residual
    forms are decomposed.

    Example:
    ```mlir
    %a = nn.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x1xf32>) -> tensor<8x1xf32>
    %b = nn.matmul %x, %w2 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    // becomes
    %c = nn.concat %w1, %w2 {axis = 1 : i64} : (tensor<16x1xf32>, tensor<16x4xf32>) -> tensor<16x5xf32>
    %p = nn.matmul %x, %c : (tensor<8x16xf32>, tensor<16x5xf32>) -> tensor<8x5xf32>
    %s:2 = nn.split %p {axis = 1 : i64, sizes = array<i64: 1, 4>} : (tensor<8x5xf32>) -> (tensor<8x1xf32>, tensor<8x4xf32>)
    ```
  }];
  let dependentDialects = ["::rewire::nn::NNDialect"];
}

def FuseMatmulSums : Pass<"nn-fuse-matmul-sums", "::mlir::func::FuncOp"> {
  let summary = "One product for a sum of nn.matmul ops";
  let description = [{
    In a tree of `nn.add` ops (each add used only by the next, none
    broadcasting), the products `A1 . B1 + A2 . B2 + ...` whose left
    operands agree but for their last (contraction) dimension and whose
    right operands are static 2-D matrices with the same column count
    become one product, `concat(A1, A2, ...) . concat(B1, B2, ...)` (left
    operands along their last axis, right operands along their rows), added
    to the tree's other leaves. Reshaped subtrees of one source shape that
    hold such products are summed before a single reshape, so products
    behind reshapes meet. The typical sum is an input gradient: a
    hyper stream's three coefficient sets each contribute `dz_i . W_iᵀ` to
    its flattened rows (mHC: `[B, T, 4]`, `[B, T, 4]` and `[B, T, 16]` times
    `[k, n·d]`), one wider product instead of three that each write the
    whole gradient.

    The concatenations copy both operands at every call, so a group is
    fused only when those copies are no larger than the (m - 1) results of
    m products it saves: q, k and v gradients of full width (`[T, d] .
    [d, d]` three times) stay apart. The tree is reassociated (the fused
    product first, the other leaves in their order), so sums change by
    round-off. rewire-compile runs it for the CPU at -O1 and up, on nn ops,
    after the reverse pass and `nn-fuse-sibling-matmuls` (not for CUDA,
    where the concatenations are extra kernel launches).

    Example:
    ```mlir
    %p = nn.matmul %a1, %w1 : (tensor<8x4xf32>, tensor<4x64xf32>) -> tensor<8x64xf32>
    %q = nn.matmul %a2, %w2 : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
    %s = nn.add %p, %q : tensor<8x64xf32>
    %t = nn.add %s, %x : tensor<8x64xf32>
    // becomes
    %a = nn.concat %a1, %a2 {axis = 1 : i64} : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<8x20xf32>
    %w = nn.concat %w1, %w2 {axis = 0 : i64} : (tensor<4x64xf32>, tensor<16x64xf32>) -> tensor<20x64xf32>
    %f = nn.matmul %a, %w : (tensor<8x20xf32>, tensor<20x64xf32>) -> tensor<8x64xf32>
    %t = nn.add %f, %x : tensor<8x64xf32>
    ```
  }];
  let dependentDialects = ["::rewire::nn::NNDialect"];
}

def FuseAttention : Pass<"nn-fuse-attention", "::mlir::func::FuncOp"> {
  let summary = "Form nn.attention from the exporters' matmul/softmax/matmul subgraph";
  let description = [{
    PyTorch's exporters write scaled dot-product attention out as ops:
    `softmax(mask(q . k^T * scale)) . v`. This pass replaces each such chain
    on rank-4 `[B, H, T, D]` tensors by one `nn.attention`, which the CPU
    runs as a fused kernel (rewire-attention-to-kernel). It matches, from
    the final `nn.matmul` whose left operand is an `nn.softmax` over the
    last axis (or the dynamo exporter's `where(p != p, 0, p)` around it,
    which becomes `zero_masked_rows`), walking up:
    - the scale: `nn.div` by, or `nn.mul` with, a positive finite scalar
      constant, around the scores and/or on each operand of the product
      (PyTorch's SDPA decomposition scales q and k^T by sqrt(scale) each);
      the factors multiply;
    - the mask, optional, inside or outside the scale: `nn.add` of any
      tensor that broadcasts to the scores (the bias; a scale outside it
      scales it too), or `nn.where %m, %s, %fill` / `nn.where %m, %fill, %s`
      with a splat `%fill` at most -1e30 (-inf, or `finfo.min` as
      transformers writes it), which becomes the bias `where(%m, 0, %fill)`
      (equal to the original for scores below ~1e31). A constant mask that
      is exactly the causal pattern `j <= i + (Tk - Tq)` (with Tk >= Tq)
      becomes the `causal` flag instead; masks held as data (parameters,
      inputs, computed by the graph) stay a bias, whose wholly masked tiles
      the kernel skips;
    - `q . k^T`: an `nn.matmul` whose right operand is `k` transposed in its
      last two dimensions: an `nn.transpose` (folded into the new operand's
      permutation), the dynamo exporter's reshape to `[B*H, Tk, D]` ->
      transpose -> reshape, or anything else (transposed back).
    Every op of the chain but the last must have no other use (the softmax
    is then not needed by a backward pass, so an already differentiated
    graph keeps its ops). rewire-compile runs it for CPU targets
    (`--fused-attention`), for a train step before differentiation, so the
    step's backward is `nn.attention_grad` (nn.attention's reverse rule).

    ```mlir
    %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : ...
    %s = nn.matmul %q, %kt : ...
    %d = nn.div %s, %c8 : ...
    %m = nn.where %causal, %d, %ninf : ...
    %p = nn.softmax %m {axis = -1 : i64} : ...
    %o = nn.matmul %p, %v : ...
    // becomes
    %o = nn.attention %q, %k, %v {causal, scale = 1.250000e-01 : f32} : ...
    ```
  }];
  let dependentDialects = ["::rewire::nn::NNDialect"];
}

def InlineParameters : Pass<"nn-inline-parameters", "::mlir::ModuleOp"> {
  let summary = "Replace parameter loads by constants holding their values";
  let description = [{
    For executing small models without the runtime (tests, debugging):
    every `ml_program.global_load_const` becomes an `arith.constant` with the
    parameter's values, read from the safetensors `file` for
    `#ml_program.extern` parameters or materialized from `#nn.init` with
    `seed`; unused globals are removed. This puts every weight in the IR as
    a literal, which the parameter representation otherwise never does: do
    not use it on large models. f32 parameters only.
  }];
  let options = [
    Option<"file", "file", "std::string", "\"\"",
           "safetensors file with the values of external parameters">,
    Option<"seed", "seed", "uint64_t", "0",
           "seed for random #nn.init parameters">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ParametersToArguments : Pass<"nn-parameters-to-arguments", "::mlir::ModuleOp"> {
  let summary = "Turn parameter loads into arguments of the public functions";
  let description = [{
    The compiled calling convention: a runtime binds parameters from a
    safetensors file and passes them to the entry points. In every public
    function with a body, each parameter (`ml_program.global`: external,
    `#nn.init` or dense initial values alike — a dense value, such as
    DenseFormer's identity weights, is a parameter's initial value, not a
    constant) the function loads becomes a trailing argument, once per
    parameter, in the order of first use, with the attribute
    `nn.parameter = "<name>"` (its safetensors name) and
    `bufferization.writable = false` (parameters may be mapped read-only).
    Globals left without uses are removed. Loads from private functions are
    rejected with an error: pass the values as arguments instead.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def Autodiff : Pass<"rewire-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of a loss function";
  let description = [{
    For the function `function` whose first result is a scalar loss (a 0-d
    or one-element float tensor), adds `<function>_grad` returning the loss
    followed by its gradient with respect to the selected arguments: those
    with an `nn.parameter` attribute (`wrt=parameters`, the default; run
    `nn-parameters-to-arguments` first) or every float argument
    (`wrt=all`). Arguments whose `nn.parameter` name matches `frozen` (a
    comma-separated list of prefixes) are not differentiated.

    The backward pass is built from each op's ReverseModeOpInterface rule
    (lib/Autodiff: nn and residual rules attached as external models), in
    the same dialects as the forward ops, after them in the same function,
    so it lowers, fuses and compiles like forward IR. Adjoints reaching a
    value from several uses are summed. Single-block functions only; an op
    without a rule is an error naming it. Each gradient result carries
    `nn.name = "grad:<argument name>"`.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"forward\"",
           "the loss function (its first result is the scalar loss)">,
    Option<"wrt", "wrt", "std::string", "\"parameters\"",
           "parameters (arguments with nn.parameter) or all (every float argument)">,
    ListOption<"frozen", "frozen", "std::string",
               "parameter-name prefixes not to differentiate (comma-separated)">,
  ];
  let dependentDialects = ["::rewire::nn::NNDialect"];
}

def TrainStep : Pass<"rewire-train-step", "::mlir::ModuleOp"> {
  let summary = "Build eval_step and train_step (loss, gradients, optimizer update) as IR";
  let description = [{
    From `function(inputs..., parameters...) -> prediction` (parameters are
    arguments with `nn.parameter`: run `nn-parameters-to-arguments` first)
    builds, in the nn dialect:

    * `eval_step(inputs..., target, params...) -> loss`, the `loss` of the
      prediction (`mse`: mean of squared errors over all elements, target
      shaped like the prediction; `cross_entropy`: `nn.cross_entropy` of
      logits `[..., C]` against i64 labels `[...]`, rows labelled
      `ignore-index` not counted);
    * `train_step(inputs..., target, params..., states..., lr[, bias
      corrections]) -> (loss, params'..., states'...)`: the loss before the
      update, its gradients by rewire-autodiff, and one optimizer step,
      PyTorch's semantics: `sgd` (`d = g + wd p; buf = momentum buf + d;
      p -= lr buf`, no buffer when momentum is 0) or `adamw` (`p *= 1 - lr
      wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr (m c1) /
      (sqrt(v c2) + eps)` with the bias corrections `c1 = 1/(1-b1^t)`,
      `c2 = 1/(1-b2^t)` and `lr` passed by the runtime, which owns the
      schedule).

    Batch normalization in training mode (`nn.batch_norm {training}`)
    normalizes with batch statistics in train_step, which also returns its
    running statistics updated (`param:<name>` results, PyTorch's rule: they
    are buffers, never differentiated); eval_step normalizes with the
    running statistics, as PyTorch's `model.eval()`.

    A model rewritten by `residual-rewrite{kind=lpa}` returns readouts at
    every depth (`<output>_depth<k>`, k < K; the output itself is depth K).
    Both functions then minimize LPA's per-depth loss `L = sum_k w_k
    loss(readout_k, target)` with `depth-weights`: `uniform` (w_k = 1/K),
    `linear` (w_k = k / sum k), `last` (end-to-end: w_K = 1) or K given
    numbers, and also return each depth's loss (`loss:depth<k>`), so
    training logs the error at every depth.

    Parameters matching `frozen` (comma-separated name prefixes) are inputs
    of train_step but get no gradient, state or update. Arguments and
    results are named (`nn.name`): `target`, `param:<name>`,
    `state:<name>:momentum|m|v`, `lr`, `bias_correction1|2`, `loss`, so a
    training loop binds them by name. Both functions take parameters as
    ordinary inputs (the runtime owns and updates them); `function` keeps
    its parameters for inference.

    With `split`, train_step is built as its two halves, so the runtime can
    sum gradients over micro-batches and processes in between (rewire-train
    --grad-accum, mpirun; docs/distributed.md):

    * `grad_step(inputs..., target, params...) -> (loss, grad:<p>...,
      [param:<buffer>'...], [loss:depth<k>...])`: the loss and its
      gradients (and batch normalization's running statistics);
    * `apply_step(param:<p>..., states..., grad:<p>..., grad_scale, lr[,
      bias corrections]) -> (params'..., states'..., [gradnorm:<p>...])`:
      the gradients scaled by `grad_scale` (1 / the number of batches
      summed), then clipped and applied as above.

    Both compute what train_step does, in the same order: one micro-batch
    with grad_scale 1 gives train_step's update.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"forward\"", "the model function">,
    Option<"loss", "loss", "::rewire::LossKind", "::rewire::LossKind::mse", "the loss",
           [{::llvm::cl::values(
             clEnumValN(::rewire::LossKind::mse, "mse", "mean squared error"),
             clEnumValN(::rewire::LossKind::crossEntropy, "cross_entropy",
                        "cross entropy of logits against i64 labels"))}]>,
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "cross_entropy: the label of rows not to count">,
    Option<"optimizer", "optimizer", "::rewire::OptimizerKind", "::rewire::OptimizerKind::sgd",
           "the update",
           [{::llvm::cl::values(
             clEnumValN(::rewire::OptimizerKind::sgd, "sgd", "SGD with optional momentum"),
             clEnumValN(::rewire::OptimizerKind::adamw, "adamw", "AdamW"))}]>,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "SGD L2 penalty (added to the gradient) or AdamW decoupled decay">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    ListOption<"frozen", "frozen", "std::string",
               "parameter-name prefixes not to train (comma-separated)">,
    Option<"clip", "clip", "double", "0.0",
           "clip gradients to this global L2 norm first (PyTorch's clip_grad_norm_; 0: off)">,
    Option<"gradNorms", "grad-norms", "bool", "false",
           "also return each parameter's gradient L2 norm (`gradnorm:<name>`, before clipping)">,
    Option<"splitSteps", "split", "bool", "false",
           "build grad_step and apply_step instead of train_step (data parallelism, "
           "gradient accumulation)">,
    Option<"depthWeights", "depth-weights", "std::string", "\"uniform\"",
           "LPA per-depth loss weights: uniform, linear (w_k proportional to k), "
           "last (the final output only: end-to-end), or K comma-separated numbers">,
  ];
  let dependentDialects = ["::rewire::nn::NNDialect"];
}

def ResidualInstrument : Pass<"residual-instrument", "::mlir::ModuleOp"> {
  let summary = "Return per-layer statistics of the residual streams as extra results";
  let description = [{
    For every residual update of every public function, appends scalar
    results named `stats:s<stream>.l<layer>.<op>.<stat>` (nn.name) computed
    on the batch the function runs on:

    * `norm` — the mean over rows of the L2 norm of the state the update
      reads (the stream norm entering layer l);
    * `update` — the mean over rows of `||h' - h|| / ||h||`, the relative
      size of the update (NAG's claim: exactly alpha * m);
    * `gate_mean`, `gate_var` — residual.gated_add's gate r (Review,
      Highway; the lowering's own equations), or residual.nag_add's
      modulator m, over all rows and channels;
    * `skip` — for a NAG update routed by Mixture-of-Depths
      (`residual.route`), the fraction of rows that skip it;
    * `res_gain`, `gain_fwd`, `gain_bwd` — for a hyper_write
      (Hyper-Connections, mHC): the largest absolute row sum of its H^res,
      and the largest absolute row sum (forward) and column sum (backward)
      of the composite H^res_l ... H^res_0 of the stream so far, over all
      tokens (the mHC paper's "Amax gain magnitude"; 1 for doubly
      stochastic maps).

    rewire-report --layer-stats compiles a model with it and renders the numbers.
    The model's own results are unchanged and come first.
  }];
}

def ResidualReport : Pass<"residual-report", "::mlir::ModuleOp"> {
  let summary = "Describe the residual streams: layers, forms, parameters, FLOPs";
  let description = [{
    Prints every residual stream of the module: each update's layer, its
    form (`add`, `scale`, `review`, `highway`, `ancre`, `denseformer`, `nag`,
    `tap`, with combine and gate width), its branch kind and skip type (from
    residual-detect), the parameters its learned operands hold, and the FLOPs
    per token (per row) the form adds over a plain add:

    | form | FLOPs per token |
    |---|---|
    | scale (ReZero, LayerScale) | d |
    | review gate | 4dG (gate GEMM) + 6d (two rms) + 5G (bias, sigmoid) + d (+2d convex) |
    | highway gate | 2dG + 5G + d (+2d convex) |
    | mix over k states | 2kd (+d for free weights) |
    | nag_gate | 3d (rho) + 2dC + 6C |
    | nag_add | 12d |

    `format=text` is for people, `format=json` for tools (an object with
    `streams` (each: `id` and `updates`, each update: `layer`, `kind`,
    `branch`, `skip`, `params`, `flops_per_token`), `params_added` and
    `flops_added_per_token`), `format=dot` is a Graphviz view of the streams.
    An update's `params` are those its op reads; `params_added` counts every
    parameter residual-rewrite added, by their names
    (`stream<S>.layer<L>.<form>.<name>`), including those only nn ops read
    (Gemma 3n's low-rank path).
    The IR is not changed.
  }];
  let options = [
    Option<"format", "format", "std::string", "\"text\"",
           "Output format: text, json or dot">,
    Option<"output", "output", "std::string", "\"-\"",
           "Where to write the report ('-' for stdout)">,
  ];
}

#endif // REWIRE_PASSES_TRANSFORMS_PASSES_TD
