#!/usr/bin/env python3
"""One round of `form_train_overhead.py --interleave`: train steps of several
forms of one model in one process, taken in turn.

    form_train_worker.py --model gpt.onnx --data tokens.bin --forms plain,mhc \
        --batch 4 --seq 128 --steps 30

Runs with a Python that has the `rewire` package (build/venv/bin/python). Each
form gets its own `rewire.Trainer` (AdamW, lr 1e-3, the compile cache as the
tools use it), then WARMUP untimed steps, then --steps steps in which every
form takes one step after another -- in the given order on even steps, in
the reverse order on odd ones, so no form always follows the same one -- on
the same batch (windows of the uint16 token file, the next token as the
target). A machine that slows for a while then slows the forms' steps of
that while alike, and a step of one form is compared with the step of
another taken next to it. Prints one JSON object: form -> the timed steps'
seconds, in order.

A form may carry a tag after "~" that only names it: `plain~b` trains the
plain model a second time (an A/A check of the method: its overhead is 0).
"""
import argparse
import json
import sys

import numpy as np

WARMUP = 2  # as train_step.WARMUP_STEPS: oneDNN's kernels JIT, temporaries fault in


def residual_of(form):
    """The --residual value of a form name (None: the plain model)."""
    kind = form.split("~", 1)[0]
    return None if kind == "plain" else kind


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True, help="uint16 tokens (train_step.export_gpt's)")
    ap.add_argument("--forms", required=True, help="comma-separated; 'plain' for no rewrite")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    a = ap.parse_args()
    import rewire  # the build's package; form_train_overhead.py imports this file without it

    forms = [f for f in a.forms.split(",") if f]
    if not forms or a.steps < 1:
        sys.exit("form_train_worker.py: give --forms and --steps of at least 1")
    tokens = np.fromfile(a.data, dtype=np.uint16).astype(np.int64)
    window = a.batch * a.seq
    batches = (len(tokens) - 1) // window
    if batches < 1:
        sys.exit("form_train_worker.py: %s holds fewer than %d + 1 tokens" % (a.data, window))
    model = rewire.load(a.model)
    trainers = {f: rewire.Trainer(model, optimizer="adamw", loss="cross_entropy", lr=1e-3,
                                  steps=WARMUP + a.steps,
                                  residual=residual_of(f)) for f in forms}

    def batch(i):
        o = (i % batches) * window
        return (tokens[o:o + window].reshape(a.batch, a.seq),
                tokens[o + 1:o + window + 1].reshape(a.batch, a.seq))

    for f in forms:
        for i in range(WARMUP):
            trainers[f].step(*batch(i))
    seconds = {f: [] for f in forms}
    for i in range(a.steps):
        x, y = batch(WARMUP + i)
        for f in (forms if i % 2 == 0 else forms[::-1]):
            trainers[f].step(x, y)
            seconds[f].append(trainers[f].last["seconds"])
    json.dump(seconds, sys.stdout)
    print()


if __name__ == "__main__":
    main()
