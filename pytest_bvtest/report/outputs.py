"""The session's outputs: the one session document, and every report written from it.

Under pytest-xdist, items run in workers while the summary is written by the controller, so every
item puts a JSON-ready payload on its test report; the controller assembles the payloads into one
session document (:mod:`pytest_bvtest.report.jsonreport`) and renders it. The command line builds
the same document directly from an :class:`~pytest_bvtest.judging.evaluation.Evaluation`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_bvtest.io.textfiles import append_text, atomic_write_text
from pytest_bvtest.judging.decision import Verdict
from pytest_bvtest.judging.evaluation import Evaluation, MeasureEvaluation
from pytest_bvtest.report import github, markdown, terminal, wording
from pytest_bvtest.report.history import (
    HistoryWarning,
    append_history,
    gate_series,
    history_records,
    read_history,
    run_context,
)
from pytest_bvtest.report.jsonreport import dumps, gate_document, measure_document, session_document


def item_payload(evaluation: Evaluation, outcome: Verdict | None) -> dict[str, Any]:
    """What one item sends to the controller.

    Its measure's evaluation (all measures for an analysis item) and its gate.
    """
    measures = evaluation.measures if outcome is None else [evaluation.measure(outcome.measure)]
    return {
        "documents": [_measure_document(evaluation, measure) for measure in measures],
        "gate": None
        if outcome is None
        else gate_document(outcome, str(evaluation.spec.path), candidate_runs(evaluation)),
        "position": _position(evaluation, outcome),
        # every gate of the spec, so the controller can say which of them did not run (-k, --lf, -x)
        "spec_gates": [gate.id for gate in evaluation.gates],
    }


def _position(evaluation: Evaluation, outcome: Verdict | None) -> list[int]:
    """Where an item's results stand in the spec: (measure, gate) positions; an analysis item first."""
    if outcome is None:
        return [-1, -1]
    return next(
        [m, g]
        for m, measure in enumerate(evaluation.measures)
        for g, gate in enumerate(measure.gates)
        if gate is outcome
    )


