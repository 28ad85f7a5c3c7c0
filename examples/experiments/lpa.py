"""LPA (papers.md section 3): "train once, use N models". A residual MLP
fitting a 2-D surface and a tiny character-level transformer, trained by
rewire-train end to end (only the output's loss; every depth read out by the
shared head for monitoring) and with LPA's per-depth loss (variant A,
uniform weights; variant B, stop-gradient). Reports the test error at every
depth, whether it falls monotonically with depth, and checks that the
truncated models (residual-truncate) evaluated stand-alone give the same
errors as the readouts.

    python3 examples/experiments/lpa.py --build build [--quick]

Writes docs/results/lpa.md and its figures (--quick: a short run of the
surface task to a temporary directory, for the README's demo).
"""
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common as C  # noqa: E402
import models  # noqa: E402

BLOCKS, WIDTH, BATCH = 8, 32, 64
VARIANTS = [  # (label, --residual, --depth-weights)
    ("end-to-end", "lpa", "last"),
    ("LPA A (uniform)", "lpa", "uniform"),
    ("LPA B (stop-gradient)", "lpa:stop-gradient=true", "uniform"),
]


def surface(xy):
    x, y = xy[:, 0], xy[:, 1]
    return (np.sin(3 * x) * np.cos(3 * y) + 0.1 * (x ** 2 + y ** 2))[:, None]


def monotone(errors, slack=0.01):
    """Non-increasing with depth, allowing 1% noise between neighbours."""
    return all(b <= a * (1 + slack) for a, b in zip(errors, errors[1:]))


def worst_increase(errors):
    """The largest relative increase of the error from one depth to the next."""
    return max([0.0] + [(b - a) / a for a, b in zip(errors, errors[1:])])


