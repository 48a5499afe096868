"""Paired comparisons on the mean: the candidate against each baseline (t-test and randomization test, Holm-corrected),
and every system against every other (t-test, Wilcoxon, randomization; the correction the spec or ``bvtest compare``
chooses)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from pytest_bvtest.errors import InputError
from pytest_bvtest.scoring.matrix import ScoreMatrix
from pytest_bvtest.spec.measures import parse_measure
from pytest_bvtest.spec.model import COMPARISON_TESTS, CompareSpec
from pytest_bvtest.stats.inference import (
    CORRECTIONS,
    RandomizationTests,
    TestResult,
    holm,
    paired_t_test,
    wilcoxon_signed_rank,
)
from pytest_bvtest.stats.swaps import read_swaps


@dataclass(frozen=True)
class Comparison:
    """The candidate against one baseline on the mean: paired tests over topics, Holm-corrected
    across the candidate's baselines, with win/tie/loss counts (PyTerrier's and ranx's habits)."""

    baseline: str
    difference: float
    wins: int
    ties: int
    losses: int
    t: float
    p_t: float
    p_t_holm: float
    p_randomization: float
    p_randomization_holm: float
    permutations: int
    seed: int


#: Sign flips of the randomization test (ranx uses 1,000; more resolves small p-values better).
RANDOMIZATION_PERMUTATIONS = 10_000


Pairs = list[tuple[ScoreMatrix, int, list[int]]]


def _pairs(matrices: Sequence[ScoreMatrix], candidate: str) -> Pairs:
    """Per matrix, the candidate's row and the rows it is compared with (none below 2 topics)."""
    pairs = []
    for matrix in matrices:
        index = matrix.index(candidate)
        others = [i for i in range(len(matrix.systems)) if i != index] if len(matrix.topics) >= 2 else []
        pairs.append((matrix, index, others))
    return pairs


def comparison_tests(matrices: Sequence[ScoreMatrix], candidate: str, seed: int) -> RandomizationTests | None:
    """The randomization tests of every measure and baseline, as one reader of the evaluation's swaps
    (:func:`~pytest_bvtest.stats.swaps.read_swaps`, with the gates' nulls); ``None`` when nothing is compared."""
    pairs = _pairs(matrices, candidate)
    flat = [(matrix.scores[index], matrix.scores[i]) for matrix, index, others in pairs for i in others]
    if not flat:
        return None
    return RandomizationTests(
        np.array([ours for ours, _ in flat]).reshape(len(flat), -1),
        np.array([theirs for _, theirs in flat]).reshape(len(flat), -1),
        RANDOMIZATION_PERMUTATIONS,
        seed,
    )


def compare_with_baselines(
    matrices: Sequence[ScoreMatrix], candidate: str, seed: int, tests: RandomizationTests | None = None
) -> list[tuple[Comparison, ...]]:
    """Paired t-test and randomization test of the candidate's mean against every other system, per matrix.

    The randomization tests of every measure and baseline share one pass over the sign assignments
    (:func:`comparison_tests`, given as ``tests`` once read with the gates' nulls, else drawn here); each p-value
    is the one a test of that pair alone gives.
    """
    pairs = _pairs(matrices, candidate)
    if tests is None:
        tests = comparison_tests(matrices, candidate, seed)
        if tests is not None:
            read_swaps([tests])
    randomized = iter(tests.results() if tests is not None else ())
    return [
        _comparisons(matrix, index, others, [next(randomized) for _ in others], seed) for matrix, index, others in pairs
    ]


def _comparisons(
    matrix: ScoreMatrix, index: int, others: Sequence[int], randomized: Sequence[TestResult], seed: int
) -> tuple[Comparison, ...]:
    if not others:
        return ()
    ours = matrix.scores[index]
    tests = [(paired_t_test(ours, matrix.scores[i]), randomization) for i, randomization in zip(others, randomized)]
    p_t_holm = holm(np.array([t.p_value for t, _ in tests]))
    p_randomization_holm = holm(np.array([r.p_value for _, r in tests]))
    comparisons = []
    for k, (i, (t_test, randomization)) in enumerate(zip(others, tests)):
        difference = ours - matrix.scores[i]
        comparisons.append(
            Comparison(
                baseline=matrix.systems[i],
                difference=float(difference.mean()),
                wins=int(np.count_nonzero(difference > 0)),
                ties=int(np.count_nonzero(difference == 0)),
                losses=int(np.count_nonzero(difference < 0)),
                t=float(t_test.statistic),
                p_t=float(t_test.p_value),
                p_t_holm=float(p_t_holm[k]),
                p_randomization=float(randomization.p_value),
                p_randomization_holm=float(p_randomization_holm[k]),
                permutations=RANDOMIZATION_PERMUTATIONS,
                seed=seed,
            )
        )
    return tuple(comparisons)


@dataclass(frozen=True)
class PairComparison:
    """Two systems on one measure: ``first`` minus ``second`` on the mean over topics, the topics ``first`` wins,
    ties and loses, and per paired test its two-sided p-value (``p``) and the p-value corrected over every pair of the
    measure (``adjusted``), by test name (:data:`~pytest_bvtest.spec.model.COMPARISON_TESTS`)."""

    first: str
    second: str
    difference: float
    wins: int
    ties: int
    losses: int
    p: Mapping[str, float]
    adjusted: Mapping[str, float]


