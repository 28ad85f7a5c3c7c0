"""Summarizes `rewire-run --profile` outputs (train_bench.py's PROFILE=N
files): per file, the steps, kernel and cuBLAS time (each step timed alone,
so the sum exceeds the graph replay's time by the overlap it loses), the
kernels under 10 us (launch-bound: what fusion would remove), and the
slowest steps with their traffic.

    profile_summary.py [--top N] profile-FORM.txt ...
"""
import re
import sys


def main():
    args = sys.argv[1:]
    top = 8
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    for path in args:
        steps = []
        for line in open(path):
            m = re.match(r"profile: (.+?)\s+([\d.]+) ms\s+([\d.]+) MB\s+([\d.]+) GB/s", line)
            if m:
                steps.append((m.group(1).strip(), float(m.group(2)), float(m.group(3)), float(m.group(4))))
        gemm = [s for s in steps if s[0].startswith("cublas")]
        kern = [s for s in steps if not s[0].startswith("cublas")]
        small = [s for s in kern if s[1] < 0.010]
        print("%s: %d steps; %d kernels %.3f ms (%d under 10 us: %.3f ms); %d cuBLAS calls %.3f ms" % (
            path, len(steps), len(kern), sum(s[1] for s in kern), len(small), sum(s[1] for s in small),
            len(gemm), sum(s[1] for s in gemm)))
        for what, ms, mb, gbs in sorted(steps, key=lambda s: -s[1])[:top]:
            print("  %-40s %8.4f ms %9.1f MB %8.1f GB/s" % (what, ms, mb, gbs))


if __name__ == "__main__":
    main()
