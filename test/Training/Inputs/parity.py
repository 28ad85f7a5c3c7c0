"""Training parity with PyTorch: a residual MLP (LayerNorm, Linear, GELU,
residual add, head) exported from PyTorch, trained by rewire-train (the
train step compiled from IR: loss, reverse-mode gradients, optimizer) and by
a PyTorch loop from the same initial weights on the same batches. Per-step
losses (logged before each update, as PyTorch loops log them) must agree:
1e-4 relative for SGD with momentum, 1e-3 for AdamW. Then resume: 10 steps
with checkpoints, resumed to 20, must reproduce the uninterrupted run's
losses bit for bit.

    parity.py WORKDIR
"""
import csv
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

def _finite(v):
    """A NaN error counts as infinitely wrong (max() would skip it)."""
    return v if v == v else float("inf")

B, D, H, O, N, STEPS = 8, 8, 16, 4, 64, 20


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.fc1, self.fc2, self.head = nn.Linear(D, H), nn.Linear(H, D), nn.Linear(D, O)

    def forward(self, x):
        h = x + self.fc2(F.gelu(self.fc1(self.ln(x))))
        return self.head(h)


def train_steps(opt, loss_at, clip=None):
    """STEPS updates of `opt`; `loss_at(step)` is the step's loss; `clip`
    = (parameters, max norm) clips the gradients first. Returns the losses
    before each update (as rewire-train logs them)."""
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = loss_at(step)
        losses.append(loss.item())
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(*clip)
        opt.step()
    return losses


def batch_rows(step):
    return [(step * B + i) % N for i in range(B)]


def torch_losses(net, x, y, opt, clip=0.0):
    return train_steps(opt, lambda step: F.mse_loss(net(x[batch_rows(step)]), y[batch_rows(step)]),
                       clip=(list(net.parameters()), clip) if clip else None)


