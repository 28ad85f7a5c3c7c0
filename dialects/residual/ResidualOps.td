//===- ResidualOps.td - Residual stream ops -----------------*- tablegen -*-===//
//
// The ops of the `residual` dialect: the plain add and every learned or gated
// update form of papers.md, with their verifiers and folders declared here
// and implemented in ResidualOps.cpp / ResidualFolds.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef REWIRE_RESIDUAL_OPS_TD
#define REWIRE_RESIDUAL_OPS_TD

include "dialects/residual/ResidualDialect.td"
include "dialects/residual/ResidualInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Residual_FloatTensor : RankedTensorOf<[AnyFloat]>;

// Attributes every stream op carries: the feature axis and the place in the
// model. Appended to each op's `arguments`.
defvar StreamAttrs = (ins
  DefaultValuedAttr<I64Attr, "-1">:$axis,
  ConfinedAttr<I64Attr, [IntNonNegative]>:$stream,
  ConfinedAttr<I64Attr, [IntNonNegative]>:$layer
);

// Printed after the operands of every op.
defvar StreamAttrsFormat =
    "(`axis` $axis^)? `stream` $stream `layer` $layer attr-dict ";

class Residual_StreamOp<string mnemonic, list<Trait> traits = []>
    : Residual_Op<mnemonic, !listconcat(traits, [
        Pure, DeclareOpInterfaceMethods<Residual_StreamOpInterface>])> {
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// residual.add
//===----------------------------------------------------------------------===//

def Residual_AddOp : Residual_StreamOp<"add", [
    AllTypesMatch<["h", "u", "result"]>]> {
  let summary = "plain residual update `h + u`";
  let description = [{
    The standard residual connection: the stream state `h` plus the branch
    output `u`, elementwise. `residual-detect` raises the residual adds of an
    imported model into this op; the rewrite passes turn it into the other
    forms.

    Folds to `h` when `u` is a constant zero.

    Example:
    ```mlir
    %h1 = residual.add %h0, %u stream 0 layer 0 : tensor<2x16x64xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$h, Residual_FloatTensor:$u),
                       StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$h `,` $u ", StreamAttrsFormat, " `:` type($result)");
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// residual.scale_add
//===----------------------------------------------------------------------===//

def Residual_ScaleAddOp : Residual_StreamOp<"scale_add", [
    AllTypesMatch<["h", "u", "result"]>]> {
  let summary = "scaled residual update `h + alpha * u` (ReZero, SkipInit, LayerScale)";
  let description = [{
    Adds the branch output scaled by a learned factor: `h + alpha * u`.
    `alpha` is either a scalar (`tensor<f32>` or `tensor<1xf32>`: ReZero and
    SkipInit, initialized to 0) or one factor per channel along the feature
    axis (`tensor<dxf32>`: LayerScale, initialized by depth as in CaiT).

    Folds to `h` when `alpha` is a constant zero; canonicalizes to
    `residual.add` when `alpha` is a constant one.

    Example:
    ```mlir
    %h1 = residual.scale_add %h0, %u, %lambda stream 0 layer 2
        : tensor<2x16x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$h, Residual_FloatTensor:$u,
                            Residual_FloatTensor:$alpha), StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$h `,` $u `,` $alpha ", StreamAttrsFormat, " `:` type($result) `,` type($alpha)");
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// residual.laurel
//===----------------------------------------------------------------------===//

def Residual_LaurelOp : Residual_StreamOp<"laurel", [
    AllTypesMatch<["h", "u", "result"]>, AttrSizedOperandSegments]> {
  let summary = "learned augmented residual `alpha u + beta h + (h A) B` (LAuReL)";
  let description = [{
    LAuReL (Google, ICML 2025; papers.md 6.3): `x' = alpha f(x) + g(x)` with
    the branch output `u = f(h)` and

    * the RW variant: `g = beta h`, learned scalars `alpha`, `beta`;
    * the LR variant: `g = h + B A h`, a rank-`r` map (`A : [d, r]`,
      `B : [r, d]`, input-major as every Rewire weight), with `alpha = beta
      = 1`;
    * both (RW+LR): `alpha u + beta h + (h A) B`.

    `alpha` and `beta` are scalars (`tensor<T>` or `tensor<1xT>`); the
    low-rank pair is given together or not at all and needs the feature
    axis last. With `B = 0` and `alpha = beta = 1` the op is `h + u`, which
    is how residual-rewrite initializes it.

    Example:
    ```mlir
    %h1 = residual.laurel %h0, %u, %alpha, %beta lowrank %A, %B stream 0 layer 1
        : tensor<2x16x64xf32>, tensor<f32>, tensor<f32>, tensor<64x16xf32>, tensor<16x64xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$h, Residual_FloatTensor:$u,
                            Residual_FloatTensor:$alpha, Residual_FloatTensor:$beta,
                            Optional<Residual_FloatTensor>:$a,
                            Optional<Residual_FloatTensor>:$b), StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$h `,` $u `,` $alpha `,` $beta (`lowrank` $a^ `,` $b)? ",
                       StreamAttrsFormat,
                       " `:` type($result) `,` type($alpha) `,` type($beta) (`,` type($a)^ `,` type($b))?");
}

//===----------------------------------------------------------------------===//
// residual.gated_add
//===----------------------------------------------------------------------===//

def Residual_GatedAddOp : Residual_StreamOp<"gated_add", [
    AllTypesMatch<["h", "u", "result"]>]> {
  let summary = "gated residual update (Review Residuals, Highway)";
  let description = [{
    Computes a gate `r` in (0, 1) and combines the state and the update:

    * gate `review`:  `r = sigmoid(concat[rms(h), rms(u)] . W + b)`, with
      `W : [2d, G]` (Review Residuals, Kramer);
    * gate `highway`: `r = sigmoid(h . W + b)`, with `W : [d, G]`;
    * combine `additive`: `h + r * u` (identity-preserving);
    * combine `convex`:   `(1 - r) * h + r * u` (the classic Highway form,
      which stalls in deep stacks).

    `G` is `d` for a per-channel gate or 1 for a per-row gate (broadcast over
    the features); `b : [G]`. `eps` (default 1e-6) is the rms epsilon of the
    review gate and must not be given for a highway gate.

    Folds to `h` when the gate is a constant 0 and, for the convex combine, to
    `u` when it is a constant 1 (`W` a constant zero and `sigmoid(b)` exactly
    0 or 1 in the element type). With a constant gate and the additive
    combine, canonicalizes to `residual.scale_add` with `alpha = sigmoid(b)`,
    which in turn becomes `residual.add` when the gate is 1.

    Example:
    ```mlir
    %h1 = residual.gated_add review additive %h0, %u, %W, %b stream 0 layer 1
        : tensor<2x16x64xf32>, tensor<128x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = !con((ins Residual_GateKind:$gate, Residual_Combine:$combine,
                            Residual_FloatTensor:$h, Residual_FloatTensor:$u,
                            Residual_FloatTensor:$weight,
                            Residual_FloatTensor:$bias,
                            OptionalAttr<F64Attr>:$eps), StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$gate $combine $h `,` $u `,` $weight `,` $bias "
                       "(`eps` $eps^)? ", StreamAttrsFormat, " `:` type($result) `,` type($weight) `,` type($bias)");
  let extraClassDeclaration = [{
    /// The rms epsilon of a review gate (the attribute or its default).
    double getEpsOrDefault() {
      auto eps = getEps();
      return eps ? eps->convertToDouble() : 1e-6;
    }
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// residual.mix
//===----------------------------------------------------------------------===//

def Residual_MixOp : Residual_StreamOp<"mix", [AllTypesMatch<["y", "result"]>]> {
  let summary = "learned mix over earlier stream states (ANCRe, DenseFormer, LAuReL-PA)";
  let description = [{
    Mixes a block output `y` with the `k` earlier states `[h_0, ..., h_(k-1)]`
    of its stream; the weight operand `c` becomes coefficients by

    * `softmax` (ANCRe): `c : [k]`, `p = softmax(c / tau)`, and the result is
      `y + sum_j p_j * h_j` (the block output is added unweighted; `tau > 0`
      is required, the paper's default is 0.01);
    * `free` (DenseFormer's depth-weighted average): `c : [k + 1]`, and the
      result is `c_k * y + sum_{j<k} c_j * h_j` (the last weight is the block
      output's own; `tau` must not be given);
    * `additive` (LAuReL-PA, previous activations): `c : [k]`, and the
      result is `y + sum_j c_j * h_j` (the block output unweighted, as in
      `softmax`; `tau` must not be given). With `c = 0` it is `y` exactly.

    All states have the type of `y`. The weights are shared over the batch
    and the tokens (not input-dependent).

    Folds to `y` or to `h_j` when free weights are a constant one-hot vector
    (DenseFormer's identity initialization, weight 1 on `y`, is exactly the
    standard network). Canonicalizes a softmax mix over a single state
    (`p = [1]`) to `residual.add`.

    Example:
    ```mlir
    %h2 = residual.mix softmax %y1, [%h0, %h1], %c tau 1.000000e-02 stream 0 layer 1
        : tensor<2x16x64xf32>, tensor<2xf32>
    ```
  }];
  let arguments = !con((ins Residual_MixWeights:$weights_kind,
                            Residual_FloatTensor:$y,
                            Variadic<Residual_FloatTensor>:$states,
                            Residual_FloatTensor:$weights,
                            OptionalAttr<F64Attr>:$tau), StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let hasCustomAssemblyFormat = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// residual.nag_gate
//===----------------------------------------------------------------------===//

def Residual_NagGateOp : Residual_StreamOp<"nag_gate", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "NAG modulator `m`, computable before the branch runs";
  let description = [{
    The per-row modulator of a NAG update (Figliolia & Millidge):

    ```
    rho  = ||R||_2 / sqrt(d)                  per row
    Rbar = R / rho
    m    = ( sum_{c<C} softmax(pi)_c * sigmoid(Rbar . w[:, c] + b_c) )^beta
    ```

    with `w : [d, C]`, `b : [C]`, `pi : [C]` and `beta > 0` (default 1).
    `m` has the shape of `R` with the feature axis reduced to 1 and lies in
    [0, 1]. It depends only on the sublayer input, so Mixture-of-Depths can
    decide to skip the branch from it (`residual-mod`).

    Example:
    ```mlir
    %m = residual.nag_gate %R, %w, %b, %pi stream 0 layer 3
        : tensor<2x16x64xf32>, tensor<64x8xf32>, tensor<8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$R, Residual_FloatTensor:$w,
                            Residual_FloatTensor:$b, Residual_FloatTensor:$pi,
                            DefaultValuedAttr<F64Attr, "1.0">:$beta),
                       StreamAttrs);
  let results = (outs Residual_FloatTensor:$m);
  let assemblyFormat = !strconcat("$R `,` $w `,` $b `,` $pi (`beta` $beta^)? ", StreamAttrsFormat, " `:` type($R) `,` type($w) `,` type($b) `,` type($pi)");
}

//===----------------------------------------------------------------------===//
// residual.nag_add
//===----------------------------------------------------------------------===//

def Residual_NagAddOp : Residual_StreamOp<"nag_add", [
    AllTypesMatch<["R", "f", "result"]>]> {
  let summary = "norm-agnostic residual update (NAG)";
  let description = [{
    The NAG update of a stream state `R` by a branch output `f` (computed on
    the normalized state `Rbar = R / rho`), with modulator `m` from
    `residual.nag_gate`:

    ```
    rho   = ||R||_2 / sqrt(d)                       per row
    f     = f - mean_d(f)
    fperp = f - (<f, Rbar> / d) * Rbar              remove the stream direction
    u     = sqrt(d) * fperp / max(||fperp||_2, eps)
    R'    = R + rho * alpha * m * u
    ```

    so that `||R'|| / ||R|| = sqrt(1 + alpha^2 m^2)`, independent of `||R||`.
    `alpha` is a learned scalar (`tensor<f32>` or `tensor<1xf32>`, paper init
    `l^{-1/2}`); `m` has the shape of `R` with the feature axis reduced to 1.
    A Mixture-of-Depths skip sets `m = 0` for a row, which leaves it unchanged.

    Folds to `R` when `alpha` or `m` is a constant zero.

    Example:
    ```mlir
    %R1 = residual.nag_add %R, %f, %alpha, %m stream 0 layer 3
        : tensor<2x16x64xf32>, tensor<f32>, tensor<2x16x1xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$R, Residual_FloatTensor:$f,
                            Residual_FloatTensor:$alpha,
                            Residual_FloatTensor:$m,
                            DefaultValuedAttr<F64Attr, "1e-6">:$eps),
                       StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$R `,` $f `,` $alpha `,` $m (`eps` $eps^)? ", StreamAttrsFormat, " `:` type($result) `,` type($alpha) `,` type($m)");
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// residual.route
//===----------------------------------------------------------------------===//

def Residual_RouteOp : Residual_Op<"route", [Pure,
    AllTypesMatch<["m", "result"]>]> {
  let summary = "Mixture-of-Depths routing of a NAG modulator";
  let description = [{
    Sets the modulator `m` (from `residual.nag_gate`) to 0 for the rows that
    skip the sublayer, so `residual.nag_add` leaves them unchanged (and a
    lowering may skip their branch computation):

    * `threshold t`: rows with `m < t` skip. Causal: a row's decision
      depends on that row only.
    * `rate r`: within each sequence, the `floor(r * N)` rows with the
      smallest `m` among its `N` rows skip (ties: the earlier row skips),
      `0 <= r < 1`. A sequence is one index of the leading axis (`m` of rank
      3 or more, `[B, T, 1]` or `[B, 1, H, W]`); a rank-1 or rank-2 `m` has
      no sequence axis and its rows are ranked together. Not causal: whether
      a token skips depends on the later tokens of its sequence.

    `m` keeps its other values. Folds to `m` for `rate 0`. This is the
    masking form: the branch still runs on every row (and in attention a
    skipped token is still a key and value of the others). `residual-mod`
    in rate mode instead runs the branch on the routed rows only
    (`residual.route_select`).

    Example:
    ```mlir
    %m2 = residual.route %m rate 2.500000e-01 : tensor<2x16x1xf32>
    ```
  }];
  let arguments = (ins Residual_FloatTensor:$m, Residual_RouteMode:$mode,
                       F64Attr:$value);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = "$m $mode $value attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// residual.route_select
//===----------------------------------------------------------------------===//

def Residual_RouteSelectOp : Residual_Op<"route_select", [Pure]> {
  let summary = "Mixture-of-Depths: the rows of each sequence that run the sublayer";
  let description = [{
    The rows kept by `residual.route %m rate r` (same ranking, same ties),
    as indices: for `m : [B, T, 1]` the result `[B, K]` (`i64`), with
    `K = T - floor(r * T)`, lists for each sequence `b` the flat row indices
    `b * T + t` of its `K` kept tokens in increasing `t`. `nn.gather` of the
    stream flattened to `[B * T, d]` with these indices gives the routed rows
    `[B, K, d]` in their original order, so a sublayer run on them sees the
    routed tokens as its sequence (causal attention stays causal); the update
    goes back with `nn.scatter_add` (`residual-mod`). Not differentiable
    (integer result): the router trains through the gathered `m`.

    Example:
    ```mlir
    %idx = residual.route_select %m rate 2.500000e-01 : tensor<2x16x1xf32> -> tensor<2x12xi64>
    ```
  }];
  let arguments = (ins Residual_FloatTensor:$m, F64Attr:$rate);
  let results = (outs TensorOf<[I64]>:$indices);
  let assemblyFormat = "$m `rate` $rate attr-dict `:` type($m) `->` type($indices)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Rows kept per sequence of `t` rows at skip rate `rate`: t - floor(rate * t)
    /// (the one definition; residual.route's rate mode skips the others).
    static int64_t keptRows(int64_t t, double rate);
  }];
}

//===----------------------------------------------------------------------===//
// residual.tap
//===----------------------------------------------------------------------===//

def Residual_TapOp : Residual_StreamOp<"tap", [
    AllTypesMatch<["h", "result"]>]> {
  let summary = "marks a stream state as a readout point (LPA, early exit)";
  let description = [{
    Returns its operand unchanged and marks it as the state `h_l` after layer
    `layer` of the stream, where a shared readout head may be applied: LPA's
    per-depth losses, early exit, and `residual-truncate` ("train once, use N
    models") cut the network at taps. An optional `name` labels the readout.

    A tap is never folded away: removing it would lose the readout point.

    Example:
    ```mlir
    %h3 = residual.tap %h2 name "depth3" stream 0 layer 3 : tensor<2x16x64xf32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$h,
                            OptionalAttr<StrAttr>:$name), StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$h (`name` $name^)? ", StreamAttrsFormat, " `:` type($result)");
}

//===----------------------------------------------------------------------===//
// residual.value_mix
//===----------------------------------------------------------------------===//

def Residual_ValueMixOp : Residual_StreamOp<"value_mix", [
    AllTypesMatch<["v", "first", "result"]>]> {
  let summary = "value residual `lambda1 v_1 + lambda2 v` (ResFormer)";
  let description = [{
    Value Residual Learning (ResFormer, papers.md 6.4): the values `v` an
    attention layer multiplies its attention weights by are mixed with the
    first attention layer's values `first`: `lambda1 first + lambda2 v`.
    `lambda1`, `lambda2` are scalars (`tensor<T>` or `tensor<1xT>`): the
    constants 1/2 of the official code, or learned. `v` and `first` have one
    type (`[B, H, T, Dv]` in an exported transformer). `layer` is the
    update whose branch holds the attention.

    Example:
    ```mlir
    %v2 = residual.value_mix %v, %v1, %l1, %l2 stream 0 layer 2 : tensor<2x4x8x8xf32>, tensor<f32>, tensor<f32>
    ```
  }];
  let arguments = !con((ins Residual_FloatTensor:$v, Residual_FloatTensor:$first,
                            Residual_FloatTensor:$lambda1, Residual_FloatTensor:$lambda2),
                       StreamAttrs);
  let results = (outs Residual_FloatTensor:$result);
  let assemblyFormat = !strconcat("$v `,` $first `,` $lambda1 `,` $lambda2 ", StreamAttrsFormat,
                       " `:` type($result) `,` type($lambda1) `,` type($lambda2)");
}

include "dialects/residual/HyperOps.td"

#endif // REWIRE_RESIDUAL_OPS_TD
