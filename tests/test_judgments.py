"""What was judged, through the pipeline and the reports (docs/judgments.md, docs/mathematics.md §9).

The real case is MATH.md §8's: DL19 passage with the qrels kept to what a pool of monoT5's, ColBERT's and DRMM's
top 10 would judge (the official DL19 qrels restricted to those pairs), monoBERT as the candidate, monoT5 as the
reference. Each real-data evaluation is computed once per module.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import ir_measures
import numpy as np
import pytest
from conftest import shared_path

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import read_run
from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
from pytest_bvtest.report import terminal
from pytest_bvtest.report.markdown import render
from pytest_bvtest.report.outputs import evaluation_document
from pytest_bvtest.spec.reader import load_spec

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project" / "bvtest.yaml"
DL19_RUNS = {
    "monot5": "run-msmarco-passage-bm25-monot5-0.8-0.5.txt.gz",
    "colbert": "colbert-on-bm25-trec-dl-queries.gz",
    "drmm": "drmm.res.gz",
    "monobert": "run-msmarco-passage-bm25-monobert-0.8-0.5.txt.gz",
}
GATES = """
gates:
  - {statistic: trisk, false_alarm: 0.05}
  - {statistic: var, max_increase: 10%, false_alarm: 0.05}
  - {statistic: bias2_plus_var, max_increase: 10%, false_alarm: 0.05}
  - {statistic: mean, max_decrease: 0.01, false_alarm: 0.05}
