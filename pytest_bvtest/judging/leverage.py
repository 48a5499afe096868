"""Judging leverage (docs/mathematics.md §10): how far one unjudged document alone moves a gate.

The judging leverage of an unjudged (topic, document) pair on a gate is how far the gated statistic moves when that
document alone goes from non-relevant to g+ in the runs that hold it in their top d (the candidate, the gate's
reference, or both: one document, one grade), every other document as judged. It is measured on what the gate's limit
reads: the candidate's value minus the reference's for a limit relative to the reference, the candidate's value
otherwise. The documents to judge (:mod:`.documents`) are listed by it, and the plausible verdicts
(:mod:`.plausible`) read it as each document's effect on a gate.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pytest_bvtest.judging.gate_inputs import GateInputs
from pytest_bvtest.judging.judgments import UnjudgedDocuments
from pytest_bvtest.scoring.matrix import ScoreMatrix
from pytest_bvtest.spec.model import AnalysisSettings
from pytest_bvtest.stats.registry import STATISTICS

#: How many copies of a score matrix one batch of the recomputed moves holds.
_BATCH_CELLS = 2_000_000


def gate_topics(matrix: ScoreMatrix, inputs: GateInputs) -> list[str]:
    """The topics the gate judges: every evaluated topic, or its segment's."""
    return list(inputs.topics or matrix.topics)


def gate_systems(inputs: GateInputs) -> list[str]:
    """The runs whose unjudged documents move the gate: the candidate, and its reference where it has one."""
    reference = inputs.gate.reference
    return [inputs.system] + ([reference] if reference is not None else [])


def _gate_columns(matrix: ScoreMatrix, inputs: GateInputs) -> list[int]:
    """The columns of the gate's topics in the measure's score matrix."""
    column = {topic: j for j, topic in enumerate(matrix.topics)}
    return [column[topic] for topic in gate_topics(matrix, inputs)]


def _settings(matrix: ScoreMatrix, settings: AnalysisSettings, inputs: GateInputs, topics: int) -> AnalysisSettings:
    """The measure's settings for a matrix of the gate's ``topics`` topics: a segment's topic weights are its own."""
    if settings.topic_weights is not None and len(settings.topic_weights) != topics:
        settings = replace(settings, topic_weights=np.asarray(settings.topic_weights)[_gate_columns(matrix, inputs)])
    return settings


def _rows(matrix: ScoreMatrix, inputs: GateInputs) -> tuple[int, int | None, bool]:
    """The candidate's row, the reference's (``None`` without one) and whether the limit reads the candidate's value
    minus the reference's (else the candidate's)."""
    reference = matrix.index(inputs.gate.reference) if inputs.gate.reference is not None else None
    relative = inputs.reference_value is not None and reference is not None
    return matrix.index(inputs.system), reference, relative


def _margins(matrix: ScoreMatrix, settings: AnalysisSettings, inputs: GateInputs, scores: np.ndarray) -> np.ndarray:
    """What the gate's limit reads, for a stack of score matrices ``scores[k, i, j]`` over the gate's topics: the
    candidate's statistic minus the reference's where the limit is relative to it, else the candidate's."""
    statistic = STATISTICS[inputs.statistic]
    candidate, reference, relative = _rows(matrix, inputs)
    settings = _settings(matrix, settings, inputs, scores.shape[-1])
    values = np.asarray(statistic.compute(scores, reference, settings), dtype=float)
    if values.shape != scores.shape[:2]:  # a statistic that does not broadcast over a stack: one matrix at a time
        values = np.stack([np.asarray(statistic.compute(each, reference, settings)) for each in scores])
    return values[:, candidate] - (values[:, reference] if relative else 0.0)


def _moves_by_sums(
    matrix: ScoreMatrix,
    settings: AnalysisSettings,
    inputs: GateInputs,
    scores: np.ndarray,
    topics: np.ndarray,
    columns: np.ndarray,
) -> np.ndarray | None:
    """Each move of what the gate's limit reads when column ``topics[k]`` of ``scores`` alone becomes
    ``columns[:, k]``, from the statistic's sums over topics (NaN where they cannot decide it); ``None`` for a
    statistic without a sum form, or under settings it does not cover."""
    form = STATISTICS[inputs.statistic].sums
    if form is None:
        return None
    candidate, reference, relative = _rows(matrix, inputs)
    rows = [candidate, reference] if relative and reference is not None else [candidate]
    settings = _settings(matrix, settings, inputs, scores.shape[-1])
    moves = form.replaced_columns(scores, rows, reference, settings, topics, columns)
    if moves is None:
        return None
    return moves[:, 0] - (moves[:, 1] if len(rows) > 1 else 0.0)


