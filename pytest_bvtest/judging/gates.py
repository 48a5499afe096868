"""Regression gates (docs/mathematics.md §7): a statistic of the candidate against a bound.

A bound is absolute (``max``/``min`` on the candidate's value) or relative to a reference system
(``max_increase`` for statistics where lower is better, ``max_decrease`` where higher is better),
written as a number or as ``N%`` of the reference's value. A noise-aware gate (``confidence``) fails
only when the whole bootstrap interval is past the bound; when only the point estimate is, it passes
with a warning, like Anserini's ``[OK*]``.

A calibrated gate (``false_alarm: P``) takes as its limit the ``P``-quantile, on the bad side, of the
null of "no change" (:mod:`pytest_bvtest.stats.calibration`); with a bound as well it fails only
when both limits are crossed. Every gate whose null could be drawn reports the false-alarm rate of
its effective limit. A NaN value or limit is never a pass (docs/mathematics.md §7, "Non-finite values").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from pytest_bvtest.errors import InputError, StatisticError
from pytest_bvtest.judging.guards import Guard
from pytest_bvtest.scoring.matrix import ScoreMatrix
from pytest_bvtest.spec.model import AnalysisSettings, Bound, GateSpec, Spec
from pytest_bvtest.stats.calibration import FamilyLevel, SwapNull, family_level, null_of_own_value, swap_null
from pytest_bvtest.stats.inference import paired_bootstrap
from pytest_bvtest.stats.registry import STATISTICS

if TYPE_CHECKING:
    from pytest_bvtest.judging.variations import VariationMVE

# A value this close to its limit counts as on it: floating-point noise must not flip a gate.
_TOLERANCE = 1e-12


@dataclass(frozen=True)
class TopicImpact:
    """A topic that moved the gated statistic the wrong way: the scores and the topic's contribution.

    ``contribution`` is the topic's share of the change of the statistic (candidate minus the
    comparison; the candidate's own value when there is no comparison system), from
    :meth:`~pytest_bvtest.stats.registry.Statistic.topic_contributions`; ``None`` when the topics were
    ranked by their raw loss because the statistic has no per-topic split.
    """

    topic: str
    candidate: float
    compared: float
    text: str | None = None
    contribution: float | None = None

    @property
    def delta(self) -> float:
        return self.candidate - self.compared


@dataclass(frozen=True)
class JointFalseAlarm:
    """How often an equal-quality change fails at least one of the gates that share a gate's swaps.

    ``gates`` are the ids of every gate whose null swaps the same topics with the same reference under
    the same seed (:func:`swap_key`), this one included; ``rate`` is the share of the ``swaps`` they share
    on which at least one of them fails at its effective limit (:func:`joint_false_alarm_rate`,
    docs/mathematics.md §7): the false-alarm rate of the CI check these gates make together.
    """

    gates: tuple[str, ...]
    rate: float
    swaps: int


@dataclass(frozen=True)
class NullSummary:
    """How a gate's null of "no change" was drawn and what it says of the gate's limit.

    ``requested`` is the gate's ``false_alarm`` (``None`` for a plain bound), ``calibrated_limit``
    the limit it gives on the value's scale, ``rate`` the false-alarm rate of the gate's effective
    limit; ``swaps`` swaps with ``reference``, all ``2**n`` when ``exact``, else drawn with ``seed``;
    ``distribution`` plus ``offset`` is the null on the value's scale. ``family`` is set when the
    calibrated limit was chosen with the spec's other calibrated gates, so that together they fail an
    equal change at most ``requested`` of the time (``analysis.calibration.family``); ``None`` when the
    gate was calibrated on its own. ``together`` is set when other gates share the gate's swaps: how often
    an equal change fails at least one of them (in both modes).
    """

    requested: float | None
    calibrated_limit: float | None
    rate: float
    swaps: int
    exact: bool
    seed: int
    reference: str
    distribution: SwapNull = field(repr=False, compare=False)
    offset: float = 0.0
    family: FamilyLevel | None = field(default=None, repr=False)
    together: JointFalseAlarm | None = None

    def limit_at(self, false_alarm: float) -> float:
        """The limit, on the value's scale, that ``false_alarm: false_alarm`` would give this gate."""
        return self.distribution.limit(false_alarm) + self.offset

    def describe(self) -> str:
        """``false-alarm rate 4.9% (10,000 swaps with production, seed 0)``; when other gates share the swaps,
        how often they fail together: ``false-alarm rate 1.33% (family-wise limit); 4.99% for the 5 gates
        together (...)``."""
        drawn = (
            f"all {self.swaps:,} swaps with {self.reference}"
            if self.exact
            else (f"{self.swaps:,} swaps with {self.reference}, seed {self.seed}")
        )
        together = (
            ""
            if self.together is None
            else f"; {_percent(self.together.rate)} for the {len(self.together.gates)} gates together"
        )
        family = "" if self.family is None else " (family-wise limit)"
        return f"false-alarm rate {_percent(self.rate)}{family}{together} ({drawn})"


