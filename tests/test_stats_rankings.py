"""Rankings and rank correlations: tau_AP by hand and against a naive loop, Kendall's tau against scipy,
and the TREC-8 ranking by GAWM against the ranking by MAP."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import shared_path
from scipy.stats import kendalltau

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.stats.gawm import gawm
from pytest_bvtest.stats.rankings import rank_agreement, system_ranks, tau_ap

EXACT = 1e-12


def naive_tau_ap(truth, estimate):
    """Yilmaz et al. SIGIR 2008 read literally.

    Walk down the estimated list, count the correctly ordered items above.
    """
    order = sorted(range(len(estimate)), key=lambda k: -estimate[k])  # Python's sort is stable
    total = 0.0
    for i in range(1, len(order)):
        current = order[i]
        correct = 0.0
        for j in range(i):
            above = order[j]
            if truth[above] > truth[current]:
                correct += 1
            elif truth[above] == truth[current]:
                correct += 0.5
        total += correct / i
    return 2 * total / (len(order) - 1) - 1


def test_tau_ap_hand_worked_examples():
    truth = [4.0, 3.0, 2.0, 1.0]  # A > B > C > D
    # B A C D: C(2) = 0 (B is not above A in truth), C(3) = 2/2, C(4) = 3/3: 2/3 * 2 - 1 = 1/3
    assert tau_ap(truth, [3.0, 4.0, 2.0, 1.0]) == pytest.approx(1 / 3, abs=EXACT)
    # A B D C: C(2) = 1/1, C(3) = 2/2, C(4) = 2/3 (D is not above C): 2/3 * 8/3 - 1 = 7/9
    assert tau_ap(truth, [4.0, 3.0, 1.0, 2.0]) == pytest.approx(7 / 9, abs=EXACT)
    # Kendall's tau is 2/3 for both: one discordant pair of six. tau_AP punishes the swap at the top more.
    assert kendalltau(truth, [3.0, 4.0, 2.0, 1.0]).statistic == pytest.approx(2 / 3)
    assert tau_ap(truth, truth) == 1.0 and tau_ap(truth, truth[::-1]) == -1.0


def test_tau_ap_matches_the_naive_loop_with_and_without_ties():
    rng = np.random.default_rng(2008)
    for size in (2, 3, 7, 30):
        for _ in range(20):
            truth, estimate = rng.random(size), rng.random(size)
            assert tau_ap(truth, estimate) == pytest.approx(naive_tau_ap(truth, estimate), abs=EXACT)
            tied_truth, tied_estimate = rng.integers(0, 3, size).astype(float), rng.integers(0, 3, size).astype(float)
            assert tau_ap(tied_truth, tied_estimate) == pytest.approx(
                naive_tau_ap(tied_truth, tied_estimate), abs=EXACT
            )


def test_tau_ap_averages_to_kendalls_tau_over_all_rankings_of_four():
    # Over every permutation both are 0 on average, and tau_AP equals tau when the only error is in the middle
    # pair with symmetric weights; a sanity check of the scale rather than of one value.
    truth = np.arange(4.0, 0.0, -1.0)
    values = [tau_ap(truth, np.array(p, dtype=float)) for p in itertools.permutations(range(4))]
    assert np.mean(values) == pytest.approx(0.0, abs=EXACT)
    assert min(values) == -1.0 and max(values) == 1.0


def test_rank_agreement_uses_scipys_kendall_tau_b():
    rng = np.random.default_rng(1)
    truth, estimate = rng.random(12), rng.random(12)
    estimate[3] = estimate[5]  # a tie: tau-b
    agreement = rank_agreement(truth, estimate)
    reference = kendalltau(truth, estimate)
    assert agreement.kendall_tau == pytest.approx(reference.statistic, abs=EXACT)
    assert agreement.kendall_p == pytest.approx(reference.pvalue, abs=EXACT)
    assert agreement.tau_ap == pytest.approx(naive_tau_ap(truth, estimate), abs=EXACT)


def test_system_ranks_follow_the_direction_and_average_ties():
    assert system_ranks([0.2, 0.5, 0.5, 0.1], higher_is_better=True).tolist() == [3.0, 1.5, 1.5, 4.0]
    assert system_ranks([0.2, 0.5, 0.5, 0.1], higher_is_better=False).tolist() == [2.0, 3.5, 3.5, 1.0]
    assert system_ranks([-np.inf, 0.0, np.inf], higher_is_better=True).tolist() == [3.0, 2.0, 1.0]
    with pytest.raises(StatisticError, match="NaN"):
        system_ranks([0.1, np.nan], higher_is_better=True)
    with pytest.raises(StatisticError, match="at least 2 systems"):
        tau_ap([0.1], [0.2])


def test_real_trec8_ranking_by_gawm_agrees_with_map():
    path = shared_path("trec_topic_system_matrices", "sigir2019-statistical", "adhoc8_ap.csv")
    p = np.loadtxt(path, delimiter=",", skiprows=1).T
    system_map, performance = p.mean(axis=1), gawm(p).system_performance
    agreement = rank_agreement(system_map, performance)
    assert agreement.kendall_tau == pytest.approx(kendalltau(system_map, performance).statistic, abs=EXACT)
    assert agreement.tau_ap == pytest.approx(naive_tau_ap(system_map, performance), abs=EXACT)
    # Observed: Kendall 0.931 (as in test_stats_gawm), tau_AP a little lower (top swaps weigh more).
    assert 0.9 < agreement.kendall_tau < 0.96 and 0.8 < agreement.tau_ap <= agreement.kendall_tau + 0.02
