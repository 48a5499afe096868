"""A gate's words: its headline, its plain sentence and its whole message, its cells in the table of every gate, the
topics it blames, and the words recorded with its verdict in the session document (:func:`with_words`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_bvtest.report.wording.guards import guard_message, guard_warnings
from pytest_bvtest.report.wording.judgments import (
    _corner_outcomes,
    _corners_disagree,
    _deciding,
    _settle,
    _topic_unjudged,
    _weighed,
    corner_lines,
    undecided_text,
    unjudged_hint,
)
from pytest_bvtest.report.wording.numbers import (
    _ROUNDING,
    _float,
    _gates,
    _side,
    figure,
    format_number,
    gate_name,
    percent,
    short_number,
)
from pytest_bvtest.report.wording.power import missed_aim_text, power_cell, power_text
from pytest_bvtest.stats.registry import STATISTICS


def gate_warnings(evaluation: Mapping[str, Any], gate: Mapping[str, Any]) -> list[str]:
    """A gate's own reasons for ``OK*`` that its measure's guards (:func:`guard_warnings`) do not already give:
    passed within noise, or a calibrated limit that cannot fail."""
    listed = set(guard_warnings(evaluation))
    own = [gate[key] for key in ("warning", "undecided") if gate.get(key)]
    return own + [message for message in gate.get("guards") or [] if message not in listed]


def _compares_already(gate: Mapping[str, Any]) -> bool:
    """The gate's statistic already compares the candidate with its reference (TRisk, URisk, ...): its value is no
    level of its own to subtract the reference's from."""
    statistic = STATISTICS.get(gate["statistic"])
    return statistic is not None and statistic.needs_reference and gate.get("reference_value") is None


def _typical(gate: Mapping[str, Any]) -> float | None:
    return _float((gate.get("calibration") or {}).get("typical"))


def delta_text(gate: Mapping[str, Any]) -> str:
    """``+0.0105 (worse)``: the candidate's change, and whether it is for the better or the worse.

    The change is candidate minus reference; for a statistic that already compares the two (TRisk, URisk), it is the
    change from what an equal-quality change typically gets (the null's median: with losses weighted that is below
    0, so a negative TRisk alone is no loss), and ``-`` without a null. The word is the change's verdict in the
    statistic's own direction (a lower Var is better), so a reader need not know which way each statistic points;
    whether the gate passes is the limit's call.
    """
    if _compares_already(gate):
        typical = _typical(gate)
        delta = None if typical is None else _float(gate["value"]) - typical
    else:
        delta = _float(gate.get("delta"))
    if delta is None or math.isnan(delta):
        return "-"
    if not math.isfinite(delta) or abs(delta) <= _ROUNDING:
        return f"{delta:+.4g}" if abs(delta) > _ROUNDING else "0 (no change)"
    better = (delta > 0) == gate.get("higher_is_better", True)
    return f"{delta:+.4g} ({'better' if better else 'worse'})"


def reference_text(gate: Mapping[str, Any]) -> str:
    """What a gate's value is compared with: ``0.0706 production``; for a statistic that already compares the two,
    ``-1.12 equal change`` (the null's median), else ``against production``; ``-`` without a reference."""
    if not gate.get("reference"):
        return "-"
    if gate.get("reference_value") is not None:
        return f"{figure(gate['reference_value'], gate['value'])} {gate['reference']}"
    typical = _typical(gate)
    if _compares_already(gate) and typical is not None:
        return f"{figure(typical, gate['value'])} equal change"
    return f"against {gate['reference']}"


def limit_cell(gate: Mapping[str, Any]) -> str:
    """``<= 0.0839``; ``none can fail`` for a calibrated limit that no equal-quality change crosses (the null is too
    coarse: its number would suggest a check that is not made), ``undefined`` for a NaN one."""
    if gate.get("cannot_fail"):
        return "none can fail"
    if gate.get("limit") is None:
        return "undefined"
    return f"{_side(gate)} {figure(gate['limit'], gate['value'])}"


