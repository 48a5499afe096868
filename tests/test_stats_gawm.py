"""GAWM and HITS (MATH.md section 6): hand-computed values, an independent loop implementation,
numpy's SVD, and real TREC-8 per-topic AP."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import shared_path
from scipy.stats import kendalltau, spearmanr

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.stats.gawm import gawm, gawm_resampled, hits

RNG_SEED = 2009


def reference_gawm(p, q=1.0, tolerance=1e-12, max_iterations=1000):
    """Straightforward loop version of MATH.md section 6, same iteration order as documented in gawm():
    start from uniform weights; each iteration derives W_t and W_s from the current E_t, then E_s and E_t."""
    m, n = len(p), len(p[0])

    def means(system_weights, topic_weights):
        performance = [sum(topic_weights[j] * p[i][j] for j in range(n)) / sum(topic_weights) for i in range(m)]
        ease = [sum(system_weights[i] * p[i][j] for i in range(m)) / sum(system_weights) for j in range(n)]
        return performance, ease

    system_weights, topic_weights = [1.0] * m, [1.0] * n
    performance, ease = means(system_weights, topic_weights)
    for iteration in range(1, max_iterations + 1):
        topic_weights = [math.sqrt(sum((p[i][j] - ease[j]) ** 2 for i in range(m))) for j in range(n)]
        if all(w == 0 for w in topic_weights):
            topic_weights = [1.0] * n
        distance = [math.sqrt(sum((p[i][j] - ease[j]) ** 2 for j in range(n))) for i in range(m)]
        total = sum(distance)
        system_weights = [(1 - (d / total if total else 0.0)) ** q for d in distance]
        new_performance, new_ease = means(system_weights, topic_weights)
        change = max(abs(a - b) for a, b in zip(new_performance + new_ease, performance + ease))
        performance, ease = new_performance, new_ease
        if change < tolerance:
            return performance, ease, system_weights, topic_weights, iteration, True
    return performance, ease, system_weights, topic_weights, max_iterations, False


def _trec8_ap():
    path = shared_path("trec_topic_system_matrices", "sigir2019-statistical", "adhoc8_ap.csv")
    return np.loadtxt(path, delimiter=",", skiprows=1).T  # file: topics x systems


def test_gawm_hand_computed_3x3():
    # Topics 2 and 3 are constant, so they discern nothing (W_t = 0) and E_s is system's score on topic 1.
    # E_t = column means [0.5, 0, 0.5]; d = [0.5, 0.5, 0] -> W_s = [0.5, 0.5, 1]; E_t[0] = (0.5 + 0 + 0.5) / 2 = 0.5,
    # a fixed point reached after one update, confirmed by a second with zero change.
    p = [[1.0, 0.0, 0.5], [0.0, 0.0, 0.5], [0.5, 0.0, 0.5]]
    result = gawm(p)
    np.testing.assert_allclose(result.system_performance, [1.0, 0.0, 0.5], atol=1e-15)
    np.testing.assert_allclose(result.topic_ease, [0.5, 0.0, 0.5], atol=1e-15)
    np.testing.assert_allclose(result.system_weights, [0.5, 0.5, 1.0], atol=1e-15)
    np.testing.assert_allclose(result.topic_weights, [math.sqrt(0.5), 0.0, 0.0], atol=1e-15)
    assert (result.iterations, result.converged) == (2, True)


def test_gawm_matches_independent_loop_implementation():
    p = [[0.9, 0.4, 0.3], [0.6, 0.5, 0.1], [0.2, 0.6, 0.4]]
    for q in (0.5, 1.0, 2.0):
        performance, ease, system_weights, topic_weights, iterations, converged = reference_gawm(p, q=q)
        result = gawm(p, q=q)
        np.testing.assert_allclose(result.system_performance, performance, atol=1e-12)
        np.testing.assert_allclose(result.topic_ease, ease, atol=1e-12)
        np.testing.assert_allclose(result.system_weights, system_weights, atol=1e-12)
        np.testing.assert_allclose(result.topic_weights, topic_weights, atol=1e-12)
        assert converged and result.converged
        # Both stop at the first change below 1e-12; summation order may move that by one step.
        assert abs(result.iterations - iterations) <= 1
    random_p = np.random.default_rng(RNG_SEED).random((6, 9))
    performance, ease, *_ = reference_gawm(random_p.tolist())
    np.testing.assert_allclose(gawm(random_p).system_performance, performance, atol=1e-12)
    np.testing.assert_allclose(gawm(random_p).topic_ease, ease, atol=1e-12)


def test_gawm_uniform_start_is_plain_means_and_first_step_uses_eq_7_and_8():
    p = np.random.default_rng(RNG_SEED).random((5, 8))
    start = gawm(p, max_iterations=0)
    np.testing.assert_allclose(start.system_performance, p.mean(axis=1), atol=1e-15)
    np.testing.assert_allclose(start.topic_ease, p.mean(axis=0), atol=1e-15)
    assert start.system_weights.tolist() == [1.0] * 5 and start.topic_weights.tolist() == [1.0] * 8
    assert (start.iterations, start.converged) == (0, False)
    first = gawm(p, max_iterations=1)
    # Eq. 7 at the column means is sqrt(m) times the population standard deviation of the topic's scores.
    np.testing.assert_allclose(first.topic_weights, math.sqrt(5) * p.std(axis=0), atol=1e-14)
    distance = np.linalg.norm(p - p.mean(axis=0), axis=1)
    np.testing.assert_allclose(first.system_weights, 1 - distance / distance.sum(), atol=1e-14)
    np.testing.assert_allclose(first.system_performance, np.average(p, axis=1, weights=first.topic_weights), atol=1e-14)
    assert first.iterations == 1


def test_gawm_identical_systems_give_plain_means_and_uniform_weights():
    row = np.array([0.1, 0.35, 0.7, 0.2, 0.05])
    result = gawm(np.tile(row, (4, 1)))
    np.testing.assert_allclose(result.system_performance, [row.mean()] * 4, atol=1e-15)
    assert np.ptp(result.system_performance) == 0
    np.testing.assert_array_equal(result.topic_ease, row)
    assert result.topic_weights.tolist() == [1.0] * 5 and result.system_weights.tolist() == [1.0] * 4
    assert result.converged and result.iterations == 1


def test_gawm_reports_convergence_and_fixed_point_holds():
    p = np.random.default_rng(RNG_SEED).random((12, 20))
    capped = gawm(p, max_iterations=2)
    assert (capped.iterations, capped.converged) == (2, False)
    result = gawm(p)
    assert result.converged and 2 < result.iterations < 1000
    # The reported weights produce the reported means, and recomputing the weights from E_t reproduces them.
    np.testing.assert_allclose(
        result.system_performance, p @ result.topic_weights / result.topic_weights.sum(), atol=1e-14
    )
    np.testing.assert_allclose(result.topic_ease, result.system_weights @ p / result.system_weights.sum(), atol=1e-14)
    np.testing.assert_allclose(result.topic_weights, np.linalg.norm(p - result.topic_ease, axis=0), atol=1e-11)
    distance = np.linalg.norm(p - result.topic_ease, axis=1)
    np.testing.assert_allclose(result.system_weights, 1 - distance / distance.sum(), atol=1e-11)


def test_gawm_is_permutation_equivariant():
    rng = np.random.default_rng(RNG_SEED)
    p = rng.random((7, 11))
    systems, topics = rng.permutation(7), rng.permutation(11)
    base, permuted = gawm(p), gawm(p[systems][:, topics])
    np.testing.assert_allclose(permuted.system_performance, base.system_performance[systems], atol=1e-13)
    np.testing.assert_allclose(permuted.topic_ease, base.topic_ease[topics], atol=1e-13)
    np.testing.assert_allclose(permuted.system_weights, base.system_weights[systems], atol=1e-13)
    np.testing.assert_allclose(permuted.topic_weights, base.topic_weights[topics], atol=1e-13)


def test_gawm_q_down_weights_a_non_conforming_system_more_as_q_grows():
    conforming = np.array([[0.50, 0.40, 0.30, 0.60], [0.52, 0.42, 0.28, 0.58], [0.48, 0.38, 0.32, 0.62]])
    outlier = np.array([[0.0, 1.0, 0.0, 1.0]])
    p = np.vstack([conforming, outlier])
    results = {q: gawm(p, q=q) for q in (0.0, 1.0, 3.0)}
    assert results[0.0].system_weights.tolist() == [1.0] * 4
    np.testing.assert_allclose(results[0.0].topic_ease, p.mean(axis=0), atol=1e-15)
    outlier_weight = [results[q].system_weights[3] / results[q].system_weights[:3].mean() for q in (0.0, 1.0, 3.0)]
    assert outlier_weight[0] > outlier_weight[1] > outlier_weight[2]
    gap_to_conforming = [np.abs(results[q].topic_ease - conforming.mean(axis=0)).max() for q in (0.0, 1.0, 3.0)]
    assert gap_to_conforming[0] > gap_to_conforming[1] > gap_to_conforming[2]


def test_gawm_stacked_matrices_iterate_independently():
    rng = np.random.default_rng(RNG_SEED)
    stack = np.stack([rng.random((5, 6)), np.tile(rng.random(6), (5, 1))])
    result = gawm(stack)
    for k in range(2):
        alone = gawm(stack[k])
        np.testing.assert_array_equal(result.system_performance[k], alone.system_performance)
        np.testing.assert_array_equal(result.topic_weights[k], alone.topic_weights)
        assert result.iterations[k] == alone.iterations and result.converged[k] == alone.converged


def test_gawm_two_systems_never_underflow_and_match_the_closed_form_at_any_q():
    # Regression (issue 10): 0.5^q underflows to 0 at q ~ 1,100 and E_t became 0/0 = NaN. With two systems the
    # uniform start puts E_t halfway, so d_1 = d_2 and the start is the fixed point whatever q: E_s is the mean
    # weighted by W_t[j] = |P_1j - P_2j| / sqrt(2).
    p = np.random.default_rng(RNG_SEED).random((2, 20))
    discernment = np.abs(p[0] - p[1])
    expected = p @ discernment / discernment.sum()
    for q in (1.0, 1_100.0, 1e6):
        result = gawm(p, q=q)
        np.testing.assert_allclose(result.system_performance, expected, atol=1e-14)
        np.testing.assert_allclose(result.topic_ease, p.mean(axis=0), atol=1e-15)
        np.testing.assert_allclose(result.system_log_weights, [q * math.log(0.5)] * 2, rtol=1e-15)
    assert gawm(p, q=1_100.0).system_weights.tolist() == [0.0, 0.0]  # Eq. 8 as a float underflows; the means do not


def test_gawm_many_systems_large_q_is_finite_and_equal_to_the_plain_weights_before_underflow():
    # Regression (issue 10): 61 systems (TREC 2006 Terabyte's count) at q ~ 4e4 underflowed every W_s.
    p = np.random.default_rng(RNG_SEED).random((61, 30))
    for q in (4e4, 1e5):
        result = gawm(p, q=q)
        assert np.isfinite(result.system_performance).all() and np.isfinite(result.topic_ease).all()
        assert result.converged
        # E_t is the mean weighted by exp(log W_s): dominated by the most conforming system, never 0/0.
        weights = np.exp(result.system_log_weights - result.system_log_weights.max())
        np.testing.assert_allclose(result.topic_ease, weights @ p / weights.sum(), atol=1e-14)
    # Where (1 - share)^q does not underflow, the log-space weights give the old computation's numbers.
    for q in (2.0, 50.0, 300.0):
        performance, ease, system_weights, topic_weights, _, converged = reference_gawm(p.tolist(), q=q)
        result = gawm(p, q=q)
        assert converged and result.converged
        np.testing.assert_allclose(result.system_performance, performance, atol=1e-12)
        np.testing.assert_allclose(result.topic_ease, ease, atol=1e-12)
        np.testing.assert_allclose(result.system_weights, system_weights, rtol=1e-9, atol=1e-300)


def test_real_terabyte2006_gawm_at_large_q_is_finite():
    path = shared_path("trec_topic_system_matrices", "sigir2019-standardization", "terabyte2006_ap.csv")
    p = np.loadtxt(path, delimiter=",", skiprows=1).T
    assert p.shape == (61, 149)
    # Observed before the fix: q = 1e5 gave NaN for every system and never converged.
    result = gawm(p, q=1e5)
    assert np.isfinite(result.system_performance).all() and result.converged
    np.testing.assert_allclose(result.system_performance, gawm(p, q=4e4).system_performance, atol=1e-12)


@pytest.mark.parametrize(
    ("scores", "kwargs", "message"),
    [
        ([[0.1, 0.2]], {}, "at least 2 systems"),
        ([[0.1, np.nan], [0.2, 0.3]], {}, "NaN"),
        ([[0.1, 0.2], [0.2, 0.3]], {"q": -1.0}, "q"),
        ([[0.1, 0.2], [0.2, 0.3]], {"max_iterations": -1}, "max_iterations"),
    ],
)
def test_gawm_invalid_input_raises_statistic_error(scores, kwargs, message):
    with pytest.raises(StatisticError, match=message):
        gawm(scores, **kwargs)


def _signed_top_pair(matrix, reference, authority_is_left):
    """numpy.linalg.svd's top singular pair, signed by the correlation of the authority side."""
    u, s, vt = np.linalg.svd(matrix)
    left, right = u[:, 0], vt[0]
    authority = left if authority_is_left else right
    sign = np.sign(np.corrcoef(authority, reference)[0, 1])
    return left * sign, right * sign, s[0]


