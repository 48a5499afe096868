"""Naive reference implementations the tests compare the vectorised statistics against.

Written the plainest way (numpy's own ``array_split``, a Python loop), independent of the package's code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def difficulty_groups(target: np.ndarray, size: int) -> list[np.ndarray]:
    """Topic indices of each difficulty group, hardest first (docs/mathematics.md §3b PIN).

    Topics sorted by the target ascending (stable), cut into ``ceil(n / size)`` groups whose sizes differ by
    at most one, larger groups first: exactly what ``numpy.array_split`` does.
    """
    order = np.argsort(target, kind="stable")
    return np.array_split(order, -(-len(order) // size))


def group_means(scores: np.ndarray, groups: Sequence[np.ndarray]) -> np.ndarray:
    """Each row's mean over each group of topics, shape ``(..., number of groups)``."""
    return np.stack([np.asarray(scores)[..., group].mean(axis=-1) for group in groups], axis=-1)


def swapped_null_loop(
    scores: np.ndarray,
    compute: Callable[[np.ndarray], np.ndarray],
    candidate: int,
    reference: int,
    swapped: np.ndarray,
    own_value: bool,
) -> np.ndarray:
    """The swap null the plain way, in swap order: for each row of ``swapped`` (True swaps that topic), the whole
    matrix with the candidate's and the reference's scores exchanged there, and the statistic computed on it.

    ``compute(matrix)`` gives every system's value; the null value is the candidate's own (``own_value``) or its
    difference with the reference's.
    """
    values = []
    for row in swapped:
        x = scores.copy()
        x[candidate] = np.where(row, scores[reference], scores[candidate])
        x[reference] = np.where(row, scores[candidate], scores[reference])
        computed = compute(x)
        values.append(computed[candidate] if own_value else computed[candidate] - computed[reference])
    return np.array(values)


def trec_eval_measure(label: str, relevance_level: int = 1):
    """The measure behind a trec_eval output label made with ``trec_eval -l relevance_level`` (``map`` from
    ``-l 2`` is ``AP(rel=2)``): the label parsed, with the level as ``rel`` of a binary measure."""
    from dataclasses import replace

    from pytest_bvtest.spec.measures import parse_measure

    measure = parse_measure(label)
    return measure if measure.rel is None else replace(measure, rel=relevance_level)
