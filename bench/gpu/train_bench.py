"""The device check's training step: Rewire's compiled AdamW train_step
(cross-entropy, the whole step one CUDA graph) against the same model's
step in PyTorch (forward, loss, backward, AdamW), eager and torch.compile'd.

    train_bench.py DIR RUN RESULTS

Rewire: the artifact DIR/trainbench/model.rwcu (prepare.sh), its
parameters generated here (normal * 0.02: the artifact is carried without
its weights), every train_step input a splat; device time per graph replay
from `rewire-run --benchmark`. PyTorch: torch.cuda events, 20 steps after 3
warm-ups (compiled: after compilation), TF32 off. Prints
`train rewire MS` and `train torch eager MS compiled MS` lines. With
PROFILE=N, each artifact's kernels and GEMMs are also timed alone (N
repetitions each) into RESULTS/profile-FORM.txt.
"""
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np

d, run, res = sys.argv[1], sys.argv[2], sys.argv[3]
art = os.path.join(d, "trainbench", "model.rwcu")
spec = open(os.path.join(d, "trainbench", "dims.txt")).read().strip()


def describe(art):
    out = subprocess.run([run, art, "--describe"], capture_output=True, text=True, check=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        if line.startswith("function "):
            cur = funcs.setdefault(line.split()[1], [])
        m = re.match(r"\s+input\s+(\S+): (\S+)", line)
        if m and cur is not None:
            cur.append((m.group(1), m.group(2)))
    return funcs


def write_params(path, funcs):
    """A safetensors file with every parameter the entry points bind."""
    rng = np.random.default_rng(0)
    header, blobs, offset = {}, [], 0
    for name, ty in funcs["train_step"]:
        if not name.startswith("param:"):
            continue
        *dims, dt = ty.split("x")
        shape = [int(x) for x in dims]
        if dt == "f32":
            a = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        elif dt == "i1":
            a = np.tril(np.ones(shape, dtype=np.uint8)) if len(shape) == 2 else np.ones(shape, np.uint8)
        else:
            continue
        raw = a.tobytes()
        header[name[len("param:"):]] = {"dtype": "F32" if dt == "f32" else "BOOL", "shape": shape,
                                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def rewire_ms(art, funcs, params, profile_to=None):
    inputs = []
    for name, ty in funcs["train_step"]:
        value = "1" if ty.endswith("i64") or ty.endswith("i1") else "0.01"
        if name in ("lr",):
            value = "0.001"
        inputs.append("--input=%s=%s" % (ty, value))
    timing = ["--benchmark=10"]
    if profile_to:  # every kernel and GEMM of the step timed alone (PROFILE=N repetitions)
        timing.append("--profile=" + os.environ["PROFILE"])
    r = subprocess.run([run, art, "--params=" + params, "--function=train_step",
                        "--print-max-elements=0"] + timing + inputs, capture_output=True, text=True)
    if profile_to:
        with open(profile_to, "w") as f:
            f.write(r.stdout)
    m = re.search(r"device time ([\d.]+) ms per run", r.stdout + r.stderr)
    if not m:
        print("train rewire FAIL: " + (r.stderr or r.stdout).strip()[-500:])
        return float("nan")
    return float(m.group(1))


def torch_ms():
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import train_model
    if not torch.cuda.is_available():
        return float("nan"), float("nan")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results = []
    for compiled in (False, True):
        model = train_model.model(spec, "cuda").train()
        tm = sys.modules["torch_models"]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        fwd = torch.compile(model) if compiled else model
        ids = torch.randint(0, tm.V, (tm.B, tm.T), device="cuda")
        tgt = torch.randint(0, tm.V, (tm.B, tm.T), device="cuda")

        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(fwd(ids).reshape(-1, tm.V), tgt.reshape(-1))
            loss.backward()
            opt.step()
        try:
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(20):
                step()
            stop.record()
            torch.cuda.synchronize()
            results.append(start.elapsed_time(stop) / 20)
        except Exception as e:  # report, do not hide
            import traceback
            print("train torch %s failed: %s" % ("compiled" if compiled else "eager",
                                                 str(e).splitlines()[0]), file=sys.stderr)
            print("\n".join(traceback.format_exc().splitlines()[-25:]), file=sys.stderr)
            results.append(float("nan"))
    return results


# Generated weights are large (270 MB at GPT-2 sizes): not among the results.
params = os.path.join(os.environ.get("TMPDIR", "/tmp"), "trainbench.params.safetensors")
print("train model %s (layers,d,heads,T,B,V)" % spec)
# The plain model, then the same model rewritten into each form prepare.sh
# compiled (model-FORM.rwcu): the form's training-time overhead.
forms = sorted(f[len("model-"):-len(".rwcu")] for f in os.listdir(os.path.dirname(art))
               if f.startswith("model-") and f.endswith(".rwcu"))
for form in [None] + forms:
    a = art if form is None else os.path.join(os.path.dirname(art), "model-%s.rwcu" % form)
    funcs = describe(a)
    write_params(params, funcs)
    prof = os.path.join(res, "profile-%s.txt" % (form or "plain")) if os.environ.get("PROFILE") else None
    print("train rewire%s %.4f" % ("" if form is None else "-" + form, rewire_ms(a, funcs, params, prof)))
    sys.stdout.flush()
if os.environ.get("EMULATE", "0") != "1" and os.environ.get("TORCH_SIDE", "1") != "0":
    eager, compiled = torch_ms()
    print("train torch eager %.4f compiled %.4f" % (eager, compiled))
os.remove(params)