def rewire_losses(work, model, tag, extra):
    metrics = os.path.join(work, tag + ".csv")
    r = subprocess.run(["rewire-train", model, "--inputs=" + os.path.join(work, "x.npy"),
                        "--targets=" + os.path.join(work, "y.npy"), "--steps=%d" % STEPS,
                        "--metrics=" + metrics, "--log-every=0"] + extra,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL rewire-train (%s): %s" % (tag, r.stderr[-1500:]))
    with open(metrics) as f:
        return [float(row["loss"]) for row in csv.DictReader(f)]


def compare(name, got, want, rtol):
    err = max(_finite(abs(g - w) / max(abs(w), 1e-12)) for g, w in zip(got, want))
    ok = len(got) == len(want) == STEPS and err <= rtol
    print("%s %s: %d steps, loss %.5f -> %.5f (PyTorch %.5f -> %.5f), max rel diff %.1e" % (
        "ok  " if ok else "FAIL", name, len(got), got[0], got[-1], want[0], want[-1], err))
    return ok


def perturbed(state, seed):
    """`state` with every float tensor moved by a relative 1e-6 (about ten
    times the rounding a different CPU's kernels introduce)."""
    g = torch.Generator().manual_seed(seed)
    return {k: v + 1e-6 * v.abs() * torch.randn(v.shape, generator=g) if v.is_floating_point()
            else v.clone() for k, v in state.items()}


def conditioned(name, losses_from, init, want, rtol):
    """Why a 20-step trajectory comparison is robust on any x86-64 CPU: the
    trajectory from weights perturbed by 1e-6 must stay within rtol/10 of
    the unperturbed one, i.e. the run is well-conditioned (no ReLU or
    max-pool near-ties whose branch flips), so rounding differences of ~1e-7
    between machines cannot reach the tolerance."""
    moved = losses_from(perturbed(init, 7))
    err = max(_finite(abs(a - b) / max(abs(b), 1e-12)) for a, b in zip(moved, want))
    ok = err <= rtol / 10
    print("%s %s: a 1e-6 weight perturbation moves the losses by %.1e (<= %.0e)" % (
        "ok  " if ok else "FAIL", name, err, rtol / 10))
    return ok


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    net = Net()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D)).astype(np.float32)
    y = (np.tanh(x @ rng.standard_normal((D, O))) + 0.1 * rng.standard_normal((N, O))).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "y.npy"), y)
    model = os.path.join(work, "net.onnx")
    torch.onnx.export(net, torch.from_numpy(x[:B]), model, opset_version=17, input_names=["x"],
                      output_names=["y"])
    init = {k: v.clone() for k, v in net.state_dict().items()}
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    ok = True

    for tag, name, make, clip, flags, rtol in (
            ("sgd", "SGD (momentum 0.9)", lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
             0.0, ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"], 1e-4),
            ("clip", "SGD with gradient clipping (global norm 0.25)",
             lambda ps: torch.optim.SGD(ps, lr=0.1), 0.25,
             ["--optimizer=sgd", "--lr=0.1", "--clip=0.25"], 1e-4),
            ("adamw", "AdamW (weight decay 0.01)",
             lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.01), 0.0,
             ["--optimizer=adamw", "--lr=0.01", "--weight-decay=0.01"], 1e-3)):
        def losses_from(state, make=make, clip=clip):
            net.load_state_dict(state)
            return torch_losses(net, xt, yt, make(net.parameters()), clip=clip)
        want = losses_from(init)
        got = rewire_losses(work, model, tag, flags)
        ok &= compare(name, got, want, rtol)
        ok &= conditioned(name, losses_from, init, want, rtol)

    # Resume: stop at 10 (checkpoint every 5), resume to 20: the same bits.
    ck = os.path.join(work, "ckpt")
    base = ["--optimizer=adamw", "--lr=0.01", "--weight-decay=0.01", "--checkpoint=" + ck,
            "--checkpoint-every=5"]
    full = rewire_losses(work, model, "full", base + ["--checkpoint=" + ck + "-full"])
    first = subprocess.run(["rewire-train", model, "--inputs=" + os.path.join(work, "x.npy"),
                            "--targets=" + os.path.join(work, "y.npy"), "--steps=10",
                            "--metrics=" + os.path.join(work, "part.csv"), "--log-every=0"] + base,
                           capture_output=True, text=True)
    if first.returncode != 0:
        raise SystemExit("FAIL first half: " + first.stderr[-800:])
    # As if killed after its last checkpoint: steps 10-12 logged, not saved.
    with open(os.path.join(work, "part.csv"), "a") as f:
        f.write("10,999,0.01\n11,999,0.01\n12,999,0.01\n")
    resumed = rewire_losses(work, model, "part", base + ["--resume"])
    same = resumed == full
    print("%s resume at step 10 reproduces the uninterrupted run: %s" % (
        "ok  " if same else "FAIL", "bit-identical losses" if same else "differs"))
    ok &= same
    # --stop-after: stop at step 7 (the cosine schedule still spans 20), resume: the same bits.
    ck2 = os.path.join(work, "ckpt-stop")
    sched = ["--optimizer=adamw", "--lr=0.01", "--schedule=cosine", "--warmup=3", "--checkpoint=" + ck2]
    whole = rewire_losses(work, model, "sched-full", sched[:-1])
    rewire_losses_partial = subprocess.run(
        ["rewire-train", model, "--inputs=" + os.path.join(work, "x.npy"), "--targets=" + os.path.join(work, "y.npy"),
         "--steps=%d" % STEPS, "--stop-after=7", "--metrics=" + os.path.join(work, "sched-part.csv"),
         "--log-every=0"] + sched, capture_output=True, text=True)
    if rewire_losses_partial.returncode != 0:
        raise SystemExit("FAIL --stop-after: " + rewire_losses_partial.stderr[-800:])
    parted = rewire_losses(work, model, "sched-part", sched + ["--resume"])
    same = parted == whole
    print("%s --stop-after=7 then --resume reproduces the uninterrupted cosine run: %s" % (
        "ok  " if same else "FAIL", "bit-identical losses" if same else "differs"))
    ok &= same
    ok &= grad_norm_check(work, model, net, init, xt, yt)
    ok &= export_check(work, model)
    ok &= gpt_parity(work)
    sys.exit(0 if ok else 1)