def _recomputed_moves(
    matrix: ScoreMatrix,
    settings: AnalysisSettings,
    inputs: GateInputs,
    scores: np.ndarray,
    topics: np.ndarray,
    columns: np.ndarray,
) -> np.ndarray:
    """The same moves, the statistic computed again on copies of ``scores`` that differ in one column, in blocks."""
    today = _margins(matrix, settings, inputs, scores[np.newaxis])[0]
    batch = max(1, _BATCH_CELLS // scores.size)
    moves = [np.zeros(0)]
    for start in range(0, len(topics), batch):
        block = slice(start, start + batch)
        stack = np.repeat(scores[np.newaxis], len(topics[block]), axis=0)
        stack[np.arange(len(topics[block])), :, topics[block]] = columns[:, block].T
        moves.append(_margins(matrix, settings, inputs, stack) - today)
    return np.concatenate(moves)


@dataclass(frozen=True, eq=False)  # arrays: compared by identity
class LiftedColumns:
    """A gate's unjudged documents, each as the column of its topic it would leave were it graded g+ alone.

    Gates of one measure with the same candidate, reference and topics share them (:func:`lifted_columns`)."""

    pairs: list[tuple[str, str]]
    scores: np.ndarray  # the measure's score matrix on the gate's topics
    topics: np.ndarray  # each pair's topic, a column of ``scores``
    columns: np.ndarray  # each pair's column of ``scores`` with the document graded g+ in the runs holding it


def lifted_columns(
    matrix: ScoreMatrix, inputs: GateInputs, documents: UnjudgedDocuments, pairs: Sequence[tuple[str, str]]
) -> LiftedColumns:
    """The columns ``pairs`` (the gate's, :func:`gate_pairs`) would leave: each one's topic's column of the measure's
    score matrix ``matrix`` with that document alone graded g+ in the runs that hold it in their top d."""
    judged = gate_topics(matrix, inputs)
    position = {topic: j for j, topic in enumerate(judged)}
    scores = matrix.scores[:, _gate_columns(matrix, inputs)]
    topics = np.fromiter((position[topic] for topic, _ in pairs), dtype=np.int64, count=len(pairs))
    columns = scores[:, topics]
    for system in gate_systems(inputs):
        row, single = matrix.index(system), documents.lifts[matrix.measure, system].single
        lifted = np.fromiter(map(single.get, pairs, itertools.repeat(np.nan)), dtype=float, count=len(pairs))
        columns[row] = np.where(np.isnan(lifted), columns[row], lifted)
    for shared in (scores, topics, columns):
        shared.setflags(write=False)  # read by every gate that shares them
    return LiftedColumns(list(pairs), scores, topics, columns)


def gate_moves(
    matrix: ScoreMatrix, settings: AnalysisSettings, inputs: GateInputs, lifted: LiftedColumns
) -> np.ndarray:
    """Each pair's move of the gate (on what its limit reads) when that document alone is graded g+ in the runs that
    hold it in their top d: its topic's column of the measure's score matrix ``matrix`` changes, and nothing else
    (``lifted``, :func:`lifted_columns`). From the statistic's sums over topics where it has them, else (or where
    they cannot decide) recomputed."""
    scores, topics, columns = lifted.scores, lifted.topics, lifted.columns
    moves = _moves_by_sums(matrix, settings, inputs, scores, topics, columns)
    if moves is None:
        return _recomputed_moves(matrix, settings, inputs, scores, topics, columns)
    undecided = np.isnan(moves)
    if undecided.any():
        moves[undecided] = _recomputed_moves(matrix, settings, inputs, scores, topics[undecided], columns[:, undecided])
    return moves


def gate_pairs(matrix: ScoreMatrix, inputs: GateInputs, documents: UnjudgedDocuments) -> list[tuple[str, str]]:
    """The unjudged documents of the candidate's and the reference's top d on the gate's topics, sorted, each once."""
    held = [documents.lifts[matrix.measure, system].documents for system in gate_systems(inputs)]
    return sorted_pairs(held, set(gate_topics(matrix, inputs)))


def sorted_pairs(
    held: Sequence[Mapping[str, Iterable[str]]], topics: Collection[str] | None = None
) -> list[tuple[str, str]]:
    """The ``(topic, docno)`` pairs of ``held`` (each topic's docnos), on ``topics`` when given, sorted, each once:
    sorted a topic at a time, in the order of one sort of them all, without comparing 140,000 tuples."""
    named = set().union(*held)
    pairs: list[tuple[str, str]] = []
    for topic in sorted(named if topics is None else named.intersection(topics)):
        docnos = set().union(*(each.get(topic, ()) for each in held))
        pairs.extend(zip(itertools.repeat(topic), sorted(docnos)))
    return pairs
