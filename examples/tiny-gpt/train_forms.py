"""A short training comparison of residual forms on the bundled tiny GPT
(tiny-gpt.onnx): each form is compiled with its train step (rewire-train
runs rewire-compile --train --residual=FORM) and trained with AdamW on the
same generated token stream (seeded), then the table shows the loss at the
start and the mean of the last 10 steps.

    python3 train_forms.py --build build [--steps 150]

The corpus is synthetic (a patterned stream over the model's 64 tokens:
each group of four is a random symbol followed by three tokens determined
by it), so the learnable part is the within-group structure; the floor is
about ln(8)/4 = 0.52 nats per token.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

FORMS = [
    ("plain residual", ""),
    ("rezero", "rezero"),
    ("layerscale", "layerscale"),
    ("review (identity init)", "review:init=identity"),
    ("highway (identity init)", "highway:init=identity"),
    ("ancre", "ancre"),
    ("denseformer", "denseformer"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--steps", type=int, default=150)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    env = dict(os.environ, PATH=os.path.join(build, "bin") + os.pathsep + os.environ["PATH"])
    rng = np.random.default_rng(0)
    seq = []
    for _ in range(4000):
        s = int(rng.integers(0, 8))
        seq += [s, (3 * s + 8) % 64, (5 * s + 17) % 64, 63]
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "corpus.bin")
        np.array(seq, dtype=np.uint16).tofile(data)
        print("training the bundled tiny GPT (2 layers, d=32, 8 tokens x 2) for %d AdamW steps "
              "(lr 3e-3) per residual form, compiled train steps, same data" % a.steps)
        print()
        print("%-26s %10s %14s %10s" % ("form", "first loss", "last-10 loss", "seconds"))
        print("-" * 64)
        for label, form in FORMS:
            metrics = os.path.join(d, "m.csv")
            cmd = ["rewire-train", os.path.join(HERE, "tiny-gpt.onnx"), "--data=" + data,
                   "--steps=%d" % a.steps, "--optimizer=adamw", "--lr=3e-3", "--log-every=0",
                   "--metrics=" + metrics, "--seed=1", "--shuffle"]
            if form:
                cmd.append("--residual=" + form)
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            secs = time.perf_counter() - t0
            if r.returncode != 0:
                print("%-26s failed: %s" % (label, r.stderr.strip().splitlines()[-1][:80]))
                continue
            with open(metrics) as f:
                losses = [float(row["loss"]) for row in csv.DictReader(f)]
            print("%-26s %10.4f %14.4f %10.1f" % (label, losses[0], float(np.mean(losses[-10:])), secs))
    print()
    print("seconds include compiling the train step; one seed, a few steps: a smoke comparison,")
    print("not a result (the experiments of docs/results/ are the place for claims).")


if __name__ == "__main__":
    sys.exit(main())
