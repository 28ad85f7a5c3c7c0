"""Shared pieces of the paper experiments: running the Rewire tools, reading
their logs, seeds, spread, and the Markdown report with PNG figures
(matplotlib, Agg backend) under docs/results/.

Every experiment trains with rewire-train (the compiled train step) and
states its setup, seeds and the result with spread in its report; the
verdict against the paper's claim is computed from the numbers, never
written by hand.
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
RESULTS = os.path.join(ROOT, "docs", "results")


def setup_env(build):
    """PATH and library directory for the tools of BUILD."""
    build = os.path.abspath(build)
    os.environ["PATH"] = os.path.join(build, "bin") + os.pathsep + os.environ["PATH"]
    os.environ.setdefault("REWIRE_LIB_DIR", os.path.join(build, "lib"))
    os.environ.setdefault("REWIRE_CACHE_DIR", os.path.join(build, "compile-cache"))
    sys.path.insert(0, os.path.join(ROOT, "python"))


def start(name):
    """The command line every experiment takes (--build, --quick): sets up
    the tools' environment and returns (args, a fresh work folder); a quick
    run writes its report there instead of docs/results/."""
    import argparse
    import tempfile
    global RESULTS
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true", help="a short run; no report in docs/results")
    args = ap.parse_args()
    setup_env(args.build)
    work = tempfile.mkdtemp(prefix="rewire-%s-" % name)
    if args.quick:
        RESULTS = work
    return args, work


def tool(*args, quiet=True):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s failed (exit %d):\n%s" % (args[0], r.returncode, r.stderr[-2000:]))
    if not quiet:
        sys.stderr.write(r.stderr)
    return r.stdout


def parallel(jobs, workers=None):
    """Runs the callables `jobs` on `workers` threads (default: the CPU
    count), each typically one rewire-train process: the compiles of the
    different variants overlap on a 2-core machine. Returns their results."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        return list(pool.map(lambda job: job(), jobs))


def read_jsonl(path):
    """(train rows, validation rows) of a rewire-train --jsonl file."""
    train, val = [], []
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            (val if "val_loss" in row else train).append(row)
    return train, val


CORPUS = "/usr/share/common-licenses/GPL-3"  # on every Debian system


def char_corpus(work):
    """The bytes of CORPUS split 90/10 into token files for rewire-train
    (uint16): (train path, validation path, validation bytes as int64)."""
    raw = np.frombuffer(open(CORPUS, "rb").read(), dtype=np.uint8)
    cut = int(len(raw) * 0.9)
    tr, va = os.path.join(work, "text-train.bin"), os.path.join(work, "text-val.bin")
    raw[:cut].astype(np.uint16).tofile(tr)
    raw[cut:].astype(np.uint16).tofile(va)
    return tr, va, raw[cut:].astype(np.int64)


def char_gpt(work, layers, t=32, b=8, windows=32):
    """The setup of the character-GPT experiments: the byte corpus, `windows`
    validation windows of `t` bytes saved as ids.npy (for --layer-stats), and
    a pre-LN CharGPT (width 32, 2 heads, seed 0) exported to gpt.onnx.
    Returns (train tokens, validation tokens, ids path, model path)."""
    import torch
    import models
    tr, va, val = char_corpus(work)
    ids = os.path.join(work, "ids.npy")
    np.save(ids, np.stack([val[i * t:(i + 1) * t] for i in range(windows)]))
    torch.manual_seed(0)
    model = models.export(models.CharGPT(layers=layers, d=32, heads=2, t=t, b=b),
                          torch.zeros(b, t, dtype=torch.long), os.path.join(work, "gpt.onnx"))
    return tr, va, ids, model


def layer_stats(model, page, residual="", params="", inputs="", batches=4):
    """rewire-report --layer-stats: {(layer, statistic): value} of stream 0."""
    import re
    args = ["rewire-report", model, "--layer-stats", "--inputs=" + inputs, "--batches=%d" % batches,
            "-o", page]
    if residual:
        args.append("--residual=" + residual)
    if params:
        args.append("--params=" + params)
    tool(*args)
    rows = re.findall(r"<tr><td>(\d+)</td><td>(\d+)</td><td>([a-z_]+)</td><td>([a-z_]+)</td>"
                      r"<td>([-0-9.e+]+)</td></tr>", open(page).read())
    return {(int(l), stat): float(v) for s, l, _, stat, v in rows if s == "0"}


