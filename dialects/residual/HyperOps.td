//===- HyperOps.td - Hyper-Connections and mHC ops ----------*- tablegen -*-===//
//
// The ops of a hyper stream (papers.md 6.1, 6.2): n copies of the state,
// laid out `[..., n, d]` (the state's shape with a stream axis inserted
// before the feature axis, which is last). Included by ResidualOps.td;
// verifiers in HyperOps.cpp, decompositions in ResidualDecompose.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RESIDUAL_HYPER_OPS_TD
#define REWIRE_RESIDUAL_HYPER_OPS_TD

//===----------------------------------------------------------------------===//
// residual.hyper_expand
//===----------------------------------------------------------------------===//

def Residual_HyperExpandOp : Residual_StreamOp<"hyper_expand"> {
  let summary = "enter a hyper stream: `n` copies of the state";
  let description = [{
    `X[..., i, :] = h[..., :]` for every stream `i < n`: the hyper stream of
    Hyper-Connections starts as `n` copies of the embedding output. The
    result has the shape of `h` with a stream axis of size `n` inserted
    before the feature axis, which must be the last.

    Example:
    ```mlir
    %X = residual.hyper_expand %h stream 0 layer 0 : tensor<2x16x64xf32> -> tensor<2x16x4x64xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$h), StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$h ", StreamAttrsFormat, " `:` type($h) `->` type($result)");
  let extraClassDeclaration = [{
    /// The number of streams `n`.
    int64_t getStreams() { return getResult().getType().getShape().drop_back().back(); }
  }];
}

//===----------------------------------------------------------------------===//
// residual.hyper_coeffs
//===----------------------------------------------------------------------===//

def Residual_HyperCoeffsOp : Residual_StreamOp<"hyper_coeffs"> {
  let summary = "dynamic mixing coefficients of a hyper stream (HC, mHC)";
  let description = [{
    Computes one set of per-token coefficients of a hyper-connection from
    the hyper stream `X : [..., n, d]`, as `map` says:

    * `tanh` (dynamic Hyper-Connections, Zhu et al. 2025): each stream row is
      normalized alone, `Xn = rms(X)` over `d`, then `Z = Xn . W` with
      `W : [d, k]`, and the result is `alpha * tanh(Z) + bias`. `k = 1` gives
      one coefficient per stream (`H^pre`, `H^post` : `[..., n]`), `k = n`
      one row per stream (`H^res` : `[..., n, n]`, entry `[i, j]` weighting
      stream `j` into stream `i`).
    * `sigmoid`, `double_sigmoid`, `sinkhorn` (mHC, DeepSeek 2025): the `n`
      streams of a token are flattened and normalized together,
      `x = rms(flatten(X))` over `n * d`, then `z = alpha * (x . W) + bias`
      with `W : [n * d, k]`; `sigmoid` gives `H^pre = sigmoid(z)` and
      `double_sigmoid` gives `H^post = 2 sigmoid(z)` (`k = n`, result
      `[..., n]`); `sinkhorn` reshapes `z` to `[..., n, n]` and returns
      `Sinkhorn(exp(z))`: `iters` rounds (default 20) of normalizing every
      row to sum 1 and then every column, so the result is doubly stochastic
      up to the last round's row error (each column sums to 1 exactly).
      `exp` is taken after subtracting the token's largest `z` (which does
      not change the result) so it cannot overflow.

    `alpha` is a scalar (`tensor<T>` or `tensor<1xT>`); `bias` has the
    result's shape without the leading dimensions (`[n]` or `[n, n]`). `eps`
    (default 1e-6) is the rms epsilon; `iters` is given for `sinkhorn` only.
    With `W = 0` the coefficients are the constants `bias`, `sigmoid(bias)`,
    `2 sigmoid(bias)` or `Sinkhorn(exp(bias))`.

    Example:
    ```mlir
    %res = residual.hyper_coeffs sinkhorn %X, %alpha, %W, %b iters 20 stream 0 layer 1
        : tensor<2x16x4x64xf32>, tensor<f32>, tensor<256x16xf32>, tensor<4x4xf32> -> tensor<2x16x4x4xf32>
    ```
  }];
  let arguments = !con((ins Residual_HyperMap:$map, Residual_FloatTensor:$X,
                            Residual_FloatTensor:$alpha, Residual_FloatTensor:$weight,
                            Residual_FloatTensor:$bias,
                            OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$iters,
                            DefaultValuedAttr<F64Attr, "1e-6">:$eps), StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$map $X `,` $alpha `,` $weight `,` $bias (`iters` $iters^)? "
                       "(`eps` $eps^)? ", StreamAttrsFormat,
                       " `:` type($X) `,` type($alpha) `,` type($weight) `,` type($bias) `->` type($result)");
}

//===----------------------------------------------------------------------===//
// residual.hyper_read
//===----------------------------------------------------------------------===//

def Residual_HyperReadOp : Residual_StreamOp<"hyper_read"> {
  let summary = "a branch's input from a hyper stream, `H^pre . X`";
  let description = [{
    `x[...] = sum_i pre[..., i] * X[..., i, :]`: the weighted sum of the `n`
    streams that a sublayer reads. `pre` is either static, `[n]` (one weight
    per stream, shared by all tokens), or per token, `[..., n]` (the shape of
    `X` without its feature axis, from `residual.hyper_coeffs`). The result
    has the shape of `X` without its stream axis.

    Example:
    ```mlir
    %x = residual.hyper_read %X, %pre stream 0 layer 1 : tensor<2x16x4x64xf32>, tensor<4xf32> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$X, Residual_FloatTensor:$pre), StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$X `,` $pre ", StreamAttrsFormat,
                       " `:` type($X) `,` type($pre) `->` type($result)");
}

