"""The columnar path (pytest_bvtest.scoring.columnar) equals pytrec_eval on every measure it computes.

The reference is pytrec_eval itself, called as measures.py called it for these measures before the
columnar path existed (one fresh evaluator per relevance level). Compared: every run of the shared
real data (trec_eval's own test run, DL-HARD, DL19 re-rankers, TREC Web 2012 with spam grades -2,
TREC-COVID runs of four rounds; Judged@k against ir_measures on the same runs), and seeded random runs
made to hit every corner: heavy score ties (also ties only in single precision, as trec_eval compares
scores as C floats), unjudged and negatively graded documents, topics without any document of a
relevance level, missing topics, rel= levels and cutoffs beyond the ranking's length.
"""

from __future__ import annotations

from pathlib import Path

import ir_measures
import numpy as np
import pytest
from conftest import shared_path

from pytest_bvtest.io.qrels import Qrels, read_qrels
from pytest_bvtest.io.runs import Run, read_run, read_run_columns
from pytest_bvtest.scoring import columnar
from pytest_bvtest.scoring.measures import _evaluate_with_pytrec_eval, evaluate_run
from pytest_bvtest.spec.measures import parse_measure

TOLERANCE = 1e-12
FAST_MEASURES = [
    parse_measure(name)
    for name in (
        "AP",
        "AP(rel=2)",
        "AP(rel=3)",
        "nDCG",
        "nDCG@1",
        "nDCG@10",
        "nDCG@20",
        "nDCG@5000",
        "P@1",
        "P@10",
        "P(rel=2)@5",
        "P@2000",
        "R@10",
        "R@100",
        "R(rel=2)@1000",
        "R@5000",
        "RR",
        "RR(rel=2)",
        "RR@10",
        "RR@1",
    )
]


def test_every_measure_of_the_list_takes_the_columnar_path():
    assert all(map(columnar.computes, FAST_MEASURES))
    for name in (
        "AP@10",
        "AP(judged_only=True)",
        "nDCG(judged_only=True)@10",
        "nDCG(dcg='exp-log2')@10",
        "ERR@10",
        "Rprec",
        "Bpref",
        "Success@10",
        "NumRet",
        "SetP",
    ):
        assert not columnar.computes(parse_measure(name)), name


def assert_columnar_equals_pytrec_eval(
    qrels: Qrels, run: Run, label: str, path: Path | None = None, *, fast: bool = True
) -> None:
    """The columnar measures equal pytrec_eval's; with the run's ``path``, also when the file is read as columns.

    ``run`` comes from the validated reader (:func:`read_run`); the columns of ``path`` from
    :func:`read_run_columns`, whose fast path must give the same rankings and, with its docnos as
    bytes, the same values (``fast``: the file must take the fast path; else the validated reader reads it).
    """
    topics = [qid for qid in qrels.evaluated_topics() if run.scores.get(qid)]
    judgments = {qid: qrels.judgments[qid] for qid in topics}
    rankings = {qid: run.scores[qid] for qid in topics}
    expected = _evaluate_with_pytrec_eval(judgments, rankings, FAST_MEASURES)
    got = columnar.evaluate(columnar.ranked_gains_from_rankings(judgments, rankings, topics), FAST_MEASURES)
    for measure in FAST_MEASURES:
        assert list(got[measure]) == topics, (label, measure)
        reference = np.array([expected[measure][qid] for qid in topics])
        ours = np.array([got[measure][qid] for qid in topics])
        worst = np.abs(ours - reference).max(initial=0.0)
        assert worst <= TOLERANCE, f"{label} {measure}: differs from pytrec_eval by {worst:g}"
    # evaluate_run takes the columnar path for these measures and returns the same numbers
    assert evaluate_run(qrels, run, FAST_MEASURES[:3]) == {measure: got[measure] for measure in FAST_MEASURES[:3]}
    assert_judged_equals_ir_measures(qrels, run, label)
    if path is None:
        return
    columns = read_run_columns(path)
    assert isinstance(columns.docnos, np.ndarray) == fast, f"{label}: fast path taken: {not fast}"
    assert columns.topics == tuple(run.scores), label
    assert columns.rankings(columns.topics) == run.scores, label
    from_columns = columnar.evaluate(columnar.ranked_gains_from_columns(judgments, columns, topics), FAST_MEASURES)
    assert from_columns == got, label


