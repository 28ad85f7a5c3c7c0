"""Every residual-rewrite kind on every detected model: the IR verifies and
round-trips, and the parameters the form adds (from rewire-report's JSON)
match papers.md's formulas for that model's stream.

    rewrite_matrix.py MODEL.mlir [MODEL2.mlir ...]

Per update i with feature size d_i (per stream), C = 8, K blocks:
  rezero, skipinit: 1        layerscale: d_i          review: 2 d_i^2 + d_i
  highway: d_i^2 + d_i       nag: 1 + C d_i + 2C      lpa: 0
  ancre: k+1 per block k, denseformer: k+2 per block k, counted within
  each run of blocks of one shape (a ResNet stage), k restarting at 0.
  laurel rw: 2 (alpha, beta)  laurel rw-lr rank r: 2 + 2 r d_i (refused,
  with its message, for a model whose features are not last: a ResNet).
  laurel pa: i - s for the i-th update of a stream (gamma over its earlier
  states), s the first update of its run of one shape; rw-pa: 2 more each.
  laurel gemma3n: 2 r d_i + d_i per attention update, r = 16 (refused for
  post-LN streams and models without attention).
  n = 4 streams: hc (dynamic): 2 (n + 1 + d_i) + n^2 + 1 + n d_i;
  hc dynamic=false: 2 n + n^2; mhc: 2 (n + 1 + n^2 d_i) + n^2 + 1 + n^3 d_i
  (all three refused for post-LN streams, BERT, and NCHW ones, a ResNet).
  value-residual lambda=learned: 2 per attention layer after the first
  (refused for a model without attention: MLP-Mixer, ResNet).
"""
import json
import re
import subprocess
import sys

C = 8
KINDS = ["rezero", "skipinit", "layerscale", "review", "highway", "nag", "ancre", "denseformer", "lpa",
         "laurel laurel=rw", "laurel rank=4", "laurel laurel=pa", "laurel laurel=rw-pa",
         "laurel laurel=gemma3n", "hc", "hc dynamic=false", "mhc",
         "value-residual lambda=learned"]
LAUREL_RANK = 4
N = 4
REFUSED = {"laurel rank=4": ["needs a static feature axis last"],
           "hc": ["needs a static feature axis last", "not directly"]}
REFUSED["hc dynamic=false"] = REFUSED["mhc"] = REFUSED["hc"]
REFUSED["value-residual lambda=learned"] = ["no stream has two attention layers"]
REFUSED["laurel laurel=gemma3n"] = ["a post-LN model", "no residual update's branch is attention"]


def run(args, text=None, refused=()):
    r = subprocess.run(args, input=text, capture_output=True, text=True)
    for reason in refused:
        if r.returncode != 0 and reason in r.stderr:
            return reason
    if r.returncode != 0:
        raise SystemExit("FAIL %s: %s" % (" ".join(args[:3]), r.stderr.strip()[-500:]))
    return r.stdout


def updates(ir):
    """(d, type, ends_block, stream) per residual.add, in order."""
    out = []
    for m in re.finditer(r"residual\.add .*?(axis 1 )?stream (\d+) layer \d+ \{residual\.branch = \"(\w+)\".*?\} : tensor<([^>]*)>", ir):
        dims = [int(x) for x in m.group(4).split("x")[:-1]]
        d = dims[1] if m.group(1) else dims[-1]
        out.append((d, m.group(4), m.group(3) != "attention", m.group(2)))
    out[-1] = (out[-1][0], out[-1][1], True, out[-1][3])
    return out


def earlier_states(ups):
    """LAuReL-PA's gammas: per update, the earlier updates of its stream in
    its run of one shape."""
    total, seen = 0, {}  # stream -> (type, updates so far)
    for _, ty, _, stream in ups:
        prev_ty, k = seen.get(stream, (ty, 0))
        k = k if prev_ty == ty else 0
        total += k
        seen[stream] = (ty, k + 1)
    return total


def expected(kind, ups, attention=0):
    if kind in ("rezero", "skipinit"):
        return len(ups)
    if kind == "layerscale":
        return sum(d for d, _, _, _ in ups)
    if kind == "review":
        return sum(2 * d * d + d for d, _, _, _ in ups)
    if kind == "highway":
        return sum(d * d + d for d, _, _, _ in ups)
    if kind == "nag":
        return sum(1 + C * d + 2 * C for d, _, _, _ in ups)
    if kind == "lpa":
        return 0
    if kind == "laurel laurel=rw":
        return 2 * len(ups)
    if kind == "laurel laurel=pa":
        return earlier_states(ups)
    if kind == "laurel laurel=rw-pa":
        return 2 * len(ups) + earlier_states(ups)
    if kind == "laurel laurel=gemma3n":
        return sum(2 * 16 * d + d for d, _, end, _ in ups if not end)
    if kind.startswith("laurel"):
        return sum(2 + 2 * LAUREL_RANK * d for d, _, _, _ in ups)
    if kind == "hc":
        return sum(2 * (N + 1 + d) + N * N + 1 + N * d for d, _, _, _ in ups)
    if kind == "hc dynamic=false":
        return len(ups) * (2 * N + N * N)
    if kind.startswith("value-residual"):
        return 2 * (attention - 1)
    if kind == "mhc":
        return sum(2 * (N + 1 + N * N * d) + N * N + 1 + N ** 3 * d for d, _, _, _ in ups)
    total, k, shape = 0, 0, None
    for d, ty, end, _ in ups:
        if not end:
            continue
        if ty != shape:
            k, shape = 0, ty
        total += (k + 1) if kind == "ancre" else (k + 2)
        k += 1
    return total


def main():
    bad = 0
    for path in sys.argv[1:]:
        name = path.rsplit("/", 1)[-1]
        detected = run(["rewire-opt", path, "--pass-pipeline=builtin.module(func.func(residual-detect))"])
        ups = updates(detected)
        for kind in KINDS:
            nchw = "axis 1" in detected  # a feature axis that is not the last
            out = run(["rewire-opt", "--residual-rewrite=kind=" + kind], detected,
                      refused=REFUSED.get(kind, ()))
            if out in REFUSED.get(kind, ()):
                # Only where the model's stream is NCHW (features not last)
                # or post-LN (a norm between updates: BERT).
                postln = out in ("not directly", "a post-LN model") and "bert" in name
                no_attention = "attention" in out and "nn.softmax" not in detected
                ok = (nchw and "feature axis" in out) or postln or no_attention
                bad += not ok
                why = "no attention" if no_attention else "the features are not last" if nchw else "post-LN"
                print("%s %-12s %-12s refused: %s" % ("ok  " if ok else "FAIL", name, kind, why))
                continue
            if run(["rewire-opt"], out) != out:
                print("FAIL %s %s: does not round-trip" % (name, kind))
                bad += 1
                continue
            report = json.loads(run(["rewire-report", "/dev/stdin", "--format=json"], out))
            got, want = report["params_added"], expected(kind, ups, detected.count("nn.softmax"))
            ok = got == want
            bad += not ok
            print("%s %-12s %-12s params %8d (expected %d)" % ("ok  " if ok else "FAIL", name, kind, got, want))
    print("%d models x %d kinds, %d failed" % (len(sys.argv) - 1, len(KINDS), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
