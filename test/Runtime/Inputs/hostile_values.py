"""Index values, labels and integer operands a careless or hostile user
passes, through every way into compiled code (rewire-run, the Python
bindings, rewire-train): each must end in a clear error naming the op, the
input, the value, its position and the valid range -- never a signal, never
garbage with exit 0 -- while valid values (ONNX negative indices included)
still compute what NumPy computes. Also the import-time folds of integer
constants (overflow, INT64_MIN / -1) and shapes over the element limit.

    hostile_values.py WORKDIR
"""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import rewire_runtime as rr  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "utils"))
from onnx_graph import save  # noqa: E402

FAILURES = []


def run(args):
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def expect(name, args, code, *needles):
    rc, text = run(args)
    ok = rc == code and all(n in text for n in needles)
    print("%s %s: exit %d%s" % ("ok  " if ok else "FAIL", name, rc,
                               "" if ok else " (want %d and %r) %s" % (code, needles, text[-600:])))
    if not ok:
        FAILURES.append(name)


def linear(work, rng):
    """A 3 -> 5 MatMul model with 8 examples: x.npy, y.npy (regression
    targets) and labels.npy (classes, one of them out of range)."""
    path = save(os.path.join(work, "linear.onnx"),
                [helper.make_node("MatMul", ["x", "w"], ["z"], name="head")],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
                [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 5])],
                [numpy_helper.from_array(rng.standard_normal((3, 5)).astype(np.float32), "w")])
    np.save(os.path.join(work, "x.npy"), rng.standard_normal((8, 3)).astype(np.float32))
    np.save(os.path.join(work, "y.npy"), rng.standard_normal((8, 5)).astype(np.float32))
    labels = rng.integers(0, 5, 8)
    labels[6] = 5
    np.save(os.path.join(work, "labels.npy"), labels.astype(np.int64))
    return path


