"""Every gate judged at the two corners of unjudged documents (docs/mathematics.md §10; MATH.md §8), before any gate is
decided.

A gate whose candidate's or reference's top d holds unjudged documents is judged three times: as judged (today's inputs
and limit), at the *optimistic* corner (the candidate's unjudged documents of its top d graded g+: its measure M+) and
at the *pessimistic* corner (the reference's graded g+). One document has one grade at a corner, in both runs: an
unjudged document in both top d is graded g+ at the corner whose side it favours, where it alone raises that side's
score on its topic more than the other's (our reading of MATH.md's "reference M-": graded for both at either corner, a
document the reference ranks first and the candidate tenth would lift the reference at the optimistic corner, and the
corners would no longer bound what the missing judgments can do). Every other system stays as judged, and the virtual
target, a max over systems, follows. A corner is a world of its own: the gate's inputs are computed again from that
world's score matrix (value, reference value, bootstrap interval, null of no change) and its limit is set as today's is,
family-wise with the gates that share its swaps in that world (docs/mathematics.md §10, "Limits at a corner"). The
decision (:mod:`.decision`) then takes the two corners' judgements as inputs. A gate without unjudged documents in
either top d gets no corners, and nothing is computed for it.

Two steps, around the evaluation's one pass over its swaps: :func:`corner_worlds` sets up the worlds and the nulls to
read there before any gate is computed, and :func:`judgment_corners` judges each gate in them once the nulls are read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run, read_run_columns
from pytest_bvtest.judging.decision import judgement
from pytest_bvtest.judging.gate_inputs import NEGLIGIBLE, GateInputs, gate_inputs, pending_gate_null, segment_columns
from pytest_bvtest.judging.judgments import (
    OPTIMISTIC,
    PESSIMISTIC,
    CornerJudgment,
    Corners,
    MeasureJudgments,
    UnjudgedDocuments,
)
from pytest_bvtest.judging.limits import GateLimit, gate_limits
from pytest_bvtest.scoring.lifts import Lifts, combined_lifts, documents_lifts, run_lifts
from pytest_bvtest.scoring.matrix import ScoreMatrix
from pytest_bvtest.spec.measures import OptimisticMeasure
from pytest_bvtest.spec.model import NONRELEVANT, AnalysisSettings, GateSpec, RepeatedRuns, RunFile, Source, Spec
from pytest_bvtest.stats.calibration import PendingNull
from pytest_bvtest.stats.registry import STATISTICS

#: A run file's ranked documents when they are known without reading it (``None`` otherwise).
RankedDocuments = Callable[[RunFile], Sequence[Mapping[str, Any]] | None]


@dataclass(frozen=True)
class GatedMeasure:
    """One measure as its gates read it, before any gate is computed: its score matrix, the settings of its
    statistics, what was judged at its depth (``None`` when unknown) and its gates (the spec's gates on it, in
    order)."""

    matrix: ScoreMatrix
    settings: AnalysisSettings
    judgments: MeasureJudgments | None
    gates: tuple[GateSpec, ...]

    @property
    def measure(self) -> str:
        return self.matrix.measure

    @property
    def topics(self) -> tuple[str, ...]:
        return self.matrix.topics


def _judged(measure: GatedMeasure, topics: Sequence[str]) -> MeasureJudgments | None:
    """What was judged on ``topics``, the topics a gate judges (a gate on a segment: its segment's)."""
    judged = measure.judgments
    if judged is None or tuple(topics) in ((), measure.topics):
        return judged
    position = {topic: j for j, topic in enumerate(measure.topics)}  # tuple.index per topic: quadratic
    return judged.restricted(np.array([position[topic] for topic in topics], dtype=np.int64))


def _cornered(spec: Spec, measure: GatedMeasure, gate: GateSpec, segments: Mapping[str, str]) -> bool:
    """Whether the gate has corners: its measure has an optimistic value, its statistic reads the scores (not the
    per-topic simulation) and the candidate's or its reference's top d holds an unjudged document on its topics.

    Not when either run's top d holds no judged document on any topic: such a run is not one with a few documents
    the pool missed, the qrels are not about it (document ids in another form, another collection or round; the
    ``candidate_zero`` and ``candidate_missing`` guards say so), and grading all its documents g+ would turn its
    plain failure into a pass at the optimistic corner."""
    topics: Sequence[str] = ()
    if gate.segment is not None:
        try:
            topics = [measure.topics[j] for j in segment_columns(spec, gate, measure.matrix, segments)]
        except InputError:  # a segment without topics: the gate's inputs say so at its line
            return False
    judged = _judged(measure, topics)
    if judged is None or judged.optimistic is None or STATISTICS[gate.statistic].from_simulation is not None:
        return False
    if judged.reading == NONRELEVANT:  # unjudged documents are non-relevant by the qrels' convention: no corners
        return False
    rows = [measure.matrix.index(system) for system in (spec.candidate_name, gate.reference) if system is not None]
    if any(not judged.shares[row].any() for row in rows):
        return False
    return any(judged.unjudged_documents(row) for row in rows)


def _source(spec: Spec, system: str) -> Source:
    return spec.candidate if system == spec.candidate_name else spec.baselines[system]  # type: ignore[return-value]


def graded_run_files(spec: Spec) -> frozenset[RunFile]:
    """The run files whose unjudged documents a gate's corners and plausible gradings grade: the candidate's and each
    gate's reference's (each run of a system given as several)."""
    if spec.candidate_name is None:
        return frozenset()
    names = {spec.candidate_name, *(gate.reference for gate in spec.gates if gate.reference is not None)}
    found: set[RunFile] = set()
    for name in names:
        if name != spec.candidate_name and name not in spec.baselines:
            continue
        source = _source(spec, name)
        runs = source.runs if isinstance(source, RepeatedRuns) else (source,)
        found.update(run for run in runs if isinstance(run, RunFile))  # a table has no rankings
    return frozenset(found)


def unjudged_documents(
    spec: Spec,
    qrels: Qrels,
    measures: Sequence[GatedMeasure],
    systems: Mapping[str, Sequence[str]],
    ranked_documents: RankedDocuments | None = None,
    near_ranks: RankedDocuments | None = None,
) -> UnjudgedDocuments:
    """The unjudged documents of ``systems[measure]``'s top d for each measure with corners: from each run file's
    ranked documents where ``ranked_documents`` has them (kept when the run was evaluated, or cached then:
    :meth:`~pytest_bvtest.scoring.matrix.MatrixBuilder.run_documents`), else from the run, read once."""
    wanted: dict[str, list[OptimisticMeasure]] = {}
    for measure in measures:
        for system in systems.get(measure.measure, ()):
            wanted.setdefault(system, []).append(_optimistic(spec, measure))
    lifts = {}
    for system, optimistic in wanted.items():
        source = _source(spec, system)
        runs = source.runs if isinstance(source, RepeatedRuns) else (source,)
        each = [_source_lifts(qrels, run, optimistic, ranked_documents, near_ranks) for run in runs]
        for measure in optimistic:
            found = [per_run[measure] for per_run in each]
            lifts[str(measure.measure), system] = found[0] if len(found) == 1 else combined_lifts(found)
    return UnjudgedDocuments(lifts)


def _source_lifts(
    qrels: Qrels,
    source: Source,
    optimistic: Sequence[OptimisticMeasure],
    ranked_documents: RankedDocuments | None,
    near_ranks: RankedDocuments | None = None,
) -> dict[OptimisticMeasure, Lifts]:
    """One run's :class:`~pytest_bvtest.scoring.lifts.Lifts` under each optimistic measure: from its ranked documents
    when they are known without reading it, else from the run, read once."""
    if isinstance(source, Run):
        return run_lifts(qrels, source, optimistic)
    assert isinstance(source, RunFile)  # judgment_measures: systems from run files or runs only
    documents = ranked_documents(source) if ranked_documents is not None else None
    read = partial(read_run_columns, source.path, tag=source.tag)
    near = None if near_ranks is None else partial(near_ranks, source)
    found = documents_lifts(qrels, documents, optimistic, read, near) if documents is not None else None
    return found if found is not None else run_lifts(qrels, read(), optimistic)


def _optimistic(spec: Spec, measure: GatedMeasure) -> OptimisticMeasure:
    judged = measure.judgments
    assert judged is not None
    scored = next(listed for listed in spec.measures if str(listed) == measure.measure)
    return OptimisticMeasure(scored, judged.grade, judged.depth)  # type: ignore[arg-type]


def _row(measure: GatedMeasure, values: Mapping[str, float]) -> np.ndarray:
    """Per-topic values aligned with the measure's topics; a topic the run misses scores 0 (the missing-topic rule)."""
    return np.fromiter((values.get(topic, 0.0) for topic in measure.topics), dtype=float, count=len(measure.topics))


def _favouring(
    measure: GatedMeasure, documents: UnjudgedDocuments, lifted: str, other: str
) -> tuple[Mapping[str, frozenset[str]], dict[str, set[str]]]:
    """The unjudged documents both top d hold, per topic: all of them, and those that favour ``lifted``: graded g+
    alone, each raises ``lifted``'s score on its topic more than ``other``'s (docs/mathematics.md §10)."""
    shared = documents.shared(measure.measure, lifted, other)
    rows = {system: measure.matrix.index(system) for system in (lifted, other)}
    position = {topic: j for j, topic in enumerate(measure.topics)}  # tuple.index per topic cost 1.3 s at 7,000
    columns = {topic: position[topic] for topic, docnos in shared.items() if docnos}
    pairs = [(topic, docno) for topic, docnos in shared.items() for docno in docnos]
    # only the shared documents' single lifts: every unjudged document's cost 0.2 s at 7,000 topics
    single = {system: dict(zip(pairs, documents.lifts[measure.measure, system].single_of(pairs))) for system in rows}

    def gain(system: str, topic: str, docno: str) -> float:
        return single[system][topic, docno] - float(measure.matrix.scores[rows[system], columns[topic]])

    favoured = {
        topic: {docno for docno in docnos if gain(lifted, topic, docno) > gain(other, topic, docno) + NEGLIGIBLE}
        for topic, docnos in shared.items()
    }
    return shared, favoured


def _world_matrix(
    measure: GatedMeasure, documents: UnjudgedDocuments, lifted: str, other: str | None
) -> tuple[GatedMeasure, dict[str, set[str]]] | None:
    """``measure`` in the world where ``lifted``'s unjudged documents of its top d are graded g+, but for those
    ``other``'s top d holds too that do not favour ``lifted``, and ``other`` as judged but for the documents graded;
    with those documents per topic. ``None`` when that world changes nothing."""
    judged = measure.judgments
    assert judged is not None and judged.optimistic is not None
    row = measure.matrix.index(lifted)
    if not judged.unjudged_documents(row):
        return None
    own = documents.lifts[measure.measure, lifted]
    graded = {topic: set(docnos) for topic, docnos in own.documents.items()}
    rows = {lifted: judged.optimistic[row]}
    if other is not None and judged.unjudged_documents(measure.matrix.index(other)):
        shared, favoured = _favouring(measure, documents, lifted, other)
        left_out = {topic: docnos - favoured[topic] for topic, docnos in shared.items()}
        if any(left_out.values()):
            graded = {topic: docnos - left_out.get(topic, set()) for topic, docnos in graded.items()}
            rows[lifted] = _row(measure, own.values_without(left_out))
        rows[other] = _row(measure, documents.lifts[measure.measure, other].values(favoured))
    return replace(measure, matrix=measure.matrix.with_rows(rows)), graded


#: A measure in a corner's world, with the unjudged documents graded g+ there (per topic); ``None`` for a measure none
#: of whose gates is judged there again, or whose world changes nothing.
WorldMeasure = tuple[GatedMeasure, dict[str, set[str]]] | None


def _world_measures(
    measures: Sequence[GatedMeasure],
    cornered: Sequence[Sequence[bool]],
    documents: UnjudgedDocuments,
    partner: str | None,
    lifted: str,
    other: str | None,
) -> list[WorldMeasure]:
    """Each measure in the world of a corner of the gates swapped with ``partner``: ``lifted``'s unjudged documents
    graded g+, but for those ``other``'s top d holds too that favour ``other``."""
    return [
        _world_matrix(measure, documents, lifted, other)
        if any(flag and gate.reference == partner for gate, flag in zip(measure.gates, flags))
        else None
        for measure, flags in zip(measures, cornered)
    ]


def _judged_again(
    worlds: Sequence[WorldMeasure], cornered: Sequence[Sequence[bool]], partner: str | None
) -> Iterator[tuple[int, int, GatedMeasure, GateSpec]]:
    """The gates computed again in a corner's world: their measure's and their own position, the measure in that
    world and the gate."""
    for m, (world, flags) in enumerate(zip(worlds, cornered)):
        if world is None:
            continue
        for g, (gate, flag) in enumerate(zip(world[0].gates, flags)):
            if flag and gate.reference == partner:
                yield m, g, world[0], gate


#: A corner's world's key: the corner (:data:`~.judgments.OPTIMISTIC` or :data:`~.judgments.PESSIMISTIC`) and the
#: partner of the gates judged there again.
WorldKey = tuple[str, str | None]


@dataclass(frozen=True)
class CornerWorlds:
    """The worlds of the corners of an evaluation's gates, set up before any gate is computed: which gates have
    corners (``cornered``, aligned with each measure's gates), the unjudged documents they were read from (``None``
    when no gate has corners), each world's measures and the nulls of the gates judged again there, keyed by
    world, measure position and gate position. The nulls are read with the evaluation's other readers of the swaps
    (:attr:`readers`; :func:`~pytest_bvtest.stats.swaps.read_swaps`): one pass over the swaps for every null of the
    evaluation (a second pass for the corners cost a quarter of a cached gate at 7,000 topics)."""

    measures: Sequence[GatedMeasure]
    cornered: list[list[bool]]
    documents: UnjudgedDocuments | None
    worlds: Mapping[WorldKey, Sequence[WorldMeasure]]
    nulls: Mapping[tuple[WorldKey, int, int], PendingNull]

    @property
    def readers(self) -> list[PendingNull]:
        return list(self.nulls.values())


def corner_worlds(
    spec: Spec,
    qrels: Qrels | None,
    measures: Sequence[GatedMeasure],
    segments: Mapping[str, str] | None = None,
    ranked_documents: RankedDocuments | None = None,
    near_ranks: RankedDocuments | None = None,
) -> CornerWorlds:
    """The worlds of the corners of every gate that has them (:func:`_cornered`): per reference of a cornered gate,
    the optimistic one (the candidate lifted) and the pessimistic one (the reference lifted), with the nulls of the
    gates judged again there, still to be read. ``ranked_documents`` gives a run file's ranked documents when they
    are known without reading it (:func:`unjudged_documents`), ``near_ranks`` the ranks its unjudged documents have
    as deep as the plausible gradings' rank support reads them
    (:meth:`~pytest_bvtest.scoring.matrix.MatrixBuilder.run_near_ranks`)."""
    segments = segments or {}
    cornered = [[_cornered(spec, measure, gate, segments) for gate in measure.gates] for measure in measures]
    if not any(any(flags) for flags in cornered):
        return CornerWorlds(measures, cornered, None, {}, {})
    assert qrels is not None and spec.candidate_name is not None  # judged shares come from run files and qrels
    candidate = spec.candidate_name
    partners = {
        gate.reference for measure, flags in zip(measures, cornered) for gate, flag in zip(measure.gates, flags) if flag
    }
    systems = {
        measure.measure: [candidate, *sorted(partner for partner in partners if partner is not None)]
        for measure, flags in zip(measures, cornered)
        if any(flags)
    }
    documents = unjudged_documents(spec, qrels, measures, systems, ranked_documents, near_ranks)
    sides = {(OPTIMISTIC, partner): (candidate, partner) for partner in partners}
    sides.update({(PESSIMISTIC, partner): (partner, candidate) for partner in partners if partner is not None})
    worlds = {
        (corner, partner): _world_measures(measures, cornered, documents, partner, lifted, other)
        for (corner, partner), (lifted, other) in sides.items()
    }
    nulls: dict[tuple[WorldKey, int, int], PendingNull] = {}
    for key, world in worlds.items():
        for m, g, measure, gate in _judged_again(world, cornered, key[1]):
            null = pending_gate_null(
                spec, gate, measure.matrix, measure.settings, measure.matrix.index(candidate), segments
            )
            if null is not None:
                nulls[key, m, g] = null
    return CornerWorlds(measures, cornered, documents, worlds, nulls)


def _world(
    spec: Spec,
    corners: CornerWorlds,
    key: WorldKey,
    gates: Sequence[Sequence[GateInputs]],
    texts: Mapping[str, str],
    segments: Mapping[str, str],
    family: bool,
) -> World:
    """Every gate's inputs and limit in the world ``key`` (its null read). The gates swapped with its partner are
    computed again from the world's matrix; every other gate keeps today's inputs (its family, keyed by its own
    partner, is another)."""
    every = [inputs for row in gates for inputs in row]
    starts = np.cumsum([0, *(len(row) for row in gates)])
    worlds = corners.worlds[key]
    for m, g, world, gate in _judged_again(worlds, corners.cornered, key[1]):
        null = corners.nulls.get((key, m, g))
        every[starts[m] + g] = gate_inputs(
            spec,
            gate,
            world.matrix,
            world.settings,
            world.matrix.index(gates[m][g].system),
            {},
            None,
            texts,
            segments,
            drawn=None if null is None else null.null(),
        )
    graded = {measure.measure: world[1] for measure, world in zip(corners.measures, worlds) if world is not None}
    return World(every, gate_limits(every, family), graded)


@dataclass(frozen=True)
class World:
    """A corner's world: every gate's inputs and limit there (aligned with the gates of every measure, in order) and,
    per measure, the unjudged documents graded g+ (per topic)."""

    inputs: list[GateInputs]
    limits: list[GateLimit]
    graded: Mapping[str, Mapping[str, set[str]]]

    def graded_on(self, measure: str, topics: Collection[str]) -> int:
        """How many documents this world grades g+ on ``topics`` (a gate's: its segment's, or every topic)."""
        return sum(len(docnos) for topic, docnos in self.graded.get(measure, {}).items() if topic in topics)


def _judged_at(corner: str, inputs: GateInputs, limit: GateLimit, graded: int) -> CornerJudgment:
    judged = judgement(inputs, limit)
    return CornerJudgment(
        corner, inputs.value, inputs.reference_value, limit.value, judged.excess, judged.passed, graded
    )


def judgment_corners(
    spec: Spec,
    corners: CornerWorlds,
    gates: Sequence[Sequence[GateInputs]],
    texts: Mapping[str, str],
    family: bool,
    segments: Mapping[str, str] | None = None,
) -> list[list[Corners | None]]:
    """Each gate's corners, aligned with ``gates`` (one list per measure of ``corners``; ``None`` for a gate with
    nothing unjudged in its candidate's and its reference's top d), once the worlds' nulls are read. A gate without a
    reference is judged as judged at its pessimistic corner."""
    found: list[list[Corners | None]] = [[None] * len(row) for row in gates]
    if corners.documents is None:
        return found
    worlds = {key: _world(spec, corners, key, gates, texts, segments or {}, family) for key in corners.worlds}
    position = 0
    for m, (measure, row, flags) in enumerate(zip(corners.measures, gates, corners.cornered)):
        for g, (inputs, flag) in enumerate(zip(row, flags)):
            at, position = position, position + 1
            if flag:
                found[m][g] = _corners(measure, inputs, corners.documents, worlds, at)
    return found


def _corners(
    measure: GatedMeasure,
    inputs: GateInputs,
    documents: UnjudgedDocuments,
    worlds: Mapping[WorldKey, World],
    at: int,
) -> Corners:
    judged = _judged(measure, inputs.topics)
    assert judged is not None
    partner = inputs.gate.reference
    judged_topics = set(inputs.topics or measure.topics)
    optimistic = worlds[OPTIMISTIC, partner]
    if partner is None:  # no reference to grade: the pessimistic corner is the gate as judged
        pessimistic = _judged_at(PESSIMISTIC, inputs, gate_limits([inputs], False)[0], 0)
        partner_unjudged, shared = 0, 0
    else:
        world = worlds[PESSIMISTIC, partner]
        pessimistic = _judged_at(
            PESSIMISTIC, world.inputs[at], world.limits[at], world.graded_on(measure.measure, judged_topics)
        )
        partner_unjudged = judged.unjudged_documents(measure.matrix.index(partner))
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
        optimistic=_judged_at(
            OPTIMISTIC,
            optimistic.inputs[at],
            optimistic.limits[at],
            optimistic.graded_on(measure.measure, judged_topics),
        ),
        pessimistic=pessimistic,
    )
