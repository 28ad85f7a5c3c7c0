"""Replays every .onnx file of a folder through rewire-import: each must end
with a documented exit code (0, 2, 3), never a signal.

    replay.py FOLDER rewire-import
"""
import glob
import os
import subprocess
import sys
import tempfile

folder, tool = sys.argv[1], sys.argv[2:]
files = sorted(glob.glob(os.path.join(folder, "*.onnx")))
crashes = 0
with tempfile.TemporaryDirectory() as d:
    for f in files:
        r = subprocess.run(tool + [f, "-o", os.devnull, "--params", os.path.join(d, "p.st")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        if r.returncode < 0 or r.returncode not in (0, 2, 3):
            crashes += 1
            print("CRASH %s: exit %d: %s" % (os.path.basename(f), r.returncode, r.stderr[-300:]))
print("%d inputs, %d crashes" % (len(files), crashes))
if not files:
    print("EMPTY: no regression inputs in %s" % folder)
sys.exit(1 if crashes or not files else 0)
