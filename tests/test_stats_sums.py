"""Swap nulls from sums over topics (pytest_bvtest/stats/sums.py) against the per-swap loop of tests/oracles.py.

Every statistic of the catalogue under every setting the registry tests use: the null computed from sums (or,
where a form does not apply, from stacks of swapped matrices) equals the statistic recomputed on each swapped
matrix, to 1e-12. The bootstrap's sums are held to the naive loop in test_stats_inference.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracles import swapped_null_loop
from test_stats_registry import SETTINGS, web14

from pytest_bvtest.stats.calibration import null_of_own_value, swap_null
from pytest_bvtest.stats.registry import STATISTICS, AnalysisSettings


def loop_null(
    scores: np.ndarray, name: str, candidate: int, reference: int, swaps: int, seed: int, settings: AnalysisSettings
) -> np.ndarray:
    """The oracle's null in swap order, with the swaps ``swap_null`` documents."""
    swapped = np.random.default_rng(seed).random((swaps, scores.shape[1])) < 0.5
    compute = lambda x: STATISTICS[name].compute(x, reference, settings)  # noqa: E731
    return swapped_null_loop(scores, compute, candidate, reference, swapped, null_of_own_value(name))


def awkward_scores() -> np.ndarray:
    """Seeded scores with a constant topic (the normalisation PIN), an all-zero topic (ZRisk's e = 0) and ties."""
    scores = np.random.default_rng(9).random((7, 23)) ** 2
    scores[:, 3] = 0.4
    scores[:, 8] = 0.0
    scores[2, 11] = scores[5, 11]
    return scores


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("name", list(STATISTICS))
def test_swap_null_equals_the_per_swap_loop_under_every_setting(name: str, setting: str) -> None:
    scores = awkward_scores()
    settings = SETTINGS[setting]
    # (1, 4): the named target system of one setting is row 1, so its swaps move the target too
    for candidate, reference in ((2, 5), (1, 4)):
        null = swap_null(scores, name, candidate, reference, settings, swaps=60, seed=7)
        expected = loop_null(scores, name, candidate, reference, 60, 7, settings)
        np.testing.assert_allclose(null.by_swap, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", [name for name in STATISTICS if STATISTICS[name].sums is not None])
def test_swap_null_equals_the_per_swap_loop_on_real_runs_with_many_swaps(name: str) -> None:
    # 2,000 swaps: ZRisk's and GeoRisk's shortfalls are decided in many groups of 64 draws sorted by k
    names, scores = web14()
    candidate, reference = names.index("uogTrDwl"), names.index("CiirAll1")
    settings = AnalysisSettings(risk_alpha=5.0)
    null = swap_null(scores, name, candidate, reference, settings, swaps=2000, seed=13)
    expected = loop_null(scores, name, candidate, reference, 2000, 13, settings)
    np.testing.assert_allclose(null.by_swap, expected, rtol=1e-12, atol=1e-12)


def test_trisk_without_spread_on_some_swaps_is_infinite_as_its_pin_says() -> None:
    # the candidate is the reference plus 0.1 on every topic: with alpha 0 the deltas of a swap are +/-0.1, and
    # the swaps that exchange no topic or every topic have no spread (TRisk +/-inf); 2**10 swaps enumerate both
    reference = np.linspace(0.1, 0.8, 10)
    scores = np.vstack([reference + 0.1, reference, reference[::-1]])
    settings = AnalysisSettings(risk_alpha=0.0)
    null = swap_null(scores, "trisk", 0, 1, settings)
    assert null.exact and np.isinf(null.values).sum() == 2
    assert null.values[0] == -np.inf and null.values[-1] == np.inf
    every = np.arange(2**10)[:, np.newaxis] >> np.arange(10) & 1
    compute = lambda x: STATISTICS["trisk"].compute(x, 1, settings)  # noqa: E731
    expected = swapped_null_loop(scores, compute, 0, 1, every.astype(bool), own_value=True)
    np.testing.assert_allclose(null.by_swap, expected, rtol=1e-12, atol=1e-12)


def test_identical_candidate_and_reference_give_exact_zeros_from_sums() -> None:
    scores = awkward_scores()
    scores[4] = scores[2]
    for name in ("mean", "var", "bias2_plus_var", "gap_mse", "urisk", "trisk", "mve"):
        null = swap_null(scores, name, 2, 4, swaps=100, seed=1)
        assert null.own_value or np.array_equal(null.values, np.zeros(100)), name
        if null.own_value:
            assert np.array_equal(null.values, np.full(100, null.values[0])), name
