"""PyTorch definitions of the experiments' models, exported to ONNX for
Rewire: a residual MLP (pre-LN blocks) for regression and a character-level
GPT (pre-LN, causal attention written out so it exports as plain ops)."""
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F


class ResMLP(nn.Module):
    """in -> Linear -> `blocks` x (h + MLP(LN(h))) -> LN -> Linear -> out."""

    def __init__(self, blocks=8, d=32, d_in=2, d_out=1):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(blocks))
        self.fc1 = nn.ModuleList(nn.Linear(d, 2 * d) for _ in range(blocks))
        self.fc2 = nn.ModuleList(nn.Linear(2 * d, d) for _ in range(blocks))
        self.norm, self.out = nn.LayerNorm(d), nn.Linear(d, d_out)

    def forward(self, x):
        h = self.inp(x)
        for ln, f1, f2 in zip(self.ln, self.fc1, self.fc2):
            h = h + f2(F.gelu(f1(ln(h))))
        return self.out(self.norm(h))


class Attention(nn.Module):
    def __init__(self, d, heads, t, b):
        super().__init__()
        self.d, self.heads, self.t, self.b = d, heads, t, b
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(t, t, dtype=torch.bool)))

    def forward(self, x):
        d, hd = self.d, self.d // self.heads
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = [z.view(self.b, self.t, self.heads, hd).transpose(1, 2) for z in (q, k, v)]
        s = q @ k.transpose(-2, -1) / math.sqrt(hd)
        s = torch.where(self.mask, s, torch.tensor(float("-inf")))
        y = F.softmax(s, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(self.b, self.t, d))


class Block(nn.Module):
    def __init__(self, d, heads, t, b):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(d), Attention(d, heads, t, b)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class CharGPT(nn.Module):
    """Byte-level GPT: vocabulary 256, `layers` pre-LN blocks, GPT-2 init
    (residual projections scaled by 1/sqrt(2 layers))."""

    def __init__(self, layers=4, d=64, heads=4, t=64, b=8, vocab=256):
        super().__init__()
        self.t = t
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(t, d)
        self.h = nn.ModuleList(Block(d, heads, t, b) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "mlp.2.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(self.t))
        for blk in self.h:
            x = blk(x)
        return self.head(self.ln_f(x))


def export(model, example, path):
    warnings.filterwarnings("ignore")
    model.eval()
    torch.onnx.export(model, example, path, opset_version=17, input_names=["x"],
                      output_names=["y"])
    return path
