"""Every gate judged at the two corners of unjudged documents (docs/mathematics.md §10; MATH.md §8), before any gate
is decided.

A gate whose candidate's or reference's top d holds unjudged documents is judged three times: as judged (today's
inputs and limit), at the *optimistic* corner (the candidate's unjudged documents of its top d graded g+: its
measure M+) and at the *pessimistic* corner (the reference's graded g+). One document has one grade at a corner: an
unjudged document in both top d is graded g+ for both runs at either corner (our reading of MATH.md's "reference
M-": the reference as judged, but for the documents the corner grades). Every other system stays as judged, and
the virtual target, a max over systems, follows. A corner is a world of its own: the gate's inputs are computed
again from that world's score matrix (value, reference value, bootstrap interval, null of no change) and its
limit is set as today's is, family-wise with the gates that share its swaps in that world (docs/mathematics.md
§10, "Limits at a corner"). The decision (:mod:`.decision`) then takes the two corners' judgements as inputs. A
gate without unjudged documents in either top d gets no corners, and nothing is computed for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run, read_run_columns
from pytest_bvtest.judging.decision import judgement
from pytest_bvtest.judging.evaluation import MeasureEvaluation
from pytest_bvtest.judging.gate_inputs import GateInputs, gate_inputs
from pytest_bvtest.judging.judgments import (
    OPTIMISTIC,
    PESSIMISTIC,
    CornerJudgment,
    Corners,
    MeasureJudgments,
    UnjudgedDocuments,
)
from pytest_bvtest.judging.limits import GateLimit, gate_limits
from pytest_bvtest.scoring.lifts import run_lifts
from pytest_bvtest.spec.measures import OptimisticMeasure
from pytest_bvtest.spec.model import Source, Spec
from pytest_bvtest.stats.registry import STATISTICS


def _partner(inputs: GateInputs) -> str | None:
    """The system a gate is compared and swapped with: its reference (the spec's unless the gate names one)."""
    return inputs.gate.reference


def _judged(measure: MeasureEvaluation, inputs: GateInputs) -> MeasureJudgments | None:
    """What was judged on the topics the gate judges (a gate on a segment: its segment's)."""
    judged = measure.judgments
    if judged is None or tuple(inputs.topics) in ((), measure.topics):
        return judged
    return judged.restricted(np.array([measure.topics.index(topic) for topic in inputs.topics], dtype=np.int64))


def _cornered(measure: MeasureEvaluation, inputs: GateInputs) -> bool:
    """Whether the gate has corners: its measure has an optimistic value, its statistic reads the scores (not the
    per-topic simulation) and the candidate's or its reference's top d holds an unjudged document on its topics.

    Not when either run's top d holds no judged document on any topic: such a run is not one with a few documents
    the pool missed, the qrels are not about it (document ids in another form, another collection or round; the
    ``candidate_zero`` and ``candidate_missing`` guards say so), and grading all its documents g+ would turn its
    plain failure into a pass at the optimistic corner."""
    judged = _judged(measure, inputs)
    if judged is None or judged.optimistic is None or STATISTICS[inputs.statistic].from_simulation is not None:
        return False
    rows = [measure.matrix.index(system) for system in (inputs.system, _partner(inputs)) if system is not None]
    if any(not judged.shares[row].any() for row in rows):
        return False
    return any(judged.unjudged_documents(row) for row in rows)


def _source(spec: Spec, system: str) -> Source:
    return spec.candidate if system == spec.candidate_name else spec.baselines[system]  # type: ignore[return-value]


def unjudged_documents(
    spec: Spec, qrels: Qrels, measures: Sequence[MeasureEvaluation], systems: Mapping[str, Sequence[str]]
) -> UnjudgedDocuments:
    """The unjudged documents of ``systems[measure]``'s top d for each measure with corners; each run read once."""
    wanted: dict[str, list[OptimisticMeasure]] = {}
    for measure in measures:
        for system in systems.get(measure.measure, ()):
            wanted.setdefault(system, []).append(_optimistic(spec, measure))
    lifts = {}
    for system, optimistic in wanted.items():
        source = _source(spec, system)
        run = source if isinstance(source, Run) else read_run_columns(source.path, tag=source.tag)  # type: ignore[union-attr]
        for measure, values in run_lifts(qrels, run, optimistic).items():
            lifts[str(measure.measure), system] = values
    return UnjudgedDocuments(lifts)


def _optimistic(spec: Spec, measure: MeasureEvaluation) -> OptimisticMeasure:
    judged = measure.judgments
    assert judged is not None
    scored = next(listed for listed in spec.measures if str(listed) == measure.measure)
    return OptimisticMeasure(scored, judged.grade, judged.depth)  # type: ignore[arg-type]


def _row(measure: MeasureEvaluation, values: Mapping[str, float]) -> np.ndarray:
    """Per-topic values aligned with the measure's topics; a topic the run misses scores 0 (the missing-topic rule)."""
    return np.fromiter((values.get(topic, 0.0) for topic in measure.topics), dtype=float, count=len(measure.topics))


def _world_matrix(
    measure: MeasureEvaluation, documents: UnjudgedDocuments, lifted: str, other: str | None
) -> MeasureEvaluation | None:
    """``measure`` in the world where ``lifted``'s unjudged documents of its top d are graded g+ (its row M+), and
    ``other``'s as judged but for those same documents; ``None`` when that world changes nothing."""
    judged = measure.judgments
    assert judged is not None and judged.optimistic is not None
    row = measure.matrix.index(lifted)
    if not judged.unjudged_documents(row):
        return None
    scores = measure.matrix.scores.copy()
    scores[row] = judged.optimistic[row]
    if other is not None and judged.unjudged_documents(measure.matrix.index(other)):
        shared = documents.shared(measure.measure, lifted, other)
        scores[measure.matrix.index(other)] = _row(measure, documents.lifts[measure.measure, other].values(shared))
    return replace(measure, matrix=replace(measure.matrix, scores=scores))


def _world(
    spec: Spec,
    measures: Sequence[MeasureEvaluation],
    gates: Sequence[Sequence[GateInputs]],
    cornered: Sequence[Sequence[bool]],
    documents: UnjudgedDocuments,
    texts: Mapping[str, str],
    segments: Mapping[str, str],
    partner: str | None,
    lifted: str,
    other: str | None,
    family: bool,
) -> tuple[list[GateInputs], list[GateLimit]]:
    """Every gate's inputs and limit in the world of a corner of the gates swapped with ``partner``: ``lifted``'s
    unjudged documents graded g+, and ``other``'s shared ones with them. Those gates are computed again from the
    world's matrix; every other gate keeps today's inputs (its family, keyed by its own partner, is another)."""
    every: list[GateInputs] = []
    for measure, row, flags in zip(measures, gates, cornered):
        world = None
        if any(flag and _partner(inputs) == partner for inputs, flag in zip(row, flags)):
            world = _world_matrix(measure, documents, lifted, other)
        for inputs, flag in zip(row, flags):
            if world is None or not flag or _partner(inputs) != partner:
                every.append(inputs)
                continue
            candidate = world.matrix.index(inputs.system)
            every.append(
                gate_inputs(spec, inputs.gate, world.matrix, world.settings, candidate, {}, None, texts, segments)
            )
    return every, gate_limits(every, family)


def _judged_at(corner: str, inputs: GateInputs, limit: GateLimit) -> CornerJudgment:
    judged = judgement(inputs, limit)
    return CornerJudgment(corner, inputs.value, inputs.reference_value, limit.value, judged.excess, judged.passed)


def judgment_corners(
    spec: Spec,
    qrels: Qrels | None,
    measures: Sequence[MeasureEvaluation],
    gates: Sequence[Sequence[GateInputs]],
    texts: Mapping[str, str],
    family: bool,
    segments: Mapping[str, str] | None = None,
) -> tuple[list[list[Corners | None]], UnjudgedDocuments | None]:
    """Each gate's corners, aligned with ``gates`` (one list per measure; ``None`` for a gate with nothing unjudged
    in its candidate's and its reference's top d), and the unjudged documents they were read from (``None`` when
    no gate has corners). The worlds are computed only when some gate needs them: per reference of a cornered
    gate, the optimistic one (the candidate lifted) and the pessimistic one (the reference lifted); a gate without
    a reference is judged as judged at its pessimistic corner."""
    cornered = [[_cornered(measure, inputs) for inputs in row] for measure, row in zip(measures, gates)]
    corners: list[list[Corners | None]] = [[None] * len(row) for row in gates]
    if not any(any(row) for row in cornered):
        return corners, None
    assert qrels is not None and spec.candidate_name is not None  # judged shares come from run files and qrels
    candidate = spec.candidate_name
    partners = {_partner(inputs) for row, flags in zip(gates, cornered) for inputs, flag in zip(row, flags) if flag}
    systems = {
        measure.measure: [candidate, *sorted(partner for partner in partners if partner is not None)]
        for measure, flags in zip(measures, cornered)
        if any(flags)
    }
    documents = unjudged_documents(spec, qrels, measures, systems)
    worlds = {}
    for partner in partners:
        common = (spec, measures, gates, cornered, documents, texts, segments or {}, partner)
        worlds[OPTIMISTIC, partner] = _world(*common, candidate, partner, family)
        if partner is not None:
            worlds[PESSIMISTIC, partner] = _world(*common, partner, candidate, family)
    position = 0
    for m, (measure, row, flags) in enumerate(zip(measures, gates, cornered)):
        for g, (inputs, flag) in enumerate(zip(row, flags)):
            at, position = position, position + 1
            if flag:
                corners[m][g] = _corners(measure, inputs, documents, worlds, at)
    return corners, documents


def _corners(
    measure: MeasureEvaluation,
    inputs: GateInputs,
    documents: UnjudgedDocuments,
    worlds: Mapping[tuple[str, str | None], tuple[list[GateInputs], list[GateLimit]]],
    at: int,
) -> Corners:
    judged = _judged(measure, inputs)
    assert judged is not None
    partner = _partner(inputs)
    optimistic_inputs, optimistic_limits = worlds[OPTIMISTIC, partner]
    if partner is None:  # no reference to grade: the pessimistic corner is the gate as judged
        pessimistic = _judged_at(PESSIMISTIC, inputs, gate_limits([inputs], False)[0])
        partner_unjudged, shared = 0, 0
    else:
        pessimistic_inputs, pessimistic_limits = worlds[PESSIMISTIC, partner]
        pessimistic = _judged_at(PESSIMISTIC, pessimistic_inputs[at], pessimistic_limits[at])
        partner_unjudged = judged.unjudged_documents(measure.matrix.index(partner))
        judged_topics = set(inputs.topics or measure.topics)
        shared = sum(
            len(docnos)
            for topic, docnos in documents.shared(measure.measure, inputs.system, partner).items()
            if topic in judged_topics
        )
    rows = [measure.matrix.index(system) for system in (inputs.system, partner) if system is not None]
    return Corners(
        depth=judged.depth,
        grade=judged.grade,
        candidate=inputs.system,
        reference=partner,
        candidate_unjudged=judged.unjudged_documents(rows[0]),
        reference_unjudged=partner_unjudged,
        shared=shared,
        topics=int(np.count_nonzero(judged.unjudged[rows].sum(axis=0))),
        optimistic=_judged_at(OPTIMISTIC, optimistic_inputs[at], optimistic_limits[at]),
        pessimistic=pessimistic,
    )
