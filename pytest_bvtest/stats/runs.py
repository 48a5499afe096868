"""Run-to-run noise: a system given as several runs of a nondeterministic engine (docs/mathematics.md §7,
"Run-to-run noise", our reading).

Rankers with approximate nearest-neighbour search or GPU re-rankers give slightly different runs each time;
Anserini raised its regression tolerances again and again for this (its PRs #2262, #2400, #3060). A system given
as ``k`` runs scores, per topic, the mean of its runs; :func:`run_spread` says how far its runs differ, and
:func:`run_shift` how far the engine shifts a whole run, which the calibration's null
(:func:`~pytest_bvtest.stats.calibration.swap_null`) draws for every swap.
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


@dataclass(frozen=True)
class RunShift:
    """How far the engine shifts a whole run: the null of no change draws ``scale * t`` with ``t`` Student's t with
    ``degrees`` degrees of freedom, added to the swapped candidate on every topic (docs/mathematics.md §7,
    "Run-to-run noise").

    Attributes
    ----------
    scale:
        The standard deviation of the difference of the two systems' mean shifts, ``s sqrt(1/k_c + 1/k_r)``, with
        ``s**2`` the variance of one run's mean over topics (:func:`run_shift`).
    degrees:
        The degrees of freedom ``s**2`` is estimated with: ``k - 1`` for each system given as ``k >= 2`` runs.
    """

    scale: float
    degrees: int


def run_shift(candidate_runs: np.ndarray, reference_runs: np.ndarray) -> RunShift:
    """The engine's shift of a whole run, from the runs of the candidate ``(k_c, n)`` and of the reference ``(k_r,
    n)`` (docs/mathematics.md §7, "Run-to-run noise", our reading).

    A run's score on topic ``j`` is its system's true score, plus a shift the run shares on every topic (an index
    built anew that is a little worse everywhere), plus noise on each topic. The swap null sign-flips the per-topic
    differences, which holds the per-topic noise but averages a shift away; so the shift is drawn. Within each
    system of ``k >= 2`` runs (one engine: the same noise on both sides), the sample variance of the runs' means over
    topics, ``v``, estimates ``s**2 + e**2 / n`` (``e**2`` the per-topic noise's variance), pooled over the systems
    with ``sum (k - 1)`` degrees of freedom; ``v`` stands for ``s**2``. It counts the per-topic noise of a mean a
    second time (the swaps hold it once), which errs on the safe side, and ``v`` is then a variance estimated from
    the runs alone, so that Student's t with those degrees keeps the false-alarm rate with few runs (taking ``e**2
    / n`` out did not: the estimate of ``s**2`` then falls to 0 one time in seven with two runs a side, and the rate
    with it; a normal draw of the runs' differences, as before issue 29, failed an unchanged engine 15-17.5% of the
    time at a nominal 5% with two runs).
    """
    sides = [np.asarray(runs, dtype=np.float64) for runs in (candidate_runs, reference_runs)]
    repeated = [runs for runs in sides if runs.shape[0] >= 2]
    if not repeated:
        raise StatisticError("the engine's noise needs a system given as at least 2 runs")
    degrees = sum(runs.shape[0] - 1 for runs in repeated)
    means = [runs.mean(axis=1) for runs in repeated]
    of_means = sum(float(((each - each.mean()) ** 2).sum()) for each in means) / degrees
    scale = float(np.sqrt(of_means * (1.0 / sides[0].shape[0] + 1.0 / sides[1].shape[0])))
    return RunShift(scale, degrees)
