"""Writes random values (fixed seed, scale 0.2, never zeros) for every
`#ml_program.extern` parameter of an MLIR file into a safetensors file, so an
IR-only model (like examples/tiny-gpt/model.mlir) can be exported and run.

    random_weights.py model.mlir out.safetensors [--seed N]
"""
import json
import re
import struct
import sys

import numpy as np

src, out = sys.argv[1], sys.argv[2]
seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
rng = np.random.default_rng(seed)
text = open(src).read()
params = re.findall(r'ml_program\.global private @"?([^"(]+)"?\((?:#ml_program\.extern[^)]*|#extern\d*)\) : tensor<([^>]*)>', text)
header, blobs, offset = {}, [], 0
for name, ty in params:
    shape = [int(d) for d in ty.split("x")[:-1]]
    data = (0.2 * rng.standard_normal(shape)).astype(np.float32)
    if name.endswith("weight") and len(shape) == 1:  # norm gains near 1
        data = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    raw = data.tobytes()
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(raw)]}
    blobs.append(raw)
    offset += len(raw)
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
print("%d parameters" % len(params))
