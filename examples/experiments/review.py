"""Review Residuals (papers.md section 4): depth stability of the gate.

A narrow character-level transformer with 2 x LAYERS sublayers, trained by
rewire-train as the standard residual, Review with the additive combine
(h + r u) and Review with the convex combine ((1 - r) h + r u), r at 0.5
(W = 0, b = 0, the paper's init). The paper's claim: beyond ~20 sublayers
the convex form stalls (every layer halves the signal and the gradient)
while the additive form trains. Logged: the loss, every parameter's gradient
norm (rewire-train --grad-norms, grouped by layer), and the gate r's mean
and variance per layer over training (rewire-report --layer-stats on
checkpoints).

    python3 examples/experiments/review.py --build build [--quick]
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common as C  # noqa: E402

VARIANTS = [("standard", ""), ("additive review", "review"),
            ("convex review", "review:combine=convex")]


def checkpoint_params(ck, step, out):
    """The model parameters of a rewire-train checkpoint, under model names."""
    tensors = C.read_safetensors(os.path.join(ck, "model-%d.safetensors" % step))
    C.save_safetensors(out, {k[6:]: v for k, v in tensors.items() if k.startswith("param:")})


def run(work, rep, layers, steps, snapshots):
    tr, va, ids, model = C.char_gpt(work, layers)
    curves, norms, gates = {}, {}, {}
    def train_variant(label, residual):
        tag = label.split()[0]
        ck = os.path.join(work, "ck-" + tag)
        jsonl = os.path.join(work, tag + ".jsonl")
        args = ["rewire-train", model, "--data=" + tr, "--val-data=" + va, "--eval-every=%d" % (steps // 10),
                "--eval-batches=8", "--steps=%d" % steps, "--optimizer=adamw", "--lr=1e-3",
                "--warmup=%d" % (steps // 10), "--schedule=cosine", "--seed=0", "--grad-norms",
                "--jsonl=" + jsonl, "--log-every=0", "--checkpoint=" + ck]
        if residual:
            args.append("--residual=" + residual)
        # In segments that stop at each snapshot (the schedule spans all
        # steps; --resume continues exactly), keeping each checkpoint.
        for i, stop in enumerate(s for s in snapshots if s > 0):
            C.tool(*(args + ["--stop-after=%d" % stop] + (["--resume"] if i else [])))
            if residual:
                checkpoint_params(ck, stop, os.path.join(work, "%s-%d.safetensors" % (tag, stop)))
        return jsonl

    logs = C.parallel([lambda l=l, r=r: train_variant(l, r) for l, r in VARIANTS])
    for (label, residual), jsonl in zip(VARIANTS, logs):
        tag = label.split()[0]
        train, val = C.read_jsonl(jsonl)
        curves[label] = (train, val)
        # Gradient norm per layer: the root of the summed squares of the
        # layer's parameters' norms, averaged over the first 10% of steps.
        early = train[:max(1, steps // 10)]
        per_layer = np.zeros(layers)
        for row in early:
            sq = np.zeros(layers)
            for name, v in row["grad_norms"].items():
                m = re.match(r"h\.(\d+)\.", name)
                if m:
                    sq[int(m.group(1))] += v * v
            per_layer += np.sqrt(sq)
        norms[label] = per_layer / len(early)
        print("  %-16s final validation loss %.4f" % (label, val[-1]["val_loss"]), flush=True)

    # Gate statistics at each snapshot, one job per gated variant (the
    # instrumented compile differs per variant, so they overlap safely).
    def variant_gates(label, residual):
        tag = label.split()[0]
        out = {}
        for step in snapshots:
            # Step 0: the rewritten model's own initial parameters.
            params = os.path.join(work, "%s-%d.safetensors" % (tag, step)) if step else ""
            out[step] = C.layer_stats(model, os.path.join(work, "%s-%d.html" % (tag, step)), residual,
                                      params, ids)
        return out

    gated = [(l, r) for l, r in VARIANTS if r]
    for (label, _), g in zip(gated, C.parallel([lambda l=l, r=r: variant_gates(l, r) for l, r in gated])):
        gates[label] = g

    sublayers = 2 * layers
    rep.add("## Setup")
    rep.add("")
    rep.add("A pre-LN GPT with %d layers = %d residual sublayers (width 32, 2 heads, context 32, batch 8, "
            "GPT-2 init) on the bytes of the GPL-3 text (90%%/10%% split); AdamW lr 1e-3, warmup + "
            "cosine, %d steps, seed 0. Review: `residual-rewrite kind=review` (W = 0, b = 0, so r = 0.5 "
            "at init), additive or convex combine. One seed per variant (the budget is one run each)." % (
                layers, sublayers, steps))
    rep.add("")
    rows = []
    for label, _ in VARIANTS:
        train, val = curves[label]
        rows.append([label, "%.3f" % train[0]["loss"], "%.3f" % np.mean([r["loss"] for r in train[-10:]]),
                     "%.3f" % val[-1]["val_loss"], "%.2e" % norms[label][0], "%.2e" % norms[label][-1]])
    rep.table(["model", "loss at step 0", "training loss, last 10 steps", "final validation loss",
               "grad norm, layer 0 (early)", "grad norm, last layer (early)"], rows)
    plt = C.pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    for label, _ in VARIANTS:
        train, val = curves[label]
        ax[0].plot([r["step"] for r in val], [r["val_loss"] for r in val], marker="o", ms=3, label=label)
        ax[1].plot(range(layers), norms[label], marker="o", ms=3, label=label)
    ax[0].set(xlabel="step", ylabel="validation loss (nats/byte)", title="training")
    ax[1].set(yscale="log", xlabel="layer", ylabel="gradient norm (mean over early steps)",
              title="per-layer gradient norms")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend()
    rep.figure(fig, "training", "Validation loss, and the gradient norm of each layer's parameters "
               "over the first 10% of training.")
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    for i, label in enumerate(l for l, _ in VARIANTS if l in gates):
        for step, s in sorted(gates[label].items()):
            m = [s.get((k, "gate_mean"), np.nan) for k in range(sublayers)]
            v = [s.get((k, "gate_var"), np.nan) for k in range(sublayers)]
            ax[i].errorbar(range(sublayers), m, yerr=np.sqrt(np.maximum(v, 0)), capsize=2, marker="o",
                           ms=2, label="step %d" % step)
        ax[i].set(xlabel="sublayer", ylabel="gate r: mean ± sd", title=label, ylim=(0, 1))
        ax[i].grid(alpha=0.3)
        ax[i].legend()
    rep.figure(fig, "gates", "The gate r per sublayer during training (mean ± sd over tokens and "
               "channels, 32 validation windows), from rewire-report --layer-stats on checkpoints.")
    return curves, norms


def main():
    args, work = C.start("review")
    rep = C.Report("review", "Review Residuals: depth stability of the gate (Rewire reproduction)")
    rep.add("Claim (papers.md §4): with r at 0.5, the convex update (1 - r) h + r u halves the signal "
            "and the gradient at every sublayer and stalls beyond ~20 sublayers, while the additive "
            "update h + r u trains.")
    rep.add("")
    if args.quick:
        layers, steps, snaps = 3, 40, [0, 40]
    else:
        layers, steps, snaps = 20, 300, [0, 150, 300]
    curves, norms = run(work, rep, layers, steps, snaps)
    final = {l: curves[l][1][-1]["val_loss"] for l, _ in VARIANTS}
    ratio = norms["convex review"][0] / norms["additive review"][0]
    rep.add("## Verdict")
    rep.add("")
    stall = final["convex review"] - final["additive review"]
    rep.add("- Final validation loss: standard %.3f, additive %.3f, convex %.3f: the convex form is %s "
            "(%+.3f nats/byte vs additive)." % (final["standard"], final["additive review"],
                                                final["convex review"],
                                                "behind, as claimed" if stall > 0.05 else
                                                "not clearly behind: contrary to the claim", stall))
    rep.add("- Layer-0 gradient norm early in training, convex / additive: %.2e (pure halving at every "
            "sublayer would give 0.5^%d = %.1e): the convex form's early layers barely learn." % (
                ratio, 2 * layers, 0.5 ** (2 * layers)))
    rep.add("")
    if not args.quick:
        rep.write("python3 examples/experiments/review.py --build build")
    else:
        print("review quick: final validation loss " + ", ".join("%s %.3f" % kv for kv in final.items()))


if __name__ == "__main__":
    main()
