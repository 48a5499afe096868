"""How plausible a gate's verdict is when its corners disagree (docs/mathematics.md §10, "How plausible a verdict is").

The corners (:mod:`.corners`) bound what the missing judgments could do; on real pools almost any verdict flips at
one of them, because the optimistic corner grades every unjudged document of the top d at the top grade while a
tenth to a quarter of them reach it. So a gate whose corners disagree is weighed over plausible gradings instead:

1. the prior of an unjudged document's grade on its topic (:func:`~pytest_bvtest.stats.plausible.grade_prior`): the
   grades of the judged documents in the top d of the candidate and of the gates' references, shrunk towards every
   topic's, each positive grade discounted by the pool-bias discount, itself drawn per grading around
   ``judgments.discount`` (spread ``judgments.discount_sd``) for each group of documents the same runs retrieve
   (:func:`~pytest_bvtest.stats.plausible.draw_discounts`);
2. ``judgments.draws`` seeded gradings of every unjudged document of those top d, one grade per document in every
   run and measure (:func:`~pytest_bvtest.stats.plausible.draw_grades`), a document judged relevant joining the
   qrels as CI would read them (nDCG's ideal, AP's relevant count);
3. under each grading, every gate with corners is judged as CI would judge it: its value, its null of no change from
   the grading's scores (the first :data:`DRAW_SWAPS` of the evaluation's swaps, read in one pass per block of
   gradings), its limit family-wise with the gates that share its swaps, and the rule of every gate
   (:func:`~.decision.judgement`); as at a corner, the candidate and the gate's reference take the grading, every
   other system stays as judged;
   A document with a predicted grade (``judgments.predictions``, :mod:`.predictions`) is drawn from its prior refined
   by Bayes' rule with the predictor's confusion with people, tempered by how surely it agrees with them beyond
   chance (docs/mathematics.md §10, "Predicted grades"); a human grade always wins (a judged document is not drawn);
4. P, the share of gradings in which the gate passes, decides it: passed at ``P >= confidence``, failed at
   ``P <= 1 - confidence``, undecided between (:class:`Plausibility`). The gradings are judged :data:`DRAW_BATCH` at a
   time, and no more once every gate's side is settled beyond a risk of 0.1%
   (:func:`~pytest_bvtest.stats.plausible.verdict_settled`): a gate that fails all of its first 200 gradings stops
   there.

Nothing is drawn for a gate whose corners agree with its verdict as judged: its verdict stands, at no cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cached_property

import numpy as np

from pytest_bvtest.judging.corners import CornerWorlds, GatedMeasure
from pytest_bvtest.judging.decision import judgement
from pytest_bvtest.judging.gate_inputs import GateInputs, gate_inputs, pending_gate_null
from pytest_bvtest.judging.judgments import Corners, Plausibility, Predicted, UnjudgedDocuments
from pytest_bvtest.judging.leverage import (
    LiftedColumns,
    gate_moves,
    gate_pairs,
    gate_systems,
    lifted_columns,
    sorted_pairs,
)
from pytest_bvtest.judging.limits import gate_limits
from pytest_bvtest.judging.predictions import PredictedGrades
from pytest_bvtest.scoring.cache import decoded_array, encoded_array
from pytest_bvtest.spec.model import JudgmentSettings, Spec
from pytest_bvtest.stats.calibration import EXACT_TOPICS, PendingNull
from pytest_bvtest.stats.plausible import (
    FAR_RANKS,
    draw_grades,
    draw_group_discounts,
    grade_shares,
    judgments_to_settle,
    rank_support,
    verdict_settled,
)
from pytest_bvtest.stats.predictions import refine_prior
from pytest_bvtest.stats.swaps import SwapStore, read_swaps

#: The swaps each grading's nulls are read from: the first of the evaluation's (a shorter draw of the same seed).
DRAW_SWAPS = 1000
#: Gradings are judged this many at a time, and no more are drawn once every gate's side is settled
#: (:func:`~pytest_bvtest.stats.plausible.verdict_settled`).
DRAW_BATCH = 100
# Cells of the per-topic columns one pass over the swaps multiplies for a block of gradings (bounds memory).
_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class PlausibleGradings:
    """The gradings a spec's undecided corners were weighed over: the unjudged ``(topic, docno)`` pairs, each one's
    prior probability of relevance (grade above 0) and the standard deviation of its grade (what the documents to
    judge weigh their leverage by), the top grade and the pool-bias discount."""

    pairs: tuple[tuple[str, str], ...]
    relevance: np.ndarray
    grade_spread: np.ndarray
    top_grade: int
    discount: float

    def of(self, pair: tuple[str, str]) -> int | None:
        """The position of ``pair`` among :attr:`pairs` (``None`` when it was not graded)."""
        return self._positions.get(pair)

    @cached_property
    def _positions(self) -> dict[tuple[str, str], int]:
        return {pair: k for k, pair in enumerate(self.pairs)}


def plausible_payload(
    found: Sequence[Sequence[Plausibility | None]], gradings: PlausibleGradings | None
) -> dict[str, object]:
    """What :func:`plausible_verdicts` found, as JSON (floats as Python writes them: read back exactly), so that a check
    whose inputs are all unchanged reads it instead of drawing the gradings again (:func:`plausible_from_payload`)."""
    return {
        "found": [[None if weighed is None else asdict(weighed) for weighed in row] for row in found],
        "gradings": None
        if gradings is None
        else {
            # a verdict weighs 100,000 documents and more: their names as two lines of text, their numbers as the
            # bytes of float64 (JSON lists of them took 0.2 s to read back)
            "topics": "\n".join(topic for topic, _ in gradings.pairs),
            "docnos": "\n".join(docno for _, docno in gradings.pairs),
            "relevance": encoded_array(gradings.relevance),
            "grade_spread": encoded_array(gradings.grade_spread),
            "top_grade": gradings.top_grade,
            "discount": gradings.discount,
        },
    }


def plausible_from_payload(
    payload: Mapping[str, object], shape: Sequence[int]
) -> tuple[list[list[Plausibility | None]], PlausibleGradings | None] | None:
    """:func:`plausible_payload` read back, for gates of ``shape`` (their number per measure); ``None`` when it does
    not hold what it should."""
    try:
        found = [[None if row is None else Plausibility(**row) for row in rows] for rows in payload["found"]]  # type: ignore[union-attr]
        held = payload["gradings"]
        gradings = None
        if held is not None:
            topics, docnos = held["topics"].split("\n"), held["docnos"].split("\n")  # type: ignore[index]
            if len(topics) != len(docnos):
                raise ValueError("plausible gradings of unequal lengths")
            pairs = tuple(zip(topics, docnos)) if held["topics"] or held["docnos"] else ()  # type: ignore[index]
            gradings = PlausibleGradings(
                pairs,
                decoded_array(held["relevance"], count=len(pairs)).astype(float),  # type: ignore[index]
                decoded_array(held["grade_spread"], count=len(pairs)).astype(float),  # type: ignore[index]
                int(held["top_grade"]),  # type: ignore[index]
                float(held["discount"]),  # type: ignore[index]
            )
    except (KeyError, TypeError, ValueError, AttributeError):  # binascii.Error is a ValueError
        return None
    return (found, gradings) if [len(row) for row in found] == list(shape) else None


def _weighed(corners: Corners | None, passed: bool) -> bool:
    """Whether a gate is weighed over gradings: it has corners, and they do not both hold its verdict as judged."""
    return corners is not None and not corners.optimistic.passed == passed == corners.pessimistic.passed


def plausible_verdicts(
    spec: Spec,
    worlds: CornerWorlds,
    gates: Sequence[Sequence[GateInputs]],
    cornered: Sequence[Sequence[Corners | None]],
    family: bool,
    top_grade: int,
    segments: Mapping[str, str] | None = None,
    store: SwapStore | None = None,
    predictions: PredictedGrades | None = None,
) -> tuple[list[list[Plausibility | None]], PlausibleGradings | None]:
    """Each gate's :class:`Plausibility`, aligned with ``gates`` (``None`` for a gate whose corners agree with its
    verdict as judged, or that has none), and the gradings they were weighed over (``None`` when none was);
    ``predictions`` refine the priors of the documents they grade."""
    found: list[list[Plausibility | None]] = [[None] * len(row) for row in gates]
    if worlds.documents is None or all(corners is None for row in cornered for corners in row):
        return found, None  # nothing to weigh, and no family-wise limits to set (seconds at 10,000 gates)
    every = [inputs for row in gates for inputs in row]
    limits = gate_limits(every, family)
    starts = np.cumsum([0, *(len(row) for row in gates)]).tolist()
    wanted = [
        (m, g)
        for m, row in enumerate(gates)
        for g in range(len(row))
        if _weighed(cornered[m][g], judgement(gates[m][g], limits[starts[m] + g]).passed)
    ]
    documents = worlds.documents
    if not wanted or documents is None:
        return found, None
    candidate = spec.candidate_name
    assert candidate is not None
    settings = spec.judgments
    partners = sorted({gates[m][g].gate.reference for m, g in wanted}, key=lambda name: (name is not None, name or ""))
    systems = [candidate, *(partner for partner in partners if partner is not None)]
    measures = [
        m
        for m, (measure, flags) in enumerate(zip(worlds.measures, worlds.cornered))
        if any(flag and gate.reference in partners for gate, flag in zip(measure.gates, flags))
    ]
    pairs, shares, groups, support = _priors(worlds.measures, measures, documents, systems, top_grade)
    discounts = draw_group_discounts(
        int(groups.max(initial=-1)) + 1, settings.draws, settings.discount, settings.discount_sd, settings.seed
    )
    likelihoods = None if predictions is None else predictions.likelihoods(pairs, top_grade + 1)
    priors = shares * (settings.discount * support)[:, np.newaxis]
    priors[:, 0] = 1.0 - priors[:, 1:].sum(axis=1)
    if likelihoods is not None:
        priors = refine_prior(priors, likelihoods)
    lean = _lean(spec)
    swaps = min(DRAW_SWAPS, spec.analysis.calibration.swaps or DRAW_SWAPS)
    universe = len(worlds.measures[0].topics)
    swaps = 2**universe if universe <= EXACT_TOPICS else swaps  # a null of few topics enumerates every swap
    outcomes: dict[tuple[int, int], list[tuple[bool, float]]] = {pair: [] for pair in wanted}
    graded_batches = []
    for first in range(0, settings.draws, DRAW_BATCH):
        batch = range(first, min(settings.draws, first + DRAW_BATCH))
        # a batch's gradings are drawn and scored when it is judged: most gates settle in the first few batches
        batch_grades = draw_grades(
            shares,
            discounts[batch.start : batch.stop][:, groups] * support,
            settings.seed,
            first=batch.start,
            likelihoods=likelihoods,
        )
        graded_batches.append(batch_grades)
        drawn = {
            (m, system): documents.lifts[worlds.measures[m].measure, system].drawn(pairs, batch_grades)
            for m in measures
            for system in systems
            if (worlds.measures[m].measure, system) in documents.lifts
        }
        for partner in partners:
            _judge_in_gradings(
                lean, worlds, gates, every, starts, partner, drawn, batch, family, segments or {}, store, outcomes
            )
        if all(
            verdict_settled(sum(passed for passed, _ in judged), len(judged), settings.confidence)
            for judged in outcomes.values()
        ):
            break
    grades = np.concatenate(graded_batches)
    grade_values = np.arange(top_grade + 1, dtype=float)
    means = priors @ grade_values
    spread = np.sqrt(np.maximum(priors @ grade_values**2 - means**2, 0.0))
    gradings = PlausibleGradings(tuple(pairs), 1.0 - priors[:, 0], spread, top_grade, settings.discount)
    position = {pair: k for k, pair in enumerate(pairs)}
    # the gates of a measure against one reference on the same topics weigh the same documents
    gate_documents: dict[tuple[int, tuple[str, ...], tuple[str, ...]], tuple[list[tuple[str, str]], np.ndarray]] = {}
    gate_lifted: dict[tuple[int, tuple[str, ...], tuple[str, ...]], LiftedColumns] = {}
    for m, g in wanted:
        measure, inputs = worlds.measures[m], gates[m][g]
        passed = np.array([outcome for outcome, _ in outcomes[m, g]])
        margins = np.array([margin for _, margin in outcomes[m, g]])
        key = (m, tuple(gate_systems(inputs)), inputs.topics)
        if key not in gate_documents:
            own = gate_pairs(measure.matrix, inputs, documents)
            gate_documents[key] = own, np.fromiter(map(position.__getitem__, own), dtype=np.int64, count=len(own))
        own, columns = gate_documents[key]
        weighed = Plausibility(
            draws=len(passed),
            passing=int(passed.sum()),
            seed=settings.seed,
            confidence=settings.confidence,
            discount=settings.discount,
            swaps=swaps,
            documents=len(own),
            relevant=float(gradings.relevance[columns].mean()) if len(own) else 0.0,
            judged_relevant=_judged_relevant(measure, inputs, documents, top_grade),
            predicted=None
            if predictions is None
            else Predicted(
                predictions.predicted(own),
                predictions.sample,
                predictions.agreement,
                predictions.kappa,
                predictions.trust,
            ),
        )
        if weighed.decided is None:  # how many judgments would settle it: only an undecided gate asks
            if key not in gate_lifted:
                gate_lifted[key] = lifted_columns(measure.matrix, inputs, documents, own)
            graded = grades[: len(margins)][:, columns]
            weighed = replace(
                weighed, settle=_settle(measure, inputs, gate_lifted[key], graded, margins, spread[columns], settings)
            )
        found[m][g] = weighed
    return found, gradings


def _priors(
    measures: Sequence[GatedMeasure],
    positions: Sequence[int],
    documents: UnjudgedDocuments,
    systems: Sequence[str],
    top_grade: int,
) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray, np.ndarray]:
    """Every unjudged document of the ``systems``' top d in the measures at ``positions``, sorted; each one's topic's
    grade shares (:func:`~pytest_bvtest.stats.plausible.grade_shares`, from the judged documents of the systems' top
    d at the deepest of those measures' depths); each one's group: which of the systems retrieve it in their top d
    (they share a pool-bias discount per grading, :func:`~pytest_bvtest.stats.plausible.draw_discounts`); and each
    one's support (:func:`~pytest_bvtest.stats.plausible.rank_support`): 1, or :data:`FAR_SUPPORT` for a document
    the other runs rank far below their top d (or not at all)."""
    lifted = {
        (measures[m].measure, system): documents.lifts[measures[m].measure, system]
        for m in positions
        for system in systems
        if (measures[m].measure, system) in documents.lifts
    }
    # each system's documents once (its measures of one depth share them)
    held_by: dict[str, set[tuple[str, str]]] = {}
    seen: set[tuple[str, int]] = set()
    for (_, system), lifts in lifted.items():
        if (system, id(lifts.documents)) not in seen:
            seen.add((system, id(lifts.documents)))
            held = held_by.setdefault(system, set())
            held.update((topic, docno) for topic, docnos in lifts.documents.items() for docno in docnos)
    pairs = sorted_pairs([lifts.documents for lifts in lifted.values()])
    deepest = max(lifts.optimistic.depth for lifts in lifted.values())
    counts: dict[str, np.ndarray] = {}
    for lifts in lifted.values():
        if lifts.optimistic.depth == deepest:
            for topic, count in lifts.judged_counts(top_grade + 1).items():
                counts[topic] = counts.get(topic, 0) + count
    topics = sorted(counts)
    row = {topic: j for j, topic in enumerate(topics)}
    shares = grade_shares(np.array([counts[topic] for topic in topics]).reshape(len(topics), top_grade + 1))
    # a group is the set of systems holding a document (one bit each), numbered as the sorted documents first show it
    holders = np.zeros(len(pairs), dtype=np.int64)
    for bit, held in enumerate(held_by.values()):
        holders |= np.fromiter(map(held.__contains__, pairs), dtype=bool, count=len(pairs)).astype(np.int64) << bit
    _, first, inverse = np.unique(holders, return_index=True, return_inverse=True)
    groups = np.argsort(np.argsort(first, kind="stable"), kind="stable")[inverse.reshape(-1)]
    rankers = {system: lifts for (_, system), lifts in lifted.items()}
    # rank support reads no rank below FAR_RANKS x d: those kept with the runs' documents, no run read again
    within = FAR_RANKS * deepest
    ranks = np.stack([lifts.ranks(pairs, within) for lifts in rankers.values()], axis=1)
    ranks = ranks.reshape(len(pairs), len(rankers))
    support = rank_support(ranks, deepest)
    return pairs, shares[[row[topic] for topic, _ in pairs]].reshape(len(pairs), top_grade + 1), groups, support


def _lean(spec: Spec) -> Spec:
    """The spec as a grading's gates are computed: no power (its draws are the verdict's, not a grading's) and no
    topics blamed (only the verdict counts), the nulls from :data:`DRAW_SWAPS` swaps."""
    analysis = spec.analysis
    calibration = analysis.calibration
    swaps = min(DRAW_SWAPS, calibration.swaps or DRAW_SWAPS)
    return replace(
        spec,
        analysis=replace(
            analysis,
            top_topics=0,
            power=replace(analysis.power, enabled=False),
            calibration=replace(
                calibration, swaps=swaps, plain_bound_swaps=min(swaps, calibration.plain_bound_swaps or swaps)
            ),
        ),
    )


def _judge_in_gradings(
    spec: Spec,
    worlds: CornerWorlds,
    gates: Sequence[Sequence[GateInputs]],
    every: Sequence[GateInputs],
    starts: Sequence[int],
    partner: str | None,
    drawn: Mapping[tuple[int, str], tuple[list[str], np.ndarray]],
    draws: range,
    family: bool,
    segments: Mapping[str, str],
    store: SwapStore | None,
    outcomes: dict[tuple[int, int], list[tuple[bool, float]]],
) -> None:
    """Judge the gates against ``partner`` under the gradings ``draws`` (``drawn``: the values under those gradings,
    the first of them in row 0): the candidate's and the partner's rows take the grading's values, each cornered gate
    against the partner is computed again (its null read with the others of a block of gradings, in one pass over the
    swaps), and the limits are set family-wise among the gates against the partner. Appends ``(passed, margin)`` per
    grading to ``outcomes`` for the gates it holds."""
    candidate = spec.candidate_name
    assert candidate is not None
    again = [
        (m, g)
        for m, (measure, flags) in enumerate(zip(worlds.measures, worlds.cornered))
        for g, (gate, flag) in enumerate(zip(measure.gates, flags))
        if flag and gate.reference == partner
    ]
    together = [position for position, inputs in enumerate(every) if inputs.gate.reference == partner]
    rows = [name for name in (candidate, partner) if name is not None]
    columns = {m: {topic: j for j, topic in enumerate(worlds.measures[m].topics)} for m in {m for m, _ in again}}
    # each drawn row's topics as columns of its matrix, found once for every grading
    placed = {
        (m, system): (np.array([columns[m][topic] for topic in topics], dtype=np.int64), values)
        for m in columns
        for system in rows
        if (m, system) in drawn
        for topics, values in [drawn[m, system]]
    }
    width = sum(len(worlds.measures[m].topics) for m, _ in again) * 8
    block = max(1, _BLOCK_CELLS // max(1, width))
    for first in range(draws.start, draws.stop, block):
        chunk = range(first, min(draws.stop, first + block))
        matrices = {}
        pending: dict[tuple[int, int, int], PendingNull] = {}
        for s in chunk:
            for m in columns:
                matrix = worlds.measures[m].matrix
                graded = {}
                for system in rows:
                    if (m, system) in placed:
                        at, values = placed[m, system]
                        graded[system] = matrix.row(system).copy()
                        graded[system][at] = values[s - draws.start]
                matrices[s, m] = matrix.with_rows(graded)
            for m, g in again:
                measure = worlds.measures[m]
                if measure.gates[g].false_alarm is None:
                    continue  # a plain bound's null only reports its rate: a grading's pass does not read it
                null = pending_gate_null(
                    spec, measure.gates[g], matrices[s, m], measure.settings, measure.matrix.index(candidate), segments
                )
                if null is not None:
                    pending[s, m, g] = null
        read_swaps(list(pending.values()), store, keep_products=False)  # a grading's columns are its own
        for s in chunk:
            graded = list(every)
            for m, g in again:
                measure = worlds.measures[m]
                pending_null = pending.get((s, m, g))
                judged_null = every[starts[m] + g].null
                gate_null = None if pending_null is None else pending_null.null()
                if gate_null is None and measure.gates[g].false_alarm is None and judged_null is not None:
                    gate_null = judged_null.distribution  # the judged null stands in for a rate nothing reads here
                graded[starts[m] + g] = gate_inputs(
                    spec,
                    measure.gates[g],
                    matrices[s, m],
                    measure.settings,
                    measure.matrix.index(candidate),
                    {},
                    None,
                    {},
                    segments,
                    drawn=gate_null,
                )
            limits = gate_limits([graded[position] for position in together], family)
            limit_of = dict(zip(together, limits))
            for m, g in again:
                if (m, g) in outcomes:
                    at = starts[m] + g
                    judged = judgement(graded[at], limit_of[at])
                    margin = judged.excess if not np.isnan(judged.excess) else np.inf
                    outcomes[m, g].append((judged.passed, float(margin)))


def _judged_relevant(measure: GatedMeasure, inputs: GateInputs, documents: UnjudgedDocuments, top_grade: int) -> float:
    """The share of the judged documents of the gate's candidate's and reference's top d, on its topics, that are
    relevant (graded above 0)."""
    topics = set(inputs.topics or measure.topics)
    systems = [inputs.system] + ([inputs.gate.reference] if inputs.gate.reference is not None else [])
    total = np.zeros(top_grade + 1)
    for system in systems:
        for topic, count in documents.lifts[measure.measure, system].judged_counts(top_grade + 1).items():
            if topic in topics:
                total += count
    return float(total[1:].sum() / total.sum()) if total.sum() else 0.0


def _settle(
    measure: GatedMeasure,
    inputs: GateInputs,
    lifted: LiftedColumns,
    grades: np.ndarray,
    margins: np.ndarray,
    spread: np.ndarray,
    settings: JudgmentSettings,
) -> int | None:
    """How many of the gate's unjudged documents (``lifted``: their columns graded g+), the most uncertain effect
    first, are expected to settle it (:func:`~pytest_bvtest.stats.plausible.judgments_to_settle`): each one's effect
    per grade is its judging leverage (:mod:`.leverage`, at the grade g+) over g+, signed as it moves the gate's
    margin."""
    if not lifted.pairs or not np.isfinite(margins).all():
        return None
    judged = measure.judgments
    assert judged is not None
    moves = gate_moves(measure.matrix, measure.settings, inputs, lifted)
    effects = (moves if inputs.upper else -moves) / judged.grade
    order = np.argsort(-np.abs(effects) * spread, kind="stable")
    return judgments_to_settle(grades, margins, effects, order, settings.confidence)