def interval_text(gate: Mapping[str, Any]) -> str:
    """``candidate - reference [-0.41, 0.02] 95%, seed 0``, or ``-`` for a gate without a bootstrap interval."""
    interval = gate.get("interval")
    if interval is None:
        return "-"
    what = "candidate - reference" if gate.get("reference_value") is not None else "candidate"
    return (
        f"{what} [{figure(interval['low'])}, {figure(interval['high'])}] "
        f"{interval['confidence']:.0%}, seed {interval['seed']}"
    )


#: The columns of the table of every gate, each cell rendered by :func:`gate_cells`.
GATE_COLUMNS = (
    "outcome",
    "gate",
    "value",
    "reference",
    "change",
    "limit",
    "rule",
    "false alarm",
    "as bad",
    "mde",
    "interval",
)


#: How the table of every gate heads its columns.
GATE_HEADERS = {
    "outcome": "outcome",
    "gate": "gate",
    "value": "value",
    "reference": "compared with",
    "change": "change",
    "limit": "limit",
    "rule": "rule",
    "false alarm": "false alarm",
    "as bad": "equal change as bad",
    "mde": "MDE (all / 10%)",
    "interval": "bootstrap interval",
}


def gate_cells(document: Mapping[str, Any], gate: Mapping[str, Any]) -> dict[str, str]:
    """A gate's cells in the table of every gate (:data:`GATE_COLUMNS`): outcome, name, value, what it is compared
    with, the change (better or worse), the limit and the rule that set it, the gate's own false-alarm rate (how
    often an equal-quality change fails it), how often an equal-quality change is as bad as the candidate, and the
    bootstrap interval."""
    calibration = gate.get("calibration") or {}
    return {
        "outcome": gate["outcome"],
        "gate": gate_name(document, gate),
        "value": figure(gate["value"], gate.get("limit"), gate.get("reference_value")),
        "reference": reference_text(gate),
        "change": delta_text(gate),
        "limit": limit_cell(gate),
        "rule": gate.get("rule") or "-",
        "false alarm": "-" if calibration.get("rate") is None else percent(calibration["rate"]),
        "as bad": "-" if calibration.get("p_value") is None else percent(calibration["p_value"]),
        "mde": power_cell(gate),
        "interval": interval_text(gate),
    }


def gate_table_columns(gates: Sequence[Mapping[str, Any]], *, rule: bool = True) -> list[str]:
    """The columns of :data:`GATE_COLUMNS` that some gate fills (no empty interval or rate column)."""
    columns = [column for column in GATE_COLUMNS if rule or column != "rule"]
    if not any(gate.get("calibration") for gate in gates):
        columns = [column for column in columns if column not in ("false alarm", "as bad")]
    if not any(gate.get("interval") for gate in gates):
        columns.remove("interval")
    if not any(gate.get("power") and not gate["power"].get("skipped") for gate in gates):
        columns.remove("mde")
    return columns


def calibration_note(document: Mapping[str, Any]) -> str | None:
    """How the false-alarm rates of the gate table were drawn: ``false alarm: how often an equal-quality change
    fails the gate (10,000 swaps with production, seed 0); equal change as bad: ...``."""
    drawn = []
    for gate in _gates(document):
        calibration = gate.get("calibration")
        if calibration:
            how = (
                f"all {calibration['swaps']:,} swaps with {calibration['reference']}"
                if calibration["exact"]
                else f"{calibration['swaps']:,} swaps with {calibration['reference']}, seed {calibration['seed']}"
            )
            drawn.append(how)
    if not drawn:
        return None
    return (
        "false alarm: how often an equal-quality change (the candidate's and the reference's scores swapped on "
        "random topics) fails the gate at its limit; equal change as bad: how often it is at least as bad as the "
        f"candidate (the gate's one-sided p-value); {'; '.join(dict.fromkeys(drawn))}"
    )


