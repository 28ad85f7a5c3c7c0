"""Training throughput: Rewire's compiled train step (rewire-train: loss,
reverse-mode gradients and AdamW compiled from IR) against a PyTorch eager
loop on the same CPU, the same GPT-style decoder (pre-LN, GELU, causal
attention, untied head), the same token batches, in one run.

    build/venv/bin/python bench/train_step.py [--layers 4] [--d 256] [--seq 128]
                                              [--batch 4] [--steps 30] [--rounds 3]
                                              [--out r.json]

Prints tokens per second of each (the compile time of the train step is
reported apart: rewire-train compiles once and caches), each timed after
WARMUP_STEPS untimed steps in its own process.
"""
import argparse
import inspect
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Block(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.h = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(d, dim=-1)
        q, k, v = [z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v)]
        s = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)
        s = torch.where(self.mask, s, torch.tensor(float("-inf")))
        x = x + self.proj((F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, layers, d, heads, seq):
        super().__init__()
        self.seq = seq
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, seq) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(self.seq))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def cpu_model():
    """The CPU's model name, family and model (python/rewire_sysinfo.py)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import rewire_sysinfo
    return rewire_sysinfo.cpu_model()


def torchscript_export(*args, **kwargs):
    """torch.onnx.export with the TorchScript exporter (PyTorch >= 2.5
    defaults to dynamo, which needs onnxscript): the same ONNX on 1.13 and 2.x."""
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    torch.onnx.export(*args, **kwargs)


def add_model_args(ap, steps):
    """The benchmark GPT's shape options (shared with form_train_overhead.py)."""
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--steps", type=int, default=steps)


def export_gpt(a, work):
    """The benchmark GPT (seed 0) exported to WORK/gpt.onnx, and random tokens
    for a.steps + 2 batches in WORK/tokens.bin: (model, onnx path, tokens,
    token file)."""
    torch.manual_seed(0)
    model = GPT(a.vocab, a.layers, a.d, a.heads, a.seq)
    onnx_path = os.path.join(work, "gpt.onnx")
    torchscript_export(model.eval(), torch.zeros(a.batch, a.seq, dtype=torch.long), onnx_path,
                      opset_version=17, input_names=["input"], output_names=["logits"])
    tokens = np.random.default_rng(0).integers(0, a.vocab, a.batch * a.seq * (a.steps + 2) + 1)
    data = os.path.join(work, "tokens.bin")
    tokens.astype(np.uint16).tofile(data)
    return model, onnx_path, tokens, data


# Steps each trainer runs in its process before the timed ones: torch.compile
# compiles in its first two (eager warms up in one); Rewire's first steps in
# a fresh rewire-train process JIT oneDNN's kernels for each GEMM shape and
# fault in the temporaries (201 and 119 ms against ~88 ms after, on a Zen 3).
WARMUP_STEPS = 2


def rewire_tokens_per_s(cmd, steps, tokens_per_step, env, work, median=False):
    """rewire-train's steps per second after WARMUP_STEPS untimed ones in the
    same process, as the PyTorch trainers are timed: the sum of the timed
    steps' step_ms from its JSONL (median=True: from their median step, which
    a shared VM's stalls move less)."""
    jsonl = os.path.join(work, "timing.jsonl")
    subprocess.run(cmd + ["--steps=%d" % (steps + WARMUP_STEPS), "--log-every=0",
                          "--jsonl=" + jsonl], check=True, env=env, capture_output=True)
    rows = [json.loads(line) for line in open(jsonl)]
    timed = [r["step_ms"] for r in rows if "step_ms" in r][WARMUP_STEPS:]
    if len(timed) != steps:
        raise SystemExit("rewire-train wrote %d timed steps, expected %d" % (len(timed), steps))
    if median:
        return tokens_per_step / (statistics.median(timed) / 1e3)
    return tokens_per_step * steps / (sum(timed) / 1e3)