def test_hits_matches_numpy_svd_and_satisfies_the_singular_relation():
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(10):
        p = rng.random((6, 9))
        result = hits(p)
        apa = p - p.mean(axis=0)
        apm = p - p.mean(axis=1, keepdims=True)
        a_s, h_t, s_apa = _signed_top_pair(apa, p.mean(axis=1), authority_is_left=True)
        h_s, a_t, s_apm = _signed_top_pair(apm, p.mean(axis=0), authority_is_left=False)
        np.testing.assert_allclose(result.system_authority, a_s, atol=1e-12)
        np.testing.assert_allclose(result.topic_hubness, h_t, atol=1e-12)
        np.testing.assert_allclose(result.system_hubness, h_s, atol=1e-12)
        np.testing.assert_allclose(result.topic_authority, a_t, atol=1e-12)
        np.testing.assert_allclose(apa @ result.topic_hubness, s_apa * result.system_authority, atol=1e-12)
        np.testing.assert_allclose(apm.T @ result.system_hubness, s_apm * result.topic_authority, atol=1e-12)
        for vector in (result.system_authority, result.system_hubness, result.topic_authority, result.topic_hubness):
            assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-12)
        assert np.corrcoef(result.system_authority, p.mean(axis=1))[0, 1] > 0
        assert np.corrcoef(result.topic_authority, p.mean(axis=0))[0, 1] > 0


