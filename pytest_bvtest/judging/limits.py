"""The limit of every gate, set before any gate is decided (docs/mathematics.md §7).

A gate's limit comes from its bound (``max``/``min`` on the value, ``max_increase``/``max_decrease``
against the reference's value, written as a number or ``N%``), from its ``false_alarm`` rate (the
quantile of its null of "no change" on the bad side), or both: then the more lenient of the two, so the
gate fails only when both are crossed. Calibrated gates that share their swaps and their rate form a
family (``analysis.calibration.family``, the default): :func:`family_levels` gives them one per-gate level
so that together they fail an equal change at most that rate. Once every limit is known,
:func:`joint_false_alarms` says how often an equal change fails at least one of the gates that share
their swaps: the false-alarm rate of the check they make together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from pytest_bvtest.judging.gate_inputs import GateInputs
from pytest_bvtest.spec.model import Bound
from pytest_bvtest.stats.calibration import FamilyLevel, SwapNull, family_level
from pytest_bvtest.stats.inference import BootstrapInterval

#: A value this close to its limit counts as on it: floating-point noise must not flip a gate.
TOLERANCE = 1e-12


@dataclass(frozen=True)
class JointFalseAlarm:
    """How often an equal-quality change fails at least one of the gates that share a gate's swaps.

    ``gates`` are the ids of every gate whose null swaps the same topics with the same partner under the
    same seed (this one included); ``rate`` is the share of the ``swaps`` they share on which at least one of
    them fails at its effective limit: the false-alarm rate of the CI check these gates make together.
    """

    gates: tuple[str, ...]
    rate: float
    swaps: int

    @cached_property
    def ids(self) -> list[str]:
        """``gates`` as the one list every member's report shares (read, never changed): a list per gate would
        hold the square of the gates, 100 million ids for a spec of 10,000."""
        return list(self.gates)


@dataclass(frozen=True)
class GateLimit:
    """A gate's effective limit and where it comes from.

    ``value`` is the effective limit (NaN when undefined); ``bound`` the bound's own limit, ``calibrated``
    the ``false_alarm`` limit (the family's per-gate level when ``family`` is set); ``null`` the null the
    calibrated limit and ``rate`` were read from (a family's first shared swaps); ``rate`` the false-alarm
    rate of ``value`` (``None`` without a null); ``together`` the joint rate of the gates sharing its swaps.
    """

    value: float
    bound: float | None
    calibrated: float | None
    null: SwapNull | None
    rate: float | None
    family: FamilyLevel | None = None
    together: JointFalseAlarm | None = None


def limit_and_excess(bound: Bound, value: float, reference_value: float | None) -> tuple[float, float]:
    """The limit ``bound`` sets on the candidate's value, and by how much the value is past it.

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


def excess_over(value: float, limit: float, upper: bool) -> float:
    """How far ``value`` is past ``limit`` (> 0 violates); equal infinities are on the limit, not NaN."""
    if value == limit:
        return 0.0
    return value - limit if upper else limit - value


def interval_excess(bound: Bound, interval: BootstrapInterval, reference_value: float | None) -> float:
    """The smallest excess over ``bound`` at the ends of a bootstrap interval.

    For absolute bounds the interval is of the candidate's value; for relative bounds it is of
    (candidate - reference), and the limit is placed relative to the reference's point value.
    """
    ends = (interval.low, interval.high)
    if bound.kind in ("max", "min"):
        return min(limit_and_excess(bound, end, None)[1] for end in ends)
    assert reference_value is not None
    return min(limit_and_excess(bound, reference_value + end, reference_value)[1] for end in ends)


def swap_key(inputs: GateInputs) -> tuple[object, ...] | None:
    """What a gate's null shares with other gates' nulls, or ``None`` when it has none to share.

    Gates whose nulls swap the same topics with the same partner under the same seed (drawing from as many runs of
    each, when a system is given as several) see the same swaps, swap for swap (a Monte-Carlo draw of fewer swaps
    is the start of a longer one). A null with a NaN gives no
    limit (the gate fails on its own).
    """
    null = inputs.null
    if null is None or null.distribution.by_swap is None or np.isnan(null.distribution.by_swap).any():
        return None
    return null.topics, null.partner, null.distribution.exact, null.distribution.seed, null.distribution.runs


def family_key(inputs: GateInputs) -> tuple[object, ...] | None:
    """What a calibrated gate shares with the rest of its family, or ``None``: its swaps (:func:`swap_key`) and
    its ``false_alarm``, as gates that ask for different rates form one family per rate (docs/mathematics.md §7)."""
    key = swap_key(inputs)
    if key is None or inputs.gate.false_alarm is None:
        return None
    return (*key, inputs.gate.false_alarm)


def _groups(keys: Sequence[tuple[object, ...] | None]) -> list[list[int]]:
    """Positions with the same key, for keys shared by more than one position (``None`` joins nothing)."""
    groups: dict[tuple[object, ...], list[int]] = {}
    for position, key in enumerate(keys):
        if key is not None:
            groups.setdefault(key, []).append(position)
    return [members for members in groups.values() if len(members) > 1]


def family_levels(gates: Sequence[GateInputs]) -> dict[int, tuple[FamilyLevel, SwapNull]]:
    """The family of every calibrated gate that shares its swaps and rate with others, by position in ``gates``:
    the family's per-gate level and the gate's null over the swaps the family shares.

    docs/mathematics.md §7, family-wise limits (:func:`~pytest_bvtest.stats.calibration.family_level`): each
    gate's limit lets at most the same count of the shared swaps past it, the largest count at which the gates
    together fail at most their ``false_alarm`` share of the swaps. A family of one is the gate's own calibration.
    """
    levels = {}
    for members in _groups([family_key(inputs) for inputs in gates]):
        nulls = [gates[position].null.distribution for position in members]  # type: ignore[union-attr]
        shared = min(null.swaps for null in nulls)
        nulls = [null.first(shared) for null in nulls]
        rate = gates[members[0]].gate.false_alarm
        family = family_level(
            np.array([null.by_swap for null in nulls]), [null.higher_is_better for null in nulls], rate
        )
        levels.update({position: (family, null) for position, null in zip(members, nulls)})
    return levels


def gate_limit(inputs: GateInputs, family: tuple[FamilyLevel, SwapNull] | None = None) -> GateLimit:
    """The effective limit of one gate: its bound's, its calibrated one (the family's level when given), or the
    more lenient of both; NaN when either is undefined (a NaN reference value or null)."""
    gate, gate_null = inputs.gate, inputs.null
    null = family[1] if family is not None else (gate_null.distribution if gate_null is not None else None)
    limits = []
    bound = None
    if gate.bound is not None:
        bound = limit_and_excess(gate.bound, inputs.value, inputs.reference_value)[0]
        limits.append(bound)
    calibrated = None
    if gate.false_alarm is not None:
        assert gate_null is not None and null is not None, "a calibrated gate needs its null of no change"
        quantile = null.limit(gate.false_alarm) if family is None else null.limit_past(family[0].count)
        calibrated = quantile + gate_null.offset
        limits.append(calibrated)
    lenient = max(limits) if inputs.upper else min(limits)
    value = float("nan") if any(math.isnan(each) for each in limits) else lenient
    rate = None if null is None else null.false_alarm_rate(value - gate_null.offset)  # type: ignore[union-attr]
    return GateLimit(value, bound, calibrated, null, rate, None if family is None else family[0])


def gate_limits(gates: Sequence[GateInputs], family: bool) -> list[GateLimit]:
    """Every gate's limit, by position in ``gates``: its family's level where calibrated gates share their swaps
    and their rate and ``family`` is on (:func:`family_levels`), else its own (:func:`gate_limit`)."""
    levels = family_levels(gates) if family else {}
    return [gate_limit(inputs, levels.get(position)) for position, inputs in enumerate(gates)]


def joint_false_alarms(gates: Sequence[GateInputs], limits: Sequence[GateLimit]) -> dict[int, JointFalseAlarm]:
    """For every gate that shares its swaps with others (:func:`swap_key`), by position: how often an equal change
    fails at least one of them at their effective limits, in either calibration mode (docs/mathematics.md §7)."""
    joint = {}
    for members in _groups([swap_key(inputs) for inputs in gates]):
        nulls = [gates[position].null for position in members]
        shared = min(null.distribution.swaps for null in nulls)  # type: ignore[union-attr]
        failing = np.zeros(shared, dtype=bool)
        for position, null in zip(members, nulls):
            values = null.distribution.by_swap[:shared]  # type: ignore[union-attr,index]
            limit = limits[position].value - null.offset  # type: ignore[union-attr]
            slack = TOLERANCE * max(1.0, abs(limit)) if math.isfinite(limit) else 0.0
            failing |= values > limit + slack if gates[position].upper else values < limit - slack
        together = JointFalseAlarm(tuple(gates[position].id for position in members), float(failing.mean()), shared)
        joint.update(dict.fromkeys(members, together))
    return joint
