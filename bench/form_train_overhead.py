"""Training-time overhead of residual forms: rewire-train's compiled AdamW
step on bench/train_step.py's GPT (pre-LN decoder) rewritten with each form,
against the plain model, in one run on one machine.

Each form's train step is compiled once (its compile time reported apart),
then the forms run in round-robin rounds of --steps steps each (so drift of
a shared VM hits all alike); a form's figure is the median over rounds of
its tokens/s at its median step among the steps after WARMUP_STEPS untimed
ones (train_step.py's rewire_tokens_per_s with median=True: on a shared VM a
stall of a few steps moved the mean of a round by 10% and more). Its overhead (the extra share of training time) is
given two ways: from the medians, plain tokens/s / form tokens/s - 1, and
paired, the median over rounds of that ratio within each round, which a
shared VM's drift between rounds moves less, with a 95% bootstrap interval
of that median (rounds resampled). Each round starts with the next form in
turn, so none always runs first.

    python bench/form_train_overhead.py [--forms hc,mhc,laurel] [--layers 4] [--d 256]
                                        [--seq 128] [--batch 4] [--steps 20] [--rounds 5]
                                        [--out r.json]

Needs torch (any version: train_step.py only exports the model with it) and the built tools.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import add_model_args, cpu_model, export_gpt, rewire_tokens_per_s  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def paired_interval(ratios, resamples=4000):
    """A 95% bootstrap interval of the median of the in-round ratios: the
    rounds resampled with replacement (a fixed seed, so a run's report
    does not change when printed again)."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios)))
                     for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forms", default="hc,mhc,laurel")
    add_model_args(ap, steps=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rewire-form-overhead-")
    _, onnx_path, _, data = export_gpt(a, work)
    env = dict(os.environ, REWIRE_CACHE_DIR=os.path.join(work, "cache"))
    forms = ["plain"] + [f for f in a.forms.split(",") if f]

    def command(form):
        cmd = [os.path.join(ROOT, "build", "bin", "rewire-train"), onnx_path, "--data=" + data,
               "--optimizer=adamw", "--lr=1e-3"]
        return cmd + ([] if form == "plain" else ["--residual=" + form])

    compile_s = {}
    for form in forms:
        t0 = time.perf_counter()
        subprocess.run(command(form) + ["--steps=1", "--log-every=0"], check=True, env=env,
                       capture_output=True)
        compile_s[form] = time.perf_counter() - t0
    rates = {f: [] for f in forms}
    for r in range(a.rounds):
        # Each round starts with another form, so no form always runs first.
        for form in forms[r % len(forms):] + forms[:r % len(forms)]:
            rates[form].append(rewire_tokens_per_s(command(form), a.steps, a.batch * a.seq, env,
                                                   work, median=True))
    median = {f: statistics.median(v) for f, v in rates.items()}
    print("%s, %s; GPT %d layers, d %d, batch %d x %d, AdamW; %d rounds x %d steps" % (
        time.strftime("%Y-%m-%d"), cpu_model(), a.layers, a.d, a.batch, a.seq, a.rounds, a.steps))
    print("%-10s %12s %10s %10s %17s %12s" % ("form", "tokens/s", "overhead", "paired",
                                              "paired 95% CI", "compile s"))
    rows = []
    for form in forms:
        overhead = median["plain"] / median[form] - 1
        ratios = [p / f - 1 for p, f in zip(rates["plain"], rates[form])]
        paired = statistics.median(ratios)
        low, high = paired_interval(ratios)
        print("%-10s %12.0f %9.1f%% %9.1f%% %7.1f%% .. %4.1f%% %12.1f" % (
            form, median[form], 100 * overhead, 100 * paired, 100 * low, 100 * high,
            compile_s[form]))
        rows.append({"form": form, "tokens_per_s": median[form], "all_rounds": rates[form],
                     "overhead": overhead, "overhead_paired": paired,
                     "overhead_paired_ci95": [low, high], "compile_s": compile_s[form]})
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(), "layers": a.layers,
                       "d": a.d, "seq": a.seq, "batch": a.batch, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
