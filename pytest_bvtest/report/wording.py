"""Every sentence a reviewer reads: the words that render a decision, for every report.

The judging layer decides and returns numbers (:mod:`pytest_bvtest.judging.decision`); the JSON session
document (:mod:`~pytest_bvtest.report.jsonreport`) carries them; this module turns them into words: a
gate's headline, its plain sentence and its whole message, each guard's warning, the calibration's
description, the summary counts, notes and titles that the terminal, Markdown, HTML, GitHub annotations
and JUnit messages all show. Every function reads the session document's dictionaries, so a report
rendered by the pytest controller from its workers' payloads says exactly what the command line says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_bvtest.errors import short_list
from pytest_bvtest.stats.registry import STATISTICS, TABLE_COLUMNS

TABLE_HEADER = ("system", "role", *(header for _, header in TABLE_COLUMNS), "gates")


OUTCOMES = ("OK", "OK*", "UNDECIDED", "FAIL")


# Topic lists in notes are cut after this many ids: the JSON report has them all.
_LISTED_TOPICS = 5


def format_number(value: float | str | None, decimals: int = 4) -> str:
    """``value`` with ``decimals`` decimals; ``-`` where a statistic is not computed (null); ``inf`` or
    ``-inf`` for the report's ``"Infinity"``/``"-Infinity"``."""
    return "-" if value is None else f"{float(value):.{decimals}f}"


def display_path(path: str) -> str:
    """``path`` relative to the current working directory when it lies inside it, else unchanged."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return path


def outcome_counts(gates: Sequence[Mapping[str, Any]]) -> str:
    """``"3 OK, 1 FAIL"`` for a system's gates, ``-`` when it has none."""
    counts = [(sum(gate["outcome"] == outcome for gate in gates), outcome) for outcome in OUTCOMES]
    return ", ".join(f"{count} {outcome}" for count, outcome in counts if count) or "-"