def _percent(rate: float) -> str:
    return "undefined" if math.isnan(rate) else f"{rate * 100:.3g}%"


@dataclass(frozen=True)
class GateOutcome:
    """The verdict of one gate on one measure, with everything a report or a message needs.

    ``limit`` is the effective limit (``upper``: the value must stay at or below it); ``bound`` is
    ``None`` for a gate limited by its false-alarm rate alone; ``null`` says how the null of no
    change was drawn and the false-alarm rate of ``limit``.
    """

    id: str
    statistic: str
    label: str
    measure: str
    system: str
    reference: str | None
    value: float
    reference_value: float | None
    bound: Bound | None
    limit: float
    excess: float
    interval: tuple[float, float] | None
    confidence: float | None
    seed: int | None
    passed: bool
    warning: str | None
    worst_topics: tuple[TopicImpact, ...]
    worst_against: str
    message: str
    null: NullSummary | None = None
    upper: bool = True
    guards: tuple[str, ...] = ()
    compared_value: float | None = None
    spec_line: int | None = None
    sentence: str = ""
    gate: GateSpec | None = field(default=None, compare=False, repr=False)

    @property
    def higher_is_better(self) -> bool:
        return STATISTICS[self.statistic].higher_is_better

    @property
    def delta(self) -> float | None:
        """Candidate minus the comparison system on the gated statistic; ``None`` without one."""
        compared = self.reference_value if self.reference_value is not None else self.compared_value
        return None if compared is None else self.value - compared

    @property
    def rule(self) -> str:
        """The gate's limit as the spec wrote it: ``max_increase 5%``, ``false_alarm 5%``, or both."""
        calibrated = (
            None if self.null is None or self.null.requested is None else f"false_alarm {_percent(self.null.requested)}"
        )
        return " + ".join(text for text in (None if self.bound is None else str(self.bound), calibrated) if text)

    @property
    def false_alarm_rate(self) -> float | None:
        """The null's tail probability at the effective limit; ``None`` when no null was drawn."""
        return None if self.null is None else self.null.rate

    @property
    def outcome(self) -> str:
        """``OK``, ``OK*`` (passed within noise, or a guard warns not to trust the pass) or ``FAIL``."""
        if not self.passed:
            return "FAIL"
        return "OK*" if self.warning or self.guards else "OK"


def limit_and_excess(bound: Bound, value: float, reference_value: float | None) -> tuple[float, float]:
    """The limit the candidate's value must respect, and by how much the value is past it.

    ``excess > 0`` means the bound is violated; ``excess <= 0`` is the remaining headroom.
    """
    if bound.kind == "max":
        return bound.amount, value - bound.amount
    if bound.kind == "min":
        return bound.amount, bound.amount - value
    assert reference_value is not None, "relative bounds need a reference value"
    allowed = bound.amount * abs(reference_value) if bound.relative else bound.amount
    if bound.kind == "max_increase":
        limit = reference_value + allowed
        return limit, value - limit
    limit = reference_value - allowed
    return limit, limit - value


