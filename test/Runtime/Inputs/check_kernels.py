"""Reads `rewire-run --describe` on stdin and checks its `kernels:` line:
oneDNN's SGEMM, with the widest vector ISA this CPU has (from
/proc/cpuinfo's flags), never a generic kernel on an AVX2 or AVX-512 CPU;
and its `attention:` line: the fused attention kernel's path for this CPU."""
import os
import re
import sys

text = sys.stdin.read()
m = re.search(r"^kernels: oneDNN (\d+\.\d+\.\d+) sgemm, ISA (\S+)$", text, re.M)
if not m:
    sys.exit("no 'kernels: oneDNN X.Y.Z sgemm, ISA NAME' line in:\n" + text)
isa = m.group(2)
flags = set()
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
    want = "avx512_core"
elif "avx2" in flags:
    want = "avx2"
else:
    want = ""
if not isa.startswith(want) or isa == "generic":
    sys.exit("this CPU has %s, but oneDNN runs its '%s' kernels" % (want or "no AVX2", isa))
print("ok   oneDNN %s runs its %s kernels (this CPU: %s)" % (m.group(1), isa, want or "SSE"))

# The fused attention kernel's path: AVX-512's transposed blocks where the
# CPU has AVX-512F (unless REWIRE_ATTENTION_TILES=1), else oneDNN's tiles.
a = re.search(r"^attention: (.*)$", text, re.M)
if not a:
    sys.exit("no 'attention:' line in:\n" + text)
lanes = "avx512f" in flags and os.environ.get("REWIRE_ATTENTION_TILES") != "1"
if ("AVX-512 vector lanes" in a.group(1)) != lanes:
    sys.exit("this CPU %s AVX-512F, but attention runs %s" % ("has" if lanes else "lacks or",
                                                               a.group(1)))
print("ok   attention: " + ("AVX-512 lanes" if lanes else "oneDNN tiles"))
