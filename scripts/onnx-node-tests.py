"""Writes the ONNX backend node tests of the installed `onnx` package (the
PyPI wheel ships their generators, onnx/backend/test/case/node, not the
data) in libonnx-testdata's layout: DIR/test_*/model.onnx and
test_data_set_*/{input,output}_*.pb. scripts/conformance.py --data DIR
then runs them.

    build/onnx-venv/bin/python scripts/onnx-node-tests.py DIR
(scripts/conformance.py --onnx-wheel makes the venv and the data itself.)
"""
import os
import shutil
import sys

from onnx import TensorProto, numpy_helper
import onnx.backend.test.case.node as node_test


def main():
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    written = 0
    for case in node_test.collect_testcases(None):
        d = os.path.join(out, case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(ds)
            for kind, values, infos in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, v in enumerate(values):
                    info = infos[j]
                    if not info.type.HasField("tensor_type"):
                        continue  # sequences, maps, optionals: Rewire refuses these models anyway
                    t = v if isinstance(v, TensorProto) else numpy_helper.from_array(v, info.name)
                    with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                        f.write(t.SerializeToString())
        written += 1
    print("wrote %d node tests to %s" % (written, out))


if __name__ == "__main__":
    main()
