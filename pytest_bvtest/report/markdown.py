"""The Markdown summary: a sticky pull-request comment and the GitHub Actions job summary.

It opens with :data:`MARKER`, an HTML comment a CI step can search for to update its comment in
place, then the overall verdict, one table of gates, the topics that lost most for each failing gate,
and the per-measure system tables folded in ``<details>`` blocks. GitHub-flavoured Markdown.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from pytest_bvtest.report.terminal import (
    analysis_lines,
    TABLE_HEADER,
    display_path,
    evaluation_title,
    format_number,
    guard_warnings,
    headline,
    TEAM_TESTS_TITLE,
    summary_counts,
    system_rows,
    topic_notes,
    tradeoff_text,
)

MARKER = "<!-- pytest-bvtest -->"
OUTCOME_ICONS = {"OK": "✅", "OK*": "⚠️", "FAIL": "❌"}

# GitHub refuses comments longer than 65,536 characters; past this size the system tables keep only
# the candidate and the reference (the JSON report has every system).
MAX_COMMENT_CHARACTERS = 60_000


def cell(text: str) -> str:
    """``text`` made safe for a table cell: one line, ``|`` escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it contains."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    """A GFM table; ``right`` holds the indices of right-aligned (numeric) columns."""
    rule = ["---:" if column in right else "---" for column in range(len(header))]
    return ["| " + " | ".join(row) + " |" for row in (tuple(cell(text) for text in header), tuple(rule), *rows)]


def _number(value: float | str | None) -> str:
    # Six significant digits, as in the gate messages: a gate can fail by less than 0.0001. An infinite
    # value arrives as "Infinity"/"-Infinity" (the JSON report's spelling) and prints as inf/-inf.
    return "-" if value is None else f"{float(value):.6g}"


def _gate_row(gate: Mapping[str, Any]) -> tuple[str, ...]:
    reference = _number(gate["reference_value"])
    if gate["reference"]:
        # An absolute bound on a statistic measured against a reference (TRisk >= -2) has no reference value.
        reference = f"against {cell(gate['reference'])}" if gate["reference_value"] is None else f"{reference} ({cell(gate['reference'])})"
    interval = gate["interval"]
    calibration = gate.get("calibration")
    interval_text = "-"
    if interval is not None:
        interval_text = f"[{_number(interval['low'])}, {_number(interval['high'])}] {interval['confidence']:.0%}, seed {interval['seed']}"
    return (
        f"{OUTCOME_ICONS[gate['outcome']]} {gate['outcome']}",
        code(cell(gate["id"])),
        f"{_number(gate['value'])} ({cell(gate['system'])})",
        reference,
        f"{_number(gate['limit'])} ({cell(gate['rule'])})",
        "-" if calibration is None else _false_alarm_cell(calibration),
        interval_text,
    )


def _false_alarm_cell(calibration: Mapping[str, Any]) -> str:
    """The false-alarm rate of the gate's limit and how its null was drawn (MATH.md section 7)."""
    rate = "undefined" if calibration["rate"] is None else f"{calibration['rate']:.2%}"
    drawn = "exact" if calibration["exact"] else f"{calibration['swaps']:,} swaps, seed {calibration['seed']}"
    return f"{rate} ({drawn})"


def _gate_section(evaluations: list[Mapping[str, Any]]) -> list[str]:
    gates = [gate for evaluation in evaluations for gate in evaluation["gates"]]
    if not gates:
        return ["No gates: analysis only."] if evaluations else []
    lines = _table(("outcome", "gate", "value", "reference", "limit", "false alarm", "interval"),
                   [_gate_row(gate) for gate in gates], {2, 3, 4, 5})
    for gate in gates:
        if gate["warning"]:  # within noise; guards' warnings are listed once, under the headline
            lines.append("")
            lines.append(f"⚠️ {code(gate['id'])}: {gate['warning']}")
    return lines


TEST_ICONS = {"passed": "✅", "failed": "❌", "error": "❌", "skipped": "⏭️", "xfailed": "⚠️", "xpassed": "⚠️"}


def _team_test_section(tests: list[Mapping[str, Any]]) -> list[str]:
    if not tests:
        return []
    rows = [(f"{TEST_ICONS.get(test['outcome'], '')} {test['outcome']}", code(cell(test["id"])), cell(test.get("message") or ""))
            for test in tests]
    return ["", f"**{TEAM_TESTS_TITLE}**", "", *_table(("outcome", "test", "message"), rows, set())]