def test_hits_sign_follows_the_means_when_scores_are_mirrored():
    p = np.random.default_rng(RNG_SEED).random((5, 7))
    result, mirrored = hits(p), hits(1 - p)
    # Mirroring negates APA and APM, so the singular vectors are the same up to sign while the means
    # reverse: the authorities must flip with them.
    np.testing.assert_allclose(mirrored.system_authority, -result.system_authority, atol=1e-12)
    np.testing.assert_allclose(mirrored.topic_authority, -result.topic_authority, atol=1e-12)
    np.testing.assert_allclose(mirrored.topic_hubness, result.topic_hubness, atol=1e-12)
    np.testing.assert_allclose(mirrored.system_hubness, result.system_hubness, atol=1e-12)


def test_hits_degenerate_matrices_give_zero_blocks_not_nan():
    constant = hits(np.full((3, 4), 0.3))
    for vector in (
        constant.system_authority,
        constant.system_hubness,
        constant.topic_authority,
        constant.topic_hubness,
    ):
        assert not np.isnan(vector).any() and not vector.any()
    identical_systems = hits(np.tile([0.1, 0.3, 0.7], (4, 1)))
    assert not identical_systems.system_authority.any() and not identical_systems.topic_hubness.any()
    np.testing.assert_allclose(identical_systems.topic_authority, np.array([-4, -1, 5]) / math.sqrt(42), atol=1e-12)
    np.testing.assert_allclose(identical_systems.system_hubness, [0.5] * 4, atol=1e-12)