@dataclass(frozen=True)
class PairwiseComparisons:
    """Every system against every other on one measure (ranx's comparison table): ``means`` the systems' values over
    topics (GMAP's: exp of the mean log AP), ``pairs`` in the order of ``systems`` (the first against each later one,
    then the second, ...), each corrected by ``correction`` over the measure's pairs; ``test`` is the one whose
    adjusted p-value marks a difference at level ``alpha``. Differences and tests read the per-topic scores."""

    measure: str
    systems: tuple[str, ...]
    means: tuple[float, ...]
    test: str
    correction: str
    alpha: float
    permutations: int
    seed: int
    pairs: tuple[PairComparison, ...]

    def pair(self, first: str, second: str) -> PairComparison:
        """The comparison of two systems, in either order (oriented ``first`` minus ``second``)."""
        for pair in self.pairs:
            if (pair.first, pair.second) == (first, second):
                return pair
            if (pair.second, pair.first) == (first, second):
                return PairComparison(
                    first,
                    second,
                    -pair.difference,
                    pair.losses,
                    pair.ties,
                    pair.wins,
                    pair.p,
                    pair.adjusted,
                )
        raise KeyError(f"no comparison of {first!r} with {second!r} on {self.measure}")

    def significant(self, pair: PairComparison) -> bool:
        """Whether the chosen test, corrected, finds the pair's difference at level ``alpha``."""
        return pair.adjusted[self.test] <= self.alpha


def _compared(matrices: Sequence[ScoreMatrix]) -> list[tuple[ScoreMatrix, list[tuple[int, int]]]]:
    """Per matrix, its pairs of systems (none below 2 systems or 2 topics)."""
    return [
        (matrix, list(combinations(range(len(matrix.systems)), 2)) if len(matrix.topics) >= 2 else [])
        for matrix in matrices
    ]


def pairwise_tests(
    matrices: Sequence[ScoreMatrix], permutations: int = RANDOMIZATION_PERMUTATIONS, seed: int = 0
) -> RandomizationTests | None:
    """The randomization tests of every pair of systems of every matrix, as one reader of the evaluation's swaps
    (:func:`~pytest_bvtest.stats.swaps.read_swaps`); ``None`` when nothing is compared."""
    flat = [(matrix.scores[i], matrix.scores[j]) for matrix, pairs in _compared(matrices) for i, j in pairs]
    if not flat:
        return None
    return RandomizationTests(
        np.array([ours for ours, _ in flat]), np.array([theirs for _, theirs in flat]), permutations, seed
    )


def _summary(measure: str, row: np.ndarray) -> float:
    """A system's value of ``measure`` over topics as the table shows it: its mean, GMAP's exp of its mean log AP (a
    table's free label: the mean)."""
    try:
        return parse_measure(measure).aggregate(row)
    except InputError:
        return float(row.mean())


def pairwise_comparisons(
    matrices: Sequence[ScoreMatrix],
    settings: CompareSpec,
    *,
    permutations: int = RANDOMIZATION_PERMUTATIONS,
    seed: int = 0,
    tests: RandomizationTests | None = None,
) -> list[PairwiseComparisons]:
    """Every system against every other on each matrix: the paired t-test, Wilcoxon's signed-rank test and the
    randomization test of the mean difference (``permutations`` sign flips, seeded; every flip when ``2**n`` is no
    more), each corrected over the pairs of its measure by ``settings.correction`` (one family per measure and test,
    as ranx and PyTerrier read a table). A matrix of fewer than 2 systems or 2 topics compares nothing.

    The randomization tests are :func:`pairwise_tests`, given as ``tests`` once read with the gates' nulls, else
    drawn here."""
    compared = _compared(matrices)
    if tests is None:
        tests = pairwise_tests(matrices, permutations, seed)
        if tests is not None:
            read_swaps([tests])
    randomized = list(tests.results()) if tests is not None else []
    drawn = iter(randomized)
    correct = CORRECTIONS[settings.correction]
    tables = []
    for matrix, pairs in compared:
        raw: dict[str, list[float]] = {name: [] for name in COMPARISON_TESTS}
        for i, j in pairs:
            ours, theirs = matrix.scores[i], matrix.scores[j]
            raw["t"].append(paired_t_test(ours, theirs).p_value)
            raw["wilcoxon"].append(wilcoxon_signed_rank(ours, theirs).p_value)
            raw["randomization"].append(next(drawn).p_value)
        adjusted = {name: correct(np.array(values)) if values else np.zeros(0) for name, values in raw.items()}
        comparisons = []
        for k, (i, j) in enumerate(pairs):
            difference = matrix.scores[i] - matrix.scores[j]
            comparisons.append(
                PairComparison(
                    matrix.systems[i],
                    matrix.systems[j],
                    float(difference.mean()),
                    int(np.count_nonzero(difference > 0)),
                    int(np.count_nonzero(difference == 0)),
                    int(np.count_nonzero(difference < 0)),
                    {name: float(raw[name][k]) for name in COMPARISON_TESTS},
                    {name: float(adjusted[name][k]) for name in COMPARISON_TESTS},
                )
            )
        tables.append(
            PairwiseComparisons(
                matrix.measure,
                matrix.systems,
                tuple(_summary(matrix.measure, row) for row in matrix.scores),
                settings.test,
                settings.correction,
                settings.alpha,
                permutations,
                seed,
                tuple(comparisons),
            )
        )
    return tables
