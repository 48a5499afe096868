"""What a gate catches: its minimum detectable effects, and a ``detect:`` aim it would miss."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_bvtest.report.wording.numbers import _float, _gates, _spec_path, about, display_path, percent


def model_words(model: str, power: Mapping[str, Any]) -> str:
    """Where a regression model drops the score: ``on every query``, ``on 5 of the 50 queries``."""
    if model == "uniform":
        return "on every query"
    return f"on {power['harmed']:,} of the {power['topics']:,} queries (10%)"


def _drop(value: float) -> str:
    return f"{value:.3g}"


def power_cell(gate: Mapping[str, Any]) -> str:
    """The gate's MDE under each model for a table cell: ``0.0716 / never`` (every query / 10% of them); ``-``
    where power was not measured."""
    power = gate.get("power")
    if not power or power.get("skipped"):
        return "-"
    return " / ".join("never" if m["mde"] is None else _drop(float(m["mde"])) for m in power["models"])


def power_legend(document: Mapping[str, Any]) -> str | None:
    """What the tables' MDE column says, with the draws behind it; ``None`` when no gate has a power."""
    powers = [
        gate["power"]
        for evaluation in document["evaluations"]
        for gate in evaluation["gates"]
        if gate.get("power") and not gate["power"].get("skipped")
    ]
    if not powers:
        return None
    seeds = sorted({power["seed"] for power in powers})
    draws = sorted({power["draws"] for power in powers})
    return (
        f"MDE (all / 10%): the smallest drop in a query's score that each gate catches {powers[0]['level']:.0%} of the "
        f"time, on every query / on 10% of them ({'/'.join(f'{d:,}' for d in draws)} seeded draws of an equal-quality "
        "change made worse, each with the limits this check would set for it, seed "
        f"{'/'.join(str(seed) for seed in seeds)}); never: not even a drop to the measure's minimum. A green gate says "
        "nothing about smaller drops."
    )


def power_lines(document: Mapping[str, Any]) -> list[str]:
    """What a green is worth against a worse change, once per spec, measure and segment: the smallest drop on every
    query, and on 10% of the queries, that fails the check at least 80% of the time, with the gate that catches it
    (the check fails when any gate does, so at least as often as its most powerful gate: docs/mathematics.md §9)."""
    lines = []
    for evaluation in document["evaluations"]:
        groups: dict[str | None, list[Mapping[str, Any]]] = {}
        for gate in evaluation["gates"]:
            if gate.get("power") and not gate["power"].get("skipped"):
                groups.setdefault((gate.get("segment") or {}).get("name"), []).append(gate)
        for segment, gates in groups.items():
            where = f", segment {segment}" if segment is not None else ""
            head = f"Power ({display_path(evaluation['spec'])}, {evaluation['measure']}{where}): "
            lines.append(head + _check_power(gates))
    return lines


def _check_power(gates: Sequence[Mapping[str, Any]]) -> str:
    """The smallest drop under each model that some gate of ``gates`` (on the same topics) catches, in words."""
    power = gates[0]["power"]
    caught, missed = [], []
    for model in ("uniform", "few"):
        found = [
            (float(each["mde"]), gate["label"])
            for gate in gates
            for each in gate["power"]["models"]
            if each["model"] == model and each["mde"] is not None
        ]
        where = model_words(model, power).removesuffix(" (10%)")
        if found:
            drop, label = min(found)
            caught.append(f"{'a drop' if not caught else 'one'} of {_drop(drop)} {where} ({label})")
        else:
            missed.append(where)
    level = f"{power['level']:.0%} of the time"
    if not caught:
        return f"no drop {' or '.join(missed)} fails this check {level}, however large."
    text = f"{' or '.join(caught)} fails this check at least {level}; smaller drops can pass"
    return text + (f", and so can a drop {' or '.join(missed)}, however large." if missed else ".")


#: What ``bvtest calibrate``'s aim columns say (docs/mathematics.md §9 "Topics needed").
AIM_COLUMNS_NOTE = (
    "catches the aim: how often each gate fails a drop of the asked size (--detect, else the gate's detect:); topics "
    "needed: about how many topics like these it needs to catch it 80% of the time, an estimate (the mean by its "
    "closed form, the others by resampling topics); no number: more topics do not get there (its bound lets such a "
    "drop pass, or the statistic does not move under it)."
)