def junit_properties(gate: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A gate's numbers (its document, :func:`~pytest_bvtest.report.jsonreport.gate_document`) as JUnit
    ``<property>`` entries; those that do not apply are left out."""
    properties: list[tuple[str, Any]] = [
        ("bvtest_statistic", gate["statistic"]),
        ("bvtest_measure", gate["measure"]),
        ("bvtest_system", gate["system"]),
        ("bvtest_value", gate["value"]),
        ("bvtest_bound", gate["rule"]),
        ("bvtest_limit", gate["limit"]),
        ("bvtest_outcome", gate["outcome"]),
    ]
    # why an OK* is not a plain pass (or what a FAIL should not be trusted for): CI viewers show no pytest warning
    warned = [gate[key] for key in ("warning", "undecided") if gate.get(key)] + gate["guards"]
    properties += [("bvtest_warning", text) for text in warned]
    judgments = gate.get("judgments")
    if judgments is not None:  # the unjudged documents the gate's corners rest on (docs/mathematics.md §10)
        properties += [
            ("bvtest_unjudged_candidate", judgments["candidate_unjudged"]),
            ("bvtest_unjudged_reference", judgments["reference_unjudged"]),
            ("bvtest_undecided", judgments["undecided"]),
        ]
        plausible = judgments.get("plausible")
        if plausible is not None:  # weighed over plausible gradings of them: P, and what it rests on
            properties += [
                ("bvtest_plausible_p", plausible["probability"]),
                ("bvtest_plausible_draws", plausible["draws"]),
                ("bvtest_plausible_seed", plausible["seed"]),
                *([] if plausible["settle"] is None else [("bvtest_plausible_settle", plausible["settle"])]),
            ]
    calibration = gate["calibration"]
    if calibration is not None:
        properties += [
            ("bvtest_false_alarm_rate", calibration["rate"]),
            ("bvtest_null_swaps", calibration["swaps"]),
            ("bvtest_null_exact", calibration["exact"]),
            ("bvtest_null_seed", calibration["seed"]),
        ]
        if calibration["false_alarm"] is not None:
            properties += [
                ("bvtest_false_alarm", calibration["false_alarm"]),
                ("bvtest_calibrated_limit", calibration["limit"]),
            ]
        for kind in ("family", "together"):
            if calibration[kind] is not None:
                properties += [
                    (f"bvtest_{kind}_gates", calibration[kind]["gates"]),
                    (f"bvtest_{kind}_rate", calibration[kind]["rate"]),
                ]
    if gate["reference"] is not None:
        properties += [("bvtest_reference", gate["reference"]), ("bvtest_reference_value", gate["reference_value"])]
    interval = gate["interval"]
    if interval is not None:
        properties += [
            ("bvtest_interval_low", interval["low"]),
            ("bvtest_interval_high", interval["high"]),
            ("bvtest_confidence", interval["confidence"]),
            ("bvtest_seed", interval["seed"]),
        ]
    power = gate.get("power")
    if power is not None and power["skipped"]:
        properties.append(("bvtest_power_skipped", power["skipped"]))
    elif power is not None:
        # the smallest drop each regression model's gate catches 80% of the time (docs/mathematics.md §9)
        properties += [(f"bvtest_mde_{m['model']}", "never" if m["mde"] is None else m["mde"]) for m in power["models"]]
        properties += [("bvtest_power_draws", power["draws"]), ("bvtest_power_seed", power["seed"])]
        aim = power["aim"]
        if aim is not None:
            properties += [
                ("bvtest_detect_drop", aim["drop"]),
                ("bvtest_detect_model", aim["model"]),
                ("bvtest_detect_power", aim["power"]),
                ("bvtest_topics_needed", aim["topics_needed"]),
            ]
    # a value that does not apply (the reference value of URisk, TRisk) is left out, not written as 'None'
    return [(key, value) for key, value in properties if value is not None]


#: pytest's outcome categories that make a team test count as failed.
FAILING_TEST_OUTCOMES = ("failed", "error")
_MESSAGE_CHARACTERS = 300


def failure_line(report: Any, characters: int | None = _MESSAGE_CHARACTERS) -> str | None:
    """The first line of why a test did not pass (its exception, or its skip reason), cut after ``characters``
    (``None``: whole); ``None`` when it passed."""
    if report.passed:
        return None
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    elif isinstance(report.longrepr, tuple):  # a skip: (path, line, reason)
        text = report.longrepr[2]
    else:
        text = str(report.longrepr)
    lines = str(text).strip().splitlines()
    return lines[0][:characters] if lines else None


def failed_by_warning(payload: Mapping[str, Any], reason: str) -> Mapping[str, Any]:
    """The payload of a passing gate whose item failed: the session turned its warning into an error
    (``-W error::...GateGuardWarning``), so the reports count it as failed, as pytest does
    (:func:`~pytest_bvtest.report.wording.failed_by_warning`). A failed gate's payload is returned unchanged."""
    gate = payload["gate"]
    if gate is None or not gate["passed"]:
        return payload
    return {**payload, "gate": wording.failed_by_warning(gate, reason)}


def error_entry(test_id: str, spec: str, report: Any, message: str | None = None) -> dict[str, Any]:
    """A bvtest item that failed without a verdict (the spec or its inputs could not be read), for the reports;
    its ``message`` whole (``FILE:LINE: what is wrong; what to do``, the error's own text: pytest's report holds it
    wrapped at the terminal's width, and its first line lost the path), as the user needs it to fix the input; the
    report's first line for an error that is not bvtest's."""
    return {"id": test_id, "spec": spec, "message": message or failure_line(report, characters=None)}


def record_team_test(tests: dict[str, dict[str, Any]], test_id: str, category: str, message: str | None) -> None:
    """Fold one phase's outcome (pytest's category: passed, failed, error, skipped, ...) into ``tests``.

    A passing setup or teardown has no category and changes nothing; a failure in any phase is kept.
    """
    if not category:
        return
    known = tests.get(test_id)
    if known is not None and not known["passed"]:
        return
    tests[test_id] = {
        "id": test_id,
        "outcome": category,
        "passed": category not in FAILING_TEST_OUTCOMES,
        "message": message,
    }


def assemble(
    payloads: Iterable[Mapping[str, Any]],
    tests: Iterable[Mapping[str, Any]] = (),
    context: Mapping[str, Any] | None = None,
    errors: Iterable[Mapping[str, Any]] = (),
    gates: Iterable[str] = (),
    collected_only: bool = False,
    other_failed: int = 0,
) -> dict[str, Any]:
    """One session document from the items' payloads, in spec order whatever order they arrived in,
    the team's own tests (marked ``bvtest`` or using the fixture) with their outcomes, the session's
    :func:`~pytest_bvtest.report.history.run_context`, the items that could not be evaluated
    (:func:`error_entry`), and the gates that did not run: those of the evaluated specs without a result
    (left out by ``-k``, ``--lf`` or ``--deselect``, or after ``-x`` stopped the session), and the ``gates``
    pytest collected or deselected without a result (a spec none of whose gates ran is not evaluated, so
    only pytest names them: deselected, or after ``-x`` stopped the session before the spec); ``collected_only``: a
    ``pytest --collect-only`` session, which ran none; ``other_failed``: how many of the session's other tests failed.

    pytest-xdist workers report in any order, so the payloads are sorted by spec path and by their
    measure's and gate's positions in the spec, and the team's tests and errors by id: the reports are
    byte-identical for any worker count.
    """
    documents: dict[tuple[str, str], dict[str, Any]] = {}
    spec_gates: dict[str, None] = {}
    for payload in sorted(payloads, key=lambda payload: (payload["documents"][0]["spec"], payload["position"])):
        for document in payload["documents"]:
            documents.setdefault((document["spec"], document["measure"]), {**document, "gates": []})
        spec_gates.update(dict.fromkeys(payload["spec_gates"]))
        gate = payload["gate"]
        if gate is not None:
            spec = payload["documents"][0]["spec"]
            documents[(spec, gate["measure"])]["gates"].append(gate)
    # a gate whose spec could not be evaluated ran and failed with the spec's error (listed under errors)
    ran = {gate["id"] for document in documents.values() for gate in document["gates"]}
    errors = list(errors)
    ran |= {error["id"] for error in errors}
    return session_document(
        documents.values(),
        sorted(tests, key=lambda test: test["id"]),
        context,
        errors=sorted(errors, key=lambda error: error["id"]),
        not_run=[gate for gate in dict.fromkeys([*spec_gates, *gates]) if gate not in ran],
        collected_only=collected_only,
        other_failed=other_failed,
    )


def candidate_runs(evaluation: Evaluation) -> tuple[str, ...]:
    """The candidate's run files as the command line named them, each run of a list (what ``bvtest judge --run``
    names to list their documents); none for the spec's own candidate, which ``bvtest judge SPEC`` reads."""
    return evaluation.spec.candidate_given or ()


def evaluation_document(evaluation: Evaluation, shell: str = "pytest") -> dict[str, Any]:
    """The session document of a single evaluation (the command line's report), built directly; ``shell``: what
    the reports' commands run (``pytest``, or ``bvtest check`` for the command that made it)."""
    runs = candidate_runs(evaluation)
    documents = [
        {
            **_measure_document(evaluation, measure),
            "gates": [gate_document(outcome, str(evaluation.spec.path), runs) for outcome in measure.gates],
        }
        for measure in evaluation.measures
    ]
    return {**session_document(documents, context=run_context(evaluation.spec.folder)), "shell": shell}


def _measure_document(evaluation: Evaluation, measure: MeasureEvaluation) -> dict[str, Any]:
    """A measure's document, with the candidate's runs as the command line named them (``candidate_given``, null
    for the spec's own candidate)."""
    given = evaluation.spec.candidate_given
    return {
        **measure_document(
            str(evaluation.spec.path), measure, evaluation.simulations, evaluation.inputs, evaluation.texts
        ),
        "candidate_given": None if given is None else list(given),
    }


def _read_history_warning_of_skipped(path: str) -> tuple[dict[str, Any], ...]:
    """The history file's records; each line skipped is a :class:`HistoryWarning` (pytest's warnings summary)."""
    history = read_history(path)
    for message in history.skipped:
        warnings.warn(f"bvtest: {message}", HistoryWarning, stacklevel=2)
    return history.records


def write_session_outputs(
    document: Mapping[str, Any],
    *,
    terminal_writer: Any | None = None,
    json_path: str | None = None,
    markdown_path: str | None = None,
    plots_dir: str | None = None,
    github_step_summary: str | None = None,
    github_actions: bool = False,
    verbosity: int = 1,
    history_path: str | None = None,
    html_path: str | None = None,
) -> list[str]:
    """Render ``document`` everywhere asked for; returns the paths written.

    ``verbosity`` is pytest's (``-q`` -1, default 0, ``-v`` 1) for the terminal summary. The HTML
    report draws the history file's gates over time, this session's records included.
    """
    written = []
    if terminal_writer is not None:
        terminal.write_summary(document, terminal_writer, verbosity)
    if history_path:
        append_history(history_path, history_records(document))
        written.append(str(history_path))
    if json_path:
        atomic_write_text(json_path, dumps(document))
        written.append(str(json_path))
    summary = None
    if markdown_path or github_step_summary:
        summary = markdown.render(document)
    if markdown_path:
        atomic_write_text(markdown_path, summary)
        written.append(str(markdown_path))
    if github_step_summary:
        append_text(github_step_summary, summary)
    if github_actions and terminal_writer is not None:
        for line in github.annotations(document, os.environ.get("GITHUB_WORKSPACE")):
            terminal_writer.write_line(line)
    if html_path:
        from pytest_bvtest.report import html

        series = gate_series(_read_history_warning_of_skipped(history_path)) if history_path else ()
        atomic_write_text(html_path, html.render(document, series))
        written.append(str(html_path))
    if plots_dir:
        from pytest_bvtest.report import plots

        written.extend(str(path) for path in plots.write_plots(document, Path(plots_dir)))
    return written
