"""Exports small real models from PyTorch (Debian's python3-torch 1.13,
random weights, fixed seed) for import tests:

    torch_models.py NAME OUT.onnx [--opset N]

NAME: gpt (pre-LN GPT-2-style decoder), bert (post-LN encoder), llama
(RMSNorm + SwiGLU decoder), gptj (parallel attention + MLP), vit (patch conv,
learned positions, pre-LN blocks), mixer (MLP-Mixer), resnet18 (torchvision),
unet (concatenation skips), embed_sum (same-shape token + position embedding
add, which is not residual). Static shapes, eval mode.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

D, H, T, B, V = 32, 4, 8, 2, 64


class Attention(nn.Module):
    def __init__(self, bias=True, causal=True):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D, bias=bias)
        self.proj = nn.Linear(D, D, bias=bias)
        self.causal = causal
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, x):
        q, k, v = self.qkv(x).split(D, dim=-1)
        q, k, v = [t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v)]
        s = q @ k.transpose(-2, -1) / math.sqrt(D // H)
        if self.causal:
            s = torch.where(self.mask, s, torch.tensor(float("-inf")))
        y = F.softmax(s, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, D))


class GPTBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(D), Attention()
        self.ln_2 = nn.LayerNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(approximate="tanh"), nn.Linear(4 * D, D))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
        self.h = nn.ModuleList(GPTBlock() for _ in range(layers))
        self.ln_f = nn.LayerNorm(D)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(T, device=ids.device))
        for blk in self.h:
            x = blk(x)
        return self.ln_f(x) @ self.wte.weight.t()


class BertLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn, self.ln_1 = Attention(causal=False), nn.LayerNorm(D)
        self.mlp, self.ln_2 = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D)), nn.LayerNorm(D)

    def forward(self, x):
        x = self.ln_1(x + self.attn(x))
        return self.ln_2(x + self.mlp(x))


class Bert(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        self.emb, self.pos, self.ln = nn.Embedding(V, D), nn.Embedding(T, D), nn.LayerNorm(D)
        self.layers = nn.ModuleList(BertLayer() for _ in range(layers))

    def forward(self, ids):
        x = self.ln(self.emb(ids) + self.pos(torch.arange(T)))
        for l in self.layers:
            x = l(x)
        return x


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(D))

    def forward(self, x):
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class LlamaBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm, self.self_attn = RMSNorm(), Attention(bias=False)
        self.post_attention_layernorm = RMSNorm()
        self.gate = nn.Linear(D, 2 * D, bias=False)
        self.up = nn.Linear(D, 2 * D, bias=False)
        self.down = nn.Linear(2 * D, D, bias=False)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        y = self.post_attention_layernorm(x)
        g = self.gate(y)
        return x + self.down(g * torch.sigmoid(g) * self.up(y))


class Llama(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.layers = nn.ModuleList(LlamaBlock() for _ in range(layers))
        self.norm, self.lm_head = RMSNorm(), nn.Linear(D, V, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for l in self.layers:
            x = l(x)
        return self.lm_head(self.norm(x))


class GPTJBlock(nn.Module):
    """Parallel attention and MLP from one LayerNorm (GPT-J, PaLM)."""
    def __init__(self):
        super().__init__()
        self.ln, self.attn = nn.LayerNorm(D), Attention()
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x):
        y = self.ln(x)
        return x + self.attn(y) + self.mlp(y)


class GPTJ(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.h = nn.ModuleList(GPTJBlock() for _ in range(layers))
        self.ln_f = nn.LayerNorm(D)

    def forward(self, ids):
        x = self.wte(ids)
        for blk in self.h:
            x = blk(x)
        return self.ln_f(x)


class ViT(nn.Module):
    """Patch embedding (conv), learned positions, pre-LN encoder blocks."""
    def __init__(self, layers=2):
        super().__init__()
        self.patch = nn.Conv2d(3, D, 4, stride=4)  # 16x16 -> 4x4 = 16 tokens
        self.pos = nn.Parameter(0.02 * torch.randn(1, 16, D))
        self.blocks = nn.ModuleList(BertLayerPre() for _ in range(layers))
        self.head = nn.Linear(D, 10)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean(1))


class BertLayerPre(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

    def forward(self, x):
        y = self.ln_1(x)
        q, k, v = self.qkv(y).chunk(3, dim=-1)
        a = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(D), dim=-1) @ v
        x = x + self.proj(a)
        return x + self.mlp(self.ln_2(x))


class Mixer(nn.Module):
    """MLP-Mixer: token mixing across patches, channel mixing across features."""
    def __init__(self, layers=2, tokens=16):
        super().__init__()
        self.patch = nn.Conv2d(3, D, 4, stride=4)
        self.layers = nn.ModuleList(nn.ModuleDict(dict(
            ln1=nn.LayerNorm(D), tok=nn.Sequential(nn.Linear(tokens, 32), nn.GELU(), nn.Linear(32, tokens)),
            ln2=nn.LayerNorm(D), ch=nn.Sequential(nn.Linear(D, 64), nn.GELU(), nn.Linear(64, D))))
            for _ in range(layers))

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        for l in self.layers:
            x = x + l["tok"](l["ln1"](x).transpose(1, 2)).transpose(1, 2)
            x = x + l["ch"](l["ln2"](x))
        return x


class EmbedSum(nn.Module):
    """Token + position embeddings of one shape (no residual connection), then
    one pre-LN MLP block (one)."""
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, D), nn.Embedding(T, D)
        self.ln, self.fc = nn.LayerNorm(D), nn.Linear(D, D)

    def forward(self, ids, positions):
        x = self.tok(ids) + self.pos(positions)
        return x + self.fc(self.ln(x))


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        c = lambda i, o: nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.ReLU())
        self.d1, self.d2, self.mid = c(3, 8), c(8, 16), c(16, 16)
        self.up = nn.Upsample(scale_factor=2) if False else None
        self.u2, self.u1 = c(32, 8), c(16, 8)
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(a)
        m = self.mid(b)
        y = self.u2(torch.cat([m, b], dim=1))
        return self.out(self.u1(torch.cat([y, a], dim=1)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("out")
    p.add_argument("--opset", type=int, default=17)
    a = p.parse_args()
    torch.manual_seed(0)
    if a.name == "resnet18":
        import torchvision
        m, x = torchvision.models.resnet18(num_classes=10), torch.randn(1, 3, 64, 64)
    elif a.name == "unet":
        m, x = UNet(), torch.randn(1, 3, 16, 16)
    elif a.name in ("vit", "mixer"):
        m, x = (ViT() if a.name == "vit" else Mixer()), torch.randn(1, 3, 16, 16)
    elif a.name == "embed_sum":
        m, x = EmbedSum(), (torch.randint(0, V, (B, T)), torch.arange(T).repeat(B, 1))
    else:
        m = {"gpt": GPT, "bert": Bert, "llama": Llama, "gptj": GPTJ}[a.name]()
        x = torch.randint(0, V, (B, T))
    m.eval()
    names = ["input", "positions"] if a.name == "embed_sum" else ["input"]
    torch.onnx.export(m, x, a.out, opset_version=a.opset, input_names=names,
                      output_names=["output"])


if __name__ == "__main__":
    main()
