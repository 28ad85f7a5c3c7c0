"""docs/python.md's walk-through as one script: load a model, look at its
residual stream, rewrite it (Review, identity-initialized), train it from
Python, plot the loss, check it against ONNX Runtime, export it.

    build/venv/bin/python examples/python/walkthrough.py [--model M.onnx] [--out DIR]

Defaults: the bundled tiny GPT (examples/tiny-gpt), output in ./walkthrough.
"""
import argparse
import os

import numpy as np

import rewire

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(HERE, "..", "tiny-gpt", "tiny-gpt.onnx"))
    ap.add_argument("--out", default="walkthrough")
    ap.add_argument("--steps", type=int, default=60)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    # 1. Load: an ONNX file (or its bytes, or Rewire IR).
    model = rewire.load(a.model)
    report = model.report()
    updates = report["streams"][0]["updates"]
    print("%d residual updates: %s" % (len(updates), ", ".join(u["branch"] for u in updates)))

    # 2. Rewrite: every residual add becomes a Review gate, starting as the
    #    identity (the rewritten model computes what the original did).
    review = model.rewrite("review", init="identity")
    print("added %d parameters" % review.report()["params_added"])

    # 3. Train from Python: a patterned token stream, next-token targets.
    session = rewire.compile(review)
    batch, seq = session.get_inputs()[0]["shape"]
    rng = np.random.default_rng(0)
    stream = np.concatenate([np.arange(s, s + 6) % 64 for s in rng.integers(0, 64, 4000)])
    trainer = rewire.Trainer(review, loss="cross_entropy", optimizer="adamw", lr=3e-3,
                             steps=a.steps, schedule="cosine", warmup=5)
    losses = []
    for step in range(a.steps):
        start = rng.integers(0, len(stream) - seq - 1, batch)
        x = np.stack([stream[s:s + seq] for s in start]).astype(np.int64)
        y = np.stack([stream[s + 1:s + seq + 1] for s in start]).astype(np.int64)
        losses.append(trainer.step(x, y))
    print("loss %.3f -> %.3f" % (losses[0], losses[-1]))

    # 4. Plot (matplotlib, if there).
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.figure(figsize=(5, 3))
        plt.plot(losses)
        plt.xlabel("step")
        plt.ylabel("loss")
        plt.tight_layout()
        plt.savefig(os.path.join(a.out, "loss.png"))
        print("wrote", os.path.join(a.out, "loss.png"))
    except ImportError:
        pass

    # 5. Export the trained, rewritten model as standard ONNX, and check it.
    params = os.path.join(a.out, "trained.safetensors")
    trainer.save(params)
    onnx_path = os.path.join(a.out, "review.onnx")
    review.export(onnx_path, params=params)
    (ours,) = rewire.compile(review, params=params).run(None, {"input": x})
    try:
        import onnxruntime as ort
        (theirs,) = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, {"input": x})
        print("ONNX Runtime vs Rewire: max |diff| %.2e" % np.abs(ours - theirs).max())
    except ImportError:
        pass
    print("wrote", onnx_path)


if __name__ == "__main__":
    main()
