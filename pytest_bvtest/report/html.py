"""The HTML report: one self-contained file a reviewer opens from the CI run's artifacts.

Rendered from the session document like every other report. It holds the verdict, the gate table
with each gate's plain sentence, the topics that moved each failing gate, then per measure the
per-topic difference plot (candidate minus reference, sorted: the IR community's standard picture),
the bias-variance plots with the gates' limits, the statistics table and a sortable table of every
system's per-topic scores with the query texts; with a history file, each gate over time.

Self-contained: the styles, the few lines of sorting script and the plots (inline SVG from
:mod:`pytest_bvtest.report.svg`, so matplotlib is not needed) are in the file, and its
Content-Security-Policy forbids loading anything else. Every text from the inputs is escaped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from html import escape, unescape
from pathlib import Path
from typing import Any

from pytest_bvtest.io.textfiles import atomic_write_text
from pytest_bvtest.report import svg
from pytest_bvtest.report.history import GateSeries
from pytest_bvtest.report.markdown import (
    ERRORS_TITLE,
    blame_rows,
    blame_title,
    delta_text,
    false_alarm_text,
    interval_text,
    limit_text,
    short_id,
    what_to_do,
)
from pytest_bvtest.report.plots import ROLE_STYLES, SERIES, SERIES_COLORS, limit_lines, slug, topic_differences
from pytest_bvtest.report.wording import (
    NOT_RUN_REASON,
    TABLE_HEADER,
    TEAM_TESTS_TITLE,
    analysis_lines,
    comparison_lines,
    corner_lines,
    display_path,
    error_groups,
    evaluation_title,
    format_number,
    gate_warnings,
    guard_warnings,
    judged_line,
    judged_nothing,
    power_cell,
    power_legend,
    power_lines,
    power_text,
    run_spread_lines,
    summary_counts,
    system_rows,
    together_lines,
    topic_notes,
    tradeoff_text,
)
from pytest_bvtest.stats.registry import TABLE_COLUMNS

# matplotlib's marker of each statistic of plots.SERIES, as an SVG shape
_SHAPES = {"o": "circle", "s": "square", "^": "triangle"}

_OUTCOME_CLASSES = {"OK": "ok", "OK*": "warn", "UNDECIDED": "warn", "FAIL": "fail"}
# Symbols that common fonts have (the Markdown's emoji need an emoji font, which CI machines often lack).
_ICONS = {"ok": "✓", "warn": "⚠", "fail": "✗"}

_STYLE = (
    """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;margin:0 auto;max-width:1400px;