def main():
    ap = argparse.ArgumentParser()
    add_model_args(ap, steps=30)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out")
    ap.add_argument("--no-torch-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--rounds", type=int, default=3, help="round-robin rounds (medians)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    work = tempfile.mkdtemp(prefix="rewire-train-bench-")
    model, onnx_path, tokens, data = export_gpt(a, work)

    env = dict(os.environ, REWIRE_CACHE_DIR=os.path.join(work, "cache"), OMP_NUM_THREADS=str(a.threads))
    cmd = [os.path.join(ROOT, "build", "bin", "rewire-train"), onnx_path, "--data=" + data,
           "--optimizer=adamw", "--lr=1e-3"]
    t0 = time.perf_counter()
    subprocess.run(cmd + ["--steps=1", "--log-every=0"], check=True, env=env)
    compile_s = time.perf_counter() - t0
    def rewire_run():
        return rewire_tokens_per_s(cmd, a.steps, a.batch * a.seq, env, work)

    toks = torch.from_numpy(tokens.astype(np.int64))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()

    def step(k, net):
        w = [k * a.batch + i for i in range(a.batch)]
        ids = torch.stack([toks[j * a.seq:(j + 1) * a.seq] for j in w])
        tgt = torch.stack([toks[j * a.seq + 1:(j + 1) * a.seq + 1] for j in w])
        opt.zero_grad()
        loss = F.cross_entropy(net(ids).reshape(-1, a.vocab), tgt.reshape(-1))
        loss.backward()
        opt.step()

    def tokens_per_s(net):
        t0 = time.perf_counter()
        for k in range(a.steps):
            step(k, net)
        return a.batch * a.seq * a.steps / (time.perf_counter() - t0)

    for k in range(WARMUP_STEPS):
        step(k, model)
    # torch.compile (PyTorch 2.x): forward and backward through Inductor;
    # the first steps compile (timed apart).
    compiled = compiled_s = None
    if hasattr(torch, "compile") and not a.no_torch_compile:
        compiled = torch.compile(model)
        t0 = time.perf_counter()
        step(0, compiled)
        step(1, compiled)
        compiled_s = time.perf_counter() - t0
    # Round-robin: each round times every trainer once, so a slow spell of
    # the machine hits them alike; medians over the rounds, and the ratio of
    # each round.
    runs = {"rewire": [], "eager": [], "compile": []}
    for _ in range(a.rounds):
        runs["rewire"].append(rewire_run())
        runs["eager"].append(tokens_per_s(model))
        if compiled is not None:
            runs["compile"].append(tokens_per_s(compiled))
    rewire_tps = statistics.median(runs["rewire"])
    torch_tps = statistics.median(runs["eager"])
    compiled_tps = statistics.median(runs["compile"]) if runs["compile"] else None
    per_round = [r / c for r, c in zip(runs["rewire"], runs["compile"] or runs["eager"])]

    print("GPT-style decoder: %d layers, d=%d, %d heads, batch %d x %d tokens, vocab %d, AdamW, %d threads"
          % (a.layers, a.d, a.heads, a.batch, a.seq, a.vocab, a.threads))
    print("%-32s %12s" % ("trainer", "tokens/s"))
    print("%-32s %12.0f" % ("Rewire (compiled train step)", rewire_tps))
    print("%-32s %12.0f" % ("PyTorch %s eager" % torch.__version__, torch_tps))
    if compiled_tps:
        print("%-32s %12.0f   (compile %.1f s)" % ("torch.compile %s" % torch.__version__,
                                                 compiled_tps, compiled_s))
    print("ratio Rewire / PyTorch eager: %.2fx%s; Rewire's train-step compile: %.1f s (cached after)" % (
        rewire_tps / torch_tps, ", / torch.compile: %.2fx" % (rewire_tps / compiled_tps)
        if compiled_tps else "", compile_s))
    print("medians of %d rounds; Rewire / %s per round: %s" % (
        a.rounds, "torch.compile" if compiled_tps else "eager",
        " ".join("%.2f" % x for x in per_round)))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": cpu_model(),
                       "layers": a.layers, "d": a.d, "seq": a.seq, "batch": a.batch, "vocab": a.vocab,
                       "rewire_tokens_per_s": rewire_tps, "torch": torch.__version__,
                       "torch_tokens_per_s": torch_tps, "torch_compile_tokens_per_s": compiled_tps,
                       "torch_compile_s": compiled_s, "rounds": runs,
                       "compile_s": compile_s}, f, indent=1)


if __name__ == "__main__":
    main()
