"""Killing rewire-train (SIGKILL) at random moments while it checkpoints
every step never loses data: after every kill, state.json names a complete,
readable checkpoint; --resume continues from it; and the run finally
completed through any number of kills logs exactly the losses of an
uninterrupted run (bit for bit). The model is large enough (about 19 MB of
parameters, 57 MB per AdamW checkpoint) that most kills land inside a
checkpoint write. Kills alternate between random moments and the moment a
checkpoint's temp file appears (watched in the directory), so writes are
certainly interrupted; a kill counts as inside a write when it left a temp
file behind. It goes on until eight kills, two inside a write, have
happened (a run that finishes first starts over).

    kill_checkpoint.py WORKDIR
"""
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn

D, H, N, B, STEPS = 768, 3072, 64, 8, 60


def check_checkpoint(ck):
    """state.json parses and names a complete safetensors file."""
    with open(os.path.join(ck, "state.json")) as f:
        state = json.load(f)
    path = os.path.join(ck, state["parameters"])
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    end = max(e["data_offsets"][1] for k, e in header.items() if k != "__metadata__")
    if len(blob) < 8 + n + end:
        raise SystemExit("FAIL: %s is truncated" % path)
    return state["step"]


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(D, H), nn.GELU(), nn.Linear(H, D))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D)).astype(np.float32)
    y = rng.standard_normal((N, D)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "y.npy"), y)
    model = os.path.join(work, "mlp.onnx")
    warnings.filterwarnings("ignore")
    torch.onnx.export(net, torch.from_numpy(x[:B]), model, opset_version=17)
    rwx = os.path.join(work, "mlp.rwx")
    subprocess.run(["rewire-compile", model, "--train=adamw", "-o", rwx], check=True)

    def command(ck, metrics, resume):
        return (["rewire-train", rwx, "--inputs=" + os.path.join(work, "x.npy"),
                 "--targets=" + os.path.join(work, "y.npy"), "--optimizer=adamw", "--lr=1e-3",
                 "--steps=%d" % STEPS, "--checkpoint=" + ck, "--checkpoint-every=1",
                 "--metrics=" + metrics, "--log-every=0"] + (["--resume"] if resume else []))

    full_ck = os.path.join(work, "full")
    subprocess.run(command(full_ck, os.path.join(work, "full.csv"), False), check=True,
                   capture_output=True)
    with open(os.path.join(work, "full.csv")) as f:
        want = f.read()

    ck = os.path.join(work, "killed")
    metrics = os.path.join(work, "killed.csv")
    random.seed(1)
    kills = mid_write = 0
    resume = False
    def temp_files():
        return [n for n in os.listdir(ck) if ".tmp." in n] if os.path.isdir(ck) else []

    attempt = 0
    while kills < 8 or mid_write < 2:
        attempt += 1
        if attempt > 40:
            raise SystemExit("FAIL: %d kills, %d inside a write after 40 attempts" % (kills, mid_write))
        p = subprocess.Popen(command(ck, metrics, resume), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        if attempt % 2 == 1:
            time.sleep(random.uniform(0.3, 1.2))
        else:
            # Kill as soon as a checkpoint's temp file appears.
            while p.poll() is None and not temp_files():
                pass
        if p.poll() is not None:
            # It finished first (a slow machine, a short remaining run): start
            # over from scratch; the uninterrupted-run comparison still holds.
            _, err = p.communicate()
            if p.returncode != 0:
                raise SystemExit("FAIL: rewire-train exited %d: %s" % (p.returncode, err.decode()[-800:]))
            shutil.rmtree(ck)
            os.unlink(metrics)
            resume = False
            continue
        p.send_signal(signal.SIGKILL)
        p.wait()
        kills += 1
        if not os.path.exists(os.path.join(ck, "state.json")):
            continue  # killed before its first checkpoint: start again
        mid_write += bool(temp_files())
        check_checkpoint(ck)
        resume = True
    r = subprocess.run(command(ck, metrics, resume), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("FAIL: rewire-train exited %d: %s" % (r.returncode, r.stderr[-800:]))
    with open(metrics) as f:
        got = f.read()
    same = got == want
    ok = same and mid_write >= 2
    print("%s %d SIGKILLs (%d inside a checkpoint write): every state.json named a complete "
          "checkpoint; the resumed run's losses %s the uninterrupted run's" % (
              "ok  " if ok else "FAIL", kills, mid_write, "equal" if same else "DIFFER from"))
    stale = [n for n in os.listdir(ck) if ".tmp." in n]
    print("%s no temp files left after the last resume: %s" % ("ok  " if not stale else "FAIL", stale))
    sys.exit(0 if ok and not stale else 1)


if __name__ == "__main__":
    main()
