"""The statistic registry: values equal the family functions, MATH.md goldens, directions, topic terms."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from importlib import resources

import numpy as np
import pytest
from conftest import shared_path
from scipy import stats as scipy_stats

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.spec.model import (
    AnalysisSettings,
    DifficultyGrouping,
    MeanVarianceSpec,
    RandomGrouping,
    SampledGrouping,
)
from pytest_bvtest.stats.biasvar import bias_variance_analysis
from pytest_bvtest.stats.gawm import gawm
from pytest_bvtest.stats.meanvar import mve_inter_topic
from pytest_bvtest.stats.registry import GAP_TERMS, PROMISED_KEYS, STATISTICS, statistic_values
from pytest_bvtest.stats.risk import trisk, urisk, zrisk_georisk

GOLDEN = 1e-6
EXACT = 1e-12

SETTINGS = {
    "default": AnalysisSettings(),
    "max-min": AnalysisSettings(normalize="max-min", risk_alpha=1.0, mve=MeanVarianceSpec(alpha=-0.5)),
    "target-ratio c=1": AnalysisSettings(normalize="target-ratio", target=1.0, risk_alpha=0.0),
    "difficulty groups": AnalysisSettings(grouping=DifficultyGrouping(4), gawm_q=2.0),
    "random groups, max-min": AnalysisSettings(normalize="max-min", grouping=RandomGrouping(3, repeats=7, seed=5)),
    "difficulty by mean, ZRisk against the target": AnalysisSettings(
        grouping=DifficultyGrouping(3, "mean"), zrisk_against="target"
    ),
    "sampled groups": AnalysisSettings(grouping=SampledGrouping(3, groups=5, repeats=4, seed=1)),
    "named target system, max-min, sample variance": AnalysisSettings(
        target_row=1, normalize="max-min", variance="sample"
    ),
    "group target-ratio, difficulty groups": AnalysisSettings(
        normalize="group-target-ratio", grouping=DifficultyGrouping(3)
    ),
}


def direct_values(name: str, scores: np.ndarray, reference: int | None, settings: AnalysisSettings) -> np.ndarray:
    """Every system's value from the family functions themselves, one 2-D matrix, row by row."""
    if STATISTICS[name].from_simulation is not None:
        # a simulation statistic reads the per-topic terms: its value is their mean over topics (IPM Eq. 13-14)
        return np.array([sum(row) / len(row) for row in scores])
    if name in ("bias2", "var", "bias2_plus_var") or name.startswith("gap_"):
        analysis = bias_variance_analysis(
            scores,
            target=settings.target,
            normalize=settings.normalize,
            grouping=settings.grouping,
            variance=settings.variance,
            target_system=settings.target_row,
        )
        if name.startswith("gap_"):
            return getattr(analysis.gap, name.removeprefix("gap_"))
        return getattr(analysis.bias_variance, "error" if name == "bias2_plus_var" else name)
    if name == "mean":
        return np.array([np.mean(row) for row in scores])
    if name == "weighted_mean":
        weights = np.ones(scores.shape[1]) if settings.topic_weights is None else settings.topic_weights
        return np.array([np.average(row, weights=weights) for row in scores])
    if name == "urisk":
        return np.array([urisk(row, scores[reference], settings.risk_alpha) for row in scores])
    if name == "trisk":
        return np.array([trisk(row, scores[reference], settings.risk_alpha).t for row in scores])
    if name in ("robustness_index", "hurt_topics", "r_loss"):
        # naive loops over topics: wins, losses and the lost amount against the reference
        rows = []
        for row in scores:
            pairs = list(zip(row, scores[reference]))
            wins, losses = sum(a > b for a, b in pairs), sum(a < b for a, b in pairs)
            rows.append(
                {
                    "robustness_index": (wins - losses) / len(pairs),
                    "hurt_topics": losses,
                    "r_loss": sum(b - a for a, b in pairs if a < b) / len(pairs),
                }[name]
            )
        return np.array(rows, dtype=float)
    if name in ("zrisk", "georisk") and settings.zrisk_against == "target":
        # each system on its own beside the virtual target (IPM 2022 Table 8), one system at a time
        target = scores.max(axis=0)
        return np.array(
            [getattr(zrisk_georisk(np.vstack([row, target]), settings.risk_alpha), name)[0] for row in scores]
        )
    if name in ("zrisk", "georisk"):
        return getattr(zrisk_georisk(scores, settings.risk_alpha), name)
    if name == "mve":
        return np.array(
            [
                mve_inter_topic(row, settings.mve.alpha, settings.topic_weights, variance=settings.variance).value
                for row in scores
            ]
        )
    if name == "gawm":
        return gawm(scores, q=settings.gawm_q).system_performance
    raise AssertionError(f"no direct computation for {name}")


