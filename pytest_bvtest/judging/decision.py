"""One decision per gate: ``OK``, ``OK*`` or ``FAIL``, with the numbers behind it and no prose.

:func:`decide` is the only place a gate's outcome is set, once, from its inputs (:mod:`.gate_inputs`), its
limit (:mod:`.limits`) and the guards of its measure (:mod:`.guards`). A gate fails when its value is past
its limit (by more than floating-point noise), or when any number it reads is NaN: a NaN is never a pass
(docs/mathematics.md §7, "Non-finite values"). A pass is ``OK*`` instead of ``OK`` when it is not to be
trusted: the point estimate is past a bound but the bootstrap interval reaches the safe side (Anserini's
``[OK*]``), the calibrated limit is one no swap crosses (the gate cannot fail), a guard concerns it, or the gate
would miss the drop its ``detect:`` names (docs/mathematics.md §9). A gate judged at the two corners of
docs/mathematics.md §10 (its candidate's or its reference's top d holds unjudged documents) whose verdict as judged
does not hold at both is decided by its plausible gradings (:mod:`.plausible`): passed when it passes in at least
``judgments.confidence`` of them, failed when it fails in as many, else ``UNDECIDED``: the missing judgments decide
it, and the spec's ``judgments.undecided`` says whether that fails CI.
The sentences that explain a verdict live in :mod:`pytest_bvtest.report.wording`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_bvtest.judging.gate_inputs import GateInputs, GateNull, TopicImpact
from pytest_bvtest.judging.guards import Guard
from pytest_bvtest.judging.judgments import Corners, Plausibility
from pytest_bvtest.judging.limits import TOLERANCE, GateLimit, JointFalseAlarm, excess_over, interval_excess
from pytest_bvtest.judging.power import AimPower, PowerFacts
from pytest_bvtest.spec.model import GateSpec
from pytest_bvtest.stats.registry import STATISTICS

OK = "OK"
OK_WITH_WARNING = "OK*"
UNDECIDED = "UNDECIDED"
FAIL = "FAIL"
#: Every outcome, in the order reports count them.
OUTCOMES = (OK, OK_WITH_WARNING, UNDECIDED, FAIL)

#: What may be undefined in a gate, which then fails: its value (NaN, or found by an iteration that did not
#: converge), the reference value its limit reads, the null its calibrated limit is read from, or the limit itself.
UNDEFINED = ("value", "unconverged", "reference_value", "null", "limit")


@dataclass(frozen=True)
class CannotFail:
    """A calibrated limit that no swap of the null crosses: the null is too coarse for the rate asked
    (few topics, or few where the two systems differ), so a pass there is no evidence.

    ``smallest_rate`` is the share of swaps tied at the null's most extreme value (below 1: a null whose every swap
    gives the same value is no change, not a coarse null); ``swaps`` of them, all ``2**n`` when ``exact``.
    """

    smallest_rate: float
    swaps: int
    exact: bool


@dataclass(frozen=True)
class Verdict:
    """The decision on one gate: its inputs, its limit, how far the value is past it, and the outcome.

    ``excess > 0`` is past the limit (NaN when undefined); ``undefined`` names the NaN that failed the gate
    (one of :data:`UNDEFINED`); ``within_noise`` is a pass whose point estimate is past the bound while its
    interval reaches the safe side; ``cannot_fail`` a calibrated limit no swap crosses; ``guards`` the
    measure's guards that concern the gate; ``power`` its power at its limit (docs/mathematics.md §9) and
    ``missed_aim`` the ``detect:`` aim a passing gate would miss. ``corners`` is the gate judged at the two
    corners of unjudged documents (docs/mathematics.md §10; ``None`` when neither top d holds one); ``plausible`` the
    gate weighed over plausible gradings of them when its verdict as judged does not hold at both corners, which then
    decides it; ``undecided`` when they do not, and then ``passed`` is the spec's ``judgments.undecided`` policy
    (``warn`` passes).
    """

    inputs: GateInputs
    limits: GateLimit
    excess: float
    passed: bool
    undefined: str | None = None
    within_noise: bool = False
    cannot_fail: CannotFail | None = None
    guards: tuple[Guard, ...] = ()
    power: PowerFacts | None = None
    missed_aim: AimPower | None = None
    corners: Corners | None = None
    undecided: bool = False
    plausible: Plausibility | None = None

    @property
    def outcome(self) -> str:
        """``OK``, ``OK*`` (a pass not to be trusted as it stands), ``UNDECIDED`` (the missing judgments decide
        it) or ``FAIL``."""
        if self.undecided:
            return UNDECIDED
        if not self.passed:
            return FAIL
        warned = self.within_noise or self.cannot_fail is not None or self.guards or self.missed_aim is not None
        return OK_WITH_WARNING if warned else OK

    @property
    def passed_as_judged(self) -> bool:
        """Whether the gate passes on the judgments as they are (every unjudged document non-relevant): its outcome
        but for the corners of unjudged documents."""
        return self.undefined is None and (not self.excess > TOLERANCE or self.within_noise)

    # What the reports and a team's tests read, named as the gate's spec and inputs name it.
    @property
    def gate(self) -> GateSpec:
        return self.inputs.gate

    @property
    def id(self) -> str:
        return self.inputs.id

    @property
    def statistic(self) -> str:
        return self.inputs.gate.statistic

    @property
    def label(self) -> str:
        return STATISTICS[self.inputs.gate.statistic].label

    @property
    def measure(self) -> str:
        return self.inputs.measure

    @property
    def system(self) -> str:
        return self.inputs.system

    @property
    def reference(self) -> str | None:
        return self.inputs.reference

    @property
    def value(self) -> float:
        return self.inputs.value

    @property
    def reference_value(self) -> float | None:
        return self.inputs.reference_value

    @property
    def limit(self) -> float:
        return self.limits.value

    @property
    def interval(self) -> tuple[float, float] | None:
        """The bootstrap interval of a noise-aware gate, ``(low, high)``; ``None`` without ``confidence``."""
        interval = self.inputs.interval
        return None if interval is None else (interval.low, interval.high)

    @property
    def false_alarm_rate(self) -> float | None:
        """How often an equal-quality change fails this gate alone at its limit; ``None`` without a null."""
        return self.limits.rate

    @property
    def together(self) -> JointFalseAlarm | None:
        """How often an equal-quality change fails at least one of the gates that share this gate's swaps."""
        return self.limits.together

    @property
    def null(self) -> GateNull | None:
        return self.inputs.null

    @property
    def worst_topics(self) -> tuple[TopicImpact, ...]:
        return self.inputs.worst_topics

    @property
    def upper(self) -> bool:
        return self.inputs.upper

    @property
    def higher_is_better(self) -> bool:
        return self.inputs.higher_is_better

    @property
    def delta(self) -> float | None:
        """Candidate minus the comparison system on the gated statistic; ``None`` without one."""
        inputs = self.inputs
        compared = inputs.reference_value if inputs.reference_value is not None else inputs.compared_value
        return None if compared is None else inputs.value - compared


