"""What was judged, through the pipeline and the reports (docs/judgments.md, docs/mathematics.md §10).

The real case is MATH.md §8's: DL19 passage with the qrels kept to what a pool of monoT5's, ColBERT's and DRMM's
top 10 would judge (the official DL19 qrels restricted to those pairs), monoBERT as the candidate, monoT5 as the
reference. Each real-data evaluation is computed once per module.
"""

from __future__ import annotations

import itertools
import os
import textwrap
from pathlib import Path

import ir_measures
import jsonschema
import numpy as np
import pytest
from conftest import shared_path

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import Qrels, read_qrels
from pytest_bvtest.io.runs import read_run
from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
from pytest_bvtest.report import terminal, wording
from pytest_bvtest.report.jsonreport import schema
from pytest_bvtest.report.markdown import render
from pytest_bvtest.report.outputs import evaluation_document
from pytest_bvtest.spec.measures import parse_measure
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
        "monobert 0.847 (66 unjudged); its gates are weighed over 200 plausible gradings of the 84 unjudged documents "
        "of monobert's and monot5's top 10 (judged documents at these ranks: 87% relevant; an unjudged one is taken "
        "to be relevant with 32%)"
    )
    verbose = [text for text, _ in terminal.summary_lines(document, verbosity=1)]
    assert line in verbose
    markdown = render(document)
    # beside the gated measure, outside the folded tables, and not again in them
    assert f"**nDCG@10** · {line}" in markdown and markdown.count("monobert 0.847 (66 unjudged)") == 1


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


# --- the corners of a gate ------------------------------------------------------------------------------------


def outcomes(evaluation) -> dict[str, str]:
    return {verdict.gate.name: verdict.outcome for verdict in evaluation.gates}


def test_the_dl19_pooled_case_is_weighed_not_a_plain_fail_and_says_how_many_documents_decide_it(dl19_pooled):
    _, evaluation = dl19_pooled
    # monoBERT, equal to monoT5 under the full qrels, fails TRisk and the mean as judged; weighed over plausible
    # gradings of the 84 unjudged documents it passes them in 56% and 76% of them: undecided, not a plain FAIL;
    # Bias²+Var, which the corners left undecided, passes in every grading
    assert outcomes(evaluation) == {
        "trisk": "UNDECIDED",
        "var": "OK",
        "bias2_plus_var": "OK",
        "mean": "UNDECIDED",
    }
    verdicts = {verdict.gate.name: verdict for verdict in evaluation.gates}
    for name in ("trisk", "mean"):
        verdict = verdicts[name]
        assert not verdict.passed_as_judged and verdict.corners.optimistic.passed
        assert not verdict.corners.pessimistic.passed and verdict.passed  # judgments: {undecided: warn}
    assert [verdicts[name].plausible.passing for name in ("trisk", "bias2_plus_var", "mean")] == [113, 200, 151]
    assert verdicts["mean"].plausible.draws == 200  # settled between 5% and 95% after 200 gradings
    assert verdicts["var"].plausible is None  # its corners agree: nothing drawn
    assert verdicts["mean"].value - verdicts["mean"].reference_value == pytest.approx(-0.05862, abs=5e-6)
    corners = verdicts["mean"].corners
    assert (corners.candidate_unjudged, corners.reference_unjudged, corners.shared) == (66, 21, 3)
    assert evaluation.passed
    document = evaluation_document(evaluation)
    gate = document["evaluations"][0]["gates"][3]
    assert gate["outcome"] == "UNDECIDED" and gate["judgments"]["unjudged"] == 84
    assert (
        "84 unjudged documents decide it (66 in monobert's top 10, 21 in monot5's, 3 of them in both); passes in "
        "76% of 200 plausible gradings of its 84 unjudged documents"
    ) in gate["headline"]
    assert gate["sentence"].startswith(
        "Undecided: fails as judged (Mean 0.745 vs 0.804, limit 0.759 at a 2.13% false-alarm rate), passes in 76% of "
        "the plausible gradings of its unjudged documents; "
    )
    # the gradings' count and prior are the measure's, said once beside its judged shares
    assert wording.judged_line(document["evaluations"][0]).endswith(
        "; its gates are weighed over 200 plausible gradings of the 84 unjudged documents of monobert's and monot5's "
        "top 10 (judged documents at these ranks: 87% relevant; an unjudged one is taken to be relevant with 32%)"
    )
    # the corners stay as the hard bounds: the optimistic one grades monoBERT's 66 but for the 3 both top 10 hold
    # that monoT5 ranks higher
    assert (
        "passes if 63 of the 66 unjudged documents of monobert's top 10 (not the 3 that raise monot5's nDCG@10 "
        "more) are relevant (grade 3)"
    ) in gate["sentence"]
    assert gate["sentence"].endswith(
        "judging about the first 48 of its documents that `bvtest judge` lists is expected to settle it."
    )
    assert (gate["judgments"]["optimistic"]["graded"], gate["judgments"]["pessimistic"]["graded"]) == (63, 21)
    plausible = gate["judgments"]["plausible"]
    assert (plausible["passing"], plausible["draws"], plausible["decided"], plausible["settle"]) == (151, 200, None, 48)
    from pytest_bvtest.report.outputs import junit_properties

    properties = dict(junit_properties(gate))
    assert (properties["bvtest_plausible_p"], properties["bvtest_plausible_draws"]) == (0.755, 200)
    assert (properties["bvtest_plausible_seed"], properties["bvtest_plausible_settle"]) == (0, 48)
    assert document["summary"]["undecided"] == 2 and document["passed"]
    # the first screen says it once for both gates, with their P and the judgments that would settle both
    first_screen = render(document).split("<details>", 1)[0]
    assert first_screen.count("UNDECIDED: ") == 1
    assert (
        "they fail as judged, and pass in 56% to 76% of 200 plausible gradings of them, short of the 95% that would "
        "decide them either way; they pass CI with this warning (judgments: {undecided: warn}); judging about the "
        "first 56 of the documents `bvtest judge` lists is expected to settle them"
    ) in first_screen
    jsonschema.validate(document, schema())
    final = terminal.summary_lines(document, verbosity=0)[-1][0]
    assert final == "bvtest: 4 gates, 0 failed, 2 undecided (unjudged documents decide them)"
    # the blamed topic the issue named: a loss as judged, with 3 of monoBERT's top 10 unjudged
    topic = next(impact for impact in verdicts["trisk"].worst_topics if impact.topic == "1124210")
    assert (topic.unjudged, topic.compared_unjudged) == (3, 0) and topic.delta < 0


