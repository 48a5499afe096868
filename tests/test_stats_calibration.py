"""The swap null of "no change" (MATH.md section 7): brute force, naive loops, real TREC runs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import shared_path
from oracles import swapped_null_loop
from test_stats_registry import SETTINGS, web14

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import AnalysisSettings
from pytest_bvtest.stats import calibration, swaps
from pytest_bvtest.stats.calibration import null_of_own_value, swap_null
from pytest_bvtest.stats.registry import STATISTICS

SMALL = np.array(
    [
        [0.30, 0.10, 0.55, 0.70, 0.20, 0.45, 0.05],
        [0.25, 0.30, 0.50, 0.10, 0.20, 0.60, 0.15],
        [0.40, 0.20, 0.35, 0.65, 0.05, 0.50, 0.30],
        [0.10, 0.05, 0.60, 0.30, 0.25, 0.20, 0.10],
    ]
)
CANDIDATE, REFERENCE = 0, 1


def brute_force_null(scores: np.ndarray, name: str, settings: AnalysisSettings) -> np.ndarray:
    """Every one of the 2^n swaps, one at a time, on the whole matrix (no sufficient matrix, no stacks)."""
    statistic = STATISTICS[name]
    values = []
    for swapped in itertools.product((False, True), repeat=scores.shape[1]):
        x = scores.copy()
        for j, swap in enumerate(swapped):
            if swap:
                x[CANDIDATE, j], x[REFERENCE, j] = scores[REFERENCE, j], scores[CANDIDATE, j]
        assert np.array_equal(x.max(axis=0), scores.max(axis=0))  # a swap keeps the virtual target
        computed = statistic.compute(x, REFERENCE, settings)
        own = name in ("zrisk", "georisk") or STATISTICS[name].needs_reference
        values.append(computed[CANDIDATE] if own else computed[CANDIDATE] - computed[REFERENCE])
    return np.sort(np.array(values))


@pytest.mark.parametrize("setting", ["default", "max-min", "difficulty groups"])
@pytest.mark.parametrize("name", list(STATISTICS))
def test_exact_null_equals_a_brute_force_over_every_swap(name: str, setting: str) -> None:
    settings = SETTINGS[setting]
    null = swap_null(SMALL, name, CANDIDATE, REFERENCE, settings)
    expected = brute_force_null(SMALL, name, settings)
    assert null.exact and null.swaps == 2 ** SMALL.shape[1]
    np.testing.assert_allclose(null.values, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["mean", "bias2_plus_var", "trisk", "var"])
def test_limit_and_false_alarm_rate_count_the_bad_tail(name: str) -> None:
    null = swap_null(SMALL, name, CANDIDATE, REFERENCE, AnalysisSettings())
    values = brute_force_null(SMALL, name, AnalysisSettings())
    higher_is_better = STATISTICS[name].higher_is_better
    for rate in (0.01, 0.05, 0.1, 0.25):
        limit = null.limit(rate)
        past = values < limit - 1e-12 if higher_is_better else values > limit + 1e-12
        assert null.false_alarm_rate(limit) == pytest.approx(past.mean())
        assert past.mean() <= rate
        # the limit is the tightest one at this rate: one value further in, the rate would exceed it
        inner = values[values > limit + 1e-12].min() if higher_is_better else values[values < limit - 1e-12].max()
        past_inner = values < inner - 1e-12 if higher_is_better else values > inner + 1e-12
        assert past_inner.mean() > rate
    assert null.false_alarm_rate(values[0] - 1) == (0.0 if higher_is_better else 1.0)
    assert np.isnan(null.false_alarm_rate(float("nan")))


def test_monte_carlo_null_equals_a_naive_loop_over_seeded_swaps() -> None:
    names, scores = web14()
    candidate, reference = names.index("uogTrDwl"), names.index("CiirAll1")
    null = swap_null(scores, "bias2_plus_var", candidate, reference, AnalysisSettings(), swaps=300, seed=11)
    expected = naive_monte_carlo_null(scores, "bias2_plus_var", candidate, reference, 300, 11, AnalysisSettings())
    assert not null.exact and null.seed == 11 and null.swaps == 300
    np.testing.assert_allclose(null.values, expected, rtol=1e-10, atol=1e-14)


def naive_monte_carlo_null(
    scores: np.ndarray, name: str, candidate: int, reference: int, swaps: int, seed: int, settings: AnalysisSettings
) -> np.ndarray:
    """Swap ``b`` of ``default_rng(seed).random((swaps, n)) < 0.5`` applied to the whole matrix, one swap at a time."""
    swapped = np.random.default_rng(seed).random((swaps, scores.shape[1])) < 0.5
    compute = lambda x: STATISTICS[name].compute(x, reference, settings)  # noqa: E731
    return np.sort(swapped_null_loop(scores, compute, candidate, reference, swapped, null_of_own_value(name)))


@pytest.mark.parametrize("name", [name for name in STATISTICS if name != "gawm"])
def test_every_fast_path_equals_the_naive_loop_on_real_runs(name: str) -> None:
    # the mean's matrix product, the bit-wise row swap and the swaps shared between gates (drawn by the
    # first statistic of the same topics, swaps and seed) against one full-matrix evaluation per swap
    names, scores = web14()
    candidate, reference = names.index("uogTrDwl"), names.index("CiirAll1")
    swap_null(scores, "var", candidate, reference, AnalysisSettings(), swaps=200, seed=5)
    null = swap_null(scores, name, candidate, reference, AnalysisSettings(), swaps=200, seed=5)
    expected = naive_monte_carlo_null(scores, name, candidate, reference, 200, 5, AnalysisSettings())
    np.testing.assert_allclose(null.values, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, settings", [("trisk", AnalysisSettings()), ("var", SETTINGS["difficulty groups"])])
def test_blocks_do_not_change_the_null(monkeypatch: pytest.MonkeyPatch, name: str, settings: AnalysisSettings) -> None:
    # TRisk from sums (one matrix product per block, whose rounding may follow the block's shape) and Var over
    # difficulty groups from stacks of swapped matrices (the same floats in any block)
    names, scores = web14()
    whole = swap_null(scores, name, 0, 1, settings, swaps=500, seed=3)
    monkeypatch.setattr(calibration, "_BLOCK_CELLS", 7 * scores.shape[1])
    monkeypatch.setattr(swaps, "_BLOCK_CELLS", 7 * scores.shape[1])
    blocked = swap_null(scores, name, 0, 1, settings, swaps=500, seed=3)
    if STATISTICS[name].sums is not None and settings.grouping is None:
        np.testing.assert_allclose(blocked.by_swap, whole.by_swap, rtol=1e-14, atol=1e-15)
    else:
        np.testing.assert_array_equal(blocked.values, whole.values)


def test_identical_systems_have_a_null_of_exact_zeros_and_never_a_false_alarm() -> None:
    scores = np.vstack([SMALL[0], SMALL[0], SMALL[2]])
    null = swap_null(scores, "bias2_plus_var", 0, 1)
    assert np.all(null.values == 0.0) and null.limit(0.05) == 0.0 and null.false_alarm_rate(0.0) == 0.0


def test_gawm_defaults_to_fewer_swaps_and_the_rest_to_ten_thousand() -> None:
    names, scores = web14()
    assert swap_null(scores[:5], "gawm", 0, 1).swaps == calibration.DEFAULT_SWAPS_FULL_MATRIX
    assert swap_null(scores, "mean", 0, 1).swaps == calibration.DEFAULT_SWAPS == 10_000


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"reference": 0}, "other than the candidate"),
        ({"swaps": 0}, "swaps must be a positive whole number"),
        ({"seed": -1}, "seed must be a whole number"),
        ({"statistic": "bias"}, "unknown statistic"),
    ],
)
def test_swap_null_rejects_bad_arguments(arguments: dict, message: str) -> None:
    call = {"scores": SMALL, "statistic": "mean", "candidate": 0, "reference": 1, **arguments}
    with pytest.raises(StatisticError, match=message):
        swap_null(**call)


def test_limit_rejects_a_rate_outside_zero_to_one_half() -> None:
    null = swap_null(SMALL, "mean", 0, 1)
    for rate in (0.0, 0.5, 1.2):
        with pytest.raises(StatisticError, match="strictly between 0 and 0.5"):
            null.limit(rate)


@pytest.mark.parametrize("name", ["mean", "trisk", "bias2_plus_var"])
def test_false_alarm_rate_at_five_percent_on_equal_quality_pairs_of_real_trec_runs(name: str) -> None:
    """Swap two real TREC-8 runs on random topics: an equal-quality pair. Across many such pairs a
    ``false_alarm: 0.05`` limit fails the candidate 5% of the time, within Monte-Carlo error."""
    path = shared_path("newbestsub_named_matrices", "AH99.csv")
    scores = np.genfromtxt(path, delimiter=",", skip_header=1)[:, 1:]
    rng = np.random.default_rng(2026)
    settings = AnalysisSettings()
    higher_is_better = STATISTICS[name].higher_is_better
    trials, failures = 400, 0
    for _ in range(trials):
        systems = rng.choice(scores.shape[0], size=4, replace=False)  # candidate, reference, two other baselines
        x = scores[systems].copy()
        swap = rng.random(x.shape[1]) < 0.5
        x[0], x[1] = np.where(swap, x[1], x[0]), np.where(swap, x[0], x[1])
        values = STATISTICS[name].compute(x, 1, settings)
        observed = values[0] if null_of_own_value(name) else values[0] - values[1]
        null = swap_null(x, name, 0, 1, settings, swaps=2000, seed=int(rng.integers(2**31)))
        limit = null.limit(0.05)
        failures += bool(observed < limit - 1e-12 if higher_is_better else observed > limit + 1e-12)
    rate = failures / trials
    error = np.sqrt(0.05 * 0.95 / trials)  # binomial standard error over the pairs
    assert abs(rate - 0.05) < 3 * error, rate


# --- family-wise limits (Westfall & Young 1993 min-p over the shared swaps) -------------------------

FAMILY = ("trisk", "var", "bias2_plus_var", "mean")  # the recommended gates' statistics
RISK_5 = AnalysisSettings(risk_alpha=5.0)


def brute_force_nulls_in_swap_order(
    scores: np.ndarray, names: tuple[str, ...], settings: AnalysisSettings
) -> np.ndarray:
    """Each statistic's null value on swap ``k`` (topic ``j`` swapped when bit ``j`` of ``k`` is set), by loops."""
    topics = scores.shape[1]
    rows = []
    for k in range(2**topics):
        x = scores.copy()
        for j in range(topics):
            if k >> j & 1:
                x[CANDIDATE, j], x[REFERENCE, j] = scores[REFERENCE, j], scores[CANDIDATE, j]
        row = []
        for name in names:
            computed = STATISTICS[name].compute(x, REFERENCE, settings)
            row.append(computed[CANDIDATE] if null_of_own_value(name) else computed[CANDIDATE] - computed[REFERENCE])
        rows.append(row)
    return np.array(rows).T