def _undefined(inputs: GateInputs, limit: GateLimit) -> str | None:
    """Which number of the gate is NaN (or its value one whose iteration did not converge), or ``None``: a NaN
    value or limit is never a pass, and neither is a fixed point that was not reached."""
    if math.isnan(inputs.value):
        return "value"
    if not inputs.converged:
        return "unconverged"
    if inputs.reference_value is not None and math.isnan(inputs.reference_value):
        return "reference_value"
    if limit.calibrated is not None and limit.null is not None and math.isnan(limit.null.values[-1]):
        return "null"  # sorted: a NaN is last
    if math.isnan(limit.value):
        return "limit"
    return None


@dataclass(frozen=True)
class Judgement:
    """What the rule says of a gate at its limit: which number is NaN (``undefined``), how far the value is past
    the limit, whether the point estimate passes and whether a pass is one within noise."""

    undefined: str | None
    excess: float
    point_passes: bool
    within_noise: bool

    @property
    def passed(self) -> bool:
        return self.point_passes or self.within_noise


def judgement(inputs: GateInputs, limit: GateLimit) -> Judgement:
    """The rule every gate is held to, today and at a corner: past its limit (by more than floating-point noise)
    or NaN fails; a point estimate past a bound whose bootstrap interval reaches the safe side passes within
    noise."""
    undefined = _undefined(inputs, limit)
    excess = float("nan") if undefined else excess_over(inputs.value, limit.value, inputs.upper)
    point_passes = undefined is None and not excess > TOLERANCE
    gate = inputs.gate
    within_noise = (
        not point_passes
        and undefined is None
        and inputs.interval is not None
        and gate.bound is not None
        and interval_excess(gate.bound, inputs.interval, inputs.reference_value) <= TOLERANCE
    )
    return Judgement(undefined, excess, point_passes, within_noise)


def decide(
    inputs: GateInputs,
    limit: GateLimit,
    guards: Sequence[Guard] = (),
    power: PowerFacts | None = None,
    corners: Corners | None = None,
    undecided: str = "warn",
    plausible: Plausibility | None = None,
) -> Verdict:
    """Decide one gate, once: its outcome from its value, its limit, its power, the guards of its measure and,
    where its top d holds unjudged documents, its ``corners``: a verdict that does not hold at both is the one its
    ``plausible`` gradings decide, or, when they decide nothing (or were not drawn), undecided, which passes when the
    ``undecided`` policy is ``warn``."""
    judged = judgement(inputs, limit)
    undefined, excess, point_passes, within_noise = (
        judged.undefined,
        judged.excess,
        judged.point_passes,
        judged.within_noise,
    )
    gate = inputs.gate
    cannot_fail = None
    null = limit.null
    if point_passes and limit.calibrated is not None and null is not None:
        offset = inputs.null.offset  # type: ignore[union-attr]
        smallest = null.smallest_rate()
        # every swap giving one value is no change where the statistic looks (the candidate scores as its
        # reference, as right after --bvtest-update): nothing to fail, which is no reason to distrust the pass
        if null.false_alarm_rate(limit.calibrated - offset) == 0 and smallest < 1.0:
            cannot_fail = CannotFail(smallest, null.swaps, null.exact)
    # a failing gate keeps its guards too: they say what its FAIL should not be trusted for
    concerning = tuple(guard for guard in guards if guard.concerns(gate.statistic, inputs.reference))
    # a guard that fails its gates (nothing judged) decides them whatever the scores and the unjudged documents say
    if any(guard.fails for guard in concerning):
        return Verdict(inputs, limit, excess, False, undefined, within_noise, cannot_fail, concerning, power)
    passed = judged.passed
    # a pass that would miss the drop the spec asks the gate to catch: green, but not the green asked for
    aim = None if power is None else power.aim
    missed = aim if passed and aim is not None and aim.missed else None
    depends = corners is not None and not corners.optimistic.passed == passed == corners.pessimistic.passed
    decided = plausible.decided if depends and plausible is not None else None
    if decided is not None:
        passed, depends = decided, False
        missed = aim if passed and aim is not None and aim.missed else None
    elif depends:
        passed = undecided == "warn"
    return Verdict(
        inputs,
        limit,
        excess,
        passed,
        undefined,
        within_noise,
        cannot_fail,
        concerning,
        power,
        missed,
        corners,
        depends,
        plausible if corners is not None and plausible is not None else None,
    )
