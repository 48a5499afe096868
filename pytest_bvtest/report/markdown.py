"""The Markdown summary: a sticky pull-request comment and the GitHub Actions job summary.

It opens with :data:`MARKER`, an HTML comment a CI step can search for to update its comment in
place, then the overall verdict, one table of gates, the topics that lost most for each failing gate,
and the per-measure system tables folded in ``<details>`` blocks. GitHub-flavoured Markdown.
"""

from __future__ import annotations

import html
import re
import shlex
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, metadata
from typing import Any

from pytest_bvtest.report.wording import (
    NOT_RUN_REASON,
    TABLE_HEADER,
    TEAM_TESTS_TITLE,
    analysis_lines,
    comparison_lines,
    corner_lines,
    delta_text,
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
    run_spread_lines,
    summary_counts,
    system_rows,
    together_lines,
    topic_notes,
    tradeoff_text,
)

MARKER = "<!-- pytest-bvtest -->"

OUTCOME_ICONS = {"OK": "✅", "OK*": "⚠️", "UNDECIDED": "❔", "FAIL": "❌"}

# GitHub refuses comments longer than 65,536 characters; past this size the system tables keep only
# the candidate and the reference (the JSON report has every system).
MAX_COMMENT_CHARACTERS = 60_000


def prose(text: str) -> str:
    """``text`` made safe as Markdown prose: ``&``, ``<`` and ``>`` escaped, so that GitHub shows them instead of
    reading HTML (``<Init`` or ``p < 0.01`` would otherwise vanish). Every text outside a code span goes
    through it; a code span shows its text as it is."""
    return html.escape(str(text), quote=False)


def _one_line(text: str) -> str:
    """``text`` on one line with ``|`` escaped, as a table cell needs (inside a code span too)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def cell(text: str) -> str:
    """``text`` made safe for a table cell: one line, ``|`` escaped, and :func:`prose`."""
    return prose(_one_line(text))


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


def is_upper(gate: Mapping[str, Any]) -> bool:
    """True when the value must stay at or below the limit."""
    if "upper" in gate:
        return bool(gate["upper"])
    return gate["bound"]["kind"] in ("max", "max_increase")


def limit_text(gate: Mapping[str, Any]) -> str:
    """``≤ 0.0812468 (max_increase 5%)``: the effective limit, its side and the rule that set it."""
    rule = gate.get("rule") or (gate.get("bound") or {}).get("text", "")
    limit = gate["limit"] if "limit" in gate else gate["bound"]["limit"]
    return f"{'≤' if is_upper(gate) else '≥'} {_number(limit)} ({rule})"


def interval_text(gate: Mapping[str, Any]) -> str:
    interval = gate["interval"]
    if interval is None:
        return "-"
    what = "candidate − reference" if gate["reference_value"] is not None else "candidate"
    return (
        f"{what}: [{_number(interval['low'])}, {_number(interval['high'])}] "
        f"{interval['confidence']:.0%}, seed {interval['seed']}"
    )


def short_id(gate: Mapping[str, Any]) -> str:
    """The gate id without the spec file (``nDCG@10::trisk``)."""
    return gate["id"].split("::", 1)[-1]


def _gate_row(gate: Mapping[str, Any], with_power: bool) -> tuple[str, ...]:
    reference = "-"
    if gate["reference"]:
        # An absolute bound on a statistic measured against a reference (TRisk >= -2) has no reference value.
        reference = (
            f"against {cell(gate['reference'])}"
            if gate["reference_value"] is None
            else f"{_number(gate['reference_value'])} ({cell(gate['reference'])})"
        )
    return (
        f"{OUTCOME_ICONS[gate['outcome']]} {gate['outcome']}",
        code(_one_line(gate["id"])),
        f"{_number(gate['value'])} ({cell(gate['system'])})",
        reference,
        cell(delta_text(gate)),
        cell(limit_text(gate)),
        "-" if gate.get("calibration") is None else cell(false_alarm_text(gate["calibration"])),
        cell(interval_text(gate)),
        *((cell(power_cell(gate)),) if with_power else ()),
    )


def false_alarm_text(calibration: Mapping[str, Any]) -> str:
    """The false-alarm rate of the gate's limit and how its null was drawn (docs/mathematics.md §7)."""
    rate = "undefined" if calibration["rate"] is None else f"{calibration['rate']:.2%}"
    drawn = "exact" if calibration["exact"] else f"{calibration['swaps']:,} swaps, seed {calibration['seed']}"
    family = "" if calibration.get("family") is None else "; family-wise limit"
    joint = calibration.get("together")
    together = "" if joint is None else f"; {joint['rate']:.2%} for {joint['gates']} gates together"
    return f"{rate} ({drawn}{family}{together})"


