"""The pytest plugin: ``bvtest*.yaml`` specs become one test item per (measure, gate).

A thin shell over :mod:`pytest_bvtest.judging.pipeline`. Items evaluate their spec lazily (once per process, so
pytest-xdist workers each evaluate it at most once, helped by the score cache) and carry their
outcome back to the controller on the test report, where the session summary, JSON, Markdown and
plots are assembled (``pytest_terminal_summary`` runs only there).
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib.util
import os
import re
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_bvtest import CANDIDATE_NAME, __version__
from pytest_bvtest.errors import BvtestError, InputError
from pytest_bvtest.io.textfiles import require_inside
from pytest_bvtest.scoring.progress import EvaluationProgress, ProgressLine

if TYPE_CHECKING:
    from pytest_bvtest.judging.evaluation import Evaluation
    from pytest_bvtest.judging.pipeline import CandidateRun
    from pytest_bvtest.spec.model import GateSpec, Spec

# The pipeline (numpy, scipy, pytrec_eval, ...) is imported where a spec is loaded or evaluated, not
# when pytest loads the plugin: a test run without bvtest specs pays nothing for it.

SPEC_PATTERNS = ("bvtest*.yaml", "bvtest*.yml")
PAYLOAD_ATTRIBUTE = "bvtest_payload"
TEAM_TEST_ATTRIBUTE = "bvtest_team_test"
ERROR_ATTRIBUTE = "bvtest_error"
GATES_OUTPUT = "bvtest_gates"

_OPTIONS: tuple[tuple[str, str, str], ...] = (
    # (name, ini type, help); the command line wins over the ini value
    ("spec", "args", "spec file(s) to collect besides bvtest*.yaml under the test paths"),
    (
        "run",
        "string",
        "run file to test instead of the spec's candidate; repeat it (or quote a glob) for several runs of a "
        "nondeterministic engine, whose mean is judged",
    ),
    ("history", "string", "append one JSON line per evaluated spec to this history file (gates, statistics, commit)"),
    ("json", "string", "write the JSON report to this path"),
    ("markdown", "string", "write the Markdown summary (pull-request comment) to this path"),
    ("html", "string", "write the self-contained HTML report (plots, per-topic tables) to this path"),
    ("plots", "string", "write Bias²/Var plots to this folder (needs matplotlib)"),
    ("judge", "string", "write the unjudged documents that decide the gates to this file (a TSV to fill in)"),
    ("cache-dir", "string", "folder of the per-topic score cache (default: .bvtest_cache beside the spec)"),
)


#: The names pytest may register this module under: its entry point's (the installed plugin) and its module's
#: (``pytest_plugins = ["pytest_bvtest.plugin"]`` in a conftest, ``-p pytest_bvtest.plugin``).
PLUGIN_NAMES = ("bvtest", __name__)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Called as the module is registered: the plugin's other name is blocked, so that registering it again
    under that name is skipped instead of raising pluggy's ValueError (loaded once, whatever the name)."""
    registered = pluginmanager.get_name(sys.modules[__name__])
    for name in PLUGIN_NAMES:
        if name != registered and not pluginmanager.is_blocked(name):
            pluginmanager.set_blocked(name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bvtest", "search-quality gates (pytest-bvtest)")
    for name, ini_type, help_text in _OPTIONS:
        dest = f"bvtest_{name.replace('-', '_')}"
        if name in ("spec", "run"):
            group.addoption(
                f"--bvtest-{name}", action="append", default=None, dest=dest, metavar="PATH", help=help_text
            )
        else:
            group.addoption(f"--bvtest-{name}", action="store", default=None, dest=dest, metavar="PATH", help=help_text)
        parser.addini(dest, help_text, type=ini_type, default=None)
    group.addoption(
        "--bvtest-update",
        action="store_true",
        default=None,
        dest="bvtest_update",
        help="make the candidate run the stored reference run for the next sessions, when every gate passed",
    )
    parser.addini("bvtest_update", "see --bvtest-update", type="bool", default=False)
    group.addoption(
        "--bvtest-update-force",
        action="store_true",
        default=False,
        dest="bvtest_update_force",
        help="--bvtest-update even when a gate or test failed",
    )
    # command line only: an ini file can come from the pull request under test
    group.addoption(
        "--bvtest-allow-outside-project",
        action="store_true",
        default=False,
        dest="bvtest_allow_outside_project",
        help="allow the spec's cache, the updated reference and ini report paths outside the project",
    )
    group.addoption(
        "--bvtest-no-cache",
        action="store_true",
        default=None,
        dest="bvtest_no_cache",
        help="do not read or write the per-topic score cache",
    )
    parser.addini("bvtest_no_cache", "see --bvtest-no-cache", type="bool", default=False)
    group.addoption(
        "--bvtest-jobs",
        action="store",
        default=None,
        dest="bvtest_jobs",
        metavar="N",
        help="evaluate up to N uncached run files at once, each in its own process "
        "(default: the core count; 1 in a pytest-xdist worker)",
    )
    parser.addini("bvtest_jobs", "see --bvtest-jobs", type="string", default=None)


_PATH_OPTIONS = ("run", "json", "markdown", "html", "plots", "cache-dir", "history", "judge")


def option(config: pytest.Config, name: str) -> Any:
    """A ``--bvtest-*`` option's value; its ini mirror when not given (ini paths relative to the ini file)."""
    dest = f"bvtest_{name.replace('-', '_')}"
    value = config.getoption(dest)
    if name == "run" and value is not None:
        return value[0] if len(value) == 1 else list(value)  # several: the runs of one nondeterministic engine
    if value is not None:
        return value
    value = config.getini(dest)
    base = config.inipath.parent if config.inipath else config.rootpath
    if name in _PATH_OPTIONS and value:
        path = base / value
        if name != "run" and not config.getoption("bvtest_allow_outside_project"):
            require_inside(
                path,
                Path(os.path.realpath(config.rootpath)),
                f"ini setting {dest} =",
                allow_option="--bvtest-allow-outside-project",
            )
        return str(path)
    if name == "spec" and value:
        return [str(base / path) for path in value]
    return value or None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bvtest: a search-quality gate or a test using the bvtest fixture")
    try:
        plots = option(config, "plots")
    except BvtestError as error:  # an ini path outside the project
        raise pytest.UsageError(f"bvtest: {error}") from None
    _jobs(config)  # a bad --bvtest-jobs is a usage error before collection, not a failure of every gate
    if plots and importlib.util.find_spec("matplotlib") is None:
        raise pytest.UsageError(
            "--bvtest-plots needs matplotlib, which is not installed: "
            "pip install matplotlib (the plots extra of pytest-bvtest)"
        )
    specs = [str(Path(path).resolve()) for path in option(config, "spec") or ()]
    config.stash[_SPECS] = specs
    config.stash[_COLLECTED_SPECS] = []
    if specs and not hasattr(config, "workerinput"):
        config.args.extend(spec for spec in specs if spec not in config.args)
    named = [*specs, *(arg for arg in config.args if any(fnmatch.fnmatch(Path(arg).name, p) for p in SPEC_PATTERNS))]
    try:
        check_outputs(config, named)
    except BvtestError as error:
        raise pytest.UsageError(f"bvtest: {error}") from None
    config.pluginmanager.register(SessionOutputs(config), "bvtest-session-outputs")


#: The options that write files or folders when the session ends.
_OUTPUT_OPTIONS = ("json", "markdown", "html", "history", "plots", "judge")


def check_outputs(config: pytest.Config, spec_paths: Sequence[str | os.PathLike[str]]) -> None:
    """Refuse report paths that are ``-``, a folder, each other, or an input of the session: the candidate of
    ``--bvtest-run``, the score cache, and the files of the specs at ``spec_paths`` that can be read (one that
    cannot is its own item's error). Nothing is imported or read when no report is asked for."""
    paths = {f"--bvtest-{name}": option(config, name) for name in _OUTPUT_OPTIONS}
    if not any(paths.values()):
        return
    from pytest_bvtest.report.paths import check_output_paths

    specs = []
    for path in dict.fromkeys(map(str, spec_paths)):
        with contextlib.suppress(BvtestError):
            specs.append(spec_with_session_run(config, path))
    run, cache = option(config, "run"), option(config, "cache-dir")
    check_output_paths(
        paths,
        specs,
        inputs=[("candidate of --bvtest-run", each) for each in ([run] if isinstance(run, str) else run or [])],
        cache_folders=[cache] if cache else [],
        folder_options=("--bvtest-plots",),
    )


_SPECS = pytest.StashKey[list]()
_COLLECTED_SPECS = pytest.StashKey[list]()


def pytest_report_header(config: pytest.Config) -> str:
    from pytest_bvtest.report.wording import display_path

    named = [display_path(path) for path in config.stash[_SPECS]]
    header = f"bvtest: {__version__}" + (f", specs {', '.join(named)}" if named else "")
    run = option(config, "run")
    if run:
        runs = run if isinstance(run, str) else f"{len(run)} runs ({', '.join(run)})"
        header += f", run {runs} for " + ("these specs" if named else "the one spec collected")
    return header


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    explicit = str(file_path.resolve()) in parent.config.stash[_SPECS]
    if explicit or any(fnmatch.fnmatch(file_path.name, pattern) for pattern in SPEC_PATTERNS):
        parent.config.stash[_COLLECTED_SPECS].append(str(file_path.resolve()))
        return SpecFile.from_parent(parent, path=file_path)
    return None


def spec_with_session_run(config: pytest.Config, path: str | os.PathLike[str]) -> Spec:
    """The spec at ``path`` with the session's ``--bvtest-run`` as its candidate when the run is for it
    (:func:`session_run_for`): what its gates judge and what ``--bvtest-update`` stores (the fixture's
    :class:`BvtestAPI` follows the same rule)."""
    from pytest_bvtest.judging.pipeline import spec_under_test

    return spec_under_test(path, session_run_for(config, path))


def session_run_for(config: pytest.Config, path: str | os.PathLike[str]) -> str | list[str] | None:
    """The session's ``--bvtest-run`` (ini ``bvtest_run``) when it is the candidate of the spec at ``path``,
    else ``None`` (the spec's own candidate).

    A run is scored against one spec's qrels: it is the candidate of the specs named by ``--bvtest-spec`` when
    any are named, else of the one spec pytest collects; :func:`refused_run` refuses it for several."""
    run = option(config, "run")
    named = config.stash[_SPECS]
    if run is None or (named and str(Path(path).resolve()) not in named):
        return None
    return run


def refused_run(config: pytest.Config) -> InputError | None:
    """Why the session's run judges no spec: pytest collected several and none is named (a scratch spec in
    the tree would judge the pull request's run against its own qrels without a word); else ``None``."""
    run = option(config, "run")
    collected = list(dict.fromkeys(config.stash[_COLLECTED_SPECS]))
    if run is None or config.stash[_SPECS] or len(collected) < 2:
        return None
    from pytest_bvtest.errors import short_list
    from pytest_bvtest.report.wording import display_path

    specs = [display_path(spec) for spec in collected]
    run = run if isinstance(run, str) else " --bvtest-run ".join(run)
    return InputError(
        f"--bvtest-run {run}: pytest collected {len(specs)} specs, each with its own qrels ({short_list(specs)}); "
        "say which the run is for",
        hint=f"--bvtest-spec {specs[0]} (or collect that spec alone: pytest {specs[0]} --bvtest-run {run})",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every spec pytest collected is known only now: a run that names no spec among several fails each of
    their items with the reason (in each xdist worker alike, so the reports agree)."""
    refusal = refused_run(config)
    if refusal is None:
        return
    for item in items:
        if isinstance(item, _BvtestItem):
            item.spec_file.refuse(refusal)


# Set by the team (or their CI) to choose the BLAS's threads themselves.
_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> contextlib.AbstractContextManager:
    """Run numpy's BLAS on one thread during an evaluation, unless the environment chooses its thread count.

    ``bvtest`` sets the variables before numpy loads; under pytest numpy may already be loaded (another
    plugin, a conftest) and the team's own tests keep their threads, so the limit holds only while a spec is
    evaluated (threadpoolctl). The gate's matrix products are small: a second thread spun for as much CPU
    as the work itself (1.6 to 2.0 s of CPU against 0.9 to 1.0 s for a 2,000-topic gate) and saved no time.
    """
    if any(variable in os.environ for variable in _BLAS_THREAD_VARIABLES):
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


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
                with uncaptured, ProgressLine(f"{self.path.name}", progress), one_blas_thread():
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


class _BvtestItem(pytest.Item):
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
            return self._wrapped(str(excinfo.value))
        return super().repr_failure(excinfo)

    def _wrapped(self, text: str, taken: int = 0) -> str:
        """``text`` wrapped at pytest's terminal width (``-v`` leaves it whole)."""
        from pytest_bvtest.report.terminal import wrap

        if self.config.option.verbose > 0:
            return text
        return wrap(text, self.config.get_terminal_writer().fullwidth, taken)

    def reportinfo(self):
        return self.path, None, f"bvtest: {self.nodeid.split('::', 1)[-1]}"


class InvalidSpecItem(_BvtestItem):
    """Stands for a spec that could not be read: fails with the one-line error."""

    def __init__(self, *, error: BvtestError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise self.error


class AnalysisItem(_BvtestItem):
    """An analysis-only spec (no candidate or no gates): evaluates it so the report has its tables."""

    def runtest(self) -> None:
        from pytest_bvtest.report import outputs

        evaluation = self.spec_file.evaluation()
        self.user_properties.append(("bvtest_measures", ", ".join(report.measure for report in evaluation.measures)))
        self.stash[_ITEM_PAYLOAD] = outputs.item_payload(evaluation, None)


class GateItem(_BvtestItem):
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
            self._warn(gate["undecided"], GateUndecidedWarning, self.gate.line)
        from pytest_bvtest.judging.pipeline import checks_failing_most_equal_changes
        from pytest_bvtest.spec.reader import SpecWarning

        for check in checks_failing_most_equal_changes(evaluation):
            if check.gate_id == gate["id"]:  # one gate carries it: shown once a session, under xdist too
                warnings.warn_explicit(check.message, SpecWarning, str(self.path), check.line)
        if not gate["passed"]:
            raise GateFailure(gate["message"], gate["sentence"])

    def _warn(self, text: str, category: type[Warning], line: int | None) -> None:
        """Warn at ``line`` of the spec, the text wrapped after the place pytest prints before it."""
        # pytest's warnings summary indents every line of the message by 2
        taken = len(f"{self.path}:{line}: {category.__name__}: ")
        from pytest_bvtest.report.terminal import wrap

        width = self.config.get_terminal_writer().fullwidth - 2
        shown = text if self.config.option.verbose > 0 else wrap(text, width, taken)
        warnings.warn_explicit(shown, category, str(self.path), line or 0)


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


class GateWithinNoiseWarning(UserWarning):
    """A gate whose point estimate is past its bound while its interval is not (Anserini's OK*)."""


class GateUndecidedWarning(UserWarning):
    """A gate whose verdict the missing judgments decide (UNDECIDED, docs/judgments.md): it passes or fails
    depending on whether the unjudged documents of the candidate's or the reference's top d are relevant; with
    ``judgments: {undecided: warn}`` (the default) it passes with this warning."""


class GateGuardWarning(UserWarning):
    """A gate that passed while a guard warns not to trust the pass (OK*): an identical candidate,
    topics no system answers, a stale reference, a target constant that rewards worse systems."""


_ITEM_PAYLOAD = pytest.StashKey[dict]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if isinstance(item, _BvtestItem):
        if report.when == "call":
            _carry_result(item, report)
    elif _is_team_test(item):
        from pytest_bvtest.report import outputs

        # computed in the worker, where the exception is at hand, and carried to the controller
        setattr(report, TEAM_TEST_ATTRIBUTE, {"message": outputs.failure_line(report)})
    return report


def _carry_result(item: _BvtestItem, report: pytest.TestReport) -> None:
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
        setattr(report, ERROR_ATTRIBUTE, outputs.error_entry(item.nodeid, str(item.path), report))


def evaluation_options(config: pytest.Config) -> dict[str, Any]:
    """The keyword arguments of :func:`~pytest_bvtest.judging.pipeline.evaluate_spec` that the options set."""
    return {
        "cache_dir": option(config, "cache-dir"),
        "use_cache": not option(config, "no-cache"),
        "allow_outside": config.getoption("bvtest_allow_outside_project"),
        "jobs": _jobs(config),
    }


def _jobs(config: pytest.Config) -> int:
    """``--bvtest-jobs`` (or ``bvtest_jobs``): processes for uncached run files, as ``bvtest check -j``.

    By default the core count, except in a pytest-xdist worker, where the workers already share the cores.
    """
    text = option(config, "jobs")
    if text is None:
        return 1 if hasattr(config, "workerinput") else os.cpu_count() or 1
    text = str(text).strip()
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(
            f"bvtest: --bvtest-jobs (ini bvtest_jobs) needs a whole number of processes, at least 1, got {text!r}"
        )
    return int(text)


def _is_team_test(item: pytest.Item) -> bool:
    """A team's own test: marked ``@pytest.mark.bvtest`` or using the ``bvtest`` fixture."""
    if isinstance(item, _BvtestItem):
        return False
    return item.get_closest_marker("bvtest") is not None or "bvtest" in getattr(item, "fixturenames", ())


@dataclass
class BvtestAPI:
    """What the ``bvtest`` fixture hands a test: load a spec, evaluate a run, read any statistic.

    ``run`` and ``specs`` are the session's: the candidate the gates judge (``--bvtest-run``) and the
    specs it tests (``--bvtest-spec``, else the collected ``bvtest*.yaml``). :meth:`evaluate` uses
    them when it is not given a run or a spec, so a team's own rules check the pull request's run.
    """

    cache_dir: str | os.PathLike[str] | None = None
    use_cache: bool = True
    allow_outside: bool = False
    run: str | os.PathLike[str] | list[str] | None = None
    specs: Sequence[str | os.PathLike[str]] = ()
    jobs: int = 1
    #: the specs ``run`` is the candidate of (``--bvtest-spec``); empty: whichever spec is evaluated
    run_specs: Sequence[str | os.PathLike[str]] = ()
    #: why ``run`` is the candidate of no spec (several collected, none named): :meth:`evaluate` raises it
    run_refused: InputError | None = None

    def load_spec(self, path: str | os.PathLike[str]) -> Spec:
        from pytest_bvtest.spec.reader import load_spec

        return load_spec(path)

    def evaluate(
        self,
        spec: Spec | str | os.PathLike[str] | None = None,
        run: CandidateRun | None = None,
        *,
        name: str = CANDIDATE_NAME,
    ) -> Evaluation:
        """Evaluate ``spec`` (the session's only spec when omitted) with ``run`` as its candidate.

        ``run`` is a run file, a :class:`Run`, or a dict ``{qid: {docno: score}}`` (named ``name``);
        when omitted, the session's ``--bvtest-run`` when it is for this spec (as for the gates), else the
        spec's own candidate.
        """
        from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test

        if spec is None:
            spec = self.session_spec()
        with one_blas_thread():
            return evaluate_spec(
                spec_under_test(spec, run if run is not None else self.session_run(spec), name=name),
                cache_dir=self.cache_dir,
                use_cache=self.use_cache,
                allow_outside=self.allow_outside,
                jobs=self.jobs,
            )

    def session_run(self, spec: Spec | str | os.PathLike[str]) -> str | os.PathLike[str] | list[str] | None:
        """The session's run when it is the candidate of ``spec``; the reason when it is refused."""
        if self.run is None:
            return None
        if self.run_refused is not None:
            raise self.run_refused
        path = spec if isinstance(spec, str | os.PathLike) else spec.path
        named = {str(Path(named).resolve()) for named in self.run_specs}
        return self.run if not named or str(Path(path).resolve()) in named else None

    def session_spec(self) -> Path:
        """The session's spec, when there is exactly one."""
        specs = list(dict.fromkeys(Path(path) for path in self.specs))
        if len(specs) != 1:
            found = f"found {', '.join(map(str, specs))}" if specs else "none was given or collected"
            raise InputError(
                "evaluate() without a spec needs exactly one spec in the session",
                hint=f"{found}; pass the spec's path, e.g. bvtest.evaluate('bvtest.yaml')",
            )
        return specs[0]

    def statistic(
        self, evaluation: Evaluation, name: str, system: str = CANDIDATE_NAME, measure: str | None = None
    ) -> float | None:
        return evaluation.statistic(name, system, measure)


@pytest.fixture
def bvtest(request: pytest.FixtureRequest) -> BvtestAPI:
    """The Python API: load a spec, evaluate a run (a path or an in-memory dict), read any statistic.

    ``bvtest.evaluate(SPEC)`` evaluates the candidate the gates judge (``--bvtest-run`` when given);
    ``bvtest.evaluate()`` the session's only spec.
    """
    config = request.config
    try:
        options = evaluation_options(config)
    except BvtestError as error:  # an ini cache path outside the project: one line, as for the gates
        pytest.fail(f"bvtest: {error}", pytrace=False)
    return BvtestAPI(
        **options,
        run=option(config, "run"),
        specs=config.stash[_SPECS] or config.stash[_COLLECTED_SPECS],
        run_specs=config.stash[_SPECS],
        run_refused=refused_run(config),
    )


def _gate_ids(items: Sequence[pytest.Item]) -> list[str]:
    """The gate ids (``SPECFILE::MEASURE::GATE``) of the gate items among ``items``."""
    from pytest_bvtest.judging.gate_inputs import gate_id

    return [gate_id(item.path.name, item.measure, item.gate) for item in items if isinstance(item, GateItem)]


class SessionOutputs:
    """Collects gate payloads from the reports (xdist workers included) and writes the session's outputs.

    Report files are written when the session finishes, so a report that cannot be written turns the
    exit code into 4 (usage error) instead of passing silently; the summary is printed after that.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.payloads: list[dict] = []
        self.team_tests: dict[str, dict] = {}
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
            self.refuse_outputs_that_are_inputs(self.config.stash[_COLLECTED_SPECS])

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
            raise pytest.UsageError(f"bvtest: {error}") from None

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
                    *config.stash[_COLLECTED_SPECS],
                    *self.worker_specs,
                    *(document["spec"] for payload in self.payloads for document in payload["documents"]),
                    *(error["spec"] for error in self.errors),
                ],
            )
        except BvtestError as error:
            self.output_error = str(error)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if not (self.payloads or self.team_tests or self.errors or self.gate_ids):
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
        )
        try:
            outputs.write_session_outputs(
                self.document,
                history_path=option(config, "history"),
                json_path=option(config, "json"),
                markdown_path=option(config, "markdown"),
                html_path=option(config, "html"),
                plots_dir=option(config, "plots"),
                github_step_summary=os.environ.get("GITHUB_STEP_SUMMARY"),
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
            terminalreporter.write_line(
                f"bvtest: could not write the reports: {self.output_error}", red=True, bold=True
            )
        from pytest_bvtest.report.terminal import wrap

        for line, failed in self.update_lines:
            for piece in wrap(line, terminalreporter._tw.fullwidth).split("\n"):
                terminalreporter.write_line(piece, red=failed, bold=True)

    def write_judge_file(self, session: pytest.Session) -> None:
        """``--bvtest-judge FILE``: the documents that decide the session's spec's gates, as ``bvtest judge`` writes
        them (the spec evaluated again, from the score cache). One spec's: its topics are its qrels' own."""
        from pytest_bvtest.judging.documents import documents_to_judge
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
            evaluation = evaluate_spec(spec_with_session_run(config, specs[0]), **evaluation_options(config))
            documents = documents_to_judge(evaluation)
            write_judge_file(path, evaluation, documents)
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
                with one_blas_thread():
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