def _interval_excess(bound: Bound, interval: tuple[float, float], reference_value: float | None) -> tuple[float, float]:
    """The excess at both ends of a bootstrap interval.

    For absolute bounds the interval is of the candidate's value; for relative bounds it is of
    (candidate - reference), and the limit is placed relative to the reference's point value.
    """
    low, high = interval
    if bound.kind in ("max", "min"):
        ends = [limit_and_excess(bound, end, None)[1] for end in (low, high)]
    else:
        assert reference_value is not None
        ends = [limit_and_excess(bound, reference_value + end, reference_value)[1] for end in (low, high)]
    return min(ends), max(ends)


def _excess(value: float, limit: float, upper: bool) -> float:
    """How far ``value`` is past ``limit`` (> 0 violates); equal infinities are on the limit, not NaN."""
    if value == limit:
        return 0.0
    return value - limit if upper else limit - value


def _undefined(
    label: str, system: str, value: float, reference: str | None, reference_value: float | None, null: SwapNull | None
) -> str | None:
    """Why a gate cannot be decided, or ``None``: which number is NaN (docs/mathematics.md §7, never a pass)."""
    if math.isnan(value):
        return f"{system}'s {label} is NaN: the statistic is undefined on these per-topic scores"
    if reference_value is not None and math.isnan(reference_value):
        return f"{reference}'s {label} is NaN, so the limit relative to it is undefined"
    if null is not None and math.isnan(null.values[-1]):  # sorted: a NaN is last
        return f"{label} is NaN on some swaps of the null of no change, so the calibrated limit is undefined"
    return None


def judge(
    *,
    gate_id: str,
    statistic: str,
    label: str,
    measure: str,
    system: str,
    reference: str | None,
    value: float,
    reference_value: float | None,
    bound: Bound | None,
    higher_is_better: bool | None = None,
    interval: tuple[float, float] | None = None,
    confidence: float | None = None,
    seed: int | None = None,
    worst_topics: Sequence[TopicImpact] = (),
    worst_against: str = "",
    null: SwapNull | None = None,
    null_offset: float = 0.0,
    null_reference: str | None = None,
    false_alarm: float | None = None,
    compared_value: float | None = None,
    spec_line: int | None = None,
    family: FamilyLevel | None = None,
    gate: GateSpec | None = None,
) -> GateOutcome:
    """Decide a gate and write its message.

    ``null`` (with ``null_reference`` its swap partner, by default ``reference``; a gate whose limit reads
    no reference value, an absolute bound or a calibrated ZRisk, has no ``reference`` but still a
    partner) is the gate's null of no change; its values plus
    ``null_offset`` (the reference's value when the null is of a difference) are on the value's
    scale. ``higher_is_better`` (needed without a bound) says which side is bad. ``false_alarm`` turns
    its quantile into the gate's limit (needs ``null``); with a
    ``bound`` too, the effective limit is the more lenient of the two, so the gate fails only when
    both are crossed. A NaN value or limit fails, saying which statistic is undefined. ``family``
    replaces ``false_alarm``'s own quantile by the family's per-gate count (:func:`with_family`).
    """
    if false_alarm is not None and null is None:
        raise ValueError("a calibrated gate needs its null distribution")
    if bound is None and (false_alarm is None or higher_is_better is None):
        raise ValueError("a gate needs a bound, or a false-alarm rate and the statistic's direction")
    upper = bound.kind in ("max", "max_increase") if bound is not None else not higher_is_better
    limits = []
    if bound is not None:
        limits.append(limit_and_excess(bound, value, reference_value)[0])
    calibrated_limit = None
    if false_alarm is not None:
        assert null is not None
        calibrated_limit = (null.limit(false_alarm) if family is None else null.limit_past(family.count)) + null_offset
    if calibrated_limit is not None:
        limits.append(calibrated_limit)
    limit = float("nan") if any(math.isnan(each) for each in limits) else (max(limits) if upper else min(limits))
    undefined = _undefined(label, system, value, reference, reference_value, null if false_alarm is not None else None)
    if undefined is None and math.isnan(limit):
        undefined = f"the limit of {label} is NaN"
    summary = None
    if null is not None:
        rate = null.false_alarm_rate(limit - null_offset)
        summary = NullSummary(
            false_alarm,
            calibrated_limit,
            rate,
            null.swaps,
            null.exact,
            null.seed,
            str(null_reference if null_reference is not None else reference),
            null,
            null_offset,
            family,
        )
    excess = float("nan") if undefined else _excess(value, limit, upper)
    point_fails = undefined is not None or excess > _TOLERANCE
    cannot_fail = ()
    # a calibrated limit that no swap crosses fails nothing: a pass there is no evidence (OK*, never OK)
    if calibrated_limit is not None and not point_fails and null.false_alarm_rate(calibrated_limit - null_offset) == 0:
        cannot_fail = (_too_coarse(label, null, str(reference), false_alarm, family),)  # type: ignore[arg-type]
    warning = None
    passed = not point_fails
    if interval is not None and point_fails and undefined is None and bound is not None:
        lowest_excess, _ = _interval_excess(bound, interval, reference_value)
        if lowest_excess <= _TOLERANCE:
            passed = True
            warning = (
                f"point estimate past the bound by {excess:.4g}, but the {confidence:.0%} interval "
                f"[{interval[0]:.4g}, {interval[1]:.4g}] reaches the safe side: within noise (OK*)"
            )
    outcome = GateOutcome(
        id=gate_id,
        statistic=statistic,
        label=label,
        measure=measure,
        system=system,
        reference=reference,
        value=value,
        reference_value=reference_value,
        bound=bound,
        limit=limit,
        excess=excess,
        interval=interval,
        confidence=confidence,
        seed=seed,
        passed=passed,
        warning=warning,
        worst_topics=tuple(worst_topics),
        worst_against=worst_against,
        message="",
        null=summary,
        upper=upper,
        compared_value=compared_value,
        spec_line=spec_line,
        guards=cannot_fail,
        gate=gate,
    )
    return _with_message(replace(outcome, sentence=plain_sentence(outcome, undefined)), undefined)


