"""The plugin's collection tree: a spec file, one node per measure, one item per gate (an analysis-only spec: one
item), and what an item carries on its test report to the controller (xdist workers included).

The pipeline (numpy, scipy, pytrec_eval, ...) is imported where a spec is loaded or evaluated, not when pytest loads
the plugin: a test run without bvtest specs pays nothing for it.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_bvtest.errors import BvtestError
from pytest_bvtest.plugin.options import evaluation_options, load_pipeline, spec_with_session_run
from pytest_bvtest.plugin.warning_types import GateGuardWarning, GateUndecidedWarning, GateWithinNoiseWarning
from pytest_bvtest.scoring.progress import EvaluationProgress, ProgressLine

if TYPE_CHECKING:
    from pytest_bvtest.judging.evaluation import Evaluation
    from pytest_bvtest.spec.model import GateSpec, Spec

PAYLOAD_ATTRIBUTE = "bvtest_payload"


TEAM_TEST_ATTRIBUTE = "bvtest_team_test"


ERROR_ATTRIBUTE = "bvtest_error"


class SpecFile(pytest.File):
    """A spec file: one node per measure, whose items are the gates on that measure."""

    _spec: Spec | None = None
    _evaluation: Evaluation | BvtestError | None = None

    def load(self) -> Spec:
        """The spec, with the candidate swapped for ``--bvtest-run``; read once per process."""
        if self._spec is None:
            self._spec = spec_with_session_run(self.config, self.path)
        return self._spec

    def collect(self):
        load_pipeline(self.config)
        from pytest_bvtest.judging.pipeline import require_candidate_for_gates

        try:
            spec = self.load()
            require_candidate_for_gates(spec)
        except BvtestError as error:
            yield InvalidSpecItem.from_parent(self, name="spec", error=error)
            return
        by_measure = (
            {
                str(measure): [gate for gate in spec.gates if gate.measure is None or gate.measure == measure]
                for measure in spec.measures
            }
            if spec.candidate is not None
            else {}
        )
        if not any(by_measure.values()):
            yield AnalysisItem.from_parent(self, name="analysis")
            return
        for measure, gates in by_measure.items():
            if gates:
                yield MeasureGates.from_parent(self, name=measure, gates=gates)

    def refuse(self, error: BvtestError) -> None:
        """Fail every item of this spec with ``error`` instead of evaluating it."""
        self._evaluation = error

    def evaluation(self) -> Evaluation:
        """The spec's evaluation, computed once per process; an input error is re-raised for every item."""
        if self._evaluation is None:
            from pytest_bvtest.judging.pipeline import evaluate_spec

            progress = EvaluationProgress()
            capture = self.config.pluginmanager.getplugin("capturemanager")
            # the progress line goes to the real stderr, past pytest's capture of the running test
            uncaptured = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
            try:
                with uncaptured, ProgressLine(f"{self.path.name}", progress):
                    self._evaluation = evaluate_spec(self.load(), **evaluation_options(self.config), progress=progress)
            except BvtestError as error:
                self._evaluation = error
        if isinstance(self._evaluation, BvtestError):
            raise self._evaluation
        return self._evaluation


