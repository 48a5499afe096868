"""What was judged (docs/mathematics.md §8): each system's judged share of its top d, and its optimistic values.

Qrels are pools: a document no pooled system retrieved has no judgment and counts as non-relevant. For every
measure a spec evaluates from run files, the pipeline scores beside it, in the same pass over each run: Judged@d
(the share of each top d the qrels judge, d the measure's cut-off or the judging depth), the number of unjudged
documents in each top d, and, for the measures that have one, the optimistic value M+ (every unjudged document of
the top d given the grade g+). :class:`MeasureJudgments` holds them as matrices aligned with the measure's score
matrix; the corners of a gate read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run
from pytest_bvtest.scoring.lifts import Lifts
from pytest_bvtest.scoring.matrix import ScoreMatrix
from pytest_bvtest.spec.measures import Measure, OptimisticMeasure, RunMeasure, TableMeasure, UnjudgedCount
from pytest_bvtest.spec.model import NONRELEVANT, PLAUSIBLE, RepeatedRuns, RunFile, Spec


@dataclass(frozen=True)
class JudgmentMeasures:
    """What is scored beside one measure: its judged share ``judged`` (Judged@d), the count of unjudged documents
    ``unjudged`` and, where the measure has one, its optimistic value ``optimistic`` with the unjudged documents
    graded ``grade`` (``None`` otherwise); ``reading`` how unjudged documents are read (``plausible`` or
    ``nonrelevant``) and ``chosen`` by whom (``auto``: from the qrels, ``spec``: ``judgments.unjudged``)."""

    depth: int
    grade: int
    judged: Measure
    unjudged: UnjudgedCount
    optimistic: OptimisticMeasure | None
    reading: str = PLAUSIBLE
    chosen: str = "auto"

    def measures(self) -> list[RunMeasure]:
        return [self.judged, self.unjudged, *([self.optimistic] if self.optimistic is not None else [])]


def judgment_measures(spec: Spec, qrels: Qrels | None) -> dict[Measure, JudgmentMeasures]:
    """For each measure of ``spec`` evaluated from runs, what is scored beside it (docs/mathematics.md §8).

    Nothing when a system comes from a per-topic table (it has no ranking to count in), over query variations, or
    for ``Judged@k`` itself. The grade g+ of the optimistic values is the spec's ``judgments.optimistic_grade``,
    else the top grade of the qrels; a grade above it is refused (the key may only lower it).
    """
    sources = spec.sources()
    if qrels is None or spec.analysis.mve.variations is not None or not sources:
        return {}
    runs = [run for source in sources for run in (source.runs if isinstance(source, RepeatedRuns) else (source,))]
    if not all(isinstance(run, RunFile | Run) for run in runs):
        return {}
    top = max(max(grades.values()) for grades in qrels.judgments.values())
    grade = spec.judgments.optimistic_grade
    if grade is None:
        grade = top
    elif grade > top:
        raise InputError(
            f"judgments.optimistic_grade: {grade} is above the top grade of the qrels, {top}",
            path=spec.path,
            line=spec.line_of("judgments", "optimistic_grade"),
            hint=f"the key may lower the grade unjudged documents get at the optimistic corner: give at most {top}",
        )
    reading, chosen = unjudged_reading(spec, qrels)
    derived = {}
    for measure in spec.measures:
        if isinstance(measure, TableMeasure) or measure.name == "Judged":
            continue
        depth = measure.depth(spec.judgments.depth)
        derived[measure] = JudgmentMeasures(
            depth,
            grade,
            Measure("Judged", cutoff=depth),
            UnjudgedCount(depth),
            OptimisticMeasure(measure, grade, depth) if measure.has_corners else None,
            reading,
            chosen,
        )
    return derived


def unjudged_reading(spec: Spec, qrels: Qrels) -> tuple[str, str]:
    """How unjudged documents are read, and by whose choice (docs/mathematics.md §10): the spec's
    ``judgments.unjudged`` (``spec``), or, for ``auto``, ``nonrelevant`` when the qrels judge only relevant documents
    (no grade below 1: MS MARCO's sparse qrels, where a prior estimated from the judged documents, all relevant, would
    call every unjudged one likely relevant) and ``plausible`` otherwise."""
    asked = spec.judgments.unjudged
    if asked != "auto":
        return asked, "spec"
    positive_only = all(grade > 0 for grades in qrels.judgments.values() for grade in grades.values())
    return (NONRELEVANT if positive_only else PLAUSIBLE), "auto"


@dataclass(frozen=True)
class MeasureJudgments:
    """What was judged of every system at one measure's depth (docs/mathematics.md §8), rows as the measure's
    score matrix: ``shares[i, j]`` is Judged@``depth`` of system i on topic j, ``unjudged[i, j]`` the unjudged
    documents of its top ``depth``; ``optimistic[i, j]`` M+ with the unjudged ones graded ``grade`` (``None``
    for a measure without corners)."""

    measure: str
    depth: int
    label: str
    shares: np.ndarray
    unjudged: np.ndarray
    grade: int
    optimistic: np.ndarray | None
    reading: str = PLAUSIBLE
    chosen: str = "auto"

    def restricted(self, columns: np.ndarray) -> MeasureJudgments:
        """The same on the topics ``columns`` only (a gate on a segment of the topics)."""
        optimistic = None if self.optimistic is None else self.optimistic[:, columns]
        return replace(self, shares=self.shares[:, columns], unjudged=self.unjudged[:, columns], optimistic=optimistic)

    @property
    def complete(self) -> bool:
        """Every system's top ``depth`` is judged on every topic."""
        return not self.unjudged.any()

    def unjudged_documents(self, row: int) -> int:
        """How many unjudged documents the top ``depth`` of system ``row`` holds, over every topic."""
        return int(self.unjudged[row].sum())


