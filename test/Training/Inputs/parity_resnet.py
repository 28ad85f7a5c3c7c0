"""Training parity with PyTorch for a small ResNet: stem convolution, batch
normalization in training mode (batch statistics; running statistics
updated), max pooling, two basic blocks (one strided, with a 1x1 projection
shortcut), global average pooling, a linear classifier, cross-entropy on
class labels. Exported from PyTorch in train mode (BatchNormalization
training_mode=1), trained by rewire-train and by a PyTorch loop from the
same weights on the same batches: per-step losses within 1e-4 relative for
SGD with momentum and 1e-3 for AdamW over 20 steps, and the running
statistics rewire-train writes equal PyTorch's after training.

    parity_resnet.py WORKDIR
"""
import csv
import os
import subprocess
import sys

import numpy as np
import json
import struct
import warnings

import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

B, N, C, S, K, STEPS = 8, 64, 3, 12, 5, 20


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
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (x if self.proj is None else self.proj(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(C, 8, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.layer1 = Block(8, 8, 1)
        self.layer2 = Block(8, 16, 2)
        self.fc = nn.Linear(16, K)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.bn(self.stem(x))), 3, 2, 1)
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def read_safetensors(path):
    """{name: float32 array} of a safetensors file (rewire-train --output)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        out[name] = np.frombuffer(blob[8 + n + lo:8 + n + hi], dtype=np.float32).reshape(info["shape"])
    return out


def torch_run(net, x, y, opt):
    losses = []
    for step in range(STEPS):
        rows = [(step * B + i) % N for i in range(B)]
        opt.zero_grad()
        loss = F.cross_entropy(net(x[rows]), y[rows])
        losses.append(loss.item())
        loss.backward()
        opt.step()
    return losses


def rewire_run(work, model, tag, extra):
    metrics = os.path.join(work, tag + ".csv")
    weights = os.path.join(work, tag + ".safetensors")
    r = subprocess.run(["rewire-train", model, "--inputs=" + os.path.join(work, "x.npy"),
                        "--targets=" + os.path.join(work, "y.npy"), "--loss=cross_entropy",
                        "--steps=%d" % STEPS, "--metrics=" + metrics, "--log-every=0",
                        "--output=" + weights] + extra, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL rewire-train (%s): %s" % (tag, r.stderr[-1500:]))
    with open(metrics) as f:
        return [float(row["loss"]) for row in csv.DictReader(f)], read_safetensors(weights)


def compare(name, got, want, rtol, net, weights):
    err = max(abs(g - w) / max(abs(w), 1e-12) for g, w in zip(got, want))
    ok = len(got) == len(want) == STEPS and err <= rtol
    # Running statistics after training (buffers, not gradients).
    stats = 0.0
    for key, value in net.state_dict().items():
        if "running_" in key:
            stats = max(stats, float(np.abs(weights[key] - value.numpy()).max()))
    ok &= stats <= 1e-4
    print("%s ResNet, %s: %d steps, loss %.5f -> %.5f (PyTorch %.5f -> %.5f), max rel diff %.1e, "
          "running statistics max abs diff %.1e" % ("ok  " if ok else "FAIL", name, len(got), got[0],
                                                   got[-1], want[0], want[-1], err, stats))
    return ok


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
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    ok = True

    net.load_state_dict(init)
    want = torch_run(net, xt, yt, torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9))
    got, weights = rewire_run(work, model, "sgd", ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"])
    ok &= compare("SGD (momentum 0.9)", got, want, 1e-4, net, weights)

    net.load_state_dict(init)
    want = torch_run(net, xt, yt, torch.optim.AdamW(net.parameters(), lr=0.01, weight_decay=0.01))
    got, weights = rewire_run(work, model, "adamw", ["--optimizer=adamw", "--lr=0.01",
                                                      "--weight-decay=0.01"])
    ok &= compare("AdamW (weight decay 0.01)", got, want, 1e-3, net, weights)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
