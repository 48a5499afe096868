"""The session summary pytest prints after the tests: one table per (spec, measure), then the gates.

Everything is rendered from the session document of :mod:`pytest_bvtest.report.jsonreport`, in the words of
:mod:`pytest_bvtest.report.wording`; this module only lays them out for a terminal. :func:`summary_lines`
returns ``(text, markup)`` pairs, so it is testable without pytest; :func:`write_summary` only hands them to
pytest's terminal reporter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_bvtest.errors import short_list
from pytest_bvtest.report.wording import (
    NOT_RUN_REASON,
    TABLE_HEADER,
    TEAM_TESTS_TITLE,
    analysis_lines,
    comparison_lines,
    display_path,
    error_groups,
    evaluation_title,
    gate_numbers,
    gate_warnings,
    guard_warnings,
    judged_line,
    power_cell,
    power_legend,
    power_lines,
    power_text,
    run_spread_lines,
    simulation_lines,
    summary_counts,
    system_rows,
    team_test_text,
    together_lines,
    topic_notes,
    tradeoff_text,
)

Markup = dict[str, bool]


Line = tuple[str, Markup]


#: Prefixes the candidate's row so it stands out without colour too.
CANDIDATE_MARKER = ">"


OUTCOME_MARKUP: dict[str, Markup] = {
    "OK": {"green": True},
    "OK*": {"yellow": True},
    "UNDECIDED": {"yellow": True, "bold": True},
    "FAIL": {"red": True, "bold": True},
}


_WARNING_MARKUP: Markup = {"yellow": True, "bold": True}


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


def _first_of_spec(document: Mapping[str, Any], evaluation: Mapping[str, Any]) -> int:
    """Index of the spec's first measure: the simulation, the same for every measure, is shown once."""
    return next(i for i, other in enumerate(document["evaluations"]) if other["spec"] == evaluation["spec"])


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
    legend = power_legend(document)
    header = ("outcome", "gate", "value", "reference", "delta", "limit", *(("MDE (all / 10%)",) if legend else ()))
    rows = [
        (
            gate["outcome"],
            f"{display_path(evaluation['spec'])}::{_gate_id(gate)}",
            *gate_numbers(gate),
            *((power_cell(gate),) if legend else ()),
        )
        for evaluation, gate in gates
    ]
    widths = [max(len(row[column]) for row in (header, *rows)) for column in range(len(header))]
    right = {2, 3, 4, 6}

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            text.rjust(width) if column in right else text.ljust(width)
            for column, (text, width) in enumerate(zip(row, widths))
        ).rstrip()

    lines: list[Line] = [(line(header), {"bold": True})]
    lines += [(line(row), OUTCOME_MARKUP[row[0]]) for row in rows]
    lines += [(text, {}) for text in together_lines(document)]
    lines += [(text, {}) for text in power_lines(document)]
    lines += [(legend, {})] if legend else []
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
        judged = judged_line(evaluation)
        if judged is not None:
            lines.append((judged, {}))
        lines.append((tradeoff_text(evaluation), {}))
        lines.extend((text, {}) for text in comparison_lines(evaluation))
        lines.extend((text, {}) for text in analysis_lines(evaluation))
        lines.extend((text, {}) for text in run_spread_lines(evaluation))
        if evaluation.get("simulation") and number == _first_of_spec(document, evaluation):
            for simulation in evaluation.get("simulations") or [evaluation["simulation"]]:
                lines.extend((text, {}) for text in simulation_lines(simulation))
        lines.extend((f"WARNING: {warning}", {"yellow": True, "bold": True}) for warning in guard_warnings(evaluation))
        for gate in evaluation["gates"]:
            lines.append((f"[{gate['outcome']}] {gate['id']}: {gate['headline']}", OUTCOME_MARKUP[gate["outcome"]]))
            lines.extend((f"  warning: {warning}", _WARNING_MARKUP) for warning in gate_warnings(evaluation, gate))
            power = power_text(gate)
            lines.extend([(f"  {power}", {})] if power else [])
            if gate.get("hint"):
                lines.append((f"  hint: {gate['hint']}", {}))
        lines.extend((f"note: {note}", {}) for note in topic_notes(evaluation))
    together = together_lines(document) + power_lines(document)
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