def measure_judgments(
    measure: Measure, derived: JudgmentMeasures, matrices: Mapping[RunMeasure, ScoreMatrix]
) -> MeasureJudgments:
    """The judged shares, unjudged counts and optimistic values of every system, from their score matrices."""
    optimistic = None if derived.optimistic is None else matrices[derived.optimistic].scores
    counts = matrices[derived.unjudged]
    unjudged = counts.scores.copy()
    for system, per_run in counts.runs.items():  # several runs: the most any of them leaves unjudged, not their mean
        unjudged[counts.index(system)] = per_run.max(axis=0)
    return MeasureJudgments(
        str(measure),
        derived.depth,
        str(derived.judged),
        matrices[derived.judged].scores,
        np.rint(unjudged).astype(np.int64),
        derived.grade,
        optimistic,
        derived.reading,
        derived.chosen,
    )


def every_measure(
    spec_measures: Sequence[Measure | TableMeasure], derived: Mapping[Measure, JudgmentMeasures]
) -> list[Measure | TableMeasure | RunMeasure]:
    """The spec's measures, then what is scored beside them, each once (a spec may list ``Judged@10`` itself)."""
    listed = list(spec_measures)
    for judged in derived.values():
        listed += [measure for measure in judged.measures() if measure not in listed]
    return listed


#: The corners of docs/mathematics.md §10 (MATH.md §8): the candidate's unjudged documents relevant, the reference at
#: its value as judged; and the other way round.
OPTIMISTIC = "optimistic"
PESSIMISTIC = "pessimistic"


@dataclass(frozen=True)
class CornerJudgment:
    """A gate judged at one corner: its value, the reference value its limit reads, its limit there (set as today's
    is, from the corner's scores), how far the value is past it, whether it passes, and how many unjudged documents
    the corner grades g+ (on the gate's topics)."""

    corner: str
    value: float
    reference_value: float | None
    limit: float
    excess: float
    passed: bool
    graded: int


