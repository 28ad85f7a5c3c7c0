#!/usr/bin/env python3
"""Where a train step's time goes, per OpenMP parallel region.

Runs `rewire-train` on compiled artifacts with the OMPT tool of
ompt_regions.c (built here with LLVM 22's clang) and prints, per artifact,
each parallel region's calls and wall time a step, named by the outlined
function of its call site (`train_step..omp_par.N`, `rewire_attention...`)
or by its library (oneDNN's GEMMs), then totals: oneDNN's regions, the
others, the threads' barrier waits, and the time outside any region (the
mean step less the regions' wall time a step). Give two artifacts to see
what one adds to the other (a residual form over the plain model).

    regions.py DIR plain,mhc --data tokens.bin [--steps 12] [--top 25] [--sequence]

With --sequence it prints instead one step's regions in the order they
ran: for each, the median over the steps (the first two left out) of the
gap before it (the calling thread's serial work between regions) and of
its wall time, then the median step span and the gaps' sum.

DIR holds NAME.rwx (and its parameters) for each name; the data is what
`rewire-train --data` reads. Not part of the tests: a measuring aid
(docs/performance.md, "Where mHC's overhead is now").
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def build_tool(tmp):
    clang = "/usr/lib/llvm-22/bin/clang"
    so = os.path.join(tmp, "ompt_regions.so")
    subprocess.run([clang, "-O2", "-shared", "-fPIC", "-I/usr/lib/llvm-22/lib/clang/22/include",
                    os.path.join(HERE, "ompt_regions.c"), "-o", so], check=True)
    return so


def call_sites(rwx):
    """microtask offset -> outlined function, from the artifact's disassembly."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", rwx], capture_output=True,
                          text=True, check=True).stdout
    sites, lea = {}, None
    for line in text.split("\n"):
        if re.match(r"^[0-9a-f]+ <.*>:", line):
            lea = None
            continue
        m = re.match(r"\s*[0-9a-f]+:\s+lea\s+0x[0-9a-f]+\(%rip\),%rdx\s+# ([0-9a-f]+) <(.*)>", line)
        if m:
            lea = (int(m.group(1), 16), m.group(2))
            continue
        m = re.match(r"\s*([0-9a-f]+):\s+call\s+[0-9a-f]+ <__kmpc_fork_call", line)
        if m and lea:
            sites[lea[0] - (int(m.group(1), 16) + 5)] = lea[1]
            lea = None
    return sites


def sequence(name, keys, trace_path, steps):
    """One step's regions in order: median gap before and wall time of each."""
    runs = [line.split() for line in open(trace_path)]
    per = len(runs) // steps
    if per == 0 or len(runs) != per * steps:
        sys.exit("regions.py: %d region runs over %d steps of %s differ from step to step"
                 % (len(runs), steps, name))
    kept = [runs[k * per:(k + 1) * per] for k in range(min(2, steps - 1), steps)]
    span = statistics.median(float(st[-1][2]) - float(st[0][1]) for st in kept)
    print("== %s: %d regions a step, median step span %.2f ms" % (name, per, span * 1e3))
    gaps = 0.0
    for i in range(per):
        wall = statistics.median(float(st[i][2]) - float(st[i][1]) for st in kept)
        gap = statistics.median(float(st[i][1]) - float(st[i - 1][2]) for st in kept) if i else 0
        gaps += gap
        print("  %4d gap %6.0f us  wall %7.0f us  %s" % (i, gap * 1e6, wall * 1e6,
                                                        keys[int(kept[0][i][0])]))
    print("  gaps (serial work between regions): %.2f ms a step" % (gaps * 1e3))


def measure(args, tool, tmp, name):
    rwx = os.path.join(args.dir, name + ".rwx")
    out, log = os.path.join(tmp, name + ".regions"), os.path.join(tmp, name + ".jsonl")
    runs = os.path.join(tmp, name + ".runs")
    env = dict(os.environ, OMP_TOOL_LIBRARIES=tool, OMPT_REGIONS_OUT=out)
    if args.sequence:
        env["OMPT_TRACE_OUT"] = runs
    subprocess.run([args.trainer, rwx, "--data=" + args.data, "--optimizer=adamw", "--lr=1e-3",
                    "--steps=%d" % args.steps, "--log-every=0", "--jsonl=" + log],
                   check=True, capture_output=True, env=env)
    with open(log) as f:
        steps = [json.loads(l)["step_ms"] for l in f if "step_ms" in l]
    names = call_sites(rwx)
    regions = collections.OrderedDict()
    waits = 0.0
    keys = []
    for line in open(out):
        callsite, microtask, library, count, wall, w0, w1 = line.split()
        if "dnnl" in library:
            key = "oneDNN"
        else:
            key = names.get(int(microtask), "%s call site %s" % (library, callsite))
        keys.append(key)
        c, w = regions.get(key, (0, 0.0))
        regions[key] = (c + int(count), w + float(wall))
        waits += float(w0) + float(w1)
    if args.sequence:
        sequence(name, keys, runs, args.steps)
        return
    n = args.steps
    step_ms = sum(steps) / len(steps)
    total = sum(w for _, w in regions.values()) * 1e3 / n
    gemm = regions.get("oneDNN", (0, 0.0))[1] * 1e3 / n
    print("== %s: mean step %.1f ms; regions %d; oneDNN %.1f ms, other regions %.1f ms, "
          "barrier waits %.1f ms, outside regions %.1f ms (a step)" % (
              name, step_ms, len(regions), gemm, total - gemm, waits * 1e3 / n,
              step_ms - total))
    for key, (c, w) in sorted(regions.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print("  %-48s %5.1f calls %8.3f ms" % (key[:48], c / n, w * 1e3 / n))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("names")
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--sequence", action="store_true",
                    help="one step's regions in the order they ran (median gap and wall time)")
    ap.add_argument("--trainer", default=os.path.join(ROOT, "build", "bin", "rewire-train"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rewire-regions-") as tmp:
        tool = build_tool(tmp)
        for name in args.names.split(","):
            if not os.path.isfile(os.path.join(args.dir, name + ".rwx")):
                sys.exit("regions.py: no artifact %s.rwx in %s" % (name, args.dir))
            measure(args, tool, tmp, name)


if __name__ == "__main__":
    main()