def web14() -> tuple[list[str], np.ndarray]:
    """Per-topic nDCG@20 of the 30 TREC 2014 Web runs (NewBestSub, wide CSV)."""
    path = shared_path("newbestsub_named_matrices", "WEB14GD.csv")
    names = [line.split(",", 1)[0] for line in path.read_text().splitlines()[1:]]
    return names, np.genfromtxt(path, delimiter=",", skip_header=1)[:, 1:]


# --- values agree with the family functions ----------------------------------------------------


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("name", list(STATISTICS))
def test_registry_equals_direct_family_calls_on_real_web2014_runs(name: str, setting: str) -> None:
    names, scores = web14()
    settings = replace(SETTINGS[setting], topic_weights=np.random.default_rng(2).random(scores.shape[1]))
    reference = names.index("uogTrDuax")
    computed = STATISTICS[name].compute(scores, reference, settings)
    np.testing.assert_allclose(computed, direct_values(name, scores, reference, settings), rtol=EXACT, atol=EXACT)


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_an_evaluations_shared_computations_give_the_family_values(setting: str) -> None:
    """``statistic_values`` reads the bias-variance analysis, GAWM's fixed point and TRisk's test once for all."""
    names, scores = web14()
    settings = replace(SETTINGS[setting], topic_weights=np.random.default_rng(2).random(scores.shape[1]))
    reference = names.index("uogTrDuax")
    memo: dict = {}
    values = statistic_values(STATISTICS, scores, reference, settings, memo)
    assert set(memo) == {"bias_variance", "gawm", "trisk"}
    for name in STATISTICS:
        expected = direct_values(name, scores, reference, settings)
        np.testing.assert_allclose(values[name], expected, rtol=EXACT, atol=EXACT)
    p_values = [
        scipy_stats.ttest_rel(row, scores[reference]).pvalue if settings.risk_alpha == 0 else None for row in scores
    ]
    if settings.risk_alpha == 0:
        np.testing.assert_allclose(
            values["trisk_p"][np.arange(len(names)) != reference],
            np.delete(p_values, reference).astype(float),
            rtol=1e-9,
        )
    assert values["trisk_p"].shape == (len(names),)


def test_without_a_reference_the_comparisons_and_their_p_values_are_none() -> None:
    _, scores = web14()
    values = statistic_values(STATISTICS, scores, None, AnalysisSettings())
    assert [name for name, value in values.items() if value is None] == [
        "urisk",
        "trisk",
        "trisk_p",
        "robustness_index",
        "hurt_topics",
        "r_loss",
    ]


def test_the_json_schema_promises_the_catalogues_keys() -> None:
    schema = json.loads(resources.files("pytest_bvtest.report").joinpath("schema.json").read_text(encoding="utf-8"))
    system = schema["$defs"]["system"]
    assert [key for key in system["required"] if key not in ("name", "role", "gap")] == list(PROMISED_KEYS)
    assert system["properties"]["gap"]["required"] == list(GAP_TERMS)


def test_sigir2013_table1_and_table2_through_the_registry() -> None:
    # Systems A, B, C and the per-query target T itself (the target must be one of the systems).
    scores = np.array([[0.3, 0.1], [0.6, 0.08], [0.65, 0.03], [0.7, 0.2]])
    settings = AnalysisSettings()

    def values(name: str) -> np.ndarray:
        return STATISTICS[name].compute(scores, None, settings)

    np.testing.assert_allclose(values("mean")[:2], [0.2, 0.34], atol=GOLDEN)
    np.testing.assert_allclose(values("bias2"), [0.25**2, 0.11**2, 0.11**2, 0.0], atol=GOLDEN)
    np.testing.assert_allclose(values("var"), [0.01, 0.0676, 0.0961, 0.0625], atol=GOLDEN)
    np.testing.assert_allclose(values("bias2_plus_var"), [0.0725, 0.0797, 0.1082, 0.0625], atol=GOLDEN)
    np.testing.assert_allclose(values("gap_var")[:3], [0.0225, 0.0001, 0.0036], atol=GOLDEN)
    np.testing.assert_allclose(values("gap_mse")[:3], [0.085, 0.0122, 0.0157], atol=GOLDEN)


