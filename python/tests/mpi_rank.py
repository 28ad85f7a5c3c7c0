"""One rank of test_distributed.py (run under mpirun): trains the tiny GPT
with rewire.Trainer(comm=...) on the given global batches and, on rank 0,
writes the losses and trained parameters.

    mpi_rank.py MODEL BATCHES.npz OUT.npz COMM BUCKET_MB
"""
import sys

import numpy as np

import rewire

model, batches, out, comm, bucket_mb = sys.argv[1:6]
data = np.load(batches)
trainer = rewire.Trainer(rewire.load(model), loss="cross_entropy", lr=3e-3,
                         steps=len(data["x"]), comm=comm, bucket_mb=float(bucket_mb))
assert trainer.ranks == 2 and trainer.batch == data["x"].shape[1], (trainer.ranks, trainer.batch)
losses = [trainer.step(x, y) for x, y in zip(data["x"], data["y"])]
if trainer.rank == 0:
    np.savez(out, losses=np.array(losses), **trainer.state_dict())