def main():
    if sys.argv[1] == "--linear-only":
        os.makedirs(sys.argv[2], exist_ok=True)
        linear(sys.argv[2], np.random.default_rng(0))
        return
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    table = rng.standard_normal((10, 4)).astype(np.float32)

    # Gather of an embedding of 10 rows by 2x3 token ids.
    gather = save(os.path.join(work, "gather.onnx"),
                  [helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")],
                  [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])],
                  [numpy_helper.from_array(table, "table")])
    art = os.path.join(work, "gather.rwx")
    rc, text = run(["rewire-compile", gather, "-o", art])
    if rc != 0:
        raise SystemExit("FAIL compile: " + text)
    valid = np.array([[0, 9, -1], [-10, 3, 5]], np.int64)
    np.save(os.path.join(work, "valid.npy"), valid)
    np.save(os.path.join(work, "want.npy"), table[valid])
    expect("Gather, valid and negative ids match NumPy",
           ["rewire-run", art, "--input=@" + os.path.join(work, "valid.npy"),
            "--expected_output=@" + os.path.join(work, "want.npy"), "--rtol=0", "--atol=0"], 0, "[SUCCESS]")
    for bad in (10, -11, 10**8, -10**8, 2**63 - 1, -2**63):
        ids = valid.copy()
        ids[1, 2] = bad
        path = os.path.join(work, "bad.npy")
        np.save(path, ids)
        expect("Gather, id %d" % bad, ["rewire-run", art, "--input=@" + path], 2,
               "nn.gather 'embed': index (from input 'ids'): value %d at [1, 2]" % bad,
               "must be in [-10, 10)")

    # The same through the Python bindings: an exception, then the model
    # still works (the failed call leaves nothing behind).
    model = rr.Model(art)
    ids = valid.copy()
    ids[0, 1] = 12
    try:
        model.run("forward", ids)
        print("FAIL Python: no exception for id 12")
        FAILURES.append("python")
    except rr.RewireError as e:
        ok = "value 12 at [0, 1]" in str(e)
        print("%s Python: RewireError: %s" % ("ok  " if ok else "FAIL", e))
        if not ok:
            FAILURES.append("python message")
    (y,) = model.run("forward", valid)
    ok = np.array_equal(y, table[valid])
    print("%s Python: the next call computes correctly" % ("ok  " if ok else "FAIL"))
    if not ok:
        FAILURES.append("python after error")

    # Integer division at run time: a zero divisor is an error; INT64_MIN / -1
    # wraps (no SIGFPE).
    div = save(os.path.join(work, "div.onnx"),
               [helper.make_node("Div", ["a", "b"], ["q"], name="divide")],
               [helper.make_tensor_value_info("a", TensorProto.INT64, [3]),
                helper.make_tensor_value_info("b", TensorProto.INT64, [3])],
               [helper.make_tensor_value_info("q", TensorProto.INT64, [3])])
    art = os.path.join(work, "div.rwx")
    rc, text = run(["rewire-compile", div, "-o", art])
    if rc != 0:
        raise SystemExit("FAIL compile div: " + text)
    expect("Div, zero divisor", ["rewire-run", art, "--input=3xi64=7,8,9", "--input=3xi64=1,0,3"], 2,
           "nn.div 'divide': integer divisor (from input 'b'): value 0 at [1]", "must not be 0")
    expect("Div, INT64_MIN / -1 and truncation",
           ["rewire-run", art, "--input=3xi64=-9223372036854775808,-7,7", "--input=3xi64=-1,2,-2",
            "--expected_output=3xi64=-9223372036854775808,-3,-3"], 0, "[SUCCESS]")

    # Unsigned integers: a zero divisor is an error too; values above
    # INT64_MAX are unsigned, not negative (uint64 max / 2, max > 1).
    udiv = save(os.path.join(work, "udiv.onnx"),
                [helper.make_node("Div", ["a", "b"], ["q"], name="udivide"),
                 helper.make_node("Greater", ["a", "b"], ["gt"], name="ugreater")],
                [helper.make_tensor_value_info("a", TensorProto.UINT64, [2]),
                 helper.make_tensor_value_info("b", TensorProto.UINT64, [2])],
                [helper.make_tensor_value_info("q", TensorProto.UINT64, [2]),
                 helper.make_tensor_value_info("gt", TensorProto.BOOL, [2])])
    art = os.path.join(work, "udiv.rwx")
    rc, text = run(["rewire-compile", udiv, "-o", art])
    if rc != 0:
        raise SystemExit("FAIL compile udiv: " + text)
    a = np.array([2**64 - 1, 7], np.uint64)
    b = np.array([2, 1], np.uint64)
    q, gt = rr.Model(art).run("forward", a, b)
    ok = np.array_equal(q, a // b) and np.array_equal(gt, a > b)
    print("%s Div/Greater on uint64 above 2^63: %s %s" % ("ok  " if ok else "FAIL", q, gt))
    if not ok:
        FAILURES.append("uint64")
    np.save(os.path.join(work, "ua.npy"), a)
    np.save(os.path.join(work, "ub.npy"), np.array([2, 0], np.uint64))
    expect("Div, zero uint64 divisor", ["rewire-run", art, "--input=@" + os.path.join(work, "ua.npy"),
                                        "--input=@" + os.path.join(work, "ub.npy")], 2,
           "nn.div 'udivide': integer divisor (from input 'b'): value 0 at [1]", "must not be 0")

    # GatherND with run-time indices: an index tuple out of range is an
    # error, negative ones count from the end.
    gnd = save(os.path.join(work, "gathernd.onnx"),
               [helper.make_node("GatherND", ["data", "idx"], ["y"], name="gnd")],
               [helper.make_tensor_value_info("data", TensorProto.FLOAT, [3, 4, 2]),
                helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 2])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    art = os.path.join(work, "gathernd.rwx")
    rc, text = run(["rewire-compile", gnd, "-o", art])
    if rc != 0:
        raise SystemExit("FAIL compile gathernd: " + text)
    data = rng.standard_normal((3, 4, 2)).astype(np.float32)
    idx = np.array([[2, -1], [0, 1]], np.int64)
    (y,) = rr.Model(art).run("forward", data, idx)
    ok = np.array_equal(y, np.stack([data[2, -1], data[0, 1]]))
    print("%s GatherND, run-time indices match NumPy" % ("ok  " if ok else "FAIL"))
    if not ok:
        FAILURES.append("gathernd")
    try:
        rr.Model(art).run("forward", data, np.array([[2, 4], [0, 1]], np.int64))
        print("FAIL GatherND, index 4 of 4: no error")
        FAILURES.append("gathernd range")
    except rr.RewireError as e:
        print("ok   GatherND, index 4 of 4: RewireError: %s" % e)

    # Class labels outside [0, C) in training data.
    lin = linear(work, rng)
    expect("rewire-train, label 5 of 5 classes",
           ["rewire-train", lin, "--inputs=" + os.path.join(work, "x.npy"),
            "--targets=" + os.path.join(work, "labels.npy"), "--loss=cross_entropy", "--steps=3",
            "--log-every=0"], 2, "class label", "value 5 at [2]", "must be in [0, 5) or equal -100")

    # Import-time folds and inferred shapes.
    def const(name, value):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
            np.array(value, np.int64), name))

    for label, op, a, b, needle in [
            ("INT64_MIN / -1", "Div", -2**63, -1, "overflows the int64 range"),
            ("2^62 * 4", "Mul", 2**62, 4, "overflows the int64 range"),
            ("INT64_MAX + 1", "Add", 2**63 - 1, 1, "overflows the int64 range"),
            ("INT64_MIN - 1", "Sub", -2**63, 1, "overflows the int64 range"),
            ("7 / 0", "Div", 7, 0, "divides by zero")]:
        path = save(os.path.join(work, "fold.onnx"),
                    [const("a", [a]), const("b", [b]), helper.make_node(op, ["a", "b"], ["s"], name="f"),
                     helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
                    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        expect("import fold " + label, ["rewire-import", path, "-o", os.path.join(work, "f.mlir")], 2,
               "'%s' node 'f': constant int64 arithmetic" % op, needle)

    split = save(os.path.join(work, "split.onnx"),
                 [helper.make_node("Split", ["x"], ["a", "b"], axis=0, num_outputs=10**12, name="sp")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                 [helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
                  helper.make_tensor_value_info("b", TensorProto.FLOAT, None)], opset=18)
    expect("import Split num_outputs 10^12", ["rewire-import", split, "-o", os.path.join(work, "s.mlir")],
           2, "num_outputs is 1000000000000 but the node has 2 outputs")

    for pads in (2**31 - 1, 30000):
        conv = save(os.path.join(work, "conv.onnx"),
                    [helper.make_node("Conv", ["x", "w"], ["c"], pads=[pads] * 4, name="conv"),
                     helper.make_node("ReduceSum", ["c"], ["y"], keepdims=0, name="sum")],
                    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                    [numpy_helper.from_array(np.ones((4, 1, 1, 1), np.float32), "w")])
        expect("Conv pads %d" % pads, ["rewire-compile", conv, "-o", os.path.join(work, "conv.rwx")], 2,
               "'Conv' node 'conv' produces a tensor of shape", "over the limit of 4294967296 elements")

    # An artifact compiled for a CPU with features this one lacks is refused
    # by name at load (not SIGILL); one compiled for a baseline runs here.
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    rc, text = run(["rewire-compile", gather, "--cpu=sierraforest", "-o", os.path.join(work, "sf.rwx")])
    if rc != 0:
        raise SystemExit("FAIL compile --cpu=sierraforest: " + text)
    if "avx_ifma" in flags:
        expect("artifact for sierraforest (this CPU has AVX-IFMA)",
               ["rewire-run", os.path.join(work, "sf.rwx"), "--input=@" + os.path.join(work, "valid.npy")],
               0, "result[0]")
    else:
        expect("artifact for sierraforest", ["rewire-run", os.path.join(work, "sf.rwx"),
                                            "--input=@" + os.path.join(work, "valid.npy")],
               4, "was compiled for a CPU with", "avxifma", "which this CPU lacks")
    rc, text = run(["rewire-compile", gather, "--cpu=x86-64", "-o", os.path.join(work, "base.rwx")])
    expect("artifact for x86-64 runs anywhere",
           ["rewire-run", os.path.join(work, "base.rwx"), "--input=@" + os.path.join(work, "valid.npy"),
            "--expected_output=@" + os.path.join(work, "want.npy")], 0, "[SUCCESS]")

    print("%d failed" % len(FAILURES))
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
