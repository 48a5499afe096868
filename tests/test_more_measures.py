"""GMAP, RBP and its residual, nDCG with custom gains, IPrec@r, SetF(beta=b) and Compat against independent references.

- trec_eval 10.0's own expected outputs (shared ``trec_eval_test``): ``gm_map`` (also with ``-c`` on the truncated
  run, whose missing topics trec_eval floors at 1e-5, and with ``-l 2``), ``iprec_at_recall_*`` (the eleven standard
  levels, .25 and .75, and at ``-l 2``), ``set_F`` and ``ndcg_1=3,2=9,4=4.5`` (the gain parameters of nDCG).
- Every shared run that has qrels (trec_eval's test runs, DL-HARD, DL19 re-rankers, TREC Web 2012 with spam grades,
  TREC-COVID rounds 1-4): GMAP against pytrec_eval's per-query ``gm_map``; nDCG with gains, SetF(beta=2) and
  Compat against ir_measures (its pytrec_eval and compat providers); IPrec against pytrec_eval where its trec_eval 9
  cuts the recall level where trec_eval 10 does, and against a loop port of trec_eval 10's m_iprec_at_recall.c
  everywhere; RBP and its residual against a loop over the ranking (Moffat & Zobel's definitions).
- RBP(rel=N) against ir_measures with its cwl_eval provider (the ``test`` extra installs it) on every shared run,
  and RBP and its residual against trec_eval 10.0's ``rbp`` and ``rbp_resid``.
- RBP's optimistic value M+ (the corners of docs/mathematics.md §8) is exactly RBP + residual.

ir_measures ranks by score in double precision and breaks ties by docno ascending, trec_eval (and every measure here,
docs/mathematics.md §1) by the score as a C float and docno descending: it is given each ranking in trec_eval's order
as strictly decreasing positive scores, so that the two compare the measure and not the tie rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import ir_measures
import numpy as np
import pytest
import pytrec_eval
from conftest import shared_path

from pytest_bvtest.io.qrels import Qrels, read_qrels
from pytest_bvtest.io.runs import Run, read_run
from pytest_bvtest.scoring import columnar
from pytest_bvtest.scoring.measures import evaluate_run, evaluate_run_documents
from pytest_bvtest.spec.measures import OptimisticMeasure, Residual, parse_measure

TOLERANCE = 1e-12
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.25, 0.3, 0.5, 0.75, 1.0)
GAINS = "nDCG(gains={0:0,1:1,2:3,3:7})@10"
MEASURES = [
    parse_measure(name)
    for name in (
        "GMAP",
        "GMAP(rel=2)",
        GAINS,
        "SetF",
        "SetF(beta=2)",
        "SetF(beta=0.5,rel=2)",
        "Compat",
        "Compat(p=0.8,normalize=False)",
        "RBP(p=0.8)",
        "RBP(p=0.5,rel=2)",
        "RBP(p=0.9)@20",
        *(f"IPrec@{level}" for level in RECALL_LEVELS),
        "IPrec(rel=2)@0.3",
    )
]
RBPS = [measure for measure in MEASURES if measure.name == "RBP"]


def trec_eval_order(run: Run) -> dict[str, list[str]]:
    """Each topic's docnos in trec_eval's order: the score as a C float descending, ties by docno descending."""
    return {
        qid: [
            docno for _, docno in sorted(((np.float32(score), docno) for docno, score in scores.items()), reverse=True)
        ]
        for qid, scores in run.scores.items()
    }


def trec_eval_test_runs() -> Iterator[tuple[Path, Path]]:
    folder = shared_path("trec_eval_test")
    for qrels, run in (
        ("qrels.test", "results.test"),
        ("qrels.rel_level", "results.test"),
        ("qrels-302.test", "results-302.test"),
        ("qrels.comment.test", "results.comment.test.gz"),
    ):
        yield folder / qrels, folder / run


def dl_hard_runs() -> Iterator[tuple[Path, Path]]:
    folder = shared_path("dl_hard", "dataset")
    for task in ("doc", "passage"):
        for path in sorted((folder / "baselines" / task).glob("*.run.gz")):
            yield folder / f"dl_hard-{task}.qrels", path


def dl19_runs() -> Iterator[tuple[Path, Path]]:
    folder = shared_path("dl19_passage_qppeval_runs")
    for path in sorted((folder / "runs").glob("*.gz")):
        yield folder / "trecdl1920.qrels", path


def web2012_runs() -> Iterator[tuple[Path, Path]]:
    folder = shared_path("trec_web2012_risk_baselines")
    for path in sorted((folder / "runs").glob("*.txt.gz")):
        yield folder / "qrels.web.151-200.txt", path


def covid_runs(folder: str, round_number: int) -> Iterator[tuple[Path, Path]]:
    qrels = shared_path("anserini_tools_qrels_topics", "qrels", f"qrels.covid-round{round_number}.txt")
    for path in sorted(shared_path("trec_covid_ohsu_runs", "runs", folder).glob("*.txt.gz")):
        yield qrels, path


#: Every shared run that has qrels, by collection: (qrels, run) pairs; a test skips when the data is absent.
SHARED_RUNS = {
    "trec_eval": trec_eval_test_runs,
    "DL-HARD": dl_hard_runs,
    "DL19": dl19_runs,
    "Web 2012": web2012_runs,
    "TREC-COVID round 1": lambda: covid_runs("Round1_Runs", 1),
    "TREC-COVID round 2": lambda: covid_runs("Round2_Runs", 2),
    "TREC-COVID round 3": lambda: covid_runs("Round3_Runs_v2", 3),
    "TREC-COVID round 4": lambda: covid_runs("Round4_Runs_LessRM3", 4),
}


def iprec_trec_eval_10(relevant_flags: list[bool], relevant_total: int, recall: float, *, version: int = 10) -> float:
    """m_iprec_at_recall.c of trec_eval 10.0, line by line (``version=9``: the cut of trec_eval 9, pytrec_eval's)."""
    retrieved, found = len(relevant_flags), sum(relevant_flags)
    exact = recall * relevant_total
    cut = math.floor(exact + 0.5) if version == 10 else int(exact + 0.9)
    if cut > found or not retrieved:
        return 0.0
    best = found / retrieved
    so_far = found
    value = None
    for i in range(retrieved, 0, -1):
        if so_far == 0:
            break
        best = max(best, so_far / i)
        if relevant_flags[i - 1]:
            if so_far == cut:
                value = best
            so_far -= 1
    return best if value is None else value


def rbp_by_loop(ranking: list[str], judged: dict[str, int], measure) -> tuple[float, float]:
    """RBP and its residual over one ranking (Moffat & Zobel, TOIS 2008): sum of (1 - p) p^(i-1) over the relevant
    ranks, and over the unjudged ranks plus p^L for the ranks after a ranking of L documents (to the cut-off)."""
    p, depth = measure.p, measure.cutoff or len(ranking)
    value = residual = 0.0
    for i, docno in enumerate(ranking[:depth]):
        weight = (1 - p) * p**i
        grade = judged.get(docno)
        if grade is None:
            residual += weight
        elif grade >= measure.rel:
            value += weight
    shown = min(len(ranking), depth)
    residual += p**shown - (p**measure.cutoff if measure.cutoff else 0.0)
    return value, residual


def assert_equal_to_references(qrels: Qrels, run: Run, label: str) -> None:
    ours = evaluate_run(qrels, run, [*MEASURES, *map(Residual, RBPS)])
    topics = list(ours[MEASURES[0]])
    judgments = {qid: qrels.judgments[qid] for qid in topics}
    rankings = {qid: run.scores[qid] for qid in topics}
    ordered = trec_eval_order(run)

    def close(measure, reference: dict[str, float], what: str) -> None:
        worst = max(abs(ours[measure][qid] - reference[qid]) for qid in topics)
        assert worst <= TOLERANCE, f"{label} {run.name}: {measure} differs from {what} by {worst:g}"

    # GMAP: pytrec_eval's gm_map per query is log(max(AP, 1e-5)), trec_eval's own value; with set_F and the
    # standard recall levels of iprec_at_recall from one evaluator per relevance level
    standard = {}
    for rel in (1, 2):
        evaluator = pytrec_eval.RelevanceEvaluator(
            judgments, {"gm_map", "set_F", "iprec_at_recall"}, relevance_level=rel
        )
        standard[rel] = evaluator.evaluate(rankings)
    close(parse_measure("GMAP"), {qid: standard[1][qid]["gm_map"] for qid in topics}, "pytrec_eval's gm_map")
    close(parse_measure("GMAP(rel=2)"), {qid: standard[2][qid]["gm_map"] for qid in topics}, "gm_map at -l 2")
    close(parse_measure("SetF"), {qid: standard[1][qid]["set_F"] for qid in topics}, "pytrec_eval's set_F")

    # nDCG with gains, SetF(beta=b) and Compat: ir_measures, given the rankings in trec_eval's order
    scored = {qid: {docno: float(len(ordered[qid]) - i) for i, docno in enumerate(ordered[qid])} for qid in topics}
    theirs: dict[tuple[str, str], float] = {}
    references = {
        GAINS: "nDCG(gains={0:0,1:1,2:3,3:7})@10",
        "SetF(beta=2)": "SetF(beta=2.0)",
        "SetF(beta=0.5,rel=2)": "SetF(rel=2,beta=0.5)",
        "Compat": "Compat",
        "Compat(p=0.8,normalize=False)": "Compat(p=0.8,normalize=False)",
    }
    parsed = {name: ir_measures.parse_measure(reference) for name, reference in references.items()}
    if max(max(grades.values()) for grades in judgments.values()) < 2:
        parsed.pop("SetF(beta=0.5,rel=2)")  # rel=2 reaches no judgment: nothing to compare
    for metric in ir_measures.iter_calc(list(parsed.values()), judgments, scored):
        theirs[repr(metric.measure), metric.query_id] = metric.value
    for name, measure in parsed.items():
        close(parse_measure(name), {qid: theirs[repr(measure), qid] for qid in topics}, f"ir_measures' {measure}")

    # IPrec: trec_eval 10's rounding of the recall level; pytrec_eval (trec_eval 9) where both cut alike
    for rel in (1, 2):
        flags = {qid: [judgments[qid].get(docno, 0) >= rel for docno in ordered[qid]] for qid in topics}
        relevant = {qid: sum(grade >= rel for grade in judgments[qid].values()) for qid in topics}
        for measure in (measure for measure in MEASURES if measure.name == "IPrec" and measure.rel == rel):
            label_te = f"iprec_at_recall_{measure.recall:.2f}"
            for qid in topics:
                ours_value = ours[measure][qid]
                loop = iprec_trec_eval_10(flags[qid], relevant[qid], measure.recall)
                assert abs(ours_value - loop) <= TOLERANCE, (label, measure, qid, ours_value, loop)
                exact = measure.recall * relevant[qid]
                if label_te in standard[rel][qid] and math.floor(exact + 0.5) == int(exact + 0.9):
                    assert abs(ours_value - standard[rel][qid][label_te]) <= TOLERANCE, (label, measure, qid)

    # RBP and its residual: a loop over each ranking
    for measure in RBPS:
        for qid in topics:
            value, residual = rbp_by_loop(ordered[qid], judgments[qid], measure)
            assert abs(ours[measure][qid] - value) <= TOLERANCE, (label, measure, qid)
            assert abs(ours[Residual(measure)][qid] - residual) <= TOLERANCE, (label, measure, qid)


@pytest.mark.parametrize("collection", list(SHARED_RUNS))
def test_every_shared_run_equals_its_references(collection):
    qrels_read: dict[Path, Qrels] = {}
    runs = list(SHARED_RUNS[collection]())
    assert runs
    for qrels_path, run_path in runs:
        qrels = qrels_read.setdefault(qrels_path, read_qrels(qrels_path))
        assert_equal_to_references(qrels, read_run(run_path), f"{collection} {run_path.name}")


def expected_outputs(name: str) -> dict[tuple[str, str], str]:
    """trec_eval's expected output ``name``: (measure label, topic or ``all``) -> the value as printed."""
    lines = shared_path("trec_eval_test", name).read_text().splitlines()
    return {(label, topic): value for label, topic, value in (line.split() for line in lines)}


def truncated_run() -> Run:
    """results.trunc: trec_eval reads its first six columns and ignores the words after them (our reader refuses)."""
    scores: dict[str, dict[str, float]] = {}
    for line in shared_path("trec_eval_test", "results.trunc").read_text().splitlines():
        qid, _, docno, _, score = line.split()[:5]
        scores.setdefault(qid, {})[docno] = float(score)
    return Run("STANDARD", scores)


@pytest.mark.parametrize(
    ("output", "qrels_name", "run_name", "rel"),
    [
        ("out.test.aq", "qrels.test", "results.test", 1),
        ("out.test.aqc", "qrels.test", "results.trunc", 1),  # -c: topics the run misses count, GMAP floors them
        ("out.test.aql", "qrels.rel_level", "results.test", 2),  # -l2
        ("out.test.meas_params", "qrels.test", "results.test", 1),  # .25 and .75, nDCG's gain parameters
    ],
)
def test_trec_eval_expected_outputs(output, qrels_name, run_name, rel):
    from pytest_bvtest.spec.measures import Measure

    expected = expected_outputs(output)
    qrels = read_qrels(shared_path("trec_eval_test", qrels_name))
    run = truncated_run() if run_name == "results.trunc" else read_run(shared_path("trec_eval_test", run_name))
    wanted = {
        label: parse_measure(label)
        for label, _ in expected
        if label.startswith("iprec_at_recall_") or label in ("gm_map", "set_F")
    }
    wanted = {label: Measure(measure.name, rel=rel, recall=measure.recall) for label, measure in wanted.items()}
    if "ndcg_1=3,2=9,4=4.5" in {label for label, _ in expected}:
        wanted["ndcg_1=3,2=9,4=4.5"] = parse_measure("nDCG(gains={1:3,2:9,4:4.5})")
    if rel == 1 and "rbp" in {label for label, _ in expected}:
        # trec_eval 10's rbp (p = 0.9; its gains are the grades, here 0 and 1) and rbp_resid (its tail p^L is left
        # out where no document is unjudged: p^L of these 1,000-deep rankings is far below the 4 printed decimals)
        wanted["rbp"] = parse_measure("RBP(p=0.9)")
        wanted["rbp_resid"] = Residual(wanted["rbp"])
    assert len(wanted) >= 3
    values = evaluate_run(qrels, run, list(wanted.values()))
    topics = qrels.evaluated_topics()
    checked = 0
    for (label, topic), printed in expected.items():
        if label not in wanted:
            continue
        measure = wanted[label]
        missing = getattr(measure, "missing_value", 0.0)
        per_topic = [values[measure].get(qid, missing) for qid in topics]  # -c: every qrels topic
        summary = measure.aggregate(per_topic) if hasattr(measure, "aggregate") else float(np.mean(per_topic))
        got = summary if topic == "all" else values[measure].get(topic, missing)
        assert f"{got:.4f}" == printed, (output, label, topic, got)
        checked += 1
    assert checked >= len(wanted)


def test_rbp_optimistic_value_is_rbp_plus_its_residual():
    """RBP's M+ (docs/mathematics.md §8) grades every unjudged document of the run: exactly RBP + residual, whether
    computed beside the measure or in the corners' lifts, whatever the judging depth; below the relevance level the
    unjudged documents gain nothing, so M+ is RBP."""
    from pytest_bvtest.scoring.lifts import run_lifts

    folder = shared_path("dl_hard", "dataset")
    qrels = read_qrels(folder / "dl_hard-doc.qrels")
    top = max(max(grades.values()) for grades in qrels.judgments.values())
    for path in sorted((folder / "baselines" / "doc").glob("*.run.gz"))[:4]:
        run = read_run(path)
        for measure in (parse_measure("RBP(p=0.8)"), parse_measure("RBP(p=0.95,rel=2)"), parse_measure("RBP@20")):
            optimistic = [OptimisticMeasure(measure, top, depth) for depth in (5, 10, 50)]
            below = OptimisticMeasure(measure, measure.rel - 1, 10)
            values, documents = evaluate_run_documents(qrels, run, [measure, Residual(measure), *optimistic, below])
            assert documents is not None and documents.judged_rank is not None
            bound = {qid: values[measure][qid] + values[Residual(measure)][qid] for qid in values[measure]}
            assert max(bound.values()) <= 1.0
            assert sum(values[Residual(measure)].values()) > 1.0, "DL-HARD's runs have unjudged documents"
            for corner in optimistic:
                assert values[corner] == pytest.approx(bound, abs=TOLERANCE), (path.name, corner)
                lifts = run_lifts(qrels, run, [corner])[corner]
                assert lifts.values_without({}) == pytest.approx(bound, abs=TOLERANCE), (path.name, corner)
            assert values[below] == pytest.approx(values[measure], abs=TOLERANCE)
            # the payload the cache keeps gives the same M+ without the run
            payload = columnar.documents_payload(documents)
            again = columnar.ranked_from_payloads([payload], qrels.judgments, documents.topics)
            assert columnar.optimistic_values(again, optimistic[1]) == pytest.approx(bound, abs=TOLERANCE)


def test_gmap_of_a_spec_is_trec_eval_s_and_its_missing_topics_are_floored(tmp_path):
    """Through ``bvtest evaluate --mean``: GMAP equals trec_eval's gm_map with -c (a topic the run misses counts as
    AP 1e-5, not as 0 in the log), and RBP prints its residual below it."""
    from io import StringIO

    from pytest_bvtest.cli import main

    run = truncated_run()
    path = tmp_path / "trunc.run"
    path.write_text(
        "".join(
            f"{qid} Q0 {docno} 0 {score!r} STANDARD\n"
            for qid, ranking in run.scores.items()
            for docno, score in ranking.items()
        )
    )
    out = StringIO()
    qrels = shared_path("trec_eval_test", "qrels.test")
    assert main(["evaluate", "--mean", "--qrels", str(qrels), "-m", "GMAP", "-m", "RBP", str(path)], out) == 0
    rows = [line.split("\t") for line in out.getvalue().splitlines()[1:]]
    assert [row[1] for row in rows] == ["GMAP", "RBP(rel=1)", "RBP(rel=1) residual"]
    assert f"{float(rows[0][2]):.4f}" == expected_outputs("out.test.aqc")["gm_map", "all"] == "0.0045"


def test_an_rbp_gate_is_judged_at_its_exact_corner(tmp_path):
    """A spec gating RBP on DL-HARD (about half of each top 10 unjudged): the optimistic value beside the measure is
    RBP + its residual for every system and topic, the residual could turn the gate (its corners disagree), its
    plausible gradings decide it, and every report renders (RBP has no judged-only form to suggest)."""
    from pytest_bvtest.judging.pipeline import evaluate_spec
    from pytest_bvtest.report.outputs import evaluation_document
    from pytest_bvtest.spec.reader import load_spec

    folder = shared_path("dl_hard", "dataset")
    runs = folder / "baselines" / "doc"
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        f"qrels: {folder / 'dl_hard-doc.qrels'}\nmeasures: ['RBP(p=0.8)']\ncache: false\n"
        f"baselines: {{bm25: '{runs / 'bm25.run.gz'}', bert: '{runs / 'bm25+bert-mp.run.gz'}'}}\n"
        f"candidate: {{run: '{runs / 'bm25+rm3.run.gz'}', name: rm3}}\nreference: bm25\n"
        "gates:\n  - {statistic: mean, max_decrease: 0.01}\n"
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    measure = evaluation.measure("RBP(p=0.8)")
    qrels = read_qrels(folder / "dl_hard-doc.qrels")
    rbp = parse_measure("RBP(p=0.8)")
    for row, name in enumerate(measure.matrix.systems):
        path = {"bm25": "bm25.run.gz", "bert": "bm25+bert-mp.run.gz", "rm3": "bm25+rm3.run.gz"}[name]
        values = evaluate_run(qrels, read_run(runs / path), [rbp, Residual(rbp)])
        expected = [values[rbp][topic] + values[Residual(rbp)][topic] for topic in measure.topics]
        assert measure.judgments.optimistic[row] == pytest.approx(expected, abs=TOLERANCE), name
    (verdict,) = evaluation.gates
    assert verdict.corners.optimistic.passed != verdict.corners.pessimistic.passed
    assert verdict.outcome == "OK" and verdict.plausible.decided is True
    gate = evaluation_document(evaluation)["evaluations"][0]["gates"][0]
    assert gate["outcome"] == "OK" and "judged_only" not in (gate.get("hint") or "")
    assert "plausible gradings of its" in gate["headline"]


@pytest.mark.parametrize("collection", list(SHARED_RUNS))
def test_rbp_equals_ir_measures_cwl_eval_on_every_shared_run(collection):
    """ir_measures computes RBP with a relevance level through cwl_eval (C/W/L's RBP, binary gains): given each
    ranking in trec_eval's order, it equals ours on every topic."""
    pytest.importorskip("cwl")
    measures = [parse_measure(name) for name in ("RBP(p=0.8)", "RBP(p=0.5,rel=2)", "RBP(p=0.95)")]
    theirs_measures = [ir_measures.parse_measure(str(measure)) for measure in measures]
    qrels_read: dict[Path, Qrels] = {}
    for qrels_path, run_path in SHARED_RUNS[collection]():
        qrels = qrels_read.setdefault(qrels_path, read_qrels(qrels_path))
        run = read_run(run_path)
        ours = evaluate_run(qrels, run, measures)
        topics = list(ours[measures[0]])
        ordered = trec_eval_order(run)
        scored = {qid: {docno: float(len(ordered[qid]) - i) for i, docno in enumerate(ordered[qid])} for qid in topics}
        judgments = {qid: qrels.judgments[qid] for qid in topics}
        theirs = {
            (repr(metric.measure), metric.query_id): metric.value
            for metric in ir_measures.cwl_eval.iter_calc(theirs_measures, judgments, scored)
        }
        for measure, reference in zip(measures, theirs_measures):
            worst = max(abs(ours[measure][qid] - theirs[repr(reference), qid]) for qid in topics)
            assert worst <= TOLERANCE, f"{collection} {run_path.name}: {measure} differs from cwl_eval by {worst:g}"