class MeasureGates(pytest.Collector):
    """One measure of a spec. As a node of its own, ``bvtest.yaml::nDCG@10::trisk`` on the command
    line selects that one gate, and ``--lf`` and ``-k`` see each gate like a test function."""

    def __init__(self, *, gates: Sequence[GateSpec], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gates = gates
        # -k cannot spell @, ( or = (`-k "AP(rel=2)"` is a syntax error): `-k AP_rel_2` selects the measure
        self.extra_keyword_matches.add(keyword(self.name))

    def collect(self):
        for gate in self.gates:
            yield GateItem.from_parent(
                self, name=gate.name, measure=self.name, gate=gate, **_bracketed_id(self, gate.name)
            )


def _bracketed_id(parent: pytest.Collector, name: str) -> dict[str, Any]:
    """The id of an item named ``NAME[...]`` (a segment's gate, ``mean[tail]``; same-named gates, ``mean[min]``) as
    pytest 9 reads it back from ``--lf``'s cache: the bracket as parameters, like a parametrized test's. pytest 9
    builds a child's id from its whole name, which the parsed id would not equal; older pytest compares strings."""
    parent_id = getattr(parent, "id", None)
    if "[" not in name or parent_id is None or not hasattr(parent_id, "parse"):
        return {}
    return {"nodeid": parent_id.parse(f"{parent_id}::{name}")}  # as pytest parses it (mean[min]#2 too)


def keyword(name: str) -> str:
    """``name`` spelt with what a ``-k`` expression accepts.

    ``AP(rel=2)`` becomes ``AP_rel_2``, ``nDCG@10`` ``nDCG_10``.
    """
    return re.sub(r"[^\w.+-]+", "_", name).strip("_")


class GateFailure(Exception):
    """Raised by a failing gate; its message is the whole report (no traceback is shown)."""

    def __init__(self, message: str, sentence: str) -> None:
        super().__init__(message)
        self.sentence = sentence


class BvtestItem(pytest.Item):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker(pytest.mark.bvtest)

    @property
    def spec_file(self) -> SpecFile:
        spec_file = self.getparent(SpecFile)
        assert spec_file is not None
        return spec_file

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> str:
        # a gate's own verdict, an input error, or an OK* warning turned into an error by -W error
        if isinstance(excinfo.value, GateFailure):
            # -q: the one plain sentence; otherwise the whole explanation, printed only here
            text = excinfo.value.sentence if self.config.option.verbose < 0 else str(excinfo.value)
            return self._wrapped(text)
        if isinstance(excinfo.value, BvtestError | GateWithinNoiseWarning | GateGuardWarning | GateUndecidedWarning):
            self.stash[_ITEM_ERROR] = str(excinfo.value)  # whole, for the reports: the terminal's is wrapped
            return self._wrapped(str(excinfo.value))
        return super().repr_failure(excinfo)

    def _wrapped(self, text: str, taken: int = 0) -> str:
        """``text`` wrapped at pytest's terminal width (``-v`` leaves it whole), as a terminal may show it
        (:func:`~pytest_bvtest.report.untrusted.terminal_text`: no control character, no workflow command)."""
        from pytest_bvtest.report.terminal import wrap
        from pytest_bvtest.report.untrusted import terminal_text

        if self.config.option.verbose > 0:
            return terminal_text(text)
        return terminal_text(wrap(text, self.config.get_terminal_writer().fullwidth, taken))

    def reportinfo(self):
        return self.path, None, f"bvtest: {self.nodeid.split('::', 1)[-1]}"


class InvalidSpecItem(BvtestItem):
    """Stands for a spec that could not be read: fails with the one-line error."""

    def __init__(self, *, error: BvtestError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise self.error


class AnalysisItem(BvtestItem):
    """An analysis-only spec (no candidate or no gates): evaluates it so the report has its tables."""

    def runtest(self) -> None:
        from pytest_bvtest.report import outputs

        evaluation = self.spec_file.evaluation()
        self.user_properties.append(("bvtest_measures", ", ".join(report.measure for report in evaluation.measures)))
        self.stash[_ITEM_PAYLOAD] = outputs.item_payload(evaluation, None)


class GateItem(BvtestItem):
    """One gate on one measure."""

    def __init__(self, *, measure: str, gate: GateSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.measure = measure
        self.gate = gate
        self.extra_keyword_matches.add(gate.statistic)  # `-k trisk` also finds a gate its spec named otherwise
        if gate.segment is not None:  # `-k tail` finds the tail segment's gates (also named NAME[tail])
            self.extra_keyword_matches.add(gate.segment)

    def runtest(self) -> None:
        from pytest_bvtest.report import outputs

        evaluation = self.spec_file.evaluation()
        payload = outputs.item_payload(evaluation, evaluation.gate(self.measure, self.gate))
        gate = payload["gate"]
        self.user_properties.extend(outputs.junit_properties(gate))
        self.stash[_ITEM_PAYLOAD] = payload
        if gate["warning"]:
            # attributed to the gate's line in the spec, so the warnings summary points there
            self._warn(gate["warning"], GateWithinNoiseWarning, self.gate.line)
        spec = self.spec_file.evaluation().spec
        facts = gate.get("guard_facts") or []
        for number, guard in enumerate(gate["guards"]):
            # a guard of the measure is said once: at the spec's line it is about (pytest's warnings summary lists
            # every gate it concerns above one message); a gate's own reason at the gate's line
            kind = facts[number]["kind"] if number < len(facts) else None
            line = spec.line_of(_GUARD_KEYS[kind]) if kind in _GUARD_KEYS else None
            self._warn(guard, GateGuardWarning, line or self.gate.line)
        if gate.get("undecided") and gate["passed"]:  # judgments: {undecided: warn}: a yellow that never blocks
            # one text at one line (the spec's judgments, else its qrels): pytest's warnings summary lists every
            # undecided gate above one message, and the bvtest summary says the numbers once per group of gates
            line = spec.line_of("judgments") or spec.line_of("qrels") or self.gate.line
            self._warn(UNDECIDED_WARNING, GateUndecidedWarning, line)
        from pytest_bvtest.judging.pipeline import checks_failing_most_equal_changes
        from pytest_bvtest.report.untrusted import terminal_text
        from pytest_bvtest.spec.reader import SpecWarning

        for check in checks_failing_most_equal_changes(evaluation):
            if check.gate_id == gate["id"]:  # one gate carries it: shown once a session, under xdist too
                warnings.warn_explicit(terminal_text(check.message), SpecWarning, str(self.path), check.line)
        if not gate["passed"]:
            raise GateFailure(gate["message"], gate["sentence"])

    def _warn(self, text: str, category: type[Warning], line: int | None) -> None:
        """Warn at ``line`` of the spec, the text wrapped after the place pytest prints before it."""
        # pytest's warnings summary indents every line of the message by 2
        taken = len(f"{self.path}:{line}: {category.__name__}: ")
        from pytest_bvtest.report.terminal import wrap
        from pytest_bvtest.report.untrusted import terminal_text

        width = self.config.get_terminal_writer().fullwidth - 2
        shown = text if self.config.option.verbose > 0 else wrap(text, width, taken)
        warnings.warn_explicit(terminal_text(shown), category, str(self.path), line or 0)


#: The warning of every ``UNDECIDED`` gate that passes (``judgments: {undecided: warn}``), the same for each, so that
#: pytest's warnings summary says it once above the gates it concerns.
UNDECIDED_WARNING = (
    "UNDECIDED: unjudged documents decide these gates; the bvtest summary below says how many, how each gate stands "
    "as judged and under plausible gradings of them, and the command that lists them to grade"
)


#: The spec key each guard is about: its warning is attributed to that key's line.
_GUARD_KEYS = {
    "identical": "candidate",
    "candidate_missing": "candidate",
    "candidate_zero": "candidate",
    "stale_reference": "reference",
    "reference_missing": "reference",
    "unanswered_topics": "qrels",
    "target_constant": "target",
}


_ITEM_PAYLOAD = pytest.StashKey[dict]()
_ITEM_ERROR = pytest.StashKey[str]()


def carry_result(item: pytest.Item, report: pytest.TestReport) -> None:
    """What the controller's reports need, put on ``report``: a bvtest item's result (:func:`_carry_result`), a team
    test's failure line (computed in the worker, where the exception is at hand)."""
    if isinstance(item, BvtestItem):
        if report.when == "call":
            _carry_result(item, report)
    elif _is_team_test(item):
        from pytest_bvtest.report import outputs

        setattr(report, TEAM_TEST_ATTRIBUTE, {"message": outputs.failure_line(report)})


def _carry_result(item: BvtestItem, report: pytest.TestReport) -> None:
    """Put what the controller's reports need on a bvtest item's report: pytest's verdict, not only the gate's.

    A gate's payload (its verdict as a failure when the session turned its warning into an error, ``-W
    error``), or, for an item that failed without one (the spec or its inputs could not be read), the error.
    """
    from pytest_bvtest.report import outputs

    if _ITEM_PAYLOAD in item.stash:
        payload = item.stash[_ITEM_PAYLOAD]
        if report.failed:
            payload = outputs.failed_by_warning(payload, outputs.failure_line(report) or "")
        setattr(report, PAYLOAD_ATTRIBUTE, payload)
    elif report.failed:
        setattr(
            report,
            ERROR_ATTRIBUTE,
            outputs.error_entry(item.nodeid, str(item.path), report, item.stash.get(_ITEM_ERROR, None)),
        )


def _is_team_test(item: pytest.Item) -> bool:
    """A team's own test: marked ``@pytest.mark.bvtest`` or using the ``bvtest`` fixture."""
    if isinstance(item, BvtestItem):
        return False
    return item.get_closest_marker("bvtest") is not None or "bvtest" in getattr(item, "fixturenames", ())
