"""The session summary pytest prints after the tests: one table per (spec, measure), then the gates.

Everything is rendered from the session document of :mod:`pytest_bvtest.report.jsonreport`, in the words of
:mod:`pytest_bvtest.report.wording`; this module only lays them out for a terminal. :func:`summary_lines`
returns ``(text, markup)`` pairs, so it is testable without pytest; :func:`write_summary` only hands them to
pytest's terminal reporter.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_bvtest.errors import short_list
from pytest_bvtest.report.untrusted import terminal_text
from pytest_bvtest.report.wording import (
    GAP_TITLE,
    GATE_HEADERS,
    TABLE_HEADER,
    TEAM_TESTS_TITLE,
    analysis_lines,
    cause_title,
    causes,
    change_lines,
    closest,
    commands,
    comparison_lines,
    error_groups,
    evaluation_title,
    gap_rows,
    gate_cells,
    gate_name,
    gate_summary,
    gate_table_columns,
    harmed_query_table,
    judged_line,
    more_queries_text,
    not_run_reason,
    notices,
    page_title,
    page_verdict,
    power_legend,
    power_text,
    run_spread_lines,
    simulation_lines,
    summary_counts,
    sure_lines,
    system_rows,
    team_test_text,
    topic_notes,
    tradeoff_text,
)

Markup = dict[str, bool]


Line = tuple[str, Markup]


#: The width the summary is wrapped at when pytest's terminal writer does not say (pytest's default, 80, is for a
#: terminal; CI logs are read wider).
DEFAULT_WIDTH = 120


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
                f"{len(not_run)} gate{'' if len(not_run) == 1 else 's'} {not_run_reason(document)}: "
                + short_list(not_run),
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


def _guard_lines(document: Mapping[str, Any]) -> list[Line]:
    """The warnings and notes a reviewer reads first, each once (:func:`notices`), naming the gates a warning makes
    ``OK*``: every ``OK*`` says why, at every verbosity."""
    lines: list[Line] = []
    for notice in notices(document):
        if notice.severity == "warning":
            gates = f" ({', '.join(notice.gates)})" if notice.gates else ""
            lines.append((f"WARNING{gates}: {notice.text}", _WARNING_MARKUP))
        else:
            lines.append((f"note: {notice.text}", {}))
    return lines


def _gate_table(document: Mapping[str, Any], width: int) -> list[Line]:
    """Every gate in one aligned table; the columns that would not fit ``width`` are left out, least needed first."""
    gates = [gate for evaluation in document["evaluations"] for gate in evaluation["gates"]]
    columns = [name for name in gate_table_columns(gates, rule=False) if name != "interval"]
    cells = [gate_cells(document, gate) for gate in gates]
    header = {name: GATE_HEADERS[name] for name in columns}
    right = {"value", "reference", "change", "false alarm", "as bad", "mde"}

    def render(names: list[str]) -> list[str]:
        widths = {name: max(len(row[name]) for row in (header, *cells)) for name in names}
        return [
            "  ".join(
                row[name].rjust(widths[name]) if name in right else row[name].ljust(widths[name]) for name in names
            ).rstrip()
            for row in (header, *cells)
        ]

    for dropped in ("as bad", "false alarm", "mde", "change", "reference"):
        lines = render(columns)
        if max(len(line) for line in lines) <= width:
            break
        columns = [name for name in columns if name != dropped]
    lines = render(columns)
    legend = power_legend(document) if "mde" in columns else None
    return (
        [(lines[0], {"bold": True})]
        + [(line, OUTCOME_MARKUP.get(gate["outcome"], {})) for line, gate in zip(lines[1:], gates)]
        + ([(legend, {})] if legend else [])
    )


def _wrapped(lines: Sequence[Line], width: int) -> list[Line]:
    """Each line wrapped at ``width`` (pytest's terminal width), its continuation indented by 4 past its own indent."""
    return [(piece, markup) for text, markup in lines for piece in wrap(text, width).split("\n")]


def _wrapped_or_whole(lines: Sequence[Line], width: int | None) -> list[Line]:
    """:func:`_wrapped` at ``width``, or each line whole without one."""
    return list(lines) if width is None else _wrapped(lines, width)


#: Fewer columns than this left on a line are no room to wrap a text into.
_NARROWEST = 30


def wrap(text: str, width: int, taken: int = 0) -> str:
    """``text`` with each of its lines wrapped at ``width``, continuations indented by 4 past the line's own indent;
    ``taken`` columns of the first line are used by what pytest prints before it. A word longer than a line is not
    broken (a path stays whole)."""
    out = []
    width = max(width, _NARROWEST)
    if taken and width - taken < _NARROWEST:  # what comes before leaves no room: the text starts on the next line
        return "\n" + wrap(text, width)
    for number, line in enumerate(text.split("\n")):
        room = width - (taken if number == 0 else 0)
        if len(line) <= room:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        pieces = textwrap.wrap(line, room, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)
        if len(pieces) > 1 and room < width:  # the continuation lines have the whole width
            rest = " ".join(piece.strip() for piece in pieces[1:])
            pieces = pieces[:1] + textwrap.wrap(
                indent + rest, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
            )
        out += pieces
    return "\n".join(out)


def _aligned(rows: Sequence[Sequence[str]], indent: str) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [indent + "  ".join(text.ljust(width) for text, width in zip(row, widths)).rstrip() for row in rows]


def page_lines(document: Mapping[str, Any]) -> list[Line]:
    """The reviewer's page in text: the verdict, what changed, each cause (its harmed queries and the gates they
    break), the warnings and notes, how sure, and the commands to reproduce or accept it."""
    verdict = page_verdict(document)
    lines: list[Line] = [(page_title(document), _VERDICT_MARKUP[verdict])]
    lines += [(text, {}) for text in change_lines(document)]
    near = closest(document)
    if near is not None:
        lines.append((f"{near.title.lower()}: {near.text}", _WARNING_MARKUP if near.near else {}))
    for cause in causes(document):
        lines.append((f"{cause_title(cause)}:" if cause.queries else cause_title(cause), {"bold": True}))
        header, rows = harmed_query_table(cause)
        if rows:
            lines += [(text, {}) for text in _aligned([header, *rows], "  ")]
            more = more_queries_text(cause)
            if more:
                lines.append((f"  {more}", {}))
            lines.append((f"  breaks {', '.join(gate_name(document, gate) for gate in cause.gates)}", {}))
    lines += _guard_lines(document)
    lines += [(f"How sure: {text}" if number == 0 else text, {}) for number, text in enumerate(sure_lines(document))]
    lines += [
        (f"{what}: {'; '.join(listed)}" + (f", {after}" if after else ""), {})
        for what, listed, after in commands(document)
    ]
    return lines


_VERDICT_MARKUP: dict[str, Markup] = {
    "fail": {"red": True, "bold": True},
    "warn": _WARNING_MARKUP,
    "ok": {"green": True, "bold": True},
}


def quiet_lines(document: Mapping[str, Any], width: int = DEFAULT_WIDTH) -> list[Line]:
    """``-q``: the warnings and notes, one line per gate (outcome, gate, its numbers), then the counts."""
    lines: list[Line] = _guard_lines(document)
    for evaluation in document["evaluations"]:
        for gate in evaluation["gates"]:
            lines.append(
                (
                    f"[{gate['outcome']}] {gate_name(document, gate)}: {gate_summary(gate)}",
                    OUTCOME_MARKUP.get(gate["outcome"], {}),
                )
            )
    lines += problem_lines(document)
    lines += team_test_lines(document)
    lines.append(_final_line(document))
    return _wrapped(lines, width)


def compact_lines(document: Mapping[str, Any], width: int = DEFAULT_WIDTH) -> list[Line]:
    """Default verbosity: the table of every gate, then the reviewer's page; ``-v`` adds the system tables and
    comparisons."""
    gates = [gate for evaluation in document["evaluations"] for gate in evaluation["gates"]]
    if not gates:
        lines = [(evaluation_title(evaluation), {"bold": True}) for evaluation in document["evaluations"]]
        if document["evaluations"]:
            lines.append(("analysis only: no gates (-v shows the system tables)", {}))
        lines += problem_lines(document) + team_test_lines(document)
        shown = document.get("tests") or document.get("errors") or document.get("not_run")
        return _wrapped(lines + ([_final_line(document)] if shown else []), width)
    lines = _gate_table(document, width)
    lines.append(("", {}))
    lines += page_lines(document)
    lines += problem_lines(document)
    lines += team_test_lines(document)
    lines.append(("(-v adds the system tables, comparisons and notes)", {}))
    lines.append(("", {}))
    lines.append(_final_line(document))
    return _wrapped(lines, width)


def _final_line(document: Mapping[str, Any]) -> Line:
    if not (document["summary"]["gates"] or document.get("tests") or document.get("errors") or document.get("not_run")):
        return ("bvtest: analysis only, no gates", {})
    failed = page_verdict(document) == "fail"
    return (f"bvtest: {summary_counts(document)}", {"red": True, "bold": True} if failed else {"green": True})


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


def summary_lines(document: Mapping[str, Any], verbosity: int = 1, width: int | None = None) -> list[Line]:
    """The summary below the section title, as ``(text, markup)`` lines, following pytest's verbosity.

    ``-q`` (``verbosity < 0``): :func:`quiet_lines`; default (0): :func:`compact_lines`, wrapped at the terminal's
    ``width`` (:data:`DEFAULT_WIDTH` when not given); ``-v``: every table, comparison, gate headline and note, then
    the reviewer's page, the sentences wrapped at ``width`` when given (each whole without) and each table row whole
    (a table may be wider than the terminal).
    """
    if verbosity < 0:
        return quiet_lines(document, width or DEFAULT_WIDTH)
    if verbosity == 0:
        return compact_lines(document, width or DEFAULT_WIDTH)

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
            lines += _wrapped_or_whole([(judged, {})], width)
        lines += _wrapped_or_whole([(tradeoff_text(evaluation), {})], width)
        gap = gap_rows(evaluation)
        widths = [max(len(row[column]) for row in gap) for column in range(len(gap[0]))]
        lines += _wrapped_or_whole([(GAP_TITLE, {})], width)
        for position, row in enumerate(gap):
            cells = [row[0].ljust(widths[0]), *(text.rjust(width) for text, width in zip(row[1:], widths[1:]))]
            lines.append(("  " + "  ".join(cells).rstrip(), {"bold": True} if position == 0 else {}))
        title, *rows = comparison_lines(evaluation) or [""]
        lines += _wrapped_or_whole([(title, {})], width) if title else []
        lines.extend((text, {}) for text in rows)
        lines += _wrapped_or_whole(
            [(text, {}) for text in (*analysis_lines(evaluation), *run_spread_lines(evaluation))], width
        )
        if evaluation.get("simulation") and number == _first_of_spec(document, evaluation):
            for simulation in evaluation.get("simulations") or [evaluation["simulation"]]:
                lines.extend((text, {}) for text in simulation_lines(simulation))
        prose: list[Line] = []
        for gate in evaluation["gates"]:
            markup = OUTCOME_MARKUP.get(gate["outcome"], {})
            prose.append((f"[{gate['outcome']}] {gate['id']}: {gate['headline']}", markup))
            power = power_text(gate)
            prose.extend([(f"  {power}", {})] if power else [])
            if gate.get("hint"):
                prose.append((f"  hint: {gate['hint']}", {}))
        prose.extend((f"note: {note}", {}) for note in topic_notes(evaluation))
        lines += _wrapped_or_whole(prose, width)  # the tables above keep their rows whole
    if document["evaluations"]:
        lines.append(("", {}))
    lines += _wrapped_or_whole([*page_lines(document), *problem_lines(document), *team_test_lines(document)], width)
    tests = document.get("tests") or []
    if document["summary"]["gates"] or tests or document.get("errors") or document.get("not_run"):
        lines.append(("", {}))
        lines.append(_final_line(document))
    return lines


def write_summary(document: Mapping[str, Any], writer: Any, verbosity: int = 1) -> None:
    """Write the ``bvtest summary`` section on pytest's terminal reporter, at its width."""
    writer.write_sep("=", "bvtest summary", bold=True)
    width = getattr(getattr(writer, "_tw", None), "fullwidth", DEFAULT_WIDTH)
    for text, markup in summary_lines(document, verbosity, width):
        writer.write_line(terminal_text(text), **markup)