def test_undecided_fail_makes_an_undecided_gate_fail_ci(dl19_pooled, tmp_path, capsys):
    from pytest_bvtest.cli import main

    spec, _ = dl19_pooled
    strict = tmp_path / "bvtest.yaml"
    strict.write_text(spec.read_text() + "judgments: {undecided: fail}\n")
    evaluation = evaluate_spec(load_spec(strict), use_cache=False)
    assert outcomes(evaluation)["mean"] == "UNDECIDED" and not evaluation.passed
    assert [verdict.passed for verdict in evaluation.gates] == [False, True, True, False]
    assert main(["check", str(strict), "--no-cache", "-j", "1"]) == 1
    output = capsys.readouterr().out
    assert "they fail CI (judgments: {undecided: fail})" in output
    assert "bvtest: 4 gates, 2 failed, 2 undecided (unjudged documents decide them)" in output


@pytest.fixture(scope="module")
def trec_covid(tmp_path_factory: pytest.TempPathFactory):
    """TREC-COVID round 4: OHSU's production fusion run R4_total_fusion as the reference, AbstractOHSU as the
    candidate (Judged@10 0.773 against 0.940 with the round-4 qrels)."""
    runs = shared_path("trec_covid_ohsu_runs", "runs", "Round4_Runs_LessRM3")
    qrels = shared_path("anserini_tools_qrels_topics", "qrels", "qrels.covid-round4.txt")
    spec = tmp_path_factory.mktemp("trec-covid") / "bvtest.yaml"
    spec.write_text(
        f"qrels: {qrels}\nmeasures: [nDCG@10]\nbaselines:\n  production: {runs / 'R4_total_fusion.txt.gz'}\n"
        f"  FullOHSU: {runs / 'FullOHSU.txt.gz'}\n  R4_time_fusion: {runs / 'R4_time_fusion.txt.gz'}\n"
        f"candidate: {{run: {runs / 'AbstractOHSU.txt.gz'}, name: AbstractOHSU}}\nreference: production\n"
        f"analysis: {{risk_alpha: 1}}\ncache: false\n{GATES}"
    )
    return evaluate_spec(load_spec(spec), use_cache=False)


def test_the_trec_covid_case_is_undecided_not_a_plain_fail(trec_covid):
    verdicts = {verdict.gate.name: verdict for verdict in trec_covid.gates}
    # TRisk and the mean fail as judged and pass in about half of the plausible gradings: undecided. Bias²+Var passes
    # as judged and fails if production's unjudged documents are relevant (but for the 9 both top 10 hold that
    # AbstractOHSU ranks higher): weighed, it passes in every grading
    assert outcomes(trec_covid) == {
        "trisk": "UNDECIDED",
        "var": "OK",
        "bias2_plus_var": "OK",
        "mean": "UNDECIDED",
    }
    assert verdicts["bias2_plus_var"].passed_as_judged and verdicts["bias2_plus_var"].corners.pessimistic.graded == 18
    assert verdicts["bias2_plus_var"].plausible.decided is True
    assert [verdicts[name].passed_as_judged for name in ("trisk", "mean")] == [False, False]
    assert [verdicts[name].plausible.passing for name in ("trisk", "mean")] == [107, 90]
    judged = trec_covid.measure().judgments
    rows = [trec_covid.measure().matrix.index(name) for name in ("AbstractOHSU", "production")]
    assert [round(float(judged.shares[row].mean()), 3) for row in rows] == [0.773, 0.94]
    corners = verdicts["trisk"].corners
    assert (corners.candidate_unjudged, corners.reference_unjudged, corners.shared) == (102, 27, 9)
    from pytest_bvtest.report import html

    document = evaluation_document(trec_covid)
    page = html.render(document)
    assert "<h2>Each undecided gate: its headline and topics</h2>" in page
    assert page.count('badge warn">⚠ UNDECIDED') == 4  # table and sections
    assert "Judged@10 AbstractOHSU" in page  # the per-topic table's judged shares
    markdown = render(document)
    assert "**❔ `nDCG@10::trisk`**" in markdown
    assert "- **Unjudged documents decide 2 gates:** `bvtest judge " in markdown
    # the first screen says it once for the gates the same documents decide the same way (TRisk and the mean fail as
    # judged), not once per gate (DL-HARD's 11 undecided gates filled the screen)
    first_screen = markdown.split("<details>", 1)[0]
    assert first_screen.count("UNDECIDED: ") == 1
    assert (
        "> ⚠️ **Warning** (`nDCG@10::trisk`, `nDCG@10::mean`): UNDECIDED: 120 unjudged documents decide these 2 gates "
        "(102 in AbstractOHSU's top 10, 27 in production's, 9 of them in both): they fail as judged, and pass in 45% "
        "to 54% of 200 plausible gradings of them, short of the 95% that would decide them either way; they pass CI"
    ) in first_screen


def test_a_passing_gate_gets_no_judging_hint_and_the_judge_command_names_the_spec_from_here(trec_covid, monkeypatch):
    document = evaluation_document(trec_covid)
    gates = {gate["statistic"]: gate for gate in document["evaluations"][0]["gates"]}
    # Var passes at every corner: the topics it lists are no loss to explain with unjudged documents
    assert gates["var"]["outcome"] == "OK" and gates["var"]["hint"] is None
    assert gates["mean"]["outcome"] == "UNDECIDED" and "lose only as judged" in gates["mean"]["hint"]
    spec = Path(gates["mean"]["spec"])
    assert spec == trec_covid.spec.path
    monkeypatch.chdir(spec.parent.parent)  # a command run from the spec's parent folder names its folder too
    document = evaluation_document(trec_covid)
    mean = next(gate for gate in document["evaluations"][0]["gates"] if gate["statistic"] == "mean")
    # the spec's own candidate: bvtest judge reads it from the spec, so no --run (a path through a symbolic link,
    # resolved, would lead outside the project)
    assert f"`bvtest judge {spec.parent.name}/{spec.name} -o judgments.tsv`" in mean["undecided"]