def _too_coarse(label: str, null: SwapNull, reference: str, false_alarm: float, family: FamilyLevel | None) -> str:
    """Why a calibrated limit that no swap crosses cannot fail: the null is too coarse for the rate asked.

    With ``2**n`` swaps for few topics, or few topics where the two systems differ, the null's most
    extreme value holds more than ``P`` of the swaps; the ``P``-quantile is then that extreme, which no
    equal change crosses, and neither does a worse one that sits on it (docs/mathematics.md §7).
    """
    smallest = null.smallest_rate()
    if smallest == 1.0:
        return (
            f"every swap with {reference} gives the same {label}: the two systems do not differ where it "
            f"looks (no change), so no calibrated limit can fail"
        )
    level = (
        f"false_alarm {_percent(false_alarm)}"
        if family is None
        else (f"the family's per-gate level {_percent(family.level)}")
    )
    drawn = f"all {null.swaps:,} swaps" if null.exact else f"{null.swaps:,} swaps"
    return (
        f"the null of no change is too coarse for {level}: its most extreme {label} already holds "
        f"{_percent(smallest)} of {drawn} with {reference} (too few topics, or too few that differ), so the "
        f"limit sits on it and this gate cannot fail; add topics, or raise false_alarm to at least "
        f"{_percent(smallest)}"
    )


def short_number(value: float, other: float | None = None) -> str:
    """``value`` with 3 significant digits, more (up to 6) when needed to tell it from ``other``."""
    for digits in range(3, 7):
        text = f"{value:.{digits}g}"
        if other is None or text != f"{other:.{digits}g}":
            return text
    return text


