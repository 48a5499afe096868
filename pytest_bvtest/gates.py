"""Regression gates (MATH.md section 7): a statistic of the candidate against a bound.

A bound is absolute (``max``/``min`` on the candidate's value) or relative to a reference system
(``max_increase`` for statistics where lower is better, ``max_decrease`` where higher is better),
written as a number or as ``N%`` of the reference's value. A noise-aware gate (``confidence``) fails
only when the whole bootstrap interval is past the bound; when only the point estimate is, it passes
with a warning, like Anserini's ``[OK*]``.

A calibrated gate (``false_alarm: P``) takes as its limit the ``P``-quantile, on the bad side, of the
null of "no change" (:mod:`pytest_bvtest.stats.calibration`); with a bound as well it fails only
when both limits are crossed. Every gate whose null could be drawn reports the false-alarm rate of
its effective limit. A NaN value or limit is never a pass (MATH.md section 7, "Non-finite values").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pytest_bvtest.guards import Guard
from pytest_bvtest.spec import Bound
from pytest_bvtest.stats.calibration import SwapNull

# A value this close to its limit counts as on it: floating-point noise must not flip a gate.
_TOLERANCE = 1e-12


@dataclass(frozen=True)
class TopicImpact:
    """A topic where the candidate lost most: its score, the comparison score and the difference."""

    topic: str
    candidate: float
    compared: float
    text: str | None = None

    @property
    def delta(self) -> float:
        return self.candidate - self.compared


@dataclass(frozen=True)
class NullSummary:
    """How a gate's null of "no change" was drawn and what it says of the gate's limit.

    ``requested`` is the gate's ``false_alarm`` (``None`` for a plain bound), ``calibrated_limit``
    the limit it gives on the value's scale, ``rate`` the false-alarm rate of the gate's effective
    limit; ``swaps`` swaps with ``reference``, all ``2**n`` when ``exact``, else drawn with ``seed``;
    ``distribution`` plus ``offset`` is the null on the value's scale.
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

    def limit_at(self, false_alarm: float) -> float:
        """The limit, on the value's scale, that ``false_alarm: false_alarm`` would give this gate."""
        return self.distribution.limit(false_alarm) + self.offset

    def describe(self) -> str:
        """``false-alarm rate 4.9% (10,000 swaps with production, seed 0)``."""
        drawn = f"all {self.swaps:,} swaps with {self.reference}" if self.exact else (
            f"{self.swaps:,} swaps with {self.reference}, seed {self.seed}")
        return f"false-alarm rate {_percent(self.rate)} ({drawn})"


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

    @property
    def rule(self) -> str:
        """The gate's limit as the spec wrote it: ``max_increase 5%``, ``false_alarm 5%``, or both."""
        calibrated = None if self.null is None or self.null.requested is None else f"false_alarm {_percent(self.null.requested)}"
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


def _undefined(label: str, system: str, value: float, reference: str | None, reference_value: float | None,
               null: SwapNull | None) -> str | None:
    """Why a gate cannot be decided, or ``None``: which number is NaN (MATH.md section 7, never a pass)."""
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
    false_alarm: float | None = None,
) -> GateOutcome:
    """Decide a gate and write its message.

    ``null`` (with ``reference`` its swap partner) is the gate's null of no change; its values plus
    ``null_offset`` (the reference's value when the null is of a difference) are on the value's
    scale. ``higher_is_better`` (needed without a bound) says which side is bad. ``false_alarm`` turns its quantile into the gate's limit (needs ``null``); with a
    ``bound`` too, the effective limit is the more lenient of the two, so the gate fails only when
    both are crossed. A NaN value or limit fails, saying which statistic is undefined.
    """
    if false_alarm is not None and null is None:
        raise ValueError("a calibrated gate needs its null distribution")
    if bound is None and (false_alarm is None or higher_is_better is None):
        raise ValueError("a gate needs a bound, or a false-alarm rate and the statistic's direction")
    upper = bound.kind in ("max", "max_increase") if bound is not None else not higher_is_better
    limits = []
    if bound is not None:
        limits.append(limit_and_excess(bound, value, reference_value)[0])
    calibrated_limit = None if false_alarm is None else null.limit(false_alarm) + null_offset  # type: ignore[union-attr]
    if calibrated_limit is not None:
        limits.append(calibrated_limit)
    limit = float("nan") if any(math.isnan(each) for each in limits) else (max(limits) if upper else min(limits))
    undefined = _undefined(label, system, value, reference, reference_value, null if false_alarm is not None else None)
    if undefined is None and math.isnan(limit):
        undefined = f"the limit of {label} is NaN"
    summary = None
    if null is not None:
        rate = null.false_alarm_rate(limit - null_offset)
        summary = NullSummary(false_alarm, calibrated_limit, rate, null.swaps, null.exact, null.seed, str(reference), null,
                              null_offset)
    excess = float("nan") if undefined else _excess(value, limit, upper)
    point_fails = undefined is not None or excess > _TOLERANCE
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
        id=gate_id, statistic=statistic, label=label, measure=measure, system=system, reference=reference,
        value=value, reference_value=reference_value, bound=bound, limit=limit, excess=excess,
        interval=interval, confidence=confidence, seed=seed, passed=passed, warning=warning,
        worst_topics=tuple(worst_topics), worst_against=worst_against, message="", null=summary, upper=upper,
    )
    return _with_message(outcome, undefined)