JUDGED = [parse_measure(f"Judged@{k}") for k in (1, 5, 10, 20, 100, 1000)]


def assert_judged_equals_ir_measures(qrels: Qrels, run: Run, label: str) -> None:
    """Judged@k equals ir_measures' Judged@k (its own Python implementation, docs/mathematics.md §8) on every topic.

    ir_measures sorts a ranking by its score in double precision and breaks ties by docno ascending; trec_eval's
    order (docs/mathematics.md §1, every measure's) compares C floats and breaks ties by docno descending. The two
    counts may thus differ only where tied documents straddle rank k: every difference must be such a tie, and
    ir_measures given the ranking in trec_eval's order (ties broken by the scores) must agree everywhere.
    """
    ours = evaluate_run(qrels, run, JUDGED)
    measures = [ir_measures.Judged @ measure.cutoff for measure in JUDGED]

    def theirs(scores: dict[str, dict[str, float]]) -> dict[tuple[str, str], float]:
        return {
            (str(metric.measure), metric.query_id): metric.value
            for metric in ir_measures.iter_calc(measures, qrels.judgments, scores)
        }

    differing = [
        (measure, qid)
        for (measure, qid), value in theirs(run.scores).items()
        if qid in ours[parse_measure(measure)] and abs(ours[parse_measure(measure)][qid] - value) > TOLERANCE
    ]
    if not differing:
        return
    # trec_eval's order: scores as C floats, descending, ties by docno descending
    ranked = {
        qid: [
            docno for _, docno in sorted(((np.float32(score), docno) for docno, score in scores.items()), reverse=True)
        ]
        for qid, scores in run.scores.items()
    }
    for measure, qid in differing:
        k = parse_measure(measure).cutoff
        at_k, after_k = (np.float32(run.scores[qid][docno]) for docno in ranked[qid][k - 1 : k + 1])
        assert at_k == after_k, f"{label} {measure} topic {qid}: differs from ir_measures without a tie at rank {k}"
    in_trec_eval_order = {qid: {docno: -rank for rank, docno in enumerate(docnos)} for qid, docnos in ranked.items()}
    for (measure, qid), value in theirs(in_trec_eval_order).items():
        if qid in ours[parse_measure(measure)]:
            assert ours[parse_measure(measure)][qid] == pytest.approx(value, abs=TOLERANCE), (label, measure, qid)


@pytest.mark.parametrize("task", ["doc", "passage"])
def test_every_dl_hard_run(task):
    folder = shared_path("dl_hard", "dataset")
    qrels = read_qrels(folder / f"dl_hard-{task}.qrels")
    runs = sorted((folder / "baselines" / task).glob("*.run.gz"))
    assert len(runs) >= 6
    for path in runs:
        assert_columnar_equals_pytrec_eval(qrels, read_run(path), path.name, path)


def test_every_dl19_passage_rerun():
    folder = shared_path("dl19_passage_qppeval_runs")
    qrels = read_qrels(folder / "trecdl1920.qrels")
    runs = sorted((folder / "runs").glob("*.gz"))
    assert len(runs) == 5
    for path in runs:
        assert_columnar_equals_pytrec_eval(qrels, read_run(path), path.name, path)


def test_every_trec_web2012_baseline_with_spam_grades():
    folder = shared_path("trec_web2012_risk_baselines")
    qrels = read_qrels(folder / "qrels.web.151-200.txt")
    runs = sorted((folder / "runs").glob("*.txt.gz"))
    assert len(runs) == 8
    for path in runs:
        assert_columnar_equals_pytrec_eval(qrels, read_run(path), path.name, path)


@pytest.mark.parametrize(
    ("qrels_name", "run_name", "fast"),
    [
        # results.test and results-302.test separate columns by a tab and blanks: the validated reader reads them
        ("qrels.test", "results.test", False),
        ("qrels.rel_level", "results.test", False),
        ("qrels-302.test", "results-302.test", False),
        ("qrels.comment.test", "results.comment.test.gz", True),  # '#' inside docnos, 48-byte docnos
    ],
)
def test_trec_eval_own_test_runs(qrels_name, run_name, fast):
    folder = shared_path("trec_eval_test")
    qrels, path = read_qrels(folder / qrels_name), folder / run_name
    assert_columnar_equals_pytrec_eval(qrels, read_run(path), run_name, path, fast=fast)


