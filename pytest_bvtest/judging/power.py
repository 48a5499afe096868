"""Each gate's power, once its limit is known (docs/mathematics.md §9): a step of ``judge_gates`` before the decision.

A gate's power is how often it fails a change that really is worse, each such change judged with the limits the
check would give it (:mod:`.limits` sets the observed pair's). :func:`crossings` writes those limits on the scales a
draw of a regression is read on (:class:`~pytest_bvtest.stats.power.Crossing`); :func:`gate_powers` measures the
minimum detectable effect under
both regression models, each harmed draw judged with its own recalibrated limits as ``bvtest check`` would judge
it, and, for a gate with a stated aim (``detect:``), the power at the drop it names and the topics it would need.
Nothing here decides: :func:`~pytest_bvtest.judging.decision.decide` reads these facts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from pytest_bvtest.judging.gate_inputs import GateInputs
from pytest_bvtest.judging.limits import GateLimit, family_key
from pytest_bvtest.spec.model import UPPER_BOUNDS
from pytest_bvtest.stats.power import (
    DIFFERENCE,
    OWN,
    TARGET_POWER,
    Crossing,
    Detectable,
    FixedNull,
    GatePower,
    GroupGate,
    PowerGroup,
    SwapPool,
    swap_pool,
)


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
    and the reports; ``partner`` the system the draws swap the candidate with (``None``: no swap); ``group`` the
    draws it was measured on with the gates measured with it, gate ``index`` of them (for the power at other drops,
    ``bvtest calibrate --detect``)."""

    result: GatePower | None
    skipped: str | None
    partner: str | None
    aim: AimPower | None = None
    group: PowerGroup | None = field(default=None, repr=False, compare=False)
    index: int = 0


def crossings(inputs: GateInputs, limit: GateLimit) -> tuple[Crossing, ...]:
    """The limits a draw must be past for the gate to fail it, on the draw's scales (docs/mathematics.md §9).

    A bound ``max``/``min`` reads the candidate's own value, ``max_increase``/``max_decrease`` candidate minus
    reference, the bound's limit taken for the observed reference (a relative one, ``N%``, for each draw's
    reference); a noise-aware gate fails only when its whole interval is past the bound, so its limit moves by the
    interval's reach from the estimate to the safe end (the observed pair's, held fixed: a bootstrap on every draw
    would cost draws times resamples). A calibrated limit reads the null's scale (own value or difference) at the
    level its limit holds alone, and is recalibrated on every draw (:class:`~pytest_bvtest.stats.power.PowerGroup`).
    """
    gate, found = inputs.gate, []
    if gate.bound is not None and limit.bound is not None:
        upper = gate.bound.kind in UPPER_BOUNDS
        absolute = gate.bound.kind in ("max", "min")
        scale = OWN if absolute else DIFFERENCE
        value = limit.bound if absolute else limit.bound - (inputs.reference_value or 0.0)
        relative = gate.bound.amount if gate.bound.relative and not absolute else None
        interval = inputs.interval
        if interval is None:
            found.append(Crossing(scale, value, upper, relative=relative))
        else:
            reach = max(0.0, (interval.estimate - interval.low) if upper else (interval.high - interval.estimate))
            limit_moved = value + reach if upper else value - reach
            found.append(Crossing(scale, limit_moved, upper, "noise", reach, relative=relative))
    if gate.false_alarm is not None and limit.calibrated is not None and inputs.null is not None:
        null = limit.null
        offset = inputs.null.offset
        level = None if null is None else null.false_alarm_rate(limit.calibrated - offset)
        scale = OWN if inputs.null.distribution.own_value else DIFFERENCE
        found.append(Crossing(scale, limit.calibrated - offset, inputs.upper, "calibrated", level=level))
    return tuple(found)