def _sentence(gate: Mapping[str, Any]) -> str:
    return gate.get("sentence") or gate["headline"]


def _gate_section(evaluations: list[Mapping[str, Any]]) -> list[str]:
    gates = [gate for evaluation in evaluations for gate in evaluation["gates"]]
    if not gates:
        return ["No gates: analysis only."] if evaluations else []
    lines = [f"- {OUTCOME_ICONS[gate['outcome']]} {prose(_sentence(gate))} {code(short_id(gate))}" for gate in gates]
    lines.append("")
    header = (
        "outcome",
        "gate",
        "value",
        "reference",
        "Δ candidate − reference",
        "limit",
        "false alarm",
        "bootstrap interval",
    )
    legend = power_legend({"evaluations": evaluations})
    header += ("MDE (all / 10%)",) * (legend is not None)
    lines += _table(header, [_gate_row(gate, legend is not None) for gate in gates], {2, 3, 4, 6, 8})
    lines += ["", prose(legend)] if legend else []
    for evaluation in evaluations:  # the measure's guards are listed once, under the headline
        for gate in evaluation["gates"]:
            for message in gate_warnings(evaluation, gate):
                lines += ["", f"⚠️ {code(gate['id'])}: {prose(message)}"]
    for evaluation in evaluations:  # beside the gated measure, unless every top d is judged (then in its details)
        judgments = evaluation.get("judgments")
        if evaluation["gates"] and judgments and not judgments["complete"]:
            lines += ["", f"**{prose(evaluation['measure'])}** · {prose(judged_line(evaluation))}"]
    return lines


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
        lines += ["", f"⚠️ {len(not_run)} gate{'' if len(not_run) == 1 else 's'} {prose(NOT_RUN_REASON)}: {listed}"]
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
        f"{label} term Δ" if _by_term(gate) else "score Δ",
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
                    format_number(impact["contribution"], 4)
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


def _by_term(gate: Mapping[str, Any]) -> bool:
    """A gate on a statistic of the per-topic simulation: its blamed topics show per-topic terms, not scores."""
    return gate.get("blame_by") == "term difference"


def blame_title(gate: Mapping[str, Any]) -> str:
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