def cpu_model():
    """The CPU's model name, family and model (python/rewire_sysinfo.py)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import rewire_sysinfo
    return rewire_sysinfo.cpu_model()


def read_safetensors(path):
    """{name: float32 array} of a safetensors file."""
    blob = open(path, "rb").read()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, e in header.items():
        if name != "__metadata__":
            lo, hi = e["data_offsets"]
            out[name] = np.frombuffer(blob[8 + n + lo:8 + n + hi], np.float32).reshape(e["shape"])
    return out


def onnx_parameters(onnx_path, exported_state, new_state):
    """New weights under the names an ONNX export gave them. torch.onnx.export
    renames and transposes some parameters (a Linear on 3-D inputs becomes
    `onnx::MatMul_N`, its weight transposed) and folds others (positional
    embeddings of a fixed range): each initializer is matched by value to
    the exported model's state (itself or transposed) and replaced by the
    same tensor of `new_state`; aliases (Identity nodes named after a
    parameter) take that parameter's new value. Unmatched initializers
    (buffers, masks) are left out, so they keep the export's values."""
    import onnx
    from onnx import numpy_helper
    by_value = {}
    for key, t in exported_state.items():
        a = t.detach().numpy().astype(np.float32)
        by_value.setdefault(a.tobytes(), (key, False))
        if a.ndim == 2:
            by_value.setdefault(np.ascontiguousarray(a.T).tobytes(), (key, True))
    out = {}
    graph = onnx.load(onnx_path).graph
    # Equal initializers are stored once, the others aliased by Identity
    # nodes named after the parameters (the importer unties them again).
    for node in graph.node:
        if node.op_type == "Identity" and node.output[0] in new_state:
            out[node.output[0]] = new_state[node.output[0]].detach().numpy().astype(np.float32)
    for init in graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype != np.float32:
            continue
        hit = by_value.get(np.ascontiguousarray(a).tobytes())
        if hit:
            key, transposed = hit
            b = new_state[key].detach().numpy().astype(np.float32)
            out[init.name] = np.ascontiguousarray(b.T if transposed else b)
    return out


def save_safetensors(path, tensors):
    """{name: float32 array} as safetensors (for rewire-train --params)."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def mean_sd(values):
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def fmt(values, digits=4):
    """mean ± sd; small values in scientific notation."""
    m, s = mean_sd(values)
    if 0 < abs(m) < 10 ** -(digits - 1):
        return "%.2e ± %.1e" % (m, s)
    return "%.*f ± %.*f" % (digits, m, digits, s)


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 110, "font.size": 9})
    return plt


class Report:
    """A Markdown report with figures, written to docs/results/NAME.md."""

    def __init__(self, name, title):
        self.name, self.lines = name, ["# " + title, ""]
        self.start = time.time()
        os.makedirs(RESULTS, exist_ok=True)

    def add(self, text=""):
        self.lines.append(text)

    def table(self, header, rows):
        self.lines.append("| " + " | ".join(header) + " |")
        self.lines.append("|" + "---|" * len(header))
        for r in rows:
            self.lines.append("| " + " | ".join(str(c) for c in r) + " |")
        self.lines.append("")

    def figure(self, fig, tag, caption):
        path = os.path.join(RESULTS, "%s-%s.png" % (self.name, tag))
        fig.tight_layout()
        fig.savefig(path)
        self.lines.append("![%s](%s)" % (caption, os.path.basename(path)))
        self.lines.append("")
        self.lines.append("*%s*" % caption)
        self.lines.append("")

    def write(self, command):
        self.lines += ["## Reproduce", "", "```sh", command, "```", "",
                       "Run %s on %s (%d CPUs), %.0f s." % (
                           time.strftime("%Y-%m-%d"), cpu_model(),
                           os.cpu_count(), time.time() - self.start), ""]
        path = os.path.join(RESULTS, self.name + ".md")
        with open(path, "w") as f:
            f.write("\n".join(self.lines))
        print("wrote " + path)
