"""Runs a command and prints its stderr and then `exit code N`, so lit tests
can FileCheck documented exit codes (lit's shell has no `$?`).

    %python exit_code.py rewire-import bad.onnx | FileCheck %s
    CHECK: error: ...
    CHECK: exit code 2
"""
import subprocess
import sys

r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
sys.stdout.write(r.stderr)
print("exit code %d" % r.returncode)
# A crash (signal) is never an acceptable answer to bad input.
sys.exit(1 if r.returncode < 0 else 0)
