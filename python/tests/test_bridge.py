"""rewire.from_torch on a Hugging Face GPT-2 (transformers, TorchScript
exporter): every parameter is found again under the module's name; an
identity-initialized rewrite trained for 0 steps loads back into PyTorch and
gives its outputs exactly; weights trained by Rewire, loaded into the
transformers module, give Rewire's outputs (1e-5); tied weights are warned
about."""
import numpy as np
import pytest
import torch
import transformers  # build/venv's (the bootstrap installs it), on Debian's PyTorch

import rewire


def gpt2(tied=False, seed=0):
    torch.manual_seed(seed)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=128, n_positions=16,
                                     use_cache=False, tie_word_embeddings=tied)
    return transformers.GPT2LMHeadModel(config).eval()


def logits(module, ids):
    with torch.no_grad():
        return module(torch.from_numpy(ids)).logits.numpy()


IDS = np.random.default_rng(0).integers(0, 128, (2, 8)).astype(np.int64)


def test_every_parameter_is_mapped():
    module = gpt2()
    model = rewire.from_torch(module, (torch.from_numpy(IDS),), input_names=["input_ids"])
    mapped = {v[0] for v in model.torch_names.values()}
    params = {n for n, _ in module.named_parameters()}
    assert params <= mapped, sorted(params - mapped)
    # What is left over are buffers (the causal masks), not parameters.
    assert all(n not in params for n in model.torch_unmatched)
    assert any(t for _, t in model.torch_names.values())  # the head: exported transposed


def test_identity_rewrite_at_zero_steps_gives_pytorch_back_exactly():
    module = gpt2()
    want = logits(module, IDS)
    model = rewire.from_torch(module, (torch.from_numpy(IDS),), input_names=["input_ids"])
    trainer = rewire.Trainer(model.rewrite("review", init="identity"), loss="cross_entropy", steps=1)
    sd = trainer.state_dict(torch_names=True)
    fresh = gpt2(seed=1)  # other weights
    assert not np.array_equal(logits(fresh, IDS), want)
    missing, unexpected = fresh.load_state_dict(sd, strict=False)
    assert not unexpected and all(not n.endswith("weight") for n in missing)
    assert np.array_equal(logits(fresh, IDS), want)
    new = trainer.new_parameters()
    assert new and all(k.startswith("stream0.layer") and ".review." in k for k in new)


def test_trained_weights_round_trip_into_transformers(tmp_path):
    module = gpt2()
    model = rewire.from_torch(module, (torch.from_numpy(IDS),), input_names=["input_ids"])
    trainer = rewire.Trainer(model, loss="cross_entropy", optimizer="adamw", lr=1e-2, steps=8)
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(8):
        x = rng.integers(0, 128, (2, 8)).astype(np.int64)
        losses.append(trainer.step(x, np.roll(x, -1, axis=1)))
    assert losses[-1] < losses[0]
    params = str(tmp_path / "trained.safetensors")
    trainer.save(params)
    (got,) = rewire.compile(model, params=params, precise_math=True).run(None, {"input_ids": IDS})
    before = logits(module, IDS)
    module.load_state_dict(trainer.state_dict(torch_names=True), strict=False)
    after = logits(module, IDS)
    assert np.abs(after - before).max() > 1e-3  # the training moved the weights
    assert np.abs(after - got).max() <= 1e-5 * max(1.0, np.abs(got).max())


def test_tied_weights_are_named():
    module = gpt2(tied=True)
    with pytest.warns(UserWarning, match="one tied parameter"):
        rewire.from_torch(module, (torch.from_numpy(IDS),))


def test_bad_exporter():
    with pytest.raises(rewire.Error, match="exporter must be"):
        rewire.from_torch(gpt2(), (torch.from_numpy(IDS),), exporter="jit")