def fully_judged_regression(folder: Path) -> Path:
    """DL19, monoT5 with DRMM's rankings on monoT5's five hardest topics, against monoT5, with qrels that judge every
    document of both top 10s: the official DL19 qrels, and the documents of the two top 10s they lack judged 0 (as
    trec_eval scores them: a team that judged them all and found them not relevant)."""
    runs = shared_path("dl19_passage_qppeval_runs", "runs")
    monot5, drmm = read_run(runs / DL19_RUNS["monot5"]), read_run(runs / DL19_RUNS["drmm"])
    hard = ("1037798", "443396", "490595", "489204", "1121709")
    regressed = {qid: drmm.scores[qid] if qid in hard else scores for qid, scores in monot5.scores.items()}
    run = folder / "regressed.run"
    run.write_text(
        "".join(
            f"{qid} Q0 {docno} 0 {score!r} regressed\n"
            for qid, docs in regressed.items()
            for docno, score in docs.items()
        )
    )
    official = read_qrels(shared_path("anserini_tools_qrels_topics", "qrels", "qrels.dl19-passage.txt"))
    judged = {qid: dict(grades) for qid, grades in official.judgments.items()}
    for rankings in (monot5.scores, regressed):
        for qid, scores in rankings.items():
            if qid in judged:
                for docno in trec_eval_order(scores)[:10]:
                    judged[qid].setdefault(docno, 0)
    qrels = folder / "complete.qrels"
    qrels.write_text(
        "".join(f"{qid} 0 {docno} {grade}\n" for qid, docs in judged.items() for docno, grade in docs.items())
    )
    spec = folder / "bvtest.yaml"
    spec.write_text(
        f"qrels: {qrels}\nmeasures: [nDCG@10]\nbaselines:\n"
        + "".join(f"  {name}: {runs / DL19_RUNS[name]}\n" for name in ("monot5", "colbert", "drmm"))
        + f"candidate: {{run: {run}, name: regressed}}\nreference: monot5\ncache: false\n"
        "gates:\n  - {statistic: mean, max_decrease: 0.01}\n"
    )
    return spec


def test_a_fully_judged_regression_still_fails_plainly_and_nothing_extra_is_computed(tmp_path, monkeypatch):
    from pytest_bvtest.judging import corners

    monkeypatch.setattr(corners, "unjudged_documents", None)  # never reached when nothing is unjudged
    evaluation = evaluate_spec(load_spec(fully_judged_regression(tmp_path)), use_cache=False)
    (verdict,) = evaluation.gates
    assert verdict.outcome == "FAIL" and verdict.corners is None
    assert verdict.value - verdict.reference_value == pytest.approx(-0.01352, abs=5e-6)
    judged = evaluation.measure().judgments
    assert [judged.unjudged_documents(evaluation.measure().matrix.index(name)) for name in ("regressed", "monot5")] == [
        0,
        0,
    ]
    assert "judgments" not in evaluation_document(evaluation)["evaluations"][0]["gates"][0]


def reports(evaluation) -> dict[str, object]:
    """What a session shows of an evaluation: the gates' documents, the terminal at every verbosity, the
    Markdown and the JUnit properties."""
    from pytest_bvtest.report.outputs import junit_properties

    document = evaluation_document(evaluation)
    return {
        "gates": [gate for measure in document["evaluations"] for gate in measure["gates"]],
        **{f"terminal{level}": terminal.summary_lines(document, verbosity=level) for level in (-1, 0, 1)},
        "markdown": render(document),
        "junit": [junit_properties(gate) for measure in document["evaluations"] for gate in measure["gates"]],
    }


def test_on_a_fully_judged_collection_the_reports_are_unchanged_and_no_corner_is_computed(monkeypatch):
    """The example project judges every system's top 10 (its qrels were pooled to 20): its reports are those of the
    evaluation without anything judgments add, but for the one line per measure that says so (-v, Markdown)."""
    from pytest_bvtest.judging import corners, pipeline

    monkeypatch.setattr(corners, "unjudged_documents", None)  # reading the runs again would raise
    monkeypatch.setattr(corners, "_world", None)
    spec = spec_under_test(EXAMPLE)
    judged = reports(evaluate_spec(spec, use_cache=False))
    monkeypatch.setattr(pipeline, "judgment_measures", lambda spec, qrels: {})
    without = reports(evaluate_spec(spec, use_cache=False))
    said = "Judged@10: every system's top 10 is judged"
    for key in ("gates", "terminal-1", "terminal0", "junit"):
        assert judged[key] == without[key], key
    assert [line for line in judged["terminal1"] if said not in line[0]] == without["terminal1"]
    assert judged["markdown"].replace(f"\n\n{said}", "") == without["markdown"]


def test_each_gate_with_corners_is_decided_exactly_once(dl19_pooled, monkeypatch):
    from collections import Counter

    from pytest_bvtest.judging import pipeline

    spec, _ = dl19_pooled
    decided: Counter[str] = Counter()
    decide = pipeline.decide

    def counting(inputs, limit, *arguments):
        decided[inputs.id] += 1
        return decide(inputs, limit, *arguments)

    monkeypatch.setattr(pipeline, "decide", counting)
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    assert sum(verdict.corners is not None for verdict in evaluation.gates) == 4
    assert decided == Counter({verdict.id: 1 for verdict in evaluation.gates})