def grad_norm_check(work, model, net, init, xt, yt):
    """--grad-norms: each parameter's gradient norm at step 0 in the JSONL
    equals PyTorch's."""
    import json
    net.load_state_dict(init)
    net.zero_grad(set_to_none=True)  # earlier runs left gradients behind
    loss = F.mse_loss(net(xt[:B]), yt[:B])
    loss.backward()
    want = {k: float(v.grad.norm()) for k, v in net.named_parameters()}
    jsonl = os.path.join(work, "norms.jsonl")
    r = subprocess.run(["rewire-train", model, "--inputs=" + os.path.join(work, "x.npy"),
                        "--targets=" + os.path.join(work, "y.npy"), "--steps=1", "--grad-norms",
                        "--jsonl=" + jsonl, "--log-every=0"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL --grad-norms: " + r.stderr[-800:])
    got = json.loads(open(jsonl).readline())["grad_norms"]
    err = max(_finite(abs(got[k] - w) / max(w, 1e-12)) for k, w in want.items())
    ok = sorted(got) == sorted(want) and err <= 1e-5
    print("%s --grad-norms: %d parameters' gradient norms at step 0 match PyTorch, max rel diff %.1e" % (
        "ok  " if ok else "FAIL", len(got), err))
    return ok


def export_check(work, model):
    """Train a rewritten model (Review gates, identity init), export it to
    ONNX with the trained weights, and check ONNX Runtime computes what the
    Rewire artifact computes with those weights."""
    trained = os.path.join(work, "trained.safetensors")
    exported = os.path.join(work, "trained.onnx")
    r = subprocess.run(["rewire-train", model, "--inputs=" + os.path.join(work, "x.npy"),
                        "--targets=" + os.path.join(work, "y.npy"), "--steps=10", "--optimizer=adamw",
                        "--lr=0.01", "--residual=review:init=identity", "--log-every=0",
                        "--output=" + trained, "--export=" + exported], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL export: " + r.stderr[-800:])
    rwx = os.path.join(work, "review.rwx")
    subprocess.run(["rewire-compile", model, "--residual=review:init=identity", "-o", rwx], check=True)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
    import onnxruntime as ort
    import rewire_runtime
    x = np.load(os.path.join(work, "x.npy"))[:B]
    (got,) = rewire_runtime.Model(rwx, trained).run("forward", x)
    sess = ort.InferenceSession(exported, providers=["CPUExecutionProvider"])
    want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    err = float(np.abs(got - want).max())
    ok = err <= 1e-5
    print("%s exported trained model (review gates) in ONNX Runtime = Rewire with the trained "
          "weights: max abs diff %.1e" % ("ok  " if ok else "FAIL", err))
    return ok


def gpt_parity(work):
    """The GPT-style decoder of test/Import/Inputs/torch_models.py (causal
    attention, LayerNorm, GELU, tied-free head, embeddings trained through
    nn.scatter_add) on a token stream, cross-entropy, AdamW, 20 steps."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Import", "Inputs"))
    import torch_models as tm
    class UntiedGPT(tm.GPT):
        # torch.onnx.export folds the tied head (wte.weight.t()) into a new
        # initializer, so the exported model trains head and table apart;
        # the reference does the same with an explicit head.
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(tm.D, tm.V, bias=False)

        def forward(self, ids):
            x = self.wte(ids) + self.wpe(torch.arange(tm.T))
            for blk in self.h:
                x = blk(x)
            return self.head(self.ln_f(x))

    torch.manual_seed(1)
    gpt = UntiedGPT().eval()  # no dropout in the model; eval only fixes export
    # Fresh LayerNorms are all ones and zeros: torch.onnx.export stores them
    # once and aliases the rest with Identity nodes, which the importer
    # turns back into separate parameters (trained apart, as in PyTorch).
    rng = np.random.default_rng(1)
    stream = rng.integers(0, tm.V, 2000).astype(np.uint16)
    data = os.path.join(work, "tokens.bin")
    stream.tofile(data)
    model = os.path.join(work, "gpt.onnx")
    torch.onnx.export(gpt, torch.zeros(tm.B, tm.T, dtype=torch.long), model, opset_version=17,
                      input_names=["input"], output_names=["output"])
    toks = torch.from_numpy(stream.astype(np.int64))
    windows = (len(stream) - 1) // tm.T
    init = {k: v.clone() for k, v in gpt.state_dict().items()}
    ok = True
    for tag, make, flags, rtol in (
            ("SGD (momentum 0.9)", lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
             ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"], 1e-4),
            ("AdamW", lambda ps: torch.optim.AdamW(ps, lr=3e-3, weight_decay=0.01),
             ["--optimizer=adamw", "--lr=3e-3", "--weight-decay=0.01"], 1e-3)):
        def loss_at(step):
            rows = [(step * tm.B + i) % windows for i in range(tm.B)]
            ids = torch.stack([toks[w * tm.T:(w + 1) * tm.T] for w in rows])
            tgt = torch.stack([toks[w * tm.T + 1:(w + 1) * tm.T + 1] for w in rows])
            return F.cross_entropy(gpt(ids).reshape(-1, tm.V), tgt.reshape(-1))

        def losses_from(state, make=make):
            gpt.load_state_dict(state)
            return train_steps(make(gpt.parameters()), loss_at)
        want = losses_from(init)
        metrics = os.path.join(work, "gpt.csv")
        r = subprocess.run(["rewire-train", model, "--data=" + data, "--steps=%d" % STEPS,
                            "--metrics=" + metrics, "--log-every=0"] + flags, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("FAIL rewire-train (gpt): " + r.stderr[-1500:])
        with open(metrics) as f:
            got = [float(row["loss"]) for row in csv.DictReader(f)]
        ok &= compare("GPT decoder, cross-entropy, %s (embeddings trained)" % tag, got, want, rtol)
        ok &= conditioned("GPT decoder, %s" % tag, losses_from, init, want, rtol)
    return ok


if __name__ == "__main__":
    main()