@pytest.mark.parametrize(
    ("round_folder", "qrels_round"),
    [
        ("Round1_Runs", 1),
        ("Round2_Runs", 2),
        ("Round2_Runs_Fusion", 2),
        ("Round3_Runs_v2", 3),
        ("Round4_Runs_LessRM3", 4),
    ],
)
def test_every_trec_covid_ohsu_run(round_folder, qrels_round):
    qrels = read_qrels(shared_path("anserini_tools_qrels_topics", "qrels", f"qrels.covid-round{qrels_round}.txt"))
    runs = sorted(shared_path("trec_covid_ohsu_runs", "runs", round_folder).glob("*.txt.gz"))
    assert runs
    for path in runs:
        assert_columnar_equals_pytrec_eval(qrels, read_run(path), path.name, path)


def random_qrels_and_run(seed: int) -> tuple[Qrels, Run]:
    """Seeded qrels and run with every corner the columnar path must get right (see the module docstring)."""
    rng = np.random.default_rng(seed)
    judgments: dict[str, dict[str, int]] = {}
    scores: dict[str, dict[str, float]] = {}
    for topic in range(int(rng.integers(5, 30))):
        qid = f"q{topic}"
        pool = [f"d{number:03d}" for number in rng.choice(400, size=int(rng.integers(1, 120)), replace=False)]
        # grades -2..4, some topics graded only 0/1 (nothing at rel=2), at least one positive grade per topic
        top_grade = int(rng.choice([1, 2, 4]))
        grades = rng.integers(-2, top_grade + 1, size=len(pool))
        grades[0] = max(int(grades[0]), 1)
        judgments[qid] = dict(zip(pool, grades.tolist()))
        if rng.random() < 0.15:
            continue  # a topic the run misses
        length = int(rng.integers(1, 60))
        retrieved = [f"d{number:03d}" for number in rng.choice(450, size=length, replace=False)]
        style = rng.integers(4)
        if style == 0:  # heavy ties: a few distinct scores
            values = rng.integers(0, 3, size=length).astype(float)
        elif style == 1:  # every score equal
            values = np.full(length, 7.25)
        elif style == 2:  # distinct in double precision, tied in single precision (trec_eval's float)
            values = 1.0 + rng.integers(0, 4, size=length) * 1e-9
        else:
            values = rng.normal(size=length)
        scores[qid] = dict(zip(retrieved, values.tolist()))
    if not scores:
        first = next(iter(judgments))
        scores[first] = {"d000": 1.0}
    return Qrels(judgments), Run(f"random-{seed}", scores)


@pytest.mark.parametrize("seed", range(20))
def test_seeded_random_runs_with_ties_unjudged_documents_and_missing_topics(seed, tmp_path):
    qrels, run = random_qrels_and_run(seed)
    assert_columnar_equals_pytrec_eval(qrels, run, f"seed {seed}")
    # The same run as a file, with a topic the qrels do not judge (so only some topics are evaluated),
    # through the fast path with its docnos as bytes (ties broken on bytes).
    path = tmp_path / "random.run"
    with open(path, "w", encoding="ascii") as handle:
        for qid, ranking in {**run.scores, "unjudged": {"d001": 1.0}}.items():
            handle.writelines(f"{qid} Q0 {docno} 0 {score!r} random\n" for docno, score in ranking.items())
    assert_columnar_equals_pytrec_eval(qrels, read_run(path), f"seed {seed} from a file", path)


def test_single_precision_ties_are_broken_by_docno_descending_as_in_trec_eval():
    # The two scores differ in double precision but not as C floats: trec_eval ranks b (docno
    # descending) before a, so the relevant document a is at rank 2.
    qrels = Qrels({"1": {"a": 1}})
    run = Run("r", {"1": {"a": 1.0 + 1e-9, "b": 1.0}})
    values = evaluate_run(qrels, run, [parse_measure("RR"), parse_measure("AP")])
    assert values[parse_measure("RR")] == {"1": 0.5}
    assert values[parse_measure("AP")] == {"1": 0.5}


