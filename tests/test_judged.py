"""The optimistic value M+ of docs/mathematics.md §10 (MATH.md §8 PIN), against a brute-force recomputation.

The brute force completes the qrels: every unjudged document of a run's first d ranks (trec_eval's order) is
judged g+, and the measure is computed by its own evaluator on the completed qrels, pytrec_eval for trec_eval's
measures and gdeval.pl (bundled with ir_measures) for ERR and gdeval's nDCG. The PIN keeps the normalisation of
the judged qrels, so AP and R@k are rescaled by R(completed) / R(judged) and nDCG by the ideal DCGs' ratio (the
ideal DCG computed here by a plain loop), then capped at 1; P@k, RR and ERR have no normalisation. Judged@k
against ir_measures on every shared run is in tests/test_columnar.py.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import ir_measures
import numpy as np
import pytest
import pytrec_eval

from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run
from pytest_bvtest.scoring.measures import evaluate_run
from pytest_bvtest.spec.measures import OptimisticMeasure, UnjudgedCount, parse_measure
from tests.test_columnar import random_qrels_and_run
from tests.test_measures import GOLDEN_QRELS, GOLDEN_RUN

GDEVAL_PL = Path(ir_measures.__file__).parent / "bin" / "gdeval.pl"

# Hand-made: topic 1 is MATH.md §1's golden example (d6 unjudged at rank 3 by the tie with d1); topic 2 puts
# unjudged documents at ranks 1, 3 and 6 around judged ones; topic 3 retrieves only unjudged documents and a
# relevant one at rank 12; topic 4 is judged to the bottom (M+ = M); topic 5 has no grade 2 (R(rel=2) = 0).
HAND_QRELS = Qrels(
    {
        **GOLDEN_QRELS.judgments,
        "2": {"a": 2, "b": 0, "c": 1, "e": 3, "z": 2},
        "4": {"p": 1, "q": 0, "r": 3},
        "5": {"s": 1, "t": 0},
        "6": {"deep": 1, "x0": 0},
    }
)
HAND_RUN = Run(
    "hand",
    {
        **GOLDEN_RUN.scores,
        "2": {"u1": 9.0, "a": 8.0, "u2": 7.0, "b": 6.0, "c": 5.0, "u3": 4.0, "e": 3.0},
        "4": {"q": 3.0, "r": 2.0, "p": 1.0},
        "5": {"v1": 4.0, "s": 3.0, "v2": 2.0, "t": 1.0},
        "6": {**{f"w{rank:02d}": 20.0 - rank for rank in range(11)}, "deep": 1.0},
    },
)
# topic 3 of the golden example is judged to the bottom as well: f2 (1) then f1 (4)

MEASURES = ["AP", "AP(rel=2)", "nDCG", "nDCG@3", "nDCG@10", "P@1", "P@5", "P(rel=2)@3", "R@3", "R(rel=2)@5"]
MEASURES += ["RR", "RR(rel=2)", "RR@2", "RR@10"]
GDEVAL_MEASURES = ["ERR@3", "ERR@10", "nDCG(dcg='exp-log2')@5"]


def trec_eval_order(scores: dict[str, float]) -> list[str]:
    """Docnos by score as a C float, descending, ties by docno descending (docs/mathematics.md §1)."""
    return [docno for _, docno in sorted(((np.float32(score), docno) for docno, score in scores.items()), reverse=True)]


def completed(qrels: Qrels, run: Run, depth: int, grade: int) -> dict[str, dict[str, int]]:
    """The qrels with every unjudged document of the run's first ``depth`` ranks judged ``grade``."""
    judgments = {qid: dict(docs) for qid, docs in qrels.judgments.items()}
    for qid, scores in run.scores.items():
        if qid in judgments:
            for docno in trec_eval_order(scores)[:depth]:
                judgments[qid].setdefault(docno, grade)
    return judgments


def relevant_count(grades: dict[str, int], rel: int) -> int:
    return sum(grade >= rel for grade in grades.values())


def ideal_dcg(grades: dict[str, int], cutoff: int | None, gain) -> float:
    ideal = sorted((grade for grade in grades.values() if grade > 0), reverse=True)[:cutoff]
    return sum(gain(grade) / math.log2(rank + 2) for rank, grade in enumerate(ideal))


def brute_force_trec_eval(measure_name: str, qrels: Qrels, run: Run, depth: int, grade: int) -> dict[str, float]:
    """M+ by pytrec_eval on the completed qrels, rescaled to the judged qrels' normalisation and capped at 1."""
    measure = parse_measure(measure_name)
    full = completed(qrels, run, depth, grade)
    label = measure.trec_eval_name or measure.trec_eval_family
    evaluator = pytrec_eval.RelevanceEvaluator(full, {label}, relevance_level=measure.rel or 1)
    topics = [qid for qid in qrels.evaluated_topics() if qid in run.scores]
    values = evaluator.evaluate({qid: run.scores[qid] for qid in topics})
    expected = {}
    for qid in topics:
        value = values[qid][label]
        if measure.name == "RR" and measure.cutoff is not None and value > 0 and round(1 / value) > measure.cutoff:
            value = 0.0
        if measure.name in ("AP", "R"):
            judged = relevant_count(qrels.judgments[qid], measure.rel)
            value = 0.0 if judged == 0 else value * relevant_count(full[qid], measure.rel) / judged
        if measure.name == "nDCG":
            linear = float  # trec_eval's gain is the grade
            judged_ideal = ideal_dcg(qrels.judgments[qid], measure.cutoff, linear)
            value *= ideal_dcg(full[qid], measure.cutoff, linear) / judged_ideal
        expected[qid] = min(value, 1.0)
    return expected


