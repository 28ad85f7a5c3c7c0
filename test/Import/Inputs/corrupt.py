"""Hostile variants of a valid ONNX file for the importer's negative tests.

    corrupt.py truncate IN OUT BYTES      keep the first BYTES bytes
    corrupt.py nest OUT DEPTH             a model whose input type nests DEPTH deep
    corrupt.py sweep IN N TOOL [ARGS...]  N deterministic mutants (truncations,
                                          bit flips, byte splices) of IN, each run
                                          through TOOL; prints a summary and fails
                                          if any run crashed (signal) or returned
                                          an undocumented exit code
"""
import os
import random
import subprocess
import sys
import tempfile


def mutants(data, n, seed=1234):
    rng = random.Random(seed)
    for i in range(n):
        b = bytearray(data)
        kind = i % 4
        if kind == 0:  # truncation
            b = b[: rng.randrange(0, len(b))]
        elif kind == 1:  # bit flips
            for _ in range(rng.randrange(1, 8)):
                p = rng.randrange(len(b))
                b[p] ^= 1 << rng.randrange(8)
        elif kind == 2:  # random bytes spliced in
            p = rng.randrange(len(b))
            b[p:p] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        else:  # varint-sized fields blown up
            p = rng.randrange(len(b))
            b[p:p + 1] = b"\xff\xff\xff\xff\x0f"
        yield bytes(b)


def main():
    mode = sys.argv[1]
    if mode == "truncate":
        data = open(sys.argv[2], "rb").read()
        open(sys.argv[3], "wb").write(data[: int(sys.argv[4])])
    elif mode == "nest":
        import onnx
        from onnx import helper as h
        depth = int(sys.argv[3])
        t = onnx.TypeProto()
        t.tensor_type.elem_type = onnx.TensorProto.FLOAT
        for _ in range(depth):
            outer = onnx.TypeProto()
            outer.sequence_type.elem_type.CopyFrom(t)
            t = outer
        x = onnx.ValueInfoProto(name="x", type=t)
        g = h.make_graph([h.make_node("Identity", ["x"], ["y"])], "deep", [x], [x])
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
        # serialize without the python-side recursion checks
        open(sys.argv[2], "wb").write(m.SerializeToString())
    elif mode == "sweep":
        data = open(sys.argv[2], "rb").read()
        n = int(sys.argv[3])
        tool = sys.argv[4:]
        codes = {}
        crashes = []
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mutant.onnx")
            for i, m in enumerate(mutants(data, n)):
                open(path, "wb").write(m)
                r = subprocess.run(tool + [path, "-o", os.devnull, "--params",
                                           os.path.join(d, "p.safetensors")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                   errors="replace")
                codes[r.returncode] = codes.get(r.returncode, 0) + 1
                if r.returncode < 0 or r.returncode not in (0, 2, 3):
                    crashes.append((i, r.returncode, r.stderr[-500:]))
                elif r.returncode != 0 and len(r.stderr.strip().splitlines()) < 1:
                    crashes.append((i, r.returncode, "no error message"))
        print("%d mutants, exit codes %s, %d crashes" % (n, dict(sorted(codes.items())), len(crashes)))
        for c in crashes[:5]:
            print("mutant %d: exit %d: %s" % c)
        sys.exit(1 if crashes else 0)


if __name__ == "__main__":
    main()
