"""Training parity with PyTorch for a small ResNet: stem convolution, batch
normalization in training mode (batch statistics; running statistics
updated), max pooling, two basic blocks (one strided, with a 1x1 projection
shortcut), global average pooling, a linear classifier, cross-entropy on
class labels. Exported from PyTorch in train mode (BatchNormalization
training_mode=1).

Robust by construction (any x86-64 CPU, any BLAS): the main comparison runs
Rewire's compiled train_step (through the runtime's Python bindings) from
PyTorch's exact state before every step -- weights, running statistics,
momentum or Adam moments -- so no step inherits the other side's rounding.
Per step: the loss (1e-5 relative), every parameter's update (w' - w; 1e-3
relative L2 norm per tensor) and the running statistics (1e-5). A step
whose outcome hangs on a near-tie (a ReLU input within 3e-6 of 0, or a
max-pool window whose top two values are within 1e-5, where fp32 rounding
may route the gradient differently on the two sides) compares its loss
only and is reported as such; at least 12 of 20 steps must be compared in
full. Then a short trajectory (5 steps of rewire-train, its own loop and
data path) must stay within 1e-4 of PyTorch's losses.

    parity_resnet.py WORKDIR
"""
import csv
import os
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import rewire_runtime as rr  # noqa: E402


def _finite(v):
    """A NaN error counts as infinitely wrong (max() would skip it)."""
    return v if v == v else float("inf")

B, N, C, S, K, STEPS, TRAJECTORY = 8, 64, 3, 12, 5, 20, 5
# A decision closer than this to a tie may go either way in fp32 (the two
# sides' pre-activations differ by ~1e-7 here): ReLU inputs, max-pool gaps.
RELU_TIE, POOL_TIE = 3e-6, 1e-5


class Margins:
    """The smallest distance of any ReLU input from 0 and of any max-pool
    window's maximum from its runner-up, over one forward pass."""
    on = False
    relu = pool = float("inf")

    @classmethod
    def reset(cls, on):
        cls.on, cls.relu, cls.pool = on, float("inf"), float("inf")


def act(x):
    if Margins.on:
        Margins.relu = min(Margins.relu, float(x.detach().abs().min()))
    return torch.relu(x)


