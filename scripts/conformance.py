"""ONNX backend node tests (Debian's libonnx-testdata) through Rewire: for
every test whose single node is an op Rewire imports, compile the model with
rewire-compile, run each test_data_set_* with the runtime (C API), compare
with the expected outputs, and write a table (op, tests, passed, failed,
why) to docs/conformance.md. Ops Rewire does not import are counted, not
hidden.

    scripts/conformance.py [--out docs/conformance.md] [--limit-per-op N]
                           [--ops Add,MatMul] [--jobs 2]

Rewire compiles static shapes, so the integer inputs that carry shapes in
these tests (Reshape's shape; Slice's starts/ends/axes/steps; the axes of
Squeeze, Unsqueeze and the Reduce ops; Split's sizes; Expand's shape, Tile's
repeats, Pad's pads, CumSum's axis, Trilu's k, Range's bounds, OneHot's
depth, TopK's k, Resize's roi, scales and sizes, Upsample's scales, Clip's
bounds, Dropout's ratio and training_mode, the window
ops' size) are folded into
initializers from test_data_set_0 before compiling, as an exporter with
static shapes would have written them. The table says so per op.

Tolerance: |got - want| <= 1e-5 + 1e-4 |want| (fp32; the compiled code uses
polynomial approximations of exp/tanh/erf at -O2); outputs in f16 1e-3 +
1e-3 |want|, in bf16 1e-2 + 1e-2 |want| (their own precision). Exit code 0 unless the
harness itself fails; failures are data, reported in the table.
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("REWIRE_LIB_DIR", os.path.join(ROOT, "build", "lib"))
import rewire_runtime  # noqa: E402

DATA = "/usr/share/libonnx-testdata/data/node"
BUILD = os.path.join(ROOT, "build")


def imported_ops():
    """The operators the importer handles, from its own tables."""
    tool = os.path.join(BUILD, "bin", "rewire-import")
    out = subprocess.run([tool, "--list-ops"], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[0] for line in out.splitlines() if line.strip()})


IMPORTED = imported_ops()


def load_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


# (op, input index) pairs that carry shapes: folded into initializers.
SHAPE_INPUTS = {"Reshape": {1}, "Slice": {1, 2, 3, 4}, "Squeeze": {1}, "Unsqueeze": {1},
                "ReduceSum": {1}, "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1},
                "ReduceL1": {1}, "ReduceL2": {1}, "ReduceSumSquare": {1}, "ReduceLogSum": {1},
                "ReduceLogSumExp": {1}, "Split": {1}, "Expand": {1}, "Tile": {1}, "Pad": {1, 2, 3},
                "CumSum": {1}, "CumProd": {1}, "CenterCropPad": {1}, "Trilu": {1}, "ConstantOfShape": {0}, "Range": {0, 1, 2},
                "OneHot": {1}, "TopK": {1}, "Resize": {1, 2, 3}, "Upsample": {1}, "Clip": {1, 2},
                "Dropout": {1, 2}, "HannWindow": {0}, "HammingWindow": {0},
                "BlackmanWindow": {0}, "DFT": {1, 2}, "AffineGrid": {1}, "Col2Im": {1, 2}}


EXPANDED = "(several nodes: *_expanded)"


def freeze_shape_inputs(test_dir, model, work):
    """The model path to compile: the original, or a copy with shape inputs
    turned into initializers. Returns (path, number of inputs folded)."""
    names = []
    for node in model.graph.node:
        positions = SHAPE_INPUTS.get(node.op_type, set())
        names += [n for i, n in enumerate(node.input) if i in positions and n and n not in names]
    graph_inputs = [i.name for i in model.graph.input]
    fold = [n for n in names if n in graph_inputs]
    if not fold:
        return os.path.join(test_dir, "model.onnx"), 0
    data = sorted(glob.glob(os.path.join(test_dir, "test_data_set_0", "input_*.pb")))
    values = {graph_inputs[i]: load_tensor(p) for i, p in enumerate(data) if i < len(graph_inputs)}
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for n in fold:
        if n not in values:
            return os.path.join(test_dir, "model.onnx"), 0
        m.graph.initializer.append(numpy_helper.from_array(values[n], n))
    keep = [i for i in m.graph.input if i.name not in fold]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    path = os.path.join(work, os.path.basename(test_dir) + ".onnx")
    onnx.save(m, path)
    return path, len(fold)


def to_bf16_bits(x):
    """float32 values (exactly representable in bf16) as bf16 bit patterns."""
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


# (atol, rtol) per output type: fp32/fp64 as stated above; the half-precision
# types compute in half precision, so their rounding is that of their 11
# (f16) or 8 (bf16) significant bits.
TOLERANCE = {"f16": (1e-3, 1e-3), "bf16": (1e-2, 1e-2)}


def first_line(text):
    for line in text.splitlines():
        if "error:" in line:
            return line.split("error:", 1)[1].strip()[:160]
    return (text.strip().splitlines() or ["(no message)"])[-1][:160]


def run_test(test_dir, work):
    """Returns (op, status, why) with status pass|fail."""
    try:
        return run_test_unchecked(test_dir, work)
    except Exception as e:  # noqa: BLE001 - a harness failure is a result too
        return "(harness)", "fail", "harness: %s: %s" % (type(e).__name__, e)


def run_test_unchecked(test_dir, work):
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    op = model.graph.node[0].op_type if len(model.graph.node) == 1 else EXPANDED
    name = os.path.basename(test_dir)
    artifact = os.path.join(work, name + ".rwx")
    model_path, folded = freeze_shape_inputs(test_dir, model, work)
    r = subprocess.run([os.path.join(ROOT, "build", "bin", "rewire-compile"),
                        model_path, "-o", artifact],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        stage = {2: "import: invalid", 3: "unsupported", 4: "I/O", 5: "codegen"}.get(r.returncode, "exit %d" % r.returncode)
        return op, "fail", "%s: %s" % (stage, first_line(r.stderr))
    try:
        m = rewire_runtime.Model(artifact)
    except rewire_runtime.RewireError as e:
        return op, "fail", "load: %s" % e
    ins, outs = m.signature("forward")
    for ds in sorted(glob.glob(os.path.join(test_dir, "test_data_set_*"))):
        inputs = [load_tensor(p) for p in sorted(glob.glob(os.path.join(ds, "input_*.pb")))]
        if folded:
            kept = {i.name for i in onnx.load(model_path).graph.input}
            inputs = [x for x, gi in zip(inputs, model.graph.input) if gi.name in kept]
        wants = [load_tensor(p) for p in sorted(glob.glob(os.path.join(ds, "output_*.pb")))]
        # Initializer inputs are parameters, not runtime inputs.
        inputs = inputs[:len(ins)] if len(inputs) > len(ins) else inputs
        # bf16 travels as raw bits; onnx's numpy_helper reads it as float32.
        inputs = [to_bf16_bits(x) if i < len(ins) and ins[i][0] == "bf16" and x.dtype == np.float32 else x
                  for i, x in enumerate(inputs)]
        try:
            got = m.run("forward", *inputs)
        except rewire_runtime.RewireError as e:
            return op, "fail", "run: %s" % e
        got = [from_bf16_bits(g) if outs[i][0] == "bf16" else g for i, g in enumerate(got)]
        if len(got) != len(wants):
            return op, "fail", "%d outputs, expected %d" % (len(got), len(wants))
        for k, (g, w) in enumerate(zip(got, wants)):
            if g.shape != w.shape:
                return op, "fail", "output shape %s, expected %s" % (g.shape, w.shape)
            if w.dtype.kind in "fc":
                g64, w64 = g.astype(np.float64), w.astype(np.float64)
                atol, rtol = TOLERANCE.get(outs[k][0], (1e-5, 1e-4))
                with np.errstate(invalid="ignore"):
                    bad = ~((np.abs(g64 - w64) <= atol + rtol * np.abs(w64)) | (g64 == w64) | (np.isnan(g64) & np.isnan(w64)))
                if bad.any():
                    return op, "fail", "values differ (max abs %.2e)" % np.nanmax(np.abs(g64 - w64))
            elif not np.array_equal(g, w):
                return op, "fail", "values differ"
    return op, "pass", ""


def onnx_wheel_tests(version):
    """The node tests of PyPI onnx `version`, generated once into build/."""
    out = os.path.join(BUILD, "onnx-node-tests-" + version)
    if glob.glob(os.path.join(out, "test_*")):
        return out
    venv = os.path.join(BUILD, "onnx-venv-" + version)
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "onnx==" + version, "numpy"],
                       check=True)
    subprocess.run([py, os.path.join(ROOT, "scripts", "onnx-node-tests.py"), out], check=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "conformance.md"))
    ap.add_argument("--limit-per-op", type=int, default=0)
    ap.add_argument("--ops", default="")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--failures", action="store_true", help="print each failing test and why")
    ap.add_argument("--data", default=DATA,
                    help="node-test folder (default: Debian's libonnx-testdata); see --onnx-wheel")
    ap.add_argument("--onnx-wheel", metavar="VERSION", default="",
                    help="run the node tests of this PyPI onnx version instead (generated into "
                         "build/onnx-node-tests-VERSION through build/onnx-venv-VERSION)")
    a = ap.parse_args()
    data = a.data
    source = "Debian's `libonnx-testdata`"
    if a.onnx_wheel:
        data = onnx_wheel_tests(a.onnx_wheel)
        source = "the PyPI `onnx` %s wheel's generators (`scripts/onnx-node-tests.py`)" % a.onnx_wheel
    wanted = set(a.ops.split(",")) if a.ops else None
    tests, unsupported = [], collections.Counter()
    per_op = collections.Counter()
    for d in sorted(glob.glob(os.path.join(data, "test_*"))):
        try:
            model = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
        except Exception:  # noqa: BLE001 - a corrupt test model is counted
            unsupported["(unreadable model)"] += 1
            continue
        ops = {n.op_type for n in model.graph.node}
        # A model of several nodes (a function op written out: the
        # *_expanded tests) runs when Rewire imports all of them.
        op = model.graph.node[0].op_type if len(model.graph.node) == 1 else EXPANDED
        missing = sorted(o for o in ops if o not in IMPORTED)
        if missing:
            if not wanted:
                unsupported[missing[0]] += 1
            continue
        if wanted and op not in wanted:
            continue
        if a.limit_per_op and per_op[op] >= a.limit_per_op:
            continue
        per_op[op] += 1
        tests.append(d)
    work = tempfile.mkdtemp(prefix="rewire-conformance-")
    results = collections.defaultdict(list)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for d, (op, status, why) in zip(tests, pool.map(lambda t: run_test(t, work), tests)):
            results[op].append((os.path.basename(d), status, why))
    if a.failures:
        for op in sorted(results):
            for name, status, why in results[op]:
                if status != "pass":
                    print("FAIL %s [%s]: %s" % (name, op, why))
    total_pass = sum(s == "pass" for rs in results.values() for _, s, _ in rs)
    total = sum(len(rs) for rs in results.values())
    n_all = len(glob.glob(os.path.join(data, "test_*")))
    lines = ["# ONNX backend node-test conformance", "",
             "Generated by `scripts/conformance.py` from %s "
             "(%d node tests). Each test's model is compiled with `rewire-compile` and every "
             "`test_data_set_*` is run by the runtime; outputs must match to "
             "|got - want| <= 1e-5 + 1e-4 |want| (f16: 1e-3 + 1e-3 |want|; bf16: 1e-2 + 1e-2 |want|)."
             % (source, n_all), "",
             "**All node tests: %d of %d pass (%.1f %%); of those whose ops Rewire imports: %d of %d.**" % (
                 total_pass, n_all, 100.0 * total_pass / max(n_all, 1), total_pass, total), "",
             "| op | tests | passed | failed | why (first failures) |", "|---|---|---|---|---|"]
    for op in sorted(results):
        rs = results[op]
        p = sum(s == "pass" for _, s, _ in rs)
        whys = collections.Counter(w for _, s, w in rs if s != "pass")
        why = "; ".join("%s (%d)" % (w.replace("|", "/"), n) for w, n in whys.most_common(3))
        lines.append("| %s | %d | %d | %d | %s |" % (op, len(rs), p, len(rs) - p, why))
    if unsupported:
        lines += ["", "## Tests of ops Rewire does not import", "",
                  "Counted by the first unsupported op of each test model (%d tests):" % sum(unsupported.values()), "",
                  "| op | tests |", "|---|---|"]
        for op, n in sorted(unsupported.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append("| %s | %d |" % (op, n))
    text = "\n".join(lines) + "\n"
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w") as f:
            f.write(text)
    print("conformance: %d of %d tests of imported ops pass (%d ops); table in %s" % (
        total_pass, total, len(results), a.out))


if __name__ == "__main__":
    main()