def train(work, model, label, residual, weights, seed, steps, data, init=None, extra=()):
    tag = "%s-%d" % (label.split()[0].lower() + ("b" if "B" in label else ""), seed)
    jsonl = os.path.join(work, tag + ".jsonl")
    out = os.path.join(work, tag + ".safetensors")
    args = ["rewire-train", model, "--residual=" + residual, "--depth-weights=" + weights,
            "--steps=%d" % steps, "--optimizer=adamw", "--lr=3e-3", "--weight-decay=0.01",
            "--schedule=cosine", "--warmup=%d" % max(1, steps // 20), "--shuffle",
            "--seed=%d" % seed, "--eval-every=%d" % max(1, steps // 10), "--jsonl=" + jsonl,
            "--log-every=0", "--output=" + out] + list(data) + list(extra)
    if init:
        args.append("--params=" + init)
    C.tool(*args)
    tr, val = C.read_jsonl(jsonl)
    return tr, val, out


def depth_errors(row, depths):
    return [row["val_loss_depth%d" % k] for k in range(1, depths + 1)]


def surface_task(work, rep, steps, seeds):
    rng = np.random.default_rng(0)
    xtr = rng.uniform(-1, 1, (2048, 2)).astype(np.float32)
    xte = rng.uniform(-1, 1, (1024, 2)).astype(np.float32)
    paths = {}
    for name, a in (("x", xtr), ("y", surface(xtr)), ("xt", xte), ("yt", surface(xte))):
        paths[name] = os.path.join(work, name + ".npy")
        np.save(paths[name], a.astype(np.float32))
    data = ["--inputs=" + paths["x"], "--targets=" + paths["y"], "--val-inputs=" + paths["xt"],
            "--val-targets=" + paths["yt"], "--eval-batches=%d" % (1024 // BATCH)]
    torch.manual_seed(0)
    model = models.export(models.ResMLP(BLOCKS, WIDTH), torch.zeros(BATCH, 2),
                          os.path.join(work, "resmlp.onnx"))
    results = {}  # label -> list over seeds of (per-depth test MSE, val curve, trained weights)
    for seed in seeds:
        torch.manual_seed(seed)
        C.save_safetensors(os.path.join(work, "init-%d.safetensors" % seed),
                           {k: v.numpy() for k, v in models.ResMLP(BLOCKS, WIDTH).state_dict().items()})
    # Seed-major order: the first jobs on the two cores compile different variants.
    jobs = [(label, residual, weights, seed) for seed in seeds for label, residual, weights in VARIANTS]
    outs = C.parallel([lambda j=j: train(work, model, j[0], j[1], j[2], j[3], steps, data,
                                         os.path.join(work, "init-%d.safetensors" % j[3])) for j in jobs])
    for (label, _, _, seed), (tr, val, out) in sorted(zip(jobs, outs), key=lambda x: (x[0][3], x[0][0])):
        results.setdefault(label, []).append((depth_errors(val[-1], BLOCKS), val, out))
        print("  surface %-22s seed %d: test MSE by depth %s" % (
            label, seed, " ".join("%.4f" % e for e in results[label][-1][0])), flush=True)

    depths = list(range(1, BLOCKS + 1))
    rep.add("## 1. Surface regression with a residual MLP")
    rep.add("")
    rep.add("z = sin(3x)·cos(3y) + 0.1(x² + y²) on [-1, 1]², 2048 training and 1024 test points; "
            "a residual MLP (input layer, %d pre-LN blocks of width %d with a 2× GELU MLP, shared "
            "head = final LayerNorm + linear), AdamW (lr 3e-3, weight decay 0.01, warmup + cosine), "
            "batch %d, %d steps, seeds %s (the seed sets the initial weights and the shuffle). Each "
            "depth k is read out through the shared head; its test MSE is what a k-block model "
            "would score." % (BLOCKS, WIDTH, BATCH, steps, ", ".join(map(str, seeds))))
    rep.add("")
    rows = []
    for k in depths:
        rows.append(["%d" % k] + [C.fmt([r[0][k - 1] for r in results[l]]) for l, _, _ in VARIANTS])
    rep.table(["depth"] + ["test MSE, %s" % l for l, _, _ in VARIANTS], rows)
    mono = {l: sum(monotone(r[0]) for r in results[l]) for l, _, _ in VARIANTS}
    rep.add("Error non-increasing with depth (1%% slack), seeds out of %d: %s. Largest increase "
            "from one depth to the next, over seeds: %s." % (
                len(seeds), ", ".join("%s %d" % (l, mono[l]) for l, _, _ in VARIANTS),
                ", ".join("%s %.1f%%" % (l, 100 * max(worst_increase(r[0]) for r in results[l]))
                          for l, _, _ in VARIANTS)))
    rep.add("")

    plt = C.pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    for label, _, _ in VARIANTS:
        e = np.array([r[0] for r in results[label]])
        ax[0].errorbar(depths, e.mean(0), yerr=e.std(0, ddof=1) if len(seeds) > 1 else None,
                       marker="o", capsize=3, label=label)
        v = results[label][0][1]
        ax[1].plot([row["step"] for row in v], [row["val_loss_depth%d" % BLOCKS] for row in v], label=label)
    ax[0].set(yscale="log", xlabel="depth (blocks used)", ylabel="test MSE", title="error at every depth")
    ax[1].set(yscale="log", xlabel="step", ylabel="test MSE, full depth", title="training (seed %d)" % seeds[0])
    for a in ax:
        a.legend()
        a.grid(alpha=0.3)
    rep.figure(fig, "surface-depth", "Test MSE of the readout at every depth (mean and sd over seeds), "
               "and the full-depth test MSE during training.")

    # Truncated models as stand-alone models.
    import rewire_runtime
    mlir = os.path.join(work, "resmlp.mlir")
    C.tool("rewire-import", model, "-o", mlir)
    xte, yte = np.load(paths["xt"]), np.load(paths["yt"])
    def truncated(k):
        t_mlir = os.path.join(work, "trunc%d.mlir" % k)
        C.tool("rewire-opt", mlir, "-o", t_mlir, "--pass-pipeline=builtin.module(func.func(residual-detect),"
               "residual-truncate{depth=%d})" % k)
        rwx = os.path.join(work, "trunc%d.rwx" % k)
        C.tool("rewire-compile", t_mlir, "-o", rwx)
        row = ["%d" % k]
        for label, _, _ in VARIANTS[:2]:
            net = rewire_runtime.Model(rwx, results[label][0][2])
            pred = np.concatenate([net.run("forward", xte[i:i + BATCH])[0] for i in range(0, len(xte), BATCH)])
            row += [float(((pred - yte) ** 2).mean()), results[label][0][0][k - 1]]
        return row

    trunc_rows, worst = [], 0.0
    for row in C.parallel([lambda k=k: truncated(k) for k in depths]):
        worst = max(worst, abs(row[1] - row[2]) / row[2], abs(row[3] - row[4]) / row[4])
        trunc_rows.append([row[0]] + ["%.3e" % v for v in row[1:]])
    rep.add("Truncated models: `residual-truncate{depth=k}` keeps the first k blocks and the head; "
            "compiled and run stand-alone on the test set with the trained weights (seed %d) they "
            "score the readout's error (largest relative difference %.1e):" % (seeds[0], worst))
    rep.add("")
    rep.table(["depth", "truncated, end-to-end", "readout, end-to-end", "truncated, LPA A", "readout, LPA A"],
              trunc_rows)
    return results, mono, worst


def text_task(work, rep, steps, seed=0):
    tr, va, _ = C.char_corpus(work)
    layers = 6
    torch.manual_seed(seed)
    model = models.export(models.CharGPT(layers=layers), torch.zeros(8, 64, dtype=torch.long),
                          os.path.join(work, "chargpt.onnx"))
    data = ["--data=" + tr, "--val-data=" + va, "--eval-batches=8"]
    runs = C.parallel([lambda v=v: train(work, model, v[0], v[1], v[2], seed, steps, data) for v in VARIANTS[:2]])
    out = {}
    for (label, _, _), (_, val, _) in zip(VARIANTS[:2], runs):
        out[label] = val
        print("  text    %-22s: validation loss by depth %s" % (
            label, " ".join("%.3f" % e for e in depth_errors(val[-1], layers))), flush=True)
    rep.add("## 2. Character-level transformer")
    rep.add("")
    rep.add("A %d-layer pre-LN GPT (width 64, 4 heads, context 64, batch 8, GPT-2 init) on the bytes "
            "of the GPL-3 text (90%% train, 10%% validation), AdamW lr 3e-3 with warmup + cosine, "
            "%d steps, seed %d (one seed: this part costs most of the budget). Validation loss "
            "(nats per byte) of the shared head (final LayerNorm + unembedding) at every depth; "
            "uniform over 256 bytes is 5.55." % (layers, steps, seed))
    rep.add("")
    rep.table(["depth"] + ["validation loss, %s" % l for l, _, _ in VARIANTS[:2]],
              [["%d" % k] + ["%.3f" % out[l][-1]["val_loss_depth%d" % k] for l, _, _ in VARIANTS[:2]]
               for k in range(1, layers + 1)])
    plt = C.pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for label, _, _ in VARIANTS[:2]:
        ax.plot(range(1, layers + 1), depth_errors(out[label][-1], layers), marker="o", label=label)
    ax.set(xlabel="depth (layers used)", ylabel="validation loss (nats/byte)",
           title="char-level transformer: loss at every depth")
    ax.grid(alpha=0.3)
    ax.legend()
    rep.figure(fig, "text-depth", "Validation loss of the readout at every depth, end-to-end vs LPA.")
    return {l: depth_errors(out[l][-1], layers) for l in out}


def main():
    args, work = C.start("lpa")
    if args.quick:
        rep = C.Report("lpa-quick", "LPA (quick)")
        results, mono, worst = surface_task(work, rep, steps=300, seeds=[0])
        shutil.rmtree(work)
        e2e, lpa = results["end-to-end"][0][0], results["LPA A (uniform)"][0][0]
        print("LPA quick: test MSE at depth 1/%d: end-to-end %.4f/%.4f, LPA %.4f/%.4f; "
              "truncated = readout within %.1e" % (BLOCKS, e2e[0], e2e[-1], lpa[0], lpa[-1], worst))
        return
    rep = C.Report("lpa", "LPA: a usable model at every depth (Rewire reproduction)")
    rep.add("Claim (papers.md §3, our reading of the abstract): training every depth through the "
            "shared head makes the error fall monotonically with depth, so one training run gives "
            "N usable models, whereas end-to-end training leaves the intermediate depths useless.")
    rep.add("")
    seeds = [0, 1, 2]
    results, mono, worst = surface_task(work, rep, steps=1500, seeds=seeds)
    text = text_task(work, rep, steps=300)

    e2e = np.array([r[0] for r in results["end-to-end"]])
    lpa = np.array([r[0] for r in results["LPA A (uniform)"]])
    half = BLOCKS // 2
    ratio = e2e[:, :half].mean(1) / lpa[:, :half].mean(1)
    final = lpa[:, -1].mean() / e2e[:, -1].mean()
    rep.add("## Verdict")
    rep.add("")
    agree_mono = mono["LPA A (uniform)"] == len(seeds)
    agree_useless = bool(np.all(ratio > 2))
    rep.add("- Monotone under LPA: %s (%d of %d seeds; end-to-end: %d of %d)." % (
        "agrees" if agree_mono else "does not fully agree", mono["LPA A (uniform)"], len(seeds),
        mono["end-to-end"], len(seeds)))
    rep.add("- Intermediate depths under end-to-end training: their mean test MSE over depths 1-%d is "
            "%s× LPA's (per seed: %s) — %s." % (
                half, "%.1f" % ratio.mean(), ", ".join("%.1f" % r for r in ratio),
                "they are far worse, as claimed" if agree_useless else "not clearly worse"))
    rep.add("- Cost at full depth: LPA's final-depth test MSE is %.2f× end-to-end's (mean over seeds)." % final)
    rep.add("- Transformer: end-to-end depth-1 loss %.3f vs LPA %.3f; full depth %.3f vs %.3f." % (
        text["end-to-end"][0], text["LPA A (uniform)"][0], text["end-to-end"][-1], text["LPA A (uniform)"][-1]))
    rep.add("- Truncated models reproduce the readouts (largest relative difference %.1e)." % worst)
    rep.add("")
    rep.write("python3 examples/experiments/lpa.py --build build")


if __name__ == "__main__":
    main()