def test_the_corners_nulls_are_read_in_the_evaluations_one_pass_and_equal_each_drawn_alone(dl19_pooled, monkeypatch):
    from pytest_bvtest.judging import corners
    from pytest_bvtest.stats import swaps

    spec, shared = dl19_pooled
    passes = []
    drawing = swaps.topic_assignments
    monkeypatch.setattr(
        swaps, "topic_assignments", lambda *args, **kwargs: passes.append(args) or drawing(*args, **kwargs)
    )
    # no pending null: every corner's gate draws its own, as gate_inputs does alone
    monkeypatch.setattr(corners, "pending_gate_null", lambda *arguments: None)
    alone = evaluate_spec(load_spec(spec), use_cache=False)
    # the plausible gradings read the first 1,000 swaps, a pass per batch of gradings: counted apart
    passes[:] = [drawn for drawn in passes if drawn[1] == 10_000]
    assert len(passes) == 1 + 4 * 2  # the evaluation's pass, then one per gate and corner
    cornered = [verdict for verdict in shared.gates if verdict.corners is not None]
    assert len(cornered) == 4
    for verdict, drawn_alone in zip(shared.gates, alone.gates):
        assert (verdict.corners is None) == (drawn_alone.corners is None)
        if verdict.corners is None:
            continue
        for corner in ("optimistic", "pessimistic"):
            ours, theirs = getattr(verdict.corners, corner), getattr(drawn_alone.corners, corner)
            assert (ours.passed, ours.value, ours.graded) == (theirs.passed, theirs.value, theirs.graded)
            assert ours.reference_value == theirs.reference_value
            np.testing.assert_allclose([ours.limit, ours.excess], [theirs.limit, theirs.excess], rtol=1e-12, atol=1e-15)
    monkeypatch.undo()
    monkeypatch.setattr(
        swaps, "topic_assignments", lambda *args, **kwargs: passes.append(args) or drawing(*args, **kwargs)
    )
    passes.clear()
    evaluate_spec(load_spec(spec), use_cache=False)
    assert [drawn[1] for drawn in passes] == [10_000, 1000, 1000]  # the evaluation's gates, its comparisons and
    # every corner's gates, together; then the plausible gradings' two batches of 100


def test_the_corners_read_the_runs_documents_kept_with_their_scores_never_the_runs_again(
    dl19_pooled, tmp_path, monkeypatch
):
    """The corners and the documents to judge come from each run's ranked documents, kept when the run was evaluated
    and cached beside its scores: the same corners and documents as read from the runs (the slow path), and no run is
    read again, not even for the ranks the plausible gradings' rank support reads (kept beside the documents as deep
    as it looks), only for the judge file, which lists each document's rank however deep."""
    from pytest_bvtest.judging import corners, pipeline
    from pytest_bvtest.judging.documents import documents_to_judge

    spec, _ = dl19_pooled
    cached = tmp_path / "bvtest.yaml"
    cached.write_text(spec.read_text().replace("cache: false", "cache: .cache"))
    read = []
    reading = corners.read_run_columns
    monkeypatch.setattr(
        corners, "read_run_columns", lambda *args, **kwargs: read.append(args) or reading(*args, **kwargs)
    )
    monkeypatch.setattr(corners, "documents_lifts", lambda *arguments: None)  # every run read again: the slow path
    slow = evaluate_spec(load_spec(cached), use_cache=False)
    slow_documents = documents_to_judge(slow)
    assert len(read) == 2 and len(slow_documents) == 84  # monoBERT's and monoT5's
    monkeypatch.undo()
    monkeypatch.setattr(
        corners, "read_run_columns", lambda *args, **kwargs: read.append(args) or reading(*args, **kwargs)
    )
    # documents kept from the evaluation; then filled into the cache; then read from it, the gradings drawn again
    # (the plausible verdicts not read from the cache); then read from it with the plausible verdicts, nothing drawn
    for use_cache, drawn in ((False, True), (True, True), (True, True), (True, False)):
        read.clear()
        with monkeypatch.context() as patched:
            if drawn:
                patched.setattr(pipeline, "_drawn_key", lambda *arguments: None)  # nor power: nothing drawn is cached
            evaluation = evaluate_spec(load_spec(cached), use_cache=use_cache)
        assert len(read) == 0  # the ranks of the rank support: kept with the runs' documents
        assert [verdict.corners for verdict in evaluation.gates] == [verdict.corners for verdict in slow.gates]
        assert [verdict.plausible for verdict in evaluation.gates] == [verdict.plausible for verdict in slow.gates]
        assert sum(verdict.corners is not None for verdict in evaluation.gates) == 4
        assert documents_to_judge(evaluation) == slow_documents
        assert len(read) == 2  # the judge file's ranks: each run read when first asked
    assert len(list((tmp_path / ".cache").rglob("*.json"))) > 4 * 5


def write_small_runs(folder: Path, judgments, candidate, reference, measure: str) -> Path:
    """Two runs (candidate ``new``, reference ``prod``), qrels and a spec with one mean gate on ``measure``."""
    for name, ranked in (("new", candidate), ("prod", reference)):
        (folder / f"{name}.run").write_text(
            "".join(
                f"{q} Q0 {d} {rank} {10 - rank} {name}\n" for q, docs in ranked.items() for rank, d in enumerate(docs)
            )
        )
    (folder / "qrels.txt").write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in judgments.items() for d, g in docs.items())
    )
    spec = folder / "bvtest.yaml"
    spec.write_text(
        f"qrels: qrels.txt\nmeasures: [{measure}]\nbaselines: {{prod: prod.run}}\n"
        "candidate: {run: new.run, name: new}\ncache: false\ngates:\n  - {statistic: mean, max_decrease: 0.05}\n"
    )
    return spec


