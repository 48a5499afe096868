"""Wall time and peak memory of the statistics, random grouping, the paired bootstrap and the simulation.

Matrices are seeded random AP-like scores (Beta(1.5, 4)): a large one, 1,000 systems x 10,000 topics,
and a TREC-sized one, 130 x 50. Peak memory is what ``tracemalloc`` saw numpy and Python allocate
during the operation (the inputs excluded). The target is under 2 s per operation on the large
matrix, the per-topic simulation apart.

From the repository root (or anywhere after ``pip install -e .``)::

    python -m benchmarks.bench_statistics              # everything (a few minutes)
    python -m benchmarks.bench_statistics --skip-slow  # leave out the rows known to take minutes
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pytest_bvtest.spec.model import AnalysisSettings, RandomGrouping
from pytest_bvtest.stats.biasvar import grouped_bias_variance
from pytest_bvtest.stats.inference import paired_bootstrap, paired_t_test, randomization_tests
from pytest_bvtest.stats.registry import STATISTICS
from pytest_bvtest.stats.simulation import RetrievedList, simulate_topic_bias_variance

SEED = 20240611
LARGE = (1000, 10000)
TREC = (130, 50)
RESAMPLES = 1000
REPEATS = 1000


@dataclass(frozen=True)
class Row:
    operation: str
    matrix: str
    seconds: float
    cpu_seconds: float
    peak_mb: float
    note: str = ""


def measure(operation: str, shape: tuple[int, int], call: Callable[[], object], note: str = "") -> Row:
    """Peak memory of one run of ``call`` under tracemalloc, and its wall and CPU time without tracing.

    Operations under a second are timed best of three (the first run of a fresh process pays for
    growing the heap). CPU time (this process, all threads) is steadier than wall time on a shared machine.
    """
    gc.collect()
    tracemalloc.start()
    call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    timings: list[tuple[float, float]] = []
    while not timings or (len(timings) < 3 and max(wall for wall, _ in timings) < 1.0):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        call()
        timings.append((time.perf_counter() - start, time.process_time() - start_cpu))
    wall, cpu = min(timings)
    row = Row(operation, f"{shape[0]} x {shape[1]}", wall, cpu, peak / 2**20, note)
    print(
        f"  {row.operation:<44} {row.matrix:>13} {row.seconds:>9.3f} {row.cpu_seconds:>9.3f} {row.peak_mb:>9.1f}"
        f"  {row.note}",
        flush=True,
    )
    return row


def scores(shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    return rng.beta(1.5, 4.0, size=shape)


def synthetic_lists(systems: int, topics: int, length: int, rng: np.random.Generator) -> list[list[RetrievedList]]:
    """Retrieved lists whose relevant documents tend to score higher, ``length`` documents each."""
    relevant_in_qrels = rng.integers(5, 120, size=topics)
    lists = []
    for _ in range(systems):
        row = []
        for j in range(topics):
            retrieval_scores = rng.standard_normal(length)
            chance = 1.0 / (1.0 + np.exp(-(retrieval_scores - 2.0)))
            relevant = rng.random(length) < chance * relevant_in_qrels[j] / 60
            relevant[np.flatnonzero(relevant)[relevant_in_qrels[j] :]] = False
            row.append(RetrievedList(retrieval_scores, relevant, int(relevant_in_qrels[j])))
        lists.append(row)
    return lists


def bench_matrix(shape: tuple[int, int], rng: np.random.Generator, skip_slow: bool) -> list[Row]:
    x = scores(shape, rng)
    large = shape == LARGE
    settings = AnalysisSettings()
    reference, candidate = 0, 1
    rows = []
    for name, statistic in STATISTICS.items():
        rows.append(measure(f"{name}: every system", shape, lambda s=statistic: s.compute(x, reference, settings)))
    rows.append(measure("paired t-test", shape, lambda: paired_t_test(x[candidate], x[reference])))
    rows.append(
        measure(
            "randomization test, 10,000 sign flips",
            shape,
            lambda: randomization_tests(x[candidate], x[reference][np.newaxis]),
        )
    )
    pairs = min(20, shape[0] - 1)  # a gate's comparisons: 10 baselines x 2 measures share one pass
    rows.append(
        measure(
            f"randomization tests, {pairs} pairs at once",
            shape,
            lambda: randomization_tests(x[candidate], np.delete(x, candidate, axis=0)[:pairs]),
        )
    )

    target = x.max(axis=0)
    if large and skip_slow:
        print(f"  {'random grouping: skipped (--skip-slow)':<44} {'1000 x 10000':>13}")
    else:
        rows.append(
            measure(
                f"random grouping, size 5, {REPEATS} repetitions",
                shape,
                lambda: grouped_bias_variance(x, target, target, 0.5, RandomGrouping(5, REPEATS, 0)),
                "biasvar.grouped_bias_variance",
            )
        )

    for name in STATISTICS:
        if name == "gawm" and large:
            if skip_slow:
                print(f"  {'bootstrap gawm: skipped (--skip-slow)':<44} {'1000 x 10000':>13}")
                continue
            rows.append(
                measure(
                    f"bootstrap {name}, {RESAMPLES} resamples",
                    shape,
                    lambda: paired_bootstrap(x, "gawm", candidate, reference, settings, resamples=RESAMPLES),
                    "full matrix, as topic counts",
                )
            )
            continue
        rows.append(
            measure(
                f"bootstrap {name}, {RESAMPLES} resamples",
                shape,
                lambda n=name: paired_bootstrap(x, n, candidate, reference, settings, resamples=RESAMPLES),
            )
        )
    if not large:
        weighted = AnalysisSettings(topic_weights=rng.random(shape[1]))
        rows.append(
            measure(
                f"bootstrap mve weighted, {RESAMPLES} resamples",
                shape,
                lambda: paired_bootstrap(x, "mve", candidate, reference, weighted, resamples=RESAMPLES),
                "one call per resample",
            )
        )
    return rows


def bench_simulation(rng: np.random.Generator) -> Row:
    systems, topics = TREC
    lists = synthetic_lists(systems, topics, 1000, rng)
    names = [f"system{i}" for i in range(systems)]
    topic_ids = [str(401 + j) for j in range(topics)]
    return measure(
        "simulation, 100 samples, 1000-document lists",
        TREC,
        lambda: simulate_topic_bias_variance(lists, names, topic_ids, samples=100, seed=0),
        "stats.simulation",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-slow", action="store_true", help="leave out large-matrix rows known to take minutes")
    arguments = parser.parse_args()
    rng = np.random.default_rng(SEED)
    print(f"pytest-bvtest statistics benchmark (numpy {np.__version__}, seed {SEED})")
    print(f"  {'operation':<44} {'matrix':>13} {'wall s':>9} {'cpu s':>9} {'peak MB':>9}  note")
    rows = bench_matrix(TREC, rng, arguments.skip_slow)
    rows.append(bench_simulation(rng))
    rows += bench_matrix(LARGE, rng, arguments.skip_slow)
    slow = [row for row in rows if row.matrix == "1000 x 10000" and row.seconds > 2.0]
    print(f"large-matrix operations over 2 s: {', '.join(row.operation for row in slow) or 'none'}")


if __name__ == "__main__":
    main()
