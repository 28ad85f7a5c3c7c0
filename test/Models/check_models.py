#!/usr/bin/env python3
"""Checks the real-model fixture corpus (test/Models/fixtures, made by
scripts/make-model-fixtures.py) end to end with the built tools:

  import   rewire-import succeeds (no nn.onnx_node left);
  detect   rewire-report finds exactly the manifest's residual updates;
  run      rewire-run's outputs match PyTorch's within 1e-4 relative
           (|got - want| <= 1e-4 * max|want| per element);
  rewrite  every residual-rewrite kind compiles and runs; the kinds whose
           init=identity keeps the function reproduce PyTorch's outputs
           with it, within the same tolerance.

    check_models.py [--only F,..] [--kind decoder|encoder|vision]
                    [--exports dynamo,torchscript,..]
                    [--steps import,detect,run,rewrite] [--kinds K,..]
                    [--table docs/models.md] [--jobs N]

Prints one line per check ("ok" / "FAIL" / "unsupported", with the reason),
then "N passed, N failed". Exit 1 if any check failed. With --table it also
writes the family x export table (docs/models.md is generated this way).
Tools are found on PATH (the lit tests put build/bin there).
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
RTOL = 1e-4
# Kinds, and whether init=identity reproduces the original function exactly
# (nag and ancre cannot: residual-rewrite refuses it; they run at init=paper).
KINDS = {"rezero": True, "skipinit": True, "layerscale": True, "review": True,
         "highway": True, "denseformer": True, "lpa": True, "nag": False, "ancre": False}
STEPS = ["import", "detect", "run", "rewrite"]


def tool(args, timeout=600):
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "timed out after %d s" % timeout
    return r.returncode, (r.stdout + r.stderr)


def reason(text):
    """The first error line of a tool's output (with the notes that list
    unsupported ops), shortened for the table."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "error" in line.lower() or "unsupported" in line.lower():
            line = re.sub(r"^.*?error: ", "", line.strip())
            notes = [re.sub(r"^.*?note: ", "", l.strip()) for l in lines[i + 1:] if "note: " in l]
            if notes and "unsupported op" in line:
                return "unsupported: " + "; ".join(notes)[:300]
            return line[:240]
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return (lines[-1] if lines else "no output")[:240]


class Case:
    def __init__(self, family, meta, tag, export):
        self.family, self.meta, self.tag, self.export = family, meta, tag, export
        self.folder = os.path.join(FIXTURES, family)
        self.onnx = os.path.join(self.folder, tag + ".onnx")
        self.name = "%s/%s" % (family, tag)
        self.results = {}  # step or "rewrite:<kind>" -> (status, detail)

    def inputs(self):
        return ["--input=@" + os.path.join(self.folder, "%s.in%d.npy" % (self.tag, i))
                for i in range(len(self.meta["inputs"]))]

    def expected(self, extra_outputs=0):
        """Compare output 0 with PyTorch's; skip `extra_outputs` more (LPA's
        readouts at the other depths)."""
        path = os.path.join(self.folder, self.tag + ".out0.npy")
        want = np.load(path)
        atol = RTOL * float(np.max(np.abs(want))) if want.size else 0.0
        return (["--expected_output=@" + path] + ["--expected_output="] * extra_outputs +
                ["--rtol=%g" % RTOL, "--atol=%g" % atol])


def lpa_outputs(mlir):
    """How many results forward has after the LPA rewrite (its readouts at
    every depth beside the model's output), or the rewrite's error."""
    rc, out = tool(["rewire-opt", mlir, "--pass-pipeline=builtin.module(func.func(residual-detect),"
                    " residual-rewrite{kind=lpa init=identity})"])
    if rc != 0:
        return None, reason(out)
    m = re.search(r"func\.func @forward\(.*?\)\s*->\s*\((.*?)\)\s*(attributes|\{)", out, re.S)
    if not m:
        return 1, ""
    return m.group(1).count("tensor<"), ""


def check(case, steps, kinds, work):
    res = case.results
    mlir = os.path.join(work, case.family + "." + case.tag + ".mlir")
    rc, out = tool(["rewire-import", case.onnx, "-o", mlir])
    if rc != 0:
        res["import"] = ("unsupported" if rc == 3 or "unsupported" in out.lower() else "FAIL",
                         reason(out))
        return case
    res["import"] = ("ok", "")
    if "detect" in steps:
        rc, out = tool(["rewire-report", mlir, "--format=json"])
        if rc != 0:
            res["detect"] = ("FAIL", reason(out))
        else:
            report = json.loads(out)
            got = sum(len(s["updates"]) for s in report["streams"])
            want = case.meta["residuals"]
            res["detect"] = ("ok" if got == want else "FAIL",
                             "%d updates%s" % (got, "" if got == want else " (expected %d)" % want))
    if "run" in steps:
        rc, out = tool(["rewire-run", mlir] + case.inputs() + case.expected())
        res["run"] = ("ok", "") if rc == 0 else ("FAIL", reason(out))
    if "rewrite" in steps and case.meta["residuals"]:
        for kind in kinds:
            identity = KINDS[kind]
            spec = kind + (":init=identity" if identity else "")
            args = ["rewire-run", mlir, "--residual=" + spec] + case.inputs()
            if kind == "lpa":
                n, why = lpa_outputs(mlir)
                if n is None:
                    # One stream only: LPA reads every depth out through the
                    # one shared head (a CNN's stages change shape).
                    res["rewrite:" + kind] = ("n/a", why) if ("exactly one residual stream" in why or "change shape" in why) \
                        else ("FAIL", why)
                    continue
                args += case.expected(extra_outputs=n - 1)
            else:
                args += case.expected() if identity else ["--print-max-elements=0"]
            rc, out = tool(args)
            res["rewrite:" + kind] = ("ok", "") if rc == 0 else ("FAIL", reason(out))
    return case