def gate_powers(gates: Sequence[GateInputs], limits: Sequence[GateLimit]) -> list[PowerFacts | None]:
    """Every gate's power and its aim's, by position (``None`` where the spec leaves power out), once every limit is
    known (docs/mathematics.md §9).

    As ``bvtest check`` would judge a harmed candidate, each draw's calibrated limits are its own, and a family's
    (:func:`~pytest_bvtest.judging.limits.family_levels`) are set together: the family's gates on one measure (and
    segment) are measured as one :class:`~pytest_bvtest.stats.power.PowerGroup`, whose draws harm them all, beside
    the nulls of its gates elsewhere, which the harm does not reach; every other gate is a group of its own.
    """
    facts: list[PowerFacts | None] = [None] * len(gates)
    groups: dict[object, list[tuple[int, tuple[Crossing, ...]]]] = {}
    for position, (inputs, limit) in enumerate(zip(gates, limits)):
        problem = inputs.power
        if problem is None:
            facts[position] = None if inputs.power_skipped is None else PowerFacts(None, inputs.power_skipped, None)
            continue
        found = crossings(inputs, limit)
        if not found or any(math.isnan(crossing.limit) for crossing in found):
            facts[position] = PowerFacts(None, "its limit is undefined", _partner(inputs))
            continue
        family = family_key(inputs) if limit.family is not None else None
        key = (family, inputs.measure, inputs.gate.segment) if family is not None else position
        groups.setdefault(key, []).append((position, found))
    pools: dict[tuple[object, ...], SwapPool] = {}
    for members in groups.values():
        first = gates[members[0][0]]
        group_gates = [GroupGate(gates[position].power, found) for position, found in members]  # type: ignore[arg-type]
        calibrated = any(member.calibrated is not None for member in group_gates)
        pool, fixed = None, []
        if calibrated and first.power is not None and first.power.method != "gaussian":
            pool = _pool(first, limits[members[0][0]], pools)
        if calibrated and limits[members[0][0]].family is not None:
            inside = {position for position, _ in members}
            family = family_key(first)
            fixed = [
                FixedNull(limits[position].null.by_swap, limits[position].null.higher_is_better)  # type: ignore[union-attr,arg-type]
                for position, inputs in enumerate(gates)
                if position not in inside and limits[position].family is not None and family_key(inputs) == family
            ]
        group = PowerGroup(group_gates, fixed, pool, first.gate.false_alarm)
        for index, (position, _) in enumerate(members):
            inputs = gates[position]
            aim = inputs.gate.detect
            facts[position] = PowerFacts(
                group.gate_power(index),
                None,
                _partner(inputs),
                None if aim is None else aim_power(inputs, group, index, aim.drop, aim.model, aim.relative),
                group,
                index,
            )
    return facts


def power_payload(facts: Sequence[PowerFacts | None]) -> dict[str, object]:
    """Every gate's :class:`PowerFacts` (by position, as :func:`gate_powers` gives them) as JSON, floats as Python
    writes them (read back exactly), without their groups: a check whose inputs are all unchanged reads them
    (:func:`power_from_payload`) instead of drawing the harmed candidates again."""
    return {
        "facts": [
            None
            if fact is None
            else {
                "result": None if fact.result is None else _plain(asdict(fact.result)),
                "skipped": fact.skipped,
                "partner": fact.partner,
                "aim": None if fact.aim is None else _plain(asdict(fact.aim)),
                "index": fact.index,
            }
            for fact in facts
        ]
    }


def power_from_payload(payload: Mapping[str, object], count: int) -> list[PowerFacts | None] | None:
    """:func:`power_payload` read back for ``count`` gates (their facts hold no group: the power at another drop is
    not for them); ``None`` when it does not hold what it should."""
    try:
        held = payload["facts"]
        facts = [None if fact is None else _facts(fact) for fact in held]  # type: ignore[union-attr]
    except (KeyError, TypeError, ValueError):
        return None
    return facts if len(facts) == count else None


def _plain(value: object) -> object:
    """``value`` with numpy's scalars as Python's (JSON writes those; the same numbers)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value.item() if isinstance(value, np.generic) else value


def _facts(held: Mapping[str, object]) -> PowerFacts:
    result: dict = held["result"]  # type: ignore[assignment]
    aim: dict = held["aim"]  # type: ignore[assignment]
    return PowerFacts(
        None
        if result is None
        else GatePower(**{**result, "detectable": tuple(Detectable(**each) for each in result["detectable"])}),
        None if held["skipped"] is None else str(held["skipped"]),
        None if held["partner"] is None else str(held["partner"]),
        None if aim is None else AimPower(**aim),
        index=int(held["index"]),  # type: ignore[call-overload]
    )


def _partner(inputs: GateInputs) -> str | None:
    problem = inputs.power
    return inputs.gate.reference if problem is not None and problem.swapped else None


def _pool(inputs: GateInputs, limit: GateLimit, pools: dict[tuple[object, ...], SwapPool]) -> SwapPool:
    """The swaps of the gate's null (its family's, the first the family shares) that recalibrate its limit on each
    draw, read on its segment's topics; one per set of swaps and topics."""
    null = limit.null
    gate_null = inputs.null
    assert null is not None and gate_null is not None
    universe = len(gate_null.topics)
    columns = None
    if tuple(inputs.topics) != tuple(gate_null.topics):
        place = {topic: j for j, topic in enumerate(gate_null.topics)}
        columns = tuple(place[topic] for topic in inputs.topics)
    key = (universe, null.swaps, null.seed, null.exact, columns)
    if key not in pools:
        pools[key] = swap_pool(universe, null.swaps, null.seed, null.exact, columns)
    return pools[key]


def aim_power(
    inputs: GateInputs, group: PowerGroup, index: int, drop: float, model: str, relative: bool = False
) -> AimPower:
    """The gate's power at a stated drop (a share of the reference's mean score when ``relative``) and, when it
    falls short of :data:`~pytest_bvtest.stats.power.TARGET_POWER`, the topics it would need (an estimate)."""
    problem = inputs.power
    assert problem is not None, "the gate's power is measured"
    absolute = drop * inputs.aim_scale if relative else drop
    power = group.power(index, absolute, model)
    limits = group.gates[index].crossings
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