def blame_rows(gate: Mapping[str, Any]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The blamed topics of a gate as a header and rows: scores, their difference, each topic's share.

    The share column is left out where the topics were ranked by their raw loss (no per-topic split).
    """
    worst = gate.get("worst_topics") or []
    against = gate.get("worst_against") or "the comparison"
    with_text = any(impact.get("text") for impact in worst)
    with_share = gate.get("blame_by", "contribution") == "contribution" and any(
        impact.get("contribution") is not None for impact in worst
    )
    label = gate.get("label") or gate["statistic"]
    # where the gate has corners: each topic's unjudged documents in the two top d (docs/mathematics.md §10)
    depth = (gate.get("judgments") or {}).get("depth")
    unjudged = [] if depth is None or not worst or worst[0].get("unjudged") is None else [gate["system"]]
    if unjudged and worst[0].get("compared_unjudged") is not None:
        unjudged.append(against)
    header = (
        "topic",
        *(["query"] if with_text else []),
        gate["system"],
        against,
        f"{label} term Δ" if gate.get("blame_by") == "term difference" else "score Δ",
        *([f"moves {label} by"] if with_share else []),
        *(f"unjudged in {name}'s top {depth}" for name in unjudged),
    )
    rows = [
        (
            impact["topic"],
            *([impact.get("text") or ""] if with_text else []),
            format_number(impact["candidate"]),
            format_number(impact["compared"]),
            f"{impact['delta']:+.4f}",
            *(
                [
                    format_number(impact["contribution"])
                    if impact["contribution"] is None
                    else f"{float(impact['contribution']):+.4g}"
                ]
                if with_share
                else []
            ),
            *(str(impact[key]) for key in ("unjudged", "compared_unjudged")[: len(unjudged)]),
        )
        for impact in worst
    ]
    return header, rows


def blame_heading(gate: Mapping[str, Any]) -> str:
    """What the table of :func:`blame_rows` lists: by each topic's share of the change, by term, or by raw loss."""
    label = gate.get("label") or gate["statistic"]
    against = gate.get("worst_against") or "the comparison"
    worst = gate.get("worst_topics") or []
    basis = gate.get("blame_by", "contribution")
    if basis == "raw loss" or (worst and worst[0].get("contribution") is None):
        return f"Topics that lost most against {against} ({label} has no per-topic split here):"
    if basis == "term difference":
        return f"Topics whose per-topic {label} grew most against {against} (the simulation's per-topic terms):"
    if basis == "score difference":
        return f"Topics that lost most against {against}:"
    return f"Topics that moved {label} most the wrong way (each topic's share of the change against {against}):"


def rule_text(bound: str | None, false_alarm: float | None) -> str:
    """The gate's limit as the spec wrote it: ``max_increase 5%``, ``false_alarm 5%``, or both."""
    calibrated = None if false_alarm is None else f"false_alarm {percent(false_alarm)}"
    return " + ".join(text for text in (bound, calibrated) if text)


def calibration_text(gate: Mapping[str, Any]) -> str:
    """``false-alarm rate 4.9% (10,000 swaps with production, seed 0)``: how often an equal-quality change fails
    this gate at its limit; ``family-wise`` when its limit shares its ``false_alarm`` with other gates (the rate of
    them together is said once, by :func:`sure_lines`)."""
    calibration = gate["calibration"]
    drawn = (
        f"all {calibration['swaps']:,} swaps with {calibration['reference']}"
        if calibration["exact"]
        else f"{calibration['swaps']:,} swaps with {calibration['reference']}, seed {calibration['seed']}"
    )
    runs = calibration.get("runs")
    if runs:
        drawn += f"; engine noise from {runs['candidate']} and {runs['reference']} runs"
    family = calibration.get("family")
    shared = (
        ""
        if not family
        else f", family-wise with {family['gates']} gates at false_alarm {percent(family['false_alarm'])} together"
    )
    return f"false-alarm rate {percent(_float(calibration['rate']))}{shared} ({drawn})"


def _verdict_word(gate: Mapping[str, Any]) -> str:
    if gate.get("outcome") == "UNDECIDED":
        return "UNDECIDED"
    if not gate["passed"]:
        return "FAILED"
    if gate.get("within_noise"):
        return "passed within noise"
    return "passed with a warning" if gate_reasons(gate) else "passed"


def undefined_text(gate: Mapping[str, Any]) -> str | None:
    """Which number of a gate is undefined and why that fails it, or ``None`` (docs/mathematics.md §7)."""
    label, undefined = gate["label"], gate.get("undefined")
    if undefined == "value":
        return f"{gate['system']}'s {label} is NaN: the statistic is undefined on these per-topic scores"
    if undefined == "unconverged":
        return (
            f"{label}'s fixed point was not reached within its iterations, so {gate['system']}'s {label} "
            f"{_float(gate['value']):.6g} is not a value to judge"
        )
    if undefined == "reference_value":
        return f"{gate['reference']}'s {label} is NaN, so the limit relative to it is undefined"
    if undefined == "null":
        return f"{label} is NaN on some swaps of the null of no change, so the calibrated limit is undefined"
    if undefined == "limit":
        return f"the limit of {label} is NaN"
    return None


def judged_text(gate: Mapping[str, Any]) -> str:
    """What the gate judges: ``nDCG@10 Mean``, or on one segment ``nDCG@10 Mean on segment tail (12 topics)``."""
    segment = gate.get("segment")
    where = "" if not segment else f" on segment {segment['name']} ({segment['topics']} topics)"
    return f"{gate['measure']} {gate['label']}{where}"


def headline(gate: Mapping[str, Any]) -> str:
    """The first line of a gate's message: verdict, value, the rule and its limit, the margin, the calibration."""
    verdict = _verdict_word(gate)
    undefined = undefined_text(gate)
    if undefined is not None:
        never = "a gate never passes on it" if gate.get("undefined") == "unconverged" else "a gate never passes on NaN"
        return f"{judged_text(gate)} {verdict}: undefined: {undefined}; {never}"
    versus = ""
    if gate["reference"] is not None:
        versus = (
            f" against {gate['reference']}"
            if gate["reference_value"] is None
            else f" vs {gate['reference']} {_float(gate['reference_value']):.6g}"
        )
    relation = "<=" if gate["upper"] else ">="
    excess = _float(gate["excess"])
    # up to the rounding tolerance past the limit the gate passes: its headroom is 0, not "past the limit by
    # 5.55e-17" (a pass within noise is past it for real); max(0.0, -excess): never "-0"
    past = excess > _ROUNDING or (excess > 0 and not gate["passed"])
    margin = f"past the limit by {excess:.6g}" if past else f"headroom {max(0.0, -excess):.6g}"
    judgments = gate.get("judgments")
    if judgments and _corners_disagree(judgments):
        # where the value stands as judged: past its limit also when it passes within noise (OK* as judged)
        past = excess > _ROUNDING or (excess > 0 and not judgments["as_judged"])
        margin = (
            f"past the limit by {excess:.6g} as judged; " if past else f"headroom {max(0.0, -excess):.6g} as judged; "
        )
        weighed = _weighed(judgments)
        margin += _deciding(judgments) if weighed is None or judgments["undecided"] else weighed
        if weighed is not None and judgments["undecided"]:
            margin += f"; {weighed}"
    if _failing_guard(gate) is not None:
        margin += f"; fails: {_failing_guard(gate)['kind'].replace('_', ' ')}"
    rule = f"bound {gate['rule']}" if gate["bound"] is not None else gate["rule"]
    calibration = f"; {calibration_text(gate)}" if gate.get("calibration") else ""
    typical = _typical(gate)
    if _compares_already(gate) and typical is not None:
        versus += f" (an equal-quality change: {typical:.6g})"
    # a limit no equal-quality change crosses is no check: its number is not printed (the warning says why)
    limit = (
        f"{rule} gives no limit that can fail"
        if gate.get("cannot_fail")
        else f"{rule} requires {relation} {_float(gate['limit']):.6g}; {margin}"
    )
    value = f"{gate['system']} {_float(gate['value']):.6g}{versus}"
    return f"{judged_text(gate)} {verdict}: {value}; {limit}{calibration}"


def _failing_guard(gate: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The guard that fails the gate whatever its numbers say (nothing judged), or ``None``."""
    return next((guard for guard in gate.get("guard_facts") or [] if guard["severity"] == "failure"), None)


def within_noise_text(gate: Mapping[str, Any]) -> str | None:
    """Why a gate past its bound passed (``OK*``): its bootstrap interval reaches the safe side."""
    if not gate.get("within_noise"):
        return None
    interval = gate["interval"]
    return (
        f"point estimate past the bound by {_float(gate['excess']):.4g}, but the {interval['confidence']:.0%} "
        f"interval [{_float(interval['low']):.4g}, {_float(interval['high']):.4g}] reaches the safe side: "
        "within noise (OK*)"
    )


def cannot_fail_text(gate: Mapping[str, Any]) -> str | None:
    """Why a calibrated limit that no swap crosses cannot fail: the null is too coarse for the rate asked.

    With ``2**n`` swaps for few topics, or few topics where the two systems differ, the null's most extreme
    value holds more than ``P`` of the swaps; the ``P``-quantile is then that extreme, which no equal change
    crosses, and neither does a worse one that sits on it (docs/mathematics.md §7).
    """
    coarse = gate.get("cannot_fail")
    if not coarse:
        return None
    label, calibration = gate["label"], gate["calibration"]
    partner = calibration["reference"]
    family = calibration.get("family")
    level = (
        f"false_alarm {percent(calibration['false_alarm'])}"
        if not family
        else f"the family's per-gate level {percent(family['level'])}"
    )
    drawn = f"all {coarse['swaps']:,} swaps" if coarse["exact"] else f"{coarse['swaps']:,} swaps"
    smallest = percent(coarse["smallest_rate"])
    return (
        f"the null of no change is too coarse for {level}: its most extreme {label} already holds "
        f"{smallest} of {drawn} with {partner} (too few topics, or too few that differ), so the "
        f"limit sits on it and this gate cannot fail; add topics, or raise false_alarm to at least {smallest}"
    )


def gate_reasons(gate: Mapping[str, Any]) -> list[str]:
    """The warnings a gate carries besides a pass within noise: its measure's guards that concern it, then its
    own (a calibrated limit that cannot fail, a ``detect:`` aim it would miss)."""
    own = [text for text in (cannot_fail_text(gate), missed_aim_text(gate)) if text]
    return [guard_message(guard) for guard in gate.get("guard_facts") or []] + own


def blame_title(gate: Mapping[str, Any]) -> str:
    """What the list of blamed topics is: by contribution to the statistic, or by raw loss. A simulation
    statistic's topics show its per-topic terms (docs/mathematics.md §3e), not scores."""
    label, against = gate["label"], gate["worst_against"]
    if gate["blame_by"] == "raw loss":
        return f"topics that lost most against {against} ({label} has no per-topic split)"
    if gate["blame_by"] == "term difference":
        return f"topics whose per-topic {label} grew most (per-topic terms vs {against})"
    return f"topics that moved {label} most the wrong way (scores vs {against})"


def sentence(gate: Mapping[str, Any]) -> str:
    """One sentence for a reader who never heard of the statistic: what the gate protects, what happened.

    The wording is the statistic's own (:class:`~pytest_bvtest.stats.registry.Wording`), e.g. "Quality varies
    more from query to query or sits further below the best achievable than in production (Bias²+Var 0.0879 vs
    0.0774, limit 0.0812)."
    """
    statistic = STATISTICS[gate["statistic"]]
    wording = statistic.wording
    assert wording is not None, f"{gate['statistic']} has no wording"
    reference = gate["reference"] or "the reference"
    undefined = undefined_text(gate)
    if undefined is not None:
        never = "a gate never passes on it" if gate.get("undefined") == "unconverged" else "a gate never passes on NaN"
        return f"{statistic.label} cannot be judged: {undefined}; {never}."
    value, limit = _float(gate["value"]), _float(gate["limit"])
    segment = gate.get("segment")
    numbers = (
        f"{'' if not segment else 'segment ' + segment['name'] + ': '}{statistic.label} {short_number(value, limit)}"
    )
    if gate["reference_value"] is not None:
        numbers += f" vs {short_number(_float(gate['reference_value']), limit)}"
    if gate.get("cannot_fail"):
        numbers += ", no limit that can fail"
    else:
        numbers += f", limit {short_number(limit, value)}"
        if gate.get("calibration"):
            numbers += f" at a {percent(_float(gate['calibration']['rate']))} false-alarm rate"
    than = f" than in {gate['reference']}" if gate["reference_value"] is not None else " than allowed"
    worse = wording.worse.replace("the reference", reference) + than
    failing = _failing_guard(gate)
    if failing is not None:
        return f"Fails whatever its numbers say ({numbers}): {failing['message']}."
    judgments = gate.get("judgments")
    if judgments and _corners_disagree(judgments):
        as_judged = "holds" if judgments["as_judged"] else "fails"
        corners = _corner_outcomes(judgments, gate["measure"])
        weighed = _weighed(judgments, counted=False)
        if weighed is None:
            return f"Undecided: {as_judged} as judged ({numbers}), but {corners}."
        # the gradings' count and prior are the measure's, said once beside its judged shares (judged_line)
        if judgments["undecided"]:
            return f"Undecided: {as_judged} as judged ({numbers}), {weighed}; {corners}{_settle(judgments)}."
        if gate["passed"]:
            return f"Holds: {weighed}; {as_judged} as judged ({numbers}); it only {corners}."
        return f"{worse}: {weighed}; {as_judged} as judged ({numbers}); it only {corners}."
    reasons = gate_reasons(gate)
    if gate["passed"] and reasons and not gate.get("within_noise"):
        # the warnings themselves follow the sentence (terminal) or head the report (Markdown): point to them
        why = "a warning says why" if len(reasons) == 1 else f"{len(reasons)} warnings say why"
        return f"Holds on paper, but do not trust it: {why} ({numbers})."
    if gate["passed"] and not gate.get("within_noise"):
        return f"Holds: {wording.protects.replace('the reference', reference)} ({numbers})."
    confidence = (gate.get("interval") or {}).get("confidence")
    if gate["passed"]:
        return f"Within noise: {worse} ({numbers}), but the {confidence:.0%} interval reaches the safe side."
    beyond = f"; the whole {confidence:.0%} interval is past the limit" if gate.get("interval") else ""
    return f"{worse} ({numbers}{beyond})."


def message(gate: Mapping[str, Any]) -> str:
    """A gate's whole explanation, as pytest prints a failing gate: headline, sentence, interval, warnings and,
    when the statistic itself is in doubt (a failure, a pass within noise, a limit that cannot fail), the topics
    that moved it most the wrong way."""
    lines = [headline(gate), f"  {sentence(gate)}"]
    interval = gate.get("interval")
    if interval is not None:
        kind = (gate.get("bound") or {}).get("kind")
        what = "candidate - reference" if kind in ("max_increase", "max_decrease") else "value"
        lines.append(
            f"  {interval['confidence']:.0%} bootstrap interval of {what}: "
            f"[{_float(interval['low']):.6g}, {_float(interval['high']):.6g}] (seed {interval['seed']})"
        )
    lines += [f"  {line}" for line in corner_lines(gate)]
    noise = within_noise_text(gate)
    reasons = gate_reasons(gate)
    lines += [f"  warning: {text}" for text in ([noise] if noise else []) + reasons]
    power = power_text(gate)
    if power and gate["passed"]:  # what a green could have caught; a red has caught something
        lines.append(f"  {power}")
    undecided = gate.get("outcome") == "UNDECIDED"
    if gate["worst_topics"] and (not gate["passed"] or noise or gate.get("cannot_fail") or undecided):
        lines.append(f"  {blame_title(gate)}:")
        label = gate["label"]
        for impact in gate["worst_topics"]:
            about = f" ({impact['text']})" if impact["text"] else ""
            contribution = _float(impact["contribution"])
            share = "" if contribution is None else f"; moves {label} by {contribution:+.4g}"
            lines.append(
                f"    {impact['topic']}{about}: {impact['candidate']:.4f} vs {impact['compared']:.4f} "
                f"({impact['delta']:+.4f}{share}{_topic_unjudged(gate, impact)})"
            )
        hint = unjudged_hint(gate)
        if hint is not None:
            lines.append(f"  hint: {hint}")
    return "\n".join(lines)


def failed_by_warning(gate: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """A passing gate whose pytest item failed because the session turned its warning into an error (``-W
    error::...GateGuardWarning``): counted as failed, as pytest counts it, its own explanation kept below."""
    said = f"{gate['measure']} {gate['label']} FAILED in this session: its warning is an error (pytest -W error)"
    return {
        **gate,
        "passed": False,
        "outcome": "FAIL",
        "headline": f"{said}: {reason}",
        "message": f"{said}: {reason}\n{gate['message']}",
        "sentence": f"{said}. {gate['sentence']}",
    }


def with_words(gate: Mapping[str, Any]) -> dict[str, Any]:
    """The gate's document with its words: ``warning`` (within noise), ``guards`` (every other warning),
    ``headline``, ``sentence`` and ``message``, so that every report shows the same words without rendering
    them again."""
    noise = within_noise_text(gate)
    undecided = {"undecided": undecided_text(gate), "hint": unjudged_hint(gate)} if gate.get("judgments") else {}
    return {
        **gate,
        "warning": noise,
        **undecided,
        "guards": gate_reasons(gate),
        "headline": headline(gate),
        "sentence": sentence(gate),
        "message": message(gate),
    }


def gate_summary(gate: Mapping[str, Any]) -> str:
    """One line with a gate's numbers, as a cause lists the gates it breaks: ``nDCG@10 Var 0.0877 vs 0.0706, limit
    <= 0.0839: quality varies more from query to query than in production``; for a statistic that already compares
    the two systems, its value is set beside what an equal-quality change typically gets."""
    undefined = undefined_text(gate)
    name = judged_text(gate)
    if undefined is not None:
        return f"{name}: undefined: {undefined}; a gate never passes on NaN"
    value = gate["value"]
    text = f"{name} {figure(value, gate['limit'])}"
    typical = _typical(gate)
    if gate.get("reference_value") is not None:
        text += f" vs {figure(gate['reference_value'], value)}"
    elif _compares_already(gate) and typical is not None:
        text += f" vs {figure(typical, value)} for an equal-quality change"
    text += f", limit {limit_cell(gate)}"
    statistic = STATISTICS.get(gate["statistic"])
    if statistic is not None and statistic.wording is not None and not gate["passed"]:
        reference = gate.get("reference") or "the reference"
        than = f" than in {reference}" if gate.get("reference_value") is not None else " than allowed"
        worse = statistic.wording.worse.replace("the reference", reference) + than
        text += f": {worse[0].lower()}{worse[1:]}"
    judgments = gate.get("judgments") or {}
    weighed = _weighed(judgments) if judgments and not judgments.get("undecided") else None
    if weighed is not None:  # a verdict the unjudged documents' plausible gradings decided: say what it rests on
        text += f" ({weighed})"
    return text