def test_ipm2022_table2_bias_with_c_one() -> None:
    scores = np.array([[0.8, 0.9, 0.4], [0.5, 0.6, 0.7], [0.3, 0.6, 0.3]])
    bias2 = STATISTICS["bias2"]
    np.testing.assert_allclose(
        bias2.compute(scores, None, AnalysisSettings(target=1.0)), [0.09, 0.16, 0.36], atol=GOLDEN
    )
    np.testing.assert_allclose(bias2.compute(scores, None, AnalysisSettings()), [0.01, 0.04, 0.16], atol=GOLDEN)


def test_urisk_and_trisk_golden_through_the_registry() -> None:
    scores = np.array([[0.30, 0.20, 0.50, 0.40], [0.25, 0.30, 0.50, 0.10]])
    settings = AnalysisSettings(risk_alpha=1.0)
    assert STATISTICS["urisk"].compute(scores, 1, settings) == pytest.approx([0.0375, 0.0], abs=GOLDEN)
    assert STATISTICS["trisk"].compute(scores, 1, settings) == pytest.approx([0.364698, 0.0], abs=GOLDEN)


def test_robustness_index_hurt_topics_and_r_loss_by_hand() -> None:
    # MATH.md section 4's URisk example: deltas [0.05, -0.1, 0, 0.3]: 2 wins, 1 loss, 1 tie.
    scores = np.array([[0.30, 0.20, 0.50, 0.40], [0.25, 0.30, 0.50, 0.10]])
    settings = AnalysisSettings(risk_alpha=1.0)
    assert STATISTICS["robustness_index"].compute(scores, 1, settings) == pytest.approx([0.25, 0.0], abs=EXACT)
    assert STATISTICS["hurt_topics"].compute(scores, 1, settings).tolist() == [1.0, 0.0]
    assert STATISTICS["r_loss"].compute(scores, 1, settings) == pytest.approx([0.025, 0.0], abs=EXACT)
    # R-Loss is URisk's loss part: URisk = mean gain - (1 + alpha) R-Loss = 0.0875 - 2 * 0.025 = 0.0375
    assert 0.0875 - 2 * STATISTICS["r_loss"].compute(scores, 1, settings)[0] == pytest.approx(0.0375, abs=EXACT)


def test_robustness_index_on_real_runs_matches_win_loss_counts() -> None:
    names, scores = web14()
    reference = names.index("UDInfoWebLES")
    index = STATISTICS["robustness_index"].compute(scores, reference, AnalysisSettings())
    hurt = STATISTICS["hurt_topics"].compute(scores, reference, AnalysisSettings())
    for system in ("uogTrDwl", "Terran", "CiirAll1"):
        row = names.index(system)
        wins = int(np.count_nonzero(scores[row] > scores[reference]))
        losses = int(np.count_nonzero(scores[row] < scores[reference]))
        assert hurt[row] == losses and index[row] == pytest.approx((wins - losses) / 50, abs=EXACT)
    assert index[reference] == 0 and hurt[reference] == 0


def test_zrisk_georisk_golden_through_the_registry() -> None:
    topics_by_systems = np.array([[0.4, 0.3, 0.2], [0.1, 0.2, 0.3], [0.5, 0.5, 0.2], [0.0, 0.0, 0.0]])
    settings = AnalysisSettings(risk_alpha=1.0)
    zrisk = STATISTICS["zrisk"].compute(topics_by_systems.T, None, settings)
    georisk = STATISTICS["georisk"].compute(topics_by_systems.T, None, settings)
    np.testing.assert_allclose(zrisk, [-0.319742, -0.126418, -0.170189], atol=GOLDEN)
    np.testing.assert_allclose(georisk, [0.342105, 0.349068, 0.290741], atol=GOLDEN)


