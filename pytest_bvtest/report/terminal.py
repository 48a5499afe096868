"""The session summary pytest prints after the tests: one table per (spec, measure), then the gates.

Everything is rendered from the session document of :mod:`pytest_bvtest.report.jsonreport`.
:func:`summary_lines` does the formatting and returns ``(text, markup)`` pairs, so it is testable
without pytest; :func:`write_summary` only hands them to pytest's terminal reporter. The table and
note helpers are shared with the Markdown summary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_bvtest.errors import short_list
from pytest_bvtest.stats.registry import STATISTICS, TABLE_COLUMNS

Markup = dict[str, bool]
Line = tuple[str, Markup]

TABLE_HEADER = ("system", "role", *(header for _, header in TABLE_COLUMNS), "gates")

#: Prefixes the candidate's row so it stands out without colour too.
CANDIDATE_MARKER = ">"
OUTCOMES = ("OK", "OK*", "FAIL")
OUTCOME_MARKUP: dict[str, Markup] = {
    "OK": {"green": True},
    "OK*": {"yellow": True},
    "FAIL": {"red": True, "bold": True},
}
_WARNING_MARKUP: Markup = {"yellow": True, "bold": True}

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


def guard_warnings(evaluation: Mapping[str, Any]) -> list[str]:
    """The guards that warn not to trust this measure's green gates (they are ``OK*``)."""
    return [guard["message"] for guard in evaluation.get("guards") or [] if guard["severity"] == "warning"]


def gate_warnings(evaluation: Mapping[str, Any], gate: Mapping[str, Any]) -> list[str]:
    """A gate's own reasons for ``OK*`` that its measure's guards (:func:`guard_warnings`) do not already give:
    passed within noise, or a calibrated limit that cannot fail."""
    listed = set(guard_warnings(evaluation))
    own = [gate["warning"]] if gate.get("warning") else []
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


def headline(gate: Mapping[str, Any]) -> str:
    """The first line of a gate's message."""
    return gate["message"].split("\n", 1)[0]


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


def problem_lines(document: Mapping[str, Any]) -> list[Line]:
    """What kept gates from a verdict: specs that could not be evaluated, gates that did not run."""
    lines: list[Line] = [
        (f"[ERROR] {spec} ({count} item{'' if count == 1 else 's'}): {message}", OUTCOME_MARKUP["FAIL"])
        for spec, count, message in error_groups(document)
    ]
    not_run = document.get("not_run") or []
    if not_run:
        lines.append(
            (
                f"{len(not_run)} gate{'' if len(not_run) == 1 else 's'} {NOT_RUN_REASON}: {short_list(not_run)}",
                _WARNING_MARKUP,
            )
        )
    return lines


#: Team tests are listed under this line (terminal) or heading (Markdown).
TEAM_TESTS_TITLE = "Team tests (marked bvtest or using the bvtest fixture)"


def team_test_text(test: Mapping[str, Any]) -> str:
    """``test_id: why`` for a test that did not pass, the id alone otherwise."""
    return f"{test['id']}: {test['message']}" if test.get("message") else test["id"]


def _aligned_table(rows: Sequence[tuple[str, ...]], markers: Sequence[str]) -> list[str]:
    """Text columns (system, role, gates) left-aligned, numbers right-aligned, each row behind its marker."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    left = {0, 1, len(widths) - 1}
    lines = []
    for marker, row in zip(markers, rows):
        cells = [
            cell.ljust(width) if column in left else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths))
        ]
        lines.append(f"{marker:<{len(CANDIDATE_MARKER)}} " + "  ".join(cells).rstrip())
    return lines


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


def _first_of_spec(document: Mapping[str, Any], evaluation: Mapping[str, Any]) -> int:
    """Index of the spec's first measure: the simulation, the same for every measure, is shown once."""
    return next(i for i, other in enumerate(document["evaluations"]) if other["spec"] == evaluation["spec"])


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


def _gate_id(gate: Mapping[str, Any]) -> str:
    return gate["id"].split("::", 1)[-1]


def _guard_lines(document: Mapping[str, Any]) -> list[Line]:
    """The guards' warnings of every evaluation, then each gate's own (:func:`gate_warnings`): every ``OK*``
    says why, at every verbosity."""
    evaluations = document["evaluations"]
    return [
        *(
            (f"WARNING: {warning}", _WARNING_MARKUP)
            for evaluation in evaluations
            for warning in guard_warnings(evaluation)
        ),
        *(
            (f"WARNING: {gate['id']}: {warning}", _WARNING_MARKUP)
            for evaluation in evaluations
            for gate in evaluation["gates"]
            for warning in gate_warnings(evaluation, gate)
        ),
    ]


def quiet_lines(document: Mapping[str, Any]) -> list[Line]:
    """``-q``: one line per gate (outcome, gate, the numbers), the guards' warnings, then the counts."""
    lines: list[Line] = _guard_lines(document)
    for evaluation in document["evaluations"]:
        for gate in evaluation["gates"]:
            value, reference, delta, limit = gate_numbers(gate)
            label = gate.get("label") or gate["statistic"]
            versus = (
                "" if reference == "-" else (f" {reference}" if gate["reference_value"] is None else f" vs {reference}")
            )
            lines.append(
                (
                    f"[{gate['outcome']}] {gate['id']}: {label} {value}{versus}, limit {limit}",
                    OUTCOME_MARKUP[gate["outcome"]],
                )
            )
    lines += [(text, {}) for text in together_lines(document)]
    lines += problem_lines(document)
    lines += team_test_lines(document)
    lines.append(_final_line(document))
    return lines


