"""Writes damaged copies of a CUDA artifact: corrupt.py IN OUTDIR.

truncated.rwcu   cut inside the blob
badjson.rwcu     metadata that is not JSON
badelf.rwcu      the cubin's ELF machine changed from CUDA (190) to x86-64
extent.rwcu      a launch that claims more bytes than its buffer holds
kernel.rwcu      a launch of a kernel index that does not exist
"""
import json
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
magic, version, _, msize, boff, bsize = struct.unpack("<8sIIQQQ", data[:40])
meta = json.loads(data[40:40 + msize])
blob = data[boff:boff + bsize]


def write(name, meta_obj, blob_bytes, raw_meta=None):
    m = raw_meta if raw_meta is not None else json.dumps(meta_obj).encode()
    offset = (40 + len(m) + 255) // 256 * 256
    header = struct.pack("<8sIIQQQ", magic, version, 0, len(m), offset, len(blob_bytes))
    with open(f"{out}/{name}", "wb") as f:
        f.write(header + m + b"\0" * (offset - 40 - len(m)) + blob_bytes)


open(f"{out}/truncated.rwcu", "wb").write(data[:boff + bsize // 2])
write("badjson.rwcu", None, blob, raw_meta=b'{"format": "rewire-cuda", ')
cubin = next(i for i in meta["images"] if i["format"] == "cubin")
b = bytearray(blob)
b[cubin["offset"] + 18:cubin["offset"] + 20] = struct.pack("<H", 62)
write("badelf.rwcu", meta, bytes(b))
m = json.loads(json.dumps(meta))
step = next(s for s in m["functions"][0]["steps"] if s["op"] == "launch")
step["extents"][0] = 1 << 40
write("extent.rwcu", m, blob)
m = json.loads(json.dumps(meta))
step = next(s for s in m["functions"][0]["steps"] if s["op"] == "launch")
step["kernel"] = len(m["kernels"])
write("kernel.rwcu", m, blob)
