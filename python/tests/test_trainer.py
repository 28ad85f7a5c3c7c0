"""rewire.Trainer: rewire-train's trainer library fed from Python. The same
batches give rewire-train's losses bit for bit (one loop, not two); gradient
accumulation, checkpoint and resume, the trained weights in ONNX Runtime."""
import os
import subprocess

import numpy as np
import onnxruntime as ort
import pytest

import rewire

BIN = os.environ.get("REWIRE_BIN", "")


def batches(seed=0, n=8, t=8, vocab=64):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, vocab, (n, t)).astype(np.int64),
            rng.integers(0, vocab, (n, t)).astype(np.int64))


def cli_losses(tmp_path, model, x, y, steps, extra=()):
    np.save(str(tmp_path / "x.npy"), x)
    np.save(str(tmp_path / "y.npy"), y)
    metrics = str(tmp_path / "m.csv")
    subprocess.run([os.path.join(BIN, "rewire-train"), model, "--inputs", str(tmp_path / "x.npy"),
                    "--targets", str(tmp_path / "y.npy"), "--loss", "cross_entropy",
                    "--optimizer", "adamw", "--lr", "3e-3", "--steps", str(steps),
                    "--metrics", metrics, "--log-every", "0"] + list(extra), check=True,
                   env=dict(os.environ))  # the session's compile cache (conftest.py)
    with open(metrics) as f:
        return [float(r.split(",")[1]) for r in f.read().split("\n")[1:] if r]


def test_same_losses_as_rewire_train(tiny_gpt, tmp_path):
    x, y = batches()
    trainer = rewire.Trainer(rewire.load(tiny_gpt), loss="cross_entropy", lr=3e-3, steps=6)
    assert trainer.batch == 2
    got = [trainer.step(x[2 * (k % 4):2 * (k % 4) + 2], y[2 * (k % 4):2 * (k % 4) + 2]) for k in range(6)]
    want = cli_losses(tmp_path, tiny_gpt, x, y, 6)
    assert [np.float32(v) for v in got] == [np.float32(v) for v in want]
    assert trainer.step_count == 6
    with pytest.raises(rewire.Error, match="steps are done"):
        trainer.step(x[:2], y[:2])


def test_grad_accum_matches_rewire_train(tiny_gpt, tmp_path):
    x, y = batches()
    trainer = rewire.Trainer(rewire.load(tiny_gpt), loss="cross_entropy", lr=3e-3, steps=4, grad_accum=2)
    assert trainer.batch == 4
    got = [trainer.step(x[4 * (k % 2):4 * (k % 2) + 4], y[4 * (k % 2):4 * (k % 2) + 4]) for k in range(4)]
    want = cli_losses(tmp_path, tiny_gpt, x, y, 4, ["--grad-accum", "2"])
    assert [np.float32(v) for v in got] == [np.float32(v) for v in want]


def test_checkpoint_resume_is_exact(tiny_gpt, tmp_path):
    x, y = batches(1)
    model = rewire.load(tiny_gpt)
    opts = dict(loss="cross_entropy", lr=3e-3, steps=6, optimizer="adamw")
    straight = rewire.Trainer(model, **opts)
    want = [straight.step(x[2 * k:2 * k + 2], y[2 * k:2 * k + 2]) for k in (0, 1, 2, 3, 0, 1)]
    first = rewire.Trainer(model, **opts)
    got = [first.step(x[2 * k:2 * k + 2], y[2 * k:2 * k + 2]) for k in (0, 1, 2)]
    first.checkpoint(str(tmp_path / "ck"))
    again = rewire.Trainer.resume(str(tmp_path / "ck"), model, **opts)
    assert again.step_count == 3
    got += [again.step(x[2 * k:2 * k + 2], y[2 * k:2 * k + 2]) for k in (3, 0, 1)]
    assert got == want
    a, b = straight.state_dict(), again.state_dict()
    assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)


def test_trained_weights_export_to_onnx(tiny_gpt, tmp_path):
    x, y = batches(2)
    model = rewire.load(tiny_gpt).rewrite("review", init="identity")
    trainer = rewire.Trainer(model, loss="cross_entropy", lr=1e-2, steps=5)
    losses = [trainer.step(x[:2], y[:2]) for _ in range(5)]
    assert losses[-1] < losses[0]
    assert abs(trainer.evaluate(x[:2], y[:2]) - losses[-1]) < losses[0] - losses[-1]
    params = str(tmp_path / "trained.safetensors")
    trainer.save(params)
    weights = trainer.state_dict()
    assert any(k.startswith("stream0.layer0.review") for k in weights)
    onnx_path = str(tmp_path / "trained.onnx")
    model.export(onnx_path, params=params)
    (ref,) = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, {"input": x[:2]})
    (got,) = rewire.compile(model, params=params).run(None, {"input": x[:2]})
    assert np.abs(got - ref).max() <= 1e-4 * max(1.0, np.abs(ref).max())


def test_bad_batches_are_refused(tiny_gpt):
    x, y = batches()
    trainer = rewire.Trainer(rewire.load(tiny_gpt), loss="cross_entropy", steps=3)
    with pytest.raises(rewire.Error, match=r"the inputs are 4x8xi64; the model takes i64 \[2x8\]"):
        trainer.step(x[:4], y[:4])
    with pytest.raises(rewire.Error, match="the targets are"):
        trainer.step(x[:2], y[:2].astype(np.float32))
    bad = y[:2].copy()
    bad[0, 0] = 999  # a class label outside the logits
    with pytest.raises(rewire.Error):
        trainer.step(x[:2], bad)
    with pytest.raises(rewire.Error, match="optimizer must be"):
        rewire.Trainer(rewire.load(tiny_gpt), optimizer="lion")