def plain_sentence(outcome: GateOutcome, undefined: str | None = None) -> str:
    """One sentence for a reader who never heard of the statistic: what the gate protects, what happened.

    The wording is the statistic's own (:class:`~pytest_bvtest.stats.registry.Wording`), e.g.
    "Quality varies more from query to query or sits further below the best achievable than in
    production (Bias²+Var 0.0879 vs 0.0774, limit 0.0812)."
    """
    statistic = STATISTICS[outcome.statistic]
    wording = statistic.wording
    assert wording is not None, f"{outcome.statistic} has no wording"
    reference = outcome.reference or "the reference"
    if undefined is not None:
        return f"{statistic.label} cannot be judged: {undefined}; a gate never passes on NaN."
    numbers = f"{statistic.label} {short_number(outcome.value, outcome.limit)}"
    if outcome.reference_value is not None:
        numbers += f" vs {short_number(outcome.reference_value, outcome.limit)}"
    numbers += f", limit {short_number(outcome.limit, outcome.value)}"
    if outcome.null is not None:
        numbers += f" at a {_percent(outcome.null.rate)} false-alarm rate"
    than = f" than in {outcome.reference}" if outcome.reference_value is not None else " than allowed"
    worse = wording.worse.replace("the reference", reference) + than
    if outcome.passed and outcome.guards and not outcome.warning:
        # the warnings themselves follow the sentence (terminal) or head the report (Markdown): point to them
        why = "a warning says why" if len(outcome.guards) == 1 else f"{len(outcome.guards)} warnings say why"
        return f"Holds on paper, but do not trust it: {why} ({numbers})."
    if outcome.passed and not outcome.warning:
        return f"Holds: {wording.protects.replace('the reference', reference)} ({numbers})."
    if outcome.passed:
        return f"Within noise: {worse} ({numbers}), but the {outcome.confidence:.0%} interval reaches the safe side."
    beyond = f"; the whole {outcome.confidence:.0%} interval is past the limit" if outcome.interval is not None else ""
    return f"{worse} ({numbers}{beyond})."


def with_family(outcome: GateOutcome, null: SwapNull, family: FamilyLevel) -> GateOutcome:
    """A calibrated gate judged again at its family's per-gate level (before its guards are applied).

    ``null`` is the gate's null as the family saw it (its first ``family.swaps`` swaps).
    """
    summary = outcome.null
    assert summary is not None and summary.requested is not None, "only a calibrated gate joins a family"
    return judge(
        gate_id=outcome.id,
        statistic=outcome.statistic,
        label=outcome.label,
        measure=outcome.measure,
        system=outcome.system,
        reference=outcome.reference,
        value=outcome.value,
        reference_value=outcome.reference_value,
        bound=outcome.bound,
        higher_is_better=outcome.higher_is_better,
        worst_topics=outcome.worst_topics,
        worst_against=outcome.worst_against,
        null=null,
        null_offset=summary.offset,
        null_reference=summary.reference,
        false_alarm=summary.requested,
        compared_value=outcome.compared_value,
        spec_line=outcome.spec_line,
        family=family,
        gate=outcome.gate,
    )


def swap_key(outcome: GateOutcome, topics: tuple[str, ...]) -> tuple[object, ...] | None:
    """What a gate's null shares with other gates' nulls, or ``None`` when it has none to share.

    Gates whose nulls swap the same topics with the same reference under the same seed see the same
    swaps, swap for swap (a Monte-Carlo draw of fewer swaps is the start of a longer one). A null with
    a NaN gives no limit (the gate fails on its own).
    """
    null = outcome.null
    if null is None or null.distribution.by_swap is None or np.isnan(null.distribution.by_swap).any():
        return None
    return topics, null.reference, null.exact, null.seed


def family_key(outcome: GateOutcome, topics: tuple[str, ...]) -> tuple[object, ...] | None:
    """What a calibrated gate shares with the rest of its family, or ``None``: its swaps (:func:`swap_key`) and
    its ``false_alarm``, as gates that ask for different rates form one family per rate (docs/mathematics.md §7)."""
    key = swap_key(outcome, topics)
    if key is None or outcome.null is None or outcome.null.requested is None:
        return None
    return (*key, outcome.null.requested)