@dataclass(frozen=True)
class Corners:
    """What a gate's verdict would be if the missing judgments came out for the candidate (``optimistic``: its unjudged
    documents of the top ``depth`` graded ``grade``, the reference as judged) or against it (``pessimistic``: the
    reference's unjudged documents graded so, the candidate as judged); one document has one grade, so one of the
    ``shared`` ones, in both top ``depth``, is graded for both runs, at the corner of the run it alone raises more;
    every other system as judged. ``candidate_unjudged`` and ``reference_unjudged`` count the unjudged documents of the
    two top ``depth`` over every topic (``topics``: the topics with any)."""

    depth: int
    grade: int
    candidate: str
    reference: str | None
    candidate_unjudged: int
    reference_unjudged: int
    shared: int
    topics: int
    optimistic: CornerJudgment
    pessimistic: CornerJudgment

    @property
    def unjudged(self) -> int:
        """The unjudged documents the corners rest on, each once: the judgments that would settle the gate."""
        return self.candidate_unjudged + self.reference_unjudged - self.shared


@dataclass(frozen=True)
class Predicted:
    """Predicted grades among a gate's unjudged documents (docs/predictions.md): ``documents`` of them have one;
    the predictor agrees with people on ``agreement`` of ``sample`` judged documents, Cohen's ``kappa``; ``trust``,
    the exponent its likelihoods were tempered by (kappa's lower confidence bound); ``used`` when that is above 0
    (else its grades changed nothing)."""

    documents: int
    sample: int
    agreement: float | None
    kappa: float | None
    trust: float

    @property
    def used(self) -> bool:
        return self.trust > 0.0


@dataclass(frozen=True)
class Plausibility:
    """A gate weighed over plausible gradings of the unjudged documents (docs/mathematics.md §10).

    ``passing`` of ``draws`` gradings (seeded with ``seed``) pass the gate, its limit read from ``swaps`` swaps in
    each; ``documents`` unjudged documents of its candidate's and reference's top d on its topics were graded, each
    relevant with probability ``relevant`` on average (the prior, its pool-bias ``discount``), where the judged
    documents of those top d are relevant ``judged_relevant`` of the time. ``settle``: how many of them, judged in
    the order of the documents to judge, are expected to settle it (``None``: not even all of them in half of the
    gradings). Decided when ``P`` is at least ``confidence`` or at most ``1 - confidence``. ``predicted``: the
    predicted grades among its documents, and how far the predictor agrees with people (``None`` without a
    predictions file).
    """

    draws: int
    passing: int
    seed: int
    confidence: float
    discount: float
    swaps: int
    documents: int
    relevant: float
    judged_relevant: float
    settle: int | None = None
    predicted: Predicted | None = None

    @property
    def probability(self) -> float:
        """P: the share of the gradings in which the gate passes."""
        return self.passing / self.draws

    @property
    def decided(self) -> bool | None:
        """True when the gate plausibly passes (``P >= confidence``), False when it plausibly fails, else ``None``."""
        if self.probability >= self.confidence:
            return True
        if self.probability <= 1.0 - self.confidence:
            return False
        return None


@dataclass(frozen=True)
class UnjudgedDocuments:
    """The unjudged documents of the candidate's and its partners' top d, read from their runs once:
    ``lifts[(measure, system)]`` for every measure with corners of a cornered gate."""

    lifts: Mapping[tuple[str, str], Lifts]
    _shared: dict[tuple[str, frozenset[str]], dict[str, frozenset[str]]] = field(default_factory=dict, compare=False)

    def shared(self, measure: str, first: str, second: str) -> Mapping[str, frozenset[str]]:
        """Per topic, the unjudged documents in both systems' top d: one document, one grade at a corner (found once
        per pair of systems: every gate's corners ask)."""
        pair = (measure, frozenset((first, second)))
        if pair not in self._shared:
            ones, others = self.lifts[measure, first].documents, self.lifts[measure, second].documents
            self._shared[pair] = {
                topic: frozenset(ones[topic].keys() & others[topic].keys()) for topic in ones.keys() & others.keys()
            }
        return self._shared[pair]