def test_a_gates_corners_are_the_gate_on_the_qrels_each_side_would_complete(tmp_path):
    """Brute force: at the optimistic corner, both runs scored by pytrec_eval on the qrels completed with the
    candidate's unjudged top-3 documents at the top grade but for those both top 3 hold (P@3 has no normalisation to
    keep; a shared document raises both runs' P@3 alike, so it favours neither and neither corner grades it), the bound
    placed on the reference's value there; at the pessimistic corner, the qrels completed with the reference's."""
    import pytrec_eval

    judgments = {"t1": {"a": 1, "b": 0, "c": 2}, "t2": {"x": 2, "y": 0}, "t3": {"m": 1}}
    candidate = {"t1": ["u1", "a", "b", "u2"], "t2": ["x", "u3", "y"], "t3": ["u4", "m"]}
    reference = {"t1": ["a", "u1", "c"], "t2": ["u5", "x", "u3"], "t3": ["m", "n", "o"]}
    spec = write_small_runs(tmp_path, judgments, candidate, reference, "P@3")
    (verdict,) = evaluate_spec(load_spec(spec), use_cache=False).gates
    runs = {
        name: {q: {d: float(10 - rank) for rank, d in enumerate(docs)} for q, docs in ranked.items()}
        for name, ranked in (("new", candidate), ("prod", reference))
    }

    def completed_by(side: dict[str, list[str]], other: dict[str, list[str]]) -> tuple[float, float]:
        full = {qid: dict(docs) for qid, docs in judgments.items()}
        for qid, docs in side.items():
            for docno in docs[:3]:
                if docno not in other[qid][:3]:
                    full[qid].setdefault(docno, 2)
        evaluator = pytrec_eval.RelevanceEvaluator(full, {"P_3"})
        means = {name: np.mean([v["P_3"] for v in evaluator.evaluate(run).values()]) for name, run in runs.items()}
        return means["new"], means["prod"]

    corners = verdict.corners
    assert (corners.candidate_unjudged, corners.reference_unjudged, corners.shared) == (3, 5, 2)
    assert (corners.optimistic.graded, corners.pessimistic.graded) == (1, 3)  # u4; u5, n, o
    for corner, side, other in (
        (corners.optimistic, candidate, reference),
        (corners.pessimistic, reference, candidate),
    ):
        value, reference_value = completed_by(side, other)
        assert (corner.value, corner.reference_value) == pytest.approx((value, reference_value), abs=1e-12)
        assert corner.limit == pytest.approx(reference_value - 0.05, abs=1e-12)
        assert corner.passed == (value >= reference_value - 0.05)


def test_the_corners_of_a_mean_gate_are_the_best_and_worst_gradings_of_the_unjudged_documents(tmp_path):
    """Brute force over all 2^6 gradings (0 or the top grade 2) of the unjudged documents of both top 3: the mean
    gate's candidate-minus-reference nDCG@3 (trec_eval's linear gain, the judged ideal DCG of the PIN, no cap reached)
    is largest at the optimistic corner and smallest at the pessimistic one, each reached by one grading only.
    Documents both top 3 hold: u1 (candidate rank 3, reference rank 1) is graded only at the pessimistic corner, u3
    (ranks 2 and 3) only at the optimistic one. Grading them at both corners, as this reading did first, left the
    corners short of both extremes (+0.0952 and -0.4389 against +0.1734 and -0.4594)."""
    judgments = {
        "t1": {"a": 1, "b": 0, "c": 2, "d": 2, "e": 2},
        "t2": {"x": 2, "y": 0, "z": 2, "w": 2},
        "t3": {"m": 1, "p": 2, "q": 2},
    }
    candidate = {"t1": ["a", "b", "u1", "u2"], "t2": ["x", "u3", "y"], "t3": ["u4", "m"]}
    reference = {"t1": ["u1", "a", "c"], "t2": ["u5", "x", "u3"], "t3": ["m", "n", "o"]}
    (verdict,) = evaluate_spec(
        load_spec(write_small_runs(tmp_path, judgments, candidate, reference, "nDCG@3")), use_cache=False
    ).gates

    def dcg(grades: list[int]) -> float:
        return sum(grade / np.log2(rank + 2) for rank, grade in enumerate(grades[:3]))

    ideal = {q: dcg(sorted((g for g in docs.values() if g > 0), reverse=True)) for q, docs in judgments.items()}
    unjudged = sorted(
        {
            (q, d)
            for side in (candidate, reference)
            for q, docs in side.items()
            for d in docs[:3]
            if d not in judgments[q]
        }
    )
    assert len(unjudged) == 6

    def difference(graded: set[tuple[str, str]]) -> float:
        def mean(ranked: dict[str, list[str]]) -> float:
            grades = {
                q: [judgments[q].get(d, 2 if (q, d) in graded else 0) for d in docs] for q, docs in ranked.items()
            }
            values = [dcg(grades[q]) / ideal[q] for q in ranked]
            assert max(values) <= 1.0  # no cap reached: the difference is the measure's own
            return float(np.mean(values))

        return mean(candidate) - mean(reference)

    gradings = [set(chosen) for k in range(7) for chosen in itertools.combinations(unjudged, k)]
    differences = sorted((difference(graded), len(graded)) for graded in gradings)
    (worst, worst_graded), (best, best_graded) = differences[0], differences[-1]
    assert differences[1][0] > worst + 1e-9 and differences[-2][0] < best - 1e-9  # one grading each
    corners = verdict.corners
    assert corners.optimistic.value - corners.optimistic.reference_value == pytest.approx(best, abs=1e-12)
    assert corners.pessimistic.value - corners.pessimistic.reference_value == pytest.approx(worst, abs=1e-12)
    assert (corners.optimistic.graded, corners.pessimistic.graded) == (best_graded, worst_graded) == (2, 4)