def brute_force_family(nulls: np.ndarray, names: tuple[str, ...], false_alarm: float) -> tuple[int, float, list[float]]:
    """Try every per-gate count k: the largest (up to floor(P N)) whose limits fail at most P N swaps."""
    swaps = nulls.shape[1]
    allowed = int(np.floor(false_alarm * swaps + 1e-9))
    best = None
    for k in range(allowed + 1):
        limits = [
            sorted(row)[k] if STATISTICS[name].higher_is_better else sorted(row)[swaps - 1 - k]
            for row, name in zip(nulls, names)
        ]
        failing = 0
        for b in range(swaps):
            failing += any(
                (nulls[g, b] < limit - 1e-12 * max(1, abs(limit)))
                if STATISTICS[name].higher_is_better
                else (nulls[g, b] > limit + 1e-12 * max(1, abs(limit)))
                for g, (name, limit) in enumerate(zip(names, limits))
            )
        if failing <= allowed:
            best = (k, failing / swaps, limits)
    assert best is not None
    return best


@pytest.mark.parametrize("false_alarm", [0.05, 0.1, 0.25])
@pytest.mark.parametrize("names", [FAMILY, ("mean",), ("urisk", "zrisk", "gap_mse")])
def test_family_level_equals_a_brute_force_over_every_swap(names: tuple[str, ...], false_alarm: float) -> None:
    expected = brute_force_nulls_in_swap_order(SMALL, names, RISK_5)
    nulls = [swap_null(SMALL, name, CANDIDATE, REFERENCE, RISK_5) for name in names]
    for null, row in zip(nulls, expected):  # the swap null keeps each value at its swap's place
        np.testing.assert_allclose(null.by_swap, row, rtol=1e-9, atol=1e-12)
    family = calibration.family_level(
        np.array([null.by_swap for null in nulls]), [null.higher_is_better for null in nulls], false_alarm
    )
    count, rate, limits = brute_force_family(expected, names, false_alarm)
    assert (family.count, family.swaps) == (count, 2 ** SMALL.shape[1])
    assert family.rate == pytest.approx(rate) and family.rate <= false_alarm
    np.testing.assert_allclose(family.limits, limits, rtol=1e-9, atol=1e-12)
    assert list(family.limits) == [null.limit_past(count) for null in nulls]
    if len(names) == 1:  # a family of one is the gate's own calibrated limit
        assert family.limits[0] == nulls[0].limit(false_alarm)