//===----------------------------------------------------------------------===//
// residual.hyper_write
//===----------------------------------------------------------------------===//

def Residual_HyperWriteOp : Residual_StreamOp<"hyper_write", [
    AllTypesMatch<["X", "result"]>]> {
  let summary = "hyper-connection update `H^res . X + (H^post)^T u`";
  let description = [{
    The update of a hyper stream by the branch output `u` (the shape of `X`
    without its stream axis):

    ```
    X'[..., i, :] = sum_j res[..., i, j] * X[..., j, :] + post[..., i] * u[..., :]
    ```

    `post` is `[n]` (static) or `[..., n]` (per token); `res` is `[n, n]` or
    `[..., n, n]`. With `res = I` and `post = 1` every stream gets `u` added
    (a plain residual add on each copy); a doubly stochastic `res` (mHC)
    keeps the mixing's gain across depth bounded.

    Example:
    ```mlir
    %X1 = residual.hyper_write %X, %u, %post, %res stream 0 layer 1
        : tensor<2x16x4x64xf32>, tensor<2x16x64xf32>, tensor<4xf32>, tensor<4x4xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$X, Residual_FloatTensor:$u,
                            Residual_FloatTensor:$post, Residual_FloatTensor:$res),
                       StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$X `,` $u `,` $post `,` $res ", StreamAttrsFormat,
                       " `:` type($X) `,` type($u) `,` type($post) `,` type($res)");
}

//===----------------------------------------------------------------------===//
// residual.hyper_write_grad
//===----------------------------------------------------------------------===//

def Residual_HyperWriteGradOp : Residual_Op<"hyper_write_grad", [Pure]> {
  let summary = "the sums of `hyper_write`'s reverse that read the stream's adjoint";
  let description = [{
    With `g` the adjoint of a `residual.hyper_write`'s result (`[..., n, d]`),
    `X` and `u` its stream and branch operands and `post` its `[n]` or
    `[..., n]` coefficient, the three sums of the write's reverse rule that
    read `g`:

    ```
    du[..., :]      = sum_i post[..., i] * g[..., i, :]
    dpost[..., i]   = sum_k g[..., i, k] * u[..., k]
    dres[..., i, j] = sum_k g[..., i, k] * X[..., j, k]
    ```

    `dpost` and `dres` are per token (the reverse rule sums them over the
    tokens for static coefficients). Written by the reverse rule of
    `residual.hyper_write` (lib/Autodiff/ResidualRules.cpp) so the three sums
    are one pass over each token's rows instead of three over the stream:
    on the CPU, `rewire-hyper-to-kernel` calls the runtime's fused kernel
    (runtime/HyperKernels.c); elsewhere `residual-decompose` expands it into
    a `residual.hyper_read` and two nn reductions, which are also its
    definition (`residual::decomposeHyperWriteGrad`). Shapes must be static.

    Example:
    ```mlir
    %du, %dpost, %dres = residual.hyper_write_grad %g, %X, %u, %post stream 0 layer 1
        : tensor<2x16x4x64xf32>, tensor<2x16x4x64xf32>, tensor<2x16x64xf32>, tensor<2x16x4xf32>
        -> tensor<2x16x64xf32>, tensor<2x16x4xf32>, tensor<2x16x4x4xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$g, Residual_FloatTensor:$X,
                            Residual_FloatTensor:$u, Residual_FloatTensor:$post),
                       StreamAttrs);
  let results = (outs Residual_FloatTensor:$du, Residual_FloatTensor:$dpost,
                      Residual_FloatTensor:$dres);
  let assemblyFormat = !strconcat("$g `,` $X `,` $u `,` $post ", StreamAttrsFormat,
                       " `:` type($g) `,` type($X) `,` type($u) `,` type($post) `->` ",
                       "type($du) `,` type($dpost) `,` type($dres)");
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// residual.hyper_project_grad
//===----------------------------------------------------------------------===//

def Residual_HyperProjectGradOp : Residual_Op<"hyper_project_grad", [Pure]> {
  let summary = "the reverse of an mHC coefficient projection, `dX` and `dW` in one op";
  let description = [{
    The reverse of the projection inside an mHC `residual.hyper_coeffs`
    (maps `sigmoid`, `double_sigmoid`, `sinkhorn`): with `x` a token's `n`
    streams of `X : [..., n, d]` flattened (`K = n * d` features),
    `r = 1 / sqrt(mean(x^2) + eps)` its rms scale and `p = x . W` the
    unscaled projection (`W : [K, k]`), the forward's `z = r p`; given the
    adjoint `dz` of `z`,

    ```
    dX[..., :] = reshape((r dz) . W^T) + s X[..., :, :],  s = -(r^3 / K) sum_j dz_j p_j
    dW         = sum over the tokens of x^T (r dz)
    ```

    `dz` and `p` are `[..., k]`, `r` is `[..., 1]` (the forward's values:
    the op does not recompute them); `dX` has `X`'s type and `dW` `W`'s.
    Written by the reverse rule of `residual.hyper_coeffs`
    (lib/Autodiff/ResidualRules.cpp) with static shapes. On the CPU,
    `rewire-hyper-to-kernel` merges the ops of one site (the three
    coefficient sets read the same stream: their `dz` and `p` concatenated,
    `W` and `dW` passed as the sets' own buffers, one `dX`) and calls the
    runtime's kernel, which reads the stream once for both products
    (runtime/HyperKernels.c); elsewhere
    `residual-decompose` expands it into the nn ops that are its definition
    (`residual::hyperProjectGradSums`).

    Example:
    ```mlir
    %dX, %dW = residual.hyper_project_grad %dz, %p, %r, %X, %W
        : tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<2x16x1xf32>, tensor<2x16x4x64xf32>,
          tensor<256x16xf32> -> tensor<2x16x4x64xf32>, tensor<256x16xf32>
    ```
  }];
  let arguments = (ins Residual_FloatTensor:$dz, Residual_FloatTensor:$p,
                       Residual_FloatTensor:$r, Residual_FloatTensor:$X,
                       Residual_FloatTensor:$W);
  let results = (outs Residual_FloatTensor:$dX, Residual_FloatTensor:$dW);
  let assemblyFormat = "$dz `,` $p `,` $r `,` $X `,` $W attr-dict `:` type($dz) `,` type($p) `,` "
                       "type($r) `,` type($X) `,` type($W) `->` type($dX) `,` type($dW)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// residual.hyper_reduce
//===----------------------------------------------------------------------===//

def Residual_HyperReduceOp : Residual_StreamOp<"hyper_reduce"> {
  let summary = "leave a hyper stream: the mean of the `n` streams";
  let description = [{
    `h[...] = (1/n) sum_i X[..., i, :]`, what the rest of the model (the
    final norm, the head) reads at the end of a hyper stream. The papers sum
    the streams; the mean is the sum divided by `n`, so the two agree after
    a scale-invariant final norm (up to its epsilon), and the mean keeps the
    function of a model without one when all streams are equal (as they are
    at initialization).

    Example:
    ```mlir
    %h = residual.hyper_reduce %X stream 0 layer 11 : tensor<2x16x4x64xf32> -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$X), StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$X ", StreamAttrsFormat, " `:` type($X) `->` type($result)");
}

#endif // REWIRE_RESIDUAL_HYPER_OPS_TD
