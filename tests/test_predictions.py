"""Predicted grades, trusted as far as they agree with people (docs/predictions.md; docs/mathematics.md §10,
"Predicted grades"): Cohen's kappa against hand-computed values, the refinement by Bayes' rule, the predictions file
and the predictor's command, the shipped predictor, and the loop on DL19 with pooled qrels: a random predictor
changes nothing, an oracle (the fuller qrels) settles every undecided gate as the fuller qrels decide it.

No test reaches the network: every predictor here is a local command or function.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path
from test_plausible import hand_made, hand_made_spec, write_qrels

from pytest_bvtest.cli import main as bvtest
from pytest_bvtest.errors import InputError
from pytest_bvtest.io.predictions import PredictorRow, read_documents, read_predictions, run_predictor
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import read_run
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.judging.predictions import predicted_grades
from pytest_bvtest.predictor import predict
from pytest_bvtest.report.outputs import evaluation_document
from pytest_bvtest.spec.reader import load_spec
from pytest_bvtest.stats.plausible import GRADES_STREAM, draw_grades
from pytest_bvtest.stats.predictions import (
    agrees_beyond_chance,
    cohen_kappa,
    confusion_matrix,
    neighbour_grades,
    prediction_likelihoods,
    refine_prior,
    stratified_sample,
    tfidf_vectors,
    trust,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"

# --- the statistics -------------------------------------------------------------------------------------------------


def test_kappa_of_the_textbook_example():
    # two readers of 50 applications: both yes 20, A yes B no 5, A no B yes 10, both no 15 (the example of Cohen's
    # kappa in most textbooks): p_o = 35/50 = 0.7, p_e = 25/50 * 30/50 + 25/50 * 20/50 = 0.5, kappa = 0.2 / 0.5
    observed, kappa, error = cohen_kappa(np.array([[20, 5], [10, 15]]))
    assert observed == pytest.approx(0.7) and kappa == pytest.approx(0.4)
    assert error == pytest.approx(np.sqrt(0.7 * 0.3 / (50 * 0.5**2)))  # Cohen (1960), Eq. 9


def test_kappa_of_three_grades_computed_by_hand():
    # n = 30, agreement 22/30, rows 12 12 6, columns 13 12 5: p_e = (156 + 144 + 30) / 900 = 11/30,
    # kappa = (22/30 - 11/30) / (19/30) = 11/19
    confusion = confusion_matrix(
        [0] * 12 + [1] * 12 + [2] * 6, [0] * 10 + [1] * 2 + [0] * 3 + [1] * 8 + [2] + [1] * 2 + [2] * 4, 3
    )
    assert confusion.tolist() == [[10, 2, 0], [3, 8, 1], [0, 2, 4]]
    observed, kappa, _ = cohen_kappa(confusion)
    assert observed == pytest.approx(22 / 30) and kappa == pytest.approx(11 / 19)


def test_spam_counts_as_not_relevant_and_a_grade_outside_the_scale_is_refused():
    assert confusion_matrix([-2, 0, 1], [0, 0, 1], 2).tolist() == [[2, 0], [0, 1]]
    with pytest.raises(Exception, match="0 to 1"):
        confusion_matrix([0], [2], 2)


def test_a_chance_level_predictor_is_not_used_a_good_one_is():
    assert not agrees_beyond_chance(np.array([[25.0, 25.0], [25.0, 25.0]]))  # kappa 0
    assert agrees_beyond_chance(np.diag([50.0, 50.0, 50.0]))
    # kappa 0.4 on 50 documents, standard error 0.13: its 95% lower bound 0.19 is above 0
    assert agrees_beyond_chance(np.array([[20.0, 5.0], [10.0, 15.0]]))
    # kappa 0.2 on 10: the bound is below 0
    assert not agrees_beyond_chance(np.array([[4.0, 1.0], [3.0, 2.0]]))


def test_trust_is_kappas_lower_bound_and_tempers_the_likelihoods(tmp_path):
    # kappa 0.4 on 50 documents, se sqrt(0.7 * 0.3 / (50 * 0.25)): trust 0.4 - 1.6449 * 0.12961 = 0.1868
    assert trust(np.array([[20.0, 5.0], [10.0, 15.0]])) == pytest.approx(0.4 - 1.6448536 * np.sqrt(0.0168), abs=1e-6)
    assert trust(np.diag([50.0, 50.0])) == 1.0 and trust(np.array([[4.0, 1.0], [3.0, 2.0]])) == 0.0
    # read from a predictions file against the qrels: 50 judged documents as above, one unjudged predicted relevant
    qrels = tmp_path / "q.txt"
    judged = [0] * 25 + [1] * 25
    predicted = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    qrels.write_text("".join(f"1 0 d{k} {grade}\n" for k, grade in enumerate(judged)))
    (tmp_path / "p.tsv").write_text("".join(f"1\td{k}\t{grade}\n" for k, grade in enumerate(predicted)) + "1\tu\t1\n")
    read = predicted_grades(tmp_path / "p.tsv", read_qrels(qrels), 1)
    assert read.confusion.tolist() == [[20, 5], [10, 15]] and read.grades == {("1", "u"): 1}
    expected = prediction_likelihoods(read.confusion)[:, 1] ** read.trust
    assert read.likelihoods([("1", "u"), ("1", "v")], 2) == pytest.approx(np.array([expected, [1.0, 1.0]]))


def test_the_likelihoods_and_bayes_rule_by_hand():
    confusion = np.array([[8.0, 2.0], [1.0, 9.0]])
    likelihoods = prediction_likelihoods(confusion)
    # q = (9/20, 11/20), one pseudo-document per human grade: (C[i, j] + q_j) / (10 + 1)
    assert likelihoods == pytest.approx(np.array([[8.45, 2.55], [1.45, 9.55]]) / 11)
    # prior 0.9 / 0.1, predicted relevant: 0.1 * 9.55 / (0.9 * 2.55 + 0.1 * 9.55)
    refined = refine_prior(np.array([0.9, 0.1]), likelihoods[:, 1])
    assert refined[1] == pytest.approx(0.955 / (2.295 + 0.955))


def test_a_predictor_independent_of_the_truth_leaves_the_prior_as_it_is():
    # every human grade predicted alike: the rows are equal, so is the likelihood of every grade
    confusion = np.outer([30.0, 12.0, 6.0], [0.5, 0.3, 0.2])
    likelihoods = prediction_likelihoods(confusion)
    prior = np.array([[0.8, 0.15, 0.05], [0.6, 0.2, 0.2]])
    for predicted in range(3):
        assert refine_prior(prior, likelihoods[:, predicted]) == pytest.approx(prior)


def test_refined_draws_follow_draw_grades_rule_on_the_refined_probabilities():
    shares = np.array([[0.5, 0.3, 0.2], [0.2, 0.4, 0.4], [0.6, 0.2, 0.2]])
    discounts = np.random.default_rng(1).uniform(0.2, 0.8, size=(400, 3))
    flat = np.ones((3, 3))
    assert (draw_grades(shares, discounts, 4, likelihoods=flat) == draw_grades(shares, discounts, 4)).all()
    likelihoods = np.array([[1.0, 1.0, 1.0], [0.05, 0.15, 0.8], [0.9, 0.08, 0.02]])
    drawn = draw_grades(shares, discounts, 4, likelihoods=likelihoods)
    uniform = np.random.default_rng([4, GRADES_STREAM]).random(discounts.shape)
    for s in range(0, 400, 37):  # a naive loop: Bayes' rule, then the smallest positive grade below u
        for k in range(3):
            prior = discounts[s, k] * shares[k]
            prior[0] = 1 - prior[1:].sum()
            refined = prior * likelihoods[k] / (prior * likelihoods[k]).sum()
            expected = next((g for g in (1, 2) if uniform[s, k] < refined[1 : g + 1].sum()), 0)
            assert drawn[s, k] == expected
    # document 1, predicted relevant by a good predictor, is drawn relevant far more often than its prior says
    assert (drawn[:, 1] > 0).mean() > 0.8 > (draw_grades(shares, discounts, 4)[:, 1] > 0).mean()


def test_the_sample_is_stratified_by_grade_and_seeded():
    grades = [0] * 100 + [1] * 10 + [2] * 50 + [-2] * 5
    chosen = stratified_sample(grades, 60, seed=3)
    # 20 of each grade asked; grade 1 has only 10, so grades 0 (spam counts as 0) and 2 share the other 10
    assert np.bincount(np.maximum(np.array(grades)[chosen], 0)).tolist() == [25, 10, 25]
    assert (chosen == stratified_sample(grades, 60, seed=3)).all() and len(set(chosen.tolist())) == 60
    assert not (chosen == stratified_sample(grades, 60, seed=4)).all()
    assert stratified_sample([0, 1], 200, seed=0).tolist() == [0, 1]


def test_tfidf_and_the_nearest_neighbours_by_hand():
    vectors = tfidf_vectors(["red apple", "red car", "green apple apple"]).toarray()
    # idf = log(4 / (1 + df)) + 1: red and apple in two texts, car and green in one; tf = 1 + log(count)
    idf_two, idf_one = np.log(4 / 3) + 1, np.log(2) + 1
    first = np.array([idf_two, idf_two]) / np.hypot(idf_two, idf_two)
    assert sorted(vectors[0][vectors[0] > 0]) == pytest.approx(sorted(first))
    third = np.array([(1 + np.log(2)) * idf_two, idf_one])
    assert sorted(vectors[2][vectors[2] > 0]) == pytest.approx(sorted(third / np.linalg.norm(third)))
    # three neighbours vote by similarity: grade 2 has 0.5 + 0.4 against grade 0's 0.8; the document itself never votes
    similarity = np.array([[0.8, 0.5, 0.4, 0.1], [-np.inf, 0.1, 0.0, 0.05]])
    assert neighbour_grades(similarity, np.array([0, 2, 2, 1]), 3).tolist() == [2, 2]


# --- files and commands ---------------------------------------------------------------------------------------------


def test_documents_from_jsonl_and_tsv_and_their_errors_at_their_line(tmp_path):
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"docno": "d1", "title": "Json", "text": "parse it"}\n{"doc_id": 2, "contents": "two"}\n')
    assert read_documents(jsonl) == {"d1": "Json. parse it", "2": "two"}
    tsv = tmp_path / "docs.tsv"
    tsv.write_text("d1\tfirst text\nd2\tsecond\ttabbed\n")
    assert read_documents(tsv) == {"d1": "first text", "d2": "second\ttabbed"}
    tsv.write_text("d1\tfirst\nd1\tagain\n")
    with pytest.raises(InputError, match=r"docs.tsv:2: document 'd1' is listed twice"):
        read_documents(tsv)
    jsonl.write_text('{"docno": "d1", "text": "x"}\n{"docno": "d2"}\n')
    with pytest.raises(InputError, match=r"docs.jsonl:2: document 'd2' has no text"):
        read_documents(jsonl)


def test_a_predictions_file_is_no_qrels_and_its_errors_name_their_line(tmp_path):
    predictions = tmp_path / "predicted.tsv"
    predictions.write_text("# bvtest predictions\ntopic\tdocno\tpredicted\n1\td1\t2\n1\td2\tx\n")
    with pytest.raises(InputError, match=r"predicted.tsv:4: grade 'x' is not an integer"):
        read_predictions(predictions)
    predictions.write_text("topic\tdocno\tpredicted\n1\td1\t2\n1\td1\t1\n")
    with pytest.raises(InputError, match=r"predicted.tsv:3: .* graded again \(line 2\)"):
        read_predictions(predictions)
    predictions.write_text("topic\tdocno\tpredicted\n1\td1\t2\n")
    assert read_predictions(predictions).grades == {("1", "d1"): 2}
    with pytest.raises(InputError, match="found 3 columns, expected 4"):  # listed under qrels by mistake
        read_qrels(predictions)


def _script(folder: Path, code: str) -> str:
    """A predictor command: ``code`` as a Python script, run by this interpreter."""
    script = folder / "judge.py"
    script.write_text(code)
    return f'"{sys.executable}" "{script}"'


ROWS = [PredictorRow("1", "parse json", "d1", "json.loads parses"), PredictorRow("1", "parse json", "d2", None)]
#: Grades each row 1 when its text column is filled in, else 0: what the command reads on stdin.
BY_TEXT = """import sys
for row in sys.stdin.read().splitlines()[1:]:
    topic, query, docno, text = row.split("\\t")
    print(topic, docno, {GRADE}, sep="\\t")