def test_hits_stacked_matrices_match_one_at_a_time():
    stack = np.random.default_rng(RNG_SEED).random((3, 5, 6))
    result = hits(stack)
    for k in range(3):
        alone = hits(stack[k])
        np.testing.assert_allclose(result.system_authority[k], alone.system_authority, atol=1e-13)
        np.testing.assert_allclose(result.topic_authority[k], alone.topic_authority, atol=1e-13)


def test_real_trec8_hits_authority_and_gawm_track_map():
    p = _trec8_ap()
    assert p.shape == (129, 50)
    system_map, topic_mean = p.mean(axis=1), p.mean(axis=0)
    h = hits(p)
    g = gawm(p)
    for vector in (
        h.system_authority,
        h.system_hubness,
        h.topic_authority,
        h.topic_hubness,
        g.system_performance,
        g.topic_ease,
    ):
        assert np.isfinite(vector).all()
    assert g.converged and g.iterations < 50
    # Observed on this file: A(s) vs MAP Kendall 0.931, Spearman 0.990; A(t) vs topic means Kendall 0.979;
    # GAWM E_s vs MAP Kendall 0.931, Spearman 0.990. The bounds leave a margin of about 0.03 below what we
    # observe while still failing for any sign or axis mix-up (which gives correlations near -1 or near 0).
    assert kendalltau(h.system_authority, system_map).statistic > 0.9
    assert spearmanr(h.system_authority, system_map).statistic > 0.98
    assert kendalltau(h.topic_authority, topic_mean).statistic > 0.95
    assert kendalltau(g.system_performance, system_map).statistic > 0.9
    assert spearmanr(g.system_performance, system_map).statistic > 0.98


