"""Interleaved A/B timing of precompiled train-step artifacts.

    train_ab.py DIR NAME[,NAME...] [--rounds R] [--steps S] [--data tokens.bin]

Each NAME is an artifact `DIR/NAME.rwx` (with its `NAME.params.safetensors`)
made by `rewire-compile MODEL --train=adamw:loss=cross_entropy -o DIR/NAME.rwx`
(a model and token file: those `form_train_overhead.py` leaves in its work
folder, `$TMPDIR/rewire-form-overhead-*/gpt.onnx` and `tokens.bin`); two
builds of the compiler or runtime compare as artifacts made by each, a
residual form against the plain model as artifacts of one. Every round runs
each artifact once under `rewire-train` (S steps after 2 warm-up steps, its
own process, AdamW) and keeps the median step time; the artifacts alternate
within a round, so a slow minute of a shared machine falls on all of them.
Printed per artifact against the first: the median over rounds of the
in-round ratio ("paired"), the ratio of the fastest round medians and of
the fastest steps (noise only adds time, so the minima are the steadiest
figures on a VM whose rounds swing by 10%). A small difference (1%) needs
many rounds: look at the three figures together.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("names", help="comma-separated artifact names; the first is the baseline")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--data", default=None, help="token file (default DIR/tokens.bin)")
    ap.add_argument("--trainer", default=os.path.join(HERE, "..", "build", "bin", "rewire-train"))
    args = ap.parse_args()
    names = args.names.split(",")
    data = args.data or os.path.join(args.dir, "tokens.bin")
    for n in names:
        if not os.path.isfile(os.path.join(args.dir, n + ".rwx")):
            sys.exit("train_ab.py: no artifact %s.rwx in %s" % (n, args.dir))
    medians = {n: [] for n in names}
    fastest = {n: [] for n in names}
    with tempfile.TemporaryDirectory(prefix="rewire-train-ab-") as tmp:
        log = os.path.join(tmp, "steps.jsonl")
        for r in range(args.rounds):
            for n in names:
                subprocess.run([args.trainer, os.path.join(args.dir, n + ".rwx"), "--data=" + data,
                                "--optimizer=adamw", "--lr=1e-3", "--steps=%d" % (args.steps + 2),
                                "--log-every=0", "--jsonl=" + log],
                               check=True, capture_output=True)
                with open(log) as f:
                    steps = [json.loads(line)["step_ms"] for line in f if "step_ms" in line][2:]
                medians[n].append(statistics.median(steps))
                fastest[n].append(min(steps))
            print("round %d: " % r + "  ".join("%s %.1f ms" % (n, medians[n][-1]) for n in names),
                  flush=True)
    base = names[0]
    print("%-16s %10s %9s %12s %11s" % ("artifact", "median ms", "paired", "min rounds", "min step"))
    for n in names:
        paired = statistics.median(b / a - 1 for a, b in zip(medians[base], medians[n]))
        print("%-16s %10.1f %+8.1f%% %+11.1f%% %+10.1f%%" % (
            n, statistics.median(medians[n]), 100 * paired,
            100 * (min(medians[n]) / min(medians[base]) - 1),
            100 * (min(fastest[n]) / min(fastest[base]) - 1)))


if __name__ == "__main__":
    main()