def pool(x):
    if Margins.on:
        n, c, h, w = x.shape
        padded = F.pad(x.detach().reshape(n * c, 1, h, w), (1, 1, 1, 1), value=-float("inf"))
        windows = F.unfold(padded, 3, stride=2)          # (n*c, 9, L)
        top = windows.topk(2, dim=1).values
        # Exact ties of ReLU zeros are benign (both sides pick the first and
        # the ReLU passes no gradient); a positive maximum must stand clear.
        gap = (top[:, 0] - top[:, 1])[top[:, 0] > 0]
        if gap.numel():
            Margins.pool = min(Margins.pool, float(gap.min()))
    return F.max_pool2d(x, 3, 2, 1)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(act(self.b1(self.c1(x)))))
        return act(y + (x if self.proj is None else self.proj(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(C, 8, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.layer1 = Block(8, 8, 1)
        self.layer2 = Block(8, 16, 2)
        self.fc = nn.Linear(16, K)

    def forward(self, x):
        x = pool(act(self.bn(self.stem(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def batch(step):
    return [(step * B + i) % N for i in range(B)]


def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def per_step(work, model, net, x, y, name, spec, make_opt, lr, betas=(0.9, 0.999)):
    """Each step from PyTorch's state: returns (ok, summary line)."""
    art = os.path.join(work, name + ".rwx")
    r = subprocess.run(["rewire-compile", model, "--train=" + spec, "-o", art],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL rewire-compile --train=%s: %s" % (spec, r.stderr[-1500:]))
    m = rr.Model(art)
    in_names, out_names = m.names("train_step")
    in_specs, _ = m.signature("train_step")
    params = dict(net.named_parameters())
    opt = make_opt(net.parameters())
    worst_loss = worst_update = worst_stats = 0.0
    full = 0
    loss_only = []
    for step in range(STEPS):
        rows = batch(step)
        before = {k: v.detach().clone().numpy() for k, v in net.state_dict().items()}
        inputs = []
        data = [x[rows], y[rows]]
        for nm, (dt, shape) in zip(in_names, in_specs):
            if nm.startswith("param:"):
                a = before[nm[6:]]
            elif nm.startswith("state:"):
                _, pname, kind = nm.split(":")
                st = opt.state.get(params[pname], {})
                key = {"momentum": "momentum_buffer", "m": "exp_avg", "v": "exp_avg_sq"}[kind]
                a = st[key].detach().numpy() if key in st and st[key] is not None \
                    else np.zeros(shape, np.float32)
            elif nm == "lr":
                a = np.array(lr, np.float32)
            elif nm.startswith("bias_correction"):
                beta = betas[int(nm[-1]) - 1]
                a = np.array(1.0 / (1.0 - beta ** (step + 1)), np.float32)
            else:
                a = data.pop(0)
            if tuple(a.shape) != tuple(shape):
                raise SystemExit("FAIL %s: train_step input '%s' is %s, PyTorch's %s" %
                                 (name, nm, shape, a.shape))
            inputs.append(np.array(a, copy=True, order="C"))
        got = dict(zip(out_names, m.run("train_step", *inputs)))

        Margins.reset(True)
        opt.zero_grad()
        loss = F.cross_entropy(net(torch.from_numpy(x[rows])), torch.from_numpy(y[rows]))
        loss.backward()
        opt.step()
        tie = Margins.relu < RELU_TIE or Margins.pool < POOL_TIE
        relu_margin, pool_margin = Margins.relu, Margins.pool
        Margins.on = False
        after = net.state_dict()

        worst_loss = max(worst_loss, _finite(abs(float(got["loss"]) - loss.item()) / abs(loss.item())))
        if tie:
            loss_only.append("%d (ReLU margin %.1e, pool margin %.1e)" % (step, relu_margin, pool_margin))
            continue
        full += 1
        for key, value in after.items():
            if key.endswith("num_batches_tracked"):
                continue
            mine = got["param:" + key]
            if "running_" in key:
                worst_stats = max(worst_stats, _finite(float(np.abs(mine - value.numpy()).max())))
            else:
                worst_update = max(worst_update, rel(mine - before[key], value.numpy() - before[key]))
    ok = worst_loss <= 1e-5 and worst_update <= 1e-3 and worst_stats <= 1e-5 and full >= 12
    line = ("%s ResNet, %s, each step from PyTorch's state: %d/%d steps compared in full, loss max rel "
            "diff %.1e, update max rel L2 diff %.1e, running statistics max abs diff %.1e" %
            ("ok  " if ok else "FAIL", name, full, STEPS, worst_loss, worst_update, worst_stats))
    if loss_only:
        line += "; loss only at near-ties: " + ", ".join(loss_only)
    return ok, line


def trajectory(work, model, net, x, y, name, flags, make_opt):
    """TRAJECTORY steps of rewire-train's own loop vs PyTorch's."""
    want = []
    opt = make_opt(net.parameters())
    for step in range(TRAJECTORY):
        rows = batch(step)
        opt.zero_grad()
        loss = F.cross_entropy(net(torch.from_numpy(x[rows])), torch.from_numpy(y[rows]))
        want.append(loss.item())
        loss.backward()
        opt.step()
    metrics = os.path.join(work, name + ".csv")
    r = subprocess.run(["rewire-train", model, "--inputs=" + os.path.join(work, "x.npy"),
                        "--targets=" + os.path.join(work, "y.npy"), "--loss=cross_entropy",
                        "--steps=%d" % TRAJECTORY, "--metrics=" + metrics, "--log-every=0"] + flags,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL rewire-train (%s): %s" % (name, r.stderr[-1500:]))
    with open(metrics) as f:
        got = [float(row["loss"]) for row in csv.DictReader(f)]
    err = max(abs(g - w) / abs(w) for g, w in zip(got, want)) if got else float("inf")
    ok = len(got) == TRAJECTORY and err <= 1e-4
    return ok, ("%s ResNet, %s, rewire-train's loop: %d steps, loss %.5f -> %.5f (PyTorch %.5f -> %.5f), "
                "max rel diff %.1e" % ("ok  " if ok else "FAIL", name, len(got), got[0] if got else 0,
                                       got[-1] if got else 0, want[0], want[-1], err))


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    net = ResNet()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, S, S)).astype(np.float32)
    y = rng.integers(0, K, N).astype(np.int64)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "y.npy"), y)
    model = os.path.join(work, "resnet.onnx")
    net.train()
    warnings.filterwarnings("ignore")
    torch.onnx.export(net, torch.from_numpy(x[:B]), model, opset_version=17, input_names=["x"],
                      output_names=["logits"], training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    # Start from exactly the exported initializers (tracing in train mode
    # may have moved the running statistics).
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}
    state = net.state_dict()
    for key in state:
        if key.endswith("num_batches_tracked"):
            continue
        if key not in inits:
            raise SystemExit("FAIL: '%s' is not an initializer of the export" % key)
        state[key] = torch.from_numpy(inits[key].copy())
    init = {k: v.clone() for k, v in state.items()}
    ok = True
    runs = [
        ("SGD (momentum 0.9)", "sgd:loss=cross_entropy,momentum=0.9", 0.05,
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
         ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
        ("AdamW (weight decay 0.01)", "adamw:loss=cross_entropy,weight-decay=0.01", 0.01,
         lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.01),
         ["--optimizer=adamw", "--lr=0.01", "--weight-decay=0.01"]),
    ]
    for name, spec, lr, make_opt, flags in runs:
        net.load_state_dict(init)
        good, line = per_step(work, model, net, x, y, name.split()[0].lower(), spec, make_opt, lr)
        print(line.replace(name.split()[0].lower() + ",", name + ",", 1))
        ok &= good
        net.load_state_dict(init)
        good, line = trajectory(work, model, net, x, y, name, flags, make_opt)
        print(line)
        ok &= good
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
