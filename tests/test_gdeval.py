"""ERR@k and exponential-gain nDCG@k: MATH.md section 1 golden values and the bundled gdeval.pl."""

from __future__ import annotations

import gzip
import math
import shutil
import subprocess
from pathlib import Path

import ir_measures
import numpy as np
import pytest

from pytest_bvtest.errors import InputError, StatisticError
from pytest_bvtest.io.qrels import Qrels, read_qrels
from pytest_bvtest.io.runs import Run, read_run
from pytest_bvtest.scoring.gdeval import (
    expected_reciprocal_rank,
    exponential_ndcg,
    ideal_grade_matrix,
    ranked_docnos,
    ranked_grade_matrix,
)
from pytest_bvtest.scoring.measures import evaluate_run
from pytest_bvtest.spec.measures import parse_measure
from tests.conftest import shared_path

GDEVAL_PL = Path(ir_measures.__file__).parent / "bin" / "gdeval.pl"

# MATH.md section 1: topic 1 has a spam document (-2) ranked first, a non-relevant (0) and an unjudged
# document (d6) tied with a relevant one (d1) at score 3.0.
GOLDEN_QRELS = Qrels({"1": {"d1": 3, "d2": 1, "d3": 0, "d4": -2, "d5": 2}, "3": {"f1": 4, "f2": 1}})
GOLDEN_RUN = Run("golden", {"1": {"d4": 5.0, "d2": 4.0, "d1": 3.0, "d6": 3.0, "d5": 1.0}, "3": {"f2": 2.0, "f1": 1.0}})

ERR_5 = parse_measure("ERR@5")
EXP_NDCG_5 = parse_measure("nDCG(dcg='exp-log2')@5")


def test_err_at_5_reproduces_the_golden_values():
    values = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, [ERR_5])[ERR_5]
    assert values == {"1": pytest.approx(0.1535645, abs=1e-7), "3": pytest.approx(0.5019531, abs=1e-7)}


def test_exponential_ndcg_at_5_reproduces_the_golden_values():
    values = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, [EXP_NDCG_5])[EXP_NDCG_5]
    assert values == {"1": pytest.approx(0.511693, abs=1e-6), "3": pytest.approx(0.66944, abs=1e-5)}


def test_ties_are_broken_by_docno_descending():
    assert ranked_docnos(GOLDEN_RUN.scores["1"]) == ["d4", "d2", "d6", "d1", "d5"]
    assert ranked_docnos(GOLDEN_RUN.scores["1"], depth=3) == ["d4", "d2", "d6"]
    # The other tie order (d1 before d6) would score differently, so the golden value pins the rule.
    other_order = np.array([[-2, 1, 3, 0, 2]])
    other_err = (1 / 2) * (1 / 16) + (1 / 3) * (7 / 16) * (15 / 16) + (1 / 5) * (3 / 16) * (15 / 16) * (9 / 16)
    assert expected_reciprocal_rank(other_order)[0] == pytest.approx(other_err, abs=1e-15)
    assert other_err == pytest.approx(0.1877441, abs=1e-7)


def test_grades_at_or_below_zero_and_unjudged_documents_give_no_gain():
    qrels = Qrels({"7": {"spam": -2, "nonrel": 0, "rel": 1}})
    run = Run("r", {"7": {"spam": 4.0, "nonrel": 3.0, "unjudged": 2.0, "rel": 1.0}})
    values = evaluate_run(qrels, run, [ERR_5, EXP_NDCG_5])
    # Only rank 4 has gain: ERR = (1/4) (2^1 - 1)/16; nDCG = (1/log2 5) / (1/log2 2).
    assert values[ERR_5]["7"] == pytest.approx(1 / 64, abs=1e-15)
    assert values[EXP_NDCG_5]["7"] == pytest.approx(1 / math.log2(5), abs=1e-15)


def test_a_cutoff_beyond_the_ranking_changes_nothing():
    deep = [parse_measure("ERR@20"), parse_measure("nDCG(dcg='exp-log2')@20")]
    shallow = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, [ERR_5, EXP_NDCG_5])
    values = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, deep)
    assert values[deep[0]] == pytest.approx(shallow[ERR_5], abs=1e-15)
    assert values[deep[1]] == pytest.approx(shallow[EXP_NDCG_5], abs=1e-15)


def test_the_ideal_ranking_is_cut_at_k():
    measure = parse_measure("nDCG(dcg='exp-log2')@2")
    value = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, [measure])[measure]["1"]
    # Ranks 1-2 hold grades -2 and 1; the ideal top two are grades 3 and 2.
    assert value == pytest.approx((1 / math.log2(3)) / (7 + 3 / math.log2(3)), abs=1e-15)
    assert value == pytest.approx(0.0709484, abs=1e-7)