def joint_false_alarm_rate(outcomes: Sequence[GateOutcome]) -> float:
    """How often an equal change fails at least one of ``outcomes`` at their effective limits.

    The gates must share their swaps (one :func:`swap_key`): the share of the swaps they share on which
    at least one null value lies strictly past its gate's limit (docs/mathematics.md §7).
    """
    summaries = [outcome.null for outcome in outcomes]
    shared = min(summary.swaps for summary in summaries)  # type: ignore[union-attr]
    failing = np.zeros(shared, dtype=bool)
    for outcome, summary in zip(outcomes, summaries):
        values = summary.distribution.by_swap[:shared]  # type: ignore[union-attr,index]
        limit = outcome.limit - summary.offset  # type: ignore[union-attr]
        slack = _TOLERANCE * max(1.0, abs(limit)) if math.isfinite(limit) else 0.0
        failing |= values > limit + slack if outcome.upper else values < limit - slack
    return float(failing.mean())


def with_together(outcome: GateOutcome, together: JointFalseAlarm) -> GateOutcome:
    """``outcome`` with how often an equal change fails at least one of the gates that share its swaps; its
    headline says it after the gate's own false-alarm rate."""
    summary = outcome.null
    assert summary is not None, "only a gate with a null of no change shares its swaps"
    joined = replace(summary, together=together)
    message = outcome.message.replace(summary.describe(), joined.describe(), 1)
    return replace(outcome, null=joined, message=message)


def calibrate_family(outcomes: Sequence[GateOutcome]) -> tuple[GateOutcome, ...]:
    """The calibrated gates of one family (one :func:`family_key`) judged again together.

    docs/mathematics.md §7, family-wise limits (:func:`~pytest_bvtest.stats.calibration.family_level`):
    each gate's limit lets at most the same count of the shared swaps past it, the largest count at
    which the gates together fail at most their ``false_alarm`` share of the swaps.
    """
    nulls = [outcome.null.distribution for outcome in outcomes]  # type: ignore[union-attr]
    shared = min(null.swaps for null in nulls)
    nulls = [null.first(shared) for null in nulls]
    rate = outcomes[0].null.requested  # type: ignore[union-attr]
    family = family_level(np.array([null.by_swap for null in nulls]), [null.higher_is_better for null in nulls], rate)
    return tuple(with_family(outcome, null, family) for outcome, null in zip(outcomes, nulls))


def with_guards(outcome: GateOutcome, guards: Sequence[Guard]) -> GateOutcome:
    """``outcome`` with the warnings of the guards that concern it: a pass becomes ``OK*``."""
    messages = tuple(guard.message for guard in guards if guard.concerns(outcome.statistic, outcome.reference))
    if not messages:
        return outcome
    guarded = replace(outcome, guards=(*messages, *outcome.guards))  # the measure's guards say more
    guarded = replace(guarded, sentence=plain_sentence(guarded))
    lines = outcome.message.split("\n")
    lines[1] = f"  {guarded.sentence}"
    if outcome.passed:  # a gate never passes on NaN, so nothing is undefined here
        lines[0] = _headline(guarded, None)
    return replace(guarded, message="\n".join([*lines, *(f"  warning: {message}" for message in messages)]))


def _with_message(outcome: GateOutcome, undefined: str | None) -> GateOutcome:
    lines = [_headline(outcome, undefined), f"  {outcome.sentence}"]
    if outcome.interval is not None:
        low, high = outcome.interval
        what = "candidate - reference" if outcome.bound.kind in ("max_increase", "max_decrease") else "value"
        lines.append(
            f"  {outcome.confidence:.0%} bootstrap interval of {what}: [{low:.6g}, {high:.6g}] (seed {outcome.seed})"
        )
    if outcome.warning:
        lines.append(f"  warning: {outcome.warning}")
    lines += [f"  warning: {message}" for message in outcome.guards]
    if outcome.worst_topics and (not outcome.passed or outcome.warning or outcome.guards):
        lines.append(f"  {blame_title(outcome.label, outcome.worst_topics, outcome.worst_against, outcome.statistic)}:")
        for impact in outcome.worst_topics:
            about = f" ({impact.text})" if impact.text else ""
            share = "" if impact.contribution is None else f"; moves {outcome.label} by {impact.contribution:+.4g}"
            lines.append(
                f"    {impact.topic}{about}: {impact.candidate:.4f} vs {impact.compared:.4f} "
                f"({impact.delta:+.4f}{share})"
            )
    return replace(outcome, message="\n".join(lines))


