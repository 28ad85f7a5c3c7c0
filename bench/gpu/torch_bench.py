"""PyTorch side of the device check: device-to-device copy bandwidth and the
same residual equations as bench_ops.py, eager and torch.compile'd.

Prints `torch NAME eager MS compiled MS bytes N` lines and `copy GBPS`.
Times are CUDA-event means of 20 runs after 3 warm-ups (compiled: after
compilation). Bytes are inputs read + output written, as rewire-run counts.
"""
import sys

import torch

ROWS, D = 32768, 4096


def timed(fn, *args, iters=20):
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn(*args)
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / iters


def rms(x, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def nag_add(R, f, a, m):
    # residual.nag_add as lowered: f centred and made orthogonal to R (per
    # row), normalized to sqrt(D), scaled by a * m.
    r = R / torch.sqrt(R.pow(2).mean(-1, keepdim=True))
    fc = f - f.mean(-1, keepdim=True)
    p = fc - (fc * r).mean(-1, keepdim=True) * r
    n = torch.clamp(torch.sqrt(p.pow(2).sum(-1, keepdim=True)), min=1e-6)
    return R + a * m * p * (D ** 0.5) / n


EQUATIONS = {
    "add": (lambda h, u: h + u, ["T", "T"]),
    "scale_add": (lambda h, u, a: h + a * u, ["T", "T", "V"]),
    "mix3": (lambda y, h0, h1, c: y + torch.softmax(c / 0.5, 0)[0] * h0
             + torch.softmax(c / 0.5, 0)[1] * h1, ["T", "T", "T", "C"]),
    "nag_add": (nag_add, ["T", "T", "S", "R"]),
    "layer_norm": (lambda x, g, b: torch.nn.functional.layer_norm(x, (D,), g, b), ["T", "V", "V"]),
    "rms_norm": (lambda x, g: rms(x) * g, ["T", "V"]),
    "softmax": (lambda x: torch.softmax(x, -1), ["T"]),
}


def make(kind):
    shape = {"T": (ROWS, D), "V": (D,), "C": (2,), "S": (), "R": (ROWS, 1)}[kind]
    return torch.randn(shape, device="cuda", dtype=torch.float32)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    src = torch.randn(ROWS * D * 2, device="cuda")  # 1 GiB
    dst = torch.empty_like(src)
    ms = timed(lambda: dst.copy_(src))
    print("copy %.1f" % (2 * src.numel() * 4 / (ms * 1e6)))
    names = sys.argv[1:] or list(EQUATIONS)
    for name in names:
        fn, kinds = EQUATIONS[name]
        args = [make(k) for k in kinds]
        nbytes = sum(a.numel() * 4 for a in args) + ROWS * D * 4
        eager = timed(fn, *args)
        try:
            compiled_fn = torch.compile(fn)
            compiled = timed(compiled_fn, *args)
        except Exception as e:  # report, do not hide
            print("torch %s compile failed: %s" % (name, str(e).splitlines()[0]), file=sys.stderr)
            compiled = float("nan")
        print("torch %s eager %.4f compiled %.4f bytes %d" % (name, eager, compiled, nbytes))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
