"""Writes model.mlir: a tiny GPT-style (pre-LN) decoder in the nn dialect.

The residual adds are already raised into `residual.add` (stream 0, one layer
index per sublayer, branch and skip attributes), exactly the form
`residual-detect` produces on an imported model. Weights are named parameters (`ml_program.global`, values in
the parameter file), named like GPT-2's PyTorch state dict.

    python3 gen_model.py --layers 2 --d 64 --heads 4 --seq 16 --vocab 256 > model.mlir
"""
import argparse


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--vocab", type=int, default=256)
    a = p.parse_args()
    d, H, T, B, V = a.d, a.heads, a.seq, a.batch, a.vocab
    dh = d // H
    f32 = lambda *s: "tensor<%sxf32>" % "x".join(map(str, s))
    params = []

    def param(name, *shape):
        params.append((name, f32(*shape)))
        return name

    lines = []
    n = [0]

    def emit(rhs):
        n[0] += 1
        v = "%%v%d" % n[0]
        lines.append("    %s = %s" % (v, rhs))
        return v

    def load(name, *shape):
        param(name, *shape)
        return emit('ml_program.global_load_const @"%s" : %s' % (name, f32(*shape)))

    x = f32(B, T, d)
    wte = load("wte.weight", V, d)
    wpe = load("wpe.weight", T, d)
    tok = emit("nn.gather %s, %%ids : (%s, tensor<%dx%dxi64>) -> %s" % (wte, f32(V, d), B, T, x))
    h = emit("nn.add %s, %s : (%s, %s) -> %s" % (tok, wpe, x, f32(T, d), x))
    layer = 0
    for i in range(a.layers):
        pre = "h.%d." % i
        g = load(pre + "ln_1.weight", d)
        b = load(pre + "ln_1.bias", d)
        ln = emit("nn.layer_norm %s, %s, %s : %s, %s, %s" % (h, g, b, x, f32(d), f32(d)))
        w = load(pre + "attn.c_attn.weight", d, 3 * d)
        bb = load(pre + "attn.c_attn.bias", 3 * d)
        qkv = emit("nn.matmul %s, %s : (%s, %s) -> %s" % (ln, w, x, f32(d, 3 * d), f32(B, T, 3 * d)))
        qkv = emit("nn.add %s, %s : (%s, %s) -> %s" % (qkv, bb, f32(B, T, 3 * d), f32(3 * d), f32(B, T, 3 * d)))
        n[0] += 1
        split = "%%v%d" % n[0]
        lines.append("    %s:3 = nn.split %s {axis = -1 : i64, sizes = array<i64: %d, %d, %d>} : (%s) -> (%s, %s, %s)"
                     % (split, qkv, d, d, d, f32(B, T, 3 * d), x, x, x))
        heads = []
        for j in range(3):
            r = emit("nn.reshape %s#%d : %s -> %s" % (split, j, x, f32(B, T, H, dh)))
            heads.append(emit("nn.transpose %s {perm = array<i64: 0, 2, 1, 3>} : (%s) -> %s"
                              % (r, f32(B, T, H, dh), f32(B, H, T, dh))))
        att = emit("nn.attention %s, %s, %s {causal} : (%s, %s, %s) -> %s"
                   % (heads[0], heads[1], heads[2], f32(B, H, T, dh), f32(B, H, T, dh),
                      f32(B, H, T, dh), f32(B, H, T, dh)))
        att = emit("nn.transpose %s {perm = array<i64: 0, 2, 1, 3>} : (%s) -> %s"
                   % (att, f32(B, H, T, dh), f32(B, T, H, dh)))
        att = emit("nn.reshape %s : %s -> %s" % (att, f32(B, T, H, dh), x))
        w = load(pre + "attn.c_proj.weight", d, d)
        bb = load(pre + "attn.c_proj.bias", d)
        u = emit("nn.matmul %s, %s : (%s, %s) -> %s" % (att, w, x, f32(d, d), x))
        u = emit("nn.add %s, %s : (%s, %s) -> %s" % (u, bb, x, f32(d), x))
        h = emit('residual.add %s, %s stream 0 layer %d {residual.branch = "attention", residual.skip = "identity"} : %s' % (h, u, layer, x))
        layer += 1
        g = load(pre + "ln_2.weight", d)
        b = load(pre + "ln_2.bias", d)
        ln = emit("nn.layer_norm %s, %s, %s : %s, %s, %s" % (h, g, b, x, f32(d), f32(d)))
        w = load(pre + "mlp.c_fc.weight", d, 4 * d)
        bb = load(pre + "mlp.c_fc.bias", 4 * d)
        m = emit("nn.matmul %s, %s : (%s, %s) -> %s" % (ln, w, x, f32(d, 4 * d), f32(B, T, 4 * d)))
        m = emit("nn.add %s, %s : (%s, %s) -> %s" % (m, bb, f32(B, T, 4 * d), f32(4 * d), f32(B, T, 4 * d)))
        m = emit("nn.gelu %s approximate tanh : %s" % (m, f32(B, T, 4 * d)))
        w = load(pre + "mlp.c_proj.weight", 4 * d, d)
        bb = load(pre + "mlp.c_proj.bias", d)
        m = emit("nn.matmul %s, %s : (%s, %s) -> %s" % (m, w, f32(B, T, 4 * d), f32(4 * d, d), x))
        m = emit("nn.add %s, %s : (%s, %s) -> %s" % (m, bb, x, f32(d), x))
        h = emit('residual.add %s, %s stream 0 layer %d {residual.branch = "mlp", residual.skip = "identity"} : %s' % (h, m, layer, x))
        layer += 1
    g = load("ln_f.weight", d)
    b = load("ln_f.bias", d)
    ln = emit("nn.layer_norm %s, %s, %s : %s, %s, %s" % (h, g, b, x, f32(d), f32(d)))
    wt = emit("nn.transpose %s : (%s) -> %s" % (wte, f32(V, d), f32(d, V)))
    logits = emit("nn.matmul %s, %s : (%s, %s) -> %s" % (ln, wt, x, f32(d, V), f32(B, T, V)))

    print("// A tiny GPT-style decoder (%d layers, d=%d, %d heads, T=%d, vocab %d)." % (a.layers, d, H, T, V))
    print("// Generated by examples/tiny-gpt/gen_model.py; parameters live in tiny-gpt.safetensors.")
    print('module attributes {nn.parameter_file = "tiny-gpt.safetensors"} {')
    for name, t in params:
        if name == "wte.weight" and params.index((name, t)) != 0:
            continue
        print('  ml_program.global private @"%s"(#ml_program.extern : %s) : %s' % (name, t, t))
    print("  func.func @forward(%%ids: tensor<%dx%dxi64>) -> %s {" % (B, T, f32(B, T, V)))
    print("\n".join(lines))
    print("    return %s : %s" % (logits, f32(B, T, V)))
    print("  }")
    print("}")


if __name__ == "__main__":
    main()
