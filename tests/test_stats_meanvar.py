"""Mean-variance evaluation (MATH.md section 5): golden values, independent formulas, real data."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_path

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.stats.meanvar import mve_general, mve_inter_topic, mve_intra_topic, variation_layout

RNG_SEED = 20160101


def test_intra_topic_golden_values_from_math_md():
    scores = [[0.6, 0.4, 0.2], [0.8, 0.7, np.nan]]
    present = [[True, True, True], [True, True, False]]
    popularity = [[0.5, 0.3, 0.2], [1.0, 1.0, np.nan]]
    result = mve_intra_topic(scores, alpha=2, weights=[0.5, 0.5], popularity=popularity, present=present)
    np.testing.assert_allclose(result.topic_mu, [0.46, 0.75], rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.topic_var, [0.0244, 0.0025], rtol=0, atol=1e-12)
    assert result.mu == pytest.approx(0.605, abs=1e-12)
    assert result.sigma2 == pytest.approx(0.006725, abs=1e-12)
    assert result.value == pytest.approx(0.59155, abs=1e-12)
    # O_t = w_t mu_t - alpha w_t^2 var_t, and with covariance 0 the portfolio value is their sum.
    np.testing.assert_allclose(
        result.topic_value, [0.5 * 0.46 - 2 * 0.25 * 0.0244, 0.5 * 0.75 - 2 * 0.25 * 0.0025], atol=1e-12
    )
    assert result.topic_value.sum() == pytest.approx(result.value, abs=1e-12)


def test_intra_topic_golden_values_through_variation_layout():
    layout = variation_layout(
        ["t1", "t2", "t1", "t2", "t1"],
        query_popularity=[5, 1, 3, 1, 2],
    )
    assert layout.topics == ("t1", "t2")
    assert not layout.aligned_by_user
    arranged = layout.arrange([0.6, 0.8, 0.4, 0.7, 0.2])
    result = mve_intra_topic(arranged, alpha=2, weights=[1, 1], popularity=layout.popularity, present=layout.present)
    assert result.value == pytest.approx(0.59155, abs=1e-12)
    assert np.isnan(arranged[1, 2])


def test_inter_topic_uniform_is_mean_minus_alpha_population_variance():
    x = np.random.default_rng(RNG_SEED).random((4, 7, 25))
    for alpha in (0.0, 1.5, -3.0):
        result = mve_inter_topic(x, alpha)
        np.testing.assert_allclose(result.mu, x.mean(axis=-1), atol=1e-14)
        np.testing.assert_allclose(result.sigma2, x.var(axis=-1), atol=1e-14)
        np.testing.assert_allclose(result.value, x.mean(axis=-1) - alpha * x.var(axis=-1), atol=1e-14)
    assert result.mu.shape == (4, 7)


def test_inter_topic_weighted_matches_numpy_weighted_moments_and_normalises():
    rng = np.random.default_rng(RNG_SEED)
    x = rng.random((6, 12))
    w = rng.random(12) * 3
    result = mve_inter_topic(x, 0.7, weights=w)
    scaled = mve_inter_topic(x, 0.7, weights=w * 10)
    for i in range(6):
        mean = np.average(x[i], weights=w)
        var = np.cov(x[i], aweights=w, bias=True)
        assert result.mu[i] == pytest.approx(mean, abs=1e-14)
        assert result.sigma2[i] == pytest.approx(var, abs=1e-14)
        assert result.value[i] == pytest.approx(mean - 0.7 * var, abs=1e-14)
    np.testing.assert_allclose(scaled.value, result.value, atol=1e-15)


def test_inter_topic_alpha_sign_orders_stable_and_volatile_systems():
    stable, volatile = [0.5, 0.5, 0.5, 0.5], [0.9, 0.1, 0.9, 0.1]
    averse = mve_inter_topic([stable, volatile], alpha=1.0)
    seeking = mve_inter_topic([stable, volatile], alpha=-1.0)
    assert averse.value[0] == pytest.approx(0.5) and averse.value[1] == pytest.approx(0.5 - 0.16)
    assert seeking.value[1] == pytest.approx(0.5 + 0.16) and seeking.value[0] == pytest.approx(0.5)


def test_intra_topic_vectorised_over_systems_matches_per_system_and_zero_weight_topic():
    rng = np.random.default_rng(RNG_SEED)
    x = rng.random((5, 4, 6))
    present = rng.random((4, 6)) < 0.7
    present[:, 0] = True
    popularity = rng.random((4, 6))
    weights = [0.1, 0.0, 0.6, 0.3]
    batch = mve_intra_topic(x, -0.5, weights=weights, popularity=popularity, present=present)
    w = np.asarray(weights) / sum(weights)
    for i in range(5):
        mus, vars_ = [], []
        for t in range(4):
            values, pops = x[i, t][present[t]], popularity[t][present[t]]
            mus.append(np.average(values, weights=pops))
            vars_.append(np.cov(values, aweights=pops, bias=True) if values.size > 1 else 0.0)
        np.testing.assert_allclose(batch.topic_mu[i], mus, atol=1e-14)
        np.testing.assert_allclose(batch.topic_var[i], vars_, atol=1e-14)
        assert batch.mu[i] == pytest.approx(w @ mus, abs=1e-14)
        assert batch.sigma2[i] == pytest.approx((w**2) @ vars_, abs=1e-14)
    assert batch.topic_value[:, 1].tolist() == [0.0] * 5


def test_general_covariance_double_sum_equals_variance_of_portfolio_returns():
    rng = np.random.default_rng(RNG_SEED)
    users, topics = 9, 5
    x = rng.random((3, users, topics))
    w = rng.random(topics)
    p = rng.random(users)
    result = mve_general(x, alpha=1.3, weights=w, user_probability=p)
    wn, pn = w / w.sum(), p / p.sum()
    for i in range(3):
        covariance = np.cov(x[i].T, aweights=pn, bias=True)  # topics x topics, users as observations
        double_sum = sum(wn[t] * wn[u] * covariance[t, u] for t in range(topics) for u in range(topics))
        expected_mu = sum(wn[t] * np.average(x[i, :, t], weights=pn) for t in range(topics))
        assert result.sigma2[i] == pytest.approx(double_sum, abs=1e-14)
        assert result.mu[i] == pytest.approx(expected_mu, abs=1e-14)
        assert result.value[i] == pytest.approx(expected_mu - 1.3 * double_sum, abs=1e-14)


def test_general_without_covariance_equals_intra_topic_variance_plus_cross_terms():
    # Two users, two topics: user 1 does well on both, user 2 badly on both, so the covariance is positive
    # and the general variance exceeds the intra-topic (covariance 0) variance by 2 w1 w2 cov.
    by_user = np.array([[0.8, 0.6], [0.4, 0.2]])
    general = mve_general(by_user, alpha=1)
    intra = mve_intra_topic(by_user.T, alpha=1)
    cov = np.mean((by_user[:, 0] - 0.6) * (by_user[:, 1] - 0.4))
    assert cov == pytest.approx(0.04)
    assert general.mu == pytest.approx(intra.mu)
    assert general.sigma2 == pytest.approx(intra.sigma2 + 2 * 0.25 * cov)
    assert general.sigma2 == pytest.approx(0.04)


def test_variation_layout_aligned_by_user_feeds_general_form():
    topics = ["a", "a", "b", "b", "c", "c"]
    users = ["u1", "u2", "u2", "u1", "u1", "u2"]
    layout = variation_layout(topics, users)
    assert layout.aligned_by_user and layout.users == ("u1", "u2")
    per_query = np.array([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.6, 0.5, 0.4, 0.3, 0.2, 0.1]])
    by_user = np.swapaxes(layout.arrange(per_query), -1, -2)
    np.testing.assert_array_equal(by_user[0], [[0.1, 0.4, 0.5], [0.2, 0.3, 0.6]])
    result = mve_general(by_user, alpha=0.5)
    np.testing.assert_allclose(result.mu, [0.35, 0.35])


def test_user_probability_is_a_users_constant_share_of_every_topic_and_gives_the_weighted_mean_at_alpha_zero():
    # MATH.md section 5 PIN: popularity that is the same for a user on every topic is the user's probability.
    topics, users = ["a", "a", "b", "b"], ["u1", "u2", "u2", "u1"]
    layout = variation_layout(topics, users, [3.0, 1.0, 2.0, 6.0])
    np.testing.assert_allclose(layout.user_probability(), [0.75, 0.25], rtol=1e-15)
    scores = np.array([0.6, 0.4, 0.7, 0.8])  # a: u1 0.6, u2 0.4; b: u2 0.7, u1 0.8
    arranged = layout.arrange(scores)
    at_zero = mve_general(np.swapaxes(arranged, -1, -2), 0.0, user_probability=layout.user_probability())
    weighted_mean = mve_intra_topic(arranged, 0.0, popularity=layout.popularity, present=layout.present).mu
    assert at_zero.value == pytest.approx(weighted_mean, abs=1e-15)
    assert at_zero.value == pytest.approx((0.75 * 0.6 + 0.25 * 0.4 + 0.75 * 0.8 + 0.25 * 0.7) / 2, abs=1e-15)
    assert variation_layout(topics, users).user_probability().tolist() == [0.5, 0.5]
    assert variation_layout(topics, users, [3.0, 1.0, 1.0, 1.0]).user_probability() is None  # u1: 3/4, then 1/2
    assert variation_layout(["a", "a", "b"], ["u1", "u2", "u1"]).user_probability() is None  # not aligned


def test_variation_layout_not_aligned_when_users_differ_or_repeat():
    assert not variation_layout(["a", "a", "b"], ["u1", "u2", "u1"]).aligned_by_user
    assert not variation_layout(["a", "a", "b", "b"], ["u1", "u1", "u1", "u2"]).aligned_by_user
    assert not variation_layout(["a", "b"]).aligned_by_user


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mve_inter_topic([0.1, np.nan], 1), "NaN"),
        (lambda: mve_inter_topic([], 1), "no scores"),
        (lambda: mve_inter_topic([0.1, 0.2], 1, weights=[0, 0]), "sum to 0"),
        (lambda: mve_inter_topic([0.1, 0.2], 1, weights=[1, -1]), "non-negative"),
        (lambda: mve_inter_topic([0.1, 0.2], 1, weights=[1, 1, 1]), "shape"),
        (lambda: mve_inter_topic([0.1, 0.2], float("inf")), "alpha"),
        (lambda: mve_intra_topic([[0.1, 0.2]], 1, present=[[False, False]]), "no query variation"),
        (lambda: mve_intra_topic([[0.1, 0.2]], 1, popularity=[[0, 0]]), "sums to 0"),
        (lambda: mve_general([[0.1, 0.2]], 1, user_probability=[0, 0]), "shape"),
        (lambda: variation_layout(["a"], ["u1", "u2"]), "users given"),
    ],
)
def test_degenerate_and_invalid_inputs_raise_statistic_error(call, message):
    with pytest.raises(StatisticError, match=message):
        call()


def _read_pairs(path):
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


def test_real_uqv100_per_topic_mean_and_population_std_match_upstream_aggregates():
    folder = shared_path("query_variations_uqv_zendel", "ClueWeb12B", "ap_QL_indri")
    raw = _read_pairs(folder / "raw" / "QLmap1000")
    layout = variation_layout([variant.split("-")[0] for variant, _ in raw])
    arranged = layout.arrange([float(ap) for _, ap in raw])
    result = mve_intra_topic(arranged, alpha=1.0, present=layout.present)
    expected_mean = {topic: float(v) for topic, v in _read_pairs(folder / "aggregated" / "map1000-avg")}
    expected_std = {topic: float(v) for topic, v in _read_pairs(folder / "aggregated" / "map1000-std")}
    assert len(layout.topics) == 100 and layout.present.sum() == 4611
    np.testing.assert_allclose(result.topic_mu, [expected_mean[t] for t in layout.topics], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.sqrt(result.topic_var), [expected_std[t] for t in layout.topics], rtol=0, atol=1e-12)
    assert result.mu == pytest.approx(np.mean(list(expected_mean.values())), abs=1e-12)
    assert result.value == pytest.approx(result.mu - np.sum(result.topic_var) / 100**2, abs=1e-15)


# --- variance: sample (Zuccon et al. 2016's pilot divides by n - 1; docs/mathematics.md section 5) -----------


def test_inter_topic_sample_variance_is_numpy_ddof_1_with_uniform_weights():
    rng = np.random.default_rng(3)
    scores = rng.random((4, 9))
    result = mve_inter_topic(scores, 1.5, variance="sample")
    np.testing.assert_allclose(result.sigma2, np.var(scores, axis=1, ddof=1), rtol=1e-13)
    np.testing.assert_allclose(result.value, scores.mean(axis=1) - 1.5 * np.var(scores, axis=1, ddof=1), rtol=1e-13)
    np.testing.assert_allclose(np.sum(result.topic_value, axis=-1), result.value, rtol=1e-13)


def test_inter_topic_weighted_sample_variance_is_the_reliability_weights_estimator():
    scores = np.array([0.2, 0.5, 0.9, 0.4])
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    p = weights / weights.sum()
    mu = float(p @ scores)
    # naive loop of sum p (x - mu)^2 / (1 - sum p^2)
    expected = sum(pi * (xi - mu) ** 2 for pi, xi in zip(p, scores)) / (1 - sum(pi * pi for pi in p))
    result = mve_inter_topic(scores, 2.0, weights, variance="sample")
    assert result.sigma2 == pytest.approx(expected, rel=1e-13)
    assert float(np.sum(result.topic_value)) == pytest.approx(mu - 2.0 * expected, rel=1e-13)


def test_intra_topic_sample_variance_golden_from_math_md_example():
    # MATH.md section 5's example; topic 2 has two equally popular variations [0.8, 0.7]: sample var 0.005.
    scores = np.array([[0.6, 0.4, 0.2], [0.8, 0.7, np.nan]])
    present = ~np.isnan(scores)
    popularity = np.array([[0.5, 0.3, 0.2], [1.0, 1.0, 0.0]])
    result = mve_intra_topic(scores, 2.0, popularity=popularity, present=present, variance="sample")
    # topic 1: 0.0244 / (1 - (0.25 + 0.09 + 0.04)) = 0.0244 / 0.62; topic 2: statistics.variance([0.8, 0.7]) = 0.005
    np.testing.assert_allclose(result.topic_var, [0.0244 / 0.62, 0.005], rtol=1e-12)
    assert result.sigma2 == pytest.approx(0.25 * (0.0244 / 0.62 + 0.005), rel=1e-12)
    assert result.value == pytest.approx(0.605 - 2 * 0.25 * (0.0244 / 0.62 + 0.005), rel=1e-12)


def test_general_sample_variance_is_ddof_1_over_equally_likely_users():
    rng = np.random.default_rng(8)
    scores = rng.random((5, 3))  # 5 users x 3 topics
    result = mve_general(scores, 3.0, variance="sample")
    portfolio = scores.mean(axis=1)
    assert result.sigma2 == pytest.approx(np.var(portfolio, ddof=1), rel=1e-13)
    assert float(np.sum(result.topic_value)) == pytest.approx(result.value, rel=1e-13)


def test_sample_variance_of_a_single_value_is_an_error():
    with pytest.raises(StatisticError, match="at least 2 topics"):
        mve_inter_topic([0.4], 1.0, variance="sample")
    with pytest.raises(StatisticError, match=r"at least 2 variations.*\[1\]"):
        mve_intra_topic(
            np.array([[0.6, 0.4], [0.8, np.nan]]), 1.0, present=[[True, True], [True, False]], variance="sample"
        )
    with pytest.raises(StatisticError, match="unknown variance convention"):
        mve_inter_topic([0.4, 0.5], 1.0, variance="unbiased")
