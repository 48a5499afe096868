"""The judging leverage of the documents to judge (docs/mathematics.md §10) against its definition, recomputed.

:func:`~pytest_bvtest.judging.documents.documents_to_judge` moves each gate by one changed column at a time, from the
statistic's sums over topics where it has them (pytest_bvtest/stats/sums.py). The oracle here is the definition
done the straightforward way: for each document, the whole score matrix copied with that document alone graded g+
in the runs that hold it in their top d, and the gate's statistic computed again. The documents, their order, their
gates and the judge file must come out the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_judgments import dl19_pooled  # noqa: F401 (the real case's fixture)

from pytest_bvtest.judging import documents as documents_module
from pytest_bvtest.judging.documents import documents_to_judge
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.report.judgefile import judge_file_text
from pytest_bvtest.spec.reader import load_spec
from pytest_bvtest.stats.registry import STATISTICS


def leverage_by_recomputation(documents):
    """``gate_moves`` done by definition: of the lifted columns it reads their pairs only."""
    return lambda matrix, settings, inputs, lifted: moves_recomputed(matrix, settings, inputs, documents, lifted.pairs)


def moves_recomputed(matrix, settings, inputs, documents, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    """Each pair's move of what the gate's limit reads, the score matrix copied and the statistic computed again."""
    statistic = STATISTICS[inputs.statistic]
    topics = list(inputs.topics or matrix.topics)
    scores = matrix.scores[:, [matrix.topics.index(topic) for topic in topics]]
    candidate = matrix.index(inputs.system)
    reference = matrix.index(inputs.gate.reference) if inputs.gate.reference is not None else None
    relative = inputs.reference_value is not None and reference is not None
    if settings.topic_weights is not None:
        weights = dict(zip(matrix.topics, settings.topic_weights))
        settings = replace(settings, topic_weights=np.array([weights[topic] for topic in topics]))

    def margin(matrix: np.ndarray) -> float:
        values = statistic.compute(matrix, reference, settings)
        return values[candidate] - (values[reference] if relative else 0.0)

    today = margin(scores)
    systems = [inputs.system] + ([inputs.gate.reference] if inputs.gate.reference is not None else [])
    moves = []
    for topic, docno in pairs:
        graded = scores.copy()
        for system in systems:
            single = documents.lifts[matrix.measure, system].single
            if (topic, docno) in single:
                graded[matrix.index(system), topics.index(topic)] = single[topic, docno]
        moves.append(margin(graded) - today)
    return np.array(moves)


def in_order(items: Sequence, key, named) -> list[set]:
    """``items`` as consecutive runs whose ``key`` values agree to 1e-12, each run the set of their names: two values
    equal up to rounding may come in either order (each path rounds its own way), any others in the same."""
    runs: list[set] = []
    for before, item in zip([None, *items], items):
        if before is None or any(abs(a - b) > 1e-12 for a, b in zip(key(before), key(item))):
            runs.append(set())
        runs[-1].add(named(item))
    return runs


def assert_same_documents(evaluation, monkeypatch: pytest.MonkeyPatch) -> list:
    """The documents to judge equal those of the recomputation: the same rows in the same order, ranks and gates,
    every move and share to 1e-12 (the order of those equal to 1e-12 aside)."""
    fast = documents_to_judge(evaluation)
    with monkeypatch.context() as patched:
        patched.setattr(documents_module, "gate_moves", leverage_by_recomputation(evaluation.unjudged))
        slow = documents_to_judge(evaluation)
    leverage = lambda document: (document.settling, document.leverage)  # noqa: E731
    named = lambda document: (document.topic, document.docno)  # noqa: E731
    assert in_order(fast, leverage, named) == in_order(slow, leverage, named)
    recomputed = {named(document): document for document in slow}
    for document in fast:
        theirs = recomputed[named(document)]
        assert document.ranks == theirs.ranks
        share = lambda move: (move.undecided, move.share)  # noqa: E731
        gate = lambda move: move.gate  # noqa: E731
        assert in_order(document.moves, share, gate) == in_order(theirs.moves, share, gate)
        moves = {move.gate: move for move in theirs.moves}
        for move in document.moves:
            assert move.undecided == moves[move.gate].undecided
            assert move.change == pytest.approx(moves[move.gate].change, abs=1e-12)
            assert move.share == pytest.approx(moves[move.gate].share, abs=1e-12)
    return fast


def test_the_dl19_documents_to_judge_are_the_gates_recomputed_document_by_document(dl19_pooled, monkeypatch):  # noqa: F811
    _, evaluation = dl19_pooled
    listed = assert_same_documents(evaluation, monkeypatch)
    with monkeypatch.context() as patched:
        patched.setattr(documents_module, "gate_moves", leverage_by_recomputation(evaluation.unjudged))
        recomputed = judge_file_text(evaluation, documents_to_judge(evaluation))
    assert judge_file_text(evaluation, listed) == recomputed
    assert len(listed) == 84 and {move.gate for document in listed for move in document.moves} == {
        "nDCG@10::trisk",
        "nDCG@10::var",
        "nDCG@10::bias2_plus_var",
        "nDCG@10::mean",
    }


# every statistic a gate can bound from the scores, plain bounds (no nulls to draw); the weighted ones per segment
EVERY_STATISTIC = """
gates:
  - {statistic: mean, max_decrease: 0.01}
  - {statistic: weighted_mean, max_decrease: 0.01, per_segment: true}
  - {statistic: bias2, max_increase: 10%}
  - {statistic: var, max: 0.05}
  - {statistic: bias2_plus_var, max_increase: 10%}
  - {statistic: gap_bias, max: 0.3}
  - {statistic: gap_var, max_increase: 10%}
  - {statistic: gap_mse, max: 0.2}
  - {statistic: urisk, min: -0.02}
  - {statistic: trisk, min: -2}
  - {statistic: robustness_index, min: 0}
  - {statistic: hurt_topics, max: 3}
  - {statistic: r_loss, max: 0.02}
  - {statistic: zrisk, max_decrease: 0.5}
  - {statistic: georisk, max_decrease: 0.005}
  - {statistic: mve, max_decrease: 0.01, per_segment: true}
  - {statistic: gawm, max_decrease: 0.01}
