"""The documents to judge (docs/mathematics.md §10, judging leverage): the unjudged documents of the candidate's and
its references' top d, each with how far it alone moves every gate that has corners (:mod:`.leverage`).

Across gates, whose statistics have different scales, a document is ranked by its largest
*share*: its move over the gate's span between its two corners (what all the gate's unjudged documents together
could move it), among the undecided gates first (those the judgments settle), then among the others; weighted by
how uncertain its grade is under its prior where plausible gradings weighed it (docs/mathematics.md §10: the order
expected to settle the verdict soonest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.predictions import PredictorRow
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.judging.decision import Verdict
from pytest_bvtest.judging.evaluation import Evaluation
from pytest_bvtest.judging.leverage import LiftedColumns, gate_moves, gate_pairs, gate_systems, lifted_columns
from pytest_bvtest.judging.plausible import PlausibleGradings
from pytest_bvtest.spec.model import RepeatedRuns, ScoreTableFile, SingleSource, Source, Spec
from pytest_bvtest.stats.predictions import stratified_sample

#: A move smaller than this is floating-point noise: the document cannot move the gate.
NEGLIGIBLE = 1e-12


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
    #: How uncertain its grade is under its prior (docs/mathematics.md §10): the grade's standard deviation as a share
    #: of the largest any grade can have (half the top grade); 1 where no grading weighed it.
    uncertainty: float = 1.0

    @property
    def leverage(self) -> float:
        """The document's largest share of a gate's span: how much of the way between a gate's corners it alone
        covers (0 when it moves no gate)."""
        return max((move.share for move in self.moves), default=0.0)

    @property
    def settling(self) -> float:
        """The document's largest share of an undecided gate's span (0 when it moves none)."""
        return max((move.share for move in self.moves if move.undecided), default=0.0)

    @property
    def expected(self) -> float:
        """How much judging it is expected to settle: its leverage (on the undecided gates where it moves any)
        weighted by the uncertainty of its grade (Carterette, Allan & Sitaraman's selection: a document sure to be
        non-relevant settles nothing however far it could move a gate)."""
        return (self.settling or self.leverage) * self.uncertainty


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
        # the gates of a measure against one reference on the same topics move the same documents' columns
        shared: dict[tuple[tuple[str, ...], tuple[str, ...]], LiftedColumns] = {}
        for verdict in measure.gates:
            if verdict.corners is None:
                continue
            key = (tuple(gate_systems(verdict.inputs)), verdict.inputs.topics)
            if key not in shared:
                pairs = gate_pairs(measure.matrix, verdict.inputs, documents)
                shared[key] = lifted_columns(measure.matrix, verdict.inputs, documents, pairs)
            lifted = shared[key]
            gate, span = _short_id(verdict), _span(verdict)
            changes = gate_moves(measure.matrix, measure.settings, verdict.inputs, lifted)
            for pair, change in zip(lifted.pairs, changes.tolist()):
                moves.setdefault(pair, [])
                if abs(change) > NEGLIGIBLE:
                    share = abs(change) / span if span > NEGLIGIBLE else 1.0
                    moves[pair].append(GateMove(gate, change, share, verdict.undecided))
    gradings = evaluation.gradings
    listed = [
        DocumentToJudge(
            topic,
            docno,
            evaluation.texts.get(topic),
            {system: rank(topic, docno) for system, rank in rankers.items()},
            tuple(sorted(gate_moves, key=lambda move: (not move.undecided, -move.share))),
            _uncertainty(gradings, (topic, docno)),
        )
        for (topic, docno), gate_moves in moves.items()
    ]
    return sorted(
        listed,
        key=lambda document: (
            -document.settling * document.uncertainty,
            -document.expected,
            -document.leverage,
            document.topic,
            document.docno,
        ),
    )


def _uncertainty(gradings: PlausibleGradings | None, pair: tuple[str, str]) -> float:
    """A document's grade's standard deviation under its prior, as a share of the largest any grade can have (1
    where no grading weighed it)."""
    at = None if gradings is None else gradings.of(pair)
    if at is None:
        return 1.0
    return float(gradings.grade_spread[at]) / (gradings.top_grade / 2.0)


#: How many judged documents a predictor grades beside the documents to judge: its agreement with people is
#: measured on them (docs/predictions.md).
PREDICTOR_SAMPLE = 200


def predictor_rows(
    evaluation: Evaluation,
    documents: Sequence[DocumentToJudge],
    qrels: Qrels,
    texts: Mapping[str, str] | None,
    sample: int = PREDICTOR_SAMPLE,
) -> tuple[list[PredictorRow], int]:
    """What a predictor grades (docs/predictions.md): the documents to judge and a seeded sample of ``sample``
    judged documents of their topics, stratified by grade (:func:`~pytest_bvtest.stats.predictions.stratified_sample`,
    seeded with ``judgments.seed``), sorted by topic and docno so that nothing tells the predictor which are judged;
    and how many of them are judged."""
    topics = {document.topic for document in documents}
    judged = sorted(
        (topic, docno, grade)
        for topic, grades in qrels.judgments.items()
        if topic in topics
        for docno, grade in grades.items()
    )
    chosen = stratified_sample([grade for _, _, grade in judged], sample, evaluation.spec.judgments.seed)
    pairs = sorted({(document.topic, document.docno) for document in documents} | {judged[k][:2] for k in chosen})
    rows = [
        PredictorRow(topic, evaluation.texts.get(topic), docno, None if texts is None else texts.get(docno))
        for topic, docno in pairs
    ]
    return rows, len(chosen)