def system_rows(evaluation: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """One row of cells per system in document order, matching :data:`TABLE_HEADER`."""
    rows = []
    for system in evaluation["systems"]:
        gates = [gate for gate in evaluation["gates"] if gate["system"] == system["name"]]
        rows.append(
            (
                system["name"],
                system["role"],
                *(format_number(system[key]) for key, _ in TABLE_COLUMNS),
                outcome_counts(gates),
            )
        )
    return rows


def evaluation_title(evaluation: Mapping[str, Any]) -> str:
    """``spec · measure · n topics · target c``.

    Plus normalisation, grouping and a query-variation MVE form when set.
    """
    settings = evaluation.get("settings") or {}
    parts = [
        display_path(evaluation["spec"]),
        evaluation["measure"],
        f"{len(evaluation['topics'])} topics",
        f"target c = {format_number(evaluation['target']['c'])}",
    ]
    if settings.get("normalize") not in (None, "none"):
        parts.append(f"normalised {settings['normalize']}")
    grouping = settings.get("grouping")
    if grouping:
        text = f"topics grouped by {grouping['by']}, {grouping['size']} per group"
        if "seed" in grouping:
            text += f", {grouping['repeats']} repeats, seed {grouping['seed']}"
        parts.append(text)
    if settings.get("target_system"):
        parts.append(f"target system {settings['target_system']}")
    if settings.get("variance") == "sample":
        parts.append("sample variances (n - 1)")
    if settings.get("zrisk_against") == "target":
        parts.append("ZRisk/GeoRisk against the target")
    method = settings.get("mve_method")
    if method not in (None, "inter-topic"):  # with query variations the MVE column depends on the form
        parts.append(f"MVE {method}")
    return " · ".join(parts)


def tradeoff_text(evaluation: Mapping[str, Any]) -> str:
    tradeoff = evaluation["tradeoff"]
    return (
        f"Bias²/Var tradeoff across {len(evaluation['systems'])} systems: "
        f"Pearson {format_number(tradeoff['pearson'], 2)}, Spearman {format_number(tradeoff['spearman'], 2)}"
    )


def _topic_list(topics: Sequence[str]) -> str:
    return short_list(topics, _LISTED_TOPICS, rest=", ... (+{} more)")


def topic_notes(evaluation: Mapping[str, Any]) -> list[str]:
    """Per system, the evaluated topics its run lacks (scored 0), the query variations it lacks (scored 0
    inside their topic's mean) and the run topics outside the evaluated topics (ignored)."""
    notes = []
    total = len(evaluation["topics"])
    constant = evaluation["target"].get("constant_topics") or 0
    settings = evaluation.get("settings") or {}
    if constant and settings.get("normalize") == "group-target-ratio" and settings.get("grouping"):
        notes.append(
            f"{constant} of {total} topics lie in groups on which every system has the same score: "
            "each such group's ratio is 1 for all"
            + (" (averaged over the groupings)" if settings["grouping"].get("by") != "difficulty" else "")
        )
    elif constant:
        notes.append(f"{constant} of {total} topics have the same score for every system: normalised to 1 for all")
    for system in evaluation["systems"]:
        missing = system.get("missing_topics") or []
        ignored = system.get("ignored_topics") or []
        if missing:
            notes.append(
                f"{system['name']} has no ranking for {len(missing)} of {total} topics (scored 0): "
                f"{_topic_list(missing)}"
            )
        missing_queries = system.get("missing_queries") or []
        if missing_queries:
            notes.append(
                f"{system['name']} has no ranking for {len(missing_queries)} query variation(s), each scored 0 "
                f"in its topic's mean over variations: {_topic_list(missing_queries)}"
            )
        if ignored:
            topics = "topic" if len(ignored) == 1 else "topics"
            notes.append(
                f"{system['name']} ranked {len(ignored)} {topics} outside the evaluated topics (unjudged, or no "
                f"relevant document; ignored): {_topic_list(ignored)}"
            )
    notes += [guard["message"] for guard in evaluation.get("guards") or [] if guard["severity"] == "note"]
    return notes


def judged_line(evaluation: Mapping[str, Any]) -> str | None:
    """Each system's judged share of its top d (docs/mathematics.md §8), or, when every top d is judged, that
    alone; ``None`` where it is not known (per-topic tables)."""
    judgments = evaluation.get("judgments")
    if not judgments:
        return None
    label, depth = judgments["label"], judgments["depth"]
    if judgments["complete"]:
        return f"{label}: every system's top {depth} is judged"
    shares = ", ".join(
        f"{system['name']} {format_number(system['judged'], 3)}"
        + (f" ({system['unjudged']:,} unjudged)" if system["unjudged"] else "")
        for system in evaluation["systems"]
    )
    return (
        f"{label}, the share of each top {depth} the qrels judge (an unjudged document counts as non-relevant): "
        f"{shares}"
    )


def guard_warnings(evaluation: Mapping[str, Any]) -> list[str]:
    """The guards that warn not to trust this measure's green gates (they are ``OK*``)."""
    return [guard["message"] for guard in evaluation.get("guards") or [] if guard["severity"] == "warning"]


def gate_warnings(evaluation: Mapping[str, Any], gate: Mapping[str, Any]) -> list[str]:
    """A gate's own reasons for ``OK*`` that its measure's guards (:func:`guard_warnings`) do not already give:
    passed within noise, or a calibrated limit that cannot fail."""
    listed = set(guard_warnings(evaluation))
    own = [gate[key] for key in ("warning", "undecided") if gate.get(key)]
    return own + [message for message in gate.get("guards") or [] if message not in listed]


def together_lines(document: Mapping[str, Any]) -> list[str]:
    """How often an equal-quality change fails at least one gate, once per set of gates that share their swaps
    (each gate's ``calibration.together``, docs/mathematics.md §7): the false-alarm rate of the check those gates
    make together, which each gate's own rate does not tell."""
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for evaluation in document["evaluations"]:
        for gate in evaluation["gates"]:
            together = (gate.get("calibration") or {}).get("together")
            if together:
                groups.setdefault(tuple(together["ids"]), []).append(gate)
    return [_together_line(gates) for gates in groups.values()]


def _together_line(gates: Sequence[Mapping[str, Any]]) -> str:
    calibrations = [gate["calibration"] for gate in gates]
    together = calibrations[0]["together"]
    spec = gates[0]["id"].split("::", 1)[0]
    line = (
        f"Together: an equal-quality change fails at least one of these {together['gates']} gates ({spec}, against "
        f"{calibrations[0]['reference']}) {together['rate']:.2%} of the time ({together['swaps']:,} swaps)"
    )
    calibrated = [c for c in calibrations if c["false_alarm"] is not None]
    families = {(c["family"]["false_alarm"], c["family"]["level"]) for c in calibrated if c.get("family")}
    alone = {c["false_alarm"] for c in calibrated if not c.get("family")}  # a rate no other gate asked for
    if len(families) == 1 and not alone:
        ((rate, level),) = families
        subject = "each gate" if len(calibrated) == len(calibrations) else "each calibrated gate"
        return (
            f"{line}; family-wise limits: {subject} alone is held to {level:.2%} so that together they fail at "
            f"most {rate * 100:.3g}%."
        )
    if families:
        held = [(rate, f"the false_alarm {rate * 100:.3g}% gates each held to {level:.2%}") for rate, level in families]
        held += [(rate, f"the false_alarm {rate * 100:.3g}% gate at {rate * 100:.3g}% alone") for rate in alone]
        listed = "; ".join(text for _, text in sorted(held, reverse=True))
        return f"{line}; family-wise limits, one family per false_alarm rate: {listed}."
    asked = [c["false_alarm"] for c in calibrated]
    if len(asked) > len(set(asked)):  # calibrated gates that would form a family: per-gate limits were asked for
        return (
            f"{line}; each gate's false-alarm rate is its own alone: analysis: {{calibration: {{family: true}}}} "
            f"(the default) holds the calibrated ones to their rate together."
        )
    return line + "."


def judged_nothing(document: Mapping[str, Any]) -> bool:
    """No spec evaluated, no team test, no spec error in the session: a report of it must not read as a pass."""
    summary = document["summary"]
    return not (document["evaluations"] or summary.get("tests") or document.get("errors") or summary.get("not_run"))


def summary_counts(document: Mapping[str, Any]) -> str:
    """``4 gates, 0 failed; 3 team tests, 1 failed``: the gates and the team's own tests."""
    if judged_nothing(document):
        return "no gates ran (no bvtest spec or team test was collected in this session)"
    summary = document["summary"]
    text = f"{summary['gates']} gate{'' if summary['gates'] == 1 else 's'}, {summary['failed']} failed"
    if summary["warnings"]:
        text += f", {summary['warnings']} with a warning (OK*)"
    undecided = summary.get("undecided") or 0
    if undecided:
        text += f", {undecided} undecided (unjudged documents decide {'it' if undecided == 1 else 'them'})"
    tests = summary.get("tests") or 0
    if tests:
        text += f"; {tests} team test{'' if tests == 1 else 's'}, {summary['tests_failed']} failed"
    errors = document.get("errors") or []
    if errors:
        specs = len({error["spec"] for error in errors})
        text += (
            f"; {specs} spec{'' if specs == 1 else 's'} could not be evaluated "
            f"({len(errors)} item{'' if len(errors) == 1 else 's'})"
        )
    not_run = summary.get("not_run") or 0
    if not_run:
        text += f"; {not_run} gate{'' if not_run == 1 else 's'} {NOT_RUN_REASON}"
    return text


#: Why a gate of an evaluated spec has no verdict in this session.
NOT_RUN_REASON = "not run (deselected, or the session stopped early)"


def error_groups(document: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """The items that could not be evaluated, as ``(spec, items, message)``: one entry per spec and message
    (every gate of a spec whose candidate cannot be read fails with the same message)."""
    groups: dict[tuple[str, str], int] = {}
    for error in document.get("errors") or []:
        key = (display_path(error["spec"]), error["message"] or "")
        groups[key] = groups.get(key, 0) + 1
    return [(spec, count, message) for (spec, message), count in groups.items()]


#: Team tests are listed under this line (terminal) or heading (Markdown).
TEAM_TESTS_TITLE = "Team tests (marked bvtest or using the bvtest fixture)"


def team_test_text(test: Mapping[str, Any]) -> str:
    """``test_id: why`` for a test that did not pass, the id alone otherwise."""
    return f"{test['id']}: {test['message']}" if test.get("message") else test["id"]


#: Baselines listed in the comparison block; the JSON report has them all.
MAX_COMPARISONS = 10


def comparison_lines(evaluation: Mapping[str, Any]) -> list[str]:
    """The candidate's mean against each baseline: difference, win/tie/loss, paired tests with Holm."""
    comparisons = evaluation.get("comparisons") or []
    if not comparisons:
        return []
    reference = [c for c in comparisons if c["baseline"] == evaluation.get("reference")]
    shown = (reference + [c for c in comparisons if c not in reference])[:MAX_COMPARISONS]
    width = max(len(comparison["baseline"]) for comparison in shown)
    first = comparisons[0]
    lines = [
        f"{evaluation['candidate']} vs baselines on the mean (paired over topics; Holm over {len(comparisons)}; "
        f"randomization: {first['permutations']:,} sign flips, seed {first['seed']}):"
    ]
    for comparison in shown:
        lines.append(
            f"  {comparison['baseline']:<{width}}  {comparison['difference']:+.4f}  "
            f"W/T/L {comparison['wins']}/{comparison['ties']}/{comparison['losses']}  "
            f"t-test p {format_number(comparison['p_t'])} (Holm {format_number(comparison['p_t_holm'])})  "
            f"randomization p {format_number(comparison['p_randomization'])} (Holm "
            f"{format_number(comparison['p_randomization_holm'])})"
        )
    if len(comparisons) > len(shown):
        lines.append(f"  ... and {len(comparisons) - len(shown)} more baselines in the JSON report")
    return lines


def simulation_lines(simulation: Mapping[str, Any]) -> list[str]:
    """The per-topic simulation's averaged Bias² and Var per system (docs/mathematics.md §3e)."""
    rows = [("system", "Bias²", "Var")] + [
        (system["name"], format_number(system["bias2"]), format_number(system["var"]))
        for system in simulation["systems"]
    ]
    width = max(len(row[0]) for row in rows)
    lines = [
        f"per-topic simulation ({simulation['measure']}, {simulation['samples']} samples, seed {simulation['seed']}), "
        f"averaged over {len(simulation['topics'])} topics:"
    ]
    lines += [f"  {name:<{width}}  {bias2:>7}  {var:>7}" for name, bias2, var in rows]
    return lines


#: Topics named at each end of the GAWM discernment order.
DISCERNING_TOPICS = 3


def analysis_lines(evaluation: Mapping[str, Any]) -> list[str]:
    """GAWM's most and least discerning topics, the rankings' agreement and the MVE alpha sweep's flip."""
    lines = []
    fixed_point = evaluation.get("gawm")
    if fixed_point and len(evaluation["topics"]) > 1:
        order = sorted(range(len(evaluation["topics"])), key=lambda j: -float(fixed_point["topic_weights"][j] or 0.0))
        count = min(DISCERNING_TOPICS, len(order) // 2)
        most = ", ".join(evaluation["topics"][j] for j in order[:count])
        least = ", ".join(evaluation["topics"][j] for j in reversed(order[-count:]))
        state = (
            f"converged in {fixed_point['iterations']} iterations"
            if fixed_point["converged"]
            else f"NOT converged after {fixed_point['iterations']} iterations"
        )
        lines.append(f"GAWM (q = {fixed_point['q']:g}, {state}): most discerning topics {most}; least {least}")
    rankings = evaluation.get("rankings")
    if rankings:
        parts = [
            f"{STATISTICS[item['statistic']].label} Kendall {format_number(item['kendall_tau'], 2)}, "
            f"tau_AP {format_number(item['tau_ap'], 2)}"
            for item in rankings["agreements"]
        ]
        lines.append(f"rankings against {STATISTICS[rankings['against']].label}: " + "; ".join(parts))
    mve = evaluation.get("mve") or {}
    sweep = mve.get("sweep")
    reference = evaluation.get("reference")
    if sweep and evaluation.get("candidate") and reference in sweep["flips"]:
        alphas = sweep["alphas"]
        flip = sweep["flips"][reference]
        where = "never (equal variances)" if flip is None else f"at alpha {format_number(flip)}"
        lines.append(
            f"MVE ({mve['form']}) over alpha {alphas[0]:g}..{alphas[-1]:g}: {evaluation['candidate']} "
            f"and {reference} swap places {where}"
        )
    return lines


#: The topics with the largest run-to-run spread a system's line names.
SPREAD_TOPICS = 3


def run_spread_lines(evaluation: Mapping[str, Any]) -> list[str]:
    """One line per system given as several runs: their means, how far they differ, the topics they differ on
    most, and what the gates make of it (docs/mathematics.md §7, "Run-to-run noise")."""
    lines = []
    for system in evaluation["systems"]:
        runs = system.get("runs")
        if not runs:
            continue
        means = [float(value) for value in runs["run_means"] if value is not None]
        order = sorted(range(len(evaluation["topics"])), key=lambda j: -float(runs["topic_sd"][j] or 0.0))
        most = ", ".join(
            f"{evaluation['topics'][j]} ({format_number(runs['topic_sd'][j], 3)})"
            for j in order[:SPREAD_TOPICS]
            if float(runs["topic_sd"][j] or 0.0) > 0
        )
        lines.append(
            f"{system['name']}: {runs['count']} runs, {evaluation['measure']} means "
            f"{format_number(min(means))} to {format_number(max(means))} (sd {format_number(runs['sd_of_means'])}); "
            f"per topic sd {format_number(runs['mean_topic_sd'])} on average"
            + (f", most on {most}" if most else ", none on any topic")
            + "; its scores are the mean of its runs"
        )
    if lines:
        lines.append(
            "the null of no change adds the engine's own run-to-run noise to every swap: that noise alone fails a "
            "calibrated gate no more often than its false-alarm rate"
        )
    return lines


def delta_text(gate: Mapping[str, Any]) -> str:
    """``+0.0105 (worse)``: candidate minus reference, and whether that change is for the better or the worse.

    The word is the change's verdict in the statistic's own direction (a lower Var is better), so a
    reader need not know which way each statistic points; whether the gate passes is the limit's call.
    """
    delta = gate.get("delta")
    if delta is None:
        return "-"
    delta = float(delta)
    if not math.isfinite(delta) or delta == 0:
        return f"{delta:+.4g}" if delta else "0 (no change)"
    better = (delta > 0) == gate.get("higher_is_better", True)
    return f"{delta:+.4g} ({'better' if better else 'worse'})"


def _short_number(value: float | str | None) -> str:
    return "-" if value is None else f"{float(value):.6g}"


def gate_numbers(gate: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """The cells of a gate in the compact table: value, reference, delta (better or worse), limit."""
    reference = "-"
    if gate["reference"]:
        reference = (
            f"{_short_number(gate['reference_value'])} {gate['reference']}"
            if gate["reference_value"] is not None
            else f"against {gate['reference']}"
        )
    upper = gate["upper"] if "upper" in gate else gate["bound"]["kind"] in ("max", "max_increase")
    limit = f"{'<=' if upper else '>='} {_short_number(gate['limit'] if 'limit' in gate else gate['bound']['limit'])}"
    calibration = gate.get("calibration")
    if calibration is not None and calibration.get("rate") is not None:
        limit += f" (false alarm {float(calibration['rate']):.1%})"
    return _short_number(gate["value"]), reference, delta_text(gate), limit


# --- a gate ---------------------------------------------------------------------------------------------------

#: Up to this much past the limit is rounding, and the gate passes (as :data:`pytest_bvtest.judging.limits.TOLERANCE`).
_ROUNDING = 1e-12


def percent(rate: float | None) -> str:
    """``4.99%`` (three significant digits); ``undefined`` for a NaN or missing rate."""
    return "undefined" if rate is None or math.isnan(float(rate)) else f"{float(rate) * 100:.3g}%"


def short_number(value: float, other: float | None = None) -> str:
    """``value`` with 3 significant digits, more (up to 6) when needed to tell it from ``other``."""
    for digits in range(3, 7):
        text = f"{value:.{digits}g}"
        if other is None or text != f"{other:.{digits}g}":
            return text
    return text


def _float(value: float | str | None) -> float | None:
    """A number of the document (``"Infinity"`` and ``"-Infinity"`` included) as a float; ``None`` stays."""
    return None if value is None else float(value)


def rule_text(bound: str | None, false_alarm: float | None) -> str:
    """The gate's limit as the spec wrote it: ``max_increase 5%``, ``false_alarm 5%``, or both."""
    calibrated = None if false_alarm is None else f"false_alarm {percent(false_alarm)}"
    return " + ".join(text for text in (bound, calibrated) if text)


def calibration_text(gate: Mapping[str, Any]) -> str:
    """``false-alarm rate 4.9% (10,000 swaps with production, seed 0)``; when other gates share the swaps,
    how often they fail together: ``false-alarm rate 1.33% (family-wise limit); 4.99% for the 5 gates together
    (...)``."""
    calibration = gate["calibration"]
    drawn = (
        f"all {calibration['swaps']:,} swaps with {calibration['reference']}"
        if calibration["exact"]
        else f"{calibration['swaps']:,} swaps with {calibration['reference']}, seed {calibration['seed']}"
    )
    runs = calibration.get("runs")
    if runs:
        drawn += f"; engine noise from {runs['candidate']} and {runs['reference']} runs"
    together = calibration.get("together")
    joint = "" if not together else f"; {percent(together['rate'])} for the {together['gates']} gates together"
    family = " (family-wise limit)" if calibration.get("family") else ""
    return f"false-alarm rate {percent(_float(calibration['rate']))}{family}{joint} ({drawn})"


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
    if judgments and judgments["undecided"]:
        past = not judgments["as_judged"]
        margin = f"{'past the limit by ' if past else 'headroom '}{abs(excess):.6g} as judged; {_deciding(judgments)}"
    rule = f"bound {gate['rule']}" if gate["bound"] is not None else gate["rule"]
    calibration = f"; {calibration_text(gate)}" if gate.get("calibration") else ""
    return (
        f"{judged_text(gate)} {verdict}: {gate['system']} {_float(gate['value']):.6g}{versus}; "
        f"{rule} requires {relation} {_float(gate['limit']):.6g}; {margin}{calibration}"
    )


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
    if coarse["smallest_rate"] == 1.0:
        return (
            f"every swap with {partner} gives the same {label}: the two systems do not differ where it "
            f"looks (no change), so no calibrated limit can fail"
        )
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


# --- power (docs/mathematics.md §9) ---------------------------------------------------------------------------


def about(count: int) -> str:
    """``180`` for 183, ``1,200`` for 1,234: a count to two significant digits, for an estimate."""
    if count < 100:
        return str(count)
    digits = len(str(count)) - 2
    return f"{round(count, -digits):,}"


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
        f"change made worse, seed {'/'.join(str(seed) for seed in seeds)}); never: not even a drop to the measure's "
        "minimum. A green gate says nothing about smaller drops."
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
            parts.append(f"catches a drop of {_drop(float(each['mde']))} in {measure} {where} {level:.0%} of the time")
        elif not each["moves"]:
            parts.append(f"cannot see a drop {where}: {label} does not get worse under it")
        else:
            parts.append(
                f"misses a drop of any size {where} (at most {percent(_float(each['power']))} of the time, even "
                "down to the measure's minimum)"
            )
    partner = f" swapping with {power['reference']}" if power["reference"] else ""
    method = ", sums drawn from their Gaussian" if power["method"] == "gaussian" else ""
    return f"power: {'; '.join(parts)} ({power['draws']:,} draws{partner}, seed {power['seed']}{method})"


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
    numbers += f", limit {short_number(limit, value)}"
    if gate.get("calibration"):
        numbers += f" at a {percent(_float(gate['calibration']['rate']))} false-alarm rate"
    than = f" than in {gate['reference']}" if gate["reference_value"] is not None else " than allowed"
    worse = wording.worse.replace("the reference", reference) + than
    judgments = gate.get("judgments")
    if judgments and judgments["undecided"]:
        as_judged = "holds" if judgments["as_judged"] else "fails"
        return f"Undecided: {as_judged} as judged ({numbers}), but {_corner_outcomes(judgments, gate['measure'])}."
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


# --- unjudged documents (docs/mathematics.md §10) ---------------------------------------------------------------


def _documents(count: int) -> str:
    return f"{count:,} unjudged document{'' if count == 1 else 's'}"


def _deciding(judgments: Mapping[str, Any]) -> str:
    """``84 unjudged documents decide it (66 in monobert's top 10, 21 in monot5's, 3 of them in both)``: each
    document once, as it would be judged."""
    depth = judgments["depth"]
    parts = f"{judgments['candidate_unjudged']:,} in {judgments['candidate']}'s top {depth}"
    if judgments["reference"] is not None:
        parts += f", {judgments['reference_unjudged']:,} in {judgments['reference']}'s"
    if judgments["shared"]:
        parts += f", {judgments['shared']:,} of them in both"
    return f"{_documents(judgments['unjudged'])} decide it ({parts})"


def _corner_sides(judgments: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """Each corner with the run whose unjudged documents it grades and how many that run's top d holds."""
    sides = [("optimistic", judgments["candidate"], judgments["candidate_unjudged"])]
    if judgments["reference"] is not None:
        sides.append(("pessimistic", judgments["reference"], judgments["reference_unjudged"]))
    return sides


def _graded(judgments: Mapping[str, Any], corner: str, system: str, count: int, measure: str) -> str:
    """``the 66 unjudged documents of monobert's top 10``, or, where the corner leaves out documents both top d hold
    that raise the other run's score more, ``64 of the 66 ... (not the 2 that raise monot5's nDCG@10 more)``."""
    graded = judgments[corner]["graded"]
    documents = f"{_documents(count)} of {system}'s top {judgments['depth']}"
    if graded >= count:
        return f"the {documents}"
    other = judgments["reference"] if system == judgments["candidate"] else judgments["candidate"]
    return f"{graded:,} of the {documents} (not the {count - graded:,} that raise {other}'s {measure} more)"


def _corner_outcomes(judgments: Mapping[str, Any], measure: str) -> str:
    """What the gate does at the corners where it differs from its verdict as judged: ``passes if the 66 unjudged
    documents of monobert's top 10 are relevant (grade 3)``."""
    verb = {True: "passes", False: "fails"}
    differing = [
        (judgments[corner]["passed"], _graded(judgments, corner, system, count, measure))
        for corner, system, count in _corner_sides(judgments)
        if judgments[corner]["passed"] != judgments["as_judged"]
    ]
    (passed, documents), *rest = differing
    text = f"{verb[passed]} if {documents} are relevant (grade {judgments['optimistic_grade']})"
    for _, documents in rest:  # both corners differ from the verdict as judged (and so agree)
        text += f", or if {documents} are"
    return text


def undecided_text(gate: Mapping[str, Any]) -> str | None:
    """Why an ``UNDECIDED`` gate is undecided, and what it does to CI (``judgments.undecided``); ``None`` for a
    decided gate."""
    judgments = gate.get("judgments")
    if not judgments or not judgments["undecided"]:
        return None
    as_judged = "passes" if judgments["as_judged"] else "fails"
    effect = (
        "it passes CI with this warning (judgments: {undecided: warn})"
        if gate["passed"]
        else "it fails CI (judgments: {undecided: fail})"
    )
    spec = gate["id"].split("::", 1)[0]
    return (
        f"UNDECIDED: {_deciding(judgments)}: {gate['measure']} {gate['label']} {as_judged} as judged, but "
        f"{_corner_outcomes(judgments, gate['measure'])}; {effect}; `bvtest judge {spec} -o judgments.tsv` lists them "
        "to grade"
    )


def corner_lines(gate: Mapping[str, Any]) -> list[str]:
    """The gate at its two corners of unjudged documents (docs/mathematics.md §10), when its candidate's or its
    reference's top d holds any: what it would be if they were relevant."""
    judgments = gate.get("judgments")
    if not judgments:
        return []
    label, grade = gate["label"], judgments["optimistic_grade"]
    if judgments["undecided"]:
        lines = [f"at its corners, with the unjudged documents graded {grade}, it passes at one, fails at the other:"]
    else:
        held = "holds" if judgments["as_judged"] else "fails"
        lines = [
            f"{_deciding(judgments).replace(' decide it', '')} cannot change it: at its corners, with the unjudged "
            f"documents graded {grade}, it {held} as judged:"
        ]
    for corner, system, count in _corner_sides(judgments):
        at = judgments[corner]
        versus = "" if at["reference_value"] is None else f" vs {_float(at['reference_value']):.6g}"
        lines.append(
            f"  {corner}, {_graded(judgments, corner, system, count, gate['measure'])} relevant: {label} "
            f"{_float(at['value']):.6g}{versus}, limit {_float(at['limit']):.6g}: "
            f"{'passes' if at['passed'] else 'fails'}"
        )
    return lines


def judged_only_form(measure: str) -> str | None:
    """The judged-only form of a measure (``nDCG@10`` gives ``nDCG(judged_only=True)@10``: unjudged documents
    removed from the ranking, trec_eval ``-J``); ``None`` where there is none (gdeval's measures, a table's label)."""
    from dataclasses import replace

    from pytest_bvtest.errors import InputError
    from pytest_bvtest.spec.measures import parse_measure

    try:
        parsed = parse_measure(measure)
        return None if parsed.uses_gdeval or parsed.name == "Judged" else str(replace(parsed, judged_only=True))
    except InputError:
        return None


def unjudged_hint(gate: Mapping[str, Any]) -> str | None:
    """When most of the topics a gate blames lose only as judged (with the candidate's unjudged documents of the top
    d relevant, its score there would reach the comparison's), that, and the judged-only form of the measure."""
    judgments, worst = gate.get("judgments"), gate.get("worst_topics") or []
    if not judgments or not worst or worst[0].get("candidate_optimistic") is None:
        return None
    within = [
        impact
        for impact in worst
        if impact["unjudged"] and _float(impact["candidate_optimistic"]) >= impact["compared"] - _ROUNDING
    ]
    if 2 * len(within) <= len(worst):
        return None
    spec = gate["id"].split("::", 1)[0]
    text = (
        f"{len(within)} of the {len(worst)} topics listed lose only as judged: with the unjudged documents of "
        f"{gate['system']}'s top {judgments['depth']} relevant they would not lose "
        f"({', '.join(impact['topic'] for impact in within)})"
    )
    judged_only = judged_only_form(gate["measure"])
    if judged_only is not None:
        text += (
            f"; {judged_only} scores only the documents that were judged: add it to the spec's measures to see the "
            "change without them"
        )
    return f"{text}; or judge them: bvtest judge {spec} -o judgments.tsv"


def _topic_unjudged(gate: Mapping[str, Any], impact: Mapping[str, Any]) -> str:
    """``; 3 of monobert's top 10 unjudged``: a blamed topic's unjudged documents, where the gate has corners."""
    judgments = gate.get("judgments")
    if not judgments or impact.get("unjudged") is None:
        return ""
    text = f"; {impact['unjudged']} of {gate['system']}'s top {judgments['depth']}"
    if impact.get("compared_unjudged") is not None:
        text += f" and {impact['compared_unjudged']} of {gate['worst_against']}'s"
    return text + " unjudged"


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


# --- a guard --------------------------------------------------------------------------------------------------


def _candidate_called(name: str) -> str:
    """How a guard names the candidate: by its system name where it is not the run under test."""
    return "the candidate" if name == "candidate" else f"the candidate {name}"


def guard_message(guard: Mapping[str, Any]) -> str:
    """The warning or note of one guard (:mod:`pytest_bvtest.judging.guards`), from its kind and facts."""
    facts, topics = guard["facts"], guard.get("topics") or []
    measure = facts.get("measure")
    kind = guard["kind"]
    if kind == "identical":
        return (
            f"identical: {facts['candidate']}'s per-topic {measure} scores are identical to "
            f"{' and '.join(facts['same'])}'s on all {facts['topics']} topics; is this the run you meant to test? "
            "(a CI step that did not write the new run tests the old one against itself)"
        )
    if kind == "candidate_missing":
        return (
            f"{_candidate_called(facts['candidate'])} has no ranking for {len(topics)} of {facts['total']} topics "
            f"that other systems rank ({measure} 0 by the missing-topic rule): {short_list(topics)}; is the run "
            "truncated, or made for other topics? A gate that passes says nothing about those topics (and scores "
            "of 0 can shrink Var); give the candidate a ranking for every topic, or restrict the qrels to the "
            "topics it answers"
        )
    if kind == "candidate_zero":
        return (
            f"{_candidate_called(facts['candidate'])} scores 0 {measure} on all {facts['total']} topics, while other "
            f"systems score above 0 on {facts['answered']} of them: does it retrieve judged documents? (document ids "
            "in another form than the qrels', a run of another collection, or qrels of another round or collection "
            "than the run: a round-4 run against round-3 qrels retrieves none of the documents judged then) A gate "
            "that passes says nothing about its quality: scores of 0 everywhere have Var 0 and ZRisk 0"
        )
    if kind == "unanswered_topics":
        threshold, total = facts["threshold"], facts["total"]
        advice = (
            f"more than {threshold:.0%} of the topics: are the qrels for the topics the runs were made for? "
            "Restrict the qrels to them (or raise analysis.guards.unanswered_share when the systems truly miss them)"
            if guard["severity"] == "warning"
            else "such topics tell no system apart and lower every mean"
        )
        return (
            f"{len(topics)} of {total} topics ({len(topics) / total:.0%}) {'is' if len(topics) == 1 else 'are'} "
            f"missed by every system ({measure} 0 for all): {short_list(topics)}; {advice}"
        )
    if kind == "stale_reference":
        candidate, reference_mean, reference = facts["candidate_mean"], facts["reference_mean"], facts["reference"]
        gain = candidate - reference_mean
        relative = f", {gain / reference_mean:+.0%}" if reference_mean else ""
        advice = (
            "once this change is accepted, make it the reference: pytest --bvtest-update"
            if facts["spec_reference"]
            else f"compare the gates that name `reference: {reference}` with a recent baseline"
        )
        return (
            f"the candidate's mean {measure} {candidate:.4f} is far above the reference {reference}'s "
            f"{reference_mean:.4f} ({gain:+.4f}{relative}; randomization p {facts['p_value']:.4f} < "
            f"{facts['p_threshold']:g}, {facts['permutations']:,} sign flips): the reference may be stale, which "
            f"makes gates against it lenient; {advice}"
        )
    if kind == "reference_missing":
        name = facts["reference"]
        return (
            f"the reference {name} has no ranking for {len(topics)} of {facts['total']} topics where "
            f"{facts['candidate']} scores above 0 ({measure} 0 by the missing-topic rule): {short_list(topics)}; the "
            f"candidate's wins there are free, so gates against {name} are lenient; give {name} a ranking for every "
            "topic, or restrict the qrels to the topics it answered"
        )
    if kind == "target_constant":
        why = (
            "below it, a system whose mean exceeds c gets a larger Bias² the better it gets, so Bias² rewards "
            "worse systems"
            if facts["side"] == "below_target"
            else "above 1, the measure's maximum: Bias² then measures the distance to a score no system can reach"
        )
        return (
            f"{measure} target constant c = {facts['c']:.4f} is outside [mean target {facts['target_mean']:.4f}, 1]; "
            f"{why} (IPM 2022 Lemma 1); use `target: mean` or a number in that range"
        )
    raise ValueError(f"no words for the guard {kind!r}")
