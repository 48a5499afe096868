"""Each gate's power, once its limit is known (docs/mathematics.md §9): a step of ``judge_gates`` before the decision.

A gate's power is how often it fails a change that really is worse, with the limit it has for the observed
pair (:mod:`.limits`). :func:`crossings` writes that limit on the scales a draw of a regression is read on
(:class:`~pytest_bvtest.stats.power.Crossing`); :func:`gate_power` measures the minimum detectable effect under
both regression models and, for a gate with a stated aim (``detect:``), the power at the drop it names and the
topics it would need. Nothing here decides: :func:`~pytest_bvtest.judging.decision.decide` reads these facts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_bvtest.judging.gate_inputs import GateInputs
from pytest_bvtest.judging.limits import GateLimit
from pytest_bvtest.spec.model import UPPER_BOUNDS
from pytest_bvtest.stats.power import DIFFERENCE, OWN, TARGET_POWER, Crossing, GatePower


@dataclass(frozen=True)
class AimPower:
    """The power of a gate at the drop its ``detect:`` names.

    ``drop`` in the measure's units (a relative aim already taken of the reference's mean); ``power`` the share
    of draws the gate fails at it; ``topics`` the topics at hand and ``topics_needed`` about how many it would
    need to reach :data:`~pytest_bvtest.stats.power.TARGET_POWER` (``None`` when it already does, or when no
    number of topics would: then ``reachable`` is False).
    """

    drop: float
    model: str
    relative: float | None
    power: float
    level: float
    topics: int
    topics_needed: int | None
    reachable: bool

    @property
    def missed(self) -> bool:
        """The gate would catch the drop less often than the target power (NaN: it cannot be said to)."""
        return not self.power >= self.level


@dataclass(frozen=True)
class PowerFacts:
    """A gate's power (``result``, ``None`` with ``skipped`` saying why) and its aim's (``aim``), for the decision
    and the reports; ``partner`` the system the draws swap the candidate with (``None``: no swap)."""

    result: GatePower | None
    skipped: str | None
    partner: str | None
    aim: AimPower | None = None


def crossings(inputs: GateInputs, limit: GateLimit) -> tuple[Crossing, ...]:
    """The limits a draw must be past for the gate to fail it, on the draw's scales (docs/mathematics.md §9).

    A bound ``max``/``min`` reads the candidate's own value, ``max_increase``/``max_decrease`` candidate minus
    reference, the bound's limit taken for the observed reference; a noise-aware gate fails only when its whole
    interval is past the bound, so its limit moves by the interval's reach from the estimate to the safe end
    (the observed pair's, held fixed: a bootstrap on every draw would cost draws times resamples). A calibrated
    limit reads the null's scale (own value or difference) at the level its limit holds alone.
    """
    gate, found = inputs.gate, []
    if gate.bound is not None and limit.bound is not None:
        upper = gate.bound.kind in UPPER_BOUNDS
        absolute = gate.bound.kind in ("max", "min")
        scale = OWN if absolute else DIFFERENCE
        value = limit.bound if absolute else limit.bound - (inputs.reference_value or 0.0)
        interval = inputs.interval
        if interval is None:
            found.append(Crossing(scale, value, upper))
        else:
            reach = max(0.0, (interval.estimate - interval.low) if upper else (interval.high - interval.estimate))
            found.append(Crossing(scale, value + reach if upper else value - reach, upper, "noise", reach))
    if gate.false_alarm is not None and limit.calibrated is not None and inputs.null is not None:
        null = limit.null
        offset = inputs.null.offset
        level = None if null is None else null.false_alarm_rate(limit.calibrated - offset)
        scale = OWN if inputs.null.distribution.own_value else DIFFERENCE
        found.append(Crossing(scale, limit.calibrated - offset, inputs.upper, "calibrated", level=level))
    return tuple(found)


def gate_power(inputs: GateInputs, limit: GateLimit) -> PowerFacts | None:
    """The gate's MDE under each model and its aim's power; ``None`` when the spec leaves power out."""
    problem = inputs.power
    if problem is None:
        return None if inputs.power_skipped is None else PowerFacts(None, inputs.power_skipped, None)
    partner = inputs.gate.reference if problem.swapped else None
    limits = crossings(inputs, limit)
    if not limits or any(math.isnan(crossing.limit) for crossing in limits):
        return PowerFacts(None, "its limit is undefined", partner)
    aim = inputs.gate.detect
    return PowerFacts(
        problem.gate_power(limits),
        None,
        partner,
        None if aim is None else aim_power(inputs, limits, aim.drop, aim.model, aim.relative),
    )


def aim_power(
    inputs: GateInputs, limits: tuple[Crossing, ...], drop: float, model: str, relative: bool = False
) -> AimPower:
    """The gate's power at a stated drop (a share of the reference's mean score when ``relative``) and, when it
    falls short of :data:`~pytest_bvtest.stats.power.TARGET_POWER`, the topics it would need (an estimate)."""
    problem = inputs.power
    assert problem is not None, "the gate's power is measured"
    absolute = drop * inputs.aim_scale if relative else drop
    power = problem.power(absolute, model, limits)
    needed = None if power >= TARGET_POWER else problem.topics_needed(absolute, model, limits)
    return AimPower(
        absolute,
        model,
        drop if relative else None,
        power,
        TARGET_POWER,
        problem.topics,
        needed,
        power >= TARGET_POWER or needed is not None,
    )
