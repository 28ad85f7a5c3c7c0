"""Files and command lines a careless or hostile user gives the tools: each
must end with a documented exit code and a message naming the problem --
never a signal, a hang, or exit 0 with a wrong result -- and nothing the
tools did not create may be overwritten or deleted.

    hostile_files.py WORKDIR
"""
import json
import os
import resource
import struct
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "utils"))
from onnx_graph import save  # noqa: E402

FAILURES = []


def expect(name, args, code, *needles, timeout=120, absent=(), env=None, memory=None):
    """Runs `args`; passes when it exits `code` (a hang or a signal fails)
    and its output contains every needle and none of `absent`. `memory`
    limits the address space (bytes)."""
    def limit():
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        r = subprocess.run(args, capture_output=True, timeout=timeout,
                           env=dict(os.environ, **(env or {})), preexec_fn=limit)
        rc, text = r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, text = "hang", ""
    ok = rc == code and all(n in text for n in needles) and not any(a in text for a in absent)
    print("%s %s: exit %s" % ("ok  " if ok else "FAIL", name, rc))
    if not ok:
        print("     want exit %s with %r; got: %s" % (code, needles, text[-700:]))
        FAILURES.append(name)
    return text


def check(name, cond, detail=""):
    print("%s %s" % ("ok  " if cond else "FAIL", name))
    if not cond:
        print("     " + detail)
        FAILURES.append(name)


def safetensors(path, name, dtype, shape, data):
    header = json.dumps({name: {"dtype": dtype, "shape": shape,
                                "data_offsets": [0, len(data)]}}).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


