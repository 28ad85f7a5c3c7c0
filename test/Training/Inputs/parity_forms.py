"""Training parity per residual form: the residual MLP of parity.py with its
residual add rewritten by rewire-train --residual=FORM (paper init), against
a PyTorch model written here from papers.md's equations, starting from the
same weights (the new parameters' initial values read from the compiled
artifact's parameter file) and trained on the same batches with SGD:
per-step losses within 1e-4 relative over 20 steps. The stream-level forms
(ANCRe, DenseFormer) and NAG train a three-block residual MLP, so their
connections across depth and per-sublayer scales are exercised.

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

def _finite(v):
    """A NaN error counts as infinitely wrong (max() would skip it)."""
    return v if v == v else float("inf")


def read_safetensors(path):
    """{name: float32 tensor} of the F32 entries (a boolean mask held as a
    parameter is left out)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__" or e["dtype"] != "F32":
            continue
        a, b = e["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[a:b], dtype=np.float32).reshape(e["shape"]).copy())
    return out


def rms(x, eps=1e-6):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def export_net(work, name, net, x):
    """`net` exported to WORK/NAME.onnx (input x, output y, opset 17) and its
    initial state."""
    model = os.path.join(work, name + ".onnx")
    torch.onnx.export(net, torch.from_numpy(x[:p.B]), model, opset_version=17, input_names=["x"],
                      output_names=["y"])
    return model, {k: v.clone() for k, v in net.state_dict().items()}


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
    if form == "laurel":  # papers.md 6.3: alpha f(x) + beta x (+ B A x)
        out = q["alpha"] * u + q["beta"] * x
        return out + (x @ q["A"]) @ q["B"] if "A" in q else out
    raise ValueError(form)


class DeepNet(torch.nn.Module):
    """Three pre-LN residual MLP blocks and a head."""

    def __init__(self, blocks=3):
        super().__init__()
        nn = torch.nn
        self.ln = nn.ModuleList([nn.LayerNorm(p.D) for _ in range(blocks)])
        self.fc1 = nn.ModuleList([nn.Linear(p.D, p.H) for _ in range(blocks)])
        self.fc2 = nn.ModuleList([nn.Linear(p.H, p.D) for _ in range(blocks)])
        self.head = nn.Linear(p.D, p.O)
        # The fresh LayerNorms are equal: torch.onnx.export aliases them
        # (Identity nodes), and the importer unties them again.

    def branch(self, k, h):
        return self.fc2[k](F.gelu(self.fc1[k](self.ln[k](h))))

    def forward(self, x):
        for k in range(len(self.ln)):
            x = x + self.branch(k, x)
        return self.head(x)


def stream(form, net, q, x):
    """The rewritten stream of DeepNet, from papers.md: q[k] holds block k's
    new parameters."""
    states = [x]
    h = x
    for k in range(len(net.ln)):
        f = net.branch(k, h)
        if form == "ancre":
            pk = torch.softmax(q[k]["c"] / 0.01, 0)
            h = (h + f) + sum(pk[j] * states[j] for j in range(len(states)))
            states.append(h)
        elif form == "denseformer":
            c = q[k]["c"]
            h = c[-1] * (h + f) + sum(c[j] * states[j] for j in range(len(states)))
            states.append(h)
        elif form == "laurel":  # papers.md 6.3 with PA: + sum_(j<k) gamma_j x_j
            qk = q[k]
            if "alpha" in qk:
                h_new = qk["alpha"] * f + qk["beta"] * h
                h_new = h_new + (h @ qk["A"]) @ qk["B"] if "A" in qk else h_new
            else:
                h_new = h + f
            if "gamma" in qk:
                h_new = h_new + sum(qk["gamma"][j] * states[j] for j in range(k))
            h = h_new
            states.append(h)
        elif form == "nag":
            d = h.shape[-1]
            rho = torch.sqrt((h * h).mean(-1, keepdim=True))
            rbar = h / rho
            m = (torch.softmax(q[k]["pi"], 0) * torch.sigmoid(rbar @ q[k]["w"] + q[k]["b"])).sum(-1, keepdim=True)
            f = f - f.mean(-1, keepdim=True)
            fp = f - ((f * rbar).sum(-1, keepdim=True) / d) * rbar
            u = d ** 0.5 * fp / torch.clamp(fp.norm(dim=-1, keepdim=True), min=1e-6)
            h = h + rho * q[k]["alpha"] * m * u
        else:
            raise ValueError(form)
    return net.head(h)


def sinkhorn(z, iters=20):
    m = torch.exp(z - z.amax(dim=(-2, -1), keepdim=True).detach())
    for _ in range(iters):
        m = m / m.sum(-1, keepdim=True)
        m = m / m.sum(-2, keepdim=True)
    return m


def hyper_stream(form, net, q, x, n=4):
    """Hyper-Connections (hc, dynamic) and mHC from papers.md 6.1 and 6.2 on
    DeepNet: X = n copies of x [B, n, D]; per block the branch reads
    H^pre . X, then X = H^res . X + (H^post)^T f; the head reads the mean."""
    X = x[:, None, :].repeat(1, n, 1)
    for k in range(len(net.ln)):
        qk = q[k]

        def coeff(name):
            if form == "mhc":  # all n streams of a token normalized together
                z = qk[name + "_alpha"] * (rms(X.reshape(X.shape[0], -1)) @ qk[name + "_W"])
                if name == "res":
                    return sinkhorn(z.reshape(-1, n, n) + qk["res_b"])
                z = z + qk[name + "_b"]
                return torch.sigmoid(z) if name == "pre" else 2 * torch.sigmoid(z)
            z = rms(X) @ qk[name + "_W"]  # each stream normalized alone
            if name != "res":
                z = z[..., 0]
            return qk[name + "_alpha"] * torch.tanh(z) + qk[name + "_b"]
        f = net.branch(k, (coeff("pre")[..., None] * X).sum(1))
        X = coeff("res") @ X + coeff("post")[..., None] * f[:, None, :]
    return net.head(X.mean(1))


def deep_forms(work, x, y):
    torch.manual_seed(2)
    net = DeepNet()
    model, init = export_net(work, "deep", net, x)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    ok = True
    for spec in ("ancre", "denseformer", "nag", "hc", "mhc", "laurel:laurel=pa", "laurel:laurel=rw-lr-pa"):
        form = spec.split(":")[0]
        tag = "deep-" + spec.replace(":", "_").replace("=", "_")
        rwx = os.path.join(work, tag + ".rwx")
        subprocess.run(["rewire-compile", model, "--residual=" + spec, "-o", rwx], check=True)
        values = read_safetensors(os.path.join(work, tag + ".params.safetensors"))
        q = [dict() for _ in range(3)]
        for name, v in values.items():
            if name.startswith("stream0.layer"):
                layer, kind, pname = name[len("stream0.layer"):].split(".", 2)
                assert kind == form, name
                q[int(layer)][pname] = v.clone().requires_grad_(True)
        # LAuReL-PA's first block has no earlier state (and alone no parameter).
        gammas = [qk["gamma"].numel() if "gamma" in qk else 0 for qk in q]
        if not all(q[1:]) or gammas != ([0, 1, 2] if "pa" in spec else [0, 0, 0]):
            raise SystemExit("FAIL %s: new parameters per block not found in %s" % (spec, sorted(values)))
        q0 = [{k: v.detach().clone() for k, v in qk.items()} for qk in q]

        def losses_from(state, q0=q0, form=form):
            net.load_state_dict(state)
            qq = [{k: v.clone().requires_grad_(True) for k, v in qk.items()} for qk in q0]
            opt = torch.optim.SGD(list(net.parameters()) + [t for qk in qq for t in qk.values()],
                                  lr=0.05)
            forward = hyper_stream if form in ("hc", "mhc") else stream
            return p.train_steps(opt, lambda step: F.mse_loss(
                forward(form, net, qq, xt[p.batch_rows(step)]), yt[p.batch_rows(step)]))
        want = losses_from(init)
        got = p.rewire_losses(work, model, tag, ["--optimizer=sgd", "--lr=0.05", "--residual=" + spec])
        name = "%s, 3 blocks (paper init; %s per block)" % (spec, ", ".join(sorted(set().union(*q))))
        ok &= p.compare(name, got, want, 1e-4)
        ok &= p.conditioned(spec + ", 3 blocks", losses_from, init, want, 1e-4)
    return ok


class AttnNet(torch.nn.Module):
    """An input projection to T tokens of width W, three pre-LN single-head
    attention blocks, the mean over tokens and a head; `mix(k, v1, v)`, when
    given, is block k's Value Residual (papers.md 6.4)."""

    T, W = 4, 8

    def __init__(self, blocks=3):
        super().__init__()
        nn = torch.nn
        self.inp = nn.Linear(p.D, self.T * self.W)
        self.ln = nn.ModuleList([nn.LayerNorm(self.W) for _ in range(blocks)])
        self.qkv = nn.ModuleList([nn.Linear(self.W, 3 * self.W) for _ in range(blocks)])
        self.proj = nn.ModuleList([nn.Linear(self.W, self.W) for _ in range(blocks)])
        self.head = nn.Linear(self.W, p.O)

    def forward(self, x, mix=None):
        h = self.inp(x).view(-1, self.T, self.W)
        v1 = None
        for k in range(len(self.ln)):
            q, kk, v = self.qkv[k](self.ln[k](h)).split(self.W, dim=-1)
            if v1 is None:
                v1 = v
            elif mix is not None:
                v = mix(k, v1, v)
            a = torch.softmax(q @ kk.transpose(1, 2) / self.W ** 0.5, dim=-1)
            h = h + self.proj[k](a @ v)
        return self.head(h.mean(1))


def value_residual_parity(work, x, y):
    """Value Residual on AttnNet: blocks 2 and 3 use 1/2 V_1 + 1/2 V_k (the
    official constants), or learned lambdas (initialized 1/2, 1/2), against
    PyTorch from papers.md 6.4; 20 SGD steps."""
    torch.manual_seed(3)
    net = AttnNet()
    model, init = export_net(work, "attn", net, x)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    ok = True
    for spec in ("value-residual", "value-residual:lambda=learned"):
        tag = spec.replace(":", "_").replace("=", "_")
        subprocess.run(["rewire-compile", model, "--residual=" + spec, "-o",
                        os.path.join(work, tag + ".rwx")], check=True)
        values = read_safetensors(os.path.join(work, tag + ".params.safetensors"))
        q0 = {}
        for name, v in values.items():
            if ".value-residual." in name:
                layer, _, pname = name[len("stream0.layer"):].split(".", 2)
                q0.setdefault(int(layer), {})[pname] = v.clone()
        learned = "learned" in spec
        if learned != bool(q0) or (learned and sorted(q0) != [1, 2]):
            raise SystemExit("FAIL %s: value-residual parameters %s" % (spec, sorted(values)))

        def losses_from(state, q0=q0):
            net.load_state_dict(state)
            qq = {k: {n: v.clone().requires_grad_(True) for n, v in d.items()} for k, d in q0.items()}
            half = torch.tensor(0.5)

            def mix(k, v1, v):
                if not qq:
                    return half * v1 + half * v
                return qq[k]["lambda1"] * v1 + qq[k]["lambda2"] * v
            opt = torch.optim.SGD(list(net.parameters()) + [t for d in qq.values() for t in d.values()],
                                  lr=0.05)
            return p.train_steps(opt, lambda step: F.mse_loss(
                net(xt[p.batch_rows(step)], mix), yt[p.batch_rows(step)]))
        want = losses_from(init)
        got = p.rewire_losses(work, model, tag, ["--optimizer=sgd", "--lr=0.05", "--residual=" + spec])
        ok &= p.compare("%s, 3 attention blocks" % spec, got, want, 1e-4)
        ok &= p.conditioned(spec, losses_from, init, want, 1e-4)
    return ok


def gemma3n_parity(work, x, y):
    """Gemma 3n's merged LAuReL on AttnNet's attention blocks (papers.md 6.3):
    with a = ln(h), h' = (h + proj(attn(a)) + a + rms(a A B) w) / sqrt 2, the
    update computed as rewire writes it (1/sqrt 2 in float32 times each
    term's sum); 20 SGD steps against PyTorch."""
    torch.manual_seed(4)
    net = AttnNet()
    model, init = export_net(work, "attn-gemma3n", net, x)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    spec = "laurel:laurel=gemma3n,rank=4"
    tag = "attn-gemma3n"
    subprocess.run(["rewire-compile", model, "--residual=" + spec, "-o", os.path.join(work, tag + ".rwx")],
                   check=True)
    values = read_safetensors(os.path.join(work, tag + ".params.safetensors"))
    q0 = {}
    for name, v in values.items():
        if ".laurel." in name:
            layer, _, pname = name[len("stream0.layer"):].split(".", 2)
            q0.setdefault(int(layer), {})[pname] = v.clone()
    if sorted(q0) != [0, 1, 2] or any(sorted(d) != ["A", "B", "norm"] for d in q0.values()):
        raise SystemExit("FAIL %s: parameters %s" % (spec, sorted(values)))
    c = torch.tensor(0.5 ** 0.5, dtype=torch.float32)

    def forward(xb, qq):
        h = net.inp(xb).view(-1, net.T, net.W)
        for k in range(len(net.ln)):
            a = net.ln[k](h)
            qm, km, vm = net.qkv[k](a).split(net.W, dim=-1)
            att = torch.softmax(qm @ km.transpose(1, 2) / net.W ** 0.5, dim=-1)
            r = (a @ qq[k]["A"]) @ qq[k]["B"]
            r = r * torch.rsqrt((r * r).mean(-1, keepdim=True) + 1e-6) * qq[k]["norm"]
            h = c * (net.proj[k](att @ vm) + (a + r)) + c * h
        return net.head(h.mean(1))

    def losses_from(state):
        net.load_state_dict(state)
        qq = {k: {n: v.clone().requires_grad_(True) for n, v in d.items()} for k, d in q0.items()}
        opt = torch.optim.SGD(list(net.parameters()) + [t for d in qq.values() for t in d.values()],
                              lr=0.05)
        return p.train_steps(opt, lambda step: F.mse_loss(forward(xt[p.batch_rows(step)], qq),
                                                          yt[p.batch_rows(step)]))
    want = losses_from(init)
    got = p.rewire_losses(work, model, tag, ["--optimizer=sgd", "--lr=0.05", "--residual=" + spec])
    ok = p.compare("%s, 3 attention blocks (A, B, norm per block)" % spec, got, want, 1e-4)
    ok &= p.conditioned(spec, losses_from, init, want, 1e-4)
    return ok


def lpa_parity(work, x, y):
    """LPA on the three-block model: the shared head reads every depth and
    the loss is sum_k w_k mse(head(h_k), y) (papers.md variant A, uniform
    weights), or each block reads its input detached (variant B, residual
    fitting, linear weights). The per-depth losses rewire-train logs are
    compared too."""
    import csv
    torch.manual_seed(2)
    net = DeepNet()
    model = os.path.join(work, "deep.onnx")
    init = {k: v.clone() for k, v in net.state_dict().items()}
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    ok = True
    for tag, residual, weights, detach in (
            ("uniform weights", "lpa", [1 / 3] * 3, False),
            ("stop-gradient, linear weights", "lpa:stop-gradient=true", [1 / 6, 2 / 6, 3 / 6], True)):
        net.load_state_dict(init)
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        want, want_depths = [], []
        for step in range(p.STEPS):
            rows = [(step * p.B + i) % p.N for i in range(p.B)]
            h = xt[rows]
            depth_losses = []
            for k in range(3):
                inp = h.detach() if detach and k > 0 else h
                h = inp + net.branch(k, inp)
                depth_losses.append(F.mse_loss(net.head(h), yt[rows]))
            loss = sum(w * lk for w, lk in zip(weights, depth_losses))
            want.append(loss.item())
            want_depths.append([lk.item() for lk in depth_losses])
            opt.zero_grad()
            loss.backward()
            opt.step()
        name = "lpa-" + ("b" if detach else "a")
        got = p.rewire_losses(work, model, name, ["--optimizer=sgd", "--lr=0.05", "--residual=" + residual,
                                                 "--depth-weights=" + ("linear" if detach else "uniform")])
        ok &= p.compare("lpa, 3 blocks, %s" % tag, got, want, 1e-4)
        with open(os.path.join(work, name + ".csv")) as f:
            got_depths = [[float(r["loss_depth%d" % k]) for k in (1, 2, 3)] for r in csv.DictReader(f)]
        err = max(_finite(abs(g - w) / w) for gr, wr in zip(got_depths, want_depths) for g, w in zip(gr, wr))
        good = len(got_depths) == p.STEPS and err <= 1e-4
        print("%s lpa, 3 blocks, %s: per-depth losses logged, max rel diff %.1e" % (
            "ok  " if good else "FAIL", tag, err))
        ok &= good
    return ok


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
    model, init = export_net(work, "net", net, x)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    ok = True
    for spec in ("rezero", "layerscale", "review", "highway", "laurel", "laurel:laurel=rw"):
        form = spec.split(":")[0]
        tag = spec.replace(":", "_").replace("=", "_")
        rwx = os.path.join(work, tag + ".rwx")
        subprocess.run(["rewire-compile", model, "--residual=" + spec, "-o", rwx], check=True)
        values = read_safetensors(os.path.join(work, tag + ".params.safetensors"))
        prefix = "stream0.layer0.%s." % form
        q = {k[len(prefix):]: v.clone().requires_grad_(True) for k, v in values.items() if k.startswith(prefix)}
        q0 = {k: v.detach().clone() for k, v in q.items()}

        def losses_from(state, q0=q0, form=form):
            net.load_state_dict(state)
            qq = {k: v.clone().requires_grad_(True) for k, v in q0.items()}
            opt = torch.optim.SGD(list(net.parameters()) + list(qq.values()), lr=0.05)

            def loss_at(step):
                xb = xt[p.batch_rows(step)]
                u = net.fc2(F.gelu(net.fc1(net.ln(xb))))
                return F.mse_loss(net.head(combine(form, qq, xb, u)), yt[p.batch_rows(step)])
            return p.train_steps(opt, loss_at)
        want = losses_from(init)
        got = p.rewire_losses(work, model, tag, ["--optimizer=sgd", "--lr=0.05", "--residual=" + spec])
        ok &= p.compare("%s (paper init; %s)" % (spec, ", ".join(sorted(q))), got, want, 1e-4)
        ok &= p.conditioned(spec, losses_from, init, want, 1e-4)
    ok &= deep_forms(work, x, y)
    ok &= lpa_parity(work, x, y)
    ok &= value_residual_parity(work, x, y)
    ok &= gemma3n_parity(work, x, y)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