def _failure_section(gate: Mapping[str, Any], shown: dict[tuple, str]) -> list[str]:
    """A failing or undecided gate: its sentence and headline, its corners of unjudged documents, its topics."""
    lines = [
        "",
        f"### {OUTCOME_ICONS[gate['outcome']]} {code(gate['id'])}",
        "",
        prose(_sentence(gate)),
        "",
        prose(gate["headline"]),
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
    shown[key] = gate["id"]
    numeric = set(range(2 if header[1] == "query" else 1, len(header)))
    table = _table(header, [tuple(cell(text) for text in row) for row in rows], numeric)
    return lines + ["", prose(blame_title(gate)), ""] + table + hint


def _comparison_section(evaluations: list[Mapping[str, Any]]) -> list[str]:
    blocks = [(evaluation, comparison_lines(evaluation)) for evaluation in evaluations]
    blocks = [(evaluation, lines) for evaluation, lines in blocks if lines]
    if not blocks:
        return []
    lines = ["", "<details><summary>Comparisons on the mean: wins/ties/losses and paired tests</summary>", ""]
    for evaluation, text in blocks:
        lines += [f"**{prose(evaluation['measure'])}**", "", "```text", *text, "```", ""]
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
    if judged is not None:
        lines += ["", prose(judged)]
    omitted = len(evaluation["systems"]) - len(rows)
    if omitted:
        lines += [
            "",
            f"{omitted} baseline systems and their notes are not shown to keep this comment under GitHub's size limit; "
            "the JSON report has them.",
        ]
    lines += ["", prose(tradeoff_text(evaluation))]
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


def _render(document: Mapping[str, Any], all_systems: bool) -> str:
    evaluations = list(document["evaluations"])
    warnings = [(evaluation, warning) for evaluation in evaluations for warning in guard_warnings(evaluation)]
    summary = document["summary"]
    warned = warnings or summary["warnings"] or summary.get("undecided")
    warned = warned or summary.get("not_run") or judged_nothing(document)
    verdict = "❌" if not document["passed"] else "⚠️" if warned else "✅"
    lines = [MARKER, f"## {verdict} pytest-bvtest: {summary_counts(document)}", ""]
    lines += [line for text in together_lines(document) + power_lines(document) for line in (prose(text), "")]
    for evaluation, warning in warnings:
        where = f"{display_path(evaluation['spec'])} · {evaluation['measure']}"
        lines += [f"> ⚠️ **Warning** ({prose(where)}): {prose(warning)}", ""]
    lines += _gate_section(evaluations)
    lines += _problem_section(document)
    shown: dict[tuple, str] = {}
    lines += _team_test_section(list(document.get("tests") or []))
    for evaluation in evaluations:
        for gate in evaluation["gates"]:
            if gate["outcome"] in ("FAIL", "UNDECIDED"):
                lines += _failure_section(gate, shown)
    lines += _comparison_section(evaluations)
    simulated = set()
    for evaluation in evaluations:
        lines += _system_section(evaluation, all_systems)
        # the simulation is the same for every measure of a spec: shown once, after its first measure
        if evaluation.get("simulation") and all_systems and evaluation["spec"] not in simulated:
            simulated.add(evaluation["spec"])
            for simulation in evaluation.get("simulations") or [evaluation["simulation"]]:
                lines += _simulation_section(simulation)
    lines += what_to_do(document)
    tool = document.get("tool") or {}
    footer = (
        f"{tool.get('name', 'pytest-bvtest')} {tool.get('version', '')}, report schema {document['schema_version']}"
    )
    lines += ["", f"<sub>{prose(footer)}</sub>", ""]
    return "\n".join(lines)


def _candidate_input(evaluation: Mapping[str, Any]) -> str | None:
    return next((item["path"] for item in evaluation.get("inputs") or [] if item["role"] == "candidate"), None)


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
    """The footer: reproduce locally, accept the change, adjust a bound, read about each failing statistic."""
    evaluations = list(document["evaluations"])
    failing = [
        (evaluation, gate) for evaluation in evaluations for gate in evaluation["gates"] if gate["outcome"] != "OK"
    ]
    if not failing:
        return []
    specs = dict.fromkeys((display_path(evaluation["spec"]), _candidate_input(evaluation)) for evaluation, _ in failing)
    commands = [
        f"pytest {shlex.quote(spec)}" + (f" --bvtest-run {shlex.quote(display_path(run))}" if run else "")
        for spec, run in specs
    ]
    lines = ["", "### What to do", "", "- **Reproduce locally:** " + "; ".join(code(command) for command in commands)]
    # --bvtest-update refuses after a failed gate, so accepting a failing change needs the force option
    update = "--bvtest-update-force" if any(gate["outcome"] == "FAIL" for _, gate in failing) else "--bvtest-update"
    lines.append(
        "- **The change is intended** (the new behaviour becomes the reference): "
        + "; ".join(code(f"{command} {update}") for command in commands)
        + ", then commit the updated reference run."
    )
    where = ", ".join(
        f"{code(short_id(gate))} at {code(_spec_location(evaluation, gate))}" for evaluation, gate in failing
    )
    lines.append(
        f"- **The bound is too strict:** edit the gate in the spec ({where}); "
        f"`bvtest check SPEC` shows the new verdict without pytest."
    )
    undecided = [(evaluation, gate) for evaluation, gate in failing if gate["outcome"] == "UNDECIDED"]
    if undecided:
        judge = "; ".join(
            code(f"bvtest judge {spec} -o judgments.tsv")
            for spec in dict.fromkeys(display_path(evaluation["spec"]) for evaluation, _ in undecided)
        )
        lines.append(
            f"- **Unjudged documents decide {len(undecided)} gate{'' if len(undecided) == 1 else 's'}:** {judge} "
            "lists them by how far each moves the gates; fill in their grades and list the file in the spec's "
            f"{code('qrels')} after the official ones ({docs_link('unjudged documents', 'judgments.md')})."
        )
    docs = dict.fromkeys(
        (gate.get("label") or gate["statistic"], gate.get("docs")) for _, gate in failing if gate.get("docs")
    )
    if docs:
        lines.append("- **What the statistics mean:** " + ", ".join(docs_link(label, target) for label, target in docs))
    return lines


def render(document: Mapping[str, Any]) -> str:
    """The Markdown summary of a session document."""
    text = _render(document, all_systems=True)
    return text if len(text) <= MAX_COMMENT_CHARACTERS else _render(document, all_systems=False)