def test_a_tie_straddling_the_judging_depth_lists_its_unjudged_documents_in_trec_evals_order():
    """Two unjudged documents tied at ranks 10 and 11: trec_eval ranks the larger docno first, whatever the file's
    order, so that one is the top 10's (one of DL-HARD's 309 unjudged top-10 documents was listed by file order)."""
    from pytest_bvtest.scoring.lifts import run_lifts
    from pytest_bvtest.spec.measures import OptimisticMeasure

    qrels = Qrels({"q": {f"j{i}": 1 for i in range(9)}})
    scores = {f"j{i}": 20.0 - i for i in range(9)}
    scores.update({"u-a": 5.0, "u-b": 5.0, "u-c": 1.0})  # u-a first in the file
    run = Run(name="run", scores={"q": scores})
    lifts = run_lifts(qrels, run, [OptimisticMeasure(parse_measure("nDCG@10"), 1, 10)])
    (found,) = lifts.values()
    assert dict(found.documents["q"]) == {"u-b": 10}
    assert found.rank("q", "u-b") == 10 and found.rank("q", "u-a") == 11


@pytest.mark.parametrize("seed", range(6))
def test_integer_keyed_judgments_equal_the_lookup_per_row_on_shared_document_pools(seed):
    # Documents recur across topics (a shared id pool), the qrels judge documents of other topics, docnos the run
    # cannot hold (longer than its longest, not ASCII) and every grade from -2: the join on 64-bit keys must find
    # exactly the rows and grades a lookup of each row in its own topic's judgments finds.
    rng = np.random.default_rng(seed)
    topics = [f"t{j}" for j in range(int(rng.integers(1, 40)))]
    lengths = rng.integers(0, 80, size=len(topics))
    pool = np.array([f"doc{number}" for number in range(120)])
    docnos = np.concatenate([rng.choice(pool, size=length, replace=False) for length in lengths]).astype("S8")
    judgments = {
        qid: {
            **{str(docno): int(grade) for docno, grade in zip(rng.choice(pool, size=30), rng.integers(-2, 4, size=30))},
            "a-docno-longer-than-any": 1,
            "dôc1": 2,
        }
        for qid in topics
    }
    stops = np.cumsum(lengths)
    keyed = columnar._judged_rows(judgments, topics, stops, docnos)
    assert keyed is not None
    rows, grades = columnar._judged_rows_by_lookup(judgments, topics, stops, docnos.astype(str).tolist())
    assert sorted(zip(keyed[0].tolist(), keyed[1].tolist())) == list(zip(rows.tolist(), grades.tolist()))
    assert rows.size > 0


@pytest.mark.parametrize("seed", range(6))
def test_ranks_found_with_arrays_equal_each_topic_ranked_in_python(seed, tmp_path):
    # trec_eval's order (C floats descending, ties by docno descending) on tie-heavy runs read as bytes: every
    # document's rank joined and ranked with arrays equals its topic's ranking sorted in Python; 0 where not retrieved
    from pytest_bvtest.scoring.lifts import _Ranker

    _, run = random_qrels_and_run(seed)
    path = tmp_path / "random.run"
    with open(path, "w", encoding="ascii") as handle:
        for qid, ranking in run.scores.items():
            handle.writelines(f"{qid} Q0 {docno} 0 {score!r} random\n" for docno, score in ranking.items())
    columns = read_run_columns(path)
    assert isinstance(columns.docnos, np.ndarray)
    pairs = [(qid, f"d{number:03d}") for qid in [*run.scores, "absent"] for number in range(0, 460, 3)]
    pairs += [("q0", "dôc"), ("q0", "a-docno-longer-than-any-of-the-run")]
    ranks = _Ranker(lambda: columns).of(pairs)
    by_topic = _Ranker(lambda: columns)
    assert ranks.tolist() == [by_topic(qid, docno) or 0 for qid, docno in pairs]
    assert (ranks > 0).sum() > 10