def test_family_level_of_identical_gates_is_the_single_gates_level() -> None:
    """Two copies of one statistic fail on the same swaps: the family costs nothing."""
    null = swap_null(SMALL, "mean", CANDIDATE, REFERENCE)
    family = calibration.family_level(np.array([null.by_swap, null.by_swap]), [True, True], 0.1)
    assert family.limits == (null.limit(0.1), null.limit(0.1))


def test_family_level_refuses_nan_and_mismatched_directions() -> None:
    with pytest.raises(StatisticError, match="NaN"):
        calibration.family_level(np.array([[0.1, np.nan]]), [True], 0.05)
    with pytest.raises(StatisticError, match="directions"):
        calibration.family_level(np.zeros((2, 10)), [True], 0.05)


def test_family_wise_rate_of_the_recommended_gates_on_equal_quality_pairs_of_real_trec_runs() -> None:
    """Swap two real TREC-8 runs on random topics (an equal-quality pair) and gate the swapped candidate
    with the recommended four statistics at P = 5%: calibrated one by one, at least one fails far more
    often than 5% of the pairs; calibrated as a family (min-p), about 5%."""
    path = shared_path("newbestsub_named_matrices", "AH99.csv")
    scores = np.genfromtxt(path, delimiter=",", skip_header=1)[:, 1:]
    rng = np.random.default_rng(2027)
    trials, one_by_one, family_wise, levels = 300, 0, 0, []
    for _ in range(trials):
        systems = rng.choice(scores.shape[0], size=4, replace=False)
        x = scores[systems].copy()
        swap = rng.random(x.shape[1]) < 0.5
        x[0], x[1] = np.where(swap, x[1], x[0]), np.where(swap, x[0], x[1])
        seed = int(rng.integers(2**31))
        nulls = [swap_null(x, name, 0, 1, RISK_5, swaps=2000, seed=seed) for name in FAMILY]
        family = calibration.family_level(
            np.array([null.by_swap for null in nulls]), [null.higher_is_better for null in nulls], 0.05
        )
        levels.append(family.level)
        failed_alone, failed_together = False, False
        for name, null, joint_limit in zip(FAMILY, nulls, family.limits):
            computed = STATISTICS[name].compute(x, 1, RISK_5)
            observed = computed[0] if null.own_value else computed[0] - computed[1]
            bad_side = 1.0 if null.higher_is_better else -1.0  # how far below (above) a limit is bad
            failed_alone |= bad_side * (null.limit(0.05) - observed) > 1e-12
            failed_together |= bad_side * (joint_limit - observed) > 1e-12
        one_by_one += failed_alone
        family_wise += failed_together
    error = np.sqrt(0.05 * 0.95 / trials)
    assert abs(family_wise / trials - 0.05) < 3 * error, family_wise / trials
    assert one_by_one / trials > 0.05 + 3 * error, one_by_one / trials
    assert 0.0125 <= np.median(levels) < 0.05  # between Bonferroni's 5%/4 and the single gate's 5%
    print(
        f"one by one {one_by_one / trials:.3f}, family-wise {family_wise / trials:.3f}, "
        f"median per-gate level {np.median(levels):.4f}"
    )


