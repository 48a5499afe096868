"""Run-to-run noise: a system given as several runs of a nondeterministic engine (docs/mathematics.md §7,
"Run-to-run noise", our reading).

Rankers with approximate nearest-neighbour search or GPU re-rankers give slightly different runs each time;
Anserini raised its regression tolerances again and again for this (its PRs #2262, #2400, #3060). A system given
as ``k`` runs scores, per topic, the mean of its runs; :func:`run_spread` says how far its runs differ, and
:func:`run_noise` gives the calibration's null (:func:`~pytest_bvtest.stats.calibration.swap_null`) draws of that
noise on the difference of two means.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pytest_bvtest.checks import checked_scores
from pytest_bvtest.errors import StatisticError


@dataclass(frozen=True)
class RunSpread:
    """How far the runs of one system differ.

    Attributes
    ----------
    runs:
        ``k``, the number of runs (at least 2).
    run_means:
        Each run's mean over topics, in the order the runs were given.
    sd_of_means:
        The sample standard deviation (``n - 1``: ``k`` is small) of ``run_means``: the noise a single run's mean
        carries; the mean of ``k`` runs carries ``1 / sqrt(k)`` of it.
    topic_sd:
        Per topic, the sample standard deviation over the runs.
    """

    runs: int
    run_means: np.ndarray = field(repr=False, compare=False)
    sd_of_means: float
    topic_sd: np.ndarray = field(repr=False, compare=False)

    @property
    def range_of_means(self) -> float:
        """The largest difference between two runs' means."""
        return float(self.run_means.max() - self.run_means.min())

    @property
    def mean_topic_sd(self) -> float:
        """The per-topic spread averaged over topics."""
        return float(self.topic_sd.mean())


def run_spread(runs: np.ndarray) -> RunSpread:
    """The spread of ``runs`` ``(k, n)``: per-topic scores of ``k >= 2`` runs of one system on ``n`` topics.

    docs/mathematics.md §7, "Run-to-run noise": the sample standard deviation over runs (``k - 1``, the runs being
    a small sample of the engine's), per topic and of the runs' means.
    """
    x = checked_scores(runs, min_ndim=2)
    if x.ndim != 2 or x.shape[0] < 2:
        raise StatisticError(f"a run-to-run spread needs (runs, topics) scores of at least 2 runs, got {x.shape}")
    means = x.mean(axis=1)
    return RunSpread(int(x.shape[0]), means, float(means.std(ddof=1)), x.std(axis=0, ddof=1))


def run_noise(candidate_runs: np.ndarray, reference_runs: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The run differences the calibration's null draws the engine's noise from, and their weights.

    docs/mathematics.md §7, "Run-to-run noise" (our reading). Returns ``(candidate_side, reference_side, w_c,
    w_r)``: every difference ``x_a - x_a'`` of two distinct runs (ordered pairs) of the candidate ``(k_c, n)``, of
    the reference ``(k_r, n)``; a side with one run borrows the other side's (the noise of one engine), and
    ``w = 1 / sqrt(2 k)`` with ``k`` that side's own number of runs. A difference of two runs has twice a single
    run's variance on every topic, so ``w_c d_c - w_r d_r`` has the variance of the difference of the two means,
    ``s_c^2 / k_c + s_r^2 / k_r``, and keeps what a run shares across topics.
    """
    sides = []
    for runs in (candidate_runs, reference_runs):
        count = runs.shape[0]
        first, second = np.nonzero(~np.eye(count, dtype=bool))
        sides.append(runs[first] - runs[second])
    candidate_side, reference_side = sides
    if not len(candidate_side) and not len(reference_side):
        raise StatisticError("the engine's noise needs a system given as at least 2 runs")
    return (
        candidate_side if len(candidate_side) else reference_side,
        reference_side if len(reference_side) else candidate_side,
        1.0 / np.sqrt(2.0 * candidate_runs.shape[0]),
        1.0 / np.sqrt(2.0 * reference_runs.shape[0]),
    )
