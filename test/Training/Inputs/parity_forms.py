"""Training parity per residual form: the residual MLP of parity.py with its
residual add rewritten by rewire-train --residual=FORM (paper init), against
a PyTorch model written here from papers.md's equations, starting from the
same weights (the new parameters' initial values read from the compiled
artifact's parameter file) and trained on the same batches with SGD:
per-step losses within 1e-4 relative over 20 steps.

    parity_forms.py WORKDIR
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import parity as p  # noqa: E402


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[a:b], dtype=np.float32).reshape(e["shape"]).copy())
    return out


def rms(x, eps=1e-6):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def combine(form, q, x, u):
    """The rewritten residual update x (+) u with the new parameters q."""
    if form in ("rezero", "skipinit"):
        return x + q["alpha"] * u
    if form == "layerscale":
        return x + q["lambda"] * u
    if form == "review":
        d = x.shape[-1]
        r = torch.sigmoid(rms(x) @ q["W"][:d] + rms(u) @ q["W"][d:] + q["b"])
        return x + r * u
    if form == "highway":
        return x + torch.sigmoid(x @ q["W"] + q["b"]) * u
    raise ValueError(form)


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    net = p.Net()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((p.N, p.D)).astype(np.float32)
    y = (np.tanh(x @ rng.standard_normal((p.D, p.O))) + 0.1 * rng.standard_normal((p.N, p.O))).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "y.npy"), y)
    model = os.path.join(work, "net.onnx")
    torch.onnx.export(net, torch.from_numpy(x[:p.B]), model, opset_version=17, input_names=["x"],
                      output_names=["y"])
    init = {k: v.clone() for k, v in net.state_dict().items()}
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    ok = True
    for form in ("rezero", "layerscale", "review", "highway"):
        rwx = os.path.join(work, form + ".rwx")
        subprocess.run(["rewire-compile", model, "--residual=" + form, "-o", rwx], check=True)
        values = read_safetensors(os.path.join(work, form + ".params.safetensors"))
        prefix = "stream0.layer0.%s." % form
        q = {k[len(prefix):]: v.clone().requires_grad_(True) for k, v in values.items() if k.startswith(prefix)}
        net.load_state_dict(init)
        opt = torch.optim.SGD(list(net.parameters()) + list(q.values()), lr=0.05)
        want = []
        for step in range(p.STEPS):
            rows = [(step * p.B + i) % p.N for i in range(p.B)]
            xb = xt[rows]
            u = net.fc2(F.gelu(net.fc1(net.ln(xb))))
            loss = F.mse_loss(net.head(combine(form, q, xb, u)), yt[rows])
            want.append(loss.item())
            opt.zero_grad()
            loss.backward()
            opt.step()
        got = p.rewire_losses(work, model, form, ["--optimizer=sgd", "--lr=0.05", "--residual=" + form])
        ok &= p.compare("%s (paper init; %s)" % (form, ", ".join(sorted(q))), got, want, 1e-4)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
