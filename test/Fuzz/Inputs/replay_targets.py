"""Replays every regression input of the reader fuzz targets
(test/Fuzz/regressions/TARGET, filled by scripts/fuzz.sh) through the tool
that reads such input from users: each must end with a documented exit
code, never a signal or a hang. Folders must not be empty.

    replay_targets.py REGRESSIONS ARTIFACT WORKDIR
"""
import os
import shutil
import subprocess
import sys

regressions, artifact, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
x12 = "--input=4x3xf32=" + ",".join(["0.5"] * 12)


def commands(target, path):
    """The tool invocations that read `path` as a `target` input."""
    if target == "npy":
        return [["rewire-run", artifact, "--input=@" + path]]
    if target == "safetensors":
        return [["rewire-run", artifact, "--params=" + path, x12]]
    if target == "elf":
        return [["rewire-run", path, x12]]
    if target == "input-spec":
        spec = open(path, "rb").read().decode("utf-8", "replace").replace("\0", "")
        return [["rewire-run", artifact, "--input=" + spec]]
    if target == "json":
        ck = os.path.join(work, "ck")
        shutil.rmtree(ck, ignore_errors=True)
        os.makedirs(ck)
        shutil.copy(path, os.path.join(ck, "state.json"))
        return [["rewire-train", artifact, "--inputs", os.path.join(work, "x.npy"),
                 "--targets", os.path.join(work, "y.npy"), "--checkpoint=" + ck, "--resume",
                 "--steps=1"]]
    return []  # onnxgen: generator seeds, replayed by scripts/fuzz.sh's short slice


import numpy as np  # noqa: E402
np.save(os.path.join(work, "x.npy"), np.ones((4, 3), np.float32))
np.save(os.path.join(work, "y.npy"), np.ones((4, 5), np.float32))
total = bad = 0
for target in sorted(os.listdir(regressions)):
    folder = os.path.join(regressions, target)
    if not os.path.isdir(folder):
        continue
    files = sorted(f for f in os.listdir(folder) if f != "README.md")
    if not files:
        print("EMPTY %s: no regression inputs" % target)
        bad += 1
    for f in files:
        for args in commands(target, os.path.join(folder, f)):
            total += 1
            try:
                r = subprocess.run(args, capture_output=True, timeout=120)
                rc = r.returncode
            except subprocess.TimeoutExpired:
                rc = "hang"
            if rc == "hang" or rc < 0 or rc not in (0, 1, 2, 3, 4):
                bad += 1
                print("CRASH %s/%s: exit %s" % (target, f, rc))
print("%d replays, %d crashes or empty folders" % (total, bad))
sys.exit(1 if bad else 0)