padding:0 20px 40px}
h1{font-size:1.6em;margin:.8em 0 .2em}h2{font-size:1.3em;margin:1.6em 0 .4em;border-bottom:1px solid #ddd}
h3{font-size:1.05em;margin:1.2em 0 .3em}
.meta{color:#555;margin:0 0 1em}.verdict.fail{color:#b71c1c}.verdict.warn{color:#a15c00}.verdict.ok{color:#1b5e20}
.warning{background:#fff4e0;border-left:4px solid #ef6c00;padding:.5em .8em;margin:.5em 0}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.3em .5em;vertical-align:top}
th{background:#f4f4f4;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.fail td{background:#fdecea}tr.warn td{background:#fff8e1}tr.candidate td{font-weight:600}
.outcome{white-space:nowrap;font-weight:600}
code{font:.9em ui-monospace,SFMono-Regular,Menlo,monospace;background:#f4f4f4;padding:0 .2em}
pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.85em}
.wide{overflow-x:auto}.scroll{overflow:auto;max-height:36em}.scroll th{position:sticky;top:0}
tr.gate td{border-bottom:none}tr.sentence td{border-top:none;padding-bottom:.6em}
.said{width:0;min-width:100%}table.gates{width:100%}table.gates td.num{white-space:normal}
.badge{display:inline-block;border-radius:3px;padding:0 .4em;color:#fff;font-weight:600}
.badge.ok{background:#2e7d32}.badge.warn{background:#ef6c00}.badge.fail{background:#c62828}
th button{all:unset;cursor:pointer}th button::after{content:" \\2195";color:#999}
th[aria-sort=ascending] button::after{content:" \\2191";color:#333}
th[aria-sort=descending] button::after{content:" \\2193";color:#333}
figure{margin:1em 0}figcaption{color:#555;font-size:.9em}svg.chart{width:100%;max-width:760px;height:auto}
footer{color:#666;font-size:.85em;margin-top:2em}
"""
    + svg.CHART_STYLE
)

# Sorts a table.sortable by the clicked column: by data-sort (a number) where the cells have it, else by text.
_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  var headers = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(headers, function (header, column) {
    header.querySelector("button").addEventListener("click", function () {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(headers, function (other) { other.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var cell = row.cells[column], value = cell.getAttribute("data-sort");
        return value === null ? cell.textContent : (value === "" ? NaN : Number(value));
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), order;
        if (typeof x === "number" && typeof y === "number") {
          if (isNaN(x) || isNaN(y)) { return isNaN(x) - isNaN(y); }
          order = x - y;
        } else {
          order = String(x).localeCompare(String(y), undefined, {numeric: true});
        }
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""

_POLICY = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def _number(value: float | str | None, digits: int = 6) -> str:
    return "-" if value is None else f"{float(value):.{digits}g}"


def _sort_key(value: float | str | None) -> str:
    """A cell's ``data-sort``: the number (JavaScript reads Infinity), empty where undefined."""
    return "" if value is None else repr(float(value)) if math.isfinite(float(value)) else str(value)


def _num_cell(value: float | str | None, text: str | None = None) -> str:
    return f'<td class="num" data-sort="{_sort_key(value)}">{escape(text if text is not None else _number(value))}</td>'


def _table(header: Sequence[str], rows: Sequence[str], *, sortable: bool = False, css: str = "") -> str:
    """A table; a sortable one scrolls inside its own box (its header stays in view)."""
    head = "".join(
        f'<th scope="col"><button type="button">{escape(name)}</button></th>'
        if sortable
        else f'<th scope="col">{escape(name)}</th>'
        for name in header
    )
    classes = " ".join(filter(None, [css, "sortable" if sortable else ""]))
    return (
        f'<div class="{"scroll" if sortable else "wide"}"><table class="{classes}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _inline(text: str) -> str:
    """The Markdown footer's inline syntax as HTML: code spans, bold and links; the rest escaped."""
    parts = []
    for piece in re.split(r"(`+)(?: ?)(.+?)(?: ?)\1", text):
        parts.append(piece)
    out = []
    # re.split with two groups yields: text, fence, code, text, fence, code, ...
    for index in range(0, len(parts), 3):
        plain = escape(parts[index], quote=False)
        plain = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", plain)
        plain = re.sub(
            r"\[([^\]]+)\]\(([^)\s]+)\)", lambda m: f'<a href="{escape(unescape(m.group(2)))}">{m.group(1)}</a>', plain
        )
        out.append(plain)
        if index + 2 < len(parts):
            out.append(f"<code>{escape(parts[index + 2], quote=False)}</code>")
    return "".join(out)


def _verdict(document: Mapping[str, Any]) -> tuple[str, str]:
    """The headline's class and icon, as the Markdown comment's: failed, warned or passed."""
    evaluations = document["evaluations"]
    warned = (
        document["summary"]["warnings"]
        or document["summary"].get("undecided")
        or document["summary"].get("not_run")
        or any(guard_warnings(evaluation) for evaluation in evaluations)
        or judged_nothing(document)
    )
    css = "fail" if not document["passed"] else "warn" if warned else "ok"
    return css, _ICONS[css]


def _header(document: Mapping[str, Any]) -> list[str]:
    css, icon = _verdict(document)
    tool = document.get("tool") or {}
    meta = [f"{tool.get('name', 'pytest-bvtest')} {tool.get('version', '')}".strip()]
    meta += [f"{name} {document[name]}" for name in ("commit", "branch") if document.get(name)]
    if document.get("timestamp"):
        meta.append(document["timestamp"])
    lines = [
        f'<h1 class="verdict {css}" id="verdict">{icon} pytest-bvtest: {escape(summary_counts(document))}</h1>',
        f'<p class="meta">{escape(" · ".join(meta))}</p>',
        *(f'<p class="together">{escape(text)}</p>' for text in together_lines(document) + power_lines(document)),
    ]
    for evaluation in document["evaluations"]:
        for warning in guard_warnings(evaluation):
            where = f"{display_path(evaluation['spec'])} · {evaluation['measure']}"
            lines.append(f'<p class="warning">⚠ <strong>Warning</strong> ({escape(where)}): {escape(warning)}</p>')
    return lines


def _reference_text(gate: Mapping[str, Any]) -> str:
    if not gate["reference"]:
        return "-"
    if gate["reference_value"] is None:
        return f"against {gate['reference']}"
    return f"{_number(gate['reference_value'])} ({gate['reference']})"


def _gate_rows(gate: Mapping[str, Any], columns: Sequence[str], full_ids: bool) -> str:
    """The gate's numbers in one row, and its plain sentence across the row beneath; the gate's id
    without its spec file where the session has one spec (``full_ids`` false)."""
    css = _OUTCOME_CLASSES[gate["outcome"]]
    calibration = gate.get("calibration")
    cells = {
        "outcome": f'<td class="outcome"><span class="badge {css}">{_ICONS[css]} {escape(gate["outcome"])}</span></td>',
        "gate": f'<td title="{escape(gate["id"])}"><code>{escape(gate["id"] if full_ids else short_id(gate))}</code>'
        f"</td>",
        "value": _num_cell(gate["value"], f"{_number(gate['value'])} ({gate['system']})"),
        "reference": _num_cell(gate["reference_value"], _reference_text(gate)),
        _DELTA: _num_cell(gate.get("delta"), delta_text(gate)),
        "limit": _num_cell(gate["limit"], limit_text(gate)),
        "false alarm": f"<td>{escape(false_alarm_text(calibration) if calibration else '-')}</td>",
        "bootstrap interval": f"<td>{escape(interval_text(gate))}</td>",
        _MDE: f'<td class="num" title="{escape(power_text(gate) or "")}">{escape(power_cell(gate))}</td>',
    }
    sentence = escape(gate.get("sentence") or gate["headline"])
    return (
        f'<tr class="gate {css}" data-gate="{escape(gate["id"])}">{"".join(cells[name] for name in columns)}</tr>'
        f'<tr class="sentence {css}"><td></td><td colspan="{len(columns) - 1}"><div class="said">{sentence}</div>'
        f"</td></tr>"
    )


_DELTA = "Δ candidate − reference"
_MDE = "MDE (all / 10%)"


def _gate_section(evaluations: Sequence[Mapping[str, Any]]) -> list[str]:
    gates = [gate for evaluation in evaluations for gate in evaluation["gates"]]
    if not gates:
        return ["<p>No gates: analysis only.</p>"]
    # columns that no gate fills are left out, so the table fits a screen
    columns = ["outcome", "gate", "value", "reference", _DELTA, "limit"]
    columns += ["false alarm"] * any(gate.get("calibration") for gate in gates)
    columns += ["bootstrap interval"] * any(gate["interval"] for gate in gates)
    legend = power_legend({"evaluations": evaluations})
    columns += [_MDE] * (legend is not None)
    full_ids = len({evaluation["spec"] for evaluation in evaluations}) > 1
    rows = [_gate_rows(gate, columns, full_ids) for gate in gates]
    lines = ['<h2 id="gates">Gates</h2>', _table(columns, rows, css="gates")]
    lines += [f'<p class="legend">{escape(legend)}</p>'] if legend else []
    # each gate's own reasons for OK* (within noise, a limit that cannot fail); the measure's guards head the page
    lines += [
        f'<p class="warning">⚠ <code>{escape(gate["id"])}</code>: {escape(warning)}</p>'
        for evaluation in evaluations
        for gate in evaluation["gates"]
        for warning in gate_warnings(evaluation, gate)
    ]
    return lines


def _team_test_section(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    if not tests:
        return []
    rows = [
        f'<tr class="{"ok" if test["passed"] else "fail"}"><td class="outcome"><span class="badge '
        f'{"ok" if test["passed"] else "fail"}">{escape(test["outcome"])}</span></td>'
        f"<td><code>{escape(test['id'])}</code></td><td>{escape(test.get('message') or '')}</td></tr>"
        for test in tests
    ]
    return [f"<h2>{escape(TEAM_TESTS_TITLE)}</h2>", _table(("outcome", "test", "message"), rows)]


def _problem_section(document: Mapping[str, Any]) -> list[str]:
    """The specs that could not be evaluated, and the gates that did not run."""
    lines = []
    groups = error_groups(document)
    if groups:
        rows = [
            f'<tr class="fail"><td><code>{escape(spec)}</code></td><td class="num">{count}</td>'
            f"<td>{escape(message)}</td></tr>"
            for spec, count, message in groups
        ]
        lines += [f"<h2>{escape(ERRORS_TITLE)}</h2>", _table(("spec", "items", "error"), rows)]
    not_run = document.get("not_run") or []
    if not_run:
        listed = ", ".join(f"<code>{escape(gate)}</code>" for gate in not_run)
        lines.append(
            f'<p class="warning">⚠ {len(not_run)} gate{"" if len(not_run) == 1 else "s"} {escape(NOT_RUN_REASON)}: '
            f"{listed}</p>"
        )
    return lines


def _failure_section(gate: Mapping[str, Any]) -> list[str]:
    """A failing or undecided gate: sentence, headline, its corners of unjudged documents, its blamed topics."""
    css = _OUTCOME_CLASSES[gate["outcome"]]
    lines = [
        f'<h3><span class="badge {css}">{_ICONS[css]} {escape(gate["outcome"])}</span> '
        f"<code>{escape(gate['id'])}</code></h3>",
        f"<p>{escape(gate.get('sentence') or '')}</p>",
        f"<p><code>{escape(gate['headline'])}</code></p>",
    ]
    corners = corner_lines(gate)
    if corners:
        items = "".join(f"<li>{escape(line.strip())}</li>" for line in corners[1:])
        lines.append(f"<p>{escape(corners[0])}</p><ul>{items}</ul>")
    header, rows = blame_rows(gate)
    if rows:
        numeric = {index for index, name in enumerate(header) if name not in ("topic", "query")}
        body = [
            "<tr>"
            + "".join(
                _num_cell(None, text) if index in numeric else f"<td>{escape(text)}</td>"
                for index, text in enumerate(row)
            )
            + "</tr>"
            for row in rows
        ]
        lines += [f"<p>{escape(blame_title(gate))}</p>", _table(header, body)]
    if gate.get("hint"):
        lines.append(f"<p>Hint: {escape(gate['hint'])}</p>")
    return lines


def _difference_figure(evaluation: Mapping[str, Any]) -> list[str]:
    pairs = topic_differences(evaluation)
    if pairs is None:
        return []
    texts = dict(zip(evaluation["topics"], evaluation.get("topic_texts") or []))
    candidate, reference = evaluation["candidate"], evaluation["reference"]
    better = sum(value > 0 for _, value in pairs)
    worse = sum(value < 0 for _, value in pairs)
    tips = [
        f"topic {topic}" + (f" ({texts[topic]})" if texts.get(topic) else "") + f": {value:+.4f}"
        for topic, value in pairs
    ]
    chart = svg.bar_chart(
        [topic for topic, _ in pairs],
        [value for _, value in pairs],
        tips,
        title=f"{evaluation['measure']}: {candidate} − {reference} per topic, sorted",
        y_label=f"Δ {evaluation['measure']}",
        x_label=f"{len(pairs)} topics, largest gain first",
    )
    caption = (
        f"Per-topic difference: {candidate} better on {better} topics, worse on {worse}, equal on "
        f"{len(pairs) - better - worse}. Hover a bar for its topic."
    )
    return [f'<figure class="difference">{chart}<figcaption>{escape(caption)}</figcaption></figure>']


def _bias_variance_figures(evaluation: Mapping[str, Any]) -> list[str]:
    complete = [system for system in evaluation["systems"] if all(system.get(key) is not None for key, _, _ in SERIES)]
    if not complete:
        return []
    systems = sorted(complete, key=lambda system: system["bias2"])
    names = [system["name"] for system in systems]
    series = [
        svg.Series(label, [system[key] for system in systems], color, _SHAPES[marker])
        for (key, label, marker), color in zip(SERIES, SERIES_COLORS)
    ]
    levels = [svg.Level(label, limit, color) for label, limit, color in limit_lines(evaluation)]
    highlighted = {
        system["name"]: ROLE_STYLES[system["role"]]["color"] for system in systems if system["role"] in ROLE_STYLES
    }
    points = svg.point_chart(
        names,
        series,
        highlighted=highlighted,
        levels=levels,
        title=f"{evaluation['measure']}: Bias², Var and Bias²+Var per system, target c = "
        f"{_number(evaluation['target']['c'], 4)}",
        y_label=f"squared error ({evaluation['measure']} units²)",
        x_label=f"systems sorted by Bias² ({len(systems)})",
    )
    scatter = svg.scatter_chart(
        [
            svg.Point(system["name"], float(system["bias2"]), float(system["var"]), highlighted.get(system["name"]))
            for system in systems
        ],
        title=f"{evaluation['measure']}: Bias² against Var",
        x_label="Bias²",
        y_label="Var",
        corner_note="lower-left is better",
        label_all=len(systems) <= 12,
    )
    return [
        f'<figure class="bias-variance">{points}<figcaption>Each system\'s squared error against the virtual '
        f"target, split into Bias² and Var (points, not lines: the systems are categories). "
        f"Dashed lines: the gates' "
        f"limits. Candidate and reference are shaded.</figcaption></figure>",
        f'<figure class="scatter">{scatter}<figcaption>{escape(tradeoff_text(evaluation))}</figcaption></figure>',
    ]


def _statistics_table(evaluation: Mapping[str, Any]) -> list[str]:
    rows = []
    for system, row in zip(evaluation["systems"], system_rows(evaluation)):
        cells = [f"<td>{escape(text)}</td>" for text in row[:2]]
        cells += [_num_cell(system[key], text) for (key, _), text in zip(TABLE_COLUMNS, row[2:-1])]
        cells.append(f"<td>{escape(row[-1])}</td>")
        rows.append(f'<tr class="{escape(system["role"])}">{"".join(cells)}</tr>')
    return ["<h3>Statistics per system</h3>", _table(TABLE_HEADER, rows, sortable=True, css="statistics")]


def _topic_table(evaluation: Mapping[str, Any]) -> list[str]:
    systems = [system for system in evaluation["systems"] if system.get("per_topic") is not None]
    if not systems:
        return []
    texts = evaluation.get("topic_texts") or [None] * len(evaluation["topics"])
    by_role = {system["role"]: system for system in systems}
    with_delta = "candidate" in by_role and "reference" in by_role
    header = ["topic", "query", *(system["name"] for system in systems)]
    if with_delta:
        header.append(f"Δ {by_role['candidate']['name']} − {by_role['reference']['name']}")
    # the run-to-run spread of the systems given as several runs (their columns show the mean of their runs)
    repeated = [system for system in systems if system.get("runs")]
    header += [f"{system['name']} run sd" for system in repeated]
    # the judged share of the candidate's and the reference's top d, unless every top d is judged
    judgments = evaluation.get("judgments")
    judged = (
        [system for system in systems if system["role"] in ("candidate", "reference")]
        if judgments and not judgments["complete"]
        else []
    )
    header += [f"{judgments['label']} {system['name']}" for system in judged]  # type: ignore[index]
    rows = []
    for j, (topic, text) in enumerate(zip(evaluation["topics"], texts)):
        cells = [f'<td data-sort="{escape(topic)}">{escape(topic)}</td>', f"<td>{escape(text or '')}</td>"]
        cells += [_num_cell(system["per_topic"][j], format_number(system["per_topic"][j])) for system in systems]
        if with_delta:
            delta = float(by_role["candidate"]["per_topic"][j]) - float(by_role["reference"]["per_topic"][j])
            cells.append(_num_cell(delta, f"{delta:+.4f}"))
        cells += [
            _num_cell(system["runs"]["topic_sd"][j], format_number(system["runs"]["topic_sd"][j]))
            for system in repeated
        ]
        cells += [
            _num_cell(system["judged_per_topic"][j], format_number(system["judged_per_topic"][j], 2))
            for system in judged
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return [
        f"<h3>{escape(evaluation['measure'])} per topic (click a column to sort)</h3>",
        _table(header, rows, sortable=True, css="topics"),
    ]


def _evaluation_section(evaluation: Mapping[str, Any]) -> list[str]:
    lines = [f'<section class="evaluation"><h2>{escape(evaluation_title(evaluation))}</h2>']
    lines += _difference_figure(evaluation)
    lines += _bias_variance_figures(evaluation)
    lines += _statistics_table(evaluation)
    judged = judged_line(evaluation)
    lines += [f"<p>{escape(judged)}</p>"] if judged is not None else []
    lines += [f"<p>{escape(text)}</p>" for text in analysis_lines(evaluation)]
    lines += [f"<p>{escape(text)}</p>" for text in run_spread_lines(evaluation)]
    notes = topic_notes(evaluation)
    if notes:
        lines.append("<ul>" + "".join(f"<li>{escape(note)}</li>" for note in notes) + "</ul>")
    comparisons = comparison_lines(evaluation)
    if comparisons:
        lines.append(f"<pre>{escape(chr(10).join(comparisons))}</pre>")
    lines += _topic_table(evaluation)
    return lines + ["</section>"]


def _history_section(series: Sequence[GateSeries]) -> list[str]:
    if not series:
        return []
    lines = ['<section class="history"><h2 id="history">History</h2>']
    for entry in series:
        changes = len(entry.judgment_changes)
        judged = (
            ""
            if not changes
            else f"; the qrels changed {changes} time{'' if changes == 1 else 's'} (dotted line): values on either "
            "side are not comparable"
        )
        lines.append(
            f"<figure>{history_chart(entry)}<figcaption>{escape(entry.id)}: {len(entry.times)} records{judged}"
            f"</figcaption></figure>"
        )
    return lines + ["</section>"]


def write_history_charts(series: Sequence[GateSeries], folder: Path) -> list[Path]:
    """One SVG file per gate of a history (``<gate id slug>.svg``), written atomically; the paths written."""
    written = []
    for entry in series:
        path = Path(folder) / f"{slug(entry.id)}.svg"
        atomic_write_text(path, svg.standalone(history_chart(entry)))
        written.append(path)
    return written


def history_chart(series: GateSeries) -> str:
    """One gate's values over the history's records, with its limit (an SVG document fragment)."""
    return svg.time_chart(
        series.times,
        svg.Series(series.label, series.values, SERIES_COLORS[0]),
        series.limits,
        series.outcomes,
        title=f"{series.id} over time",
        y_label=series.label,
        breaks=series.judgment_changes,
    )


def render(document: Mapping[str, Any], history: Sequence[GateSeries] = ()) -> str:
    """The HTML report of a session document; ``history`` adds each gate's series over time."""
    evaluations = list(document["evaluations"])
    css, _ = _verdict(document)
    body = _header(document)
    body += _gate_section(evaluations)
    body += _problem_section(document)
    body += _team_test_section(list(document.get("tests") or []))
    failing = [
        gate for evaluation in evaluations for gate in evaluation["gates"] if gate["outcome"] in ("FAIL", "UNDECIDED")
    ]
    if failing:
        kinds = {gate["outcome"] for gate in failing}
        title = {"FAIL": "Failing gates", "UNDECIDED": "Undecided gates"}.get(min(kinds) if len(kinds) == 1 else "")
        body.append(f"<h2>{title or 'Failing and undecided gates'}</h2>")
        for gate in failing:
            body += _failure_section(gate)
    for evaluation in evaluations:
        body += _evaluation_section(evaluation)
    body += _history_section(history)
    advice = what_to_do(document)
    if advice:
        body.append(
            "<h2>What to do</h2><ul>"
            + "".join(f"<li>{_inline(line[2:])}</li>" for line in advice if line.startswith("- "))
            + "</ul>"
        )
    tool = document.get("tool") or {}
    body.append(
        f"<footer>{escape(tool.get('name', 'pytest-bvtest'))} {escape(tool.get('version', ''))}, "
        f"report schema {document['schema_version']}</footer>"
    )
    title = f"pytest-bvtest: {summary_counts(document)}"
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n"
        f'<body class="{css}">\n' + "\n".join(body) + f"\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )
