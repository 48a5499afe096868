"""The Markdown summary: a sticky pull-request comment and the GitHub Actions job summary.

It opens with :data:`MARKER`, an HTML comment a CI step can search for to update its comment in
place, then the overall verdict, one table of gates, the topics that lost most for each failing gate,
and the per-measure system tables folded in ``<details>`` blocks. GitHub-flavoured Markdown.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, metadata
from typing import Any

from pytest_bvtest.report.untrusted import code_text, markdown_text
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
    display_path,
    error_groups,
    evaluation_title,
    failing_gates,
    failing_gates_title,
    gap_rows,
    gate_cells,
    gate_name,
    gate_summary,
    gate_table_columns,
    harmed_query_table,
    judge_command,
    judged_line,
    more_queries_text,
    not_run_reason,
    notices,
    page_title,
    page_verdict,
    power_legend,
    run_spread_lines,
    sentence_start,
    sure_lines,
    system_rows,
    topic_notes,
    tradeoff_text,
)

MARKER = "<!-- pytest-bvtest -->"

OUTCOME_ICONS = {"OK": "✅", "OK*": "⚠️", "UNDECIDED": "❔", "FAIL": "❌"}

#: GitHub refuses a comment longer than this.
GITHUB_COMMENT_LIMIT = 65_536
#: What the page may take: GitHub's limit less room for the line the action adds (a link to the reports' artifact).
COMMENT_BUDGET = 60_000


def prose(text: str) -> str:
    """``text`` made safe as Markdown prose (:func:`~pytest_bvtest.report.untrusted.markdown_text`): ``&``, ``<``
    and ``>`` escaped, so that GitHub shows them instead of reading HTML (``<Init`` or ``p < 0.01`` would otherwise
    vanish), control characters visible, and no mention, link, image or issue reference from the inputs. Every
    text outside a code span goes through it; a code span shows its text as it is (:func:`code`)."""
    return markdown_text(text)


def _one_line(text: str) -> str:
    """``text`` on one line with ``|`` escaped, as a table cell needs (inside a code span too)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def cell(text: str) -> str:
    """``text`` made safe for a table cell: one line, ``|`` escaped, and :func:`prose`."""
    return prose(_one_line(text))


