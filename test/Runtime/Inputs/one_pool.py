"""One OpenMP pool in a host that loaded another OpenMP runtime first
(runtime/Model.cpp, openArtifact). Hosts:
  none   nothing else loaded;
  gomp   GNU libgomp loaded into the global scope first (as PyPI's torch
         does; its oneDNN is its own): the runtime opens the artifact with
         RTLD_DEEPBIND, so oneDNN's GOMP_* calls must bind to the
         artifact's LLVM libomp;
  torch  Debian's PyTorch imported first (libgomp and Debian's libdnnl
         both loaded): oneDNN stays bound to libgomp, the artifact is
         opened as usual and its loops' threads sleep after each region.
All must give the bits of `none`, over two loads and runs of the model.

    one_pool.py run HOST ARTIFACT INPUT.npy OUT.npy  # (gomp: under LD_DEBUG=bindings)
    one_pool.py check LOG                            # what oneDNN bound to
"""
import ctypes
import os
import re
import sys

import numpy as np


def run(host, artifact, x, out):
    if host == "gomp":
        ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL)
    elif host == "torch":
        import torch  # noqa: F401
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
    import rewire_runtime
    ys = []
    for _ in range(2):  # load, run, free, and again: libomp stays usable
        m = rewire_runtime.Model(artifact)
        ys.append(m.run("forward", np.load(x))[0])
        del m
    if not np.array_equal(ys[0], ys[1]):
        raise SystemExit("FAIL: two loads differ")
    np.save(out, ys[0])
    print("ran")


def check(log):
    text = open(log, errors="replace").read()
    binds = re.findall(r"binding file \S*libdnnl\S* \[\d+\] to (\S+) \[\d+\]: normal symbol `GOMP_parallel'",
                       text)
    for to in sorted(set(binds)):
        print("oneDNN's GOMP_parallel -> %s" % os.path.basename(to))
    if not binds:
        print("oneDNN's GOMP_parallel: no binding seen")


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(*sys.argv[2:6])
    else:
        check(sys.argv[2])