def test_mve_is_mean_minus_alpha_population_variance_with_uniform_weights() -> None:
    scores = np.array([[0.6, 0.4, 0.2], [0.8, 0.7, 0.75]])
    values = STATISTICS["mve"].compute(scores, None, AnalysisSettings(mve=MeanVarianceSpec(alpha=2.0)))
    np.testing.assert_allclose(values, scores.mean(axis=1) - 2.0 * scores.var(axis=1), rtol=EXACT)


def test_trisk_at_alpha_zero_is_scipys_paired_t_on_real_runs() -> None:
    names, scores = web14()
    reference = names.index("UDInfoWebLES")
    values = STATISTICS["trisk"].compute(scores, reference, AnalysisSettings(risk_alpha=0.0))
    for system in ("uogTrDwl", "Terran", "CiirAll1"):
        row = names.index(system)
        expected = scipy_stats.ttest_rel(scores[row], scores[reference]).statistic
        assert values[row] == pytest.approx(expected, rel=1e-10)


def test_statistics_broadcast_over_a_resample_axis() -> None:
    scores = np.random.default_rng(4).random((3, 5, 9))
    for setting in ("default", "difficulty groups"):
        for name, statistic in STATISTICS.items():
            stacked = statistic.compute(scores, 1, SETTINGS[setting])
            one_by_one = [statistic.compute(matrix, 1, SETTINGS[setting]) for matrix in scores]
            np.testing.assert_allclose(stacked, one_by_one, rtol=EXACT, atol=EXACT, err_msg=name)


# --- directions, names, references ---------------------------------------------------------------


def test_directions_follow_math_section_7() -> None:
    lower_is_better = {
        "bias2",
        "var",
        "bias2_plus_var",
        "gap_bias",
        "gap_var",
        "gap_mse",
        "hurt_topics",
        "r_loss",
        "sim_bias2",
        "sim_var",
        "sim_bias2_plus_var",
    }
    higher_is_better = {
        "mean",
        "weighted_mean",
        "urisk",
        "trisk",
        "robustness_index",
        "zrisk",
        "georisk",
        "mve",
        "gawm",
    }
    assert set(STATISTICS) == lower_is_better | higher_is_better
    for name, statistic in STATISTICS.items():
        assert statistic.name == name
        assert statistic.higher_is_better is (name in higher_is_better)
    assert STATISTICS["bias2_plus_var"].label == "Bias²+Var"
    assert len({statistic.label for statistic in STATISTICS.values()}) == len(STATISTICS)


def test_only_the_comparisons_with_a_reference_need_one() -> None:
    against_reference = {"urisk", "trisk", "robustness_index", "hurt_topics", "r_loss"}
    assert {name for name, statistic in STATISTICS.items() if statistic.needs_reference} == against_reference
    scores = np.random.default_rng(0).random((3, 6))
    for name in against_reference:
        with pytest.raises(StatisticError, match="reference"):
            STATISTICS[name].compute(scores, None, AnalysisSettings())


def test_settings_defaults_and_equality() -> None:
    settings = AnalysisSettings()
    assert (settings.target, settings.normalize, settings.grouping) == ("mean", "none", None)
    assert (settings.risk_alpha, settings.mve.alpha, settings.gawm_q) == (5.0, 2.0, 1.0)
    assert settings.topic_weights is None
    assert AnalysisSettings(topic_weights=np.ones(3)) == AnalysisSettings(topic_weights=np.ones(3))


def test_family_errors_surface_as_statistic_errors() -> None:
    scores = np.array([[0.2, -0.1], [0.3, 0.4]])
    with pytest.raises(StatisticError, match="negative"):
        STATISTICS["georisk"].compute(scores, None, AnalysisSettings())
    with pytest.raises(StatisticError, match="normalisation"):
        STATISTICS["bias2"].compute(np.abs(scores), None, AnalysisSettings(normalize="z-score"))


# --- per-topic contributions ---------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["default", "max-min", "target-ratio c=1"])
@pytest.mark.parametrize("name", list(STATISTICS))
def test_topic_contributions_sum_to_the_difference(name: str, setting: str) -> None:
    names, scores = web14()
    settings = SETTINGS[setting]
    statistic = STATISTICS[name]
    candidate, reference = names.index("uogTrDwl"), names.index("Terran")
    contributions = statistic.topic_contributions(scores, candidate, reference, settings)
    values = statistic.compute(scores, reference, settings)
    assert contributions.shape == (scores.shape[1],)
    assert contributions.sum() == pytest.approx(values[candidate] - values[reference], abs=1e-12)
    if not statistic.needs_reference and statistic.topic_change is None:
        own = statistic.topic_contributions(scores, candidate, None, settings)
        assert own.sum() == pytest.approx(values[candidate], abs=1e-12)