def test_a_shorter_monte_carlo_null_is_the_start_of_a_longer_one_so_families_can_share_it() -> None:
    """GAWM's 1,000 default swaps are the first 1,000 of the other gates' 10,000 (the family uses them)."""
    x = np.random.default_rng(1).random((4, 40))
    short, long = swap_null(x, "mean", 0, 1, swaps=1000, seed=3), swap_null(x, "mean", 0, 1, swaps=10_000, seed=3)
    np.testing.assert_array_equal(short.by_swap, long.by_swap[:1000])
    kept = long.first(1000)
    np.testing.assert_array_equal(kept.values, short.values)
    assert kept.limit(0.05) == short.limit(0.05)


@pytest.mark.parametrize("false_alarm", [0.01, 0.05, 0.2])
def test_family_level_with_infinite_trisk_values_equals_the_brute_force(false_alarm: float) -> None:
    """A candidate 0.05 above the reference on every topic: TRisk's spread is 0 when no topic or every topic
    is swapped, so its null holds +inf and -inf, which compare as numbers."""
    shifted = SMALL.copy()
    shifted[CANDIDATE] = np.clip(SMALL[REFERENCE] + 0.05, 0, 1)
    names = ("trisk", "mean")
    expected = brute_force_nulls_in_swap_order(shifted, names, RISK_5)
    assert np.isinf(expected[0]).sum() == 2
    family = calibration.family_level(expected, [True, True], false_alarm)
    count, rate, limits = brute_force_family(expected, names, false_alarm)
    assert (family.count, family.rate) == (count, pytest.approx(rate))
    np.testing.assert_allclose(family.limits, limits, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_each_swaps_smallest_tail_count_is_its_definition_counted_gate_by_gate(seed: int, monkeypatch) -> None:
    # the gates are read many at once (5,000 calibrated gates one at a time took 2 s), in blocks of any size: each
    # swap's count is still, per gate, the swaps at or past its value on the bad side, the least over the gates,
    # exact up to floor(P N) + 1 and capped above
    rng = np.random.default_rng(seed)
    gates, sets, swaps_count = int(rng.integers(1, 25)), int(rng.integers(1, 4)), int(rng.integers(5, 300))
    values = np.round(rng.normal(size=(gates, sets, swaps_count)), int(rng.integers(1, 3)))  # ties
    values[0, 0, :2] = [np.inf, -np.inf]
    higher_is_better = list(rng.random(gates) < 0.5)
    false_alarm = float(rng.uniform(0.01, 0.3))
    monkeypatch.setattr(calibration, "_FAMILY_CELLS", int(rng.integers(1, 3000)))
    found = calibration.smallest_tail_counts(values, higher_is_better, false_alarm)
    allowed = int(np.floor(false_alarm * swaps_count + 1e-9))
    expected = np.full((sets, swaps_count), allowed + 2)
    for gate, better in enumerate(higher_is_better):
        oriented = values[gate] if better else -values[gate]
        for b in range(sets):
            for swap in range(swaps_count):
                value = oriented[b, swap]
                slack = 1e-12 * max(1.0, abs(value)) if np.isfinite(value) else 0.0
                count = int(np.sum(oriented[b] <= value + slack))
                expected[b, swap] = min(expected[b, swap], count)
    capped = np.minimum(found, allowed + 2)
    assert np.array_equal(np.minimum(capped, allowed + 1), np.minimum(expected, allowed + 1))