# --- GAWM on topic counts (the bootstrap's resamples) ------------------------------------------


def resampled_one_by_one(scores: np.ndarray, drawn: np.ndarray, q: float) -> np.ndarray:
    return np.stack([gawm(scores[:, topics], q=q).system_performance for topics in drawn])


def topic_counts(drawn: np.ndarray, topics: int) -> np.ndarray:
    return np.stack([np.bincount(row, minlength=topics) for row in drawn])


@pytest.mark.parametrize("q", [0.0, 1.0, 3.0])
@pytest.mark.parametrize("matrix", ["WEB14GD.csv", "AH99.csv"])
def test_gawm_on_topic_counts_equals_gawm_of_each_resampled_matrix_on_real_runs(matrix: str, q: float) -> None:
    path = shared_path("newbestsub_named_matrices", matrix)
    scores = np.genfromtxt(path, delimiter=",", skip_header=1)[:, 1:]
    drawn = np.random.default_rng(7).integers(0, scores.shape[1], size=(150, scores.shape[1]))
    fast = gawm_resampled(scores, topic_counts(drawn, scores.shape[1]), q=q)
    np.testing.assert_allclose(fast, resampled_one_by_one(scores, drawn, q), rtol=0, atol=1e-12)


def test_gawm_on_topic_counts_keeps_the_pins_of_constant_topics_and_identical_systems() -> None:
    rng = np.random.default_rng(3)
    scores = rng.random((5, 12))
    scores[:, [2, 7]] = 0.25  # topics that discern nothing
    scores[4] = scores[1]  # two identical systems
    drawn = rng.integers(0, 12, size=(60, 12))
    drawn[0] = 2  # a resample of one constant topic: every topic weight falls back to 1
    expected = resampled_one_by_one(scores, drawn, 1.0)
    np.testing.assert_allclose(gawm_resampled(scores, topic_counts(drawn, 12)), expected, rtol=0, atol=1e-12)
    same = np.vstack([scores[0]] * 3)  # identical systems: uniform weights, E_s is each row's mean
    counts = topic_counts(drawn, 12)
    np.testing.assert_allclose(gawm_resampled(same, counts), resampled_one_by_one(same, drawn, 1.0), rtol=0, atol=1e-15)


def test_gawm_on_topic_counts_rejects_mismatched_shapes() -> None:
    with pytest.raises(StatisticError, match=r"an \(m, n\) matrix and \(B, n\) counts"):
        gawm_resampled(np.ones((3, 4)), np.ones((2, 5)))
    with pytest.raises(StatisticError, match="at least 2 systems"):
        gawm_resampled(np.ones((1, 4)), np.ones((2, 4)))
