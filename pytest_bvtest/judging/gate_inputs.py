"""What a gate is judged on, computed once per gate before any gate is decided (docs/mathematics.md §7).

:func:`gate_inputs` reads one gate of the spec on one measure's score matrix and returns its
:class:`GateInputs`: the candidate's value, the reference value its limit reads, the bootstrap
interval of a noise-aware gate, the null of "no change" and the topics that moved the statistic most
the wrong way. Nothing here decides: the limits are set from these inputs (:mod:`.limits`), then each
gate is decided once (:mod:`.decision`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_bvtest.errors import InputError, StatisticError
from pytest_bvtest.judging.judgments import MeasureJudgments
from pytest_bvtest.scoring.matrix import ScoreMatrix
from pytest_bvtest.spec.model import UPPER_BOUNDS, AnalysisSettings, GateSpec, Spec
from pytest_bvtest.stats.calibration import (
    PendingNull,
    SwapNull,
    default_swaps,
    engine_shifts,
    null_of_own_value,
    pending_null,
    swap_null,
)
from pytest_bvtest.stats.inference import BootstrapInterval, paired_bootstrap
from pytest_bvtest.stats.power import STACKED_RECALIBRATION_SWAPS, EngineNoise, PowerProblem
from pytest_bvtest.stats.registry import STATISTICS
from pytest_bvtest.stats.runs import run_shift

if TYPE_CHECKING:
    from pytest_bvtest.judging.variations import VariationMVE

#: A topic moving the statistic by less than this moved it by floating-point noise only.
NEGLIGIBLE = 1e-12


@dataclass(frozen=True)
class TopicImpact:
    """A topic that moved the gated statistic the wrong way: the scores and the topic's contribution.

    ``contribution`` is the topic's share of the change of the statistic (candidate minus the
    comparison; the candidate's own value when there is no comparison system), from
    :meth:`~pytest_bvtest.stats.registry.Statistic.topic_contributions`; ``None`` when the topics were
    ranked by their raw loss because the statistic has no per-topic split. ``unjudged`` and
    ``compared_unjudged`` count the unjudged documents of the candidate's and the comparison system's top d on
    the topic (docs/mathematics.md §10), where either top d holds one on any topic (``None`` otherwise), and
    ``candidate_optimistic`` is then the candidate's score there with its unjudged documents relevant (M+).
    """

    topic: str
    candidate: float
    compared: float
    text: str | None = None
    contribution: float | None = None
    unjudged: int | None = None
    compared_unjudged: int | None = None
    candidate_optimistic: float | None = None

    @property
    def delta(self) -> float:
        return self.candidate - self.compared


@dataclass(frozen=True)
class GateNull:
    """A gate's null of "no change" on the value's scale: ``distribution`` plus ``offset``.

    ``offset`` is the reference's value when the null is of ``S(candidate) - S(reference)``, 0 when it is of
    the candidate's own value; ``partner`` is the system the candidate's scores were swapped with, on ``topics``
    (every topic of the evaluation: a segment's gate reads its own among them, swap by swap).
    """

    distribution: SwapNull
    offset: float
    partner: str
    topics: tuple[str, ...]

    def limit_at(self, false_alarm: float) -> float:
        """The limit, on the value's scale, that ``false_alarm: false_alarm`` alone would give the gate."""
        return self.distribution.limit(false_alarm) + self.offset

    def rate_at(self, limit: float) -> float:
        """The false-alarm rate of ``limit`` (on the value's scale): the null's tail past it."""
        return self.distribution.false_alarm_rate(limit - self.offset)

    @property
    def typical(self) -> float:
        """What an equal-quality change typically gets, on the value's scale: the null's median (NaN in a NaN null).

        The anchor a value that already compares two systems is read against (TRisk with losses weighted: an
        equal-quality change scores below 0 too, so a negative TRisk alone is no loss)."""
        values = self.distribution.values  # sorted: its middle read directly (np.median sorted 10,000 gates' again)
        if not len(values) or np.isnan(values[-1]):
            return float("nan")
        return float((values[(len(values) - 1) // 2] + values[len(values) // 2]) / 2) + self.offset

    def share_as_bad(self, value: float) -> float:
        """How often an equal-quality change is at least as bad as ``value`` (on the value's scale): the gate's
        one-sided p-value under the null, ties included (NaN for a NaN value or null)."""
        null = self.distribution
        at = value - self.offset
        if np.isnan(at) or np.isnan(null.values).any():
            return float("nan")
        slack = NEGLIGIBLE * max(1.0, abs(at)) if np.isfinite(at) else 0.0
        if null.higher_is_better:
            as_bad = np.searchsorted(null.values, at + slack, side="right")
        else:
            as_bad = null.swaps - np.searchsorted(null.values, at - slack, side="left")
        return float(as_bad / null.swaps)


@dataclass(frozen=True)
class GateInputs:
    """Everything one gate is judged on, before anything is decided.

    ``reference`` is the system the gate is measured against (``None`` for an absolute bound on a
    statistic that reads no reference); ``reference_value`` is set when the limit reads it (a relative
    bound, or a null of differences). ``interval`` is the bootstrap interval of a noise-aware gate (of
    candidate - reference when the limit reads the reference). ``compared_value`` is the value of the system
    the topics are blamed against (the gate's reference, else the spec's), for the reports' delta. ``power`` holds
    the draws of a regression (docs/mathematics.md §9), measured once the limit is known; ``power_skipped`` says
    why there are none; ``aim_scale`` is the reference's mean score, of which a ``detect: N%`` aim is a share.
    ``converged`` is False for a value found by iteration whose fixed point was not reached (GAWM).
    """

    gate: GateSpec
    id: str
    measure: str
    system: str
    reference: str | None
    value: float
    reference_value: float | None
    compared_value: float | None
    interval: BootstrapInterval | None
    null: GateNull | None
    worst_topics: tuple[TopicImpact, ...]
    worst_against: str
    power: PowerProblem | None = None
    power_skipped: str | None = None
    aim_scale: float = 1.0
    #: The topics the gate judged: every evaluated topic, or its segment's.
    topics: tuple[str, ...] = ()
    converged: bool = True

    @property
    def statistic(self) -> str:
        return self.gate.statistic

    @property
    def higher_is_better(self) -> bool:
        return STATISTICS[self.gate.statistic].higher_is_better

    @property
    def upper(self) -> bool:
        """True when the value must stay at or below the limit (a cap), False when at or above it."""
        bound = self.gate.bound
        return bound.kind in UPPER_BOUNDS if bound is not None else not self.higher_is_better


def gate_id(spec_file: str, measure: str, gate: GateSpec) -> str:
    """``SPECFILE::MEASURE::GATE``, the gate's id in every report and its pytest node id."""
    return f"{spec_file}::{measure}::{gate.name}"


def relative_limit(gate: GateSpec) -> bool:
    """True when the gate's limit reads the reference's value: a relative bound, or a calibrated limit on a
    null of differences."""
    return (gate.bound is not None and gate.bound.kind in ("max_increase", "max_decrease")) or (
        gate.false_alarm is not None and not null_of_own_value(gate.statistic)
    )


def gate_inputs(
    spec: Spec,
    gate: GateSpec,
    matrix: ScoreMatrix,
    settings: AnalysisSettings,
    candidate: int,
    computed: Mapping[str, np.ndarray | None],
    variations: VariationMVE | None,
    texts: Mapping[str, str],
    segments: Mapping[str, str] | None = None,
    converged: bool = True,
    judged: MeasureJudgments | None = None,
    drawn: SwapNull | None = None,
    blamed_by: dict[tuple[str, int | None], tuple[TopicImpact, ...]] | None = None,
) -> GateInputs:
    """The inputs of one gate; ``computed`` holds the statistics already computed against the spec's reference,
    ``converged`` whether the statistic's fixed point was reached (GAWM), ``judged`` what was judged of every system
    at the measure's depth (docs/mathematics.md §10), when known, ``drawn`` the gate's null when it was drawn with
    the evaluation's other readers of the swaps (:func:`pending_gate_null`), ``blamed_by`` the topics the measure's
    gates have blamed so far, by statistic and compared system (gates that differ in their bounds alone blame the
    same topics: 10,000 gates took 2.4 s to blame them one by one), filled as gates are read.

    A gate on a segment (``segments``: each topic's, from the topic file) is a gate on the sub-matrix of the
    segment's topics, except for its null: each swap is drawn over every topic of ``matrix``, so the nulls of all
    segments share their swaps (docs/mathematics.md §7, "Gates per segment").
    """
    universe, universe_settings, columns = matrix, settings, None
    if gate.segment is not None:
        columns = segment_columns(spec, gate, matrix, segments or {})
        matrix, computed = matrix.restricted(columns), {}
        judged = None if judged is None else judged.restricted(columns)
        if settings.topic_weights is not None:
            settings = replace(settings, topic_weights=np.asarray(settings.topic_weights)[columns])
    statistic = STATISTICS[gate.statistic]
    reference = matrix.index(gate.reference) if gate.reference is not None else None
    relative = relative_limit(gate)
    resampled_against = reference if relative or statistic.needs_reference else None
    reusable = not statistic.needs_reference or gate.reference == spec.reference
    values = computed.get(gate.statistic) if reusable else None
    if values is None:
        try:
            values = np.asarray(statistic.compute(matrix.scores, reference, settings), dtype=float)
        except StatisticError as error:
            raise InputError(f"gate {gate.name}: {error}", path=spec.path, line=gate.line) from None
    # the topics are blamed against the gate's reference, else the spec's, else the virtual target
    blamed = (
        reference if reference is not None else (matrix.index(spec.reference) if spec.reference is not None else None)
    )
    compared, against = (
        (matrix.scores[blamed], matrix.systems[blamed])
        if blamed is not None
        else (matrix.scores.max(axis=0), "the virtual target")
    )
    power, skipped = _power_draws(spec, gate, matrix, settings, candidate, reference, variations)
    memo = blamed_by if gate.segment is None and blamed_by is not None else {}  # a segment's matrix is its own
    if (gate.statistic, blamed) not in memo:
        memo[gate.statistic, blamed] = _blamed_topics(
            matrix, gate.statistic, candidate, blamed, compared, settings, spec.analysis.top_topics, texts, judged
        )
    return GateInputs(
        gate=gate,
        id=gate_id(spec.path.name, matrix.measure, gate),
        measure=matrix.measure,
        system=matrix.systems[candidate],
        reference=gate.reference if relative or statistic.needs_reference else None,
        value=float(values[candidate]),
        reference_value=float(values[reference]) if reference is not None and relative else None,
        compared_value=None if blamed is None else float(values[blamed]),
        interval=_interval(spec, gate, matrix, settings, candidate, resampled_against, variations),
        null=_gate_null(spec, gate, universe, universe_settings, candidate, reference, values, columns, drawn),
        worst_topics=memo[gate.statistic, blamed],
        worst_against=str(against),
        power=power,
        power_skipped=skipped,
        aim_scale=float(matrix.scores[reference].mean()) if reference is not None else 1.0,
        converged=converged,
        topics=matrix.topics,
    )


def _power_draws(
    spec: Spec,
    gate: GateSpec,
    matrix: ScoreMatrix,
    settings: AnalysisSettings,
    candidate: int,
    reference: int | None,
    variations: VariationMVE | None,
) -> tuple[PowerProblem | None, str | None]:
    """The draws of a regression that measure the gate's power (docs/mathematics.md §9), swapping the candidate
    with the gate's reference; or why there are none (``None, None``: the spec leaves power out).

    Every supported measure's minimum is 0; a per-topic table's measure has none the project knows, and takes
    the lowest of 0 and its scores.
    """
    power = spec.analysis.power
    if not power.enabled:
        return None, None
    statistic = STATISTICS[gate.statistic]
    if statistic.from_simulation is not None:
        return None, "a statistic of the per-topic simulation: a drop in the scores does not reach it"
    if statistic.from_variations is not None and variations is not None:
        return None, "over query variations its value is not one of these per-topic scores"
    if reference == candidate:
        return None, "the gate's reference is the candidate"
    engine = None
    if reference is not None:
        arguments = _null_arguments(spec, gate, matrix, candidate, reference)
        runs = arguments["runs"]
        if runs is not None and runs[0].shape[0] * runs[1].shape[0] > 1:
            # a harmed candidate is a fresh run of the engine, and its null draws the shifts the gate's null drew
            shifts = engine_shifts(runs, default_swaps(gate.statistic, arguments["swaps"]), arguments["seed"])
            engine = EngineNoise(run_shift(*runs), shifts)
    try:
        problem = PowerProblem(
            matrix.scores,
            gate.statistic,
            candidate,
            reference,
            settings,
            minimum=min(0.0, float(matrix.scores.min())),
            draws=power.draws,
            seed=power.seed,
            engine=engine,
        )
    except StatisticError as error:
        return None, str(error)
    # a calibrated limit is recalibrated on every harmed draw: without a sum form, a stack per draw and swap
    recalibrated = STACKED_RECALIBRATION_SWAPS if gate.false_alarm is not None and reference is not None else 1
    if power.stacked_cells is not None and problem.stacked_cells * recalibrated > power.stacked_cells:
        swaps = f", each judged on {recalibrated:,} swaps of its own null," if recalibrated > 1 else ""
        return None, (
            f"{statistic.label} has no sum form over topics, and {power.draws:,} draws of {problem.topics:,} topics"
            f"{swaps} would take seconds here; bvtest calibrate measures it"
        )
    return problem, None


def segment_columns(spec: Spec, gate: GateSpec, matrix: ScoreMatrix, segments: Mapping[str, str]) -> list[int]:
    """The columns of ``matrix`` whose topics are in the gate's segment; none is an error at the gate's line."""
    columns = [j for j, topic in enumerate(matrix.topics) if segments.get(topic) == gate.segment]
    if not columns:
        raise InputError(
            f"gate {gate.name}: segment {gate.segment!r} has no evaluated topic (its topics are not in the qrels)",
            path=spec.path,
            line=gate.line,
            hint="check the topic file's segment column against the qrels' topics",
        )
    return columns


def _interval(
    spec: Spec,
    gate: GateSpec,
    matrix: ScoreMatrix,
    settings: AnalysisSettings,
    candidate: int,
    reference: int | None,
    variations: VariationMVE | None,
) -> BootstrapInterval | None:
    """The bootstrap interval of a noise-aware gate (``confidence``): of the value, or of candidate - reference
    when ``reference`` is given (the limit reads it, or the statistic is measured against it); over query
    variations for a statistic computed from them."""
    if gate.confidence is None:
        return None
    statistic = STATISTICS[gate.statistic]
    if statistic.from_variations is not None and variations is not None:
        result = variations.bootstrap(matrix.measure, candidate, reference, spec, gate.confidence)
    else:
        result = paired_bootstrap(
            matrix.scores,
            gate.statistic,
            candidate,
            reference,
            settings,
            resamples=spec.analysis.bootstrap.resamples,
            confidence=gate.confidence,
            seed=spec.analysis.bootstrap.seed,
        )
    return result


def pending_gate_null(
    spec: Spec,
    gate: GateSpec,
    matrix: ScoreMatrix,
    settings: AnalysisSettings,
    candidate: int,
    segments: Mapping[str, str] | None = None,
) -> PendingNull | None:
    """The null :func:`gate_inputs` gives the gate (the same arguments), to be drawn with the evaluation's other
    readers of the swaps (:func:`~pytest_bvtest.stats.swaps.read_swaps`) and handed to it as ``drawn``; ``None``
    for a gate without a null, or one that cannot be drawn: :func:`gate_inputs` then says why, at the gate's line."""
    reference = matrix.index(gate.reference) if gate.reference is not None else None
    if reference is None or reference == candidate:
        return None
    try:
        columns = segment_columns(spec, gate, matrix, segments or {}) if gate.segment is not None else None
        return pending_null(
            matrix.scores,
            gate.statistic,
            candidate,
            reference,
            settings,
            columns=columns,
            **_null_arguments(spec, gate, matrix, candidate, reference),
        )
    except (InputError, StatisticError):
        return None


def _null_arguments(spec: Spec, gate: GateSpec, matrix: ScoreMatrix, candidate: int, reference: int) -> dict[str, Any]:
    """How the gate's null is drawn: its swaps, their seed, and the runs of a system given as several."""
    calibration = spec.analysis.calibration
    swaps = calibration.swaps
    if swaps is None and gate.false_alarm is None:
        swaps = calibration.plain_bound_swaps  # a reported rate, not a limit: fewer swaps suffice
    names = (matrix.systems[candidate], matrix.systems[reference])
    # a system given as several runs: each swap draws which run stands for it (docs/mathematics.md §7)
    runs = tuple(matrix.run_scores(name) for name in names) if any(name in matrix.runs for name in names) else None
    return {"swaps": swaps, "seed": calibration.seed, "runs": runs}


def _gate_null(
    spec: Spec,
    gate: GateSpec,
    matrix: ScoreMatrix,
    settings: AnalysisSettings,
    candidate: int,
    reference: int | None,
    values: np.ndarray,
    columns: list[int] | None = None,
    drawn: SwapNull | None = None,
) -> GateNull | None:
    """The gate's null of no change (docs/mathematics.md §7), on the value's scale; on the topics at ``columns``
    (a segment's) with the swaps drawn over all of ``matrix``'s; ``drawn`` when it was drawn already.

    Every gate with a reference gets one, so that plain bounds report their false-alarm rate too.
    """
    if reference is None or reference == candidate:
        return None
    null = drawn
    if null is None:
        try:
            null = swap_null(
                matrix.scores,
                gate.statistic,
                candidate,
                reference,
                settings,
                columns=columns,
                **_null_arguments(spec, gate, matrix, candidate, reference),
            )
        except StatisticError as error:
            raise InputError(
                f"gate {gate.name}: the null of no change: {error}", path=spec.path, line=gate.line
            ) from None
    return GateNull(
        null, 0.0 if null.own_value else float(values[reference]), matrix.systems[reference], tuple(matrix.topics)
    )


def _blamed_topics(
    matrix: ScoreMatrix,
    statistic: str,
    candidate: int,
    reference: int | None,
    compared: np.ndarray,
    settings: AnalysisSettings,
    count: int,
    texts: Mapping[str, str],
    judged: MeasureJudgments | None = None,
) -> tuple[TopicImpact, ...]:
    """The ``count`` topics that moved the gated statistic most the wrong way, worst first.

    A topic's contribution is its share of the change of the statistic from the comparison system to
    the candidate (:meth:`~pytest_bvtest.stats.registry.Statistic.topic_contributions`); only topics
    that moved it in the bad direction are listed. A statistic without a per-topic split (grouped
    bias-variance) falls back on the raw per-topic loss against ``compared``.
    """
    if count == 0:  # none asked for (a plausible grading's gates: only their verdicts count)
        return ()
    definition = STATISTICS[statistic]
    try:
        contributions = definition.topic_contributions(matrix.scores, candidate, reference, settings)
    except StatisticError:
        contributions = None
    if contributions is None:
        badness, shares = compared - matrix.scores[candidate], None
    else:
        badness, shares = (-contributions if definition.higher_is_better else contributions), contributions
    order = np.argsort(-badness, kind="stable")[:count]
    rows = [candidate] + ([reference] if reference is not None else [])
    # only where the candidate's or the comparison's top d holds unjudged documents (where the gate has corners)
    unjudged = judged.unjudged if judged is not None and judged.unjudged[rows].any() else None
    optimistic = judged.optimistic if unjudged is not None else None  # type: ignore[union-attr]
    return tuple(
        TopicImpact(
            matrix.topics[j],
            float(matrix.scores[candidate, j]),
            float(compared[j]),
            texts.get(matrix.topics[j]),
            None if shares is None else float(shares[j]),
            None if unjudged is None else int(unjudged[candidate, j]),
            None if unjudged is None or reference is None else int(unjudged[reference, j]),
            None if optimistic is None else float(optimistic[candidate, j]),
        )
        for j in order
        if badness[j] > NEGLIGIBLE
    )