def power_text(gate: Mapping[str, Any]) -> str | None:
    """The gate's power in a sentence: the drop it catches under each model, or why it catches none
    (docs/mathematics.md §9); ``None`` when the spec leaves power out."""
    power = gate.get("power")
    if not power:
        return None
    if power.get("skipped"):
        return f"power not measured: {power['skipped']}"
    level, measure, label = power["level"], gate["measure"], gate["label"]
    parts = []
    for each in power["models"]:
        where = model_words(each["model"], power)
        if each["mde"] is not None and float(each["mde"]) == 0:
            parts.append(f"fails most equal-quality changes already, so any drop {where}")
        elif each["mde"] is not None:
            error = f" (±{float(each['error']):.1g})" if each.get("error") is not None else ""
            parts.append(
                f"catches a drop of {_drop(float(each['mde']))}{error} in {measure} {where} {level:.0%} of the time"
            )
        elif not each["moves"]:
            parts.append(f"cannot see a drop {where}: {label} does not get worse under it")
        else:
            parts.append(
                f"misses a drop of any size {where} (at most {percent(_float(each['power']))} of the time, even "
                "down to the measure's minimum)"
            )
    partner = f" swapping with {power['reference']}" if power["reference"] else ""
    method = ", sums drawn from their Gaussian" if power["method"] == "gaussian" else ""
    swaps = power.get("swaps")
    family = power.get("family") or 1
    limits = (
        ""
        if swaps is None
        else f", each with its own limit{'s' if family > 1 else ''} from {swaps:,} swaps of its null"
        + (f" and its family of {family} gates" if family > 1 else "")
    )
    return f"power: {'; '.join(parts)} ({power['draws']:,} draws{partner}{limits}, seed {power['seed']}{method})"


def missed_aim_text(gate: Mapping[str, Any]) -> str | None:
    """Why a passing gate with a ``detect:`` aim is ``OK*``: the drop it would miss, and the topics it would need."""
    if not gate.get("missed_aim"):
        return None
    power = gate["power"]
    aim = power["aim"]
    drop = _drop(aim["drop"])
    if aim["relative"] is not None:
        drop += f" ({aim['relative'] * 100:g}% of {power['reference'] or 'the reference'}'s mean)"
    where = model_words(aim["model"], power) if aim["model"] == "uniform" else "on 10% of the queries"
    text = (
        f"this gate would miss a drop of {drop} in {gate['measure']} {where} on {aim['topics']:,} topics: it "
        f"catches it {percent(_float(aim['power']))} of the time, not {aim['level']:.0%}"
    )
    if aim["topics_needed"] is not None:
        return f"{text}; it needs about {about(aim['topics_needed'])} topics like these (an estimate)"
    return (
        f"{text}; more topics like these would not get there (its bound lets such a drop pass, or {gate['label']} "
        "does not move under it)"
    )


def _missed_aim_groups(document: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The passing gates of a spec that would miss their ``detect:`` aim, by gate id, when there are several: said
    once on the first screen (DL-HARD's three mean gates, one per measure, each had its own warning)."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for gate in _gates(document):
        if missed_aim_text(gate):
            aim = gate["power"]["aim"]
            key = (_spec_path(gate), aim["relative"], aim["model"], aim["level"], aim["topics"])
            groups.setdefault(key, []).append(gate)
    return {gate["id"]: gates for gates in groups.values() if len(gates) > 1 for gate in gates}


def missed_aims_text(gates: Sequence[Mapping[str, Any]]) -> str:
    """One warning for several gates that would miss their ``detect:`` aim: each gate's drop, how often it catches
    it, and the topics it would need (:func:`missed_aim_text` says it for one)."""
    parts = []
    for gate in gates:
        aim = gate["power"]["aim"]
        needed = (
            f"about {about(aim['topics_needed'])} topics needed"
            if aim["topics_needed"] is not None
            else "no number of topics gets there"
        )
        parts.append(
            f"{gate['measure']} {gate['label']} misses a drop of {_drop(aim['drop'])} "
            f"({percent(_float(aim['power']))} caught; {needed})"
        )
    first = gates[0]["power"]["aim"]
    where = model_words(first["model"], gates[0]["power"]) if first["model"] == "uniform" else "on 10% of the queries"
    relative = f"{first['relative'] * 100:g}% of the reference's mean, " if first["relative"] is not None else ""
    return (
        f"{len(gates)} gates catch the drop their detect: asks for ({relative}{where} on {first['topics']:,} "
        f"topics) less than {first['level']:.0%} of the time: {'; '.join(parts)} (the topics are estimates)"
    )