"""


def test_the_predictor_reads_the_rows_on_stdin_and_its_grades_are_checked(tmp_path):
    assert run_predictor(_script(tmp_path, BY_TEXT.format(GRADE="int(bool(text))")), ROWS, 3) == {
        ("1", "d1"): 1,
        ("1", "d2"): 0,
    }
    with pytest.raises(InputError, match=r"judge.py.*output, line 1: grade 'True' is not an integer"):
        run_predictor(_script(tmp_path, BY_TEXT.format(GRADE="bool(text)")), ROWS, 3)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("print('1 d1 7')", r"line 1: grade 7 is outside the grades 0 to 3"),
        ("print('1 d9 1')", r"line 1: document 'd9' of topic '1' was not asked for"),
        ("print('1 d1')", r"line 1: expected topic, docno and grade, got 2 columns"),
        ("import sys; sys.stderr.write('model not loaded'); sys.exit(3)", r"exited with status 3: 'model not loaded'"),
        ("import time; time.sleep(30)", r"did not finish within 0.5 s"),
    ],
)
def test_a_failing_or_malformed_predictor_is_one_clear_error(tmp_path, code, message):
    with pytest.raises(InputError, match=message):
        run_predictor(_script(tmp_path, code), ROWS, 3, timeout=0.5)


def test_a_predictor_that_does_not_exist_says_so():
    with pytest.raises(InputError, match="no-such-judge is not found"):
        run_predictor("no-such-judge --model x", ROWS, 3)


# --- the shipped predictor ------------------------------------------------------------------------------------------


def test_the_shipped_predictor_agrees_with_people_on_the_example_project_beyond_chance():
    qrels = read_qrels(EXAMPLE / "eval" / "qrels.txt").judgments
    texts = read_documents(EXAMPLE / "corpus" / "stdlib_docs.jsonl")
    judged = sorted((topic, docno, grade) for topic, grades in qrels.items() for docno, grade in grades.items())
    chosen = stratified_sample([grade for *_, grade in judged], 200, seed=0)
    predicted = predict([(judged[k][0], judged[k][1], "") for k in chosen], qrels, texts, [])
    confusion = confusion_matrix([judged[k][2] for k in chosen], predicted, 4)
    agreement, kappa, _ = cohen_kappa(confusion)
    # leave-one-out (a document's own grade never votes), 50 documents of each grade: 48% alike, kappa 0.31
    # (docs/predictions.md); chance would be 25% and 0
    assert agrees_beyond_chance(confusion) and 0.4 < agreement < 0.6 and 0.2 < kappa < 0.45
    # alone on its topic, a judged document has no neighbour but itself, which may not vote: grade 0
    topic, docno, grade = next(row for row in judged if row[2] == 3)
    assert predict([(topic, docno, "")], {topic: {docno: grade}}, texts, []) == [0]


def test_by_ranks_the_shipped_predictor_leaves_out_what_no_judged_document_resembles(tmp_path):
    # two runs rank d1 (relevant) 1st and 2nd, d2 (relevant) 2nd and 1st, d3 (not) 3rd, u 4th, w 900th in both
    ranked = ["d1", "d2", "d3", "u"] + [f"x{k}" for k in range(895)] + ["w"]
    runs = []
    for name, order in (("a", ranked), ("b", [ranked[1], ranked[0], *ranked[2:]])):
        runs.append(tmp_path / f"{name}.run")
        runs[-1].write_text(
            "".join(f"1 Q0 {docno} {rank} {1000 - rank} {name}\n" for rank, docno in enumerate(order, 1))
        )
    judgments = {"1": {"d1": 1, "d2": 1, "d3": 0}}
    rows = [("1", "u", ""), ("1", "w", ""), ("1", "d3", "")]
    # u lies one rank below d3 (log2 4 against 3: nearer than d3 to d1), w at rank 900 is far from all; d3 itself
    # is voted on by its neighbours d1 and d2 (it never votes for itself)
    assert predict(rows, judgments, None, [str(path) for path in runs], neighbours=1) == [0, None, 1]


# --- the loop on a hand-made case, through bvtest judge -------------------------------------------------------------


def test_judge_predict_writes_a_predictions_file_the_next_check_weighs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    qrels, _, _ = hand_made(tmp_path)
    write_qrels(tmp_path / "partial.qrels", qrels, {})
    spec = hand_made_spec(tmp_path, "partial.qrels", "judgments: {predictions: predicted.tsv, draws: 200}\n")
    command = f'"{sys.executable}" -m pytest_bvtest.predictor --qrels partial.qrels --run cand.run --run ref.run'
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = bvtest(["judge", str(spec), "-o", "judge.tsv", "--predict", command, "--no-cache"])
    assert code == 0, out.getvalue()
    said = out.getvalue()
    # by ranks, one of the 4 unjudged documents lies farther from every judged one than they from each other: left out
    assert "3 predicted grades of unjudged documents (1 left out by the predictor)" in said
    assert "judged documents, κ" in said
    written = read_predictions(tmp_path / "predicted.tsv")
    # 3 of the 4 unjudged documents and every judged one of their topics (fewer than 200): 3 + 4 * 8
    assert len(written.grades) == 3 + 32
    assert (tmp_path / "predicted.tsv").read_text().startswith("# bvtest predictions by ")
    # the next check reads it: the gate's words say how many grades were predicted and how far they are trusted
    verdict = evaluate_spec(load_spec(spec), use_cache=False).gates[0]
    assert verdict.plausible.predicted.documents == 3 and verdict.plausible.predicted.sample == 32
    document = evaluation_document(evaluate_spec(load_spec(spec), use_cache=False))
    gate = document["evaluations"][0]["gates"][0]
    assert gate["judgments"]["plausible"]["predicted"]["sample"] == 32
    assert "3 predicted grades" in gate["headline"] and "judged documents, κ" in gate["headline"]
    # a file that is not a predictions file is not replaced
    (tmp_path / "other.tsv").write_text("my notes\n")
    with contextlib.redirect_stderr(io.StringIO()) as errors, contextlib.redirect_stdout(io.StringIO()):
        code = bvtest(["judge", str(spec), "-o", "j2.tsv", "--predict", command, "--predictions", "other.tsv"])
    assert code == 2 and "is not a predictions file" in errors.getvalue()


def test_a_predicted_grade_above_the_qrels_top_grade_is_refused_at_its_line(tmp_path):
    qrels, _, _ = hand_made(tmp_path)
    write_qrels(tmp_path / "partial.qrels", qrels, {})
    (tmp_path / "predicted.tsv").write_text("topic\tdocno\tpredicted\n1\tu1\t1\n2\tu2\t3\n")
    spec = hand_made_spec(tmp_path, "partial.qrels", "judgments: {predictions: predicted.tsv}\n")
    with pytest.raises(InputError, match=r"predicted.tsv:3: document 'u2' of topic '2' is predicted 3, above"):
        evaluate_spec(load_spec(spec), use_cache=False)


# --- DL19 with pooled qrels: a random predictor changes nothing, an oracle settles ---------------------------------


@pytest.fixture(scope="module")
def dl19_pooled_predictions(tmp_path_factory):
    """DL19 passage, qrels kept to the top 10 of monoT5, ColBERT and DRMM; monoBERT against monoT5 (two gates the
    pooled qrels leave undecided); the unjudged documents of every run's top 10 and 200 judged ones, stratified."""
    from test_judgments import DL19_RUNS, pooled_qrels, trec_eval_order

    folder = tmp_path_factory.mktemp("dl19-predictions")
    runs = shared_path("dl19_passage_qppeval_runs", "runs")
    full = shared_path("anserini_tools_qrels_topics", "qrels", "qrels.dl19-passage.txt")
    pooled = pooled_qrels(
        full, [runs / DL19_RUNS[name] for name in ("monot5", "colbert", "drmm")], 10, folder / "p.qrels"
    )
    partial, fuller = read_qrels(pooled).judgments, read_qrels(full).judgments
    unjudged = sorted(
        {
            (topic, docno)
            for name in DL19_RUNS
            for topic, scores in read_run(runs / DL19_RUNS[name]).scores.items()
            for docno in trec_eval_order(scores)[:10]
            if docno not in partial.get(topic, {})
        }
    )
    judged = sorted((topic, docno, grade) for topic, grades in partial.items() for docno, grade in grades.items())
    pairs = unjudged + [judged[k][:2] for k in stratified_sample([grade for *_, grade in judged], 200, seed=0)]

    def spec(name: str, extra: str) -> Path:
        path = folder / f"{name}.yaml"
        path.write_text(
            f"qrels: {full if name == 'fuller' else pooled}\nmeasures: [nDCG@10]\nbaselines:\n"
            f"  monot5: {runs / DL19_RUNS['monot5']}\n"
            f"candidate: {{run: {runs / DL19_RUNS['monobert']}, name: monobert}}\nreference: monot5\ncache: false\n"
            f"analysis: {{risk_alpha: 1, power: false}}\n{extra}gates:\n  - {{statistic: trisk, false_alarm: 0.05}}\n"
            "  - {statistic: mean, max_decrease: 0.01, false_alarm: 0.05}\n"
        )
        return path

    def outcomes(name: str, grade_of=None) -> dict:
        extra = "judgments: {draws: 100}\n"
        if grade_of is not None:
            (folder / f"{name}.tsv").write_text(
                "topic\tdocno\tpredicted\n" + "".join(f"{t}\t{d}\t{grade_of(t, d)}\n" for t, d in pairs)
            )
            extra = f"judgments: {{draws: 100, predictions: {name}.tsv}}\n"
        if name == "fuller":
            extra = "judgments: {unjudged: nonrelevant}\n"
        return {verdict.gate.name: verdict for verdict in evaluate_spec(load_spec(spec(name, extra))).gates}

    return outcomes, fuller, len(unjudged)


