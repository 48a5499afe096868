"""The documents to judge (docs/mathematics.md §10, judging leverage): the unjudged documents of the candidate's and
its references' top d, each with how far it alone moves every gate that has corners.

The judging leverage of an unjudged (topic, document) pair on a gate is how far the gated statistic moves when
that document alone goes from non-relevant to g+ in the runs that hold it in their top d (the candidate, the gate's
reference, or both: one document, one grade), every other document as judged. It is measured on what the gate's
limit reads: the candidate's value minus the reference's for a limit relative to the reference, the candidate's
value otherwise. Across gates, whose statistics have different scales, a document is ranked by its largest
*share*: its move over the gate's span between its two corners (what all the gate's unjudged documents together
could move it), among the undecided gates first (those the judgments settle), then among the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pytest_bvtest.errors import InputError
from pytest_bvtest.judging.decision import Verdict
from pytest_bvtest.judging.evaluation import Evaluation, MeasureEvaluation
from pytest_bvtest.judging.judgments import UnjudgedDocuments
from pytest_bvtest.spec.model import AnalysisSettings, RepeatedRuns, ScoreTableFile, SingleSource, Source, Spec
from pytest_bvtest.stats.registry import STATISTICS

#: A move smaller than this is floating-point noise: the document cannot move the gate.
NEGLIGIBLE = 1e-12
#: How many copies of a score matrix one batch of the leverage computation holds.
_BATCH_CELLS = 2_000_000


@dataclass(frozen=True)
class GateMove:
    """How far one document alone moves one gate: ``change`` on what the limit reads (candidate minus reference,
    or the candidate's value), and ``share``, that change over the gate's span between its two corners;
    ``undecided`` when the gate is (the judgments settle it)."""

    gate: str
    change: float
    share: float
    undecided: bool


@dataclass(frozen=True)
class DocumentToJudge:
    """An unjudged document of the candidate's or a reference's top d: its topic, its query, its rank in each of
    those runs (``None`` where the run does not retrieve it) and the gates it moves, most first."""

    topic: str
    docno: str
    query: str | None
    ranks: Mapping[str, int | None]
    moves: tuple[GateMove, ...]

    @property
    def leverage(self) -> float:
        """The document's largest share of a gate's span: how much of the way between a gate's corners it alone
        covers (0 when it moves no gate)."""
        return max((move.share for move in self.moves), default=0.0)

    @property
    def settling(self) -> float:
        """The document's largest share of an undecided gate's span (0 when it moves none)."""
        return max((move.share for move in self.moves if move.undecided), default=0.0)


def require_gates_to_judge(spec: Spec) -> None:
    """Refuse a judge file for a spec without a candidate or gates: nothing decides what to judge (it was written
    empty, "0 of 0 gates undecided")."""
    if spec.candidate is None or not spec.gates:
        raise InputError(
            "judge needs a candidate and gates: the documents to judge are the unjudged ones that decide a gate",
            path=spec.path,
            hint="add `candidate:` (or pass --run) and at least one gate",
        )
    if all(isinstance(run, ScoreTableFile) for source in spec.sources() for run in _runs(source)):
        raise InputError(
            "every system of this spec is a per-topic table: there are no rankings, so no unjudged documents to judge",
            path=spec.path,
            hint="give the candidate and its reference as run files (`candidate: run.txt`) to list the documents "
            "that decide its gates",
        )


def _runs(source: Source) -> tuple[SingleSource, ...]:
    return source.runs if isinstance(source, RepeatedRuns) else (source,)


def _short_id(verdict: Verdict) -> str:
    return verdict.id.split("::", 1)[-1]


def _gate_topics(measure: MeasureEvaluation, verdict: Verdict) -> list[str]:
    """The topics the gate judges: every evaluated topic, or its segment's."""
    return list(verdict.inputs.topics or measure.topics)


def _gate_columns(measure: MeasureEvaluation, verdict: Verdict) -> list[int]:
    """The columns of the gate's topics in the measure's score matrix."""
    column = {topic: j for j, topic in enumerate(measure.topics)}
    return [column[topic] for topic in _gate_topics(measure, verdict)]


def _settings(measure: MeasureEvaluation, verdict: Verdict, topics: int) -> AnalysisSettings:
    """The measure's settings for a matrix of the gate's ``topics`` topics: a segment's topic weights are its own."""
    settings = measure.settings
    if settings.topic_weights is not None and len(settings.topic_weights) != topics:
        settings = replace(settings, topic_weights=np.asarray(settings.topic_weights)[_gate_columns(measure, verdict)])
    return settings


def _rows(measure: MeasureEvaluation, verdict: Verdict) -> tuple[int, int | None, bool]:
    """The candidate's row, the reference's (``None`` without one) and whether the limit reads the candidate's value
    minus the reference's (else the candidate's)."""
    reference = measure.matrix.index(verdict.gate.reference) if verdict.gate.reference is not None else None
    relative = verdict.reference_value is not None and reference is not None
    return measure.matrix.index(verdict.system), reference, relative


def _margins(measure: MeasureEvaluation, verdict: Verdict, scores: np.ndarray) -> np.ndarray:
    """What the gate's limit reads, for a stack of score matrices ``scores[k, i, j]`` over the gate's topics: the
    candidate's statistic minus the reference's where the limit is relative to it, else the candidate's."""
    statistic = STATISTICS[verdict.statistic]
    candidate, reference, relative = _rows(measure, verdict)
    settings = _settings(measure, verdict, scores.shape[-1])
    values = np.asarray(statistic.compute(scores, reference, settings), dtype=float)
    if values.shape != scores.shape[:2]:  # a statistic that does not broadcast over a stack: one matrix at a time
        values = np.stack([np.asarray(statistic.compute(matrix, reference, settings)) for matrix in scores])
    return values[:, candidate] - (values[:, reference] if relative else 0.0)


def _moves_by_sums(
    measure: MeasureEvaluation, verdict: Verdict, scores: np.ndarray, topics: np.ndarray, columns: np.ndarray
) -> np.ndarray | None:
    """Each move of what the gate's limit reads when column ``topics[k]`` of ``scores`` alone becomes
    ``columns[:, k]``, from the statistic's sums over topics (NaN where they cannot decide it); ``None`` for a
    statistic without a sum form, or under settings it does not cover."""
    form = STATISTICS[verdict.statistic].sums
    if form is None:
        return None
    candidate, reference, relative = _rows(measure, verdict)
    rows = [candidate, reference] if relative and reference is not None else [candidate]
    settings = _settings(measure, verdict, scores.shape[-1])
    moves = form.replaced_columns(scores, rows, reference, settings, topics, columns)
    if moves is None:
        return None
    return moves[:, 0] - (moves[:, 1] if len(rows) > 1 else 0.0)


def _recomputed_moves(
    measure: MeasureEvaluation, verdict: Verdict, scores: np.ndarray, topics: np.ndarray, columns: np.ndarray
) -> np.ndarray:
    """The same moves, the statistic computed again on copies of ``scores`` that differ in one column, in blocks."""
    today = _margins(measure, verdict, scores[np.newaxis])[0]
    batch = max(1, _BATCH_CELLS // scores.size)
    moves = [np.zeros(0)]
    for start in range(0, len(topics), batch):
        block = slice(start, start + batch)
        stack = np.repeat(scores[np.newaxis], len(topics[block]), axis=0)
        stack[np.arange(len(topics[block])), :, topics[block]] = columns[:, block].T
        moves.append(_margins(measure, verdict, stack) - today)
    return np.concatenate(moves)


def _gate_moves(
    measure: MeasureEvaluation,
    verdict: Verdict,
    documents: UnjudgedDocuments,
    pairs: Sequence[tuple[str, str]],
) -> np.ndarray:
    """Each pair's move of the gate (on what its limit reads) when that document alone is graded g+ in the runs that
    hold it in their top d: its topic's column of the score matrix changes, and nothing else. From the statistic's
    sums over topics where it has them, else (or where they cannot decide) recomputed."""
    judged = _gate_topics(measure, verdict)
    position = {topic: j for j, topic in enumerate(judged)}
    scores = measure.matrix.scores[:, _gate_columns(measure, verdict)]
    topics = np.array([position[topic] for topic, _ in pairs], dtype=np.int64)
    columns = scores[:, topics]  # each pair's column, then with the document graded g+
    for system in _systems(verdict):
        row, single = measure.matrix.index(system), documents.lifts[measure.measure, system].single
        for k, pair in enumerate(pairs):
            if pair in single:
                columns[row, k] = single[pair]
    moves = _moves_by_sums(measure, verdict, scores, topics, columns)
    if moves is None:
        return _recomputed_moves(measure, verdict, scores, topics, columns)
    undecided = np.isnan(moves)
    if undecided.any():
        moves[undecided] = _recomputed_moves(measure, verdict, scores, topics[undecided], columns[:, undecided])
    return moves


def _systems(verdict: Verdict) -> list[str]:
    reference = verdict.gate.reference
    return [verdict.system] + ([reference] if reference is not None else [])


def _span(verdict: Verdict) -> float:
    """How far the gate's unjudged documents together move what its limit reads: between its two corners."""
    corners = verdict.corners
    assert corners is not None

    def margin(value: float, reference_value: float | None) -> float:
        return value - (reference_value if verdict.reference_value is not None and reference_value is not None else 0)

    optimistic, pessimistic = corners.optimistic, corners.pessimistic
    return abs(
        margin(optimistic.value, optimistic.reference_value) - margin(pessimistic.value, pessimistic.reference_value)
    )


def documents_to_judge(evaluation: Evaluation) -> list[DocumentToJudge]:
    """Every unjudged document of the top d of the candidate and of the references of the gates that have corners,
    with its rank in each of those runs and the gates it moves, by decreasing leverage on the undecided gates, then
    on every gate (ties by topic and docno)."""
    documents = evaluation.unjudged
    if documents is None:
        return []
    rankers = {system: lifts.rank for (_, system), lifts in documents.lifts.items()}
    moves: dict[tuple[str, str], list[GateMove]] = {}
    for measure in evaluation.measures:
        for verdict in measure.gates:
            if verdict.corners is None:
                continue
            judged = set(_gate_topics(measure, verdict))
            pairs = sorted(
                {
                    (topic, docno)
                    for system in _systems(verdict)
                    for topic, docnos in documents.lifts[measure.measure, system].documents.items()
                    if topic in judged
                    for docno in docnos
                }
            )
            gate, span = _short_id(verdict), _span(verdict)
            for pair, change in zip(pairs, _gate_moves(measure, verdict, documents, pairs).tolist()):
                moves.setdefault(pair, [])
                if abs(change) > NEGLIGIBLE:
                    share = abs(change) / span if span > NEGLIGIBLE else 1.0
                    moves[pair].append(GateMove(gate, change, share, verdict.undecided))
    listed = [
        DocumentToJudge(
            topic,
            docno,
            evaluation.texts.get(topic),
            {system: rank(topic, docno) for system, rank in rankers.items()},
            tuple(sorted(gate_moves, key=lambda move: (not move.undecided, -move.share))),
        )
        for (topic, docno), gate_moves in moves.items()
    ]
    return sorted(listed, key=lambda document: (-document.settling, -document.leverage, document.topic, document.docno))
