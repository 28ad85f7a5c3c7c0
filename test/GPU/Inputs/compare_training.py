"""Compares two training runs: loss curves and trained parameters.

compare_training.py REF.csv GOT.csv REF.safetensors GOT.safetensors [--rtol R]
                    [--atol A] [--same GOT2.safetensors] [--exclude NAME:START:END ...]

Losses: max |got - ref| / |ref| over the steps <= RTOL (default 1e-5);
parameters: max |got - ref| <= RTOL * 10 * max |ref| + ATOL per tensor
(ATOL default 0: a tensor that starts at zero and barely moves, its
gradient zero in exact arithmetic, needs one), except the
flat element ranges given by --exclude (values whose gradient is zero in
exact arithmetic: AdamW turns their rounding noise into full-size steps, so
two correct runs differ there). With --same, GOT2 must equal GOT bit for bit
(an exact resume).
"""
import json
import struct
import sys

import numpy as np

def _finite(v):
    """A NaN error counts as infinitely wrong (max() would skip it)."""
    return v if v == v else float("inf")


def safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[base + a:base + b], dtype=np.float32).reshape(t["shape"])
    return out


def losses(path):
    return np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)[:, 1]


def main():
    args = sys.argv[1:]
    rtol = 1e-5
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i:i + 2]
    atol = 0.0
    if "--atol" in args:
        i = args.index("--atol")
        atol = float(args[i + 1])
        del args[i:i + 2]
    same = None
    if "--same" in args:
        i = args.index("--same")
        same = args[i + 1]
        del args[i:i + 2]
    exclude = {}
    while "--exclude" in args:
        i = args.index("--exclude")
        name, start, end = args[i + 1].rsplit(":", 2)
        exclude.setdefault(name, []).append((int(start), int(end)))
        del args[i:i + 2]
    ref_csv, got_csv, ref_st, got_st = args
    ref, got = losses(ref_csv), losses(got_csv)
    ok = len(ref) == len(got)
    d = float(np.max(np.abs(ref - got) / np.abs(ref))) if ok else float("inf")
    ok &= d <= rtol
    print("steps %d  loss max rel diff %.2e  %s" % (len(got), d, "ok" if d <= rtol else "FAIL"))
    a, b = safetensors(ref_st), safetensors(got_st)
    worst = 0.0
    if set(a) != set(b):
        print("parameter names differ: FAIL")
        ok = False
    else:
        for name in a:
            keep = np.ones(a[name].size, dtype=bool)
            for start, end in exclude.get(name, []):
                keep[start:end] = False
            keep = keep.reshape(a[name].shape)
            x, y = a[name][keep], b[name][keep]
            # The error in units of the tolerance: <= 1 passes.
            allowed = rtol * 10 * (float(np.max(np.abs(x))) or 1.0) + atol
            worst = max(worst, _finite(float(np.max(np.abs(x - y))) / allowed))
        good = worst <= 1.0
        ok &= good
        # Reported as a relative difference (the tolerance's rtol part).
        print("parameters %d  max rel diff %.2e  %s" % (len(a), worst * rtol * 10, "ok" if good else "FAIL"))
    if same:
        c = safetensors(same)
        exact = set(c) == set(b) and all(np.array_equal(b[k], c[k]) for k in b)
        ok &= exact
        print("resumed run identical: %s" % ("ok" if exact else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