"""


def trec_eval_order(scores: dict[str, float]) -> list[str]:
    """Docnos by score as a C float, descending, ties by docno descending (docs/mathematics.md §1)."""
    return [docno for _, docno in sorted(((np.float32(score), docno) for docno, score in scores.items()), reverse=True)]


def pooled_qrels(qrels_path: Path, runs: list[Path], depth: int, target: Path) -> Path:
    """The qrels kept to the pairs a pool of ``runs``' top ``depth`` (trec_eval's order) would have judged."""
    pool = set()
    for path in runs:
        for qid, scores in read_run(path).scores.items():
            pool.update((qid, docno) for docno in trec_eval_order(scores)[:depth])
    qrels = read_qrels(qrels_path)
    target.write_text(
        "".join(
            f"{qid} 0 {docno} {grade}\n"
            for qid, grades in qrels.judgments.items()
            for docno, grade in grades.items()
            if (qid, docno) in pool
        )
    )
    return target


def dl19_spec(folder: Path, qrels: Path, *, extra: str = "") -> Path:
    runs = shared_path("dl19_passage_qppeval_runs", "runs")
    topics = shared_path("anserini_tools_qrels_topics", "topics", "topics.dl19-passage.txt")
    baselines = "".join(f"  {name}: {runs / DL19_RUNS[name]}\n" for name in ("monot5", "colbert", "drmm"))
    spec = folder / "bvtest.yaml"
    spec.write_text(
        f"qrels: {qrels}\ntopics: {topics}\nmeasures: [nDCG@10]\nbaselines:\n{baselines}"
        f"candidate: {{run: {runs / DL19_RUNS['monobert']}, name: monobert}}\nreference: monot5\n"
        f"analysis: {{risk_alpha: 1}}\ncache: false\n{textwrap.dedent(extra)}{GATES}"
    )
    return spec


@pytest.fixture(scope="module")
def dl19_pooled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """The DL19 pooled-qrels case: its spec and its evaluation."""
    folder = tmp_path_factory.mktemp("dl19-pooled")
    runs = shared_path("dl19_passage_qppeval_runs", "runs")
    qrels = pooled_qrels(
        shared_path("anserini_tools_qrels_topics", "qrels", "qrels.dl19-passage.txt"),
        [runs / DL19_RUNS[name] for name in ("monot5", "colbert", "drmm")],
        10,
        folder / "pooled.qrels",
    )
    spec = dl19_spec(folder, qrels)
    return spec, evaluate_spec(load_spec(spec), use_cache=False)


def test_each_systems_judged_share_is_ir_measures_judged_at_10(dl19_pooled):
    """ir_measures given each ranking in trec_eval's order (DRMM ties scores across rank 10 on 7 topics, which
    ir_measures would break by docno ascending; tests/test_columnar.py compares the raw runs)."""
    spec, evaluation = dl19_pooled
    measure = evaluation.measure("nDCG@10")
    judged = measure.judgments
    assert (judged.label, judged.depth, judged.grade, judged.complete) == ("Judged@10", 10, 3, False)
    qrels = read_qrels(load_spec(spec).qrels)
    runs = shared_path("dl19_passage_qppeval_runs", "runs")
    for row, name in enumerate(measure.matrix.systems):
        ranked = {
            qid: {docno: -rank for rank, docno in enumerate(trec_eval_order(scores))}
            for qid, scores in read_run(runs / DL19_RUNS[name]).scores.items()
        }
        expected = {
            metric.query_id: metric.value
            for metric in ir_measures.iter_calc([ir_measures.Judged @ 10], qrels.judgments, ranked)
        }
        assert judged.shares[row] == pytest.approx([expected[topic] for topic in measure.topics], abs=1e-12), name
        documents = sum(round(10 * (1 - expected[topic])) for topic in measure.topics)
        assert judged.unjudged_documents(row) == documents, name
    # the pool's own runs are not fully judged either: the official DL19 pool did not judge all of their top 10
    assert [judged.unjudged_documents(row) for row in range(4)] == [21, 29, 28, 66]


def test_the_reports_show_the_judged_shares_beside_the_measure(dl19_pooled):
    _, evaluation = dl19_pooled
    document = evaluation_document(evaluation)
    (measure,) = document["evaluations"]
    assert measure["judgments"] == {
        "label": "Judged@10",
        "depth": 10,
        "optimistic_grade": 3,
        "complete": False,
        "corners": True,
    }
    candidate = next(system for system in measure["systems"] if system["name"] == "monobert")
    assert candidate["judged"] == pytest.approx(0.8465116, abs=1e-6) and candidate["unjudged"] == 66
    assert len(candidate["judged_per_topic"]) == len(measure["topics"]) == 43
    line = (
        "Judged@10, the share of each top 10 the qrels judge (an unjudged document counts as non-relevant): "
        "monot5 0.951 (21 unjudged), colbert 0.933 (29 unjudged), drmm 0.935 (28 unjudged), "
        "monobert 0.847 (66 unjudged)"
    )
    verbose = [text for text, _ in terminal.summary_lines(document, verbosity=1)]
    assert line in verbose
    markdown = render(document)
    assert f"**nDCG@10** · {line}" in markdown  # beside the gated measure, outside the folded tables


def test_a_fully_judged_collection_says_so_in_one_line_and_nowhere_else():
    evaluation = evaluate_spec(spec_under_test(EXAMPLE), use_cache=False)
    document = evaluation_document(evaluation)
    assert [measure["judgments"]["complete"] for measure in document["evaluations"]] == [True, True]
    verbose = "\n".join(text for text, _ in terminal.summary_lines(document, verbosity=1))
    assert verbose.count("Judged@10: every system's top 10 is judged") == 2  # nDCG@10's and AP's (judging depth)
    assert "judge" not in "\n".join(text for text, _ in terminal.summary_lines(document, verbosity=0)).lower()
    assert "judge" not in "\n".join(text for text, _ in terminal.summary_lines(document, verbosity=-1)).lower()
    markdown = render(document)
    body = markdown.split("<details>", 1)[0]
    assert "judge" not in body.lower() and markdown.count("every system's top 10 is judged") == 2


def test_a_grade_above_the_qrels_top_grade_is_refused_at_its_line(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 2\n1 0 d2 0\n")
    run = tmp_path / "new.run"
    run.write_text("1 Q0 d1 1 2.0 new\n1 Q0 d3 2 1.0 new\n")
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(f"qrels: {qrels}\nmeasures: [AP]\ncandidate: {run}\njudgments:\n  optimistic_grade: 3\n")
    with pytest.raises(InputError) as raised:
        evaluate_spec(load_spec(spec), use_cache=False)
    assert str(raised.value).startswith(f"{spec}:5: judgments.optimistic_grade: 3 is above the top grade of the qrels")


def test_systems_from_tables_have_no_judged_share(tmp_path):
    table = tmp_path / "ap.csv"
    table.write_text("system,1,2\nprod,0.5,0.25\nnew,0.25,0.5\n")
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(f"measures: [AP]\nbaselines: {table}\ncandidate: new\n")
    document = evaluation_document(evaluate_spec(load_spec(spec), use_cache=False))
    (measure,) = document["evaluations"]
    assert measure["judgments"] is None
    assert {system["judged"] for system in measure["systems"]} == {None}


def test_the_optimistic_values_beside_the_measure_are_the_pipelines(dl19_pooled):
    _, evaluation = dl19_pooled
    measure = evaluation.measure("nDCG@10")
    judged = measure.judgments
    # M+ is M where the top 10 is judged, above it where it is not (unless M is already 1), never above 1
    scores, complete = measure.matrix.scores, judged.unjudged == 0
    assert np.array_equal(judged.optimistic[complete], scores[complete])
    assert (judged.optimistic[~complete & (scores < 1)] > scores[~complete & (scores < 1)]).all()
    assert judged.optimistic.max() <= 1.0 and (~complete).sum() == (judged.shares < 1).sum() == 65
