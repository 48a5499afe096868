"""The plausible gradings of unjudged documents (docs/mathematics.md §10; MATH.md §8 "How plausible a verdict is"),
each function against its definition done the straightforward way."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.stats.plausible import (
    DISCOUNT_STREAM,
    GRADES_STREAM,
    draw_discounts,
    draw_grades,
    draw_group_discounts,
    grade_prior,
    grade_shares,
    judgments_to_settle,
    verdict_settled,
)


def test_the_shares_are_each_topics_judged_grades_shrunk_with_ten_pseudo_documents():
    counts = np.array([[6, 3, 1], [0, 0, 0], [2, 0, 8]])
    overall = np.array([8, 3, 9]) / 20
    shares = grade_shares(counts)
    assert shares[0] == pytest.approx((np.array([6, 3, 1]) + 10 * overall) / 20)
    assert shares[1] == pytest.approx(overall)  # nothing judged on the topic: every topic's distribution
    assert shares[2] == pytest.approx((np.array([2, 0, 8]) + 10 * overall) / 20)
    assert grade_shares(counts, shrinkage=0)[2] == pytest.approx([0.2, 0.0, 0.8])


def test_the_prior_discounts_every_positive_grade_by_lambda():
    counts = np.array([[6, 3, 1]])
    shares = grade_shares(counts)[0]
    prior = grade_prior(counts, 0.4)[0]
    assert prior[1:] == pytest.approx(0.4 * shares[1:])
    assert prior.sum() == pytest.approx(1.0)
    assert grade_prior(counts, 0.0)[0] == pytest.approx([1.0, 0.0, 0.0])
    with pytest.raises(StatisticError, match=r"\[0, 1\]"):
        grade_prior(counts, 1.5)


def test_the_grades_follow_the_documented_rule_draw_for_draw():
    shares = np.array([[0.5, 0.3, 0.2], [0.1, 0.0, 0.9], [1.0, 0.0, 0.0]])
    discounts = np.tile([0.6, 0.3, 0.9], (50, 1))
    grades = draw_grades(shares, discounts, seed=7)
    uniform = np.random.default_rng([7, GRADES_STREAM]).random((50, 3))
    for s in range(50):
        for k in range(3):
            expected = 0
            for grade in (1, 2):
                if uniform[s, k] < discounts[s, k] * shares[k, 1 : grade + 1].sum():
                    expected = grade
                    break
            assert grades[s, k] == expected


def test_the_grades_have_the_priors_frequencies():
    shares = np.array([[0.4, 0.35, 0.25]] * 4)
    grades = draw_grades(shares, np.full((20_000, 4), 0.5), seed=1)
    observed = np.bincount(grades.ravel(), minlength=3) / grades.size
    # lambda * p(g) for g > 0: 0.175 and 0.125; binomial sd at 80,000 draws is about 0.0014
    assert observed == pytest.approx([0.7, 0.175, 0.125], abs=0.006)


def test_the_discounts_are_one_beta_draw_per_grading_and_group():
    groups = np.array([0, 1, 1, 2, 0])
    discounts = draw_discounts(groups, 4000, 0.4, 0.15, seed=3)
    assert discounts.shape == (4000, 5)
    assert np.array_equal(discounts[:, 0], discounts[:, 4]) and np.array_equal(discounts[:, 1], discounts[:, 2])
    k = 0.4 * 0.6 / 0.15**2 - 1
    expected = np.random.default_rng([3, DISCOUNT_STREAM]).beta(0.4 * k, 0.6 * k, size=(4000, 3))
    assert np.array_equal(discounts, expected[:, groups])
    assert discounts[:, 3].mean() == pytest.approx(0.4, abs=0.01)
    assert discounts[:, 3].std() == pytest.approx(0.15, abs=0.01)
    assert np.array_equal(draw_discounts(groups, 10, 0.4, 0.0, seed=3), np.full((10, 5), 0.4))
    with pytest.raises(StatisticError, match="must be below"):
        draw_discounts(groups, 10, 0.4, 0.5, seed=3)


@pytest.mark.parametrize("passing, drawn", [(0, 100), (0, 200), (100, 100), (200, 200), (50, 100), (500, 1000)])
def test_a_verdict_is_settled_when_the_clopper_pearson_interval_lies_on_one_side(passing, drawn):
    risk = 1e-3
    low = stats.beta.ppf(risk / 2, passing, drawn - passing + 1) if passing else 0.0
    high = stats.beta.ppf(1 - risk / 2, passing + 1, drawn - passing) if passing < drawn else 1.0
    expected = low >= 0.95 or high <= 0.05 or (low > 0.05 and high < 0.95)
    assert verdict_settled(passing, drawn, 0.95, risk) == expected


def test_a_gate_that_fails_every_one_of_its_first_200_gradings_is_settled_but_not_after_100():
    assert not verdict_settled(0, 100, 0.95)  # P could still be 7%: 0.93**100 is 0.07%, above the 0.05% risk
    assert verdict_settled(0, 200, 0.95)
    assert verdict_settled(900, 1000, 0.95)  # [0.87, 0.93]: undecided, whatever more gradings say
    assert not verdict_settled(940, 1000, 0.95)  # [0.92, 0.96] straddles 95%


def test_the_judgments_to_settle_a_linear_gate_are_found_by_their_effects():
    rng = np.random.default_rng(0)
    grades = rng.integers(0, 2, size=(2000, 6)).astype(float)
    effects = np.array([0.5, 0.4, 0.0, 0.0, 0.01, 0.02])
    margins = 0.05 + (grades - grades.mean(axis=0)) @ effects
    order = np.argsort(-np.abs(effects) * grades.std(axis=0), kind="stable")
    # judged, the first document leaves a margin of 0.3 or -0.2 against a spread of 0.2 (z 1.64: none settled); the
    # second leaves 0.5, 0.1, 0.0 or -0.4 against 0.011: three in four settled
    assert judgments_to_settle(grades, margins, effects, order, 0.95) == 2
    # a gate whose margin no document moves, and that sits on its limit, is never settled by judgments
    noise = rng.normal(0, 0.1, size=2000)
    assert judgments_to_settle(grades, noise, np.zeros(6), order, 0.95) is None


def test_gradings_drawn_a_block_at_a_time_are_those_of_one_draw():
    # the plausible verdicts draw their gradings a block at a time, in a block's memory: the same gradings, draw
    # for draw, as one draw of them all
    rng = np.random.default_rng(11)
    shares = grade_shares(rng.integers(0, 5, size=(6, 3)))
    groups = np.array([0, 1, 0, 2, 2, 1])
    whole = draw_discounts(groups, 250, 0.4, 0.15, seed=9)
    assert np.array_equal(whole, draw_group_discounts(3, 250, 0.4, 0.15, seed=9)[:, groups])
    grades = draw_grades(shares, whole, seed=9)
    blocks = [draw_grades(shares, whole[first : first + 100], seed=9, first=first) for first in (0, 100, 200)]
    assert np.array_equal(np.concatenate(blocks), grades)
    assert not np.array_equal(blocks[1], grades[:100])


def settle_one_by_one(grades, margins, effects, order, confidence):
    """The definition of judgments_to_settle, one document count at a time."""
    grades = np.asarray(grades, dtype=float)[:, order]
    terms = (grades - grades.mean(axis=0)) * effects[order]
    rest = margins - margins.mean() - terms.sum(axis=1)
    unknown = np.cumsum(terms[:, ::-1], axis=1)[:, ::-1]
    z = float(stats.norm.ppf(confidence))
    known = np.full(len(margins), float(margins.mean()))
    for judged in range(1, len(order) + 1):
        known = known + terms[:, judged - 1]
        remaining = unknown[:, judged] if judged < len(order) else np.zeros(len(margins))
        if np.mean(np.abs(known) >= z * float(np.std(remaining + rest))) >= 0.5:
            return judged
    return None


@pytest.mark.parametrize("seed", range(12))
def test_the_judgments_to_settle_equal_the_count_found_one_document_at_a_time(seed):
    # blocks of counts at once (a gate of 140,000 unjudged documents tried each count in a Python loop): the same
    # count, also past a block's end, and None alike
    rng = np.random.default_rng(seed)
    draws, documents = int(rng.integers(20, 300)), int(rng.integers(1, 500))  # blocks of 64, 128, 256
    grades = rng.integers(0, 3, size=(draws, documents))
    effects = rng.normal(0, 1, size=documents) * (rng.random(documents) < 0.3) * 10.0 ** rng.integers(-3, 0)
    margins = rng.normal(0, 1) * 0.05 + (grades - grades.mean(axis=0)) @ effects + rng.normal(0, 0.02, size=draws)
    order = rng.permutation(documents)
    for confidence in (0.9, 0.95, 0.99):
        expected = settle_one_by_one(grades, margins, effects, order, confidence)
        assert judgments_to_settle(grades, margins, effects, order, confidence) == expected
