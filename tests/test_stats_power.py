"""The power of a gate (docs/mathematics.md §9): draws a naive loop reproduces, the mean's closed form on real
collections, power at the reported MDE by direct simulation, and the Gaussian sums against the simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import shared_path
from scipy.special import ndtri

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.io.tables import read_score_table
from pytest_bvtest.spec.model import AnalysisSettings
from pytest_bvtest.stats import calibration, power
from pytest_bvtest.stats.calibration import swap_null
from pytest_bvtest.stats.power import (
    DIFFERENCE,
    FEW,
    OWN,
    UNIFORM,
    Crossing,
    FixedNull,
    GroupGate,
    PowerGroup,
    PowerProblem,
    closed_form_mde,
    harmed_topics,
    mean_detectable,
    mean_power,
    swap_pool,
)
from pytest_bvtest.stats.registry import STATISTICS
from pytest_bvtest.stats.swaps import topic_assignments

TOY = np.array(
    [
        [0.61, 0.20, 0.00, 0.45, 0.90, 0.33, 0.12, 0.70, 0.05, 0.50, 0.41, 0.26],
        [0.55, 0.35, 0.10, 0.40, 0.80, 0.30, 0.00, 0.65, 0.20, 0.45, 0.44, 0.18],
        [0.70, 0.10, 0.05, 0.60, 0.95, 0.20, 0.30, 0.50, 0.15, 0.52, 0.38, 0.31],
        [0.40, 0.25, 0.00, 0.35, 0.60, 0.45, 0.10, 0.80, 0.00, 0.30, 0.29, 0.22],
    ]
)


def calibrated(scores: np.ndarray, statistic: str, candidate: int, reference: int, rate: float = 0.05) -> Crossing:
    """The limit ``false_alarm: rate`` gives the gate, on its null's scale."""
    null = swap_null(scores, statistic, candidate, reference, swaps=10_000, seed=0)
    return Crossing(
        OWN if null.own_value else DIFFERENCE,
        null.limit(rate),
        not STATISTICS[statistic].higher_is_better,
        "calibrated",
        level=rate,
    )


def naive_values(
    scores: np.ndarray,
    statistic: str,
    candidate: int,
    reference: int | None,
    delta: float,
    model: str,
    draws: int,
    seed: int,
    settings: AnalysisSettings = AnalysisSettings(),
) -> tuple[np.ndarray, np.ndarray | None]:
    """Every draw as the module docstring defines it, one whole matrix at a time."""
    n = scores.shape[1]
    keys = np.random.default_rng([seed, 20]).random((draws, 2, n))
    harmed = harmed_topics(n, model)
    own, difference = [], []
    for b in range(draws):
        x = scores.copy()
        if reference is not None:
            swap = keys[b, 0] < 0.5
            x[candidate], x[reference] = (
                np.where(swap, scores[reference], scores[candidate]),
                np.where(swap, scores[candidate], scores[reference]),
            )
        hurt = (
            np.ones(n, bool) if harmed == n else np.isin(np.arange(n), np.argsort(keys[b, 1], kind="stable")[:harmed])
        )
        row = x[candidate]
        x[candidate] = np.where(hurt & (row > 0), np.maximum(row - delta, 0.0), row)
        values = STATISTICS[statistic].compute(x, reference, settings)
        own.append(values[candidate])
        if reference is not None:
            difference.append(values[candidate] - values[reference])
    return np.array(own), (np.array(difference) if reference is not None else None)