def test_an_oracle_predictor_settles_every_undecided_gate_as_the_fuller_qrels_do(dl19_pooled_predictions):
    outcomes, fuller, unjudged = dl19_pooled_predictions
    assert unjudged == 139
    without = outcomes("none")
    assert {name: verdict.outcome for name, verdict in without.items()} == {"trisk": "UNDECIDED", "mean": "UNDECIDED"}
    oracle = outcomes("oracle", lambda topic, docno: max(0, fuller.get(topic, {}).get(docno, 0)))
    truth = outcomes("fuller")
    for name, verdict in oracle.items():
        assert verdict.plausible.predicted.kappa == 1.0 and verdict.plausible.predicted.used
        assert verdict.plausible.decided is not None and verdict.outcome == truth[name].outcome == "OK"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_random_predictor_cannot_flip_a_verdict(dl19_pooled_predictions, seed):
    outcomes, _, _ = dl19_pooled_predictions
    without = outcomes("none")
    rng = np.random.default_rng(seed)
    randomly = outcomes(f"random{seed}", lambda topic, docno: int(rng.integers(0, 4)))
    for name, verdict in randomly.items():
        predicted = verdict.plausible.predicted
        assert predicted.sample == 200 and abs(predicted.kappa) < 0.15 and not predicted.used
        # not used: P is what it was without predictions, grading for grading
        assert verdict.outcome == without[name].outcome
        assert verdict.plausible.passing == without[name].plausible.passing