def blame_title(label: str, impacts: Sequence[TopicImpact], against: str, statistic: str = "") -> str:
    """What the list of blamed topics is: by contribution to the statistic, or by raw loss. A simulation
    statistic's topics show its per-topic terms (docs/mathematics.md §3e), not scores."""
    if impacts and impacts[0].contribution is None:
        return f"topics that lost most against {against} ({label} has no per-topic split)"
    if statistic in STATISTICS and STATISTICS[statistic].from_simulation is not None:
        return f"topics whose per-topic {label} grew most (per-topic terms vs {against})"
    return f"topics that moved {label} most the wrong way (scores vs {against})"


def _headline(outcome: GateOutcome, undefined: str | None) -> str:
    verdict = (
        "FAILED"
        if not outcome.passed
        else ("passed within noise" if outcome.warning else "passed with a warning" if outcome.guards else "passed")
    )
    versus = ""
    if outcome.reference is not None:
        versus = (
            f" against {outcome.reference}"
            if outcome.reference_value is None
            else f" vs {outcome.reference} {outcome.reference_value:.6g}"
        )
    if undefined is not None:
        return f"{outcome.measure} {outcome.label} {verdict}: undefined: {undefined}; a gate never passes on NaN"
    relation = "<=" if outcome.upper else ">="
    # up to _TOLERANCE past the limit is rounding, and the gate passes: its headroom is 0, not "past the limit by
    # 5.55e-17" (a pass within noise is past it for real); max(0.0, -excess): never "-0"
    past = outcome.excess > _TOLERANCE or (outcome.excess > 0 and not outcome.passed)
    margin = f"past the limit by {outcome.excess:.6g}" if past else f"headroom {max(0.0, -outcome.excess):.6g}"
    rule = f"bound {outcome.rule}" if outcome.bound is not None else outcome.rule
    calibration = f"; {outcome.null.describe()}" if outcome.null is not None else ""
    return (
        f"{outcome.measure} {outcome.label} {verdict}: {outcome.system} {outcome.value:.6g}{versus}; "
        f"{rule} requires {relation} {outcome.limit:.6g}; {margin}{calibration}"
    )


# A topic moving the statistic by less than this moved it by floating-point noise only.
_NEGLIGIBLE = 1e-12


def _blamed_topics(
    matrix: ScoreMatrix,
    statistic: str,
    candidate: int,
    reference: int | None,
    compared: np.ndarray,
    settings: AnalysisSettings,
    count: int,
    texts: Mapping[str, str],
) -> tuple[TopicImpact, ...]:
    """The ``count`` topics that moved the gated statistic most the wrong way, worst first.

    A topic's contribution is its share of the change of the statistic from the comparison system to
    the candidate (:meth:`~pytest_bvtest.stats.registry.Statistic.topic_contributions`); only topics
    that moved it in the bad direction are listed. A statistic without a per-topic split (grouped
    bias-variance) falls back on the raw per-topic loss against ``compared``.
    """
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
    return tuple(
        TopicImpact(
            matrix.topics[j],
            float(matrix.scores[candidate, j]),
            float(compared[j]),
            texts.get(matrix.topics[j]),
            None if shares is None else float(shares[j]),
        )
        for j in order
        if badness[j] > _NEGLIGIBLE
    )


def gate_id(spec: Spec, measure: str, gate: GateSpec) -> str:
    """``SPECFILE::MEASURE::GATE``, the gate's id in every report and its pytest node id."""
    return gate_id_parts(spec.path.name, measure, gate)


def gate_id_parts(spec_file: str, measure: str, gate: GateSpec) -> str:
    """:func:`gate_id` from the spec file's name (a pytest item knows its file, not its loaded spec)."""
    return f"{spec_file}::{measure}::{gate.name}"


