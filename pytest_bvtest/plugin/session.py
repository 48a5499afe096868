"""The session's outputs: the gate payloads collected from the reports (xdist workers included), then the JSON,
Markdown, HTML, history and plots, the judge file and the reference update, written when the session finishes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_bvtest.errors import BvtestError
from pytest_bvtest.plugin.items import (
    ERROR_ATTRIBUTE,
    PAYLOAD_ATTRIBUTE,
    TEAM_TEST_ATTRIBUTE,
    GateItem,
)
from pytest_bvtest.plugin.options import (
    COLLECTED_SPECS,
    STEP_SUMMARY,
    check_outputs,
    evaluation_options,
    option,
    spec_with_session_run,
    usage_error,
)

GATES_OUTPUT = "bvtest_gates"


def _gate_ids(items: Sequence[pytest.Item]) -> list[str]:
    """The gate ids (``SPECFILE::MEASURE::GATE``) of the gate items among ``items``."""
    gates = [item for item in items if isinstance(item, GateItem)]
    if not gates:  # a session without gates imports nothing of the pipeline (numpy, scipy: 0.4 s)
        return []
    from pytest_bvtest.judging.gate_inputs import gate_id

    return [gate_id(item.path.name, item.measure, item.gate) for item in gates]


class SessionOutputs:
    """Collects gate payloads from the reports (xdist workers included) and writes the session's outputs.

    Report files are written when the session finishes, so a report that cannot be written turns the
    exit code into 4 (usage error) instead of passing silently; the summary is printed after that.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.payloads: list[dict] = []
        self.team_tests: dict[str, dict] = {}
        # the session's other tests that failed: pytest's exit code counts them, so the reports' headline does
        self.other_failed: set[str] = set()
        self.errors: list[dict] = []
        # the ids of every gate pytest collected or deselected (-k, -m, --deselect): those without a result did not
        # run, including the gates of specs none of whose gates ran (-x stopping the session before them)
        self.gate_ids: list[str] = []
        self.document: dict | None = None
        self.output_error: str | None = None
        self.refused: str | None = None  # a report path that is an input: the session writes nothing
        self.worker_specs: dict[str, None] = {}  # the spec files pytest-xdist workers collected
        self.update_lines: list[tuple[str, bool]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, PAYLOAD_ATTRIBUTE, None)
        if payload is not None and report.when == "call":
            self.payloads.append(payload)
        error = getattr(report, ERROR_ATTRIBUTE, None)
        if error is not None:
            self.errors.append(error)
        team_test = getattr(report, TEAM_TEST_ATTRIBUTE, None)
        if team_test is not None:
            from pytest_bvtest.report import outputs

            category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
            outputs.record_team_test(self.team_tests, report.nodeid, category, team_test["message"])
        elif payload is None and error is None and report.failed and not hasattr(report, "wasxfail"):
            self.other_failed.add(report.nodeid)

    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        self.gate_ids += _gate_ids(items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist: a worker's collected and deselected gates (workers collect and select; the controller
        does not)."""
        self.gate_ids += getattr(node, "workeroutput", {}).get(GATES_OUTPUT, [])

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Refuse report paths that are inputs of a collected spec before any test runs (the specs named on the
        command line were checked when pytest started; under pytest-xdist the controller decides, below).
        Remember the gates selected to run: the reports name those that did not."""
        self.gate_ids += _gate_ids(session.items)
        if not hasattr(self.config, "workerinput"):
            self.refuse_outputs_that_are_inputs(self.config.stash[COLLECTED_SPECS])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """pytest-xdist's controller, which collects nothing itself: the specs a worker collected, checked before
        their tests are scheduled, and remembered for the check before anything is written."""
        files = {str(self.config.rootpath / nodeid.split("::")[0]) for nodeid in ids if "::" in nodeid}
        self.worker_specs.update(dict.fromkeys(sorted(path for path in files if path.endswith((".yaml", ".yml")))))
        self.refuse_outputs_that_are_inputs(list(self.worker_specs))

    def refuse_outputs_that_are_inputs(self, spec_paths: Sequence[str]) -> None:
        try:
            check_outputs(self.config, spec_paths)
        except BvtestError as error:
            self.refused = str(error)
            raise usage_error(error) from None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = self.config
        if hasattr(config, "workerinput"):
            config.workeroutput[GATES_OUTPUT] = self.gate_ids
            return
        if self.refused is not None:
            return  # nothing is written where an input would be destroyed
        try:  # again, now that every spec of the session is known (xdist workers collected them)
            check_outputs(
                config,
                [
                    *config.stash[COLLECTED_SPECS],
                    *self.worker_specs,
                    *(document["spec"] for payload in self.payloads for document in payload["documents"]),
                    *(error["spec"] for error in self.errors),
                ],
            )
        except BvtestError as error:
            self.output_error = str(error)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if not (self.payloads or self.team_tests or self.errors or self.gate_ids):  # other tests' failures: pytest's
            self.write_empty_reports(session)
            return
        from pytest_bvtest.report import outputs
        from pytest_bvtest.report.history import run_context

        self.document = outputs.assemble(
            self.payloads,
            self.team_tests.values(),
            run_context(config.rootpath),
            errors=self.errors,
            gates=self.gate_ids,
            collected_only=config.option.collectonly,
            other_failed=len(self.other_failed),
        )
        try:
            outputs.write_session_outputs(
                self.document,
                history_path=option(config, "history"),
                json_path=option(config, "json"),
                markdown_path=option(config, "markdown"),
                html_path=option(config, "html"),
                plots_dir=option(config, "plots"),
                github_step_summary=os.environ.get(STEP_SUMMARY),
            )
        except BvtestError as error:
            self.output_error = str(error)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if option(config, "judge"):
            self.write_judge_file(session)
        if option(config, "update"):
            self.update_references(session)

    def write_empty_reports(self, session: pytest.Session) -> None:
        """Report files asked for are written even when no gate ran, so that a report left by an earlier
        session (a CI workspace that is reused, a local run) is never read as this session's verdict."""
        config = self.config
        files = {name: option(config, name) for name in ("json", "markdown", "html")}
        if not any(files.values()):
            return
        from pytest_bvtest.report import outputs
        from pytest_bvtest.report.history import run_context

        document = outputs.assemble([], [], run_context(config.rootpath), errors=[])
        try:
            outputs.write_session_outputs(
                document, json_path=files["json"], markdown_path=files["markdown"], html_path=files["html"]
            )
        except BvtestError as error:
            self.output_error = str(error)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.document is not None:
            from pytest_bvtest.report import outputs

            outputs.write_session_outputs(
                self.document,
                terminal_writer=terminalreporter,
                github_actions=os.environ.get("GITHUB_ACTIONS") == "true",
                verbosity=self.config.option.verbose,
            )
        if self.output_error:
            from pytest_bvtest.report.untrusted import terminal_text

            terminalreporter.write_line(
                terminal_text(f"bvtest: could not write the reports: {self.output_error}"), red=True, bold=True
            )
        if not self.update_lines:
            return  # a session without --bvtest-update imports none of the words (nor scipy, through them)
        from pytest_bvtest.report.terminal import wrap
        from pytest_bvtest.report.untrusted import terminal_text

        for line, failed in self.update_lines:
            for piece in wrap(line, terminalreporter._tw.fullwidth).split("\n"):
                terminalreporter.write_line(terminal_text(piece), red=failed, bold=True)

    def write_judge_file(self, session: pytest.Session) -> None:
        """``--bvtest-judge FILE``: the documents that decide the session's spec's gates, as ``bvtest judge`` writes
        them (the spec evaluated again, from the score cache). One spec's: its topics are its qrels' own."""
        from pytest_bvtest.io.predictions import read_documents
        from pytest_bvtest.judging.documents import documents_to_judge, require_gates_to_judge
        from pytest_bvtest.judging.pipeline import evaluate_spec
        from pytest_bvtest.report.judgefile import write_judge_file

        config = self.config
        path = option(config, "judge")
        specs = sorted({evaluation["spec"] for evaluation in self.document["evaluations"]})
        try:
            if len(specs) != 1:
                raise BvtestError(
                    f"--bvtest-judge {path}: the judge file is one spec's, and {len(specs)} were evaluated; name "
                    "one with --bvtest-spec, or run bvtest judge SPEC -o FILE for each"
                )
            spec = spec_with_session_run(config, specs[0])
            require_gates_to_judge(spec)
            evaluation = evaluate_spec(spec, **evaluation_options(config))
            documents = documents_to_judge(evaluation)
            texts = None if spec.judgments.documents is None else read_documents(spec.judgments.documents)
            write_judge_file(path, evaluation, documents, texts=texts)
        except BvtestError as error:
            self.update_lines.append((f"bvtest: --bvtest-judge: {error}", True))
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        self.update_lines.append((f"bvtest: wrote {path}: {len(documents):,} unjudged documents to judge", False))

    def update_references(self, session: pytest.Session) -> None:
        """``--bvtest-update``: each spec's candidate run becomes its stored reference run.

        Refused when a test of the session failed, unless ``--bvtest-update-force``; an update that
        is refused or cannot be written makes the session fail (exit code 4 where it would pass).
        """
        from pytest_bvtest.judging.pipeline import evaluate_spec
        from pytest_bvtest.report.reference_update import update_reference

        config = self.config
        force = config.getoption("bvtest_update_force")
        for spec_path in sorted({evaluation["spec"] for evaluation in self.document["evaluations"]}):
            try:
                if session.testsfailed and not force:
                    raise BvtestError(
                        f"{spec_path}: reference not updated: {session.testsfailed} test(s) failed in this "
                        "session; update after they pass, or on purpose with --bvtest-update-force"
                    )
                evaluation = evaluate_spec(spec_with_session_run(config, spec_path), **evaluation_options(config))
                lines = update_reference(
                    evaluation,
                    force=force,
                    allow_outside=config.getoption("bvtest_allow_outside_project"),
                    keep_folder=option(config, "cache-dir"),
                )
            except BvtestError as error:
                self.update_lines.append((f"bvtest: --bvtest-update: {error}", True))
                if session.exitstatus == pytest.ExitCode.OK:
                    session.exitstatus = pytest.ExitCode.USAGE_ERROR
                continue
            self.update_lines += [(line, False) for line in lines]