@pytest.mark.parametrize(
    ("value", "optimistic", "pessimistic", "policy", "outcome", "passed"),
    [
        (0.30, True, True, "warn", "OK", True),  # holds as judged and at both corners
        (0.20, False, False, "warn", "FAIL", False),  # fails whatever the unjudged documents say
        (0.20, True, False, "warn", "UNDECIDED", True),  # fails as judged, passes if the candidate's are relevant
        (0.20, True, False, "fail", "UNDECIDED", False),
        (0.30, True, False, "warn", "UNDECIDED", True),  # holds as judged, fails if the reference's are relevant
        (0.30, False, True, "fail", "UNDECIDED", False),  # a statistic its optimistic corner can hurt (Var)
    ],
)
def test_a_verdict_the_corners_do_not_agree_on_is_undecided_and_the_policy_says_if_it_fails(
    value, optimistic, pessimistic, policy, outcome, passed
):
    from pytest_bvtest.judging.decision import decide
    from pytest_bvtest.judging.gate_inputs import GateInputs
    from pytest_bvtest.judging.judgments import CornerJudgment, Corners
    from pytest_bvtest.judging.limits import gate_limit
    from pytest_bvtest.spec.model import Bound, GateSpec

    gate = GateSpec("mean", Bound("min", 0.25, False), "mean", 1)
    inputs = GateInputs(gate, "bvtest.yaml::AP::mean", "AP", "new", None, value, None, None, None, None, (), "-")
    corners = Corners(
        10,
        3,
        "new",
        None,
        4,
        0,
        0,
        2,
        CornerJudgment("optimistic", 0.3, None, 0.25, -0.05, optimistic, 4),
        CornerJudgment("pessimistic", 0.2, None, 0.25, 0.05, pessimistic, 0),
    )
    verdict = decide(inputs, gate_limit(inputs), (), corners=corners, undecided=policy)
    assert (verdict.outcome, verdict.passed, verdict.passed_as_judged) == (outcome, passed, value >= 0.25)
    assert verdict.corners is corners


# --- the documents to judge, and feeding their grades back ---------------------------------------------------


def fill_from(judge_file: Path, qrels_path: Path, target: Path) -> Path:
    """The judge file with every grade filled in from ``qrels_path``, a document it lacks graded 0 (as trec_eval
    scores it): what annotators who agree with the full qrels would write."""
    full = read_qrels(qrels_path).judgments
    lines = []
    for line in judge_file.read_text().splitlines():
        cells = line.split("\t")
        if not line.startswith("#") and cells[:3] != ["topic", "docno", "grade"]:
            cells[2] = str(full.get(cells[0], {}).get(cells[1], 0))
        lines.append("\t".join(cells))
    target.write_text("\n".join(lines) + "\n")
    return target


@pytest.fixture(scope="module")
def dl19_judge_file(dl19_pooled, tmp_path_factory):
    from pytest_bvtest.cli import main

    spec, _ = dl19_pooled
    path = tmp_path_factory.mktemp("judge") / "judgments.tsv"
    assert main(["judge", str(spec), "-o", str(path), "--no-cache"]) == 0
    return path


def test_the_judge_file_lists_the_unjudged_documents_by_leverage_with_an_empty_grade(dl19_pooled, dl19_judge_file):
    text = dl19_judge_file.read_text()
    comments = [line for line in text.splitlines() if line.startswith("#")]
    header, *rows = [line.split("\t") for line in text.splitlines() if not line.startswith("#")]
    assert header == ["topic", "docno", "grade", "leverage", "query", "rank monobert", "rank monot5", "gates"]
    assert comments[0].startswith("# bvtest judge bvtest.yaml: 84 unjudged documents of the top 10 of monobert, monot5")
    assert f"qrels: [pooled.qrels, {os.path.relpath(dl19_judge_file, dl19_pooled[0].parent)}]" in comments[1]
    assert len(rows) == 84 and all(row[2] == "" for row in rows)
    # most settling first: the leverage on an undecided gate weighted by how uncertain the grade is
    from pytest_bvtest.judging.documents import documents_to_judge

    listed = documents_to_judge(dl19_pooled[1])
    assert [row[:2] for row in rows] == [[document.topic, document.docno] for document in listed]
    expected = [document.settling * document.uncertainty for document in listed]
    assert expected == sorted(expected, reverse=True) and 0 < min(document.uncertainty for document in listed) < 1
    first = rows[0]
    assert first[:2] == ["489204", "4586570"] and first[4] == "right pelvic pain causes" and first[5:7] == ["1", "13"]
    assert first[3] == "0.079" and first[7].startswith("nDCG@10::trisk (undecided) +0.6523 (8%); nDCG@10::mean")
    # every pair lies in monoBERT's or monoT5's top 10 and is unjudged in the pooled qrels
    pooled = read_qrels(dl19_pooled[0].parent / "pooled.qrels").judgments
    assert all(row[1] not in pooled.get(row[0], {}) for row in rows)
    assert all(min(int(rank) for rank in row[5:7] if rank != "-") <= 10 for row in rows)


def test_a_documents_move_is_the_gate_recomputed_with_that_document_alone_judged(dl19_pooled, dl19_judge_file):
    """The mean gate: the first document (rank 51 in monoBERT, 1 in monoT5) graded 3 moves monoT5's nDCG@10 on its
    topic only; candidate minus reference moves by minus that over the 43 topics."""
    from pytest_bvtest.scoring.measures import evaluate_run

    spec, evaluation = dl19_pooled
    qrels = read_qrels(spec.parent / "pooled.qrels")
    monot5 = read_run(shared_path("dl19_passage_qppeval_runs", "runs") / DL19_RUNS["monot5"])
    measure = parse_measure("nDCG@10")
    before = evaluate_run(qrels, monot5, [measure])[measure]["490595"]
    grades = {qid: dict(docs) for qid, docs in qrels.judgments.items()}
    grades["490595"]["7422680"] = 3
    judged = evaluate_run(Qrels(grades), monot5, [measure])[measure]["490595"]
    ideal = sorted((g for g in qrels.judgments["490595"].values() if g > 0), reverse=True)[:10]
    lifted = sorted((g for g in grades["490595"].values() if g > 0), reverse=True)[:10]
    dcg = lambda gains: sum(gain / np.log2(rank + 2) for rank, gain in enumerate(gains))  # noqa: E731
    after = min(judged * dcg(lifted) / dcg(ideal), 1.0)  # the judged qrels' normalisation, as M+
    row = next(line for line in dl19_judge_file.read_text().splitlines() if line.startswith("490595\t7422680\t"))
    mean_move = next(part for part in row.split("\t")[-1].split("; ") if part.startswith("nDCG@10::mean"))
    assert mean_move.startswith(f"nDCG@10::mean (undecided) {-(after - before) / 43:+.4g} ")


