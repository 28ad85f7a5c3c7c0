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
All must give the bits of `none`, over two loads and runs of the model and
two models open at once; `run` prints the pools each of those two describes
(Model.describe's `threads:` line).

In the `torch` host oneDNN sizes its teams by the calling thread's libgomp
setting, which the host owns (Debian's torch sets it on import, to 1 on some
machines). `teams` runs that host twice, the main thread's libgomp set to 1
and to the artifact's team size, and compares the threads each process has
after its runs: oneDNN must have started the same team (runtime/HostOpenMP.h,
HostTeam), and the host's setting must be back after the call.

    one_pool.py run HOST ARTIFACT INPUT.npy OUT.npy  # (gomp: under LD_DEBUG=bindings)
    one_pool.py check LOG                            # what oneDNN bound to
    one_pool.py teams ARTIFACT INPUT.npy             # oneDNN's team beside torch
"""
import ctypes
import os
import re
import subprocess
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
    # Two models open at once: the second shares the first one's pool.
    a, b = rewire_runtime.Model(artifact), rewire_runtime.Model(artifact)
    ys += [a.run("forward", np.load(x))[0], b.run("forward", np.load(x))[0]]
    if not all(np.array_equal(ys[0], y) for y in ys[1:]):
        raise SystemExit("FAIL: loads differ")
    for i, m in enumerate((a, b)):
        for line in m.describe().splitlines():
            if line.startswith("threads: "):
                # "threads: one OpenMP pool (LLVM libomp) ..." -> "one OpenMP pool"
                print("model %d: %s" % (i + 1, line.split(":")[1].split(" (")[0].strip()))
    np.save(out, ys[0])
    print("ran")


def team_size():
    """The artifact's (libomp's) team: OMP_NUM_THREADS, else the CPUs this
    process may run on."""
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0]
    return int(first) if first.strip() else len(os.sched_getaffinity(0))


def team_host(artifact, x, host_threads):
    """The torch host with its main thread's libgomp set to `host_threads`:
    prints the threads the process has after two runs, and fails where the
    setting is not the host's again after them."""
    import torch  # noqa: F401  (Debian's: libgomp and libdnnl)
    gomp = ctypes.CDLL("libgomp.so.1")
    gomp.omp_set_num_threads(host_threads)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
    import rewire_runtime
    m = rewire_runtime.Model(artifact)
    for _ in range(2):
        m.run("forward", np.load(x))
    if gomp.omp_get_max_threads() != host_threads:
        raise SystemExit("FAIL: the host's libgomp threads are %d after the call, it set %d"
                         % (gomp.omp_get_max_threads(), host_threads))
    print(len(os.listdir("/proc/self/task")))


def teams(artifact, x):
    n = team_size()
    counts = {}
    for host_threads in (1, n):
        out = subprocess.run([sys.executable, __file__, "team-host", artifact, x, str(host_threads)],
                             check=True, capture_output=True, text=True).stdout
        counts[host_threads] = int(out.split()[-1])
    if counts[1] != counts[n]:
        raise SystemExit("FAIL: %d threads with the host's libgomp at 1, %d at %d: oneDNN's team "
                         "followed the host's setting" % (counts[1], counts[n], n))
    print("oneDNN's team: the artifact's %d threads, whatever the host set" % n)


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
    elif sys.argv[1] == "teams":
        teams(*sys.argv[2:4])
    elif sys.argv[1] == "team-host":
        team_host(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        check(sys.argv[2])
