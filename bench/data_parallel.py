"""Data-parallel scaling of rewire-train on this machine: the benchmark GPT
of train_step.py (4 layers, d 256, T 128, AdamW) at one global batch,
trained as

  - one process, the fused train_step (oneDNN and the loops on every core);
  - one process, split steps (grad_step + apply_step: the cost of the split);
  - one process, --grad-accum 2 (half the batch per call);
  - mpirun -np N (N = 2 by default), one BLAS thread per rank, the sums in
    4 MiB buckets started while the backward runs (rewire-output-ready-calls),
    and the same with one bucket (--bucket-mb 1e6: summed only after the
    backward, what the overlap saves);

with the median step time, tokens/s, and each rank count's all-reduce time
and share of the step (from rewire-train's JSONL: step_ms, allreduce_ms).
The expected scaling on a cluster is worked out in docs/distributed.md from
the gradient bytes this prints.

    /usr/bin/python3 bench/data_parallel.py [--global-batch 8] [--steps 30]
                                            [--ranks 2] [--rounds 3] [--out r.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import train_step  # noqa: E402  (the benchmark GPT)


def main():
    ap = argparse.ArgumentParser()
    train_step.add_model_args(ap, steps=30)
    ap.add_argument("--global-batch", type=int, default=8)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    g, n = a.global_batch, a.ranks
    if g % n or g % 2:
        raise SystemExit("--global-batch must be a multiple of --ranks and of 2")
    work = tempfile.mkdtemp(prefix="rewire-dp-bench-")
    torch.manual_seed(0)
    model = train_step.GPT(a.vocab, a.layers, a.d, a.heads, a.seq)
    onnx_path = os.path.join(work, "gpt.onnx")
    train_step.torchscript_export(model.eval(), torch.zeros(2, a.seq, dtype=torch.long), onnx_path,
                      opset_version=17, input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    params = sum(p.numel() for p in model.parameters())
    tokens = np.random.default_rng(0).integers(0, a.vocab, g * a.seq * (a.steps + 8) + 1)
    data = os.path.join(work, "tokens.bin")
    tokens.astype(np.uint16).tofile(data)
    env = dict(os.environ, REWIRE_CACHE_DIR=os.path.join(work, "cache"))
    if os.getuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    bin_dir = os.path.join(ROOT, "build", "bin")

    def train(name, model_path, batch, extra=(), ranks=1, threads=None):
        jsonl = os.path.join(work, name + ".jsonl")
        cmd = ([] if ranks == 1 else ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks)])
        cmd += [os.path.join(bin_dir, "rewire-train"), model_path, "--data=" + data,
                "--optimizer=adamw", "--lr=1e-3", "--steps=%d" % (a.steps + 3), "--log-every=0",
                "--jsonl=" + jsonl] + (["--batch=%d" % batch, "--seq-len=%d" % a.seq]
                                       if model_path.endswith(".onnx") else []) + list(extra)
        e = dict(env)
        if threads:
            e["OMP_NUM_THREADS"] = str(threads)  # oneDNN and the loops
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=e, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        rows = [json.loads(line) for line in open(jsonl)][3:]  # after warm-up
        step = statistics.median(r["step_ms"] for r in rows)
        comm = statistics.median(r.get("allreduce_ms", 0.0) for r in rows)
        return {"name": name, "ranks": ranks, "step_ms": step, "allreduce_ms": comm,
                "tokens_per_s": g * a.seq / (step / 1e3), "wall_s": wall,
                "buckets": rows[-1].get("allreduce_buckets", 0),
                "buckets_early": min(r.get("allreduce_buckets_early", 0) for r in rows)}

    # Compile each artifact once first (the timed runs hit the cache).
    split_rwx = os.path.join(work, "split.rwx")
    t0 = time.perf_counter()
    subprocess.run([os.path.join(bin_dir, "rewire-compile"), onnx_path,
                    "--train=adamw:loss=cross_entropy,split=true",
                    "--input-shape=%dx%d" % (g, a.seq), "-o", split_rwx], check=True, env=env)
    compile_split = time.perf_counter() - t0
    configs = [("fused, 1 process", onnx_path, g, (), 1, None),
               ("split, 1 process", split_rwx, g, (), 1, None),
               ("--grad-accum 2, 1 process", onnx_path, g // 2, ["--grad-accum=2"], 1, None),
               ("mpirun -np %d" % n, onnx_path, g // n, (), n, 1),
               ("mpirun -np %d, one bucket" % n, onnx_path, g // n, ["--bucket-mb=1e6"], n, 1)]
    # Round-robin rounds (this machine's timings drift): the median of the
    # rounds' medians.
    rounds = [[train(*c) for c in configs] for _ in range(a.rounds)]
    runs = []
    for i in range(len(configs)):
        rs = [r[i] for r in rounds]
        mid = dict(rs[0])
        for key in ("step_ms", "allreduce_ms", "tokens_per_s", "wall_s"):
            mid[key] = statistics.median(r[key] for r in rs)
        mid["rounds_step_ms"] = [r["step_ms"] for r in rs]
        runs.append(mid)
    base = runs[0]["tokens_per_s"]
    cpu = train_step.cpu_model()
    print("GPT: %d layers, d %d, T %d, vocab %d, %.2fM parameters (%.1f MB of f32 gradients), "
          "global batch %d, AdamW; %s, %d cores" % (a.layers, a.d, a.seq, a.vocab, params / 1e6,
                                                    params * 4 / 1e6, g, cpu, os.cpu_count()))
    print("medians of %d round-robin rounds of %d steps" % (a.rounds, a.steps))
    print("%-28s %10s %10s %16s %10s %8s" % ("run", "step ms", "tokens/s", "all-reduce wait",
                                             "vs fused", "buckets"))
    for r in runs:
        share = r["allreduce_ms"] / r["step_ms"] if r["allreduce_ms"] else 0.0
        print("%-28s %10.1f %10.0f %10.2f ms %2.0f%% %9.2fx %8s" % (
            r["name"], r["step_ms"], r["tokens_per_s"], r["allreduce_ms"], 100 * share,
            r["tokens_per_s"] / base,
            "%d/%d" % (r["buckets_early"], r["buckets"]) if r["ranks"] > 1 else "-"))
    print("compile (split steps, cached after): %.1f s" % compile_split)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": cpu, "cores": os.cpu_count(),
                       "layers": a.layers, "d": a.d, "seq": a.seq, "vocab": a.vocab,
                       "parameters": params, "global_batch": g, "steps": a.steps,
                       "rounds": a.rounds, "runs": runs,
                       "compile_split_s": compile_split}, f, indent=1)


if __name__ == "__main__":
    main()
