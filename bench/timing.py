"""How the benchmarks time things in one process, round-robin, and the paired
figures they report. No torch here: a process that times the runtime must
not have imported it (its OpenMP pool, and Debian's torch's setting of
libgomp's threads, would be measured with it; docs/performance.md,
2026-12-07 08:30)."""
import os
import random
import statistics
import time

# Idle time before each timed call (seconds; REWIRE_BENCH_GAP_S): the thread
# pools of the runtime timed before (libgomp's, ONNX Runtime's) spin for a
# while after a call and would take cores from the next one.
GAP_S = float(os.environ.get("REWIRE_BENCH_GAP_S", "0.2"))


def round_robin(fns, rounds, raw=None):
    """Times every callable once per round, in turn, for `rounds` rounds after
    two warm-up rounds, so slow drift of a shared machine hits all alike.
    Returns {name: (median ms, min ms)}; `raw`, a dict, receives every
    round's ms per name (for paired ratios)."""
    for _ in range(2):
        for fn in fns.values():
            fn()
    ms = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            time.sleep(GAP_S)
            t0 = time.perf_counter()
            fn()
            ms[k].append((time.perf_counter() - t0) * 1e3)
    if raw is not None:
        raw.update(ms)
    return medians(ms)


def medians(raw):
    """{name: (median ms, min ms)} of every round's ms per name."""
    return {k: (statistics.median(v), min(v)) for k, v in raw.items()}


def paired(raw, num, den):
    """The median over rounds of num's time / den's time within each round:
    the VM's drift between rounds, which moves both alike, cancels."""
    return statistics.median(a / b for a, b in zip(raw[num], raw[den]))


def paired_interval(ratios, resamples=4000):
    """A 95% bootstrap interval of the median of the in-round ratios: the
    rounds resampled with replacement (a fixed seed, so a run's report
    does not change when printed again)."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios)))
                     for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]
