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

With --interleave a round is one process (form_train_worker.py, run by the
Python that has the built `rewire` package, build/venv's) that trains every
form at once, one step of each in turn (every trainer in memory at once: at
GPT-2-small's shape ~6 GB each, so three fit in 24 GiB, four do not): a round's paired figure is then the
median over its steps of a form's step time over the plain step taken next
to it, which a shared VM's slow spells (seconds long, within a round) move
far less than rounds in separate processes minutes apart. Checked against
separate processes at 2 layers (the same figures). At GPT-2-small's size
(12 layers, vocabulary 50257) it was biased before the runtime's
temporaries' cache kept large blocks (docs/performance.md, 2026-12-07): the
plain step faulted in its 154 MB gradient every step alone and not beside
the mHC trainer, and ran ~12% faster there. Since the fix neither faults
more than 6 300 pages a step, and the method agrees with the step's OpenMP
regions there (+5.0% against +4.9% for mHC). The two trainers also share
the thread's cache of freed temporaries: with 256 slots LAuReL's step beside
the plain one lost its large blocks and faulted 4 000 - 20 000 pages a step
(+2.3% against +1.6% with the runtime's 1024 slots since).

    python bench/form_train_overhead.py [--forms hc,mhc,laurel] [--layers 4] [--d 256]
                                        [--seq 128] [--batch 4] [--steps 20] [--rounds 5]
                                        [--interleave] [--out r.json]

Needs torch (any version: train_step.py only exports the model with it) and the built tools.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from train_step import add_model_args, cpu_model, export_gpt, rewire_tokens_per_s  # noqa: E402
from form_train_worker import residual_of  # noqa: E402
from timing import paired_interval  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forms", default="hc,mhc,laurel",
                    help="comma-separated residual kinds; plain~b: the plain model again (A/A)")
    add_model_args(ap, steps=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--interleave", action="store_true",
                    help="all forms in one process a round, their steps in turn")
    ap.add_argument("--rewire-python", default=os.path.join(ROOT, "build", "venv", "bin", "python"),
                    help="a Python with the built rewire package (for --interleave)")
    ap.add_argument("--out")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rewire-form-overhead-")
    _, onnx_path, _, data = export_gpt(a, work)
    env = dict(os.environ, REWIRE_CACHE_DIR=os.path.join(work, "cache"))
    forms = ["plain"] + [f for f in a.forms.split(",") if f]

    def command(form):
        cmd = [os.path.join(ROOT, "build", "bin", "rewire-train"), onnx_path, "--data=" + data,
               "--optimizer=adamw", "--lr=1e-3"]
        kind = residual_of(form)
        return cmd + ([] if kind is None else ["--residual=" + kind])

    compile_s = {}
    for form in forms:
        t0 = time.perf_counter()
        subprocess.run(command(form) + ["--steps=1", "--log-every=0"], check=True, env=env,
                       capture_output=True)
        compile_s[form] = time.perf_counter() - t0
    rates = {f: [] for f in forms}
    ratios = {f: [] for f in forms}  # a round's paired overhead of each form
    for r in range(a.rounds):
        print("round %d of %d" % (r + 1, a.rounds), file=sys.stderr, flush=True)
        # Each round starts with another form, so no form always runs first.
        order = forms[r % len(forms):] + forms[:r % len(forms)]
        if a.interleave:
            run = subprocess.run([a.rewire_python, os.path.join(HERE, "form_train_worker.py"),
                                  "--model", onnx_path, "--data", data, "--forms", ",".join(order),
                                  "--batch", str(a.batch), "--seq", str(a.seq),
                                  "--steps", str(a.steps)],
                                 env=env, capture_output=True, text=True)
            if run.returncode != 0:
                # Every form's trainer (parameters, AdamW state, activations)
                # lives in the one worker: at GPT-2-small's shape ~6 GB each,
                # and the kernel's OOM killer ends it with SIGKILL.
                sys.exit("form_train_overhead.py: the interleaved worker (%d trainers: plain and %s) "
                         "%s%s" % (len(order), ",".join(forms[1:]),
                                   "was killed (SIGKILL: out of memory? measure fewer forms a run)"
                                   if run.returncode == -9 else "failed (exit %d)" % run.returncode,
                                   ":\n" + run.stderr[-2000:] if run.stderr else ""))
            seconds = json.loads(run.stdout.strip().splitlines()[-1])
            for form in forms:
                rates[form].append(a.batch * a.seq / statistics.median(seconds[form]))
                ratios[form].append(statistics.median(
                    f / p - 1 for p, f in zip(seconds["plain"], seconds[form])))
            continue
        for form in order:
            rates[form].append(rewire_tokens_per_s(command(form), a.steps, a.batch * a.seq, env,
                                                   work, median=True))
        for form in forms:
            ratios[form].append(rates["plain"][-1] / rates[form][-1] - 1)
    median = {f: statistics.median(v) for f, v in rates.items()}
    print("%s, %s; GPT %d layers, d %d, batch %d x %d, AdamW; %d rounds x %d steps%s" % (
        time.strftime("%Y-%m-%d"), cpu_model(), a.layers, a.d, a.batch, a.seq, a.rounds, a.steps,
        ", interleaved" if a.interleave else ""))
    print("%-10s %12s %10s %10s %17s %12s" % ("form", "tokens/s", "overhead", "paired",
                                              "paired 95% CI", "compile s"))
    rows = []
    for form in forms:
        overhead = median["plain"] / median[form] - 1
        paired = statistics.median(ratios[form])
        low, high = paired_interval(ratios[form])
        print("%-10s %12.0f %9.1f%% %9.1f%% %7.1f%% .. %4.1f%% %12.1f" % (
            form, median[form], 100 * overhead, 100 * paired, 100 * low, 100 * high,
            compile_s[form]))
        rows.append({"form": form, "tokens_per_s": median[form], "all_rounds": rates[form],
                     "paired_rounds": ratios[form], "overhead": overhead,
                     "overhead_paired": paired,
                     "overhead_paired_ci95": [low, high], "compile_s": compile_s[form]})
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(), "layers": a.layers,
                       "d": a.d, "seq": a.seq, "batch": a.batch, "steps": a.steps,
                       "rounds": a.rounds, "interleave": a.interleave, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
