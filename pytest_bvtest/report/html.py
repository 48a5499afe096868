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
from collections.abc import Callable, Mapping, Sequence
from html import unescape
from pathlib import Path
from typing import Any

from pytest_bvtest.io.textfiles import atomic_write_text
from pytest_bvtest.report import compare, svg
from pytest_bvtest.report.history import GateSeries
from pytest_bvtest.report.markdown import ERRORS_TITLE, what_to_do
from pytest_bvtest.report.plots import ROLE_STYLES, SERIES, SERIES_COLORS, limit_lines, slug, topic_differences
from pytest_bvtest.report.untrusted import html_text as escape  # every text on the page goes through it
from pytest_bvtest.report.wording import (
    GAP_TITLE,
    GATE_HEADERS,
    TABLE_HEADER,
    TEAM_TESTS_TITLE,
    Cause,
    analysis_lines,
    blame_heading,
    blame_rows,
    calibration_note,
    cause_title,
    causes,
    change_lines,
    closest,
    commands,
    comparison_lines,
    corner_lines,
    error_groups,
    evaluation_title,
    failing_gates,
    failing_gates_title,
    format_number,
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
    sentence_start,
    summary_counts,
    sure_lines,
    system_rows,
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
.note{background:#eef4fb;border-left:4px solid #1565c0;padding:.5em .8em;margin:.5em 0}
.changes{margin:.2em 0 .8em}.sure,.command{margin:.5em 0}.command code{white-space:nowrap}
section.cause h2{border-bottom:none;margin:1em 0 .3em;color:#b71c1c}ul.broken{margin:.3em 0 .8em;padding-left:1.2em}
details>summary{cursor:pointer}details>summary h2{display:inline-block;border-bottom:none;margin:1.2em 0 .4em}
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


def _code_spans(text: str, plain: Callable[[str], str] = lambda piece: escape(piece, quote=False)) -> str:
    """``text`` with its Markdown code spans as ``<code>`` (a warning names a command so), the rest through
    ``plain`` (escaped)."""
    # re.split with two groups yields: text, fence, code, text, fence, code, ...
    parts = re.split(r"(`+)(?: ?)(.+?)(?: ?)\1", text)
    out = []
    for index in range(0, len(parts), 3):
        out.append(plain(parts[index]))
        if index + 2 < len(parts):
            out.append(f"<code>{escape(parts[index + 2], quote=False)}</code>")
    return "".join(out)


def _inline(text: str) -> str:
    """The Markdown footer's inline syntax as HTML: code spans, bold and links; the rest escaped."""

    def plain(piece: str) -> str:
        piece = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escape(piece, quote=False))
        return re.sub(
            r"\[([^\]]+)\]\(([^)\s]+)\)", lambda m: f'<a href="{escape(unescape(m.group(2)))}">{m.group(1)}</a>', piece
        )

    return _code_spans(text, plain)


def _text_rows(rows: Sequence[Sequence[str]], numeric: set[int]) -> list[str]:
    """Table rows of texts, the ``numeric`` columns' cells right-aligned as numbers."""
    return [
        "<tr>"
        + "".join(
            _num_cell(None, text) if index in numeric else f"<td>{escape(text)}</td>" for index, text in enumerate(row)
        )
        + "</tr>"
        for row in rows
    ]


def _outcome_class(gate: Mapping[str, Any]) -> str:
    """The gate's row class: ``ok``, ``warn`` or ``fail``; an outcome the reports do not know yet is ``warn`` when it
    passed."""
    return _OUTCOME_CLASSES.get(gate["outcome"], "warn" if gate["passed"] else "fail")


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _cause_section(document: Mapping[str, Any], cause: Cause) -> list[str]:
    """One cause: its title, the harmed queries, the gates they break, each one line with its numbers."""
    lines = [f'<section class="cause"><h2>{_ICONS["fail"]} {escape(_capital(cause_title(cause)))}</h2>']
    header, rows = harmed_query_table(cause)
    if rows:
        numeric = set(range(len(header) - len(cause.measures), len(header)))
        body = _text_rows(rows, numeric)
        lines.append(_table(header, body, css="harmed"))
        more = more_queries_text(cause)
        if more:
            lines.append(f"<p>{escape(more)}</p>")
        lines.append(
            '<ul class="broken">'
            + "".join(f'<li title="{escape(gate["id"])}">{escape(gate_summary(gate))}</li>' for gate in cause.gates)
            + "</ul>"
        )
    return lines + ["</section>"]


def _header(document: Mapping[str, Any]) -> list[str]:
    """The first screen: the verdict, what changed, the causes, the warnings and notes, how sure, the commands."""
    css = page_verdict(document)
    tool = document.get("tool") or {}
    meta = [f"{tool.get('name', 'pytest-bvtest')} {tool.get('version', '')}".strip()]
    meta += [f"{name} {document[name]}" for name in ("commit", "branch") if document.get(name)]
    if document.get("timestamp"):
        meta.append(document["timestamp"])
    lines = [
        f'<h1 class="verdict {css}" id="verdict">{_ICONS[css]} pytest-bvtest: {escape(page_title(document))}</h1>',
        f'<p class="meta">{escape(" · ".join(meta))}</p>',
    ]
    changes = change_lines(document)
    if changes:
        lines.append(
            '<p class="changes">' + "<br>".join(escape(sentence_start(text, document)) for text in changes) + "</p>"
        )
    near = closest(document)
    if near is not None:
        css = "warning" if near.near else "note"
        lines.append(f'<p class="{css}"><strong>{escape(near.title)}:</strong> {escape(near.text)}</p>')
    for cause in causes(document):
        lines += _cause_section(document, cause)
    for notice in notices(document):
        gates = f" ({', '.join(f'<code>{escape(gate)}</code>' for gate in notice.gates)})" if notice.gates else ""
        if notice.severity == "warning":
            lines.append(f'<p class="warning">⚠ <strong>Warning</strong>{gates}: {_code_spans(notice.text)}</p>')
        else:
            lines.append(f'<p class="note">{_code_spans(_capital(notice.text))}</p>')
    sure = sure_lines(document)
    if sure:
        if len(sure) == 1:
            lines.append(f'<p class="sure"><strong>How sure:</strong> {escape(sure[0])}</p>')
        else:  # one sentence per item: the false alarms, a disagreement with the comparisons' test, each power
            items = "".join(f"<li>{escape(text)}</li>" for text in sure)
            lines.append(f'<p class="sure"><strong>How sure:</strong></p><ul class="sure">{items}</ul>')
    for what, listed, after in commands(document):
        shown = "; ".join(f"<code>{escape(command)}</code>" for command in listed)
        lines.append(
            f'<p class="command"><strong>{escape(what)}:</strong> {shown}{escape(", " + after if after else "")}</p>'
        )
    return lines


def _gate_rows(document: Mapping[str, Any], gate: Mapping[str, Any], columns: Sequence[str]) -> str:
    """The gate's numbers in one row, and its plain sentence across the row beneath."""
    css = _outcome_class(gate)
    cells = gate_cells(document, gate)
    sorts = {
        "value": gate["value"],
        "reference": gate.get("reference_value"),
        "limit": gate.get("limit"),
        "false alarm": (gate.get("calibration") or {}).get("rate"),
        "as bad": (gate.get("calibration") or {}).get("p_value"),
    }
    rendered = []
    for name in columns:
        if name == "outcome":
            rendered.append(
                f'<td class="outcome"><span class="badge {css}">{_ICONS[css]} {escape(gate["outcome"])}</span></td>'
            )
        elif name == "gate":
            rendered.append(f'<td title="{escape(gate["id"])}"><code>{escape(cells["gate"])}</code></td>')
        elif name == "mde":
            rendered.append(f'<td class="num" title="{escape(power_text(gate) or "")}">{escape(cells[name])}</td>')
        elif name in sorts or name == "change":
            rendered.append(_num_cell(sorts.get(name), cells[name]))
        else:
            rendered.append(f"<td>{escape(cells[name])}</td>")
    sentence = escape(gate.get("sentence") or gate["headline"])
    return (
        f'<tr class="gate {css}" data-gate="{escape(gate["id"])}">{"".join(rendered)}</tr>'
        f'<tr class="sentence {css}"><td></td><td colspan="{len(columns) - 1}"><div class="said">{sentence}</div>'
        f"</td></tr>"
    )


def _gate_section(document: Mapping[str, Any], evaluations: Sequence[Mapping[str, Any]]) -> list[str]:
    gates = [gate for evaluation in evaluations for gate in evaluation["gates"]]
    if not gates:
        return ["<p>No gates: analysis only.</p>"]
    columns = gate_table_columns(gates)
    rows = [_gate_rows(document, gate, columns) for gate in gates]
    summary = "The gate" if len(gates) == 1 else f"All {len(gates)} gates"
    lines = [
        f'<details class="gates"><summary><h2 id="gates">{summary}: values, limits, false-alarm rates</h2></summary>',
        _table([GATE_HEADERS[name] for name in columns], rows, css="gates"),
    ]
    note = calibration_note(document)
    if note:
        lines.append(f'<p class="meta">{escape(_capital(note))}.</p>')
    legend = power_legend(document) if "mde" in columns else None
    if legend:
        lines.append(f'<p class="meta legend">{escape(legend)}</p>')
    return lines + ["</details>"]


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
        gates = f"{len(not_run)} gate{'' if len(not_run) == 1 else 's'} {not_run_reason(document)}"
        lines.append(f'<p class="warning">⚠ {escape(gates)}: {listed}</p>')
    return lines


def _failure_section(document: Mapping[str, Any], gate: Mapping[str, Any]) -> list[str]:
    """A failing or undecided gate: sentence, headline, its corners of unjudged documents, its blamed topics."""
    css = _outcome_class(gate)
    lines = [
        f'<h3><span class="badge {css}">{_ICONS[css]} {escape(gate["outcome"])}</span> '
        f"<code>{escape(gate_name(document, gate))}</code></h3>",
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
        body = _text_rows(rows, numeric)
        lines += [f"<p>{escape(blame_heading(gate))}</p>", _table(header, body)]
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
    gap = gap_rows(evaluation)
    lines += [f"<h3>{escape(GAP_TITLE)}</h3>", _table(gap[0], _text_rows(gap[1:], set(range(1, len(gap[0])))))]
    judged = judged_line(evaluation)
    lines += [f"<p>{escape(judged)}</p>"] if judged is not None else []
    lines += [f"<p>{escape(text)}</p>" for text in analysis_lines(evaluation)]
    lines += _mve_sweep_agreement(evaluation)
    lines += [f"<p>{escape(text)}</p>" for text in run_spread_lines(evaluation)]
    notes = topic_notes(evaluation)
    if notes:
        lines.append("<ul>" + "".join(f"<li>{escape(note)}</li>" for note in notes) + "</ul>")
    comparisons = comparison_lines(evaluation)
    if comparisons:
        lines.append(f"<pre>{escape(chr(10).join(comparisons))}</pre>")
    lines += _topic_table(evaluation)
    return lines + ["</section>"]


def _mve_sweep_agreement(evaluation: Mapping[str, Any]) -> list[str]:
    """With an MVE alpha sweep: Kendall's tau and tau_AP of MVE's ranking at each alpha against the mean term's
    ranking (alpha 0), as a plot and a table (Zuccon et al. CIKM 2016 plot how the ranking changes with alpha)."""
    mve = evaluation.get("mve") or {}
    sweep = mve.get("sweep")
    if not sweep or not sweep.get("kendall_tau"):
        return []
    alphas = [float(alpha) for alpha in sweep["alphas"]]
    kendall = [None if value is None else float(value) for value in sweep["kendall_tau"]]
    tau_ap = [None if value is None else float(value) for value in sweep["tau_ap"]]
    title = f"{evaluation['measure']}: MVE's ranking against the mean term's as alpha grows"
    chart = svg.line_chart(
        alphas,
        [
            svg.Series("Kendall tau", kendall, SERIES_COLORS[0]),
            svg.Series("tau_AP", tau_ap, SERIES_COLORS[1], "square"),
        ],
        title=title,
        y_label="agreement with alpha 0",
        x_label=f"alpha ({mve['form']})",
        low=-1.0,
        high=1.0,
    )
    rows = [
        f"<tr>{_num_cell(alpha, f'{alpha:.4g}')}{_num_cell(tau, _number(tau, 4))}{_num_cell(ap, _number(ap, 4))}</tr>"
        for alpha, tau, ap in zip(alphas, kendall, tau_ap)
    ]
    return [
        f"<h3>{escape(title)}</h3>",
        f'<figure class="sweep">{chart}<figcaption>1: MVE ranks the systems as their mean term does; lower: the '
        "variance term reorders them.</figcaption></figure>",
        "<details><summary>Kendall tau and tau_AP at each alpha</summary>",
        _table(["alpha", "Kendall tau", "tau_AP"], rows),
        "</details>",
    ]


def _pairwise_section(evaluations: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per spec, every system against every other (``bvtest compare``'s table): each measure's mean with the letters of
    the systems it is significantly better than, and each measure's pairs with every test's p-values."""
    by_spec: dict[str, list[Mapping[str, Any]]] = {}
    for evaluation in evaluations:
        if evaluation.get("pairwise") and evaluation["pairwise"]["pairs"]:
            by_spec.setdefault(evaluation["spec"], []).append(evaluation["pairwise"])
    lines = []
    for spec, documents in by_spec.items():
        title = "Every system against every other" + (f" ({Path(spec).name})" if len(by_spec) > 1 else "")
        lines.append(f'<section class="pairwise"><h2>{escape(title)}</h2>')
        rows = []
        for row in compare.cells(documents, lambda letters: "\x00" + "".join(letters)):
            cells = [f"<td>{escape(row[0])}</td>", f"<td>{escape(row[1])}</td>"]
            for text in row[2:]:
                mean, _, marks = text.partition("\x00")
                beaten = f"<sup>{escape(marks)}</sup>" if marks else ""
                cells.append(f'<td class="num">{escape(mean)}{beaten}</td>')
            rows.append(f"<tr>{''.join(cells)}</tr>")
        lines.append(_table(["", "system", *(document["measure"] for document in documents)], rows))
        lines.append(f"<p>{escape(compare.legend(documents))}</p>")
        for document in documents:
            lines.append(
                f"<details><summary>{escape(document['measure'])}: every pair, first minus second</summary>"
                f"<pre>{escape(chr(10).join(compare.pair_lines(document)[1:]))}</pre></details>"
            )
        lines.append("</section>")
    return lines


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
    """One SVG file per gate of a history (``<gate id slug>.svg``, gates whose ids slug alike told apart by a
    digest), written atomically; the paths written."""
    written = []
    slugs = [slug(entry.id) for entry in series]
    for entry, name in zip(series, slugs):
        path = Path(folder) / f"{slug(entry.id, distinct=slugs.count(name) > 1)}.svg"
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
    css = page_verdict(document)
    body = _header(document)
    body += _problem_section(document)
    body += _team_test_section(list(document.get("tests") or []))
    body += _gate_section(document, evaluations)
    failing = failing_gates(document)
    if failing:
        what = failing_gates_title(failing)
        body.append(f'<details class="failing"><summary><h2>{what}: its headline and topics</h2></summary>')
        for gate in failing:
            body += _failure_section(document, gate)
        body.append("</details>")
    for evaluation in evaluations:
        body += _evaluation_section(evaluation)
    body += _pairwise_section(evaluations)
    body += _history_section(history)
    advice = what_to_do(document)
    if advice:
        body.append(
            "<h2>What else to do</h2><ul>"
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