def gdeval_pl(judgments: dict[str, dict[str, int]], run: Run, k: int, folder: Path) -> dict[str, tuple[float, float]]:
    """gdeval.pl's per-topic (nDCG@k, ERR@k) of ``run`` against ``judgments``."""
    if shutil.which("perl") is None or not GDEVAL_PL.exists():
        pytest.skip("perl or ir_measures' bundled gdeval.pl is not available")
    qrels_path, run_path = folder / "completed.qrels", folder / "hand.run"
    qrels_path.write_text(
        "".join(f"{qid} 0 {docno} {grade}\n" for qid, docs in judgments.items() for docno, grade in docs.items())
    )
    run_path.write_text(
        "".join(
            f"{qid} Q0 {docno} {rank} {scores[docno]!r} hand\n"
            for qid, scores in run.scores.items()
            for rank, docno in enumerate(trec_eval_order(scores), start=1)
        )
    )
    output = subprocess.run(
        ["perl", str(GDEVAL_PL), str(qrels_path), str(run_path), str(k)], capture_output=True, text=True, check=True
    ).stdout
    values = {}
    for row in output.splitlines()[1:]:
        _, topic, ndcg, err = row.split(",")
        values[topic] = (float(ndcg), float(err))
    return values


def optimistic(measure_name: str, grade: int, judging_depth: int = 10) -> OptimisticMeasure:
    measure = parse_measure(measure_name)
    return OptimisticMeasure(measure, grade, measure.depth(judging_depth))


@pytest.mark.parametrize("grade", [1, 2, 3])
@pytest.mark.parametrize("name", MEASURES)
def test_optimistic_trec_eval_measures_equal_the_brute_force_on_hand_made_rankings(name, grade):
    measure = optimistic(name, grade)
    got = evaluate_run(HAND_QRELS, HAND_RUN, [measure])[measure]
    expected = brute_force_trec_eval(name, HAND_QRELS, HAND_RUN, measure.depth, grade)
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_optimistic_values_equal_the_brute_force_on_seeded_rankings_with_ties_and_spam(seed):
    qrels, run = random_qrels_and_run(seed)
    top = max(max(docs.values()) for docs in qrels.judgments.values())
    measures = [optimistic(name, top, judging_depth=7) for name in MEASURES]
    values = evaluate_run(qrels, run, measures)
    for name, measure in zip(MEASURES, measures):
        expected = brute_force_trec_eval(name, qrels, run, measure.depth, top)
        assert values[measure] == pytest.approx(expected, abs=1e-12), (seed, name)


def test_optimistic_gdeval_measures_equal_gdeval_pl_on_the_completed_qrels(tmp_path):
    grade = 3
    for name in GDEVAL_MEASURES:
        measure = optimistic(name, grade)
        got = evaluate_run(HAND_QRELS, HAND_RUN, [measure])[measure]
        full = completed(HAND_QRELS, HAND_RUN, measure.depth, grade)
        expected = gdeval_pl(full, HAND_RUN, measure.depth, tmp_path)
        for qid, value in got.items():
            ndcg, err = expected[qid]
            if measure.measure.name == "ERR":
                assert value == pytest.approx(err, abs=5e-6), (name, qid)
            else:
                exponential = lambda g: 2.0**g - 1  # noqa: E731
                judged = HAND_QRELS.judgments[qid]
                rescaled = ndcg * ideal_dcg(full[qid], 5, exponential) / ideal_dcg(judged, 5, exponential)
                assert value == pytest.approx(min(rescaled, 1.0), abs=5e-6), (name, qid)


def test_golden_optimistic_values_of_the_worked_example():
    # docs/mathematics.md §10's worked example: topic 1, g+ = 3, d6 (unjudged) at rank 3
    names = ["AP", "P@5", "RR", "nDCG@5"]
    measures = [optimistic(name, 3) for name in names]
    values = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, measures)
    topic_1 = [values[measure]["1"] for measure in measures]
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    dcg = 1 / math.log2(3) + 3 / 2 + 3 / math.log2(5) + 2 / math.log2(6)
    assert topic_1 == pytest.approx([(1 / 2 + 2 / 3 + 3 / 4 + 4 / 5) / 3, 4 / 5, 1 / 2, dcg / ideal], abs=1e-12)
    assert [round(value, 4) for value in topic_1] == [0.9056, 0.8, 0.5, 0.8813]


def test_a_run_judged_to_its_depth_has_its_plain_values_and_no_unjudged_document():
    measures = [parse_measure(name) for name in MEASURES]
    plain = evaluate_run(HAND_QRELS, HAND_RUN, measures)
    lifted = evaluate_run(HAND_QRELS, HAND_RUN, [optimistic(name, 3) for name in MEASURES] + [UnjudgedCount(10)])
    assert lifted[UnjudgedCount(10)] == {"1": 1.0, "3": 0.0, "2": 3.0, "4": 0.0, "5": 2.0, "6": 10.0}
    for name, measure in zip(MEASURES, measures):
        assert lifted[optimistic(name, 3)]["4"] == plain[measure]["4"]
        assert lifted[optimistic(name, 3)]["3"] == plain[measure]["3"]
        assert all(lifted[optimistic(name, 3)][qid] >= plain[measure][qid] for qid in plain[measure]), name
