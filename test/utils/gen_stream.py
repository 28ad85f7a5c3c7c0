"""Prints a function with one residual stream of N residual.add updates.

Used by lit tests that need deep streams (e.g. LayerScale's depth rule):
    python3 gen_stream.py --layers 20 --d 8 | rewire-opt ...
"""
import argparse

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, required=True)
p.add_argument("--d", type=int, default=8)
a = p.parse_args()
t = "tensor<2x%dxf32>" % a.d
print("func.func @stream(%%h: %s, %%u: %s) -> %s {" % (t, t, t))
prev = "%h"
for i in range(a.layers):
    print("  %%s%d = residual.add %s, %%u stream 0 layer %d : %s" % (i, prev, i, t))
    prev = "%%s%d" % i
print("  return %s : %s" % (prev, t))
print("}")