def code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it contains, its control characters visible."""
    text = code_text(text)
    fence = "`" * (_longest_backticks(text) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def code_block(lines: list[str], language: str = "text") -> list[str]:
    """``lines`` as a fenced code block that no line of theirs can close (its fence is longer than any run of
    backticks in them: a system named ```` ``` ```` ended the block, and the rest was read as Markdown)."""
    shown = [code_text(line) for line in lines]
    fence = "`" * max(3, max((_longest_backticks(line) for line in shown), default=0) + 1)
    return [f"{fence}{language}", *shown, fence]


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    """A GFM table; ``right`` holds the indices of right-aligned (numeric) columns."""
    rule = ["---:" if column in right else "---" for column in range(len(header))]
    return ["| " + " | ".join(row) + " |" for row in (tuple(cell(text) for text in header), tuple(rule), *rows)]


def _number(value: float | str | None) -> str:
    # Six significant digits, as in the gate messages: a gate can fail by less than 0.0001. An infinite
    # value arrives as "Infinity"/"-Infinity" (the JSON report's spelling) and prints as inf/-inf.
    return "-" if value is None else f"{float(value):.6g}"


def icon(outcome: str, passed: bool) -> str:
    """The outcome's icon; an outcome the reports do not know yet gets a neutral one, or the failure's."""
    return OUTCOME_ICONS.get(outcome, "❔" if passed else "❌")


def _cause_section(cause: Cause, document: Mapping[str, Any], single: bool) -> list[str]:
    """One cause: its title, the harmed queries, the gates they break (each one line with its numbers)."""
    title = prose(cause_title(cause))
    lines = ["", f"**❌ {title}**" if single else f"### ❌ {title}"]
    header, rows = harmed_query_table(cause)
    if rows:
        lines += [
            "",
            *_table(
                header,
                [tuple(cell(text) for text in row) for row in rows],
                set(range(len(header) - len(cause.measures), len(header))),
            ),
        ]
        more = more_queries_text(cause)
        if more:
            lines += ["", prose(more)]
    if cause.queries:
        lines += [""] + [
            f"- {icon(gate['outcome'], gate['passed'])} {prose(gate_summary(gate))}" for gate in cause.gates
        ]
    return lines


def _notice_lines(document: Mapping[str, Any]) -> list[str]:
    lines = []
    for notice in notices(document):
        gates = f" ({', '.join(code(gate) for gate in notice.gates)})" if notice.gates else ""
        if notice.severity == "warning":
            lines += ["", f"> ⚠️ **Warning**{gates}: {prose(notice.text)}"]
        else:
            lines += ["", f"> ℹ️ {prose(notice.text[0].upper() + notice.text[1:])}"]
    return lines


def _first_screen(document: Mapping[str, Any]) -> list[str]:
    """The verdict, what changed, the causes, the warnings and notes, how sure, the commands."""
    lines = [MARKER, f"## {VERDICT_ICONS[page_verdict(document)]} pytest-bvtest: {prose(page_title(document))}"]
    changes = change_lines(document)
    if changes:
        lines += [line for text in changes for line in ("", prose(sentence_start(text, document)))]
    near = closest(document)
    if near is not None:
        lines += ["", f"{'⚠️ ' if near.near else ''}**{near.title}:** {prose(near.text)}"]
    found = causes(document)
    for cause in found:
        lines += _cause_section(cause, document, single=len(found) == 1)
    lines += _notice_lines(document)
    sure = sure_lines(document)
    if sure:
        # one sentence per line: the false alarms, a disagreement with the comparisons' test, each measure's power
        lines += ["", "**How sure:** " + prose(sure[0]) if len(sure) == 1 else "**How sure:**"]
        lines += [] if len(sure) == 1 else ["", *(f"- {prose(text)}" for text in sure)]
    said = commands(document)
    if said:
        lines += [
            "",
            " · ".join(
                f"**{prose(what)}:** "
                + "; ".join(code(command) for command in listed)
                + (f", {prose(after)}" if after else "")
                for what, listed, after in said
            ),
        ]
    return lines


VERDICT_ICONS = {"fail": "❌", "warn": "⚠️", "ok": "✅"}


def _gate_section(
    document: Mapping[str, Any],
    evaluations: list[Mapping[str, Any]],
    only_concerned: bool = False,
    every_sentence: bool = True,
) -> list[str]:
    """Every gate's numbers in one folded table, with how its rates were drawn, and each gate's sentence;
    ``only_concerned``: the gates that are not a plain ``OK``; ``every_sentence=False``: the sentences of those only
    (the shorter forms, when the whole does not fit the comment)."""
    gates = [gate for evaluation in evaluations for gate in evaluation["gates"]]
    if not gates:
        return ["", "No gates: analysis only."] if evaluations else []
    passing = len(gates)
    if only_concerned:
        gates = [gate for gate in gates if gate["outcome"] != "OK"]
        passing -= len(gates)
        if not gates:
            return ["", prose(f"{_plural_gates(passing)} pass (OK); the HTML report has their numbers.")]
    columns = gate_table_columns(gates)
    rows = []
    for gate in gates:
        cells = gate_cells(document, gate)
        cells["outcome"] = f"{icon(gate['outcome'], gate['passed'])} {gate['outcome']}"
        rows.append(tuple(code(_one_line(cells[name])) if name == "gate" else cell(cells[name]) for name in columns))
    numeric = {
        columns.index(name)
        for name in ("value", "reference", "change", "false alarm", "as bad", "mde")
        if name in columns
    }
    title = (
        f"{_plural_gates(len(gates))} that {'is' if len(gates) == 1 else 'are'} not a plain OK (the HTML report has "
        f"the {passing} that pass)"
        if only_concerned
        else _plural_gates(len(gates))
    )
    lines = ["", f"<details><summary>{prose(title)}: values, limits, false-alarm rates</summary>", ""]
    lines += _table(tuple(GATE_HEADERS[name] for name in columns), rows, numeric)
    note = calibration_note(document)
    if note:
        lines += ["", prose(note[0].upper() + note[1:]) + "."]
    legend = power_legend(document) if "mde" in columns else None
    if legend:
        lines += ["", prose(legend)]
    # beside the gated measures, unless every top d is judged (then in their details); measures of a spec whose line
    # is the same (one depth, one prior) share it
    judged: dict[tuple[str, str], list[str]] = {}
    for evaluation in evaluations:
        if _judged_beside_gates(evaluation):
            key = (evaluation["spec"], judged_line(evaluation) or "")
            judged.setdefault(key, []).append(evaluation["measure"])
    for (_, text), measures in judged.items():
        lines += ["", f"**{prose(', '.join(measures))}** · {prose(text)}"]
    lines += [""] + [
        f"- {icon(gate['outcome'], gate['passed'])} {code(gate_name(document, gate))} {prose(_sentence(gate))}"
        for gate in gates
        if every_sentence or gate["outcome"] != "OK"
    ]
    return lines + ["", "</details>"]


def _judged_beside_gates(evaluation: Mapping[str, Any]) -> bool:
    """Whether the judged shares of a measure are said beside its gates (some top d holds unjudged documents), and
    not again in its details."""
    judgments = evaluation.get("judgments")
    return bool(evaluation["gates"] and judgments and not judgments["complete"])


def _plural_gates(count: int) -> str:
    return "The gate" if count == 1 else f"All {count} gates"


def _sentence(gate: Mapping[str, Any]) -> str:
    return gate.get("sentence") or gate["headline"]


#: Heads the list of specs that could not be evaluated (Markdown and HTML).
ERRORS_TITLE = "Could not be evaluated (these items failed the session; fix the input and run again)"


def _problem_section(document: Mapping[str, Any]) -> list[str]:
    """The specs that could not be evaluated, and the gates that did not run."""
    lines = []
    groups = error_groups(document)
    if groups:
        rows = [(code(_one_line(spec)), str(count), cell(message)) for spec, count, message in groups]
        lines += ["", f"**{prose(ERRORS_TITLE)}**", "", *_table(("spec", "items", "error"), rows, {1})]
    not_run = document.get("not_run") or []
    if not_run:
        listed = ", ".join(code(_one_line(gate)) for gate in not_run)
        gates = f"{len(not_run)} gate{'' if len(not_run) == 1 else 's'} {not_run_reason(document)}"
        lines += ["", f"⚠️ {prose(gates)}: {listed}"]
    return lines


TEST_ICONS = {"passed": "✅", "failed": "❌", "error": "❌", "skipped": "⏭️", "xfailed": "⚠️", "xpassed": "⚠️"}


def _team_test_section(tests: list[Mapping[str, Any]]) -> list[str]:
    if not tests:
        return []
    rows = [
        (
            f"{TEST_ICONS.get(test['outcome'], '')} {test['outcome']}",
            code(_one_line(test["id"])),
            cell(test.get("message") or ""),
        )
        for test in tests
    ]
    return ["", f"**{TEAM_TESTS_TITLE}**", "", *_table(("outcome", "test", "message"), rows, set())]


def _failure_section(document: Mapping[str, Any], gate: Mapping[str, Any], shown: dict[tuple, str]) -> list[str]:
    """A failing or undecided gate's whole headline, its corners of unjudged documents, and the topics that moved
    it, each topic's share of the change."""
    lines = [
        "",
        f"**{icon(gate['outcome'], gate['passed'])} {code(gate_name(document, gate))}** {prose(gate['headline'])}",
    ]
    corners = corner_lines(gate)
    if corners:
        lines += ["", prose(corners[0]), ""] + [f"- {prose(line.strip())}" for line in corners[1:]]
    header, rows = blame_rows(gate)
    hint = ["", f"Hint: {prose(gate['hint'])}"] if gate.get("hint") else []
    if not rows:
        return lines + hint
    key = (header, tuple(rows))
    if key in shown:
        return lines + ["", f"The topics are those listed under {code(shown[key])}."] + hint
    shown[key] = gate_name(document, gate)
    numeric = {index for index, name in enumerate(header) if name not in ("topic", "query")}
    table = _table(header, [tuple(cell(text) for text in row) for row in rows], numeric)
    return lines + ["", prose(blame_heading(gate)), ""] + table + hint


def _comparison_section(evaluations: list[Mapping[str, Any]]) -> list[str]:
    blocks = [(evaluation, comparison_lines(evaluation)) for evaluation in evaluations]
    blocks = [(evaluation, lines) for evaluation, lines in blocks if lines]
    if not blocks:
        return []
    lines = ["", "<details><summary>Comparisons on the mean: wins/ties/losses and paired tests</summary>", ""]
    for evaluation, text in blocks:
        lines += [f"**{prose(evaluation['measure'])}**", "", *code_block(text), ""]
    return lines + ["</details>"]


def _system_section(evaluation: Mapping[str, Any], all_systems: bool) -> list[str]:
    shown = (
        evaluation
        if all_systems
        else {
            **evaluation,
            "systems": [system for system in evaluation["systems"] if system["role"] in ("candidate", "reference")],
        }
    )
    rows = [
        (f"**{cell(row[0])}**" if system["role"] == "candidate" else cell(row[0]), *(cell(text) for text in row[1:]))
        for system, row in zip(shown["systems"], system_rows(shown))
    ]
    lines = ["", f"<details><summary>{prose(evaluation_title(evaluation))}</summary>", ""]
    lines += _table(TABLE_HEADER, rows, set(range(2, len(TABLE_HEADER) - 1)))
    judged = judged_line(shown)
    if judged is not None and not _judged_beside_gates(evaluation):
        lines += ["", prose(judged)]
    omitted = len(evaluation["systems"]) - len(rows)
    if omitted:
        lines += [
            "",
            f"{omitted} baseline systems and their notes are not shown to keep this comment under GitHub's size limit; "
            "the JSON report has them.",
        ]
    lines += ["", prose(tradeoff_text(evaluation))]
    gap = gap_rows(shown)
    lines += ["", prose(GAP_TITLE), ""]
    lines += _table(gap[0], [tuple(cell(text) for text in row) for row in gap[1:]], set(range(1, len(gap[0]))))
    lines += [line for text in analysis_lines(evaluation) for line in ("", prose(text))]
    lines += [line for text in run_spread_lines(shown) for line in ("", prose(text))]
    notes = topic_notes(shown)
    if notes:
        lines += [""] + [f"- {prose(note)}" for note in notes]
    lines += ["", "</details>"]
    return lines


def _simulation_section(simulation: Mapping[str, Any]) -> list[str]:
    """The per-topic simulation (docs/mathematics.md §3e): averaged Bias² and Var per system, and per topic the
    tradeoff degree across systems (IPM 2022 Table 9's per-topic reading)."""
    title = (
        f"per-topic simulation ({simulation['measure']}, {simulation['samples']} samples, seed {simulation['seed']}): "
        f"Bias² and Var averaged over {len(simulation['topics'])} topics; tradeoff per topic"
    )
    lines = ["", f"<details><summary>{prose(title)}</summary>", ""]
    lines += _table(
        ("system", "Bias²", "Var"),
        [(cell(system["name"]), _number(system["bias2"]), _number(system["var"])) for system in simulation["systems"]],
        {1, 2},
    )
    lines += [""]
    lines += _table(
        ("topic", "Pearson", "Spearman"),
        [
            (cell(topic), _number(tradeoff["pearson"]), _number(tradeoff["spearman"]))
            for topic, tradeoff in zip(simulation["topics"], simulation["topic_tradeoff"])
        ],
        {1, 2},
    )
    return lines + ["", "</details>"]


#: The parts of the page after its first screen, in the order the budget is spent on them (the page shows them in
#: its own order): what failed, then the gates, then the tables a reviewer opens last.
_PRIORITY = ("problems", "team tests", "failing", "gates", "advice", "comparisons", "systems", "simulations")


class _Section:
    """A part of the page: its kind (:data:`_PRIORITY`), what it shows (for the sentence naming what was left out),
    then its forms, the whole first and shorter ones after, for when the whole does not fit the comment."""

    def __init__(self, kind: str, what: str, *forms: list[str]) -> None:
        self.kind = kind
        self.what = what
        self.forms = [form for form in forms if form]


def _sections(document: Mapping[str, Any]) -> list[_Section]:
    """The page after its first screen, in the page's order."""
    evaluations = list(document["evaluations"])
    sections = [
        _Section("problems", "the specs that could not be evaluated", _problem_section(document)),
        _Section("team tests", "the team tests", _team_test_section(list(document.get("tests") or []))),
        _Section(
            "gates",
            "the table of every gate",
            _gate_section(document, evaluations),
            _gate_section(document, evaluations, every_sentence=False),
            _gate_section(document, evaluations, only_concerned=True),
        ),
    ]
    failing = failing_gates(document)
    if failing:
        shown: dict[tuple, str] = {}
        title = failing_gates_title(failing)
        details = [line for gate in failing for line in _failure_section(document, gate, shown)]
        summary = f"<details><summary>{title}: its headline and each topic's share of the change</summary>"
        sections.append(_Section("failing", f"{title.lower()}'s topics", ["", summary, *details, "", "</details>"]))
    sections.append(_Section("comparisons", "the comparisons on the mean", _comparison_section(evaluations)))
    simulated = set()
    for evaluation in evaluations:
        what = f"the systems' table of {evaluation['measure']} ({display_path(evaluation['spec'])})"
        sections.append(
            _Section("systems", what, _system_section(evaluation, True), _system_section(evaluation, False))
        )
        # the simulation is the same for every measure of a spec: shown once, after its first measure
        if evaluation.get("simulation") and evaluation["spec"] not in simulated:
            simulated.add(evaluation["spec"])
            for simulation in evaluation.get("simulations") or [evaluation["simulation"]]:
                what = f"the per-topic simulation ({display_path(evaluation['spec'])})"
                sections.append(_Section("simulations", what, _simulation_section(simulation)))
    advice = what_to_do(document)
    if advice:
        summary = "<details><summary>What else to do: adjust a gate, read what a statistic means</summary>"
        sections.append(_Section("advice", "what else to do", ["", summary, "", *advice, "", "</details>"]))
    return sections


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _left_out_note(left_out: list[str]) -> list[str]:
    listed = (
        left_out
        if len(left_out) <= MAX_LEFT_OUT
        else [*left_out[: MAX_LEFT_OUT - 1], f"{len(left_out) - MAX_LEFT_OUT + 1} more"]
    )
    said = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    return [
        "",
        prose(
            f"Left out to keep this comment under GitHub's limit of {GITHUB_COMMENT_LIMIT:,} characters: {said}; "
            "the HTML report and the JSON report have everything."
        ),
    ]


#: The parts a comment names when it leaves them out; beyond, their count.
MAX_LEFT_OUT = 6
#: What a first screen too long for a comment leaves out (its end).
FIRST_SCREEN_REST = "the rest of the first screen"


def _render(document: Mapping[str, Any], budget: int) -> str:
    """The page within ``budget`` characters: the first screen (the verdict, the causes, the warnings, the commands)
    whole, then each later part, in the order of :data:`_PRIORITY`, whole, in a shorter form, or left out and named
    in a closing sentence; the parts kept are shown in the page's order."""
    tool = document.get("tool") or {}
    footer = (
        f"{tool.get('name', 'pytest-bvtest')} {tool.get('version', '')}, report schema {document['schema_version']}"
    )
    closing = ["", f"<sub>{prose(footer)}</sub>", ""]
    first = _first_screen(document)
    sections = _sections(document)
    # the closing sentence's room is kept, at its longest, while any part may still be left out
    longest = sorted((f"{section.what} in full" for section in sections), key=len, reverse=True)
    reserved = _size(closing) + _size(_left_out_note([FIRST_SCREEN_REST, *longest]))
    left_out = []
    if _size(first) + reserved > budget:  # hundreds of causes or warnings: cut between two paragraphs
        ends = [end for end, line in enumerate(first) if not line and _size(first[:end]) + reserved <= budget]
        first = first[: ends[-1] if ends else 2]
        left_out.append(FIRST_SCREEN_REST)
    spent = _size(first) + reserved
    chosen: dict[int, int] = {}  # a section's index → the form kept
    for index in sorted(range(len(sections)), key=lambda index: _PRIORITY.index(sections[index].kind)):
        sizes = [_size(form) for form in sections[index].forms]
        fitting = next((form for form, size in enumerate(sizes) if spent + size <= budget), None)
        if fitting is not None:
            chosen[index] = fitting
            spent += sizes[fitting]
    lines = list(first)
    for index, section in enumerate(sections):
        if index in chosen:
            lines += section.forms[chosen[index]]
        if section.forms and chosen.get(index) != 0:
            left_out.append(section.what + (" in full" if index in chosen else ""))
    if left_out:
        lines += _left_out_note(left_out)
    return "\n".join(lines + closing)


def _spec_location(evaluation: Mapping[str, Any], gate: Mapping[str, Any]) -> str:
    line = gate.get("spec_line")
    return display_path(evaluation["spec"]) + (f":{line}" if line else "")


def docs_link(label: str, target: str) -> str:
    """A link to a section of pytest-bvtest's documentation, or its path when no documentation URL is known."""
    base = documentation_url()
    return (
        f"[{prose(label)}]({base}{target})" if base else f"{prose(label)} ({code('docs/' + target)} in pytest-bvtest)"
    )


def documentation_url() -> str | None:
    """The package's ``Documentation`` project URL (ending in ``/``), if its metadata names one."""
    try:
        urls = metadata("pytest-bvtest").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    for entry in urls:
        name, _, url = entry.partition(",")
        if name.strip().lower() == "documentation" and url.strip():
            return url.strip().rstrip("/") + "/"
    return None


def what_to_do(document: Mapping[str, Any]) -> list[str]:
    """Beyond the commands on the first screen: where to adjust each gate that is not a plain ``OK``, and what its
    statistic means."""
    evaluations = list(document["evaluations"])
    concerned = [
        (evaluation, gate) for evaluation in evaluations for gate in evaluation["gates"] if gate["outcome"] != "OK"
    ]
    if not concerned:
        return []
    where = ", ".join(
        f"{code(gate_name(document, gate))} at {code(_spec_location(evaluation, gate))}"
        for evaluation, gate in concerned
    )
    lines = [
        f"- **A bound is too strict:** edit the gate in the spec ({where}); "
        f"`bvtest check SPEC` shows the new verdict without pytest."
    ]
    undecided = [(evaluation, gate) for evaluation, gate in concerned if gate["outcome"] == "UNDECIDED"]
    if undecided:
        first = {display_path(evaluation["spec"]): gate for evaluation, gate in reversed(undecided)}
        judge = "; ".join(code(judge_command(gate, shlex.quote(spec))) for spec, gate in reversed(first.items()))
        lines.append(
            f"- **Unjudged documents decide {len(undecided)} gate{'' if len(undecided) == 1 else 's'}:** {judge} "
            "lists them by how far each moves the gates; fill in their grades and list the file in the spec's "
            f"{code('qrels')} after the official ones; see {docs_link('unjudged documents', 'judgments.md')}."
        )
    docs = dict.fromkeys(
        (gate.get("label") or gate["statistic"], gate.get("docs")) for _, gate in concerned if gate.get("docs")
    )
    if docs:
        lines.append("- **What the statistics mean:** " + ", ".join(docs_link(label, target) for label, target in docs))
    return lines


def render(document: Mapping[str, Any], budget: int = COMMENT_BUDGET) -> str:
    """The Markdown summary of a session document, at most ``budget`` characters after its first screen."""
    return _render(document, budget)