def test_feeding_the_judge_file_back_with_the_full_qrels_grades_settles_every_gate(
    dl19_pooled, dl19_judge_file, tmp_path
):
    spec, before = dl19_pooled
    filled = fill_from(
        dl19_judge_file,
        shared_path("anserini_tools_qrels_topics", "qrels", "qrels.dl19-passage.txt"),
        tmp_path / "judged.tsv",
    )
    settled = tmp_path / "bvtest.yaml"
    settled.write_text(
        spec.read_text().replace(
            f"qrels: {spec.parent / 'pooled.qrels'}", f"qrels: [{spec.parent / 'pooled.qrels'}, {filled}]"
        )
    )
    after = evaluate_spec(load_spec(settled), use_cache=False)
    assert outcomes(before) == {"trisk": "UNDECIDED", "var": "OK", "bias2_plus_var": "OK", "mean": "UNDECIDED"}
    assert outcomes(after) == {"trisk": "OK", "var": "OK", "bias2_plus_var": "OK", "mean": "OK"}
    assert all(verdict.corners is None for verdict in after.gates)  # both top 10 judged now: nothing unjudged
    mean = next(verdict for verdict in after.gates if verdict.gate.name == "mean")
    assert mean.value - mean.reference_value == pytest.approx(0.00522, abs=5e-5)
    roles = [(item.role, Path(item.path).name) for item in after.inputs if item.role == "qrels"]
    assert roles == [("qrels", "pooled.qrels"), ("qrels", "judged.tsv")]


def test_the_judge_file_is_never_written_over_grades_or_a_file_that_is_not_one(
    dl19_pooled, dl19_judge_file, tmp_path, capsys
):
    from pytest_bvtest.cli import main

    spec, _ = dl19_pooled
    graded = fill_from(dl19_judge_file, spec.parent / "pooled.qrels", tmp_path / "graded.tsv")
    text = graded.read_text()
    assert main(["judge", str(spec), "-o", str(graded), "--no-cache"]) == 2
    assert "is a judge file with 84 grades filled in: it is not replaced" in capsys.readouterr().err
    assert graded.read_text() == text
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert main(["judge", str(spec), "-o", str(notes), "--no-cache"]) == 2
    assert "exists and is not a judge file: it is not replaced" in capsys.readouterr().err
    assert notes.read_text() == "my notes\n"
    assert main(["judge", str(spec), "-o", str(spec.parent / "pooled.qrels"), "--no-cache"]) == 2
    assert "is the qrels" in capsys.readouterr().err
    assert main(["judge", str(spec), "-o", str(notes), "--no-cache", "--force"]) == 0
    assert notes.read_text() == dl19_judge_file.read_text().replace(
        os.path.relpath(dl19_judge_file, spec.parent), os.path.relpath(notes, spec.parent)
    )


def test_judge_refuses_a_spec_without_gates_and_names_the_runs_when_nothing_is_unjudged(tmp_path, capsys):
    from pytest_bvtest.cli import main

    spec = small_project(tmp_path)
    text = spec.read_text()
    spec.write_text(text.split("gates:")[0])
    assert main(["judge", str(spec), "-o", str(tmp_path / "judgments.tsv"), "--no-cache"]) == 2
    assert "judge needs a candidate and gates" in capsys.readouterr().err  # was an empty file, "0 of 0 gates"
    assert not (tmp_path / "judgments.tsv").exists()
    (tmp_path / "official.txt").write_text("1 0 d1 1\n1 0 d2 0\n1 0 d3 0\n2 0 e1 1\n2 0 e2 0\n")  # all judged
    spec.write_text(text)
    assert main(["judge", str(spec), "-o", str(tmp_path / "judgments.tsv"), "--no-cache"]) == 0
    first = (tmp_path / "judgments.tsv").read_text().splitlines()[0]
    assert first.startswith("# bvtest judge bvtest.yaml: 0 unjudged documents of the top 2 of candidate, prod,")


def test_pytest_refuses_a_judge_file_for_a_spec_without_gates(pytester):
    spec = small_project(pytester.path)
    spec.write_text(spec.read_text().split("gates:")[0])
    result = pytester.runpytest("bvtest.yaml", "--bvtest-judge", "judged.tsv", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["bvtest: --bvtest-judge: *judge needs a candidate and gates*"])
    assert not (pytester.path / "judged.tsv").exists()


def test_pytest_writes_the_same_judge_file(dl19_pooled, dl19_judge_file, pytester):
    spec, _ = dl19_pooled
    collected = pytester.path / "bvtest-pooled.yaml"
    collected.write_text(spec.read_text())
    result = pytester.runpytest("--bvtest-judge", "judged.tsv", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, warnings=2)
    result.stdout.fnmatch_lines(
        ["bvtest-pooled.yaml U..U*", "bvtest: wrote judged.tsv: 84 unjudged documents to judge"]
    )
    # the two undecided gates' warnings are one in pytest's summary, said at the spec's qrels; the numbers once, in
    # the bvtest summary
    said = result.stdout.str()
    assert said.count("GateUndecidedWarning") == 1 and said.count("84 unjudged documents decide") == 1
    result.stdout.fnmatch_lines(
        [
            "bvtest-pooled.yaml::nDCG@10::trisk",
            "bvtest-pooled.yaml::nDCG@10::mean",
            "*bvtest-pooled.yaml:1: GateUndecidedWarning: *",
        ]
    )
    written = (pytester.path / "judged.tsv").read_text().splitlines()
    expected = dl19_judge_file.read_text().splitlines()
    assert written[3:] == expected[3:]  # the table; the comments name the spec and the file's own path


# --- several qrels files --------------------------------------------------------------------------------------