def main():
    w = sys.argv[1]
    os.makedirs(w, exist_ok=True)
    rng = np.random.default_rng(0)
    x12 = "--input=4x3xf32=" + ",".join(str(v) for v in rng.standard_normal(12).round(3))
    weight = rng.standard_normal((3, 5)).astype(np.float32)
    lin = save(os.path.join(w, "lin.onnx"),
               [helper.make_node("MatMul", ["x", "w"], ["z"], name="head")],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
               [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 5])],
               [numpy_helper.from_array(weight, "w")])
    art = os.path.join(w, "lin.rwx")
    subprocess.run(["rewire-compile", lin, "-o", art], check=True)
    xs = rng.standard_normal((8, 3)).astype(np.float32)
    np.save(os.path.join(w, "x.npy"), xs)
    np.save(os.path.join(w, "y.npy"), rng.standard_normal((8, 5)).astype(np.float32))
    np.save(os.path.join(w, "y7.npy"), rng.standard_normal((7, 5)).astype(np.float32))
    train = ["rewire-train", lin, "--inputs", os.path.join(w, "x.npy"),
             "--targets", os.path.join(w, "y.npy"), "--steps=2"]

    # Transpose of a rank-0 tensor: identity, no crash in the lowering.
    t0 = save(os.path.join(w, "t0.onnx"), [helper.make_node("Transpose", ["x"], ["y"])],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    expect("Transpose of rank 0 runs", ["rewire-run", t0, "--input=f32=2.5"], 0, "f32=2.5")

    # A truncated artifact is refused before dlopen maps it.
    blob = open(art, "rb").read()
    for frac in (0.05, 0.5, 0.95):
        cut = os.path.join(w, "cut.rwx")
        with open(cut, "wb") as f:
            f.write(blob[:int(len(blob) * frac)])
        expect("artifact truncated to %d%%" % (frac * 100), ["rewire-run", cut, x12], 4,
               "cannot load artifact", "truncated or damaged")
    with open(os.path.join(w, "text.rwx"), "w") as f:
        f.write("not an artifact\n")
    expect("text file as artifact", ["rewire-run", os.path.join(w, "text.rwx"), x12], 4,
           "not a Rewire artifact")

    # FIFOs and directories where files are expected: refused at once.
    fifo = os.path.join(w, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    expect("FIFO as --params (rewire-run)", ["rewire-run", art, "--params=" + fifo, x12], 4,
           "is a FIFO", timeout=20)
    expect("FIFO as --params (rewire-train)", train + ["--params=" + fifo], 4, "is a FIFO",
           timeout=60)
    expect("FIFO as --input @file", ["rewire-run", art, "--input=@" + fifo], 2, "is a FIFO",
           timeout=20)
    expect("FIFO as raw --input values", ["rewire-run", art, "--input=4x3xf32=@" + fifo], 2,
           "is a FIFO", timeout=20)
    ck = os.path.join(w, "ck")
    os.makedirs(ck, exist_ok=True)
    if not os.path.exists(os.path.join(ck, "state.json")):
        os.mkfifo(os.path.join(ck, "state.json"))
    expect("FIFO as checkpoint state.json", train + ["--checkpoint=" + ck, "--resume"], 4,
           "is a FIFO", timeout=60)
    fifo_onnx = os.path.join(w, "fifo.onnx")
    if not os.path.exists(fifo_onnx):
        os.mkfifo(fifo_onnx)
    expect("FIFO as ONNX model", ["rewire-compile", fifo_onnx, "-o", os.path.join(w, "f.rwx")],
           4, "is not a regular file", timeout=20)
    d = os.path.join(w, "dir")
    os.makedirs(d, exist_ok=True)
    expect("directory as token data", ["rewire-train", lin, "--data", d, "--steps=2"], 4,
           "is a directory")
    expect("directory as --inputs", train[:2] + ["--inputs", d] + train[4:], 2, "is a directory")
    expect("directory as artifact", ["rewire-run", d], 4, "is a directory")
    expect("directory as IR (rewire-opt)", ["rewire-opt", d], 1, "is a directory")
    expect("directory as IR (rewire-compile)", ["rewire-compile", d, "-o",
                                                os.path.join(w, "f.rwx")], 4, "is a directory")

    # IR nested deeper than the parser's stack: a message, not SIGSEGV.
    deep = os.path.join(w, "deep.mlir")
    with open(deep, "w") as f:
        f.write('"builtin.module"() ({\n' * 3000 + "}) : () -> ()\n" * 3000)
    expect("3000 nested regions (rewire-opt)", ["rewire-opt", deep], 1, "levels deep")
    expect("3000 nested regions (rewire-compile)", ["rewire-compile", deep, "-o",
                                                    os.path.join(w, "d.rwx")], 2, "levels deep")
    ok_deep = os.path.join(w, "ok-deep.mlir")
    with open(ok_deep, "w") as f:
        f.write("module {\n" * 100 + "}\n" * 100)
    expect("100 nested regions still parse", ["rewire-opt", ok_deep], 0, "module {")

    # Sizes under the parser's limits but over memory, and over the limits.
    # (On an ONNX model the input's shape is the user's to choose: the parser's
    # limit; on an artifact, more elements than it takes are refused first.)
    expect("--input of 12e9 elements", ["rewire-run", lin, "--input=4000000000x3xf32=1"], 2,
           "is too large")
    expect("a wrong shape 14 GB large, refused before it is made",
           ["rewire-run", art, "--input=777777x772x6xf32=1"], 2,
           "must be 4x3xf32, got 777777x772x6xf32", memory=600 << 20)
    hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000, 3000000000), }"
    with open(os.path.join(w, "huge.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr)
    expect(".npy header with a huge shape", ["rewire-run", art, "--input=@" +
                                             os.path.join(w, "huge.npy")], 2, "too large")

    # A temporary the compiled code cannot allocate (a 1.6 GB intermediate
    # under a 600 MB address-space limit) ends the call with a message.
    big = save(os.path.join(w, "bigtmp.onnx"),
               [helper.make_node("Conv", ["x", "w"], ["c"], pads=[10000] * 4),
                helper.make_node("ReduceSum", ["c"], ["y"], keepdims=0)],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
               [numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")])
    big_rwx = os.path.join(w, "bigtmp.rwx")
    subprocess.run(["rewire-compile", big, "-o", big_rwx], check=True)
    expect("a temporary over the memory limit", ["rewire-run", big_rwx, "--input=1x1x2x2xf32=1"],
           4, "out of memory: a temporary buffer of 1600320080 bytes", memory=600 << 20)
    expect("the same model with memory to spare", ["rewire-run", big_rwx,
                                                   "--input=1x1x2x2xf32=1"], 0, "f32=4")
    expect("an --input over the memory limit", ["rewire-run", lin, "--input=1000000000x3xf32=1"],
           4, "out of memory", memory=2 << 30)

    # The compile cache loads native code only from folders private to the user.
    shared = os.path.join(w, "shared-cache")
    os.makedirs(shared, exist_ok=True)
    os.chmod(shared, 0o777)
    expect("a world-writable compile cache is refused", ["rewire-run", lin, x12], 4,
           "is not private to this user", env={"REWIRE_CACHE_DIR": shared})
    os.chmod(shared, 0o700)
    expect("a private compile cache is used", ["rewire-run", lin, x12], 0, "result[0]",
           env={"REWIRE_CACHE_DIR": shared})

    # rewire-train data that does not fit together.
    expect("--val-inputs/--val-targets counts differ",
           train + ["--val-inputs", os.path.join(w, "x.npy"), "--val-targets",
                    os.path.join(w, "y7.npy"), "--eval-every=1"], 2,
           "--val-inputs has 8 examples, --val-targets 7")
    expect("--val-inputs without --val-targets", train + ["--val-inputs", os.path.join(w, "x.npy")],
           1, "go together")

    # Parameter files checked by dtype and shape, not byte count.
    for tag, dtype, shape, data in (
            ("transposed", "F32", [5, 3], weight.T.copy().tobytes()),
            ("int32", "I32", [3, 5], np.arange(15, dtype=np.int32).tobytes()),
            ("f16", "F16", [3, 10], np.zeros(30, dtype=np.float16).tobytes())):
        p = os.path.join(w, "w-%s.safetensors" % tag)
        safetensors(p, "w", dtype, shape, data)
        expect("rewire-train --params %s" % tag, train + ["--params=" + p], 2,
               "'w' in '%s' is %s [%s]" % (p, dtype, "x".join(map(str, shape))))
        expect("rewire-run --params %s" % tag, ["rewire-run", art, "--params=" + p, x12], 4,
               "the artifact expects F32 [3x5]")
    # A checkpoint whose tensor has the right bytes but the wrong shape.
    ck2 = os.path.join(w, "ck2")
    expect("train with checkpoints", train + ["--checkpoint=" + ck2], 0)
    safetensors(os.path.join(ck2, "model-2.safetensors"), "param:w", "F32", [5, 3],
                weight.T.copy().tobytes())
    expect("--resume from a checkpoint of another shape",
           train[:-1] + ["--steps=3", "--checkpoint=" + ck2, "--resume"], 4,
           "checkpoint", "is F32 [5x3]")

    # Expected outputs that a tolerance cannot excuse.
    expect("rewire-run computes", ["rewire-run", art, x12], 0, "result[0]")
    expect("--expected_output=inf does not match finite values",
           ["rewire-run", art, x12, "--expected_output=4x5xf32=inf"], 3, "expected inf")
    expect("--expected_output=-inf does not match finite values",
           ["rewire-run", art, x12, "--expected_output=4x5xf32=-inf"], 3, "expected -inf")
    expect("--expected_output=nan does not match finite values",
           ["rewire-run", art, x12, "--expected_output=4x5xf32=nan"], 3, "expected nan")
    inf = save(os.path.join(w, "inf.onnx"), [helper.make_node("Div", ["x", "z"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                helper.make_tensor_value_info("z", TensorProto.FLOAT, [3])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    expect("inf and nan match themselves", ["rewire-run", inf, "--input=3xf32=1,-1,0",
                                            "--input=3xf32=0,0,0",
                                            "--expected_output=3xf32=inf,-inf,nan"], 0, "SUCCESS")
    expect("inf does not match -inf", ["rewire-run", inf, "--input=3xf32=1,-1,0",
                                       "--input=3xf32=0,0,0",
                                       "--expected_output=3xf32=inf,inf,nan"], 3, "FAILED")

    # Escape sequences in names never reach the terminal raw.
    esc = save(os.path.join(w, "esc.onnx"), [helper.make_node("Relu", ["x\x1b[31m"], ["y\x1b]0;title\x07"])],
               [helper.make_tensor_value_info("x\x1b[31m", TensorProto.FLOAT, [2])],
               [helper.make_tensor_value_info("y\x1b]0;title\x07", TensorProto.FLOAT, [2])])
    expect("escape sequence in an input name (error)", ["rewire-run", esc, "--input=3xf32=1"], 2,
           "x\\x1b[31m", absent=("\x1b",))
    expect("escape sequence in names (--describe)", ["rewire-run", esc, "--describe"], 0,
           "y\\x1b]0;title\\x07", absent=("\x1b", "\x07"))

    bad = save(os.path.join(w, "esc-bad.onnx"), [helper.make_node("Relu", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
               [helper.make_tensor_value_info("y\x1b[2J", TensorProto.FLOAT, [2])])
    expect("escape sequence in a name (import error)", ["rewire-import", bad, "-o",
                                                         os.path.join(w, "e.mlir")], 2,
           "never computed", absent=("\x1b",))

    # nn.parameter_file may not reach outside the IR's folder.
    ir = ('module attributes {nn.parameter_file = "%s"} {\n'
          '  ml_program.global private @w(#ml_program.extern : tensor<2xf32>) : tensor<2xf32>\n'
          '  func.func @forward(%%x: tensor<2xf32>) -> tensor<2xf32> {\n'
          '    %%w = ml_program.global_load_const @w : tensor<2xf32>\n'
          '    %%y = nn.add %%x, %%w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n'
          '    return %%y : tensor<2xf32>\n  }\n}\n')
    for tag, ref in (("..", "../secret.safetensors"), ("absolute", "/etc/passwd")):
        p = os.path.join(w, "pf.mlir")
        with open(p, "w") as f:
            f.write(ir % ref)
        expect("nn.parameter_file %s (rewire-compile)" % tag,
               ["rewire-compile", p, "-o", os.path.join(w, "pf.rwx")], 2,
               "is not a file in the IR's folder")
        expect("nn.parameter_file %s (rewire-export)" % tag,
               ["rewire-export", p, "-o", os.path.join(w, "pf.onnx")], 2,
               "is not a file in the IR's folder")
    safetensors(os.path.join(w, "pw.safetensors"), "w", "F32", [2],
                np.array([1, 2], np.float32).tobytes())
    with open(os.path.join(w, "pf.mlir"), "w") as f:
        f.write(ir % "pw.safetensors")
    expect("nn.parameter_file beside the IR", ["rewire-run", os.path.join(w, "pf.mlir"),
                                               "--input=2xf32=1,1"], 0, "2xf32=2 3")

    # --export: nothing beside the export is overwritten or deleted, and an
    # impossible output path is refused before training.
    for name in ("X.params.safetensors", "X.rewire.mlir", "X.onnx.params.safetensors",
                 "X.onnx.rewire.mlir"):
        with open(os.path.join(w, name), "w") as f:
            f.write("precious")
    expect("--export", train + ["--export=" + os.path.join(w, "X.onnx")], 0)
    kept = all(open(os.path.join(w, n)).read() == "precious"
               for n in ("X.params.safetensors", "X.rewire.mlir", "X.onnx.params.safetensors",
                         "X.onnx.rewire.mlir"))
    check("--export leaves the user's files alone", kept)
    expect("the export runs", ["rewire-run", os.path.join(w, "X.onnx"), x12], 0, "result[0]")
    for flag in ("--export", "--output", "--metrics", "--plot"):
        expect("%s into a missing folder fails before training" % flag,
               train + ["%s=%s/nowhere/out" % (flag, w)], 4, "does not exist", absent=("step 2/2",))
    expect("--export of a compiled artifact fails before training",
           ["rewire-train", art] + train[2:] + ["--export=" + os.path.join(w, "Y.onnx")], 1,
           "--export needs the model as .onnx or .mlir", absent=("step 2/2",))

    print("%d failed" % len(FAILURES))
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
