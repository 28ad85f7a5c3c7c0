"""A run under OMP_PROC_BIND=spread OMP_PLACES=threads (one place a hardware
thread, so SMT siblings count apart; OMP_DISPLAY_AFFINITY=true, 2 threads)
must bind its two OpenMP threads to disjoint CPU sets, as libomp does for
any program: loading an artifact loads oneDNN and GNU libgomp, whose
constructor binds the loading thread to one CPU, and libomp, starting
later on that thread, then put the whole team on that CPU
(runtime/Model.cpp, KeepAffinity).

    proc_bind.py cli ARTIFACT INPUT.npy      # rewire-run
    proc_bind.py python ARTIFACT INPUT.npy   # the Python runtime module
    proc_bind.py parse LOG                   # what a run's affinity lines say
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "..", "python")


def cpus(text):
    """The CPUs of libomp's proc set text: '0', '0,1', '0-3,6'."""
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def verdict(log):
    """Each thread's CPUs from libomp's affinity lines; 'bound apart' when
    threads 0 and 1 are bound to disjoint sets."""
    threads = {}
    for m in re.finditer(r"thread (\d+) bound to OS proc set \{([0-9,\- ]+)\}", log):
        threads.setdefault(int(m.group(1)), cpus(m.group(2).replace(" ", "")))
    if 0 not in threads or 1 not in threads:
        return "FAIL: no affinity lines for threads 0 and 1 in:\n" + log[-2000:]
    a, b = threads[0], threads[1]
    if not (a & b) and a and b:
        return "bound apart"
    return "FAIL: thread 0 on %s, thread 1 on %s" % (sorted(a), sorted(b))


def main():
    mode = sys.argv[1]
    if mode == "parse":
        print(verdict(open(sys.argv[2]).read()))
        return
    artifact, x = sys.argv[2], sys.argv[3]
    env = dict(os.environ, OMP_PROC_BIND="spread", OMP_PLACES="threads",
               OMP_DISPLAY_AFFINITY="true", OMP_NUM_THREADS="2")
    if mode == "cli":
        cmd = ["rewire-run", artifact, "--input=@" + x, "--print-max-elements=0"]
    else:
        code = ("import sys, numpy as np; sys.path.insert(0, %r); import rewire_runtime; "
                "m = rewire_runtime.Model(%r); m.run('forward', np.load(%r)); print('ran')"
                % (PYTHON_DIR, artifact, x))
        cmd = [sys.executable, "-c", code]
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print("FAIL: exit code %d:\n%s" % (r.returncode, r.stdout[-2000:]))
        sys.exit(1)
    print(verdict(r.stdout))


if __name__ == "__main__":
    main()