def load_cases(only, exports, kind=None):
    with open(os.path.join(FIXTURES, "manifest.json")) as f:
        manifest = json.load(f)
    cases, limits = [], []
    for family, meta in manifest["families"].items():
        if (only and family not in only) or (kind and meta["kind"] != kind):
            continue
        for tag, export in meta["exports"].items():
            if exports and tag not in exports:
                continue
            if "error" in export:
                limits.append((family, tag, export["error"]))
                continue
            cases.append(Case(family, meta, tag, export))
    return manifest, cases, limits


def write_table(path, manifest, cases, limits, kinds):
    by = {(c.family, c.tag): c for c in cases}
    tags = []
    for meta in manifest["families"].values():
        for t in meta["exports"]:
            if t not in tags:
                tags.append(t)
    v = manifest["versions"]
    lines = [
        "# Real models: family x exporter",
        "",
        "Generated by `test/Models/check_models.py --table docs/models.md` (do not edit by hand) over the",
        "fixture corpus `test/Models/fixtures`, which `scripts/make-model-fixtures.py` exports with torch %s," % v["torch"],
        "transformers %s, timm %s, torchvision %s (random weights, tiny configs)." % (v["transformers"], v["timm"], v["torchvision"]),
        "",
        "Columns: **import** (`rewire-import`), **detect** (the residual updates `rewire-report` finds / the",
        "architecture's), **run** (CPU outputs within %g relative of PyTorch's), then each rewrite kind:" % RTOL,
        "`=` identity-initialized rewrite reproduces PyTorch's outputs, `ok` compiles and runs (nag, ancre: paper",
        "init), `✗` fails (reason in the notes), `·` not run. An export the exporter cannot write is a row",
        "with the exporter's error.",
        "",
        "| family | library | export | opset | import | detect | run | " + " | ".join(kinds) + " |",
        "|---|---|---|---|---|---|---|" + "---|" * len(kinds),
    ]
    notes = []

    def cell(c, key, okmark="ok"):
        if key not in c.results:
            return "·"
        st, detail = c.results[key]
        if st == "ok":
            return detail if key == "detect" else okmark
        if st == "n/a":
            notes.append("- %s %s: not applicable: %s" % (c.name, key, detail))
            return "n/a [%d]" % len(notes)
        notes.append("- %s %s: %s" % (c.name, key, detail))
        return "✗ [%d]" % len(notes)

    for family, meta in manifest["families"].items():
        for tag, export in meta["exports"].items():
            c = by.get((family, tag))
            if c is None:
                if "error" in export:
                    notes.append("- %s/%s: exporter cannot export it: %s" % (family, tag, export["error"]))
                    lines.append("| %s | %s | %s | — | export fails [%d] | | | %s|" % (
                        family, meta["library"], tag, len(notes), "| " * len(kinds)))
                continue
            row = [family, meta["library"], tag, str(export.get("opset", "")),
                   cell(c, "import"), cell(c, "detect"), cell(c, "run")]
            for k in kinds:
                row.append(cell(c, "rewrite:" + k, "=" if KINDS[k] else "ok"))
            lines.append("| " + " | ".join(row) + " |")
    if notes:
        lines += ["", "## Notes", ""] + notes
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only")
    ap.add_argument("--exports")
    ap.add_argument("--kind", choices=["decoder", "encoder", "vision"])
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--table")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    steps = a.steps.split(",")
    kinds = [k for k in a.kinds.split(",") if k]
    for k in kinds:
        if k not in KINDS:
            sys.exit("unknown kind '%s'" % k)
    manifest, cases, limits = load_cases(set(a.only.split(",")) if a.only else None,
                                         set(a.exports.split(",")) if a.exports else None,
                                         a.kind)
    if not cases:
        sys.exit("no fixture matches --only/--exports")
    with tempfile.TemporaryDirectory() as work:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            done = list(pool.map(lambda c: check(c, steps, kinds, work), cases))
    passed = failed = 0
    for c in done:
        for key, (st, detail) in c.results.items():
            print("%-11s %-32s %-20s %s" % (st, c.name, key, detail))
            passed += st == "ok"
            failed += st not in ("ok", "n/a")
    for family, tag, err in limits:
        print("%-11s %-32s %-20s %s" % ("limit", family + "/" + tag, "export", err))
    if a.table:
        write_table(a.table, manifest, done, limits, kinds)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
