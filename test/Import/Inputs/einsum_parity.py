"""Einsum equations beyond ONNX's five node tests, each compiled by
rewire-compile and run on random inputs against numpy.einsum (float32;
|got - want| <= 1e-5 + 1e-5 |want|).

    einsum_parity.py WORKDIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "utils"))
from onnx_graph import save  # noqa: E402
from parity import check  # noqa: E402

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("bij->", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 2)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 5)]),
    ("ijk,ikl->ijl", [(2, 3, 4), (2, 4, 5)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("bij,jk", [(2, 3, 4), (4, 5)]),
    ("iij->j", [(3, 3, 2)]),
]


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    failed = 0
    for n, (eq, shapes) in enumerate(CASES):
        xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        want = np.einsum(eq, *xs)
        names = ["x%d" % i for i in range(len(xs))]
        path = save(os.path.join(work, "e%d.onnx" % n),
                    [helper.make_node("Einsum", names, ["y"], equation=eq)],
                    [helper.make_tensor_value_info(nm, TensorProto.FLOAT, list(s))
                     for nm, s in zip(names, shapes)],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(want.shape))])
        failed += not check(eq, path, dict(zip(names, xs)), [want], rtol=1e-5, atol=1e-5)
    print("%d cases, %d failed" % (len(CASES), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
