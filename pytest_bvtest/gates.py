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

from pytest_bvtest.spec import Bound
from pytest_bvtest.stats.registry import STATISTICS

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
    compared_value: float | None = None
    spec_line: int | None = None
    sentence: str = ""

    @property
    def higher_is_better(self) -> bool:
        return STATISTICS[self.statistic].higher_is_better

    @property
    def delta(self) -> float | None:
        """Candidate minus the comparison system on the gated statistic; ``None`` without one."""
        compared = self.reference_value if self.reference_value is not None else self.compared_value
        return None if compared is None else self.value - compared

    @property
    def outcome(self) -> str:
        """``OK``, ``OK*`` (passed with a warning) or ``FAIL``."""
        if not self.passed:
            return "FAIL"
        return "OK*" if self.warning else "OK"


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
    compared_value: float | None = None,
    spec_line: int | None = None,
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
        compared_value=compared_value, spec_line=spec_line,
    )
    return _with_message(replace(outcome, sentence=plain_sentence(outcome)))


def short_number(value: float, other: float | None = None) -> str:
    """``value`` with 3 significant digits, more (up to 6) when needed to tell it from ``other``."""
    for digits in range(3, 7):
        text = f"{value:.{digits}g}"
        if other is None or text != f"{other:.{digits}g}":
            return text
    return text


def plain_sentence(outcome: GateOutcome) -> str:
    """One sentence for a reader who never heard of the statistic: what the gate protects, what happened.

    The wording is the statistic's own (:class:`~pytest_bvtest.stats.registry.Wording`), e.g.
    "Quality varies more from query to query or sits further below the best achievable than in
    production (Bias²+Var 0.0879 vs 0.0774, limit 0.0812)."
    """
    statistic = STATISTICS[outcome.statistic]
    wording = statistic.wording
    assert wording is not None, f"{outcome.statistic} has no wording"
    reference = outcome.reference or "the reference"
    numbers = f"{statistic.label} {short_number(outcome.value, outcome.limit)}"
    if outcome.reference_value is not None:
        numbers += f" vs {short_number(outcome.reference_value, outcome.limit)}"
    numbers += f", limit {short_number(outcome.limit, outcome.value)}"
    than = f" than in {outcome.reference}" if outcome.reference_value is not None else " than allowed"
    worse = wording.worse.replace("the reference", reference) + than
    if outcome.passed and not outcome.warning:
        return f"Holds: {wording.protects.replace('the reference', reference)} ({numbers})."
    if outcome.passed:
        return f"Within noise: {worse} ({numbers}), but the {outcome.confidence:.0%} interval reaches the safe side."
    beyond = f"; the whole {outcome.confidence:.0%} interval is past the limit" if outcome.interval is not None else ""
    return f"{worse} ({numbers}{beyond})."


def _with_message(outcome: GateOutcome) -> GateOutcome:
    lines = [_headline(outcome), f"  {outcome.sentence}"]
    if outcome.interval is not None:
        low, high = outcome.interval
        what = "candidate - reference" if outcome.bound.kind in ("max_increase", "max_decrease") else "value"
        lines.append(
            f"  {outcome.confidence:.0%} bootstrap interval of {what}: [{low:.6g}, {high:.6g}] (seed {outcome.seed})"
        )
    if outcome.warning:
        lines.append(f"  warning: {outcome.warning}")
    if outcome.worst_topics and (not outcome.passed or outcome.warning):
        lines.append(f"  {blame_title(outcome.label, outcome.worst_topics, outcome.worst_against)}:")
        for impact in outcome.worst_topics:
            about = f" ({impact.text})" if impact.text else ""
            share = "" if impact.contribution is None else f"; moves {outcome.label} by {impact.contribution:+.4g}"
            lines.append(
                f"    {impact.topic}{about}: {impact.candidate:.4f} vs {impact.compared:.4f} ({impact.delta:+.4f}{share})"
            )
    return replace(outcome, message="\n".join(lines))


def blame_title(label: str, impacts: Sequence[TopicImpact], against: str) -> str:
    """What the list of blamed topics is: by contribution to the statistic, or by raw loss."""
    if impacts and impacts[0].contribution is None:
        return f"topics that lost most against {against} ({label} has no per-topic split)"
    return f"topics that moved {label} most the wrong way (scores vs {against})"


def _headline(outcome: GateOutcome) -> str:
    verdict = "FAILED" if not outcome.passed else ("passed within noise" if outcome.warning else "passed")
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
