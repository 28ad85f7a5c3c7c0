"""Runs every command in README.md's shell code blocks, so the README cannot drift
from the tools: each block's lines (joined at trailing backslashes, comments
stripped) get their placeholders (model.onnx, gpt.onnx, x.npy, tokens.bin,
...) as files made from the bundled tiny GPT and small generated inputs, and
run in one work folder, in README order; long runs get their script's own
small-size flags (--quick, --ops/--limit-per-op, --layers ...). A new README
line runs without any change here; a command that fails fails the test.

    readme_commands.py SOURCE_ROOT BUILD_ROOT WORKDIR
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np

src, build, work = (os.path.abspath(p) for p in sys.argv[1:4])
os.makedirs(work, exist_ok=True)
FAILED = []

# Commands the suite runs elsewhere, with where: running them here would
# recurse (the test command itself) or repeat minutes of work.
ELSEWHERE = {
    "./scripts/test.sh": "is this test suite",
    "./scripts/demo.sh": "runs as test/Examples/tiny-gpt-demo.test and tiny-gpt-forms.test",
    "build/venv/bin/pip install --no-build-isolation .": "is the bootstrap's last step (its "
    "package is what test/Python tests)",
}


def commands(readme):
    """(line number, command) for every command of every code block."""
    out, block, start, pending, shell = [], False, 0, "", True
    for n, line in enumerate(open(readme), 1):
        if line.startswith("```"):
            block = not block
            # Shell blocks only: a ```python block shows API use with
            # placeholders; python/tests and examples/python run the API.
            shell = line[3:].strip() in ("", "sh", "bash", "console")
            continue
        if not block or not shell or not line.strip():
            continue
        text = line.rstrip("\n")
        if not pending:
            start = n
        # Strip a trailing comment: '#' after two or more spaces.
        text = re.sub(r"\s{2,}#.*$", "", text).rstrip()
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        out.append((start, (pending + text).strip()))
        pending = ""
    return out


def setup():
    """The placeholders' files: the bundled tiny GPT (2 layers, d 32, vocab
    64, B2 x T8) as model.onnx and gpt.onnx, token ids, a token stream."""
    gpt = os.path.join(src, "examples", "tiny-gpt", "tiny-gpt.onnx")
    for name in ("model.onnx", "gpt.onnx"):
        shutil.copy(gpt, os.path.join(work, name))
    rng = np.random.default_rng(0)
    np.save(os.path.join(work, "x.npy"), rng.integers(0, 64, (2, 8)).astype(np.int64))
    rng.integers(0, 64, 600).astype(np.uint16).tofile(os.path.join(work, "tokens.bin"))


def rewrite(cmd, previous):
    """The command as it runs here: paths into the source and build trees,
    optional [..] arguments taken, `...` replaced by the previous command's
    arguments, long runs shortened with the script's own small-size flags."""
    env = {}
    words = shlex.split(cmd)
    while words and re.match(r"^[A-Z_]+=", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    args = []
    for w in words:
        if w == "...":
            args.extend(previous[2:])
            continue
        w = w.strip("[]")
        for prefix in ("build/",):
            if w.startswith(prefix):
                w = os.path.join(build, w[len(prefix):])
        for prefix in ("examples/", "scripts/", "bench/", "test/Models/"):
            if w.startswith(prefix):
                w = os.path.join(src, w)
        args.append(w)
    for k, v in env.items():
        env[k] = os.path.join(build, v[len("build/"):]) if v.startswith("build/") else v
    script = next((a for a in args if a.endswith(".py")), "")
    if "/examples/experiments/" in script:
        args.append("--quick")
    if script.endswith("scripts/conformance.py"):
        args += ["--ops", "Relu,Add", "--limit-per-op", "2", "--out", os.path.join(work, "c.md")]
    if script.endswith("test/Models/check_models.py"):
        if "--table" in args:
            args[args.index("--table") + 1] = os.path.join(work, "models.md")
        args += ["--only", "gpt2", "--steps", "import,detect,run"]
    if script.endswith("bench/form_train_overhead.py"):
        args += ["--layers", "1", "--seq", "16", "--d", "32", "--heads", "2", "--steps", "2",
                 "--rounds", "1"]
    if script.endswith(("bench/train_ab.py", "bench/regions/regions.py")):
        args += ["--steps", "2", "--trainer", os.path.join(build, "bin", "rewire-train")]
    if script.endswith("bench/train_ab.py"):
        args[args.index("--rounds") + 1] = "2"
    if script.endswith("bench/gpt2_stack.py"):
        args += ["--layers", "1", "--seq", "16", "--d", "32", "--heads", "2", "--runs", "1",
                 "--no-iree", "--no-torch-compile", "--out", os.path.join(work, "bench.md")]
    if script.endswith("bench/hf_models.py"):
        args += ["--models", "gpt2", "--exporters", "torchscript", "--layers", "1", "--seq", "16",
                 "--d", "32", "--heads", "2", "--rounds", "1", "--no-iree", "--no-torch-compile",
                 "--work", os.path.join(work, "hf"), "--out", os.path.join(work, "hf.json")]
    if args[:2] == ["bash", os.path.join(src, "bench/gpu/prepare.sh")]:
        args.append(os.path.join(work, "gpu-check"))
        env["EMULATE"] = "1"
    return args, env


def needs(args, env):
    """Why a command cannot run on this machine (None: it can)."""
    joined = " ".join(args)
    if "--target=cuda" in joined and not os.path.exists("/usr/local/cuda/bin/ptxas"):
        return "no CUDA toolkit (ptxas)"
    if args[0].endswith("rewire-run") and any(a.endswith(".rwcu") for a in args) and \
            "REWIRE_LIBCUDA" not in env:
        # The GPU line: run on the CUDA emulator instead of a driver.
        env.update({"REWIRE_LIBCUDA": os.path.join(build, "lib", "librewire_cuda_emu.so"),
                    "REWIRE_LIBCUBLAS": os.path.join(build, "lib", "librewire_cuda_emu.so"),
                    "REWIRE_CUDA_EMULATOR_KERNELS": os.path.join(work, "model.emu.so")})
        print("     (no GPU: on the CUDA emulator)")
        if "--profile=20" in args:
            args.remove("--profile=20")  # the emulator has no CUDA events
    if args[0] == "mpirun" and "--device=cuda" in args:
        ranks = int(args[args.index("-np") + 1])
        gpus = len([d for d in os.listdir("/dev") if re.fullmatch(r"nvidia[0-9]+", d)])
        if gpus < ranks:
            return ("needs %d GPUs, one per rank (this machine has %d; "
                    "test/GPU/emulator-data-parallel.test runs it on the CUDA emulator)" % (ranks, gpus))
    if "--onnx-wheel" in joined:
        return "downloads the onnx wheel from PyPI to generate its node tests (a separate command)"
    if "fixture-venv.sh" in joined or "make-model-fixtures.py" in joined:
        return "downloads PyTorch 2.x from PyPI (~6 GB) to regenerate the committed fixtures"
    if "bench/venv.sh" in joined:
        return "downloads PyTorch 2.x, ONNX Runtime and IREE from PyPI (~6 GB) for the benchmarks"
    if any("bench/%s" % b in joined for b in ("gpt2_stack.py", "form_train_overhead.py", "hf_models.py")):
        probe = subprocess.run([args[0], "-c", "import torch; assert int(torch.__version__[0]) >= 2"],
                               capture_output=True) if os.path.exists(args[0]) else None
        if probe is None or probe.returncode != 0:
            return "needs PyTorch 2.x from PyPI (benchmarks are not part of the test command)"
    return None


def main():
    setup()
    previous = []
    ran = skipped = 0
    for line, cmd in commands(os.path.join(src, "README.md")):
        if cmd in ELSEWHERE:
            print("elsewhere README:%d %s: %s" % (line, cmd, ELSEWHERE[cmd]))
            continue
        args, env = rewrite(cmd, previous)
        if args[0].endswith("rewire-report") and "trained.safetensors" in args and \
                not os.path.exists(os.path.join(work, "trained.safetensors")):
            # The line's own input: parameters trained with the same form.
            subprocess.run([os.path.join(build, "bin", "rewire-train"), "model.onnx", "--data",
                            "tokens.bin", "--residual=review", "--steps=2",
                            "--output=trained.safetensors"], cwd=work, check=True,
                           capture_output=True)
        if args[0].endswith("rewire-compile") and "--target=cuda" in args and \
                not any(a.startswith("--emulator-kernels") for a in args) and "-o" in args and \
                not os.path.exists("/dev/nvidiactl"):
            # No GPU here: the artifact also gets the emulator's kernels, so
            # the README's GPU lines run on the CUDA emulator.
            out = args[args.index("-o") + 1]
            args.append("--emulator-kernels=" + out[:-len(".rwcu")] + ".emu.so")
        why = needs(args, env)
        if why:
            print("skipped README:%d %s: %s" % (line, cmd, why))
            skipped += 1
            previous = args
            continue
        full_env = dict(os.environ, REWIRE_CACHE_DIR=os.path.join(work, "cache"), **env)
        t0 = time.perf_counter()
        try:
            r = subprocess.run(args, cwd=work, env=full_env, capture_output=True, timeout=900)
            rc, text = r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            rc, text = "timeout", ""
        ran += 1
        ok = rc == 0
        # The seconds each took: what to shorten when the suite grows slow.
        print("%s README:%d %s (%.1f s)" % ("ok  " if ok else "FAIL", line, cmd,
                                            time.perf_counter() - t0))
        if not ok:
            print("     exit %s: %s" % (rc, text[-1500:]))
            FAILED.append(line)
        previous = args
    print("%d README commands ran, %d skipped, %d failed" % (ran, skipped, len(FAILED)))
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