@pytest.mark.parametrize("statistic", ["mean", "var", "bias2_plus_var", "trisk", "urisk", "zrisk", "georisk", "gawm"])
@pytest.mark.parametrize("model", [UNIFORM, FEW])
def test_a_naive_loop_reproduces_every_draw(statistic: str, model: str) -> None:
    """Sum forms (mean, Var, Bias²+Var, TRisk, URisk) and stacks (ZRisk, GeoRisk, GAWM) give the values of each
    draw's whole matrix: swapped with the reference, the candidate lowered by delta and clipped at 0."""
    problem = PowerProblem(TOY, statistic, 0, 1, draws=40, seed=7)
    own, difference, reference = problem.values(0.15, model)
    expected_own, expected_difference = naive_values(TOY, statistic, 0, 1, 0.15, model, 40, 7)
    np.testing.assert_allclose(own, expected_own, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(difference, expected_difference, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(reference, own - difference, rtol=1e-9, atol=1e-12)


def test_without_a_reference_the_draws_harm_the_observed_candidate() -> None:
    problem = PowerProblem(TOY, "var", 2, None, draws=30, seed=3)
    own, difference, reference = problem.values(0.2, FEW)
    assert difference is None and reference is None and not problem.swapped
    np.testing.assert_allclose(own, naive_values(TOY, "var", 2, None, 0.2, FEW, 30, 3)[0], rtol=1e-12)


def test_harmed_topics_are_ten_percent_at_least_one() -> None:
    assert [harmed_topics(n, FEW) for n in (1, 5, 14, 15, 43, 50, 249, 6980)] == [1, 1, 1, 2, 4, 5, 25, 698]
    assert harmed_topics(50, UNIFORM) == 50
    with pytest.raises(StatisticError, match="unknown regression model"):
        harmed_topics(50, "some")


def alone(
    scores: np.ndarray,
    statistic: str,
    candidate: int,
    reference: int,
    rate: float = 0.05,
    draws: int = 1000,
    seed: int = 0,
    settings: AnalysisSettings = AnalysisSettings(),
) -> PowerGroup:
    """A calibrated gate alone (no family): its draws, its limit and the pool of its null's 10,000 swaps (seed 0)."""
    problem = PowerProblem(scores, statistic, candidate, reference, settings, draws=draws, seed=seed)
    crossing = calibrated(scores, statistic, candidate, reference, rate)
    pool = swap_pool(scores.shape[1], 10_000, 0, scores.shape[1] <= 16)
    return PowerGroup([GroupGate(problem, (crossing,))], (), pool, rate)


def test_var_cannot_see_a_drop_on_every_topic() -> None:
    """Var measures the spread across topics: a drop on every topic leaves it, and clipping only narrows it
    (a 1-Lipschitz map of the scores), so no drop is caught and the statistic never moves the wrong way."""
    group = alone(TOY, "var", 0, 1, 0.1, draws=200)
    uniform = group.detectable(0, UNIFORM)
    assert uniform.drop is None and uniform.moves is False and uniform.power < 0.15
    assert group.detectable(0, FEW).moves is True


def naive_draw_nulls(
    scores: np.ndarray,
    statistic: str,
    delta: float,
    model: str,
    draws: int,
    seed: int,
    pool: power.SwapPool,
    swaps: int,
    settings: AnalysisSettings = AnalysisSettings(),
) -> tuple[np.ndarray, np.ndarray]:
    """Every harmed draw (candidate row 0, reference row 1) and its own null, one whole matrix at a time: the draw's
    candidate and reference exchanged on the topics where swap ``t`` of the draw's chunk differs from the draw's own
    swap (so that ``t`` shows the original candidate's scores on the topics where it is 0, harmed or not)."""
    n = scores.shape[1]
    keys = np.random.default_rng([seed, 20]).random((draws, 2, n))
    harmed = harmed_topics(n, model)
    own_scale = STATISTICS[statistic].needs_reference or STATISTICS[statistic].against_other_systems
    values, nulls = [], []
    for b in range(draws):
        swap = keys[b, 0] < 0.5
        x = scores.copy()
        x[0], x[1] = np.where(swap, scores[1], scores[0]), np.where(swap, scores[0], scores[1])
        hurt = np.isin(np.arange(n), np.argsort(keys[b, 1], kind="stable")[:harmed])
        x[0] = np.where(hurt & (x[0] > 0), np.maximum(x[0] - delta, 0.0), x[0])

        def value(matrix: np.ndarray) -> float:
            computed = STATISTICS[statistic].compute(matrix, 1, settings)
            return float(computed[0] if own_scale else computed[0] - computed[1])

        values.append(value(x))
        null = []
        for t in pool.swapped[b % pool.chunks, :swaps]:
            exchanged = t ^ swap
            y = x.copy()
            y[0], y[1] = np.where(exchanged, x[1], x[0]), np.where(exchanged, x[0], x[1])
            null.append(value(y))
        nulls.append(null)
    return np.array(values), np.array(nulls)


@pytest.mark.parametrize("statistic", ["mean", "var", "bias2_plus_var", "trisk", "zrisk", "gawm"])
@pytest.mark.parametrize("model", [UNIFORM, FEW])
def test_a_naive_loop_reproduces_every_harmed_draws_own_null(statistic: str, model: str) -> None:
    """docs/mathematics.md §9, "Power at delta": the null a harmed draw's limit is recalibrated on is the swap null of
    the draw itself, on the swaps of its chunk of the pool; sum forms (mean, Var, Bias²+Var, TRisk) and stacks (ZRisk,
    GAWM) give it for every draw and swap as a loop over whole matrices does."""
    scores = TOY[:3]
    pool = swap_pool(12, 1000, 3, False, per_draw=24, chunks=5)
    problem = PowerProblem(scores, statistic, 0, 1, draws=15, seed=7)
    scale = OWN if STATISTICS[statistic].needs_reference or STATISTICS[statistic].against_other_systems else DIFFERENCE
    drawn = problem.draw_nulls(0.15, model, pool, scale)
    values, nulls = naive_draw_nulls(scores, statistic, 0.15, model, 15, 7, pool, 24)
    np.testing.assert_allclose(drawn.own if scale == OWN else drawn.difference, values, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(drawn.null, nulls, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("exact", [False, True])
def test_a_pool_holds_the_nulls_own_swaps_at_their_places(exact: bool) -> None:
    """The swaps that recalibrate a harmed draw's limit are rows of its null's own draw (the first of the stream; an
    enumerated null's in a seeded order, so that each chunk is a sample of them), and ``order`` is where each stands
    in the null, whose values the family's other gates read there."""
    topics = 12
    pool = swap_pool(topics, 3000, 3, exact, per_draw=100, chunks=7)
    rows = np.vstack(list(topic_assignments(topics, 3000, 3, exact=exact, block=1000))) > 0.5
    assert pool.swapped.shape == (7, 100, topics)
    np.testing.assert_array_equal(pool.swapped.reshape(-1, topics), rows[pool.order.ravel()])
    if exact:
        assert len(set(pool.order.ravel())) == 700 and pool.order.max() > 700  # dealt from all 4,096
    else:
        np.testing.assert_array_equal(pool.order.ravel(), np.arange(700))
    segment = swap_pool(topics, 3000, 3, exact, columns=[2, 5, 7], per_draw=100, chunks=7)
    np.testing.assert_array_equal(segment.swapped, pool.swapped[..., [2, 5, 7]])
    # a null of fewer swaps than a draw reads: one chunk, every swap (an enumerated null of 6 topics: exact)
    small = swap_pool(6, 64, 0, True)
    assert small.swapped.shape == (1, 64, 6) and sorted(small.order[0]) == list(range(64))


def test_a_family_recalibrated_on_each_draw_fails_the_draws_a_direct_loop_fails() -> None:
    """The power of gates of one family, each harmed draw judged as the check judges a candidate: every gate's null
    on the draw (the family's gates on another measure keep theirs), the family's count on that draw
    (:func:`~pytest_bvtest.stats.calibration.family_level`), each gate's limit at it. Mean and Var of one measure,
    with a mean gate on another measure of the same topics fixed beside them, at a family-wise 10%."""
    scores, other = TOY[:3], TOY[[1, 2, 3]] * 0.9
    pool = swap_pool(12, 2000, 5, False, per_draw=40, chunks=4)
    fixed_null = swap_null(other, "mean", 0, 1, swaps=2000, seed=5)
    nulls = {name: swap_null(scores, name, 0, 1, swaps=2000, seed=5) for name in ("mean", "var")}
    family = calibration.family_level(
        np.array([nulls["mean"].by_swap, nulls["var"].by_swap, fixed_null.by_swap]), [True, False, True], 0.1
    )
    gates = [
        GroupGate(
            PowerProblem(scores, name, 0, 1, draws=24, seed=2),
            (
                Crossing(
                    DIFFERENCE,
                    limit,
                    name == "var",
                    "calibrated",
                    level=nulls[name].false_alarm_rate(limit),
                ),
            ),
        )
        for name, limit in zip(("mean", "var"), family.limits)
    ]
    group = PowerGroup(gates, [FixedNull(fixed_null.by_swap, True)], pool, 0.1)
    for model, delta in ((UNIFORM, 0.08), (FEW, 0.3)):
        found = group.failures(delta, model)
        drawn = {name: naive_draw_nulls(scores, name, delta, model, 24, 2, pool, 40) for name in ("mean", "var")}
        for b in range(24):
            rows = pool.order[b % pool.chunks]
            on_draw = calibration.family_level(
                np.array([drawn["mean"][1][b], drawn["var"][1][b], fixed_null.by_swap[rows]]), [True, False, True], 0.1
            )
            # 40 swaps stand for the null's 2,000: at the cap floor(0.1 x 40) = 4 a limit is read one value nearer the
            # extreme, so that a new value passes it as often as the cap says (4 / 41, not 5 / 41)
            read = max(on_draw.count - 1, 0) if on_draw.count == 4 else on_draw.count
            expected = [
                drawn["mean"][0][b] < np.sort(drawn["mean"][1][b])[read] - 1e-12,
                drawn["var"][0][b] > np.sort(drawn["var"][1][b])[::-1][read] + 1e-12,
            ]
            assert [bool(found[0][b]), bool(found[1][b])] == expected, (model, b)


def dl_hard_ndcg() -> tuple[list[str], np.ndarray]:
    """nDCG@10 of the 14 DL-HARD document runs on 50 topics, from the upstream trec_eval -q output."""
    paths = sorted(shared_path("dl_hard", "dataset", "baselines", "doc").glob("*.eval.gz"))
    tables = [
        read_score_table(path, format="trec_eval", measure="ndcg_cut_10").for_measure("ndcg_cut_10") for path in paths
    ]
    scores = [next(iter(table.values())) for table in tables]  # one run per file, named by its run tag
    topics = sorted(scores[0])
    return [path.name.removesuffix(".run.eval.gz") for path in paths], np.array(
        [[s[t] for t in topics] for s in scores]
    )


def newbestsub(name: str) -> np.ndarray:
    return np.genfromtxt(shared_path("newbestsub_named_matrices", name), delimiter=",", skip_header=1)[:, 1:]


def real_pairs() -> list[tuple[str, np.ndarray]]:
    """Three collections, a candidate and its reference each: DL-HARD (BM25+RM3 against BM25, 50 topics),
    TREC-8 ad hoc AP (50 topics) and Robust04 AP (249 topics), two real runs each."""
    systems, ndcg = dl_hard_ndcg()
    trec8, robust = newbestsub("AH99.csv"), newbestsub("R04.csv")
    return [
        ("DL-HARD nDCG@10", ndcg[[systems.index("bm25+rm3"), systems.index("bm25")]]),
        ("TREC-8 AP", trec8[[3, 17]]),
        ("Robust04 AP", robust[[5, 40]]),
    ]


def test_the_mean_gates_recalibrated_mde_is_the_closed_form_without_clipping() -> None:
    """docs/mathematics.md §9 "Check": a mean gate alone at false_alarm 5%, a drop on every topic, no score near 0 (the
    pairs lifted by 1): each draw's limit is recalibrated on its own differences ``+-d_j - delta``, whose sign-flip
    null spreads by their root mean square, so the MDE solves ``delta - z_0.95 sqrt((m2 + delta**2) / n) = z_0.8
    sqrt(m2 / n)`` (:func:`closed_form_mde`). The simulated MDE (2,000 draws, each on 500 swaps of its own null)
    agrees within 3 of its Monte-Carlo standard errors on three real collections; with the limit held at the observed
    pair's it would be ``(z_0.95 + z_0.8) sqrt(m2 / n)``, smaller than both."""
    for name, pair in real_pairs():
        lifted = pair + 1.0
        group = alone(lifted, "mean", 0, 1, draws=2000, seed=11)
        simulated = group.detectable(0, UNIFORM)
        formula = closed_form_mde(pair[0] - pair[1], 0.05)
        assert simulated.drop is not None and simulated.error is not None, name
        assert abs(simulated.drop - formula) < 3 * simulated.error, (name, simulated.drop, formula, simulated.error)
        held = (ndtri(0.95) + ndtri(0.8)) * math.sqrt(np.mean((pair[0] - pair[1]) ** 2) / pair.shape[1])
        assert held < formula and held < simulated.drop, name
        crossing = group.gates[0].crossings
        assert mean_detectable(lifted[0], lifted[1], crossing) == pytest.approx(formula, rel=0.01)


def test_the_closed_form_follows_the_draws_with_their_clip_under_both_models() -> None:
    """With the clip (real AP scores near 0) and harm on a few topics the closed form is an approximation (a normal
    draw, its limit from the mean square of its differences): its power at a drop is the simulated share within
    binomial error and 0.03, on Robust04's pair."""
    _, pair = real_pairs()[2]
    group = alone(pair, "mean", 0, 1, draws=4000, seed=2)
    crossings = group.gates[0].crossings
    for model, drop in ((UNIFORM, 0.03), (FEW, 0.4)):
        simulated = group.power(0, drop, model)
        closed = mean_power(pair[0], pair[1], drop, crossings, model)
        bound = 4 * math.sqrt(closed * (1 - closed) / 4000) + 0.03
        assert abs(simulated - closed) < bound, (model, simulated, closed)


@pytest.mark.parametrize("statistic", ["trisk", "bias2_plus_var"])
def test_power_at_the_reported_mde_is_eighty_percent_by_a_direct_simulation_of_checks(statistic: str) -> None:
    """§9: for another statistic than the mean, the power at the reported MDE (a drop on every topic), measured by
    judging 1,200 fresh harmed draws (another seed) as the check judges a candidate, each against its own null of
    2,000 swaps (:func:`~pytest_bvtest.stats.calibration.swap_null`), is 0.8 within 3.5 binomial standard errors
    and the MDE's own error. TRisk on DL-HARD (BM25+RM3 against BM25, nDCG@10, alpha 5, a third run raising the
    target); Bias²+Var on a Robust04 pair with a third run."""
    if statistic == "trisk":
        systems, ndcg = dl_hard_ndcg()
        scores = ndcg[[systems.index("bm25+rm3"), systems.index("bm25"), systems.index("bm25+bert-mp")]]
    else:
        scores = newbestsub("R04.csv")[[5, 40, 60]]
    found = alone(scores, statistic, 0, 1).detectable(0, UNIFORM)
    assert found.drop is not None and found.error is not None
    draws, caught = 1200, 0
    keys = np.random.default_rng([99, 20]).random((draws, scores.shape[1]))
    for b in range(draws):
        x = scores.copy()
        swap = keys[b] < 0.5
        x[0], x[1] = np.where(swap, scores[1], scores[0]), np.where(swap, scores[0], scores[1])
        x[0] = np.where(x[0] > 0, np.maximum(x[0] - found.drop, 0.0), x[0])
        null = swap_null(x, statistic, 0, 1, swaps=2000, seed=b)
        computed = STATISTICS[statistic].compute(x, 1, AnalysisSettings())
        value = computed[0] if null.own_value else computed[0] - computed[1]
        limit = null.limit(0.05)
        caught += bool(value > limit + 1e-12 if not null.higher_is_better else value < limit - 1e-12)
    direct = caught / draws
    # the fresh draws' binomial error, and the MDE's own (its error times the power's slope there is the binomial
    # error of the 1,000 draws that found it)
    tolerance = 3.5 * math.sqrt(0.8 * 0.2 / draws + 0.8 * 0.2 / 1000)
    assert abs(direct - 0.8) <= tolerance, (found.drop, direct, tolerance)
    print(f"{statistic}: MDE {found.drop:.4f} (+-{found.error:.4f}), caught {direct:.3f} of {draws} checks")


@pytest.mark.parametrize("statistic", ["mean", "bias2_plus_var", "trisk"])
def test_from_a_thousand_topics_the_gaussian_nulls_give_the_simulations_power(
    statistic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MQ07 (1,153 topics): the power at a drop near the MDE, under both models, each draw's limit recalibrated on a
    Gaussian null (its sums' exact moments) and on 500 of its own swaps, agree within binomial error."""
    scores = newbestsub("MQ07-Top26.csv")
    gaussian = alone(scores, statistic, 4, 11, draws=1000, seed=5)
    assert gaussian.gaussian
    monkeypatch.setattr(power, "GAUSSIAN_TOPICS", 10**9)
    simulated = alone(scores, statistic, 4, 11, draws=1000, seed=5)
    assert not simulated.gaussian
    for model in (UNIFORM, FEW):
        drop = gaussian.detectable(0, model).drop
        assert drop is not None
        expected, found = simulated.power(0, drop, model), gaussian.power(0, drop, model)
        assert abs(expected - found) < 4 * math.sqrt(2 * 0.8 * 0.2 / 1000), (model, expected, found)


def test_topics_needed_follow_the_square_law_for_the_mean_and_resampling_for_trisk() -> None:
    """Half the MDE needs about four times the topics: the mean by its closed form (the square law up to the
    recalibration's ``delta**2`` without clipping), TRisk by resampling topics (within a third), each draw's limit
    recalibrated; at the MDE itself, about the topics at hand."""
    _, pair = real_pairs()[2]
    lifted = pair + 1.0
    group = alone(lifted, "mean", 0, 1)
    problem, crossings = group.gates[0].problem, group.gates[0].crossings
    mde = group.detectable(0, UNIFORM).drop
    assert mde is not None
    assert problem.topics_needed(mde, UNIFORM, crossings) == pytest.approx(249, rel=0.08)
    assert problem.topics_needed(mde / 2, UNIFORM, crossings) == pytest.approx(4 * 249, rel=0.08)
    systems, ndcg = dl_hard_ndcg()
    scores = ndcg[[systems.index("bm25+rm3"), systems.index("bm25"), systems.index("bm25+bert-mp")]]
    group = alone(scores, "trisk", 0, 1)
    problem, crossings = group.gates[0].problem, group.gates[0].crossings
    mde = group.detectable(0, UNIFORM).drop
    assert mde is not None
    at_mde = problem.topics_needed(mde, UNIFORM, crossings)
    half = problem.topics_needed(mde / 2, UNIFORM, crossings)
    assert at_mde is not None and half is not None
    assert 0.6 * 50 < at_mde < 1.5 * 50 and 2.7 < half / at_mde < 5.3, (at_mde, half)


def test_a_bound_past_the_drop_needs_no_number_of_topics() -> None:
    """A mean gate whose bound lets a drop of 0.03 pass (max_decrease 0.05) never catches it, however many topics."""
    _, pair = real_pairs()[2]
    bound = Crossing(DIFFERENCE, -0.05, False)
    problem = PowerProblem(pair, "mean", 0, 1, draws=500, seed=0)
    assert problem.topics_needed(0.03, UNIFORM, [bound]) is None
    assert problem.topics_needed(0.08, UNIFORM, [bound]) is not None


def test_a_limit_every_equal_change_crosses_has_an_mde_of_zero_and_an_undefined_one_none() -> None:
    problem = PowerProblem(TOY, "mean", 0, 1, draws=200, seed=0)
    assert problem.detectable(UNIFORM, [Crossing(DIFFERENCE, 1.0, False)]).drop == 0.0
    undefined = problem.detectable(UNIFORM, [Crossing(DIFFERENCE, float("nan"), False)])
    assert undefined.drop is None and math.isnan(undefined.power)
    undefined_limit = (Crossing(DIFFERENCE, float("nan"), False, "calibrated"),)
    group = PowerGroup([GroupGate(problem, undefined_limit)], (), swap_pool(12, 1000, 0, False), 0.05)
    assert group.detectable(0, UNIFORM).drop is None


@pytest.mark.parametrize("statistic", ["mean", "var", "bias2_plus_var", "trisk", "zrisk", "urisk"])
@pytest.mark.parametrize("gaussian_from", [1000, 10**9])
def test_the_other_systems_through_their_extremes_give_every_draw_bit_for_bit(
    statistic: str, gaussian_from: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A statistic that reads the other systems only through their per-topic max and min (the virtual target, the
    normalisations) is drawn from the candidate's and reference's rows and those two: the same values, bit for bit,
    as from all 26 systems of MQ07, under both models, simulated and from the Gaussian sums."""
    scores = newbestsub("MQ07-Top26.csv")
    settings = AnalysisSettings(normalize="max-min") if statistic == "var" else AnalysisSettings()
    monkeypatch.setattr(power, "GAUSSIAN_TOPICS", gaussian_from)
    compact = PowerProblem(scores, statistic, 4, 11, settings, draws=300, seed=5)
    # ZRisk against the other systems reads their totals: a sum, kept whole
    assert compact._scores.shape[0] == (26 if statistic == "zrisk" else 4)
    monkeypatch.setattr(power, "reads_others_through_extremes", lambda *arguments: False)
    whole = PowerProblem(scores, statistic, 4, 11, settings, draws=300, seed=5)
    assert whole._scores.shape[0] == 26 and compact.method == whole.method
    for model in (UNIFORM, FEW):
        for delta in (0.0, 0.01, 0.2):
            for ours, theirs in zip(compact.values(delta, model), whole.values(delta, model)):
                assert (ours is None) == (theirs is None)
                if ours is not None:
                    assert ours.tobytes() == theirs.tobytes(), (model, delta)
