"""Detects at test time whether CUDA programs can run on this machine.

Used by lit.cfg.py to set the `cuda-gpu` feature (tests that execute on a GPU
say `REQUIRES: cuda-gpu`). Loads the driver library the way the runtime will
(`libcuda.so.1`, dlopen'd), calls cuInit and counts devices, so the answer is
the same one the runtime would get. Run directly, it prints the result:

    python3 cuda_detect.py   ->   cuda-gpu: no (libcuda.so.1 not found: ...)
"""
import ctypes
import sys


class Result:
    def __init__(self, available, reason):
        self.available = available
        self.reason = reason

    def describe(self):
        return ("yes" if self.available else "no") + " (" + self.reason + ")"


def detect(library="libcuda.so.1"):
    try:
        cuda = ctypes.CDLL(library)
    except OSError as e:
        return Result(False, "%s not found: %s" % (library, e))
    try:
        status = cuda.cuInit(0)
        if status != 0:
            return Result(False, "cuInit failed with CUresult %d" % status)
        count = ctypes.c_int(0)
        status = cuda.cuDeviceGetCount(ctypes.byref(count))
        if status != 0:
            return Result(False, "cuDeviceGetCount failed with CUresult %d" % status)
    except AttributeError as e:
        return Result(False, "%s lacks a driver entry point: %s" % (library, e))
    if count.value < 1:
        return Result(False, "the driver reports no device")
    return Result(True, "%d device(s)" % count.value)


if __name__ == "__main__":
    lib = sys.argv[1] if len(sys.argv) > 1 else "libcuda.so.1"
    print("cuda-gpu: " + detect(lib).describe())
