#!/usr/bin/env python3
"""Checks the real-model fixture corpus (test/Models/fixtures, made by
scripts/make-model-fixtures.py) end to end with the built tools:

  import   rewire-import succeeds (no nn.onnx_node left);
  detect   rewire-report finds exactly the manifest's residual updates;
  run      rewire-run's outputs match PyTorch's within 1e-4 relative
           (|got - want| <= 1e-4 * max|want| per element);
  rewrite  every residual-rewrite kind compiles and runs; the kinds whose
           init=identity keeps the function reproduce PyTorch's outputs
           with it, within the same tolerance;
  train    for the families with F/train.onnx: rewire-train's loss of each
           step, run from PyTorch's state before it, matches PyTorch's
           within 1e-5 (SGD, same batches; the 4-step loop within 1e-3, ResNet 2e-2), the
           trained model exported back to ONNX runs in ONNX Runtime with
           rewire-run's outputs (recorded on the family's first export).

    check_models.py [--only F,..] [--kind decoder|encoder|vision]
                    [--exports dynamo,torchscript,..]
                    [--steps import,detect,run,rewrite,train,cuda] [--kinds K,..]
                    [--cuda-emulator LIBDIR] [--rewrite-first-export]
                    [--rewrite-sample N]
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
         "highway": True, "denseformer": True, "lpa": True, "nag": False, "ancre": False,
         "laurel": True, "hc": True, "mhc": True, "value-residual": True,
         "laurel:laurel=rw-lr-pa": True, "laurel:laurel=gemma3n": False}
# What residual-rewrite refuses, by design, for a model it does not apply to
# (reported "n/a" with the reason): hyper-connections on post-LN streams and
# NCHW ones, LAuReL's low-rank map on NCHW ones, Gemma 3n's merge on post-LN
# streams and models without attention.
NOT_APPLICABLE = ("not directly. Hyper-connections", "needs a static feature axis last",
                  "no stream has two attention layers", "(a post-LN model); use laurel=rw-lr",
                  "no residual update's branch is attention")
STEPS = ["import", "detect", "run", "rewrite", "train"]  # and "cuda", on request
CUDA_EMULATOR = None  # --cuda-emulator=LIBDIR
REWRITE_FIRST_ONLY = False  # --rewrite-first-export
REWRITE_SAMPLE = 1  # --rewrite-sample=N


def sampled_kinds(kinds, family_index):
    """The kinds the rewrite step runs on the family at FAMILY_INDEX (its
    place in the manifest): every kind with --rewrite-sample=1; with N, the
    kinds whose place in KINDS is FAMILY_INDEX mod N, so consecutive families
    share the kinds out and each kind still runs on every N-th family."""
    order = list(KINDS)
    return [k for k in kinds if order.index(k) % REWRITE_SAMPLE == family_index % REWRITE_SAMPLE]


def first_export(meta):
    """The first export the exporters could write (dynamo where it can)."""
    return next(t for t, e in meta["exports"].items() if "error" not in e)
# Training losses against PyTorch's: each step from PyTorch's state before
# it (TRAIN_RTOL), and rewire-train's own 4-step loop, whose trajectory may
# drift where a step hangs on a near-tie (batch norm over 2 images, ReLU,
# max-pool windows: fp32 rounding routes the gradient differently).
TRAIN_RTOL, TRAJECTORY_RTOL = 1e-5, 1e-3
# ResNet's batch norm over 2 images amplifies rounding most: with the same
# per-step agreement (1.7e-7 from PyTorch's state), its 4th loss moved from
# 3.1e-4 to 6.4e-3 of PyTorch's when reductions were vectorized (summed in
# another order, rewire-promote-accumulators). A broken loop (updates not
# applied, state not carried) still misses by far more.
TRAJECTORY_RTOL_BY_FAMILY = {"resnet": 2e-2}


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
    def __init__(self, family, meta, tag, export, family_index=0):
        self.family, self.meta, self.tag, self.export = family, meta, tag, export
        self.family_index = family_index  # the family's place among those checked
        self.folder = os.path.join(FIXTURES, family)
        self.onnx = os.path.join(self.folder, tag + ".onnx")
        self.name = "%s/%s" % (family, tag)
        self.results = {}  # step or "rewrite:<kind>" -> (status, detail)

    def shape_flags(self):
        """--input-shape per input: binds the symbolic dims of a dynamic-axes
        export (a static one checks them)."""
        return ["--input-shape=" + ("x".join(str(d) for d in shape) or "scalar")
                for shape in self.meta["inputs"]]

    def inputs(self, alt=""):
        return ["--input=@" + os.path.join(self.folder, "%s.in%d%s.npy" % (self.tag, i, alt))
                for i in range(len(self.meta["inputs"]))]

    def expected(self, extra_outputs=0, alt=""):
        """Compare output 0 with PyTorch's; skip `extra_outputs` more (LPA's
        readouts at the other depths)."""
        path = os.path.join(self.folder, self.tag + ".out0%s.npy" % alt)
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
    rc, out = tool(["rewire-import", case.onnx, "-o", mlir] + case.shape_flags())
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
    # A model exported with dynamic axes runs from the .onnx: rewire-run
    # binds its symbolic dims to the inputs' shapes (a cached variant per
    # shape); a static one from the imported IR.
    model = case.onnx if case.export.get("dynamic_axes") else mlir
    if "run" in steps:
        rc, out = tool(["rewire-run", model] + case.inputs() + case.expected())
        res["run"] = ("ok", "") if rc == 0 else ("FAIL", reason(out))
        if "alt_inputs" in case.export:
            # Another batch (and sequence) size: another compiled variant.
            rc, out = tool(["rewire-run", model] + case.inputs(".alt") + case.expected(0, ".alt"))
            res["run-other-shape"] = ("ok", "shapes %s" % case.export["alt_inputs"]) if rc == 0 \
                else ("FAIL", reason(out))
    if "cuda" in steps:
        # Compiled for CUDA (PTX assembled by ptxas), run on a GPU or, with
        # --cuda-emulator=LIBDIR, on the CUDA emulator (the artifact's own
        # kernels compiled for the CPU, docs/cuda.md).
        art = os.path.join(work, case.family + "." + case.tag + ".rwcu")
        args = ["rewire-compile", case.onnx, "--target=cuda", "-o", art] + case.shape_flags()
        env = None
        if CUDA_EMULATOR:
            args.append("--emulator-kernels=" + art + ".emu.so")
            emu = os.path.join(CUDA_EMULATOR, "librewire_cuda_emu.so")
            env = dict(os.environ, REWIRE_LIBCUDA=emu, REWIRE_LIBCUBLAS=emu,
                       REWIRE_CUDA_EMULATOR_KERNELS=art + ".emu.so")
        rc, out = tool(args)
        if rc != 0:
            res["cuda"] = ("FAIL", "compile: " + reason(out))
        else:
            r = subprocess.run(["rewire-run", art] + case.inputs() + case.expected(),
                               capture_output=True, text=True, env=env)
            res["cuda"] = ("ok", "") if r.returncode == 0 else ("FAIL", reason(r.stdout + r.stderr))
    if "rewrite" in steps and case.meta["residuals"] and \
            not (REWRITE_FIRST_ONLY and case.tag != first_export(case.meta)):
        for kind in sampled_kinds(kinds, case.family_index):
            identity = KINDS[kind]
            spec = kind + ((":" if ":" not in kind else ",") + "init=identity" if identity else "")
            if kind == "value-residual":
                spec += ",lambda=learned"  # the fixed 1/2 changes the function
            args = ["rewire-run", model, "--residual=" + spec] + case.inputs()
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
            if rc != 0 and any(why in out for why in NOT_APPLICABLE):
                res["rewrite:" + kind] = ("n/a", reason(out))
                continue
            res["rewrite:" + kind] = ("ok", "") if rc == 0 else ("FAIL", reason(out))
    return case


def check_training(family, meta, work):
    """rewire-train on F/train.onnx against PyTorch (SGD, the same batches):
    each step from PyTorch's own state before it (F/train.state<k>), so no
    step inherits the other side's rounding; the 4-step trajectory of
    rewire-train's own loop; then --export back to ONNX: ONNX Runtime's
    outputs of the exported, trained model equal rewire-run's with the
    trained parameters."""
    folder = os.path.join(FIXTURES, family)
    with open(os.path.join(folder, "train.json")) as f:
        ref = json.load(f)
    out = os.path.join(work, family + ".train")
    os.makedirs(out, exist_ok=True)
    onnx_path = os.path.join(folder, "train.onnx")
    xs = np.load(os.path.join(folder, "train.inputs.npy"))
    ys = np.load(os.path.join(folder, "train.targets.npy"))
    bsz, want = ref["batch"], ref["pytorch_losses"]

    def train(tag, steps, x, y, params=None):
        xp, yp = os.path.join(out, tag + ".x.npy"), os.path.join(out, tag + ".y.npy")
        np.save(xp, x)
        np.save(yp, y)
        m = os.path.join(out, tag + ".csv")
        args = ["rewire-train", onnx_path, "--inputs=" + xp, "--targets=" + yp,
                "--loss=cross_entropy", "--optimizer=sgd", "--lr=%g" % ref["lr"],
                "--steps=%d" % steps, "--metrics=" + m, "--log-every=0"]
        if params:
            args.append("--params=" + params)
        if tag == "loop":
            args += ["--output=" + os.path.join(out, "p.safetensors"),
                     "--export=" + os.path.join(out, "m.onnx")]
        rc, text = tool(args)
        if rc != 0:
            return None, reason(text)
        with open(m) as f:
            return [float(l.split(",")[1]) for l in f if l.strip() and not l.startswith("step")], ""

    per_step = []
    for k in range(ref["steps"]):
        state = os.path.join(folder, "train.state%d.safetensors" % k) if k else None
        got, why = train("step%d" % k, 1, xs[k * bsz:(k + 1) * bsz], ys[k * bsz:(k + 1) * bsz], state)
        if got is None:
            return ("FAIL", "step %d: %s" % (k, why)), None
        per_step.append(got[0])
    loop, why = train("loop", ref["steps"], xs, ys)
    if loop is None:
        return ("FAIL", "loop: " + why), None
    rel = lambda a, b: max(abs(g - w) / abs(w) for g, w in zip(a, b))
    worst, drift = rel(per_step, want), rel(loop, want)
    detail = "each step from PyTorch's state: max rel %.1e; %d-step loop: max rel %.1e" % (
        worst, ref["steps"], drift)
    ok = worst <= TRAIN_RTOL and drift <= TRAJECTORY_RTOL_BY_FAMILY.get(family, TRAJECTORY_RTOL)
    status = ("ok" if ok else "FAIL", detail)
    # The exported model in ONNX Runtime against rewire-run with the trained
    # parameters, on the first training batch.
    import onnxruntime as ort
    xin, yref = os.path.join(out, "x.npy"), os.path.join(out, "y.npy")
    np.save(xin, xs[:bsz])
    sess = ort.InferenceSession(os.path.join(out, "m.onnx"), providers=["CPUExecutionProvider"])
    y = sess.run(None, {sess.get_inputs()[0].name: xs[:bsz]})[0]
    np.save(yref, y)
    atol = RTOL * float(np.max(np.abs(y)))
    rc, text = tool(["rewire-run", onnx_path, "--input=@" + xin,
                     "--params=" + os.path.join(out, "p.safetensors"), "--expected_output=@" + yref,
                     "--rtol=%g" % RTOL, "--atol=%g" % atol])
    export_status = ("ok", "ONNX Runtime on the exported model = rewire-run") if rc == 0 \
        else ("FAIL", "exported model in ONNX Runtime: " + reason(text))
    return status, export_status


def load_cases(only, exports, kind=None):
    with open(os.path.join(FIXTURES, "manifest.json")) as f:
        manifest = json.load(f)
    cases, limits = [], []
    families = [f for f, meta in manifest["families"].items()
                if not (only and f not in only) and not (kind and meta["kind"] != kind)]
    for index, family in enumerate(families):
        meta = manifest["families"][family]
        for tag, export in meta["exports"].items():
            if exports and tag not in exports:
                continue
            if "error" in export:
                limits.append((family, tag, export["error"]))
                continue
            cases.append(Case(family, meta, tag, export, index))
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
        "init), `n/a` does not apply (LPA needs one stream that keeps its shape), `✗` fails (reason in the",
        "notes), `·` not run; **train**: rewire-train's loss of each SGD step, run from PyTorch's state before",
        "it, equals PyTorch's (1e-5); **train → ONNX**: the trained model exported by `rewire-train --export`",
        "runs in ONNX Runtime with rewire-run's outputs. An export the exporter cannot write is a row with the",
        "exporter's error. The `_dynamic` exports have dynamic batch (and sequence) axes and also run at a",
        "second shape; every export also runs compiled for CUDA on the CUDA emulator",
        "(`test/GPU/corpus-cuda.test`). OPT's decoder computes its MLP update on `[B*T, D]` rows of the",
        "`[B, T, D]` state; residual-detect moves that add into the state's shape, so its layers form one",
        "stream.",
        "",
        "| family | library | export | opset | import | detect | run | " + " | ".join(kinds) +
        " | train | train → ONNX |",
        "|---|---|---|---|---|---|---|" + "---|" * len(kinds) + "---|---|",
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
                    lines.append("| %s | %s | %s | — | export fails [%d] | | | %s| | |" % (
                        family, meta["library"], tag, len(notes), "| " * len(kinds)))
                continue
            row = [family, meta["library"], tag, str(export.get("opset", "")),
                   cell(c, "import"), cell(c, "detect"), cell(c, "run")]
            for k in kinds:
                row.append(cell(c, "rewrite:" + k, "=" if KINDS[k] else "ok"))
            row.append(cell(c, "train", "= PyTorch"))
            row.append(cell(c, "train-export", "= ORT"))
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
    ap.add_argument("--rewrite-first-export", action="store_true",
                    help="run the rewrites on each family's first export only (the test "
                         "command's slice; the other steps run on every export)")
    ap.add_argument("--rewrite-sample", type=int, default=1, metavar="N",
                    help="each family runs every N-th kind, in turn (the test command's "
                         "slice: every kind still runs on every N-th family)")
    ap.add_argument("--cuda-emulator", metavar="LIBDIR",
                    help="the cuda step runs on the CUDA emulator in LIBDIR (no GPU needed)")
    a = ap.parse_args()
    global CUDA_EMULATOR, REWRITE_FIRST_ONLY, REWRITE_SAMPLE
    if a.rewrite_sample < 1:
        sys.exit("--rewrite-sample must be >= 1")
    REWRITE_SAMPLE = a.rewrite_sample
    CUDA_EMULATOR = a.cuda_emulator
    REWRITE_FIRST_ONLY = a.rewrite_first_export
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
            trained = {}
            if "train" in steps:
                fams = [f for f, m in manifest["families"].items() if "train" in m and
                        any(c.family == f for c in cases)]
                for f, r in zip(fams, pool.map(
                        lambda f: check_training(f, manifest["families"][f], work), fams)):
                    trained[f] = r
    for f, (st, ex) in trained.items():
        for c in done:
            if c.family == f:
                c.results["train"] = st
                if ex:
                    c.results["train-export"] = ex
                break
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