def _with_unjudged(source: Path, target: Path, topics: int) -> Path:
    """``source`` with its 10th document replaced, on its first ``topics`` topics, by a document of the corpus that
    the qrels do not judge on that topic: a change that leaves a few holes."""
    judged = read_qrels(EXAMPLE / "eval" / "qrels.txt").judgments
    corpus = sorted(read_documents(EXAMPLE / "corpus" / "stdlib_docs.jsonl"))
    run = read_run(source)
    lines = []
    for index, (topic, scores) in enumerate(run.scores.items()):
        ranked = [docno for docno, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]
        if index < topics:
            ranked[9] = next(docno for docno in corpus if docno not in judged[topic] and docno not in ranked)
        lines += [f"{topic} Q0 {docno} {rank} {100 - rank} holes\n" for rank, docno in enumerate(ranked, 1)]
    target.write_text("".join(lines))
    return target


def test_the_loop_runs_on_the_example_project_out_of_the_box(tmp_path, monkeypatch):
    project = tmp_path / "example"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__", "reports"))
    spec = project / "bvtest.yaml"  # as it is, but for the power of its gates (half a minute, not what is tested)
    spec.write_text(spec.read_text().replace("analysis:\n", "analysis:\n  power: false\n", 1))
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")  # the spec's `python -m`
    run = _with_unjudged(EXAMPLE / "runs" / "production.run", tmp_path / "holes.run", 3)
    predicted, judge_file = tmp_path / "predicted.tsv", tmp_path / "judgments.tsv"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = bvtest(
            [
                "judge",
                "bvtest.yaml",
                "--run",
                str(run),
                "-o",
                str(judge_file),
                "--predict",
                "--predictions",
                str(predicted),
            ]
        )
    assert code == 0, out.getvalue()
    # the spec's predictor (texts by TF-IDF) graded the 3 documents to judge and the judged documents of their topics
    assert "wrote" in out.getvalue() and "3 predicted grades of unjudged documents" in out.getvalue()
    grades = read_predictions(predicted).grades
    judged = read_qrels(EXAMPLE / "eval" / "qrels.txt").judgments
    assert len(grades) == 3 + sum(len(judged[topic]) for topic in list(judged)[:3])
    lines = judge_file.read_text().splitlines()
    header = next(line for line in lines if line.startswith("topic\t"))
    assert header.split("\t")[-1] == "text"
    rows = [line.split("\t") for line in lines[lines.index(header) + 1 :]]
    assert len(rows) == 3 and {(row[0], row[1]) for row in rows} <= set(grades)
    texts = read_documents(EXAMPLE / "corpus" / "stdlib_docs.jsonl")
    for row in rows:  # each with the first 300 characters of its text, on one line
        text = " ".join(texts[row[1]].split())
        assert row[-1] == (text if len(text) <= 300 else text[:297].rstrip() + "...")


@pytest.mark.parametrize(
    ("judgments", "message"),
    [
        ('{predictor: "python -m \'team.judge"}', "judgments.predictor: cannot split the command"),
        ("{predictor: 3}", "judgments.predictor: expected a command"),
        ("{documents: missing.jsonl}", "judgments.documents: file not found"),
    ],
)
def test_the_spec_keys_of_predictions_are_checked_at_their_line(tmp_path, judgments, message):
    qrels, _, _ = hand_made(tmp_path)
    write_qrels(tmp_path / "partial.qrels", qrels, {})
    spec = hand_made_spec(tmp_path, "partial.qrels", f"judgments: {judgments}\n")
    with pytest.raises(InputError, match=message):
        load_spec(spec)


def test_a_predictions_file_named_but_not_written_yet_says_how_to_write_it(tmp_path):
    qrels, _, _ = hand_made(tmp_path)
    write_qrels(tmp_path / "partial.qrels", qrels, {})
    spec = hand_made_spec(tmp_path, "partial.qrels", "judgments: {predictions: predicted.tsv}\n")
    with pytest.raises(InputError, match=r"predicted.tsv: the predictions file does not exist; write it with `bvtest"):
        evaluate_spec(load_spec(spec), use_cache=False)