def with_guards(outcome: GateOutcome, guards: Sequence[Guard]) -> GateOutcome:
    """``outcome`` with the warnings of the guards that concern it: a pass becomes ``OK*``."""
    messages = tuple(guard.message for guard in guards if guard.concerns(outcome.statistic, outcome.reference))
    if not messages:
        return outcome
    guarded = replace(outcome, guards=messages)
    lines = outcome.message.split("\n")
    if outcome.passed:  # a gate never passes on NaN, so nothing is undefined here
        lines[0] = _headline(guarded, None)
    return replace(guarded, message="\n".join([*lines, *(f"  warning: {message}" for message in messages)]))


def _with_message(outcome: GateOutcome, undefined: str | None) -> GateOutcome:
    lines = [_headline(outcome, undefined)]
    if outcome.interval is not None:
        low, high = outcome.interval
        what = "candidate - reference" if outcome.bound.kind in ("max_increase", "max_decrease") else "value"
        lines.append(
            f"  {outcome.confidence:.0%} bootstrap interval of {what}: [{low:.6g}, {high:.6g}] (seed {outcome.seed})"
        )
    if outcome.warning:
        lines.append(f"  warning: {outcome.warning}")
    if outcome.worst_topics and (not outcome.passed or outcome.warning):
        lines.append(f"  topics that lost most against {outcome.worst_against}:")
        for impact in outcome.worst_topics:
            about = f" ({impact.text})" if impact.text else ""
            lines.append(
                f"    {impact.topic}{about}: {impact.candidate:.4f} vs {impact.compared:.4f} ({impact.delta:+.4f})"
            )
    return replace(outcome, message="\n".join(lines))


def _headline(outcome: GateOutcome, undefined: str | None) -> str:
    verdict = "FAILED" if not outcome.passed else (
        "passed within noise" if outcome.warning else "passed with a warning" if outcome.guards else "passed")
    versus = ""
    if outcome.reference is not None:
        versus = (f" against {outcome.reference}" if outcome.reference_value is None
                  else f" vs {outcome.reference} {outcome.reference_value:.6g}")
    if undefined is not None:
        return f"{outcome.measure} {outcome.label} {verdict}: undefined: {undefined}; a gate never passes on NaN"
    relation = "<=" if outcome.upper else ">="
    if outcome.excess > 0:
        margin = f"past the limit by {outcome.excess:.6g}"
    else:
        margin = f"headroom {0.0 - outcome.excess:.6g}"  # never "-0"
    rule = f"bound {outcome.rule}" if outcome.bound is not None else outcome.rule
    calibration = f"; {outcome.null.describe()}" if outcome.null is not None else ""
    return (
        f"{outcome.measure} {outcome.label} {verdict}: {outcome.system} {outcome.value:.6g}{versus}; "
        f"{rule} requires {relation} {outcome.limit:.6g}; {margin}{calibration}"
    )
