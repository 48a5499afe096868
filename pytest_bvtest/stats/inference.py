"""Paired inference over topics: t-test, Wilcoxon, Fisher randomization, Holm/Bonferroni/BH corrections, bootstrap.

These are the comparisons IR users already know from PyTerrier and ranx (CONVENTIONS.md
"Statistics users expect") plus the noise-aware bootstrap interval that docs/mathematics.md §7 asks of a
regression gate. Every array is topic-aligned: position ``j`` is the same topic in every argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

# scipy.special's Student t function, not scipy.stats.t (whose sf is this function): scipy.stats takes ~1 s to import.
from scipy.special import ndtr, stdtr

from pytest_bvtest.checks import checked_scores, checked_seed, open_interval, whole_number
from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import AnalysisSettings
from pytest_bvtest.stats.registry import STATISTICS, Statistic
from pytest_bvtest.stats.swaps import Draws, read_swaps

# Relative tolerance under which two permuted statistics count as tied with the observed one:
# sign-flipped sums that are equal in exact arithmetic may differ in the last bits.
_TIE_TOLERANCE = 1e-12

# Cells (resamples x topics from sums, resamples x rows x topics in stacks) resampled at once: small enough to
# stay in cache, which is several times faster than one big block, and to bound memory for full-matrix statistics.
_BOOTSTRAP_CHUNK_CELLS = 1 << 20


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
    Student (1908); the same statistic as TRisk at alpha 0 (docs/mathematics.md §4). Where scipy
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
    p_value = 2.0 * stdtr(topics - 1, -abs(statistic))
    return TestResult(float(statistic), float(min(p_value, 1.0)))


class RandomizationTests:
    """Two-sided paired Fisher randomization (permutation) tests of the mean difference, for several
    topic-aligned pairs at once with the same sign assignments: a reader of the shared swaps
    (:func:`~pytest_bvtest.stats.swaps.read_swaps`), so that an evaluation's comparisons and its gates' nulls
    draw them once. :func:`randomization_tests` runs it alone; :meth:`results` gives the tests once it has read.

    Under the null hypothesis the two systems of a pair are exchangeable on every topic, so each per-topic
    difference ``d_j`` is equally likely to carry either sign. The test statistic is the mean difference;
    the p-value is the share of sign assignments whose ``|mean(s * d)|`` reaches the observed ``|mean(d)|``:
    ``count / 2**n`` when every assignment is enumerated (``2**n <= permutations``; the observed assignment
    is one of them), otherwise ``(1 + count) / (1 + permutations)`` (the +1 correction of Phipson & Smyth
    2010, which keeps a Monte Carlo p-value valid and never 0). Assignment ``b`` negates topic ``j`` where
    ``default_rng(seed).random((permutations, n))[b, j] < 0.5``. Sums that tie the observed one up to a
    relative 1e-12 count as reaching it. Fisher (1935); Smucker, Allan & Carterette (CIKM 2007) for its use
    in IR.

    Every pair sees the same assignments, so the flipped sums of all of them are one matrix product
    per block: a ``(assignments x n)`` 0/1 matrix of negated topics times the ``(n x k)`` differences.
    Pair ``i`` is ``candidate[i]`` (or ``candidate`` itself when it is one vector) and ``references[i]``.

    Parameters
    ----------
    candidate:
        Per-topic scores, shape ``(n,)`` (one candidate against every reference) or ``(k, n)`` (row
        ``i`` against ``references[i]``, e.g. the same candidate under several measures).
    references:
        Per-topic scores of ``k >= 1`` reference systems, shape ``(k, n)``, topic-aligned with ``candidate``.
    permutations:
        Number of random sign assignments; when ``2**n <= permutations`` every assignment is enumerated
        instead and the p-values are exact (seed unused).
    seed:
        Seed of ``numpy.random.default_rng`` for the random assignments.
    """

    def __init__(self, candidate: np.ndarray, references: np.ndarray, permutations: int = 10000, seed: int = 0):
        references = np.asarray(references, dtype=np.float64)
        if references.ndim != 2:
            raise StatisticError(f"the references must be a systems x topics matrix, got shape {references.shape}")
        if references.shape[0] == 0:
            raise StatisticError("the randomization tests need at least one reference")
        candidates = np.asarray(candidate, dtype=np.float64)
        if candidates.ndim == 1:
            candidates = np.broadcast_to(candidates, (references.shape[0], candidates.size))
        # One contiguous row per reference: its sums and mean reduce exactly as a single vector's would.
        rows = np.stack(
            [_paired_differences(ours, reference) for ours, reference in zip(candidates, references, strict=True)]
        )
        topics = rows.shape[1]
        if topics < 1:
            raise StatisticError("the randomization test needs at least 1 topic")
        if permutations < 1:
            raise StatisticError(f"permutations must be at least 1, got {permutations}")
        self._totals = rows.sum(axis=1)
        self._threshold = np.abs(self._totals) - _TIE_TOLERANCE * np.abs(rows).sum(axis=1)
        self._statistics = rows.mean(axis=1)
        exact = topics < 63 and 2**topics <= permutations
        self.draws = Draws(topics, 2**topics if exact else permutations, seed, exact)
        self.columns = rows.T
        self._reaching = np.zeros(rows.shape[0], dtype=np.int64)
        self._read = 0

    def read(self, first: int, swapped: np.ndarray, products: np.ndarray | None) -> None:
        """See :meth:`~pytest_bvtest.stats.swaps.SwapReader.read`: count the assignments that reach the observed sum."""
        assert products is not None and first == self._read
        self._reaching += np.count_nonzero(np.abs(self._totals - 2.0 * products) >= self._threshold, axis=0)
        self._read += len(swapped)

    def results(self) -> tuple[TestResult, ...]:
        """One test per pair, in order, once every assignment has been read."""
        if self._read != self.draws.count:
            raise StatisticError(f"the randomization tests read {self._read} of {self.draws.count} assignments")
        if self.draws.exact:
            return tuple(
                TestResult(float(mean), float(count / self.draws.count))
                for mean, count in zip(self._statistics, self._reaching)
            )
        return tuple(
            TestResult(float(mean), float((1 + count) / (1 + self.draws.count)))
            for mean, count in zip(self._statistics, self._reaching)
        )


def randomization_tests(
    candidate: np.ndarray,
    references: np.ndarray,
    permutations: int = 10000,
    seed: int = 0,
) -> tuple[TestResult, ...]:
    """The :class:`RandomizationTests` of the pairs (``candidate``, ``references[i]``), drawn on their own; ``()``
    for no reference."""
    references = np.asarray(references, dtype=np.float64)
    if references.ndim == 2 and references.shape[0] == 0:
        return ()
    tests = RandomizationTests(candidate, references, permutations, seed)
    read_swaps([tests])
    return tests.results()


def wilcoxon_signed_rank(candidate: np.ndarray, reference: np.ndarray) -> TestResult:
    """Two-sided Wilcoxon signed-rank test over topics, as ``scipy.stats.wilcoxon(candidate, reference)`` with its
    defaults (zeros dropped, no continuity correction, ``method="auto"``), without importing scipy.stats.

    Parameters
    ----------
    candidate, reference:
        Per-topic scores of the two systems, shape ``(n,)``, topic-aligned.

    Returns
    -------
    TestResult
        ``statistic``: scipy's, min(W+, W-), W+ the sum of the ranks of |d| (average ranks for ties) over the topics
        where the candidate wins, d = candidate - reference with the topics where d = 0 left out. ``p_value``, as
        scipy chooses: with more than 50 topics, or ties or zeros among more than 13, the normal approximation
        z = (W+ - m (m + 1) / 4) / sqrt((m (m + 1) (2m + 1) - sum (t^3 - t) / 2) / 24) over the m non-zero
        differences and tie groups of sizes t, p = 2 Phi(-|z|); without ties or zeros up to 50 topics, the exact
        distribution of W+, p = 2 min(P(W+ >= floor w), P(W+ <= ceil w)); with ties or zeros up to 13 topics, every
        one of the 2^n sign assignments of d (scipy's permutation test), p = 2 min(P(W+* <= w), P(W+* >= w)).
        Every p is capped at 1. No non-zero difference: statistic 0, p 1 (scipy: NaN).

    Notes
    -----
    Wilcoxon (1945); the test PyTerrier offers beside the t-test (CONVENTIONS.md "Statistics users expect").
    """
    differences = _paired_differences(candidate, reference)
    topics = differences.size
    nonzero = differences[differences != 0]
    count = nonzero.size
    if count == 0:
        return TestResult(0.0, 1.0)
    magnitudes = np.abs(nonzero)
    ranks = _average_ranks(magnitudes)
    _, tie_sizes = np.unique(magnitudes, return_counts=True)
    plus = float(ranks[nonzero > 0].sum())
    statistic = min(plus, float(ranks.sum()) - plus)
    ties_or_zeros = bool((tie_sizes > 1).any()) or count < topics
    if topics <= 50 and not ties_or_zeros:
        distribution = _signed_rank_distribution(count)
        at_least = distribution[int(np.floor(plus)) :].sum()
        at_most = distribution[: int(np.ceil(plus)) + 1].sum()
        return TestResult(statistic, float(min(1.0, 2.0 * min(at_least, at_most))))
    if topics <= 13:
        # every sign assignment of the differences (zeros stay zero): the ranks of |d| do not change
        signs = ((np.arange(2**count)[:, None] >> np.arange(count)) & 1).astype(bool)
        flipped = np.where(signs, ranks, 0.0).sum(axis=1)  # W+ when the flagged topics are the wins
        tolerance = abs(np.finfo(float).eps * 100 * plus)
        below = np.count_nonzero(flipped <= plus + tolerance) / flipped.size
        above = np.count_nonzero(flipped >= plus - tolerance) / flipped.size
        return TestResult(statistic, float(min(1.0, 2.0 * min(below, above))))
    mean = count * (count + 1.0) * 0.25
    spread = np.sqrt((count * (count + 1.0) * (2.0 * count + 1.0) - float((tie_sizes**3 - tie_sizes).sum()) / 2) / 24)
    return TestResult(statistic, float(min(1.0, 2.0 * ndtr(-abs((plus - mean) / spread)))))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, tied values sharing the mean of their ranks (``scipy.stats.rankdata``'s ``average``)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], ordered.size] - 1
    ranks = np.empty(values.size)
    ranks[order] = (first[group] + last[group]) / 2.0 + 1.0
    return ranks


def _signed_rank_distribution(count: int) -> np.ndarray:
    """P(W+ = w), w = 0 .. count (count + 1) / 2, for ``count`` untied non-zero differences: each rank r = 1 ..
    count is a win with probability 1/2 (the number of subsets of {1 .. count} summing to w, over 2^count)."""
    ways = np.zeros(count * (count + 1) // 2 + 1)
    ways[0] = 1.0
    for rank in range(1, count + 1):
        ways[rank:] = ways[rank:] + ways[:-rank].copy()
    return ways / 2.0**count


def _checked_p_values(p_values: np.ndarray, name: str) -> np.ndarray:
    p_values = np.asarray(p_values, dtype=np.float64)
    if p_values.ndim != 1:
        raise StatisticError(f"{name} needs a vector of p-values, got shape {p_values.shape}")
    if not (np.isfinite(p_values).all() and (p_values >= 0).all() and (p_values <= 1).all()):
        raise StatisticError(f"{name} needs p-values in [0, 1], got NaN or a value outside")
    return p_values


def bonferroni(p_values: np.ndarray) -> np.ndarray:
    """Bonferroni-adjusted p-values (statsmodels' ``multipletests(method="bonferroni")``): ``min(1, k p_i)`` for
    ``k`` hypotheses (Dunn 1961). Controls the family-wise error rate, like Holm, which rejects at least as much."""
    p_values = _checked_p_values(p_values, "bonferroni")
    return np.minimum(1.0, p_values * p_values.size)


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (statsmodels' ``fdr_bh``, ``scipy.stats.false_discovery_control``):
    with ``p_(1) <= ... <= p_(k)`` sorted, ``adj_(i) = min(1, min_{l >= i} k p_(l) / l)`` (Benjamini & Hochberg
    1995). Rejecting where ``adj_i <= a`` controls the false discovery rate at ``a`` (independent or positively
    dependent tests), not the family-wise error rate."""
    p_values = _checked_p_values(p_values, "benjamini_hochberg")
    order = np.argsort(p_values, kind="stable")
    scaled = p_values[order] * p_values.size / np.arange(1, p_values.size + 1)
    stepped = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    adjusted = np.empty_like(p_values)
    adjusted[order] = stepped
    return adjusted


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
    p_values = _checked_p_values(p_values, "holm")
    order = np.argsort(p_values, kind="stable")
    multipliers = np.arange(p_values.size, 0, -1)
    stepped = np.minimum(1.0, np.maximum.accumulate(multipliers * p_values[order]))
    adjusted = np.empty_like(p_values)
    adjusted[order] = stepped
    return adjusted


def uncorrected(p_values: np.ndarray) -> np.ndarray:
    """The raw p-values, checked: no correction for multiple comparisons."""
    return _checked_p_values(p_values, "uncorrected")


#: The multiple-testing corrections, by statsmodels' names (CONVENTIONS.md): each maps raw p-values onto adjusted ones.
CORRECTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "holm": holm,
    "bonferroni": bonferroni,
    "fdr_bh": benjamini_hochberg,
    "none": uncorrected,
}


@dataclass(frozen=True)
class BootstrapInterval:
    """A paired bootstrap percentile interval of (candidate - reference), or of the candidate's value.

    ``estimate`` is the value on the observed topics; ``low``/``high`` the interval at
    ``confidence``; ``mean``/``std`` (population) and ``distribution`` describe the ``resamples``
    bootstrap values drawn with ``seed``.
    """

    statistic: str
    estimate: float
    low: float
    high: float
    confidence: float
    resamples: int
    seed: int
    mean: float
    std: float
    distribution: np.ndarray = field(repr=False, compare=False)


def paired_problem(
    scores: np.ndarray, statistic: str, candidate: int, reference: int | None, settings: AnalysisSettings, what: str
) -> tuple[Statistic, np.ndarray, tuple[np.ndarray, list[int]]]:
    """Check a paired resampling's arguments; the statistic, the matrix and its sufficient reduction.

    Returns ``(statistic, scores, (matrix, positions))``: ``matrix`` is the statistic's sufficient
    matrix for the candidate and the reference
    (:attr:`~pytest_bvtest.stats.registry.Statistic.sufficient_matrix`), or the whole matrix for a
    statistic without one (GAWM); ``positions`` are the candidate's and the reference's rows in it
    (the candidate's alone when ``reference`` is ``None``). Resampling or swapping topics of
    ``matrix`` gives the values the whole matrix would give.
    """
    chosen = STATISTICS.get(statistic)
    if chosen is None:
        raise StatisticError(f"unknown statistic {statistic!r}; statistics: {', '.join(STATISTICS)}")
    x = checked_scores(scores, min_ndim=2)
    if x.ndim != 2:
        raise StatisticError(f"{what} needs one systems x topics matrix, got shape {x.shape}")
    systems = x.shape[0]
    kept: Sequence[int] = [candidate] if reference is None else [candidate, reference]
    if any(isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not 0 <= row < systems for row in kept):
        raise StatisticError(
            f"candidate and reference must be row indices below {systems}, got {candidate!r} and {reference!r}"
        )
    rows = list(dict.fromkeys(kept))
    reduced = None if chosen.sufficient_matrix is None else chosen.sufficient_matrix(x, rows, settings)
    if reduced is None:
        return chosen, x, (x, list(kept))
    return chosen, x, (reduced, [rows.index(row) for row in kept])


def paired_bootstrap(
    scores: np.ndarray,
    statistic: str,
    candidate: int,
    reference: int | None = None,
    settings: AnalysisSettings = AnalysisSettings(),
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapInterval:
    """Paired bootstrap over topics of any registered statistic, with a percentile interval.

    Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), Ch. 13 (percentile interval);
    Sakai, "Evaluating evaluation metrics based on the bootstrap", SIGIR 2006 (resampling topics
    paired across systems); docs/mathematics.md §7 (and §2, §3b): a resample draws ``n`` topics with replacement and
    that one topic multiset drives every system and the virtual target, which is recomputed from
    the resampled matrix, as is every other cross-system quantity (normalisation, ``c``, grouping,
    ZRisk's expectations, topic weights). Resample ``b`` uses row ``b`` of
    ``numpy.random.default_rng(seed).integers(0, n, size=(resamples, n))``, so a naive loop can
    reproduce every bootstrap value. The interval is Efron's percentile interval: the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the bootstrap values
    (``numpy.quantile``, linear interpolation).

    Speed: when the statistic reads the other systems only through per-topic aggregates, the
    matrix is first cut to the candidate, the reference and those aggregate rows
    (:attr:`~pytest_bvtest.stats.registry.Statistic.sufficient_matrix`), which gives the same
    values on the observed topics and on every resample. A resample is then a row of topic counts: a
    statistic with a sum form (:attr:`~pytest_bvtest.stats.registry.Statistic.sums`, every one but
    GAWM without topic grouping) is computed from the counts times a few per-topic columns, one matrix
    product per block of resamples (weighted ``mve`` included); the rest are evaluated on stacks of
    resampled matrices (topic grouping: one ``bias_variance_analysis`` per resample). GAWM needs the
    whole matrix: a block of resamples is evaluated as topic counts on it, one matrix product per
    quantity (:func:`~pytest_bvtest.stats.gawm.gawm_resampled`), slower than the rest on large matrices.

    Parameters
    ----------
    scores:
        ``(m, n)`` score matrix, every system of the evaluation.
    statistic:
        A name in :data:`~pytest_bvtest.stats.registry.STATISTICS`.
    candidate:
        Row of the candidate.
    reference:
        Row of the reference: the interval is then of ``value[candidate] - value[reference]``.
        ``None`` gives the interval of the candidate's own value (absolute bounds). Required by
        statistics that compare with a reference (URisk, TRisk); there the reference's own value is
        0, so the interval is that of the candidate's value against the reference.
    settings:
        How the statistics are computed.
    resamples:
        Number of bootstrap resamples ``B`` (default 1000).
    confidence:
        Coverage of the interval, strictly between 0 and 1 (default 0.95).
    seed:
        Seed of the resampling, reported in the result (default 0).

    Returns
    -------
    BootstrapInterval
        When the candidate's and the reference's rows are identical the difference is 0 on every
        resample, and the result says so exactly (estimate and interval 0).
    """
    chosen, x, (matrix, positions) = paired_problem(scores, statistic, candidate, reference, settings, "the bootstrap")
    whole_number(resamples, "resamples")
    open_interval(confidence, "confidence", 0, 1)
    checked_seed(seed)
    topics = x.shape[1]
    matrix_reference = positions[1] if reference is not None else None
    observed = chosen.compute(matrix, matrix_reference, settings)
    if reference is not None and np.array_equal(x[candidate], x[reference]):
        # Every registered statistic treats systems alike, so identical rows have identical values
        # on every resample; BLAS kernels may still round two equal rows differently by an ulp.
        return _interval(statistic, 0.0, np.zeros(resamples), confidence, seed)
    estimate = observed[positions[0]] - (observed[positions[1]] if reference is not None else 0.0)

    rng = np.random.default_rng(seed)
    if chosen.from_topic_counts is not None:
        # No sufficient matrix: each resample is the whole matrix, so it is evaluated as topic counts on the
        # original one, a block of resamples per matrix product (GAWM's gawm_resampled).
        distribution = np.empty(resamples)
        block = max(1, _BOOTSTRAP_CHUNK_CELLS // topics)
        for first in range(0, resamples, block):
            counts = _topic_counts(rng.integers(0, topics, size=(min(block, resamples - first), topics)))
            values = chosen.from_topic_counts(matrix, counts, settings)
            differences = values[:, positions[0]]
            if reference is not None:
                differences = differences - values[:, positions[1]]
            distribution[first : first + len(counts)] = differences
        return _interval(statistic, float(estimate), distribution, confidence, seed)
    evaluate = None if chosen.sums is None else chosen.sums.prepare(matrix, positions, matrix_reference, settings, None)
    block = max(1, _BOOTSTRAP_CHUNK_CELLS // (topics if evaluate is not None else matrix.size))
    distribution = np.empty(resamples)
    for first in range(0, resamples, block):
        indices = rng.integers(0, topics, size=(min(block, resamples - first), topics))
        if evaluate is None:
            values = _resampled_values(chosen, matrix, matrix_reference, settings, indices)[:, positions]
        else:
            values = evaluate(_topic_counts(indices).astype(np.float64))
            undecided = np.isnan(values).any(axis=1)
            if undecided.any():  # values the sums cannot give to 1e-12 (TRisk without spread): evaluated exactly
                exactly = _resampled_values(chosen, matrix, matrix_reference, settings, indices[undecided])
                values[undecided] = exactly[:, positions]
        differences = values[:, 0]
        if reference is not None:
            differences = differences - values[:, 1]
        distribution[first : first + len(indices)] = differences

    return _interval(statistic, float(estimate), distribution, confidence, seed)


def _topic_counts(drawn: np.ndarray) -> np.ndarray:
    """How often each topic was drawn in each resample: ``(B, n)`` counts of ``(B, n)`` drawn topic indices."""
    offsets = np.arange(len(drawn))[:, np.newaxis] * drawn.shape[1]
    return np.bincount((offsets + drawn).ravel(), minlength=drawn.size).reshape(drawn.shape)


def _resampled_values(
    chosen: Statistic, matrix: np.ndarray, reference: int | None, settings: AnalysisSettings, indices: np.ndarray
) -> np.ndarray:
    """Every row's value on each resample ``matrix[:, drawn]``, as a stack of resampled matrices (topic
    weights are resampled with their topics, one resample at a time)."""
    if chosen.uses_topic_weights and settings.topic_weights is not None:
        weights = np.asarray(settings.topic_weights, dtype=np.float64)
        return np.stack(
            [
                chosen.compute(matrix[:, drawn], reference, replace(settings, topic_weights=weights[drawn]))
                for drawn in indices
            ]
        )
    return chosen.compute(np.moveaxis(np.take(matrix, indices, axis=1), 0, 1), reference, settings)


def _quantiles(values: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """``numpy.quantile`` (linear interpolation), extended to infinite values such as TRisk's.

    Interpolating towards an infinite order statistic gives that infinity; between ``-inf`` and
    ``+inf`` (no interpolation exists) our reading takes the nearer order statistic.
    """
    with np.errstate(invalid="ignore"):
        quantiles = np.quantile(values, probabilities)
    undefined = np.isnan(quantiles)
    if not undefined.any():
        return quantiles
    ordered = np.sort(values)
    position = probabilities * (values.size - 1)
    below, above = ordered[np.floor(position).astype(int)], ordered[np.ceil(position).astype(int)]
    nearer = np.where(position - np.floor(position) < 0.5, below, above)
    infinite = np.where(np.isinf(below) & np.isinf(above), nearer, np.where(np.isinf(below), below, above))
    return np.where(undefined, infinite, quantiles)


def _interval(
    statistic: str, estimate: float, distribution: np.ndarray, confidence: float, seed: int
) -> BootstrapInterval:
    """Efron's percentile interval of the bootstrap values."""
    tail = (1.0 - confidence) / 2.0
    low, high = _quantiles(distribution, np.array([tail, 1.0 - tail]))
    distribution.flags.writeable = False
    with np.errstate(invalid="ignore"):  # infinite values (TRisk without spread) have no finite mean or spread
        mean, std = float(distribution.mean()), float(distribution.std())
    return BootstrapInterval(
        statistic=statistic,
        estimate=estimate,
        low=float(low),
        high=float(high),
        confidence=float(confidence),
        resamples=distribution.size,
        seed=int(seed),
        mean=mean,
        std=std,
        distribution=distribution,
    )


def topic_bootstrap(
    values_of: Callable[[np.ndarray], np.ndarray],
    topics: int,
    candidate: int,
    reference: int | None,
    statistic: str,
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapInterval:
    """Bootstrap over topics of a statistic whose inputs are not one score per topic.

    docs/mathematics.md §7 with the resampling of :func:`paired_bootstrap` (row ``b`` of
    ``numpy.random.default_rng(seed).integers(0, topics, size=(resamples, topics))``) and the same
    percentile interval; ``values_of(drawn)`` computes every system's value on the topics ``drawn``,
    keeping whatever belongs to a topic together (e.g. all the query variations of a topic, so the
    MVE of Zuccon et al. is resampled topic by topic).

    Parameters
    ----------
    values_of:
        ``values_of(drawn) -> (m,)`` for ``drawn`` an ``(n,)`` array of topic indices.
    topics:
        Number of topics ``n``.
    candidate, reference:
        Rows; with ``reference`` the interval is of ``value[candidate] - value[reference]``.
    statistic:
        The statistic's name, for the result.
    resamples, confidence, seed:
        As for :func:`paired_bootstrap`.

    Returns
    -------
    BootstrapInterval
    """
    open_interval(confidence, "confidence", 0, 1)
    every = np.arange(topics)
    observed = values_of(every)
    estimate = observed[candidate] - (observed[reference] if reference is not None else 0.0)
    draws = np.random.default_rng(seed).integers(0, topics, size=(resamples, topics))
    distribution = np.empty(resamples)
    for b, drawn in enumerate(draws):
        values = values_of(drawn)
        distribution[b] = values[candidate] - (values[reference] if reference is not None else 0.0)
    return _interval(statistic, float(estimate), distribution, confidence, seed)
