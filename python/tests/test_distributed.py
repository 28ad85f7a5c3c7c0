"""rewire.Trainer(comm="mpi") under mpirun -np 2: the same losses and
trained parameters, bit for bit, as one process with grad_accum=2 on the
same global batches (docs/distributed.md)."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import rewire

HERE = os.path.dirname(os.path.abspath(__file__))


# Small buckets: many sums, each started while the backward runs.
@pytest.mark.parametrize("comm,bucket_mb", [("mpi", 4.0), ("mpi", 0.001), ("mpi-deterministic", 4.0)])
def test_two_ranks_equal_accumulation(tiny_gpt, tmp_path, comm, bucket_mb):
    if not shutil.which("mpirun"):
        pytest.fail("mpirun not found (the bootstrap installs openmpi-bin)")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 64, (5, 4, 8)).astype(np.int64)  # 5 steps of a global batch of 4
    y = rng.integers(0, 64, (5, 4, 8)).astype(np.int64)
    batches = str(tmp_path / "batches.npz")
    np.savez(batches, x=x, y=y)
    out = str(tmp_path / "ranks.npz")
    env = dict(os.environ)
    if os.getuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(["mpirun", "--oversubscribe", "-np", "2", sys.executable,
                        os.path.join(HERE, "mpi_rank.py"), tiny_gpt, batches, out, comm,
                        str(bucket_mb)],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    ranks = np.load(out)
    trainer = rewire.Trainer(rewire.load(tiny_gpt), loss="cross_entropy", lr=3e-3, steps=5,
                             grad_accum=2)
    losses = [trainer.step(a, b) for a, b in zip(x, y)]
    assert losses == list(ranks["losses"])
    for name, value in trainer.state_dict().items():
        assert np.array_equal(value, ranks[name]), name


def test_comm_must_be_known(tiny_gpt):
    with pytest.raises(rewire.Error, match="comm must be"):
        rewire.Trainer(rewire.load(tiny_gpt), loss="cross_entropy", comm="nccl")


@pytest.mark.parametrize("bucket_mb", [0, -1.0, float("nan"), "4"])
def test_bucket_mb_must_be_a_size(tiny_gpt, bucket_mb):
    with pytest.raises(rewire.Error, match="bucket_mb must be a size in MiB above 0"):
        rewire.Trainer(rewire.load(tiny_gpt), loss="cross_entropy", bucket_mb=bucket_mb)
