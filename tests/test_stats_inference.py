"""Paired inference: t-test vs scipy, randomization test vs exact enumeration, Holm by hand, bootstrap."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from conftest import randomization_test
from scipy import stats as scipy_stats
from test_stats_registry import direct_values, web14

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import (
    AnalysisSettings,
    DifficultyGrouping,
    MeanVarianceSpec,
    RandomGrouping,
    SampledGrouping,
)
from pytest_bvtest.stats import inference
from pytest_bvtest.stats.inference import TestResult, holm, paired_bootstrap, paired_t_test
from pytest_bvtest.stats.registry import STATISTICS

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


def naive_randomization_p_value(candidate: np.ndarray, reference: np.ndarray, permutations: int, seed: int) -> float:
    """The randomization test as it was first written: one reference, ``rng.random(...) < 0.5`` signs,
    one matrix-vector product per block of 4M cells (the block size fixes the order of the draws)."""
    differences = candidate - reference
    topics = differences.size
    threshold = abs(differences.sum()) - 1e-12 * np.abs(differences).sum()
    if topics < 63 and 2**topics <= permutations:
        assignments = np.arange(2**topics)[:, np.newaxis] >> np.arange(topics) & 1
        flipped = differences.sum() - 2.0 * (assignments.astype(np.float64) @ differences)
        return float(np.count_nonzero(np.abs(flipped) >= threshold) / 2**topics)
    rng = np.random.default_rng(seed)
    chunk = max(1, (1 << 22) // topics)
    reaching = 0
    for start in range(0, permutations, chunk):
        negated = rng.random((min(chunk, permutations - start), topics)) < 0.5
        flipped = differences.sum() - 2.0 * (negated.astype(np.float64) @ differences)
        reaching += np.count_nonzero(np.abs(flipped) >= threshold)
    return float((1 + reaching) / (1 + permutations))


@pytest.mark.parametrize(
    ("topics", "permutations", "seed", "grades"),
    [
        (50, 10000, 0, None),
        (50, 10000, 7, 4),
        (700, 3000, 3, 3),
        (6980, 1200, 11, None),
        (9, 1000, 2, 2),
        (12, 5000, 1, None),
    ],
)
def test_batched_randomization_tests_equal_the_naive_reference(topics, permutations, seed, grades) -> None:
    """One sign matrix times the (topics x baselines) differences gives every p-value of the one-by-one loop
    exactly, with graded (heavily tied) scores too; 9 and 12 topics are enumerated exactly."""
    rng = np.random.default_rng(topics + seed)
    scores = rng.random((6, topics)) if grades is None else rng.integers(0, grades + 1, (6, topics)) / grades
    scores[3] = scores[0] + 0.02  # a constant shift: the smallest p-value
    scores[4] = scores[0]  # the candidate itself: p = 1
    candidate, references = scores[0], scores[1:]
    batched = inference.randomization_tests(candidate, references, permutations, seed)
    for reference, result in zip(references, batched):
        expected = naive_randomization_p_value(candidate, reference, permutations, seed)
        assert result.p_value == expected
        assert result == randomization_test(candidate, reference, permutations, seed)
        assert result.statistic == pytest.approx(np.mean(candidate - reference), abs=1e-15)
    # Row-wise pairs (one candidate per row, as for several measures at once) give the same results.
    assert (
        inference.randomization_tests(np.broadcast_to(candidate, references.shape), references, permutations, seed)
        == batched
    )
    swapped = inference.randomization_tests(
        references, np.broadcast_to(candidate, references.shape), permutations, seed
    )
    assert [result.p_value for result in swapped] == [result.p_value for result in batched]


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


# --- paired bootstrap ----------------------------------------------------------------------------

BOOTSTRAP_SETTINGS = {
    "default": AnalysisSettings(),
    "named target system": AnalysisSettings(target_row=6, normalize="max-min"),
    "group target-ratio, random groups": AnalysisSettings(
        normalize="group-target-ratio", grouping=RandomGrouping(4, repeats=6, seed=2)
    ),
    "max-min, c=1": AnalysisSettings(normalize="max-min", target=1.0, risk_alpha=1.0),
    "target-ratio, weighted": AnalysisSettings(
        normalize="target-ratio", topic_weights=np.linspace(0.2, 3.0, 15), mve=MeanVarianceSpec(alpha=1.0)
    ),
    "difficulty groups": AnalysisSettings(grouping=DifficultyGrouping(4), risk_alpha=0.0, gawm_q=2.0),
    "random groups": AnalysisSettings(normalize="max-min", grouping=RandomGrouping(4, repeats=3, seed=2)),
    "difficulty by mean, ZRisk against the target": AnalysisSettings(
        grouping=DifficultyGrouping(4, "mean"), zrisk_against="target"
    ),
    "sampled groups": AnalysisSettings(grouping=SampledGrouping(4, groups=6, repeats=3, seed=2)),
}


def naive_bootstrap(
    scores: np.ndarray,
    name: str,
    candidate: int,
    reference: int | None,
    settings: AnalysisSettings,
    resamples: int,
    seed: int,
) -> np.ndarray:
    """Recompute the statistic with the family functions on the whole resampled matrix, one by one."""
    drawn = np.random.default_rng(seed).integers(0, scores.shape[1], size=(resamples, scores.shape[1]))
    distribution = []
    for topics in drawn:
        weights = None if settings.topic_weights is None else settings.topic_weights[topics]
        values = direct_values(name, scores[:, topics], reference, replace(settings, topic_weights=weights))
        distribution.append(values[candidate] - (values[reference] if reference is not None else 0.0))
    return np.array(distribution)


@pytest.mark.parametrize("setting", list(BOOTSTRAP_SETTINGS))
@pytest.mark.parametrize("name", list(STATISTICS))
def test_bootstrap_equals_a_naive_loop_over_resampled_matrices(name: str, setting: str) -> None:
    rng = np.random.default_rng(9)
    scores = rng.random((7, 15)) ** 2
    scores[:, 3] = 0.4  # a constant topic exercises the normalisation PIN
    settings = BOOTSTRAP_SETTINGS[setting]
    for candidate, reference in ((2, 5), (4, None)) if not STATISTICS[name].needs_reference else ((2, 5),):
        result = paired_bootstrap(scores, name, candidate, reference, settings, resamples=40, seed=3)
        expected = naive_bootstrap(scores, name, candidate, reference, settings, 40, 3)
        np.testing.assert_allclose(result.distribution, expected, rtol=1e-12, atol=1e-12)
        point = direct_values(name, scores, reference, settings)
        assert result.estimate == pytest.approx(
            point[candidate] - (point[reference] if reference is not None else 0.0), abs=1e-12
        )


@pytest.mark.parametrize("name", ["bias2_plus_var", "gap_var", "urisk", "georisk", "zrisk", "mve", "gawm"])
def test_bootstrap_equals_a_naive_loop_on_real_web2014_runs(name: str) -> None:
    names, scores = web14()
    candidate, reference = names.index("uogTrDwl"), names.index("UDInfoWebLES")
    result = paired_bootstrap(scores, name, candidate, reference, resamples=25, seed=11)
    expected = naive_bootstrap(scores, name, candidate, reference, AnalysisSettings(), 25, 11)
    np.testing.assert_allclose(result.distribution, expected, rtol=1e-12, atol=1e-12)


def test_bootstrap_blocks_do_not_change_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    scores = np.random.default_rng(1).random((6, 40))
    whole = paired_bootstrap(scores, "bias2_plus_var", 0, 1, resamples=300, seed=4)
    monkeypatch.setattr(inference, "_BOOTSTRAP_CHUNK_CELLS", 7 * 3 * 40)
    blocked = paired_bootstrap(scores, "bias2_plus_var", 0, 1, resamples=300, seed=4)
    # the same resamples: the same values to rounding (OpenBLAS 0.3.31, numpy 2.4's, sums a product's terms in an
    # order that depends on the block's shape, so the last bit may differ; another stream would differ everywhere)
    np.testing.assert_allclose(whole.distribution, blocked.distribution, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["mean", "bias2_plus_var", "var", "gap_mse", "urisk", "mve"])
def test_bootstrap_interval_contains_the_estimate_of_smooth_statistics(name: str) -> None:
    names, scores = web14()
    candidate, reference = names.index("uogTrDwl"), names.index("Terran")
    result = paired_bootstrap(scores, name, candidate, reference, settings=AnalysisSettings(risk_alpha=1.0))
    assert (result.resamples, result.seed, result.confidence) == (1000, 0, 0.95)
    assert result.low < result.estimate < result.high
    assert result.low <= np.quantile(result.distribution, 0.5) <= result.high
    assert result.mean == pytest.approx(result.distribution.mean()) and result.std > 0


def test_bootstrap_of_the_mean_difference_has_the_textbook_standard_error() -> None:
    names, scores = web14()
    differences = scores[names.index("uogTrDwl")] - scores[names.index("CiirAll1")]
    result = paired_bootstrap(scores, "mean", names.index("uogTrDwl"), names.index("CiirAll1"), resamples=4000, seed=1)
    # The bootstrap standard error of a mean is the population std over sqrt(n) (up to MC noise).
    assert result.std == pytest.approx(differences.std() / np.sqrt(differences.size), rel=0.05)
    assert result.mean == pytest.approx(differences.mean(), abs=0.2 * result.std)


def test_bootstrap_percentile_interval_covers_a_known_mean_difference() -> None:
    rng = np.random.default_rng(20)
    covered = 0
    for _ in range(200):
        reference = rng.random(30)
        candidate = reference + 0.05 + 0.1 * rng.standard_normal(30)
        result = paired_bootstrap(
            np.vstack([candidate, reference]), "mean", 0, 1, resamples=300, seed=int(rng.integers(1000))
        )
        covered += result.low <= 0.05 <= result.high
    # Nominal 95 %; the percentile interval runs a little short at n = 30. Binomial sd here ~1.6 %.
    assert 0.87 <= covered / 200 <= 0.99


def test_bootstrap_is_reproducible_per_seed() -> None:
    names, scores = web14()
    first = paired_bootstrap(scores, "georisk", 0, 1, resamples=200, seed=7)
    again = paired_bootstrap(scores, "georisk", 0, 1, resamples=200, seed=7)
    other = paired_bootstrap(scores, "georisk", 0, 1, resamples=200, seed=8)
    assert first == again and first.seed == 7
    np.testing.assert_array_equal(first.distribution, again.distribution)
    assert (first.low, first.high) != (other.low, other.high)


@pytest.mark.parametrize("name", list(STATISTICS))
def test_identical_candidate_and_reference_give_a_zero_interval(name: str) -> None:
    names, scores = web14()
    twin = np.vstack([scores, scores[names.index("Terran")]])
    result = paired_bootstrap(twin, name, twin.shape[0] - 1, names.index("Terran"), resamples=50)
    assert (result.estimate, result.low, result.high, result.std) == (0.0, 0.0, 0.0, 0.0)
    same_row = paired_bootstrap(scores, name, 3, 3, resamples=50)
    assert (same_row.low, same_row.high) == (0.0, 0.0)


def test_bootstrap_without_reference_is_of_the_candidates_value() -> None:
    names, scores = web14()
    candidate = names.index("uogTrDwl")
    result = paired_bootstrap(scores, "mean", candidate, None, resamples=500, seed=2)
    assert result.estimate == pytest.approx(scores[candidate].mean())
    assert result.low < scores[candidate].mean() < result.high
    assert result.low > 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"statistic": "bias3"}, "unknown statistic"),
        ({"statistic": "urisk", "reference": None}, "reference"),
        ({"confidence": 1.0}, "confidence"),
        ({"resamples": 0}, "resamples"),
        ({"seed": -1}, "seed"),
        ({"reference": 9}, "row indices"),
    ],
)
def test_bootstrap_rejects_bad_arguments(arguments: dict, message: str) -> None:
    scores = np.random.default_rng(0).random((4, 10))
    call = {"statistic": "mean", "candidate": 0, "reference": 1, **arguments}
    with pytest.raises(StatisticError, match=message):
        paired_bootstrap(scores, **call)


def test_wilcoxon_equals_scipy_on_every_branch_scipy_takes():
    """scipy.stats.wilcoxon's defaults choose the exact distribution (no ties or zeros, n <= 50), every sign flip (ties
    or zeros, n <= 13) or the normal approximation with the tie correction (the rest): seeded cases of each, with
    the ties and zeros of per-topic scores."""
    from pytest_bvtest.stats.inference import wilcoxon_signed_rank

    rng = np.random.default_rng(3)
    branches = set()
    for case in range(600):
        n = int(rng.integers(2, 80))
        if case % 3 == 0:
            a, b = rng.normal(size=n), rng.normal(size=n)
        else:  # graded-looking scores: many ties and zeros
            a, b = rng.integers(0, 5, size=n) / 4, rng.integers(0, 5, size=n) / 4
        if not np.any(a != b):
            continue
        expected = scipy_stats.wilcoxon(a, b)
        ours = wilcoxon_signed_rank(a, b)
        assert ours.p_value == pytest.approx(expected.pvalue, abs=1e-12), (case, n)
        assert ours.statistic == pytest.approx(expected.statistic, abs=1e-9)
        tied = len(np.unique(np.abs(a - b)[a != b])) < np.count_nonzero(a != b) or np.any(a == b)
        branches.add("approximation" if n > 50 or (tied and n > 13) else "flips" if tied else "exact")
    assert branches == {"approximation", "flips", "exact"}
    assert wilcoxon_signed_rank(np.ones(5), np.ones(5)).p_value == 1.0
