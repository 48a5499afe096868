"""Paired inference over topics: t-test, Fisher randomization, Holm correction, paired bootstrap.

These are the comparisons IR users already know from PyTerrier and ranx (CONVENTIONS.md
"Statistics users expect") plus the noise-aware bootstrap interval that MATH.md section 7 asks of a
regression gate. Every array is topic-aligned: position ``j`` is the same topic in every argument.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from pytest_bvtest.errors import StatisticError

# Relative tolerance under which two permuted statistics count as tied with the observed one:
# sign-flipped sums that are equal in exact arithmetic may differ in the last bits.
_TIE_TOLERANCE = 1e-12

# Cells (resamples or permutations x topics) materialised at once, to bound memory.
_CHUNK_CELLS = 1 << 22


@dataclass(frozen=True)
class TestResult:
    """A paired test's statistic (oriented candidate - reference) and its two-sided p-value."""

    __test__ = False  # not a pytest test class, despite the name

    statistic: float
    p_value: float


def _paired_differences(candidate: np.ndarray, reference: np.ndarray) -> np.ndarray:
    candidate = np.asarray(candidate, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if candidate.ndim != 1 or candidate.shape != reference.shape:
        raise StatisticError(
            f"a paired test needs two topic-aligned vectors of equal length, got shapes "
            f"{candidate.shape} and {reference.shape}"
        )
    if not (np.isfinite(candidate).all() and np.isfinite(reference).all()):
        raise StatisticError("a paired test needs finite scores, got NaN or infinity")
    return candidate - reference


def paired_t_test(candidate: np.ndarray, reference: np.ndarray) -> TestResult:
    """Two-sided paired Student t-test over topics, as ``scipy.stats.ttest_rel``.

    Parameters
    ----------
    candidate, reference:
        Per-topic scores of the two systems, shape ``(n,)``, topic-aligned, ``n >= 2``.

    Returns
    -------
    TestResult
        ``statistic = mean(d) / (s / sqrt(n))`` with ``d = candidate - reference`` and ``s`` the
        sample standard deviation (``n - 1``) of ``d``; ``p_value = 2 * (1 - F_{n-1}(|t|))`` with
        ``F`` the Student t distribution function.

    Notes
    -----
    Student (1908); the same statistic as TRisk at alpha 0 (MATH.md section 4). Where scipy
    returns NaN we decide: identical inputs (``d = 0``) give ``statistic 0, p 1``; a constant
    non-zero difference gives ``statistic = +-inf, p 0``.
    """
    differences = _paired_differences(candidate, reference)
    topics = differences.size
    if topics < 2:
        raise StatisticError(f"the paired t-test needs at least 2 topics, got {topics}")
    mean = differences.mean()
    deviation = differences.std(ddof=1)
    if deviation == 0.0:
        if mean == 0.0:
            return TestResult(0.0, 1.0)
        return TestResult(float(np.copysign(np.inf, mean)), 0.0)
    statistic = mean / (deviation / np.sqrt(topics))
    p_value = 2.0 * scipy_stats.t.sf(abs(statistic), df=topics - 1)
    return TestResult(float(statistic), float(min(p_value, 1.0)))


def randomization_test(
    candidate: np.ndarray,
    reference: np.ndarray,
    permutations: int = 10000,
    seed: int = 0,
) -> TestResult:
    """Two-sided paired Fisher randomization (permutation) test of the mean difference.

    Under the null hypothesis the two systems are exchangeable on every topic, so each per-topic
    difference ``d_j`` is equally likely to carry either sign. The test statistic is the mean
    difference; the p-value is the share of sign assignments whose ``|mean(s * d)|`` reaches the
    observed ``|mean(d)|``.

    Parameters
    ----------
    candidate, reference:
        Per-topic scores, shape ``(n,)``, topic-aligned, ``n >= 1``.
    permutations:
        Number of random sign assignments. When ``2**n <= permutations`` every assignment is
        enumerated instead and the p-value is exact (seed unused).
    seed:
        Seed of ``numpy.random.default_rng`` for the random assignments.

    Returns
    -------
    TestResult
        ``statistic = mean(d)``. ``p_value = count / 2**n`` when enumerated (the observed
        assignment is one of them); otherwise ``(1 + count) / (1 + permutations)`` (the +1
        correction of Phipson & Smyth 2010, which keeps a Monte Carlo p-value valid and never 0).

    Notes
    -----
    Fisher (1935); Smucker, Allan & Carterette (CIKM 2007) for its use in IR. Sums that tie the
    observed one up to a relative 1e-12 count as reaching it.
    """
    differences = _paired_differences(candidate, reference)
    topics = differences.size
    if topics < 1:
        raise StatisticError("the randomization test needs at least 1 topic")
    if permutations < 1:
        raise StatisticError(f"permutations must be at least 1, got {permutations}")
    observed = abs(differences.sum())
    threshold = observed - _TIE_TOLERANCE * np.abs(differences).sum()
    statistic = float(differences.mean())

    if topics < 63 and 2**topics <= permutations:
        assignments = np.arange(2**topics)[:, np.newaxis] >> np.arange(topics) & 1
        flipped = differences.sum() - 2.0 * (assignments.astype(np.float64) @ differences)
        return TestResult(statistic, float(np.count_nonzero(np.abs(flipped) >= threshold) / 2**topics))

    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_CELLS // topics)
    reaching = 0
    for start in range(0, permutations, chunk):
        negated = rng.random((min(chunk, permutations - start), topics)) < 0.5
        flipped = differences.sum() - 2.0 * (negated.astype(np.float64) @ differences)
        reaching += np.count_nonzero(np.abs(flipped) >= threshold)
    return TestResult(statistic, float((1 + reaching) / (1 + permutations)))


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values (statsmodels' ``multipletests(method="holm")``).

    Parameters
    ----------
    p_values:
        Raw p-values of ``k`` hypotheses, shape ``(k,)``, each in ``[0, 1]``. Leave the baseline's
        comparison with itself out (PyTerrier #440).

    Returns
    -------
    numpy.ndarray
        Adjusted p-values in the input order: with ``p_(1) <= ... <= p_(k)`` sorted,
        ``adj_(i) = min(1, max_{l <= i} (k - l + 1) * p_(l))`` (Holm 1979). Reject hypothesis ``i``
        at level ``a`` exactly when ``adj_i <= a``.
    """
    p_values = np.asarray(p_values, dtype=np.float64)
    if p_values.ndim != 1:
        raise StatisticError(f"holm needs a vector of p-values, got shape {p_values.shape}")
    if not (np.isfinite(p_values).all() and (p_values >= 0).all() and (p_values <= 1).all()):
        raise StatisticError("holm needs p-values in [0, 1], got NaN or a value outside")
    order = np.argsort(p_values, kind="stable")
    multipliers = np.arange(p_values.size, 0, -1)
    stepped = np.minimum(1.0, np.maximum.accumulate(multipliers * p_values[order]))
    adjusted = np.empty_like(p_values)
    adjusted[order] = stepped
    return adjusted
