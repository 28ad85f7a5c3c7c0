"""rewire.load / Model / compile / Session on real Hugging Face exports:
outputs against the fixture's PyTorch outputs and ONNX Runtime, rewrites,
truncation, DLPack in and out, and the errors a careless user meets."""
import os

import numpy as np
import onnxruntime as ort
import pytest
import torch

import rewire

TOL = 1e-4  # fp32, polynomial exp/tanh in the compiled code


def ort_run(path, feeds):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)


def test_load_compile_run_matches_pytorch(gpt2_dynamo):
    path, x, want = gpt2_dynamo
    model = rewire.load(path)
    session = rewire.compile(model)
    (name,) = [i["name"] for i in session.get_inputs()]
    (got,) = session.run(None, {name: x})
    assert got.shape == want.shape and got.dtype == np.float32
    assert np.abs(got - want).max() <= TOL * max(1.0, np.abs(want).max())


def test_bytes_and_path_load_the_same_model(gpt2_dynamo):
    path = gpt2_dynamo[0]
    with open(path, "rb") as f:
        blob = f.read()
    assert rewire.load(blob).report() == rewire.load(path).report()


def test_report_is_data(gpt2_dynamo):
    report = rewire.load(gpt2_dynamo[0]).report()
    (stream,) = report["streams"]
    kinds = [(u["layer"], u["branch"], u["kind"]) for u in stream["updates"]]
    # `layer` counts the stream's updates (two per transformer block).
    assert kinds == [(0, "attention", "add"), (1, "mlp", "add"), (2, "attention", "add"), (3, "mlp", "add")]
    assert report["params_added"] == 0


@pytest.mark.parametrize("kind,options", [("review", {"init": "identity"}), ("nag", {}),
                                          ("laurel", {"laurel": "rw"}), ("mhc", {"streams": 2}),
                                          ("laurel", {"laurel": "rw-lr-pa"}),
                                          ("laurel", {"laurel": "gemma3n", "rank": 4})])
def test_rewrite_compile_export_agree(gpt2_dynamo, tmp_path, kind, options):
    path, x, _ = gpt2_dynamo
    rewritten = rewire.load(path).rewrite(kind, **options)
    assert rewritten.report()["streams"], kind
    (got,) = rewire.compile(rewritten).run(None, {"in0": x})
    out = str(tmp_path / "rewritten.onnx")
    rewritten.export(out)
    (ref,) = ort_run(out, {"in0": x})
    assert np.abs(got - ref).max() <= TOL * max(1.0, np.abs(ref).max()), kind


def test_rewrite_leaves_the_model_unchanged(gpt2_dynamo):
    model = rewire.load(gpt2_dynamo[0])
    before = model.mlir
    model.rewrite("rezero")
    assert model.mlir == before


def test_truncate_keeps_the_first_blocks(gpt2_dynamo):
    model = rewire.load(gpt2_dynamo[0])
    short = model.truncate(1)
    assert len(short.report()["streams"][0]["updates"]) == 2
    (y,) = rewire.compile(short).run(None, {"in0": gpt2_dynamo[1]})
    assert y.shape == gpt2_dynamo[2].shape
    with pytest.raises(rewire.Error, match="depth must be between 1 and 2"):
        model.truncate(3)


def test_pipeline_and_save_round_trip(gpt2_dynamo, tmp_path):
    path, x, want = gpt2_dynamo
    detected = rewire.load(path).pipeline("builtin.module(func.func(residual-detect))")
    assert "residual." in detected.mlir
    saved = str(tmp_path / "gpt2.mlir")
    detected.save(saved)
    assert os.path.exists(str(tmp_path / "gpt2.params.safetensors"))
    (got,) = rewire.compile(rewire.load(saved)).run(None, {"in0": x})
    assert np.abs(got - want).max() <= TOL * max(1.0, np.abs(want).max())


def test_torch_in_dlpack_out(gpt2_dynamo):
    path, x, want = gpt2_dynamo
    session = rewire.compile(rewire.load(path))
    (a,) = session.run(None, {"in0": torch.from_numpy(x)})
    (b,) = session.run(None, {"in0": x})
    assert np.array_equal(a, b)
    t = torch.from_dlpack(a)  # no copy: the tensor reads the array's memory
    assert t.data_ptr() == a.ctypes.data
    # A non-contiguous view is made contiguous, not misread.
    wide = np.ascontiguousarray(np.concatenate([x, x], axis=1))
    (c,) = session.run(None, {"in0": wide[:, ::2]})
    (d,) = session.run(None, {"in0": np.ascontiguousarray(wide[:, ::2])})
    assert np.array_equal(c, d)


def test_dynamic_axes_are_bound(gpt2_dynamic):
    model = rewire.load(gpt2_dynamic, dims={"batch": 3, "sequence": 5})
    session = rewire.compile(model)
    assert session.get_inputs()[0]["shape"] == [3, 5]
    ids = np.random.default_rng(0).integers(0, 128, (3, 5))
    (ref,) = ort_run(gpt2_dynamic, {"in0": ids})
    (got,) = session.run(None, {"in0": ids})
    assert np.abs(got - ref).max() <= TOL * max(1.0, np.abs(ref).max())


def test_errors_say_what_is_wrong(gpt2_dynamo, tmp_path):
    path, x, _ = gpt2_dynamo
    with pytest.raises(rewire.Error, match="does not exist"):
        rewire.load(str(tmp_path / "missing.onnx"))
    with pytest.raises(rewire.Error):
        rewire.load(b"\x08\x07 this is not a model")
    model = rewire.load(path)
    with pytest.raises(rewire.Error, match="the rewrite 'nope' failed"):
        model.rewrite("nope")
    with pytest.raises(rewire.Error, match="values cannot contain"):
        model.rewrite("review", init="identity,gate=row")
    session = rewire.compile(model)
    with pytest.raises(rewire.Error, match=r"must be 2x8xi64, got 2x8xi32"):
        session.run(None, {"in0": x.astype(np.int32)})
    with pytest.raises(rewire.Error, match=r"must be 2x8xi64, got 2x4xi64"):
        session.run(None, {"in0": x[:, :4]})
    with pytest.raises(rewire.Error, match="missing: in0"):
        session.run(None, {"ids": x})
    with pytest.raises(rewire.Error, match="has no output 'logits'"):
        session.run(["logits"], {"in0": x})
    with pytest.raises(rewire.Error, match="not a target"):
        rewire.compile(model, target="tpu")
    with pytest.raises(rewire.Error, match="not options of residual-rewrite"):
        rewire.compile(model, residual="nope")  # the compiler's diagnostic, not only "failed"
    # Token ids are untrusted: an id outside the vocabulary is an error, not a read.
    bad = x.copy()
    bad[0, 0] = 10 ** 6
    with pytest.raises(rewire.Error):
        session.run(None, {"in0": bad})


def test_compiles_are_cached(gpt2_dynamo):
    model = rewire.load(gpt2_dynamo[0])
    a, b = rewire.compile(model), rewire.compile(rewire.load(gpt2_dynamo[0]))
    assert a.artifact == b.artifact  # the same model, parameters and options: one compile
    assert rewire.compile(model, precise_math=True).artifact != a.artifact
    assert rewire.compile(model.rewrite("rezero")).artifact != a.artifact
    private = rewire.compile(model, cache=False)
    assert private.artifact != a.artifact
    (x,), (y,) = a.run(None, {"in0": gpt2_dynamo[1]}), private.run(None, {"in0": gpt2_dynamo[1]})
    assert np.array_equal(x, y)