def small_project(folder: Path) -> Path:
    (folder / "official.txt").write_text("1 0 d1 1\n1 0 d2 0\n2 0 e1 1\n")
    (folder / "new.run").write_text("1 Q0 d3 1 3.0 new\n1 Q0 d1 2 2.0 new\n2 Q0 e1 1 1.0 new\n")
    (folder / "prod.run").write_text("1 Q0 d1 1 3.0 prod\n1 Q0 d2 2 2.0 prod\n2 Q0 e2 1 1.0 prod\n")
    spec = folder / "bvtest.yaml"
    spec.write_text(
        "qrels: official.txt\nmeasures: [P@2]\nbaselines: {prod: prod.run}\ncandidate: new.run\n"
        "gates:\n  - {statistic: mean, max_decrease: 0}\n"
    )
    return spec


def test_qrels_take_several_files_named_in_every_report_and_keyed_in_the_cache(tmp_path, capsys):
    from pytest_bvtest.cli import main

    spec = small_project(tmp_path)
    assert main(["check", str(spec), "--json", str(tmp_path / "one.json")]) == 0
    (tmp_path / "team.tsv").write_text("topic\tdocno\tgrade\n1\td3\t1\n2\te2\t0\n")
    spec.write_text(spec.read_text().replace("qrels: official.txt", "qrels: [official.txt, team.tsv]"))
    assert load_spec(spec).qrels_files() == (tmp_path / "official.txt", tmp_path / "team.tsv")
    assert main(["check", str(spec), "--json", str(tmp_path / "two.json")]) == 0
    import json

    one, two = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("one", "two"))
    inputs = [item["path"] for item in two["evaluations"][0]["inputs"] if item["role"] == "qrels"]
    assert inputs == [str(tmp_path / "official.txt"), str(tmp_path / "team.tsv")]
    # the candidate's score changed with the team's judgment: the cache did not serve the old one
    means = [document["evaluations"][0]["systems"][1]["mean"] for document in (one, two)]
    assert means == [0.5, 0.75]
    capsys.readouterr()
    assert (
        main(
            [
                "evaluate",
                "--qrels",
                str(tmp_path / "official.txt"),
                "--qrels",
                str(tmp_path / "team.tsv"),
                "-m",
                "P@2",
                "--mean",
                str(tmp_path / "new.run"),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out == "system\tmeasure\tmean\nnew\tP@2\t0.75\n"


@pytest.mark.parametrize(
    ("qrels", "fragment"),
    [
        ("[]", "qrels: expected a qrels file or a list of them, got an empty list"),
        ("[official.txt, official.txt]", "qrels[1]: official.txt is listed twice"),
        ("[official.txt, missing.tsv]", "qrels[1]: file not found"),
    ],
)
def test_a_list_of_qrels_files_is_checked_at_its_line(tmp_path, qrels, fragment):
    spec = small_project(tmp_path)
    spec.write_text(spec.read_text().replace("qrels: official.txt", f"qrels: {qrels}"))
    with pytest.raises(InputError) as raised:
        load_spec(spec)
    assert str(raised.value).startswith(f"{spec}:1: {fragment}")


# --- hints ------------------------------------------------------------------------------------------------------


def test_a_gate_whose_blamed_topics_lose_only_as_judged_suggests_the_judged_only_measure(trec_covid):
    """TREC-COVID's topic 18 (7 of AbstractOHSU's top 10 unjudged) is the loss the gates name first; with
    nDCG(judged_only=True)@10 AbstractOHSU and R4_total_fusion differ by +0.0006 on the mean."""
    gates = {
        gate["id"].rsplit("::", 1)[-1]: gate for gate in evaluation_document(trec_covid)["evaluations"][0]["gates"]
    }
    trisk = gates["trisk"]
    first = trisk["worst_topics"][0]
    assert (first["topic"], first["unjudged"], first["compared_unjudged"]) == ("18", 7, 0)
    assert first["candidate_optimistic"] > first["compared"] > first["candidate"]
    assert trisk["hint"].startswith(
        "3 of the 5 topics listed lose only as judged: with the unjudged documents of AbstractOHSU's top 10 relevant "
        "they would not lose (18, 22, 17); nDCG(judged_only=True)@10 scores only the documents that were judged"
    )
    assert "  hint: 3 of the 5 topics listed" in trisk["message"]
    assert gates["var"]["hint"] is None  # its topics are not losses the unjudged documents explain
    measure = parse_measure("nDCG(judged_only=True)@10")
    from pytest_bvtest.scoring.measures import evaluate_run

    qrels = read_qrels(shared_path("anserini_tools_qrels_topics", "qrels", "qrels.covid-round4.txt"))
    runs = shared_path("trec_covid_ohsu_runs", "runs", "Round4_Runs_LessRM3")
    means = [
        np.mean(list(evaluate_run(qrels, read_run(runs / name), [measure])[measure].values()))
        for name in ("AbstractOHSU.txt.gz", "R4_total_fusion.txt.gz")
    ]
    assert means[0] - means[1] == pytest.approx(0.00059, abs=1e-5)


@pytest.mark.parametrize(
    ("measure", "form"),
    [
        ("nDCG@10", "nDCG(judged_only=True)@10"),
        ("AP(rel=2)", "AP(rel=2,judged_only=True)"),
        ("ERR@20", None),  # gdeval scores unjudged documents as gain 0: no judged-only form
        ("nDCG(dcg='exp-log2')@10", None),
    ],
)
def test_the_judged_only_form_of_a_measure(measure, form):
    from pytest_bvtest.report.wording import judged_only_form

    assert judged_only_form(measure) == form


def test_undecided_gates_are_github_warnings_unless_they_fail_ci(dl19_pooled):
    from dataclasses import replace

    from pytest_bvtest.report.github import annotations

    _, evaluation = dl19_pooled
    document = evaluation_document(evaluation)
    commands = annotations(document)
    assert [command.split(" ", 1)[0] for command in commands] == ["::warning"] * 2
    assert all("title=bvtest UNDECIDED " in command for command in commands)
    strict = evaluation_document(
        replace(
            evaluation,
            measures=tuple(
                replace(
                    measure,
                    gates=tuple(replace(gate, passed=not gate.undecided and gate.passed) for gate in measure.gates),
                )
                for measure in evaluation.measures
            ),
        )
    )
    assert [command.split(" ", 1)[0] for command in annotations(strict)] == ["::error"] * 2
