"""Plausible verdicts (docs/mathematics.md §10, "How plausible a verdict is"; docs/judgments.md): a gate whose corners
disagree is weighed over seeded gradings of its unjudged documents, each judged as CI would judge it.

The oracle is CI itself: the qrels completed with a grading's grades, evaluated by the pipeline as judged. On a small
hand-made case every grading is enumerated; on the real runs, clearly worse candidates must be red.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path

from pytest_bvtest.cli import main as bvtest
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import read_run
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.spec.reader import load_spec
from pytest_bvtest.stats.plausible import draw_grades, grade_shares

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"

# --- a hand-made case, every grading enumerated ---------------------------------------------------------------------

UNJUDGED = (("1", "u1"), ("2", "u2"), ("3", "u3"), ("4", "u4"))


def hand_made(folder: Path) -> tuple[dict, dict, dict]:
    """Six topics, a candidate and a reference ranking five documents each, four unjudged documents among them: u1 and
    u4 in the candidate's top 5, u2 in the reference's, u3 in both (one document, one grade)."""
    rng = np.random.default_rng(3)
    qrels, candidate, reference = {}, {}, {}
    for topic in map(str, range(1, 7)):
        docs = [f"d{topic}_{i}" for i in range(8)]
        qrels[topic] = {doc: int(grade) for doc, grade in zip(docs, rng.integers(0, 3, size=8))}
        qrels[topic][docs[0]] = 2
        candidate[topic] = list(rng.permutation(docs)[:5])
        reference[topic] = list(rng.permutation(docs)[:5])
    candidate["1"][1], reference["2"][0], candidate["3"][2], reference["3"][4], candidate["4"][0] = (
        "u1",
        "u2",
        "u3",
        "u3",
        "u4",
    )
    for name, run in (("cand", candidate), ("ref", reference)):
        (folder / f"{name}.run").write_text(
            "".join(
                f"{topic} Q0 {doc} {rank} {10 - rank} {name}\n"
                for topic, docs in run.items()
                for rank, doc in enumerate(docs, 1)
            )
        )
    return qrels, candidate, reference


def write_qrels(path: Path, qrels: dict, graded: dict) -> Path:
    lines = [f"{topic} 0 {doc} {grade}\n" for topic, grades in qrels.items() for doc, grade in grades.items()]
    path.write_text("".join(lines + [f"{topic} 0 {doc} {grade}\n" for (topic, doc), grade in graded.items()]))
    return path


def hand_made_spec(folder: Path, qrels: str, judgments: str = "") -> Path:
    spec = folder / f"bvtest-{Path(qrels).stem}.yaml"
    spec.write_text(
        f"qrels: {qrels}\nmeasures: [nDCG@5]\nbaselines:\n  ref: ref.run\ncandidate: {{run: cand.run, name: cand}}\n"
        f"reference: ref\ncache: false\nanalysis: {{power: false}}\n{judgments}"
        "gates:\n  - {statistic: mean, max_decrease: 0.0, false_alarm: 0.05}\n"
    )
    return spec


def test_p_is_the_share_of_gradings_ci_passes_and_agrees_with_every_grading_enumerated(tmp_path):
    qrels, candidate, reference = hand_made(tmp_path)
    write_qrels(tmp_path / "partial.qrels", qrels, {})

    # the oracle: CI on the qrels completed by each of the 3**4 gradings
    passes = {}
    for grades in itertools.product(range(3), repeat=4):
        completed = write_qrels(tmp_path / "completed.qrels", qrels, dict(zip(UNJUDGED, grades)))
        judged = evaluate_spec(load_spec(hand_made_spec(tmp_path, completed.name))).gates[0]
        assert judged.corners is None  # every document of both top 5 is judged now
        passes[grades] = judged.passed_as_judged

    # the prior, from its definition: the judged grades of both top 5 per topic, shrunk with 10 pseudo-documents,
    # discounted by 0.5, and by 0.4 more where the other run does not retrieve the document (rank support): u1, u2
    # and u4 are in one top 5 only, u3 in both
    counts = np.zeros((6, 3))
    for run in (candidate, reference):
        for t, topic in enumerate(map(str, range(1, 7))):
            for doc in run[topic]:
                if doc in qrels[topic]:
                    counts[t, qrels[topic][doc]] += 1
    shares = grade_shares(counts)[[int(topic) - 1 for topic, _ in UNJUDGED]]
    discount = 0.5 * np.array([0.4, 0.4, 1.0, 0.4])
    prior = shares * discount[:, np.newaxis]
    prior[:, 0] = 1 - prior[:, 1:].sum(axis=1)
    exact = sum(
        np.prod([prior[k, grade] for k, grade in enumerate(grades)]) * passed for grades, passed in passes.items()
    )
    assert 0.6 < exact < 0.95  # a gate the gradings do not decide either way for certain

    # a confidence just above P keeps the draws going: P is not settled on either side for a while
    confidence = round(float(exact), 2) + 0.01
    judgments = f"judgments: {{discount: 0.5, discount_sd: 0, draws: 20000, seed: 3, confidence: {confidence}}}\n"
    verdict = evaluate_spec(load_spec(hand_made_spec(tmp_path, "partial.qrels", judgments))).gates[0]
    assert verdict.corners.optimistic.passed != verdict.corners.pessimistic.passed
    plausible = verdict.plausible
    assert plausible is not None and plausible.draws >= 1000 and plausible.documents == 4
    assert plausible.swaps == 2**6  # six topics: every swap of each grading's null enumerated

    # draw for draw: the gradings drawn (seed 3) judged by CI pass exactly as often as the pipeline says
    drawn = draw_grades(shares, np.tile(discount, (plausible.draws, 1)), seed=3)
    assert plausible.passing == sum(passes[tuple(row)] for row in drawn.tolist())
    # and P agrees with the enumeration within its Monte-Carlo error
    error = np.sqrt(exact * (1 - exact) / plausible.draws)
    assert abs(plausible.probability - exact) <= 4 * error


def test_a_gate_whose_corners_agree_draws_nothing(tmp_path, monkeypatch):
    from pytest_bvtest.judging import plausible as plausible_module

    qrels, _, _ = hand_made(tmp_path)
    write_qrels(tmp_path / "partial.qrels", qrels, {})
    spec = tmp_path / "bvtest-plain.yaml"
    spec.write_text(
        "qrels: partial.qrels\nmeasures: [nDCG@5]\nbaselines:\n  ref: ref.run\ncandidate: {run: cand.run, name: cand}\n"
        "reference: ref\ncache: false\nanalysis: {power: false}\ngates:\n  - {statistic: mean, min: 0.01}\n"
    )
    monkeypatch.setattr(plausible_module, "draw_grades", None)  # never reached
    verdict = evaluate_spec(load_spec(spec)).gates[0]
    assert verdict.corners is not None and verdict.plausible is None and verdict.outcome == "OK"


# --- clearly worse candidates are red -------------------------------------------------------------------------------


def harmed_run(source: Path, target: Path, harm: str, seed: int = 7) -> Path:
    """``shuffle``: the top 100 shuffled on half the topics; ``random``: documents drawn at random from every
    document the run retrieves, on every topic."""
    run = read_run(source)
    rng = np.random.default_rng(seed)
    topics = sorted(run.scores)
    half = set(rng.choice(topics, size=len(topics) // 2, replace=False).tolist())
    pool = sorted({doc for scores in run.scores.values() for doc in scores})
    lines = []
    for topic in topics:
        ranked = [doc for doc, _ in sorted(run.scores[topic].items(), key=lambda item: (-item[1], item[0]))]
        if harm == "shuffle" and topic in half:
            ranked[:100] = [ranked[:100][i] for i in rng.permutation(len(ranked[:100]))]
        elif harm == "random":
            ranked = list(rng.choice(pool, size=min(100, len(pool)), replace=False))
        lines += [f"{topic} Q0 {doc} {rank} {1000 - rank} {harm}\n" for rank, doc in enumerate(ranked, 1)]
    target.write_text("".join(lines))
    return target


def check(spec: Path, run: Path, folder: Path) -> tuple[int, dict]:
    """``bvtest check`` as CI runs it: its exit code and JSON report."""
    report = folder / "report.json"
    with contextlib.redirect_stdout(io.StringIO()):
        code = bvtest(["check", str(spec), "--run", str(run), "--json", str(report), "--no-cache"])
    return code, json.loads(report.read_text())


@pytest.mark.parametrize("harm", ["shuffle", "random"])
def test_the_example_projects_clearly_worse_candidates_are_red(tmp_path, harm, monkeypatch):
    monkeypatch.chdir(EXAMPLE)
    run = harmed_run(EXAMPLE / "runs" / "production.run", tmp_path / f"{harm}.run", harm)
    code, document = check(EXAMPLE / "bvtest.yaml", run, tmp_path)
    assert code == 1
    gates = {
        gate["id"].split("::", 1)[1]: gate for evaluation in document["evaluations"] for gate in evaluation["gates"]
    }
    assert gates["nDCG@10::mean"]["outcome"] == "FAIL" and gates["AP::mean"]["outcome"] == "FAIL"
    assert not any(gate["outcome"] == "UNDECIDED" for gate in gates.values())
    if harm == "shuffle":  # 182 unjudged documents moved into the top 10: weighed, the gate fails in every grading
        plausible = gates["nDCG@10::mean"]["judgments"]["plausible"]
        assert plausible["decided"] == "fail" and plausible["passing"] == 0
        assert "fails in 100% of" in gates["nDCG@10::mean"]["headline"]


def test_a_shuffled_dl19_run_is_red_with_pooled_qrels(tmp_path):
    from test_judgments import DL19_RUNS, dl19_spec, pooled_qrels

    runs = shared_path("dl19_passage_qppeval_runs", "runs")
    qrels = pooled_qrels(
        shared_path("anserini_tools_qrels_topics", "qrels", "qrels.dl19-passage.txt"),
        [runs / DL19_RUNS[name] for name in ("monot5", "drmm")],
        10,
        tmp_path / "pooled.qrels",
    )
    spec = dl19_spec(tmp_path, qrels)
    run = harmed_run(runs / DL19_RUNS["monobert"], tmp_path / "shuffled.run", "shuffle")
    code, document = check(spec, run, tmp_path)
    assert code == 1
    outcomes = {gate["statistic"]: gate["outcome"] for gate in document["evaluations"][0]["gates"]}
    assert outcomes["mean"] == outcomes["trisk"] == "FAIL"


def test_a_shuffled_trec_covid_run_is_red_with_the_qrels_of_rounds_1_to_4(tmp_path):
    runs = shared_path("trec_covid_ohsu_runs", "runs", "Round4_Runs_LessRM3")
    merged = {}
    for round_ in range(1, 5):
        path = shared_path("anserini_tools_qrels_topics", "qrels", f"qrels.covid-round{round_}.txt")
        for topic, grades in read_qrels(path).judgments.items():
            merged.setdefault(topic, {}).update(grades)
    qrels = tmp_path / "rounds1-4.qrels"
    qrels.write_text("".join(f"{t} 0 {d} {g}\n" for t, grades in merged.items() for d, g in grades.items()))
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        f"qrels: {qrels}\nmeasures: [nDCG@10]\nbaselines:\n  production: {runs / 'R4_total_fusion.txt.gz'}\n"
        f"  FullOHSU: {runs / 'FullOHSU.txt.gz'}\nreference: production\ncache: false\n"
        "analysis: {risk_alpha: 1, power: false}\ngates:\n  - {statistic: trisk, false_alarm: 0.05}\n"
        "  - {statistic: mean, max_decrease: 0.01, false_alarm: 0.05}\n"
    )
    run = harmed_run(runs / "R4_total_fusion.txt.gz", tmp_path / "shuffled.run", "shuffle")
    code, document = check(spec, run, tmp_path)
    assert code == 1
    assert {gate["outcome"] for gate in document["evaluations"][0]["gates"]} == {"FAIL"}


# --- what the qrels cannot say --------------------------------------------------------------------------------------


def test_positive_only_qrels_count_unjudged_documents_non_relevant_and_say_so_once(tmp_path):
    qrels, _, _ = hand_made(tmp_path)
    relevant = {topic: {doc: grade for doc, grade in grades.items() if grade > 0} for topic, grades in qrels.items()}
    write_qrels(tmp_path / "sparse.qrels", relevant, {})
    spec = hand_made_spec(tmp_path, "sparse.qrels")
    evaluation = evaluate_spec(load_spec(spec))
    verdict = evaluation.gates[0]
    assert verdict.corners is None and verdict.plausible is None  # MS MARCO's convention: no corners, no draws
    guards = [guard.kind for guard in evaluation.measure().guards]
    assert guards.count("unjudged_nonrelevant") == 1
    from pytest_bvtest.report.outputs import evaluation_document

    markdown_notes = [guard["message"] for guard in evaluation_document(evaluation)["evaluations"][0]["guards"]]
    assert any("judge only relevant documents" in note for note in markdown_notes)
    # the spec may weigh them anyway
    weighed = hand_made_spec(tmp_path, "sparse.qrels", "judgments: {unjudged: plausible}\n")
    assert evaluate_spec(load_spec(weighed)).gates[0].corners is not None


def test_a_candidate_with_nothing_judged_fails(tmp_path):
    qrels, _, _ = hand_made(tmp_path)
    write_qrels(tmp_path / "partial.qrels", qrels, {})
    (tmp_path / "cand.run").write_text(
        "".join(f"{topic} Q0 other{topic}_{rank} {rank} {10 - rank} x\n" for topic in "123456" for rank in range(1, 6))
    )
    evaluation = evaluate_spec(load_spec(hand_made_spec(tmp_path, "partial.qrels")))
    verdict = evaluation.gates[0]
    assert verdict.outcome == "FAIL" and not verdict.passed
    assert [guard.kind for guard in verdict.guards if guard.fails] == ["nothing_judged"]
    from pytest_bvtest.report.outputs import evaluation_document

    gate = evaluation_document(evaluation)["evaluations"][0]["gates"][0]
    assert gate["sentence"].startswith("Fails whatever its numbers say")
    assert "the qrels judge none of the documents of" in gate["sentence"]


@pytest.mark.parametrize("seed", range(8))
def test_every_topics_distinct_gradings_found_in_one_sort_are_numpys_per_topic(seed):
    # the draws' distinct gradings of each topic's documents, found for all topics at once as integers, equal
    # numpy.unique(..., axis=0) topic by topic: the same rows in the same order, each draw's among them
    from pytest_bvtest.scoring.lifts import _encoded_gradings

    rng = np.random.default_rng(seed)
    top = int(rng.integers(1, 4))
    grades = (rng.random((int(rng.integers(1, 300)), 60)) < 0.3) * rng.integers(1, top + 1, size=(1, 60))
    grades = grades.astype(np.int8)
    columns = rng.permutation(60)
    sizes = rng.integers(1, 9, size=12)
    listed = [np.sort(part) for part in np.split(columns[: int(sizes.sum()) % 60 or 1], np.cumsum(sizes)[:-1])]
    listed = [members for members in listed if members.size]
    encoded = _encoded_gradings(grades, listed)
    assert encoded is not None
    for position, members in enumerate(listed):
        distinct, inverse = np.unique(grades[:, members], axis=0, return_inverse=True)
        found, each = encoded(position)
        assert found.dtype == distinct.dtype and np.array_equal(found, distinct)
        assert np.array_equal(each, inverse.reshape(-1))
    assert _encoded_gradings(grades, [np.arange(60)] * 4) is None  # four topics of 60 documents: past 62 bits


def test_a_check_whose_inputs_are_unchanged_reads_its_plausible_verdicts_from_the_cache(tmp_path, monkeypatch):
    from pytest_bvtest.judging import pipeline

    qrels, _, _ = hand_made(tmp_path)
    write_qrels(tmp_path / "partial.qrels", qrels, {})
    spec = hand_made_spec(tmp_path, "partial.qrels", "judgments: {draws: 300, seed: 5}\n")
    spec.write_text(spec.read_text().replace("cache: false\n", ""))
    fresh = evaluate_spec(load_spec(spec))
    drawn = fresh.gates[0]
    assert drawn.plausible is not None and drawn.plausible.draws > 0
    # unchanged inputs: the verdict and its gradings read back, number for number, without drawing a grading
    monkeypatch.setattr(pipeline, "plausible_verdicts", None)
    cached = evaluate_spec(load_spec(spec))
    assert cached.gates[0].plausible == drawn.plausible and cached.gates[0].outcome == drawn.outcome
    assert cached.gradings is not None and cached.gradings.pairs == fresh.gradings.pairs == UNJUDGED
    assert np.array_equal(cached.gradings.relevance, fresh.gradings.relevance)
    assert np.array_equal(cached.gradings.grade_spread, fresh.gradings.grade_spread)
    assert (cached.gradings.top_grade, cached.gradings.discount) == (fresh.gradings.top_grade, fresh.gradings.discount)
    # a candidate run that changes (a document added below its top 5, its scores unchanged), another seed, other
    # qrels: each is weighed again
    for change in (
        lambda: (tmp_path / "cand.run").write_text((tmp_path / "cand.run").read_text() + "6 Q0 extra 9 0.5 cand\n"),
        lambda: spec.write_text(spec.read_text().replace("seed: 5", "seed: 6")),
        lambda: write_qrels(tmp_path / "partial.qrels", qrels, {("5", "new"): 1}),
    ):
        change()
        with pytest.raises(TypeError):  # plausible_verdicts is None: it was called
            evaluate_spec(load_spec(spec))


def test_plausible_gradings_read_back_exactly_and_a_damaged_entry_is_weighed_again():
    from pytest_bvtest.judging.plausible import PlausibleGradings, plausible_from_payload, plausible_payload

    for gradings in (
        PlausibleGradings((("1", "a"), ("2", "b")), np.array([0.1, 1 / 3]), np.array([0.2, np.pi]), 2, 0.5),
        PlausibleGradings((), np.zeros(0), np.zeros(0), 1, 0.45),
    ):
        payload = json.loads(json.dumps(plausible_payload([[None]], gradings)))
        found, back = plausible_from_payload(payload, [1])
        assert found == [[None]] and back.pairs == gradings.pairs
        assert np.array_equal(back.relevance, gradings.relevance)
        assert np.array_equal(back.grade_spread, gradings.grade_spread)
        assert (back.top_grade, back.discount) == (gradings.top_grade, gradings.discount)
    for damage in (
        lambda held: held.update(relevance="not base64!"),
        lambda held: held.update(docnos="a\nb"),  # more documents than topics
        lambda held: held.update(grade_spread=held["relevance"] + "AAAAAAAAAAA="),  # one value too many
        lambda held: held.pop("topics"),
    ):
        damaged = json.loads(
            json.dumps(
                plausible_payload([[None]], PlausibleGradings((("1", "a"),), np.array([0.5]), np.array([0.25]), 1, 0.5))
            )
        )
        damage(damaged["gradings"])
        assert plausible_from_payload(damaged, [1]) is None