def _failure_section(gate: Mapping[str, Any]) -> list[str]:
    lines = ["", f"### ❌ {code(gate['id'])}", "", headline(gate)]
    worst = gate.get("worst_topics") or []
    if worst:
        against = gate.get("worst_against") or "the comparison"
        lines += ["", f"Topics that lost most against {against}:", ""]
        with_text = any(impact.get("text") for impact in worst)
        rows = [
            (cell(impact["topic"]), *([cell(impact.get("text") or "")] if with_text else []),
             format_number(impact["candidate"]), format_number(impact["compared"]), f"{impact['delta']:+.4f}")
            for impact in worst
        ]
        header = ("topic", *(["query"] if with_text else []), gate["system"], against, "delta")
        numeric = {len(header) - 3, len(header) - 2, len(header) - 1}
        lines += _table(header, rows, numeric)
    return lines


def _system_section(evaluation: Mapping[str, Any], all_systems: bool) -> list[str]:
    shown = evaluation if all_systems else {
        **evaluation, "systems": [system for system in evaluation["systems"] if system["role"] in ("candidate", "reference")],
    }
    rows = [
        (f"**{cell(row[0])}**" if system["role"] == "candidate" else cell(row[0]), *(cell(text) for text in row[1:]))
        for system, row in zip(shown["systems"], system_rows(shown))
    ]
    lines = ["", f"<details><summary>{html.escape(evaluation_title(evaluation))}</summary>", ""]
    lines += _table(TABLE_HEADER, rows, set(range(2, len(TABLE_HEADER) - 1)))
    omitted = len(evaluation["systems"]) - len(rows)
    if omitted:
        lines += ["", f"{omitted} baseline systems and their notes are not shown to keep this comment under GitHub's size limit; "
                      "the JSON report has them."]
    lines += ["", tradeoff_text(evaluation)]
    lines += [line for text in analysis_lines(evaluation) for line in ("", html.escape(text, quote=False))]
    notes = topic_notes(shown)
    if notes:
        lines += [""] + [f"- {note}" for note in notes]
    lines += ["", "</details>"]
    return lines


def _simulation_section(simulation: Mapping[str, Any]) -> list[str]:
    """The per-topic simulation (MATH.md 3e): averaged Bias² and Var per system, and per topic the
    tradeoff degree across systems (IPM 2022 Table 9's per-topic reading)."""
    title = (f"per-topic simulation ({simulation['measure']}, {simulation['samples']} samples, seed {simulation['seed']}): "
             f"Bias² and Var averaged over {len(simulation['topics'])} topics; tradeoff per topic")
    lines = ["", f"<details><summary>{html.escape(title, quote=False)}</summary>", ""]
    lines += _table(("system", "Bias²", "Var"),
                    [(cell(system["name"]), _number(system["bias2"]), _number(system["var"])) for system in simulation["systems"]],
                    {1, 2})
    lines += [""]
    lines += _table(("topic", "Pearson", "Spearman"),
                    [(cell(topic), _number(tradeoff["pearson"]), _number(tradeoff["spearman"]))
                     for topic, tradeoff in zip(simulation["topics"], simulation["topic_tradeoff"])],
                    {1, 2})
    return lines + ["", "</details>"]


def _render(document: Mapping[str, Any], all_systems: bool) -> str:
    evaluations = list(document["evaluations"])
    warnings = [(evaluation, warning) for evaluation in evaluations for warning in guard_warnings(evaluation)]
    verdict = "❌" if not document["passed"] else "⚠️" if warnings or document["summary"]["warnings"] else "✅"
    lines = [MARKER, f"## {verdict} pytest-bvtest: {summary_counts(document)}", ""]
    for evaluation, warning in warnings:
        where = f"{display_path(evaluation['spec'])} · {evaluation['measure']}"
        lines += [f"> ⚠️ **Warning** ({html.escape(where, quote=False)}): {html.escape(warning, quote=False)}", ""]
    lines += _gate_section(evaluations)
    lines += _team_test_section(list(document.get("tests") or []))
    for evaluation in evaluations:
        for gate in evaluation["gates"]:
            if gate["outcome"] == "FAIL":
                lines += _failure_section(gate)
    simulated = set()
    for evaluation in evaluations:
        lines += _system_section(evaluation, all_systems)
        # the simulation is the same for every measure of a spec: shown once, after its first measure
        if evaluation.get("simulation") and all_systems and evaluation["spec"] not in simulated:
            simulated.add(evaluation["spec"])
            lines += _simulation_section(evaluation["simulation"])
    tool = document.get("tool") or {}
    footer = f"{tool.get('name', 'pytest-bvtest')} {tool.get('version', '')}, report schema {document['schema_version']}"
    lines += ["", f"<sub>{html.escape(footer)}</sub>", ""]
    return "\n".join(lines)


def render(document: Mapping[str, Any]) -> str:
    """The Markdown summary of a session document."""
    text = _render(document, all_systems=True)
    return text if len(text) <= MAX_COMMENT_CHARACTERS else _render(document, all_systems=False)
