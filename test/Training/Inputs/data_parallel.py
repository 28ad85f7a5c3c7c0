"""Data-parallel training and gradient accumulation (docs/distributed.md)
on the real Hugging Face GPT-2 fixture (TorchScript export, dynamic batch),
token data, AdamW:

- `mpirun -np 2 --batch 2` and one process `--batch 2 --grad-accum 2`
  train on the same global batch of 4 and sum g0 + g1 in the same order:
  their loss curves and trained parameters are the same bits; so is
  --deterministic-reduce.
- Against the fused train_step at --batch 4 (one process, one GEMM over
  all 4 rows): one SGD step from the same state gives the same update
  within fp32 round-off (stated below), and the AdamW loss curves agree.
- 2 ranks x 2 micro-batches of 1 agree with them within round-off.
- kill -9 of rank 1 mid-run: resuming on 1 process (--grad-accum 2) and
  then on 2 ranks again finishes with the uninterrupted run's parameters
  and losses, bit for bit; a resume at another global batch is refused.
- A precompiled fused artifact with --grad-accum is refused by name.

    data_parallel.py WORKDIR GPT2.onnx
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

STEPS = 300
# One SGD step at the same state: each parameter's gradient norm within
# TOL_GRAD (relative), and |update(fused) - update(split)| <= TOL_UPDATE *
# max |update| + 2 ulp (fp32 round-off of different GEMM shapes).
TOL_UPDATE = 1e-5
TOL_GRAD = 1e-5
# AdamW losses over the first steps, fused vs split: relative.
TOL_LOSS = 1e-4
# Buckets of 10 KiB (2560 values) over the fixture's ~40K parameters: the
# sums start as the backward hands out each gradient
# (rewire-output-ready-calls), all but the last bucket before it returns.
BUCKET_MB = 0.01
MIN_BUCKETS = 8

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Import", "Inputs"))
from check_weights import read_safetensors  # noqa: E402


def env():
    e = dict(os.environ)
    if os.getuid() == 0:
        e["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        e["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return e


def mpirun(n):
    return ["mpirun", "--oversubscribe", "-np", str(n)]


def run(cmd, expect=0):
    p = subprocess.run(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != expect:
        raise SystemExit("FAIL: %s exited %d (expected %d):\n%s" % (" ".join(cmd), p.returncode, expect, p.stdout))
    return p.stdout


def losses(path):
    with open(path) as f:
        rows = f.read().split("\n")[1:]
    return [float(r.split(",")[1]) for r in rows if r]


def main():
    work, model = sys.argv[1:3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = np.random.default_rng(0)
    # A patterned stream (learnable), 4000 tokens of a 128-token vocabulary.
    seq = []
    while len(seq) < 4000:
        start = int(rng.integers(0, 120))
        seq += list(range(start, start + int(rng.integers(3, 8))))
    tokens = os.path.join(work, "tokens.bin")
    np.array(seq[:4000], dtype=np.uint16).tofile(tokens)

    def train(name, batch, steps=STEPS, ranks=1, extra=(), optimizer="adamw", expect=0):
        cmd = (mpirun(ranks) if ranks > 1 else []) + [
            "rewire-train", model, "--data", tokens, "--seq-len", "8", "--batch", str(batch),
            "--steps", str(steps), "--optimizer", optimizer, "--lr", "3e-3", "--shuffle",
            "--log-every", "0", "--metrics", os.path.join(work, name + ".csv"),
            "--output", os.path.join(work, name + ".safetensors")] + list(extra)
        return run(cmd, expect)

    def params(name):
        return read_safetensors(os.path.join(work, name + ".safetensors"))

    def same_bits(a, b, what):
        la, lb = losses(os.path.join(work, a + ".csv")), losses(os.path.join(work, b + ".csv"))
        pa, pb = params(a), params(b)
        if la != lb:
            raise SystemExit("FAIL: %s: losses differ (first at step %d)" %
                             (what, next(i for i, (x, y) in enumerate(zip(la, lb)) if x != y)))
        diff = [k for k in pa if not np.array_equal(pa[k], pb[k])]
        if sorted(pa) != sorted(pb) or diff:
            raise SystemExit("FAIL: %s: parameters differ (%s)" % (what, ", ".join(diff[:3])))
        print("ok   %s: %d losses and %d parameters, the same bits" % (what, len(la), len(pa)))

    # Same global batch, same summation order. The 2-rank run sums in small
    # buckets (--bucket-mb), each started while the backward still runs.
    mpi2_jsonl = os.path.join(work, "mpi2.jsonl")
    out = train("mpi2", 2, ranks=2, extra=["--bucket-mb", str(BUCKET_MB), "--jsonl", mpi2_jsonl])
    if "2 ranks, global batch 4" not in out:
        raise SystemExit("FAIL: no rank/global-batch line from mpirun:\n" + out)
    train("accum2", 2, extra=["--grad-accum", "2"])
    same_bits("mpi2", "accum2", "mpirun -np 2 --batch 2 == 1 process --grad-accum 2")
    rows = [r for r in map(json.loads, open(mpi2_jsonl)) if "allreduce_buckets" in r]
    buckets = {r["allreduce_buckets"] for r in rows}
    early = min(r["allreduce_buckets_early"] for r in rows)
    if len(rows) != STEPS or len(buckets) != 1 or min(buckets) < MIN_BUCKETS or early < min(buckets) - 1:
        raise SystemExit("FAIL: overlap: %d rows, buckets %s, at least %d started during the backward"
                         " (expected >= %d buckets, all but the last early)" %
                         (len(rows), sorted(buckets), early, MIN_BUCKETS))
    print("ok   --bucket-mb %g: %d buckets per step, at least %d started while the backward ran" %
          (BUCKET_MB, min(buckets), early))
    train("mpi2det", 2, ranks=2, extra=["--deterministic-reduce"])
    same_bits("mpi2", "mpi2det", "--deterministic-reduce == MPI's sum at 2 ranks")

    # Against the fused step on all 4 rows: one SGD step from the same state.
    # The gradients (their norms, computed in the step) and the update;
    # p1 - p0 carries fp32's rounding of p1, so each element is allowed
    # 2 ulp of p0 on top of the relative tolerance.
    grad_norms = ["--grad-norms", "--jsonl"]
    train("fused_sgd", 4, steps=1, optimizer="sgd", extra=grad_norms + [os.path.join(work, "fused_sgd.jsonl")])
    train("mpi2_sgd", 2, steps=1, ranks=2, optimizer="sgd", extra=grad_norms + [os.path.join(work, "mpi2_sgd.jsonl")])
    train("init", 4, steps=0, optimizer="sgd")  # the initial parameters
    norms = [json.loads(open(os.path.join(work, n + ".jsonl")).readline())["grad_norms"]
             for n in ("fused_sgd", "mpi2_sgd")]
    worst_norm = max(abs(norms[0][k] - norms[1][k]) / norms[0][k] for k in norms[0] if norms[0][k] > 0)
    if sorted(norms[0]) != sorted(norms[1]) or worst_norm > TOL_GRAD:
        raise SystemExit("FAIL: gradient norms, fused vs 2 ranks: %.2e > %.0e" % (worst_norm, TOL_GRAD))
    base = params("init")
    worst = 0.0
    for k, p0 in base.items():
        da = params("fused_sgd")[k].astype(np.float64) - p0
        db = params("mpi2_sgd")[k].astype(np.float64) - p0
        scale = float(np.abs(da).max())
        if scale > 0:
            excess = np.maximum(np.abs(da - db) - 2 * np.spacing(np.abs(p0)), 0)
            worst = max(worst, float(excess.max()) / scale)
    if worst > TOL_UPDATE:
        raise SystemExit("FAIL: one SGD step, fused vs 2 ranks: relative update difference %.2e > %.0e" % (worst, TOL_UPDATE))
    print("ok   one SGD step from the same state, fused batch 4 vs 2 ranks x 2: %d gradient norms within %.1e "
          "(<= %.0e), update within %.1e (<= %.0e) beyond 2 ulp" % (len(norms[0]), worst_norm, TOL_GRAD, worst, TOL_UPDATE))
    train("fused", 4, steps=20)
    lf, lm = losses(os.path.join(work, "fused.csv")), losses(os.path.join(work, "mpi2.csv"))[:20]
    rel = max(abs(a - b) / abs(a) for a, b in zip(lf, lm))
    if rel > TOL_LOSS:
        raise SystemExit("FAIL: AdamW losses, fused vs 2 ranks: %.2e > %.0e" % (rel, TOL_LOSS))
    print("ok   AdamW, 20 steps: fused batch 4 and 2 ranks x batch 2 losses within %.1e (<= %.0e)" % (rel, TOL_LOSS))
    train("mpi2x2", 1, steps=20, ranks=2, extra=["--grad-accum", "2"])
    lx = losses(os.path.join(work, "mpi2x2.csv"))
    rel = max(abs(a - b) / abs(a) for a, b in zip(lf, lx))
    if rel > TOL_LOSS:
        raise SystemExit("FAIL: AdamW losses, fused vs 2 ranks x 2 micro-batches: %.2e" % rel)
    print("ok   2 ranks x 2 micro-batches of 1: losses within %.1e of the fused batch 4" % rel)

    # kill -9 of rank 1 mid-run, then resume on 1 process, then on 2.
    ck = os.path.join(work, "ck")
    cmd = mpirun(2) + [
        "rewire-train", model, "--data", tokens, "--seq-len", "8", "--batch", "2", "--steps",
        str(STEPS), "--optimizer", "adamw", "--lr", "3e-3", "--shuffle", "--log-every", "0",
        "--metrics", os.path.join(work, "killed.csv"), "--checkpoint", ck,
        "--checkpoint-every", "10"]
    proc = subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    victim, at = None, None
    deadline = time.time() + 120
    while victim is None and proc.poll() is None and time.time() < deadline:
        try:
            with open(os.path.join(ck, "state.json")) as f:
                at = json.load(f)["step"]
        except (OSError, ValueError):
            at = None
        if at is not None and at >= 20:
            for pid in os.listdir("/proc"):
                try:
                    with open("/proc/%s/environ" % pid, "rb") as f:
                        environ = f.read().split(b"\0")
                    with open("/proc/%s/comm" % pid) as f:
                        name = f.read().strip()
                except OSError:
                    continue
                if name == "rewire-train" and b"OMPI_COMM_WORLD_RANK=1" in environ and \
                        any(ck.encode() in a for a in open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")):
                    victim = int(pid)
            if victim:
                os.kill(victim, signal.SIGKILL)
        time.sleep(0.002)
    proc.communicate()
    if victim is None:
        raise SystemExit("FAIL: the run ended before rank 1 could be killed")
    if proc.returncode == 0:
        raise SystemExit("FAIL: mpirun exited 0 after rank 1 was killed")
    with open(os.path.join(ck, "state.json")) as f:
        killed_at = json.load(f)["step"]
    if killed_at >= STEPS:
        raise SystemExit("FAIL: the run finished before the kill took effect")
    # Another global batch is refused.
    out = train("wrong", 1, extra=["--checkpoint", ck, "--resume", "--grad-accum", "2"], expect=1)
    if "resume with the same global batch" not in out:
        raise SystemExit("FAIL: a resume at global batch 2 was not refused by name:\n" + out)
    print("ok   a resume at another global batch is refused: " + out.strip().splitlines()[-1][:96] + "...")
    half = killed_at + (STEPS - killed_at) // 2
    run(["rewire-train", model, "--data", tokens, "--seq-len", "8", "--batch", "2", "--grad-accum", "2",
         "--steps", str(STEPS), "--stop-after", str(half), "--optimizer", "adamw", "--lr", "3e-3",
         "--shuffle", "--log-every", "0", "--metrics", os.path.join(work, "killed.csv"),
         "--checkpoint", ck, "--checkpoint-every", "10", "--resume"])
    run(mpirun(2) + ["rewire-train", model, "--data", tokens, "--seq-len", "8", "--batch", "2",
                     "--steps", str(STEPS), "--optimizer", "adamw", "--lr", "3e-3", "--shuffle",
                     "--log-every", "0", "--metrics", os.path.join(work, "killed.csv"),
                     "--checkpoint", ck, "--checkpoint-every", "10", "--resume",
                     "--output", os.path.join(work, "killed.safetensors")])
    same_bits("mpi2", "killed", "kill -9 of rank 1 at step %d, resumed on 1 process to %d, then on 2 ranks" % (killed_at, half))

    # A fused artifact cannot accumulate.
    rwx = os.path.join(work, "fused.rwx")
    run(["rewire-compile", model, "--train=sgd:loss=cross_entropy", "--input-shape=2x8", "-o", rwx])
    out = run(["rewire-train", rwx, "--data", tokens, "--steps", "1", "--grad-accum", "2"], expect=1)
    if "split=true" not in out:
        raise SystemExit("FAIL: a fused artifact with --grad-accum: no hint:\n" + out)
    print("ok   a fused train_step with --grad-accum is refused: " + out.strip()[:110] + "...")


if __name__ == "__main__":
    main()