def test_grade_matrices_pad_short_rankings_with_zero():
    grades = ranked_grade_matrix(GOLDEN_QRELS.judgments, GOLDEN_RUN.scores, ["1", "3"], depth=4)
    assert grades.tolist() == [[-2, 1, 0, 3], [1, 4, 0, 0]]
    ideal = ideal_grade_matrix(GOLDEN_QRELS.judgments, ["1", "3"])
    assert ideal.tolist() == [[3, 2, 1], [4, 1, 0]]


def test_err_rejects_a_grade_above_four_naming_topic_and_document():
    qrels = Qrels({"9": {"good": 5, "ok": 1}}, path=Path("graded.qrels"))
    run = Run("r", {"9": {"good": 1.0}})
    with pytest.raises(InputError) as raised:
        evaluate_run(qrels, run, [ERR_5])
    message = str(raised.value)
    assert message.startswith("graded.qrels: topic 9, document good has grade 5")
    assert "0..4" in message


def test_exponential_ndcg_accepts_a_grade_above_four():
    qrels = Qrels({"9": {"best": 5, "ok": 1}})
    run = Run("r", {"9": {"ok": 2.0, "best": 1.0}})
    value = evaluate_run(qrels, run, [EXP_NDCG_5])[EXP_NDCG_5]["9"]
    assert value == pytest.approx((1 + 31 / math.log2(3)) / (31 + 1 / math.log2(3)), abs=1e-15)


def test_exponential_ndcg_is_undefined_without_a_positive_grade():
    with pytest.raises(StatisticError):
        exponential_ndcg(np.array([[1.0, 0.0]]), np.array([[0.0, 0.0]]))


def _gdeval_pl(qrels_path: Path, run_path: Path, k: int) -> dict[str, tuple[float, float]]:
    """gdeval.pl's per-topic (nDCG@k, ERR@k)."""
    if shutil.which("perl") is None or not GDEVAL_PL.exists():
        pytest.skip("perl or ir_measures' bundled gdeval.pl is not available")
    output = subprocess.run(
        ["perl", str(GDEVAL_PL), str(qrels_path), str(run_path), str(k)], capture_output=True, text=True, check=True
    ).stdout
    header, *rows = output.splitlines()
    assert header == f"runid,topic,ndcg@{k},err@{k}"
    values = {}
    for row in rows:
        _, topic, ndcg, err = row.split(",")
        values[topic] = (float(ndcg), float(err))
    return values


def test_golden_values_agree_with_gdeval_pl(tmp_path):
    qrels_path = tmp_path / "golden.qrels"
    run_path = tmp_path / "golden.run"
    qrels_path.write_text(
        "".join(
            f"{qid} 0 {docno} {grade}\n"
            for qid, docs in GOLDEN_QRELS.judgments.items()
            for docno, grade in docs.items()
        )
    )
    run_path.write_text(
        "".join(
            f"{qid} Q0 {docno} {rank} {score} golden\n"
            for qid, docs in GOLDEN_RUN.scores.items()
            for rank, (docno, score) in enumerate(docs.items(), start=1)
        )
    )
    expected = _gdeval_pl(qrels_path, run_path, 5)
    values = evaluate_run(GOLDEN_QRELS, GOLDEN_RUN, [EXP_NDCG_5, ERR_5])
    for topic, (ndcg, err) in expected.items():
        assert values[EXP_NDCG_5][topic] == pytest.approx(ndcg, abs=5e-6)
        assert values[ERR_5][topic] == pytest.approx(err, abs=5e-6)


WEB2012_RUNS = [
    f"{model}.results-{variant}"
    for model in ("ql", "rm")
    for variant in ("cata", "cata-filtered", "catb", "catb-filtered")
]


@pytest.mark.parametrize("run_name", WEB2012_RUNS)
def test_err_and_exponential_ndcg_at_20_agree_with_gdeval_pl_on_web2012_baselines(tmp_path, run_name):
    folder = shared_path("trec_web2012_risk_baselines")
    qrels_path = folder / "qrels.web.151-200.txt"
    gz_path = folder / "runs" / f"{run_name}.txt.gz"
    plain_run = tmp_path / f"{run_name}.txt"
    with gzip.open(gz_path, "rb") as source, open(plain_run, "wb") as target:
        shutil.copyfileobj(source, target)
    expected = _gdeval_pl(qrels_path, plain_run, 20)

    err, ndcg = parse_measure("ERR@20"), parse_measure("nDCG(dcg='exp-log2')@20")
    values = evaluate_run(read_qrels(qrels_path), read_run(gz_path), [err, ndcg])

    assert len(expected) == 50
    assert set(values[err]) == set(values[ndcg]) == set(expected)
    for topic, (expected_ndcg, expected_err) in expected.items():
        assert values[ndcg][topic] == pytest.approx(expected_ndcg, abs=1e-4), topic
        assert values[err][topic] == pytest.approx(expected_err, abs=1e-4), topic
