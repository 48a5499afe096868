"""Paired inference: t-test vs scipy, randomization test vs exact enumeration, Holm by hand, bootstrap."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.stats.inference import TestResult, holm, paired_t_test, randomization_test
from conftest import shared_path


def wide_matrix(*parts: str) -> tuple[list[str], np.ndarray]:
    """Run names and the systems x topics scores of a NewBestSub-style wide CSV."""
    path = shared_path(*parts)
    names = [line.split(",", 1)[0] for line in path.read_text().splitlines()[1:]]
    scores = np.genfromtxt(path, delimiter=",", skip_header=1)[:, 1:]
    return names, scores


def web14() -> tuple[list[str], np.ndarray]:
    return wide_matrix("newbestsub_named_matrices", "WEB14GD.csv")


# --- paired t-test -------------------------------------------------------------------------------


def test_paired_t_test_matches_scipy_on_real_web2014_runs() -> None:
    names, scores = web14()
    best, other = names.index("uogTrDwl"), names.index("CiirAll1")
    result = paired_t_test(scores[best], scores[other])
    expected = scipy_stats.ttest_rel(scores[best], scores[other])
    assert result.statistic == pytest.approx(expected.statistic, rel=1e-12)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-10)


def test_paired_t_test_matches_scipy_on_every_pair_direction() -> None:
    rng = np.random.default_rng(7)
    candidate, reference = rng.random(30), rng.random(30)
    forward, backward = paired_t_test(candidate, reference), paired_t_test(reference, candidate)
    expected = scipy_stats.ttest_rel(candidate, reference)
    assert forward.statistic == pytest.approx(expected.statistic, rel=1e-12)
    assert backward.statistic == pytest.approx(-expected.statistic, rel=1e-12)
    assert forward.p_value == pytest.approx(backward.p_value, rel=1e-12)


def test_paired_t_test_identical_inputs_give_zero_and_one_not_nan() -> None:
    scores = np.array([0.1, 0.5, 0.3])
    assert paired_t_test(scores, scores.copy()) == TestResult(0.0, 1.0)


def test_paired_t_test_constant_shift_is_infinitely_significant() -> None:
    scores = np.array([0.1, 0.5, 0.3])
    result = paired_t_test(scores - 0.25, scores - 0.5)
    assert result.statistic == np.inf and result.p_value == 0.0


@pytest.mark.parametrize(
    ("candidate", "reference"),
    [([0.2], [0.1]), ([0.1, 0.2], [0.1, 0.2, 0.3]), ([0.1, np.nan], [0.1, 0.2])],
)
def test_paired_t_test_rejects_too_few_misaligned_or_nan(candidate: list, reference: list) -> None:
    with pytest.raises(StatisticError):
        paired_t_test(np.array(candidate), np.array(reference))


# --- randomization test --------------------------------------------------------------------------


def enumerated_p_value(differences: np.ndarray) -> float:
    """Share of the 2^n sign assignments whose |sum| reaches the observed |sum| (exact ties)."""
    observed = abs(sum(differences))
    reaching = 0
    for signs in itertools.product((1, -1), repeat=len(differences)):
        reaching += abs(sum(sign * value for sign, value in zip(signs, differences))) >= observed
    return reaching / 2 ** len(differences)


def test_randomization_exact_enumeration_for_eight_topics() -> None:
    # Dyadic values (multiples of 1/64) make every sum exact, so ties are exact in both computations.
    candidate = np.array([40, 20, 33, 51, 12, 60, 27, 45]) / 64
    reference = np.array([30, 25, 30, 40, 14, 48, 27, 36]) / 64
    expected = enumerated_p_value(list(candidate - reference))
    result = randomization_test(candidate, reference, permutations=256)
    assert result.p_value == expected
    # By hand, in 64ths: d = [10, -5, 3, 11, -2, 12, 0, 9], sum 38. Over the seven non-zero |d|
    # (total 52), negating a subset of sum S gives |52 - 2S| >= 38 iff S <= 7 or S >= 45: the
    # subsets {}, {5}, {3}, {2}, {5,2}, {3,2} and their complements, 12 of 128; the zero doubles both.
    assert expected == 24 / 256
    assert result.statistic == pytest.approx(np.mean(candidate - reference))


def test_randomization_exact_enumeration_on_real_scores_with_ties() -> None:
    names, scores = web14()
    candidate, reference = scores[names.index("uogTrDwl"), :8], scores[names.index("uogTrDuax"), :8]
    differences = candidate - reference
    observed = abs(differences.sum())
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=8)))
    expected = np.mean(np.abs(flips @ differences) >= observed - 1e-12)
    assert randomization_test(candidate, reference).p_value == pytest.approx(expected, abs=0)


def test_randomization_monte_carlo_approaches_exact_and_is_seeded() -> None:
    rng = np.random.default_rng(3)
    candidate = rng.random(12)
    reference = candidate - 0.08 + 0.2 * rng.standard_normal(12)
    exact = randomization_test(candidate, reference, permutations=4096).p_value
    sampled = randomization_test(candidate, reference, permutations=2000, seed=5)
    assert sampled == randomization_test(candidate, reference, permutations=2000, seed=5)
    assert sampled != randomization_test(candidate, reference, permutations=2000, seed=6)
    # 2000 draws: the standard error of a p near 0.3 is about 0.01; 0.04 is four of them.
    assert abs(sampled.p_value - exact) < 0.04


def test_randomization_monte_carlo_p_value_is_never_zero_and_has_the_plus_one_correction() -> None:
    candidate = np.linspace(0.5, 0.9, 40)
    reference = candidate - 0.3
    assert randomization_test(candidate, reference, permutations=999).p_value == pytest.approx(1 / 1000)


def test_randomization_agrees_with_scipy_permutation_test_on_real_runs() -> None:
    names, scores = web14()
    candidate, reference = scores[names.index("UDInfoWebLES")], scores[names.index("Terran")]
    ours = randomization_test(candidate, reference, permutations=20000, seed=1).p_value
    theirs = scipy_stats.permutation_test(
        (candidate - reference,), np.mean, permutation_type="samples", n_resamples=20000, random_state=1
    ).pvalue
    assert abs(ours - theirs) < 0.015


def test_randomization_identical_inputs_give_p_one() -> None:
    scores = np.random.default_rng(0).random(40)
    assert randomization_test(scores, scores.copy()) == TestResult(0.0, 1.0)


# --- Holm ----------------------------------------------------------------------------------------


def test_holm_by_hand() -> None:
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06
    adjusted = holm(np.array([0.01, 0.04, 0.03, 0.005]))
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02], rtol=1e-12)


def test_holm_caps_at_one_and_keeps_ties() -> None:
    np.testing.assert_allclose(holm(np.array([0.3, 0.3, 0.9])), [0.9, 0.9, 0.9])
    np.testing.assert_allclose(holm(np.array([0.5, 0.6])), [1.0, 1.0])
    assert holm(np.array([])).size == 0


def test_holm_properties_on_random_p_values() -> None:
    rng = np.random.default_rng(11)
    raw = rng.random(25) ** 3
    adjusted = holm(raw)
    order = np.argsort(raw)
    assert (adjusted >= raw).all() and (adjusted <= 1).all()
    assert (np.diff(adjusted[order]) >= 0).all()
    assert adjusted.min() == pytest.approx(raw.min() * raw.size)
    # Holm never adjusts more than Bonferroni.
    assert (adjusted <= np.minimum(1, raw * raw.size) + 1e-15).all()


@pytest.mark.parametrize("bad", [[0.1, 1.2], [0.1, -0.1], [np.nan], [[0.1]]])
def test_holm_rejects_invalid_p_values(bad: list) -> None:
    with pytest.raises(StatisticError):
        holm(np.array(bad))