def judge_gate(
    spec: Spec,
    gate: GateSpec,
    matrix: ScoreMatrix,
    settings: AnalysisSettings,
    candidate: int,
    computed: Mapping[str, np.ndarray | None],
    variations: VariationMVE | None,
    texts: Mapping[str, str],
) -> GateOutcome:
    """Judge one gate; ``computed`` holds the statistics already computed against the spec's reference."""
    statistic = STATISTICS[gate.statistic]
    reference = matrix.index(gate.reference) if gate.reference is not None else None
    # relative to the reference's value: a relative bound, or a calibrated limit on a null of differences
    relative = (gate.bound is not None and gate.bound.kind in ("max_increase", "max_decrease")) or (
        gate.false_alarm is not None and not null_of_own_value(gate.statistic)
    )
    reusable = not statistic.needs_reference or gate.reference == spec.reference
    values = computed.get(gate.statistic) if reusable else None
    if values is None:
        try:
            values = np.asarray(statistic.compute(matrix.scores, reference, settings), dtype=float)
        except StatisticError as error:
            raise InputError(f"gate {gate.name}: {error}", path=spec.path, line=gate.line) from None
    reference_value = float(values[reference]) if reference is not None and relative else None
    interval = None
    if gate.confidence is not None and gate.statistic == "mve" and variations is not None:
        result = variations.bootstrap(matrix.measure, candidate, reference if relative else None, spec, gate.confidence)
        interval = (float(result.low), float(result.high))
    elif gate.confidence is not None:
        result = paired_bootstrap(
            matrix.scores,
            gate.statistic,
            candidate,
            reference if relative or statistic.needs_reference else None,
            settings,
            resamples=spec.analysis.bootstrap.resamples,
            confidence=gate.confidence,
            seed=spec.analysis.bootstrap.seed,
        )
        interval = (float(result.low), float(result.high))
    null, null_offset = _gate_null(spec, gate, matrix, settings, candidate, reference, values)
    # the topics are blamed against the gate's reference, else the spec's, else the virtual target
    blamed = (
        reference if reference is not None else (matrix.index(spec.reference) if spec.reference is not None else None)
    )
    compared, against = (
        (matrix.scores[blamed], matrix.systems[blamed])
        if blamed is not None
        else (matrix.scores.max(axis=0), "the virtual target")
    )
    return judge(
        gate_id=gate_id(spec, matrix.measure, gate),
        statistic=gate.statistic,
        label=statistic.label,
        measure=matrix.measure,
        system=matrix.systems[candidate],
        reference=gate.reference if relative or statistic.needs_reference else None,
        value=float(values[candidate]),
        reference_value=reference_value,
        bound=gate.bound,
        higher_is_better=statistic.higher_is_better,
        null=null,
        null_offset=null_offset,
        null_reference=None if reference is None else matrix.systems[reference],
        false_alarm=gate.false_alarm,
        interval=interval,
        confidence=gate.confidence,
        seed=spec.analysis.bootstrap.seed if gate.confidence is not None else None,
        worst_topics=_blamed_topics(
            matrix, gate.statistic, candidate, blamed, compared, settings, spec.analysis.top_topics, texts
        ),
        worst_against=str(against),
        compared_value=None if blamed is None else float(values[blamed]),
        spec_line=gate.line,
        gate=gate,
    )


def _gate_null(
    spec: Spec,
    gate: GateSpec,
    matrix: ScoreMatrix,
    settings: AnalysisSettings,
    candidate: int,
    reference: int | None,
    values: np.ndarray,
) -> tuple[SwapNull | None, float]:
    """The gate's null of no change (docs/mathematics.md §7) and the offset that puts it on the value's scale.

    Every gate with a reference gets one, so that plain bounds report their false-alarm rate too;
    the offset is the reference's value when the null is of ``S(candidate) - S(reference)``.
    """
    if reference is None or reference == candidate:
        return None, 0.0
    try:
        calibration = spec.analysis.calibration
        swaps = calibration.swaps
        if swaps is None and gate.false_alarm is None:
            swaps = calibration.plain_bound_swaps  # a reported rate, not a limit: fewer swaps suffice
        null = swap_null(
            matrix.scores, gate.statistic, candidate, reference, settings, swaps=swaps, seed=calibration.seed
        )
    except StatisticError as error:
        raise InputError(f"gate {gate.name}: the null of no change: {error}", path=spec.path, line=gate.line) from None
    return null, (0.0 if null.own_value else float(values[reference]))
