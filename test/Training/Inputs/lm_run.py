"""Trains the bundled tiny GPT on a generated patterned token stream with
rewire-train (cross-entropy, AdamW, validation, JSONL, checkpoints) and
checks what a user would: the loss falls, the validation loss is logged and
falls, the JSONL rows parse, the checkpoint pair exists, and the --plot PNG
decodes to an 800x480 image holding the training curve's and the
validation points' colours.

    lm_run.py WORKDIR MODEL.onnx
"""
import json
import os
import struct
import subprocess
import sys
import zlib

import numpy as np


def png_pixels(path):
    """(width, height, set of RGB colours) of an 8-bit RGB PNG, filter 0."""
    with open(path, "rb") as f:
        blob = f.read()
    assert blob[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, size = 8, b"", None
    while pos < len(blob):
        (n,) = struct.unpack(">I", blob[pos:pos + 4])
        kind, data = blob[pos + 4:pos + 8], blob[pos + 8:pos + 8 + n]
        assert zlib.crc32(kind + data) == struct.unpack(">I", blob[pos + 8 + n:pos + 12 + n])[0]
        if kind == b"IHDR":
            size = struct.unpack(">II", data[:8])
        elif kind == b"IDAT":
            idat += data
        pos += 12 + n
    w, h = size
    raw = zlib.decompress(idat)
    colours = set()
    for y in range(h):
        row = raw[y * (3 * w + 1) + 1:(y + 1) * (3 * w + 1)]
        colours.update(row[i:i + 3] for i in range(0, len(row), 3))
    return w, h, colours


def main():
    work, model = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    seq = []
    for _ in range(3000):
        s = int(rng.integers(0, 8))
        seq += [s, (3 * s + 8) % 64, (5 * s + 17) % 64, 63]
    tokens = np.array(seq, dtype=np.uint16)
    tokens[:10000].tofile(os.path.join(work, "train.bin"))
    tokens[10000:].tofile(os.path.join(work, "val.bin"))
    jsonl = os.path.join(work, "m.jsonl")
    ck = os.path.join(work, "ckpt")
    r = subprocess.run(["rewire-train", model, "--data=" + os.path.join(work, "train.bin"),
                        "--val-data=" + os.path.join(work, "val.bin"), "--eval-every=20",
                        "--steps=60", "--optimizer=adamw", "--lr=3e-3", "--warmup=5",
                        "--schedule=cosine", "--jsonl=" + jsonl, "--checkpoint=" + ck,
                        "--checkpoint-every=20", "--log-every=20", "--shuffle", "--seed=3",
                        "--plot=" + os.path.join(work, "loss.png")],
                       capture_output=True, text=True)
    print(r.stderr.strip())
    if r.returncode != 0:
        sys.exit("FAIL rewire-train exit %d" % r.returncode)
    rows = [json.loads(line) for line in open(jsonl)]
    train = [row["loss"] for row in rows if "loss" in row]
    val = [row["val_loss"] for row in rows if "val_loss" in row]
    print("train loss %.3f -> %.3f; validation %s" % (train[0], np.mean(train[-10:]),
                                                      " ".join("%.3f" % v for v in val)))
    ok = len(train) == 60 and np.mean(train[-10:]) < 0.5 * train[0] and len(val) == 3 and val[-1] < val[0]
    ok &= sorted(os.listdir(ck)) == ["model-60.safetensors", "state.json"]
    w, h, colours = png_pixels(os.path.join(work, "loss.png"))
    plot_ok = (w, h) == (800, 480) and bytes.fromhex("0072B2") in colours and bytes.fromhex("D55E00") in colours
    print("plot %dx%d, %d colours, training and validation colours %s" % (
        w, h, len(colours), "present" if plot_ok else "MISSING"))
    ok &= plot_ok
    print("ok" if ok else "FAIL", "tiny GPT trains: loss falls, validation falls, checkpoint pair, plot")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