def test_mean_contributions_are_the_per_topic_differences() -> None:
    scores = np.array([[0.5, 0.2, 0.9, 0.4], [0.1, 0.2, 1.0, 0.0]])
    contributions = STATISTICS["mean"].topic_contributions(scores, 0, 1, AnalysisSettings())
    np.testing.assert_allclose(contributions * 4, [0.4, 0.0, -0.1, 0.4], atol=EXACT)


def test_urisk_contributions_weigh_losses_by_one_plus_alpha() -> None:
    scores = np.array([[0.30, 0.20, 0.50, 0.40], [0.25, 0.30, 0.50, 0.10]])
    contributions = STATISTICS["urisk"].topic_contributions(scores, 0, 1, AnalysisSettings(risk_alpha=1.0))
    np.testing.assert_allclose(contributions * 4, [0.05, -0.2, 0.0, 0.3], atol=EXACT)


def test_bias_variance_contributions_match_their_definitions() -> None:
    scores = np.array([[0.3, 0.1], [0.6, 0.08], [0.65, 0.03], [0.7, 0.2]])
    settings = AnalysisSettings()
    c = 0.45
    error = STATISTICS["bias2_plus_var"].topic_contributions(scores, 0, None, settings)
    var = STATISTICS["var"].topic_contributions(scores, 0, None, settings)
    bias2 = STATISTICS["bias2"].topic_contributions(scores, 0, None, settings)
    np.testing.assert_allclose(error, [(0.3 - c) ** 2 / 2, (0.1 - c) ** 2 / 2], atol=EXACT)
    np.testing.assert_allclose(var, [0.1**2 / 2, 0.1**2 / 2], atol=EXACT)
    np.testing.assert_allclose(bias2, [(0.2 - c) * (0.3 - c) / 2, (0.2 - c) * (0.1 - c) / 2], atol=EXACT)
    # Topic by topic the split differs by the cross term 2 (mean - c)(x_j - mean), which sums to 0.
    assert (bias2 + var).sum() == pytest.approx(error.sum(), abs=EXACT)


@pytest.mark.parametrize("variance", ["population", "sample"])
def test_a_topic_whose_score_did_not_change_moves_no_bias_variance_statistic(variance: str) -> None:
    """Topics 2 and 4 score the same in both systems; only topics 1 and 3 moved (so did the mean). The change of
    Var, Bias² and Bias²+Var is split over the topics that moved, each share d_j times its deviations (Var), or
    times mean(x) + mean(y) - 2c (Bias²), and the shares add up to the change as compute() gives it."""
    scores = np.array([[0.9, 0.4, 0.1, 0.6], [0.5, 0.4, 0.3, 0.6], [0.7, 0.8, 0.2, 0.5]])
    settings = AnalysisSettings(variance=variance)
    x, y, n = scores[0], scores[1], 4
    c = scores.max(axis=0).mean()  # the virtual target's mean: 0.65
    scale = n / (n - 1) if variance == "sample" else 1.0
    d = x - y
    expected = {
        "var": d * ((x - x.mean()) + (y - y.mean())) / n * scale,
        "bias2": d * (x.mean() + y.mean() - 2 * c) / n,
        "bias2_plus_var": d * (x + y - 2 * c) / n + (scale - 1) * d * ((x - x.mean()) + (y - y.mean())) / n,
    }
    for name, shares in expected.items():
        contributions = STATISTICS[name].topic_contributions(scores, 0, 1, settings)
        np.testing.assert_allclose(contributions, shares, atol=EXACT)
        assert contributions[1] == contributions[3] == 0.0
        values = STATISTICS[name].compute(scores, None, settings)
        assert contributions.sum() == pytest.approx(values[0] - values[1], abs=EXACT)


