"""A run's measures under drawn gradings of its unjudged documents (pytest_bvtest.scoring.drawn), against the oracle
CI itself is: the qrels completed by each grading, evaluated as judged, by pytrec_eval where it has the measure and
by the pipeline's columnar evaluation (itself pinned to pytrec_eval in tests/test_columnar.py) where it does not."""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval

from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run
from pytest_bvtest.scoring import drawn
from pytest_bvtest.scoring.lifts import run_lifts
from pytest_bvtest.scoring.measures import evaluate_run
from pytest_bvtest.spec.measures import OptimisticMeasure, parse_measure

#: Measure -> pytrec_eval's (measure, value's key, relevance level), or None where pytrec_eval has no such measure
#: (the columnar evaluation is the oracle).
MEASURES = {
    "nDCG@10": ("ndcg_cut", "ndcg_cut_10", 1),
    "nDCG": ("ndcg", "ndcg", 1),
    "nDCG(gains={0:0,1:1,2:5,3:2})": None,
    "AP": ("map", "map", 1),
    "AP(rel=2)": ("map", "map", 2),
    "GMAP": None,
    "P@5": ("P", "P_5", 1),
    "R@10": ("recall", "recall_10", 1),
    "RR": ("recip_rank", "recip_rank", 1),
    "RR@3": None,
    "RBP(p=0.5)": None,
    "RBP(p=0.8)@5": None,
}
DEPTH = 10


def collection(seed: int) -> tuple[Qrels, Run, list[tuple[str, str]]]:
    """Eight topics of 40 documents, a run ranking 25 of each (ties included), half of the documents judged 0 to 3
    (each topic one judged relevant at least), and the pairs a verdict would grade: every unjudged document of the
    run's top 10, and a few unjudged documents the run does not retrieve (another run's: judged, they join only the
    qrels)."""
    rng = np.random.default_rng(seed)
    judgments, scores, pairs = {}, {}, []
    for t in range(8):
        topic = f"q{t}"
        docs = [f"{topic}d{i}" for i in range(40)]
        judged = rng.permutation(40)[:20]
        judgments[topic] = {docs[i]: int(rng.integers(0, 4)) for i in judged}
        judgments[topic][docs[judged[0]]] = int(rng.integers(1, 4))
        retrieved = rng.permutation(40)[:25]
        scores[topic] = {docs[i]: float(rng.integers(0, 12)) for i in retrieved}  # ties: trec_eval's docno order
        ranking = [doc for _, doc in sorted(((np.float32(v), doc) for doc, v in scores[topic].items()), reverse=True)]
        pairs += [(topic, doc) for doc in ranking[:DEPTH] if doc not in judgments[topic]]
        elsewhere = [doc for doc in docs if doc not in scores[topic] and doc not in judgments[topic]]
        pairs += [(topic, doc) for doc in elsewhere[:2]]
    return Qrels(judgments), Run("run", scores), pairs


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("written", MEASURES)
def test_drawn_values_are_ci_on_the_qrels_completed_by_each_grading(seed, written):
    measure = parse_measure(written)
    assert drawn.computes(measure)
    qrels, run, pairs = collection(seed)
    grades = np.random.default_rng(seed + 10).integers(0, 4, size=(12, len(pairs))) * (
        np.random.default_rng(seed + 20).random((12, len(pairs))) < 0.4
    )
    grades[0] = 0  # a grading that grades nothing relevant: the run as judged
    (lifts,) = run_lifts(qrels, run, [OptimisticMeasure(measure, 3, DEPTH)]).values()
    topics, values = lifts.drawn(pairs, grades)
    assert sorted(topics) == sorted({topic for topic, _ in pairs})
    for s, grading in enumerate(grades):
        completed = {topic: dict(judged) for topic, judged in qrels.judgments.items()}
        for (topic, doc), grade in zip(pairs, grading.tolist()):
            completed[topic][doc] = grade
        if MEASURES[written] is None:
            (oracle,) = evaluate_run(Qrels(completed), run, [measure]).values()
        else:
            name, key, level = MEASURES[written]
            evaluator = pytrec_eval.RelevanceEvaluator(completed, {name}, relevance_level=level)
            oracle = {topic: row[key] for topic, row in evaluator.evaluate(run.scores).items()}
        expected = [min(oracle.get(topic, 0.0), 1.0) for topic in topics]
        np.testing.assert_allclose(values[s], expected, rtol=0, atol=1e-12, err_msg=f"grading {s}")


def test_a_measure_not_scored_here_is_refused():
    assert not drawn.computes(parse_measure("IPrec@0.5"))
    assert not drawn.computes(parse_measure("nDCG(dcg='exp-log2')@10"))


@pytest.mark.parametrize("written", ["nDCG@10", "AP", "RR", "P@5"])
def test_pairs_on_no_topic_the_run_ranks_score_no_topic(written):
    # another run's documents on topics this run does not rank, or none at all: no topic, one value per grading
    qrels, run, _ = collection(1)
    (lifts,) = run_lifts(qrels, run, [OptimisticMeasure(parse_measure(written), 3, DEPTH)]).values()
    for pairs in ([], [("q99", "elsewhere")]):
        topics, values = lifts.drawn(pairs, np.ones((4, len(pairs)), dtype=np.int8))
        assert topics == [] and values.shape == (4, 0)
