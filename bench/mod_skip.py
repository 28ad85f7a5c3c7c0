"""Mixture-of-Depths that skips compute: the forward of the benchmark GPT
(bench/train_step.py's: pre-LN, causal attention with a constant mask, GELU
MLP) rewritten with kind=nag, against the same model with residual-mod
rate=R (each sequence's floor(R*T) tokens with the smallest modulator skip
every sublayer: the branch runs on the kept rows only) and with the masked
form (skip=false: every row computed), in one run, round-robin.

The routed sublayers' time is the model's time minus that of the same GPT
with 0 layers (embedding, final norm, head), measured alike; the paired
figure is the median over rounds of that ratio within each round, with a 95%
bootstrap interval.

The models are timed in a child process that has not imported torch: beside
Debian's torch oneDNN runs on its libgomp pool, another than the loops'
(runtime/Model.cpp), and the two spin against each other (2026-12-07: nag
170 ms there, 142 ms alone).

    build/venv/bin/python bench/mod_skip.py [--layers 4] [--d 512] [--seq 256]
                                            [--batch 4] [--rate 0.25] [--out r.json]
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
import timing  # noqa: E402
from rewire_sysinfo import cpu_model  # noqa: E402


def tool(name, *args):
    subprocess.run([os.path.join(ROOT, "build", "bin", name)] + list(args), check=True)


def time_models(spec):
    """The child: times the artifacts `spec` names (JSON: nets, ids, rounds,
    out) round-robin and writes every round's ms to `out`."""
    import rewire_runtime
    with open(spec) as f:
        s = json.load(f)
    ids = np.load(s["ids"])
    nets = {k: rewire_runtime.Model(rwx) for k, rwx in s["nets"].items()}
    raw = {}
    timing.round_robin({k: (lambda n=n: n.run("forward", ids)) for k, n in nets.items()},
                       s["rounds"], raw)
    with open(s["out"], "w") as f:
        json.dump(raw, f)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--time-child":
        return time_models(sys.argv[2])
    import train_step  # torch: the parent only
    ap = argparse.ArgumentParser()
    train_step.add_model_args(ap, steps=0)
    ap.set_defaults(d=512, seq=256)
    ap.add_argument("--rate", type=float, default=0.25)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rewire-mod-bench-")
    _, model, _, _ = train_step.export_gpt(a, work)
    layers = a.layers
    a.layers = 0
    empty_dir = os.path.join(work, "empty")
    os.makedirs(empty_dir)
    _, empty, _, _ = train_step.export_gpt(a, empty_dir)
    a.layers = layers
    mlir = os.path.join(work, "gpt.mlir")
    tool("rewire-import", model, "-o", mlir)
    nag = "func.func(residual-detect),residual-rewrite{kind=nag}"
    variants = {"nag": nag,
                "nag + MoD (skipping)": nag + ",residual-mod{rate=%g}" % a.rate,
                "nag + MoD (masked)": nag + ",residual-mod{rate=%g skip=false}" % a.rate}
    nets, compile_s = {}, {}
    for i, (name, passes) in enumerate(variants.items()):
        src = os.path.join(work, "v%d.mlir" % i)
        tool("rewire-opt", mlir, "-o", src, "--pass-pipeline=builtin.module(%s)" % passes)
        rwx = os.path.join(work, "v%d.rwx" % i)
        t0 = time.perf_counter()
        tool("rewire-compile", src, "-o", rwx)
        compile_s[name] = time.perf_counter() - t0
        nets[name] = rwx
    rwx = os.path.join(work, "empty.rwx")
    tool("rewire-compile", empty, "-o", rwx)
    nets["0 layers"] = rwx
    ids = os.path.join(work, "ids.npy")
    np.save(ids, np.random.default_rng(1).integers(0, a.vocab, (a.batch, a.seq)).astype(np.int64))
    spec, out = os.path.join(work, "timing.json"), os.path.join(work, "rounds.json")
    with open(spec, "w") as f:
        json.dump({"nets": nets, "ids": ids, "rounds": a.rounds, "out": out}, f)
    subprocess.run([sys.executable, os.path.abspath(__file__), "--time-child", spec], check=True)
    with open(out) as f:
        raw = json.load(f)
    ms = timing.medians(raw)
    base = ms["0 layers"][0]
    full = ms["nag"][0]
    kept = a.seq - int(a.rate * a.seq)
    print("CPU: %s; GPT %d layers, d %d, %d heads, B %d x T %d; rate %g (%d of %d tokens kept)" % (
        cpu_model(), a.layers, a.d, a.heads, a.batch, a.seq, a.rate, kept, a.seq))
    print("%-24s %10s %10s %14s %16s %10s" % ("model", "median ms", "min ms", "sublayers ms",
                                              "vs nag (forward)", "compile s"))
    rows = {}
    for k, (med, mn) in ms.items():
        sub = med - base if k != "0 layers" else 0.0
        rows[k] = {"median_ms": med, "min_ms": mn, "sublayers_ms": sub,
                   "compile_s": compile_s.get(k)}
        print("%-24s %10.2f %10.2f %14.2f %16s %10s" % (
            k, med, mn, sub, "%.3f" % (med / full) if k != "0 layers" else "",
            "%.1f" % compile_s[k] if k in compile_s else ""))
    skip = rows["nag + MoD (skipping)"]
    sub_ratio = skip["sublayers_ms"] / rows["nag"]["sublayers_ms"]
    print("routed sublayers' time: %.3f of nag's (%.1f%% less); whole forward %.3f (%.1f%% less)" % (
        sub_ratio, 100 * (1 - sub_ratio), skip["median_ms"] / full, 100 * (1 - skip["median_ms"] / full)))
    skip_key = "nag + MoD (skipping)"
    sub_rounds = [(m - e) / (n - e) for m, n, e in zip(raw[skip_key], raw["nag"], raw["0 layers"])]
    fwd_rounds = [m / n for m, n in zip(raw[skip_key], raw["nag"])]
    paired = {}
    for name, rounds in (("sublayers", sub_rounds), ("forward", fwd_rounds)):
        low, high = timing.paired_interval(rounds)
        paired[name] = {"ratio": statistics.median(rounds), "ci95": [low, high]}
        print("paired, %s: %.1f%% less (95%% interval %.1f - %.1f%%)" % (
            name, 100 * (1 - paired[name]["ratio"]), 100 * (1 - high), 100 * (1 - low)))
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(), "args": vars(a),
                       "rows": rows, "sublayer_ratio": sub_ratio, "paired": paired,
                       "rounds_ms": raw}, f, indent=1)


if __name__ == "__main__":
    main()
