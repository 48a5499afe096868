"""Regression gates (MATH.md section 7): a statistic of the candidate against a bound.

A bound is absolute (``max``/``min`` on the candidate's value) or relative to a reference system
(``max_increase`` for statistics where lower is better, ``max_decrease`` where higher is better),
written as a number or as ``N%`` of the reference's value. A noise-aware gate (``confidence``) fails
only when the whole bootstrap interval is past the bound; when only the point estimate is, it passes
with a warning, like Anserini's ``[OK*]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_bvtest.guards import Guard
from pytest_bvtest.spec import Bound

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
class GateOutcome:
    """The verdict of one gate on one measure, with everything a report or a message needs."""

    id: str
    statistic: str
    label: str
    measure: str
    system: str
    reference: str | None
    value: float
    reference_value: float | None
    bound: Bound
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
    guards: tuple[str, ...] = ()

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
    bound: Bound,
    interval: tuple[float, float] | None = None,
    confidence: float | None = None,
    seed: int | None = None,
    worst_topics: Sequence[TopicImpact] = (),
    worst_against: str = "",
) -> GateOutcome:
    """Decide a gate and write its message."""
    limit, excess = limit_and_excess(bound, value, reference_value)
    point_fails = excess > _TOLERANCE
    warning = None
    passed = not point_fails
    if interval is not None and point_fails:
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
        worst_topics=tuple(worst_topics), worst_against=worst_against, message="",
    )
    return _with_message(outcome)


def with_guards(outcome: GateOutcome, guards: Sequence[Guard]) -> GateOutcome:
    """``outcome`` with the warnings of the guards that concern it: a pass becomes ``OK*``."""
    messages = tuple(guard.message for guard in guards if guard.concerns(outcome.statistic, outcome.reference))
    return _with_message(replace(outcome, guards=messages)) if messages else outcome


def _with_message(outcome: GateOutcome) -> GateOutcome:
    lines = [_headline(outcome)]
    if outcome.interval is not None:
        low, high = outcome.interval
        what = "candidate - reference" if outcome.bound.kind in ("max_increase", "max_decrease") else "value"
        lines.append(
            f"  {outcome.confidence:.0%} bootstrap interval of {what}: [{low:.6g}, {high:.6g}] (seed {outcome.seed})"
        )
    if outcome.warning:
        lines.append(f"  warning: {outcome.warning}")
    lines += [f"  warning: {guard}" for guard in outcome.guards]
    if outcome.worst_topics and (not outcome.passed or outcome.warning):
        lines.append(f"  topics that lost most against {outcome.worst_against}:")
        for impact in outcome.worst_topics:
            about = f" ({impact.text})" if impact.text else ""
            lines.append(
                f"    {impact.topic}{about}: {impact.candidate:.4f} vs {impact.compared:.4f} ({impact.delta:+.4f})"
            )
    return replace(outcome, message="\n".join(lines))


def _headline(outcome: GateOutcome) -> str:
    verdict = "FAILED" if not outcome.passed else (
        "passed within noise" if outcome.warning else "passed with a warning" if outcome.guards else "passed")
    versus = ""
    if outcome.reference is not None:
        versus = (f" against {outcome.reference}" if outcome.reference_value is None
                  else f" vs {outcome.reference} {outcome.reference_value:.6g}")
    relation = "<=" if outcome.bound.kind in ("max", "max_increase") else ">="
    if outcome.excess > 0:
        margin = f"past the limit by {outcome.excess:.6g}"
    else:
        margin = f"headroom {-outcome.excess:.6g}"
    return (
        f"{outcome.measure} {outcome.label} {verdict}: {outcome.system} {outcome.value:.6g}{versus}; "
        f"bound {outcome.bound} requires {relation} {outcome.limit:.6g}; {margin}"
    )
