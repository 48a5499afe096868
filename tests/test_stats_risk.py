"""Risk family (MATH.md section 4): URisk, TRisk, ZRisk, GeoRisk."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.stats.risk import TRisk, trisk, urisk, zrisk_georisk

GOLDEN = 1e-6
EXACT = 1e-12

RUN = [0.30, 0.20, 0.50, 0.40]
BASELINE = [0.25, 0.30, 0.50, 0.10]
# MATH.md writes the ZRisk example as topics x systems; our matrices are systems x topics.
ZRISK_TOPICS_BY_SYSTEMS = np.array([[0.4, 0.3, 0.2], [0.1, 0.2, 0.3], [0.5, 0.5, 0.2], [0.0, 0.0, 0.0]])

unit_scores = st.floats(0.0, 1.0, allow_nan=False, width=64)
# scipy squares the raw differences, so below ~1e-150 it underflows; keep the comparison above that.
scipy_safe_scores = st.one_of(st.just(0.0), st.floats(1e-100, 1.0))
paired_topics = st.integers(2, 30).flatmap(lambda n: arrays(np.float64, (2, n), elements=scipy_safe_scores))
matrices = st.tuples(st.integers(1, 6), st.integers(1, 12)).flatmap(
    lambda shape: arrays(np.float64, shape, elements=unit_scores)
)
property_settings = settings(max_examples=60, deadline=None)


def zrisk_by_the_paper(topics_by_systems: np.ndarray, alpha: float) -> tuple[list[float], list[float]]:
    """Reference written cell by cell from Dincer et al. SIGIR 2016, in the paper's layout."""
    topics, systems = topics_by_systems.shape
    grand_total = topics_by_systems.sum()
    zrisks, georisks = [], []
    for i in range(systems):
        system_total = topics_by_systems[:, i].sum()
        zrisk = 0.0
        for j in range(topics):
            expected = topics_by_systems[j].sum() * system_total / grand_total if grand_total else 0.0
            z = (topics_by_systems[j, i] - expected) / math.sqrt(expected) if expected else 0.0
            zrisk += z if z >= 0 else (1 + alpha) * z
        zrisks.append(zrisk)
        georisks.append(math.sqrt(system_total / topics * scipy.stats.norm.cdf(zrisk / topics)))
    return zrisks, georisks


# --- golden values ---------------------------------------------------------------------------------


def test_urisk_golden() -> None:
    assert urisk(RUN, BASELINE, 1) == pytest.approx(0.0375, abs=GOLDEN)
    assert urisk(RUN, BASELINE, 0) == pytest.approx(np.mean(RUN) - np.mean(BASELINE), abs=EXACT)


def test_trisk_golden() -> None:
    result = trisk(RUN, BASELINE, 1)
    assert result.t == pytest.approx(0.364698, abs=GOLDEN)
    assert result.p == pytest.approx(2 * scipy.stats.t.sf(0.3646984043, 3), abs=GOLDEN)


def test_zrisk_georisk_golden() -> None:
    result = zrisk_georisk(ZRISK_TOPICS_BY_SYSTEMS.T, 1)
    np.testing.assert_allclose(result.zrisk, [-0.319742, -0.126418, -0.170189], atol=GOLDEN)
    np.testing.assert_allclose(result.georisk, [0.342105, 0.349068, 0.290741], atol=GOLDEN)


def test_zero_topic_counts_in_c() -> None:
    without_zero_topic = zrisk_georisk(ZRISK_TOPICS_BY_SYSTEMS[:3].T, 1)
    with_zero_topic = zrisk_georisk(ZRISK_TOPICS_BY_SYSTEMS.T, 1)
    # The all-zero topic adds z = 0 everywhere, so ZRisk is unchanged; only c (3 -> 4) moves GeoRisk.
    np.testing.assert_allclose(with_zero_topic.zrisk, without_zero_topic.zrisk, atol=EXACT)
    assert not np.allclose(with_zero_topic.georisk, without_zero_topic.georisk)


# --- agreement with independent computations -------------------------------------------------------


@property_settings
@example(np.array([[7.45216775e-39, 0.0], [0.0, 0.0]]))  # a tiny but real spread is not "s = 0"
@given(paired_topics)
def test_trisk_at_alpha_zero_is_the_paired_t_test(pair: np.ndarray) -> None:
    run, baseline = pair
    result = trisk(run, baseline, 0)
    difference = run - baseline
    # PIN s = 0 (our reading: zero up to 8 ulps of the largest |delta|), where scipy has no finite answer.
    if difference.std(ddof=1) <= 8 * np.finfo(float).eps * np.abs(difference).max():
        mean = difference.mean()
        assert result == (TRisk(0.0, 1.0) if mean == 0 else TRisk(math.copysign(math.inf, mean), 0.0))
        return
    reference = scipy.stats.ttest_rel(run, baseline)
    assert result.t == pytest.approx(reference.statistic, rel=1e-9, abs=EXACT)
    assert result.p == pytest.approx(reference.pvalue, rel=1e-9, abs=EXACT)