def compact_lines(document: Mapping[str, Any]) -> list[Line]:
    """Default verbosity: one table of every gate; ``-v`` adds the system tables and comparisons."""
    gates = [(evaluation, gate) for evaluation in document["evaluations"] for gate in evaluation["gates"]]
    if not gates:
        lines = [(evaluation_title(evaluation), {"bold": True}) for evaluation in document["evaluations"]]
        if document["evaluations"]:
            lines.append(("analysis only: no gates (-v shows the system tables)", {}))
        lines += problem_lines(document) + team_test_lines(document)
        shown = document.get("tests") or document.get("errors") or document.get("not_run")
        return lines + ([_final_line(document)] if shown else [])
    header = ("outcome", "gate", "value", "reference", "delta", "limit")
    rows = [
        (gate["outcome"], f"{display_path(evaluation['spec'])}::{_gate_id(gate)}", *gate_numbers(gate))
        for evaluation, gate in gates
    ]
    widths = [max(len(row[column]) for row in (header, *rows)) for column in range(len(header))]
    right = {2, 3, 4}

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            text.rjust(width) if column in right else text.ljust(width)
            for column, (text, width) in enumerate(zip(row, widths))
        ).rstrip()

    lines: list[Line] = [(line(header), {"bold": True})]
    lines += [(line(row), OUTCOME_MARKUP[row[0]]) for row in rows]
    lines += [(text, {}) for text in together_lines(document)]
    lines += _guard_lines(document)
    lines += problem_lines(document)
    lines += team_test_lines(document)
    lines.append(("(-v adds the system tables, comparisons and notes)", {}))
    lines.append(("", {}))
    lines.append(_final_line(document))
    return lines


def _final_line(document: Mapping[str, Any]) -> Line:
    if not (document["summary"]["gates"] or document.get("tests") or document.get("errors") or document.get("not_run")):
        return ("bvtest: analysis only, no gates", {})
    markup = {"red": True, "bold": True} if not document["passed"] else {"green": True}
    return (f"bvtest: {summary_counts(document)}", markup)


def team_test_lines(document: Mapping[str, Any]) -> list[Line]:
    """The team's own tests (marked ``bvtest`` or using the fixture) under their title, one line each."""
    tests = document.get("tests") or []
    if not tests:
        return []
    lines: list[Line] = [("", {}), (f"{TEAM_TESTS_TITLE}:", {"bold": True})]
    for test in tests:
        markup = (
            {"green": True} if test["outcome"] == "passed" else {} if test["passed"] else {"red": True, "bold": True}
        )
        lines.append((f"[{test['outcome'].upper()}] {team_test_text(test)}", markup))
    return lines


def summary_lines(document: Mapping[str, Any], verbosity: int = 1) -> list[Line]:
    """The summary below the section title, as ``(text, markup)`` lines, following pytest's verbosity.

    ``-q`` (``verbosity < 0``): :func:`quiet_lines`; default (0): :func:`compact_lines`; ``-v``: every
    table, comparison, gate headline and note.
    """
    if verbosity < 0:
        return quiet_lines(document)
    if verbosity == 0:
        return compact_lines(document)
    lines: list[Line] = []
    for number, evaluation in enumerate(document["evaluations"]):
        if number:
            lines.append(("", {}))
        lines.append((evaluation_title(evaluation), {"bold": True}))
        roles = [system["role"] for system in evaluation["systems"]]
        markers = ["", *(CANDIDATE_MARKER if role == "candidate" else "" for role in roles)]
        table = _aligned_table([TABLE_HEADER, *system_rows(evaluation)], markers)
        lines.append((table[0], {"bold": True}))
        lines.extend((text, {"bold": True} if role == "candidate" else {}) for text, role in zip(table[1:], roles))
        lines.append((tradeoff_text(evaluation), {}))
        lines.extend((text, {}) for text in comparison_lines(evaluation))
        lines.extend((text, {}) for text in analysis_lines(evaluation))
        if evaluation.get("simulation") and number == _first_of_spec(document, evaluation):
            for simulation in evaluation.get("simulations") or [evaluation["simulation"]]:
                lines.extend((text, {}) for text in simulation_lines(simulation))
        lines.extend((f"WARNING: {warning}", {"yellow": True, "bold": True}) for warning in guard_warnings(evaluation))
        for gate in evaluation["gates"]:
            lines.append((f"[{gate['outcome']}] {gate['id']}: {headline(gate)}", OUTCOME_MARKUP[gate["outcome"]]))
            lines.extend((f"  warning: {warning}", _WARNING_MARKUP) for warning in gate_warnings(evaluation, gate))
        lines.extend((f"note: {note}", {}) for note in topic_notes(evaluation))
    together = together_lines(document)
    if together:
        lines += [("", {}), *((text, {}) for text in together)]
    tests = document.get("tests") or []
    lines += problem_lines(document)
    lines += team_test_lines(document)
    if document["summary"]["gates"] or tests or document.get("errors") or document.get("not_run"):
        lines.append(("", {}))
        lines.append(_final_line(document))
    return lines


def write_summary(document: Mapping[str, Any], writer: Any, verbosity: int = 1) -> None:
    """Write the ``bvtest summary`` section on pytest's terminal reporter."""
    writer.write_sep("=", "bvtest summary", bold=True)
    for text, markup in summary_lines(document, verbosity):
        writer.write_line(text, **markup)