"""


def small_collection(folder: Path, analysis: str) -> Path:
    """Seeded: 12 topics (head and tail, with traffic weights), four runs of 12 documents from a pool of 20 per
    topic, qrels grading 5 of each pool 0 to 3, so that each run's top 10 holds several unjudged documents."""
    rng = np.random.default_rng(7)
    topics, qrels = ["topic\tquery\tsegment\tweight"], []
    runs: dict[str, list[str]] = {name: [] for name in ("new", "prod", "other", "third")}
    for topic in range(1, 13):
        topics.append(f"{topic}\tquery {topic}\t{'head' if topic % 3 else 'tail'}\t{rng.integers(1, 50)}")
        judged = rng.choice(20, size=5, replace=False)
        qrels += [f"{topic} 0 d{topic}-{at} {rng.integers(0, 4)}\n" for at in judged]
        for name, lines in runs.items():
            ranked = rng.choice(20, size=12, replace=False)
            lines += [f"{topic} Q0 d{topic}-{at} {rank + 1} {30 - rank} {name}\n" for rank, at in enumerate(ranked)]
    (folder / "topics.tsv").write_text("\n".join(topics) + "\n")
    (folder / "qrels.txt").write_text("".join(qrels))
    for name, lines in runs.items():
        (folder / f"{name}.run").write_text("".join(lines))
    spec = folder / "bvtest.yaml"
    spec.write_text(
        "qrels: qrels.txt\ntopics: topics.tsv\nmeasures: [nDCG@10]\n"
        "baselines: {prod: prod.run, other: other.run, third: third.run}\n"
        f"candidate: {{run: new.run, name: new}}\nreference: prod\ncache: false\nanalysis: {analysis}\n"
        + EVERY_STATISTIC
    )
    return spec


QUICK = "power: false, calibration: {swaps: 200}, bootstrap: {resamples: 50}"


@pytest.mark.parametrize(
    "analysis",
    [
        f"{{{QUICK}}}",
        f"{{{QUICK}, normalize: max-min, variance: sample, target: 0.9, risk_alpha: 2, zrisk_against: target}}",
        f"{{{QUICK}, normalize: target-ratio, grouping: {{by: difficulty, size: 4}}}}",
    ],
    ids=["defaults", "max-min sample", "grouped"],
)
def test_every_statistics_documents_to_judge_are_its_gates_recomputed_document_by_document(
    tmp_path, monkeypatch, analysis
):
    """The sum forms (several documents per topic, a segment's own weights, the settings they cover or not) and the
    statistics without one (weighted mean, ZRisk, GeoRisk, GAWM) give the recomputation's documents and moves."""
    evaluation = evaluate_spec(load_spec(small_collection(tmp_path, analysis)), use_cache=False)
    cornered = {verdict.gate.statistic for verdict in evaluation.gates if verdict.corners is not None}
    assert cornered == {line.split(",")[0].split()[-1] for line in EVERY_STATISTIC.splitlines()[2:]}
    listed = assert_same_documents(evaluation, monkeypatch)
    assert len(listed) > 100 and all(document.moves for document in listed)
