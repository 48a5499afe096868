"""The candidate against each baseline on the mean: paired t-test and randomization test, Holm-corrected."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_bvtest.scoring.matrix import ScoreMatrix
from pytest_bvtest.stats.inference import RandomizationTests, TestResult, holm, paired_t_test
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
