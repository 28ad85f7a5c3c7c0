"""The main job of this stage: rewrite the residual stream of the bundled
tiny GPT (model.mlir) into each residual form with rewire-opt, check that
every result verifies and round-trips, and print what each form added.

    python3 demo.py --rewire-opt build/bin/rewire-opt

Exit codes: 0 every form rewrote and verified; 1 a rewire-opt run failed.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FORMS = [
    ("rezero", "kind=rezero"),
    ("skipinit", "kind=skipinit"),
    ("layerscale", "kind=layerscale"),
    ("layerscale (identity init)", "kind=layerscale init=identity"),
    ("review", "kind=review"),
    ("review, per-row gate", "kind=review gate=row"),
    ("review, convex", "kind=review combine=convex"),
    ("review (identity init)", "kind=review init=identity"),
    ("highway", "kind=highway"),
    ("nag (C = 8)", "kind=nag"),
    ("ancre (tau = 0.01)", "kind=ancre"),
    ("denseformer", "kind=denseformer"),
    ("lpa (per-depth readouts)", "kind=lpa"),
]
GLOBAL = re.compile(r'ml_program\.global private @"?(stream[^"(]+)"?\((#nn\.init<[^>]*>|dense<[^>]*> : tensor<[^>]*>)\) : tensor<([^>]*)>')
UPDATE = re.compile(r"residual\.(add|scale_add|gated_add \w+ \w+|nag_add|mix \w+|tap)")


def run(tool, args, text):
    r = subprocess.run([tool] + args, input=text, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("rewire-opt %s failed:\n%s" % (" ".join(args), r.stderr))
        sys.exit(1)
    return r.stdout


def numel(shape):
    n = 1
    for d in shape.split("x")[:-1]:
        n *= int(d)
    return n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rewire-opt", required=True)
    p.add_argument("--model", default=os.path.join(HERE, "model.mlir"))
    a = p.parse_args()
    model = open(a.model).read()
    base = run(a.rewire_opt, [], model)
    n_updates = len(re.findall(r"residual\.add ", base))
    print("model: %s" % os.path.relpath(a.model))
    print("residual stream 0: %d updates (attention and MLP of each block)\n" % n_updates)
    print("%-28s %-28s %7s %8s  %s" % ("form", "update op", "params", "scalars", "initialization"))
    print("-" * 110)
    for label, opts in FORMS:
        out = run(a.rewire_opt, ["--residual-rewrite=" + opts], model)
        # The rewritten model must verify and print/parse back identically.
        again = run(a.rewire_opt, [], out)
        if again != out:
            sys.stderr.write("round trip changed the %s model\n" % label)
            return 1
        ops = sorted(set(UPDATE.findall(out)))
        params = GLOBAL.findall(out)
        scalars = sum(numel(shape) for _, _, shape in params)
        # One initializer per parameter kind (the first layer's; NAG's alpha
        # and DenseFormer's weights vary with depth).
        first = {}
        for n, i, _ in params:
            first.setdefault(re.sub(r"stream0\.layer\d+\.", "", n),
                             re.sub(r" : tensor<[^>]*>", "", i.replace("#nn.init", "")))
        inits = ["%s=%s" % kv for kv in sorted(first.items())]
        print("%-28s %-28s %7d %8d  %s" % (label, ", ".join(ops), len(params), scalars,
                                           "; ".join(inits)))
    print()
    print("layer 0 before and after kind=review:")
    print("  " + next(l.strip() for l in base.splitlines() if "layer 0" in l))
    review = run(a.rewire_opt, ["--residual-rewrite=kind=review"], model)
    print("  " + next(l.strip() for l in review.splitlines() if "gated_add" in l and "layer 0" in l))
    return 0


if __name__ == "__main__":
    sys.exit(main())
