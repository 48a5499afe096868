"""Per-topic bias-variance over simulated collections (MATH.md section 3e)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from conftest import shared_path
from scipy.stats import kendalltau, pearsonr, poisson, spearmanr

from pytest_bvtest.errors import StatisticError
from pytest_bvtest.io.textfiles import open_text
from pytest_bvtest.stats.simulation import (
    RetrievedList,
    _average_precision,
    _draw_samples,
    _pair_generator,
    simulate_topic_bias_variance,
)

RNG_SEED = 2022


def _random_list(rng, length, relevant_fraction, unretrieved=0, levels=None):
    scores = rng.random(length) if levels is None else rng.integers(0, levels, length).astype(float)
    relevant = rng.random(length) < relevant_fraction
    return RetrievedList(scores, relevant, int(relevant.sum()) + unretrieved)


def _collection(rng, systems=4, topics=3):
    lists = [[_random_list(rng, 40, 0.3, unretrieved=0) for _ in range(topics)] for _ in range(systems)]
    # Systems must agree on R per topic: give every system the largest retrieved count plus 2 unretrieved.
    for j in range(topics):
        total = max(int(row[j].relevant.sum()) for row in lists) + 2
        for row in lists:
            row[j] = RetrievedList(row[j].scores, row[j].relevant, total)
    return lists


def reference_average_precision(scores, relevant, relevant_total):
    """Textbook AP: rank by score descending, non-relevant before relevant on equal scores."""
    ranking = sorted(zip(scores, relevant), key=lambda item: (-item[0], item[1]))
    hits, total = 0, 0.0
    for rank, (_, is_relevant) in enumerate(ranking, start=1):
        if is_relevant:
            hits += 1
            total += hits / rank
    return total / relevant_total if relevant_total else 0.0


def test_sampled_ap_matches_textbook_ap_of_the_drawn_ranking():
    rng = np.random.default_rng(RNG_SEED)
    cases = {
        "ties": _random_list(rng, 30, 0.4, unretrieved=3, levels=4),
        "continuous": _random_list(rng, 50, 0.2, unretrieved=5),
        "only-relevant": RetrievedList([3.0, 2.0, 2.0, 1.0], [True] * 4, 6),
    }
    for name, retrieved in cases.items():
        draws = _draw_samples(retrieved, 25, _pair_generator(7, retrieved, name))
        unretrieved = retrieved.relevant_in_qrels - int(retrieved.relevant.sum())
        computed = _average_precision(draws, draws.drawn_relevant + unretrieved)
        for b in range(25):
            r_b = int(draws.drawn_relevant[b])
            relevant_scores = draws.relevant_scores[draws.relevant_index[b, :r_b]].tolist()
            other_scores = draws.other_scores[draws.other_index[b, : retrieved.scores.size - r_b]].tolist()
            assert r_b + len(other_scores) == retrieved.scores.size or name == "only-relevant"
            expected = reference_average_precision(
                relevant_scores + other_scores, [True] * r_b + [False] * len(other_scores), r_b + unretrieved
            )
            assert computed[b] == pytest.approx(expected, abs=1e-12), (name, b)
        # The public function uses exactly these draws for (seed 7, this list, topic name).
        result = simulate_topic_bias_variance([[retrieved]], ["sys"], [name], samples=25, seed=7)
        np.testing.assert_array_equal(result.sample_scores[0, 0], computed)


def test_draws_are_poisson_capped_and_come_from_the_right_pools():
    retrieved = RetrievedList([5.0, 4.0, 3.0, 2.0, 1.0], [True, True, True, False, False], 3)
    draws = _draw_samples(retrieved, 5000, _pair_generator(0, retrieved, "t"))
    assert draws.drawn_relevant.max() == 5  # Poisson(3) exceeds L = 5 often enough: capped, never more
    expected_mean = sum(k * poisson.pmf(k, 3) for k in range(5)) + 5 * poisson.sf(4, 3)
    assert draws.drawn_relevant.mean() == pytest.approx(expected_mean, abs=0.05)
    assert set(draws.relevant_scores.tolist()) == {5.0, 4.0, 3.0}
    assert set(draws.other_scores.tolist()) == {2.0, 1.0}


def test_same_seed_same_samples_and_other_seed_differs():
    lists = _collection(np.random.default_rng(RNG_SEED))
    names, topics = ["a", "b", "c", "d"], ["401", "402", "403"]
    first = simulate_topic_bias_variance(lists, names, topics, samples=30, seed=3)
    again = simulate_topic_bias_variance(lists, names, topics, samples=30, seed=3)
    other = simulate_topic_bias_variance(lists, names, topics, samples=30, seed=4)
    np.testing.assert_array_equal(first.sample_scores, again.sample_scores)
    np.testing.assert_array_equal(first.topic_bias2, again.topic_bias2)
    assert not np.array_equal(first.sample_scores, other.sample_scores)
    assert first.seed == 3 and first.samples == 30


def test_adding_or_reordering_systems_leaves_each_systems_samples_unchanged():
    lists = _collection(np.random.default_rng(RNG_SEED), systems=3)
    topics = ["t1", "t2", "t3"]
    two = simulate_topic_bias_variance(lists[:2], ["bm25", "rm3"], topics, samples=40, seed=1)
    three = simulate_topic_bias_variance(
        [lists[2], lists[0], lists[1]], ["bert", "bm25", "rm3"], topics, samples=40, seed=1
    )
    np.testing.assert_array_equal(three.sample_scores[1:], two.sample_scores)


def test_the_same_list_under_another_name_draws_the_same_samples():
    # A candidate identical to production must get the same estimates: the draws follow the list, not the name.
    lists = _collection(np.random.default_rng(RNG_SEED), systems=2)
    topics = ["t1", "t2", "t3"]
    copy = [
        RetrievedList(item.scores[::-1].copy(), item.relevant[::-1].copy(), item.relevant_in_qrels) for item in lists[0]
    ]
    result = simulate_topic_bias_variance(
        [lists[0], lists[1], copy], ["prod", "bm25", "cand"], topics, samples=50, seed=3
    )
    np.testing.assert_array_equal(result.sample_scores[2], result.sample_scores[0])
    np.testing.assert_array_equal(result.topic_var[2], result.topic_var[0])
    assert not np.array_equal(result.sample_scores[1], result.sample_scores[0])
    # one changed topic: only that topic's samples change
    changed = list(copy)
    changed[1] = RetrievedList(
        np.append(copy[1].scores, -1.0), np.append(copy[1].relevant, False), copy[1].relevant_in_qrels
    )
    result = simulate_topic_bias_variance([lists[0], changed], ["prod", "cand"], topics, samples=50, seed=3)
    np.testing.assert_array_equal(result.sample_scores[1][[0, 2]], result.sample_scores[0][[0, 2]])
    assert not np.array_equal(result.sample_scores[1][1], result.sample_scores[0][1])


def test_no_relevant_retrieved_scores_zero_in_every_sample():
    empty = RetrievedList([], [], 4)
    none_relevant = RetrievedList([0.9, 0.5, 0.1], [False, False, False], 4)
    some = RetrievedList([0.9, 0.5, 0.1], [True, False, True], 4)
    result = simulate_topic_bias_variance([[empty], [none_relevant], [some]], ["x", "y", "z"], ["t"], samples=50)
    assert not result.sample_scores[:2].any()
    assert result.topic_var[0, 0] == 0 and result.topic_var[1, 0] == 0
    assert result.sample_scores[2].any()
    assert np.isfinite(result.topic_bias2).all()


def test_all_retrieved_relevant_and_nothing_unretrieved_gives_ap_one():
    rng = np.random.default_rng(RNG_SEED)
    perfect = RetrievedList(rng.random(20), [True] * 20, 20)  # P(r_b = 0) = exp(-20)
    weaker = RetrievedList(rng.random(40), [True] * 20 + [False] * 20, 20)
    result = simulate_topic_bias_variance([[perfect], [weaker]], ["perfect", "weaker"], ["t"], samples=100)
    assert result.sample_scores[0, 0].tolist() == [1.0] * 100
    assert result.topic_var[0, 0] == 0 and result.topic_bias2[0, 0] == 0
    assert result.c.tolist() == [1.0]
    assert (result.sample_scores[1, 0] < 1).any()


def test_monte_carlo_mean_matches_analytical_expectation_when_relevant_rank_first():
    # Relevant scores all above non-relevant ones: AP = r_b / (r_b + R - r), r_b ~ min(Poisson(r), L).
    retrieved = RetrievedList([9.0, 8.0, 2.0, 1.0], [True, True, False, False], 4)
    samples = 20000
    result = simulate_topic_bias_variance([[retrieved]], ["s"], ["t"], samples=samples, seed=11)
    k = np.arange(4)
    expected = np.sum(poisson.pmf(k, 2) * k / (k + 2)) + poisson.sf(3, 2) * 4 / 6
    values = result.sample_scores[0, 0]
    assert values.mean() == pytest.approx(expected, abs=4 * values.std() / np.sqrt(samples))


def test_monte_carlo_mean_matches_analytical_expectation_with_all_scores_tied():
    # Every score equal: non-relevant first, so the r_b relevant draws sit at ranks L - r_b + 1 .. L.
    length, retrieved_relevant, relevant_total = 6, 2, 3
    retrieved = RetrievedList([1.0] * length, [True, True, False, False, False, False], relevant_total)
    samples = 20000
    result = simulate_topic_bias_variance([[retrieved]], ["s"], ["t"], samples=samples, seed=5)

    def tied_ap(r_b):
        if r_b == 0:
            return 0.0
        return sum(h / (length - r_b + h) for h in range(1, r_b + 1)) / (r_b + relevant_total - retrieved_relevant)

    expected = sum(poisson.pmf(k, retrieved_relevant) * tied_ap(k) for k in range(length))
    expected += poisson.sf(length - 1, retrieved_relevant) * tied_ap(length)
    values = result.sample_scores[0, 0]
    assert values.mean() == pytest.approx(expected, abs=4 * values.std() / np.sqrt(samples))


def test_bias_variance_terms_follow_eq_12_to_14_and_tradeoff_matches_scipy():
    lists = _collection(np.random.default_rng(RNG_SEED), systems=5, topics=4)
    names, topics = [f"s{i}" for i in range(5)], [f"t{j}" for j in range(4)]
    result = simulate_topic_bias_variance(lists, names, topics, samples=60, seed=9)
    x = result.sample_scores
    target = x.max(axis=0)  # (n, B): best system in each sample
    c = target.mean(axis=1)
    bias2 = (x.mean(axis=2) - c) ** 2
    var = x.var(axis=2)
    np.testing.assert_allclose(result.c, c, atol=1e-15)
    np.testing.assert_allclose(result.topic_bias2, bias2, atol=1e-15)
    np.testing.assert_allclose(result.topic_var, var, atol=1e-15)
    np.testing.assert_allclose(result.bias2, bias2.mean(axis=1), atol=1e-15)
    np.testing.assert_allclose(result.var, var.mean(axis=1), atol=1e-15)
    for j in range(4):
        assert result.topic_tradeoff[j].pearson == pytest.approx(pearsonr(bias2[:, j], var[:, j]).statistic, abs=1e-12)
        assert result.topic_tradeoff[j].spearman == pytest.approx(
            spearmanr(bias2[:, j], var[:, j]).statistic, abs=1e-12
        )
    assert result.tradeoff.pearson == pytest.approx(pearsonr(bias2.mean(axis=1), var.mean(axis=1)).statistic, abs=1e-12)
    fixed = simulate_topic_bias_variance(lists, names, topics, samples=60, seed=9, target=1.0)
    np.testing.assert_allclose(fixed.topic_bias2, (x.mean(axis=2) - 1.0) ** 2, atol=1e-15)
    np.testing.assert_array_equal(fixed.topic_var, result.topic_var)


def test_tradeoff_is_none_with_two_systems():
    lists = _collection(np.random.default_rng(RNG_SEED), systems=2, topics=2)
    result = simulate_topic_bias_variance(lists, ["a", "b"], ["1", "2"], samples=10)
    assert all(t.pearson is None and t.spearman is None for t in result.topic_tradeoff)
    assert result.tradeoff.pearson is None


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: RetrievedList([0.1, 0.2], [True], 1), "one score and one relevance flag"),
        (lambda: RetrievedList([0.1, 0.2], [True, True], 1), "qrels have only 1"),
        (lambda: RetrievedList([0.1, np.nan], [True, False], 1), "NaN"),
        (lambda: RetrievedList([0.1], [True], -1), "relevant_in_qrels"),
        (
            lambda: simulate_topic_bias_variance([[RetrievedList([1.0], [True], 1)]] * 2, ["a", "a"], ["t"]),
            "duplicate system names",
        ),
        (
            lambda: simulate_topic_bias_variance(
                [[RetrievedList([1.0], [True], 1)], [RetrievedList([1.0], [True], 2)]], ["a", "b"], ["t"]
            ),
            "disagree",
        ),
        (
            lambda: simulate_topic_bias_variance([[RetrievedList([1.0], [True], 1)]], ["a"], ["t", "u"]),
            "1 systems x 2 topics",
        ),
        (lambda: simulate_topic_bias_variance([[RetrievedList([1.0], [True], 1)]], ["a"], ["t"], samples=0), "samples"),
        (lambda: simulate_topic_bias_variance([[RetrievedList([1.0], [True], 1)]], ["a"], ["t"], seed=-1), "seed"),
    ],
)
def test_invalid_input_raises_statistic_error(build, message):
    with pytest.raises(StatisticError, match=message):
        build()


def _dl_hard_passage_lists(runs):
    """Retrieved lists of DL-HARD passage runs; relevant = grade >= 2 (the official ``trec_eval -l 2``)."""
    folder = shared_path("dl_hard", "dataset")
    relevant = defaultdict(set)
    with open_text(folder / "dl_hard-passage.qrels") as qrels:
        for line in qrels:
            topic, _, docno, grade = line.split()
            if int(grade) >= 2:
                relevant[topic].add(docno)
    topics = sorted(relevant)
    lists, official_ap = [], []
    for run in runs:
        ranked = defaultdict(list)
        with open_text(folder / "baselines" / "passage" / f"{run}.run.gz") as run_file:
            for line in run_file:
                topic, _, docno, _, score, _ = line.split()
                ranked[topic].append((float(score), docno in relevant[topic]))
        lists.append(
            [RetrievedList([s for s, _ in ranked[t]], [r for _, r in ranked[t]], len(relevant[t])) for t in topics]
        )
        with open_text(folder / "baselines" / "passage" / f"{run}.run.eval.gz") as evaluation:
            ap = {p[1]: float(p[2]) for p in (line.split() for line in evaluation) if p[0] == "map" and p[1] != "all"}
        official_ap.append([ap[t] for t in topics])
    return lists, topics, np.array(official_ap)


def test_real_dl_hard_simulated_ap_keeps_each_runs_easy_and_hard_topics():
    runs = ["bm25", "bm25+t5(zs)", "bm25+rm3+bert(zs)"]
    lists, topics, official_ap = _dl_hard_passage_lists(runs)
    assert len(topics) == 49  # one of the 50 topics has no passage graded >= 2
    result = simulate_topic_bias_variance(lists, runs, topics, samples=100, seed=0)
    for values in (result.sample_scores, result.topic_bias2, result.topic_var, result.bias2, result.var):
        assert np.isfinite(values).all()
    simulated_mean = result.sample_scores.mean(axis=-1)
    # Resampling keeps each topic's score pools, so a run's easy and hard topics stay easy and hard.
    # Observed (seed 0): Spearman 0.997 / 0.988 / 0.989 and Kendall 0.974 / 0.940 / 0.926 between the
    # mean simulated AP and trec_eval's AP per topic; the bounds sit a few hundredths below.
    for i in range(len(runs)):
        assert spearmanr(simulated_mean[i], official_ap[i]).statistic > 0.97
        assert kendalltau(simulated_mean[i], official_ap[i]).statistic > 0.88
    again = simulate_topic_bias_variance(lists[1:], runs[1:], topics, samples=100, seed=0)
    np.testing.assert_array_equal(again.sample_scores, result.sample_scores[1:])


# --- every binary-relevance measure (MATH.md 3e "the binary metric"), against pytrec_eval -------------------

_TREC_EVAL_NAMES = {
    ("AP", None): "map",
    ("P", 5): "P_5",
    ("R", 10): "recall_10",
    ("RR", None): "recip_rank",
    ("nDCG", None): "ndcg",
    ("nDCG", 5): "ndcg_cut_5",
    ("Rprec", None): "Rprec",
}


@pytest.mark.parametrize(("measure", "cutoff"), list(_TREC_EVAL_NAMES), ids=lambda v: str(v))
def test_each_simulated_measure_equals_pytrec_eval_on_the_drawn_ranking(measure, cutoff):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(RNG_SEED)
    cases = {
        "ties": _random_list(rng, 30, 0.4, unretrieved=3, levels=4),
        "continuous": _random_list(rng, 12, 0.2, unretrieved=5),
        "only-relevant": RetrievedList([3.0, 2.0, 2.0, 1.0], [True] * 4, 6),
    }
    trec_name = _TREC_EVAL_NAMES[(measure, cutoff)]
    for name, retrieved in cases.items():
        result = simulate_topic_bias_variance(
            [[retrieved]], ["sys"], [name], samples=20, seed=7, measure=measure, cutoff=cutoff
        )
        draws = _draw_samples(retrieved, 20, _pair_generator(7, retrieved, name))  # the same stream as the simulation
        unretrieved = retrieved.relevant_in_qrels - int(retrieved.relevant.sum())
        for b in range(20):
            r_b = int(draws.drawn_relevant[b])
            relevant_scores = draws.relevant_scores[draws.relevant_index[b, :r_b]]
            other_scores = draws.other_scores[draws.other_index[b, : retrieved.scores.size - r_b]]
            # docno descending breaks trec_eval's ties: "z..." (non-relevant) before "a..." (relevant), the PIN
            run = {f"a{k:04d}": float(v) for k, v in enumerate(relevant_scores)}
            run |= {f"z{k:04d}": float(v) for k, v in enumerate(other_scores)}
            qrels = {doc: 1 for doc in run if doc.startswith("a")} | {f"u{k}": 1 for k in range(unretrieved)}
            qrels |= {doc: 0 for doc in run if doc.startswith("z")}
            if not any(qrels.values()):
                assert result.sample_scores[0, 0, b] == 0.0
                continue
            evaluator = pytrec_eval.RelevanceEvaluator({"q": qrels}, {trec_name})
            expected = evaluator.evaluate({"q": run})["q"][trec_name]
            assert result.sample_scores[0, 0, b] == pytest.approx(expected, abs=1e-12), (name, b)
        label = measure if cutoff is None else f"{measure}@{cutoff}"
        assert result.measure == (f"{label} (binary gains)" if measure == "nDCG" else label)


def test_generic_ranking_gives_the_fast_ap_path_exactly():
    rng = np.random.default_rng(11)
    lists = _collection(rng)
    fast = simulate_topic_bias_variance(lists, list("abcd"), ["t1", "t2", "t3"], samples=30, seed=2)
    generic = simulate_topic_bias_variance(
        lists, list("abcd"), ["t1", "t2", "t3"], samples=30, seed=2, measure="AP", cutoff=1000
    )
    np.testing.assert_allclose(generic.sample_scores, fast.sample_scores, atol=1e-12)


@pytest.mark.parametrize(
    ("measure", "cutoff", "message"),
    [
        ("bpref", None, "binary-relevance measures only"),
        ("P", None, "P needs a cutoff"),
        ("Rprec", 5, "Rprec takes no cutoff"),
        ("nDCG", 0, "cutoff must be"),
    ],
)
def test_unsimulable_measures_are_refused(measure, cutoff, message):
    retrieved = RetrievedList([1.0, 0.5], [True, False], 1)
    with pytest.raises(StatisticError, match=message):
        simulate_topic_bias_variance([[retrieved]], ["s"], ["t"], samples=2, measure=measure, cutoff=cutoff)