@property_settings
@given(paired_topics, st.floats(0.0, 10.0))
def test_urisk_is_linear_in_alpha(pair: np.ndarray, alpha: float) -> None:
    run, baseline = pair
    losses = np.minimum(run - baseline, 0).mean()
    assert urisk(run, baseline, alpha) == pytest.approx(urisk(run, baseline, 0) + alpha * losses, abs=EXACT)
    assert urisk(run, baseline, 0) == pytest.approx(run.mean() - baseline.mean(), abs=EXACT)


@property_settings
@given(matrices, st.floats(0.0, 5.0))
def test_zrisk_georisk_matches_the_paper_cell_by_cell(scores: np.ndarray, alpha: float) -> None:
    result = zrisk_georisk(scores, alpha)
    zrisks, georisks = zrisk_by_the_paper(scores.T, alpha)
    np.testing.assert_allclose(result.zrisk, zrisks, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(result.georisk, georisks, rtol=1e-9, atol=1e-9)


# --- invariances -----------------------------------------------------------------------------------


@property_settings
@given(matrices, st.randoms(use_true_random=False), st.floats(0.0, 5.0))
def test_permutations(scores: np.ndarray, random, alpha: float) -> None:
    topics = list(range(scores.shape[1]))
    systems = list(range(scores.shape[0]))
    random.shuffle(topics)
    random.shuffle(systems)
    original = zrisk_georisk(scores, alpha)
    topic_shuffled = zrisk_georisk(scores[:, topics], alpha)
    system_shuffled = zrisk_georisk(scores[systems], alpha)
    np.testing.assert_allclose(topic_shuffled.zrisk, original.zrisk, atol=1e-9)
    np.testing.assert_allclose(topic_shuffled.georisk, original.georisk, atol=1e-9)
    np.testing.assert_allclose(system_shuffled.zrisk, original.zrisk[systems], atol=1e-9)
    np.testing.assert_allclose(system_shuffled.georisk, original.georisk[systems], atol=1e-9)
    run, baseline = scores[0], scores[-1]
    assert urisk(run[topics], baseline[topics], alpha) == pytest.approx(urisk(run, baseline, alpha), abs=EXACT)
    if scores.shape[1] >= 2:
        assert trisk(run[topics], baseline[topics], alpha).t == pytest.approx(
            trisk(run, baseline, alpha).t, rel=1e-9, abs=1e-9
        )


def test_risk_broadcasts_over_systems_and_resamples() -> None:
    rng = np.random.default_rng(3)
    runs = rng.random((2, 5, 20))
    baseline = rng.random(20)
    stacked_u = urisk(runs, baseline, 2)
    stacked_t = trisk(runs, baseline, 2)
    stacked_z = zrisk_georisk(runs, 2)
    assert stacked_u.shape == stacked_t.t.shape == stacked_z.zrisk.shape == (2, 5)
    for resample in range(2):
        per_matrix = zrisk_georisk(runs[resample], 2)
        np.testing.assert_allclose(stacked_z.georisk[resample], per_matrix.georisk, atol=EXACT)
        for system in range(5):
            assert stacked_u[resample, system] == pytest.approx(urisk(runs[resample, system], baseline, 2), abs=EXACT)
            single = trisk(runs[resample, system], baseline, 2)
            assert stacked_t.t[resample, system] == pytest.approx(single.t, abs=EXACT)
            assert stacked_t.p[resample, system] == pytest.approx(single.p, abs=EXACT)


# --- edge cases ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("error")
def test_no_spread_gives_infinite_trisk_with_urisk_sign_and_zero_only_when_urisk_is_zero() -> None:
    # MATH.md section 4 (revised): the same change on every topic is certain, so TRisk is +/-inf, p = 0.
    baseline = np.random.default_rng(0).random(10)
    assert trisk(baseline, baseline, 1) == TRisk(0.0, 1.0)
    # A constant shift leaves a few ulps of spread after rounding; the PIN s = 0 still applies.
    assert trisk(baseline + 0.1, baseline, 1) == TRisk(math.inf, 0.0)
    assert urisk(baseline + 0.1, baseline, 1) == pytest.approx(0.1, abs=EXACT)
    # Regression (issue 10): a candidate 0.05 worse on every topic had TRisk 0 and passed `trisk min: -2`.
    assert trisk(baseline - 0.05, baseline, 5) == TRisk(-math.inf, 0.0)
    stacked = trisk(np.stack([baseline - 0.05, baseline, baseline + 0.05]), baseline, 0)
    np.testing.assert_array_equal(stacked.t, [-math.inf, 0.0, math.inf])
    np.testing.assert_array_equal(stacked.p, [0.0, 1.0, 0.0])


def test_trisk_is_scale_free_down_to_tiny_differences() -> None:
    # delta = [a, 0, 0, 0]: mean a/4, s = a/2, so TRisk = (a/4) / (a/4) = 1 for every a > 0.
    for a in (0.5, 1e-161, 5e-324):
        assert trisk([a, 0.0, 0.0, 0.0], np.zeros(4), 0).t == pytest.approx(1.0, abs=EXACT)


def test_one_topic() -> None:
    assert urisk([0.2], [0.5], 1) == pytest.approx(-0.6, abs=EXACT)
    with pytest.raises(StatisticError, match="at least 2 topics"):
        trisk([0.2], [0.5], 1)
    result = zrisk_georisk(np.array([[0.2], [0.5]]), 1)
    np.testing.assert_allclose(result.zrisk, 0.0, atol=EXACT)  # e = x whenever there is one topic


@pytest.mark.filterwarnings("error")
def test_zero_systems_and_matrices() -> None:
    scores = np.array([[0.0, 0.0, 0.0], [0.4, 0.1, 0.0], [0.2, 0.3, 0.0]])
    result = zrisk_georisk(scores, 1)
    assert result.zrisk[0] == 0 and result.georisk[0] == 0
    assert np.isfinite(result.zrisk).all() and np.isfinite(result.georisk).all()
    all_zero = zrisk_georisk(np.zeros((3, 4)), 1)
    np.testing.assert_array_equal(all_zero.zrisk, 0.0)
    np.testing.assert_array_equal(all_zero.georisk, 0.0)
    t = trisk(np.zeros(4), np.zeros(4), 1)
    assert t == TRisk(0.0, 1.0)


def test_one_and_two_systems() -> None:
    one = zrisk_georisk(np.array([[0.2, 0.6, 0.1]]), 1)
    assert one.zrisk[0] == pytest.approx(0.0, abs=EXACT)
    assert one.georisk[0] == pytest.approx(math.sqrt(0.3 * 0.5), abs=EXACT)
    two = zrisk_georisk(np.array([[0.2, 0.6, 0.1], [0.4, 0.6, 0.3]]), 1)
    zrisks, georisks = zrisk_by_the_paper(np.array([[0.2, 0.6, 0.1], [0.4, 0.6, 0.3]]).T, 1)
    np.testing.assert_allclose(two.zrisk, zrisks, atol=EXACT)
    np.testing.assert_allclose(two.georisk, georisks, atol=EXACT)


def test_identical_systems_have_zero_zrisk() -> None:
    result = zrisk_georisk(np.tile([0.1, 0.5, 0.3, 0.0], (3, 1)), 4)
    np.testing.assert_allclose(result.zrisk, 0.0, atol=EXACT)
    np.testing.assert_allclose(result.georisk, math.sqrt(0.225 * 0.5), atol=EXACT)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: zrisk_georisk(np.array([[-0.5, 0.2], [0.1, 0.2]]), 1), "negative scores"),
        (lambda: urisk(RUN, BASELINE, -1), "alpha"),
        (lambda: trisk(RUN, BASELINE, math.nan), "alpha"),
        (lambda: urisk([0.1, math.nan], [0.1, 0.2], 1), "NaN"),
        (lambda: zrisk_georisk(np.array([0.1, 0.2]), 1), "systems x topics"),
    ],
)
def test_bad_input_raises_statistic_error(call, message: str) -> None:
    with pytest.raises(StatisticError, match=message):
        call()


def test_zrisk_against_the_target_alone_is_the_paper_on_each_system_beside_the_target() -> None:
    from pytest_bvtest.stats.risk import zrisk_georisk_against_target

    systems_by_topics = ZRISK_TOPICS_BY_SYSTEMS.T
    target = systems_by_topics.max(axis=0)
    for alpha in (0.0, 1.0):
        result = zrisk_georisk_against_target(systems_by_topics, alpha)
        for i, row in enumerate(systems_by_topics):
            zrisks, georisks = zrisk_by_the_paper(np.column_stack([row, target]), alpha)
            assert result.zrisk[i] == pytest.approx(zrisks[0], abs=EXACT)
            assert result.georisk[i] == pytest.approx(georisks[0], abs=EXACT)
    # the target itself would score z = 0 everywhere: a system equal to the target has ZRisk 0
    best = np.vstack([systems_by_topics, target])
    assert zrisk_georisk_against_target(best, 1.0).zrisk[-1] == pytest.approx(0.0, abs=EXACT)