def test_bias_variance_contributions_are_none_with_grouping() -> None:
    scores = np.random.default_rng(1).random((4, 12))
    settings = SETTINGS["difficulty groups"]
    for name in ("bias2", "var", "bias2_plus_var", "gap_bias", "gap_var", "gap_mse"):
        assert STATISTICS[name].topic_contributions(scores, 0, 1, settings) is None
    assert STATISTICS["mean"].topic_contributions(scores, 0, 1, settings) is not None


#: MATH.md section 4's golden matrix, systems x topics (MATH.md writes it topics x systems).
RISK_GOLDEN = np.array([[0.4, 0.1, 0.5, 0.0], [0.3, 0.2, 0.5, 0.0], [0.2, 0.3, 0.2, 0.0]])


def naive_weighted_z(scores: np.ndarray, alpha: float) -> np.ndarray:
    """z = (x - e) / sqrt(e), e = T_j S_i / N, shortfalls times 1 + alpha, by loops (MATH.md section 4)."""
    m, n = scores.shape
    total = scores.sum()
    z = np.zeros_like(scores)
    for i in range(m):
        for j in range(n):
            expected = scores[:, j].sum() * scores[i].sum() / total
            if expected > 0:
                value = (scores[i, j] - expected) / math.sqrt(expected)
                z[i, j] = value * (1 + alpha) if value < 0 else value
    return z


def test_zrisk_contributions_are_the_change_of_each_topics_weighted_z() -> None:
    z = naive_weighted_z(RISK_GOLDEN, 1.0)
    contributions = STATISTICS["zrisk"].topic_contributions(RISK_GOLDEN, 0, 2, AnalysisSettings(risk_alpha=1.0))
    np.testing.assert_allclose(contributions, z[0] - z[2], atol=EXACT)
    # golden ZRisk -0.319742 - (-0.170189): topic 2 (0.1 against 0.3) pulls the candidate down most
    assert contributions.sum() == pytest.approx(-0.319742 + 0.170189, abs=1e-6)
    assert int(np.argmin(contributions)) == 1


def test_georisk_contributions_split_the_change_between_mean_and_zrisk() -> None:
    alpha, n = 1.0, RISK_GOLDEN.shape[1]
    z = naive_weighted_z(RISK_GOLDEN, alpha)
    normal_cdf = lambda value: 0.5 * (1 + math.erf(value / math.sqrt(2)))  # noqa: E731
    f = [math.sqrt(RISK_GOLDEN[i].sum() / n) for i in (0, 2)]
    g = [math.sqrt(normal_cdf(z[i].sum() / n)) for i in (0, 2)]
    # Shapley split of f * g between its two factors, each shared by the topics' part of its change
    f_part = (f[0] - f[1]) * (g[0] + g[1]) / 2
    g_part = (g[0] - g[1]) * (f[0] + f[1]) / 2
    score_change = RISK_GOLDEN[0] - RISK_GOLDEN[2]
    z_change = z[0] - z[2]
    expected = f_part * score_change / score_change.sum() + g_part * z_change / z_change.sum()
    contributions = STATISTICS["georisk"].topic_contributions(RISK_GOLDEN, 0, 2, AnalysisSettings(risk_alpha=alpha))
    np.testing.assert_allclose(contributions, expected, atol=EXACT)
    assert contributions.sum() == pytest.approx(0.342105 - 0.290741, abs=1e-6)  # golden GeoRisk
    assert contributions[3] == 0.0  # the all-zero topic moves nothing


@pytest.mark.parametrize("name", ["var", "bias2_plus_var", "gap_var", "gap_mse"])
def test_sample_variance_through_the_registry_values_and_topic_terms(name: str) -> None:
    names, scores = web14()
    settings = AnalysisSettings(variance="sample")
    values = STATISTICS[name].compute(scores, None, settings)
    analysis = bias_variance_analysis(scores, variance="sample")
    expected = {
        "var": analysis.bias_variance.var,
        "bias2_plus_var": analysis.bias_variance.error,
        "gap_var": analysis.gap.var,
        "gap_mse": analysis.gap.mse,
    }[name]
    np.testing.assert_allclose(values, expected, rtol=1e-12)
    candidate = names.index("uogTrDwl")
    terms = STATISTICS[name].topic_contributions(scores, candidate, None, settings)
    assert terms.sum() == pytest.approx(values[candidate], abs=1e-12)
