"""The pytest plugin: ``bvtest*.yaml`` specs become one test item per (measure, gate).

A thin shell over :mod:`pytest_bvtest.judging.pipeline`. Items evaluate their spec lazily (once per process, so
pytest-xdist workers each evaluate it at most once, helped by the score cache) and carry their
outcome back to the controller on the test report, where the session summary, JSON, Markdown and
plots are assembled (``pytest_terminal_summary`` runs only there).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_bvtest import __version__
from pytest_bvtest.blas import default_threads
from pytest_bvtest.errors import BvtestError
from pytest_bvtest.plugin.fixture import BvtestAPI, bvtest
from pytest_bvtest.plugin.items import PAYLOAD_ATTRIBUTE, BvtestItem, SpecFile, carry_result
from pytest_bvtest.plugin.options import (
    BLAS_STARTED_ON_ONE_THREAD,
    COLLECTED_SPECS,
    NAMED_SPECS,
    SPEC_PATTERNS,
    add_options,
    check_outputs,
    jobs,
    option,
    refused_run,
    usage_error,
)
from pytest_bvtest.plugin.session import SessionOutputs
from pytest_bvtest.plugin.warning_types import GateGuardWarning, GateUndecidedWarning, GateWithinNoiseWarning

#: What the plugin module gives besides its hooks: the fixture (pytest finds it here), its API, and the warnings'
#: public names (``-W error::pytest_bvtest.plugin.GateGuardWarning``).
__all__ = ["BvtestAPI", "GateGuardWarning", "GateUndecidedWarning", "GateWithinNoiseWarning", "bvtest"]

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
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bvtest: a search-quality gate or a test using the bvtest fixture")
    try:
        plots = option(config, "plots")
    except BvtestError as error:  # an ini path outside the project
        raise usage_error(error) from None
    jobs(config)  # a bad --bvtest-jobs is a usage error before collection, not a failure of every gate
    if plots and importlib.util.find_spec("matplotlib") is None:
        raise pytest.UsageError(
            "--bvtest-plots needs matplotlib, which is not installed: "
            "pip install matplotlib (the plots extra of pytest-bvtest)"
        )
    specs = [str(Path(path).resolve()) for path in option(config, "spec") or ()]
    config.stash[NAMED_SPECS] = specs
    config.stash[COLLECTED_SPECS] = []
    if specs and not hasattr(config, "workerinput"):
        config.args.extend(spec for spec in specs if spec not in config.args)
    named = [*specs, *(arg for arg in config.args if any(fnmatch.fnmatch(Path(arg).name, p) for p in SPEC_PATTERNS))]
    try:
        check_outputs(config, named)
    except BvtestError as error:
        raise usage_error(error) from None
    config.pluginmanager.register(SessionOutputs(config), "bvtest-session-outputs")


def pytest_report_header(config: pytest.Config) -> str:
    from pytest_bvtest.report.wording import display_path

    named = [display_path(path) for path in config.stash[NAMED_SPECS]]
    header = f"bvtest: {__version__}" + (f", specs {', '.join(named)}" if named else "")
    run = option(config, "run")
    if run:
        runs = run if isinstance(run, str) else f"{len(run)} runs ({', '.join(run)})"
        header += f", run {runs} for " + ("these specs" if named else "the one spec collected")
    return header


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    explicit = str(file_path.resolve()) in parent.config.stash[NAMED_SPECS]
    if explicit or any(fnmatch.fnmatch(file_path.name, pattern) for pattern in SPEC_PATTERNS):
        return SpecFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every spec pytest collected is known only now: a run that names no spec among several fails each of
    their items with the reason (in each xdist worker alike, so the reports agree)."""
    # the specs of the session are those with items: to reach a named spec pytest offers every file of its folder
    # to pytest_collect_file, and a second spec there is no input of the session (`pytest bvtest.yaml --bvtest-run`
    # beside a bvtest-try.yaml was refused as ambiguous)
    config.stash[COLLECTED_SPECS] = list(
        dict.fromkeys(str(item.spec_file.path.resolve()) for item in items if isinstance(item, BvtestItem))
    )
    refusal = refused_run(config)
    if refusal is None:
        return
    for item in items:
        if isinstance(item, BvtestItem):
            item.spec_file.refuse(refusal)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A spec's collection loaded numpy's BLAS on one thread (:func:`~pytest_bvtest.blas.import_on_one_thread`): the
    team's own tests of the session get its threads back before they run; a session of gates alone keeps one, and
    no BLAS worker ever starts."""
    config = session.config
    if config.stash.get(BLAS_STARTED_ON_ONE_THREAD, False) and not all(
        isinstance(item, BvtestItem) for item in session.items
    ):
        default_threads()
        config.stash[BLAS_STARTED_ON_ONE_THREAD] = False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    carry_result(item, report)
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, Any] | None:
    """A gate that passes ``UNDECIDED`` (``judgments: {undecided: warn}``) shows ``U`` in the progress line and
    ``UNDECIDED`` under ``-v``: a pass the missing judgments decide, not a plain ``.``. It still counts as passed, as
    pytest's summary and exit code say."""
    payload = getattr(report, PAYLOAD_ATTRIBUTE, None)
    gate = payload.get("gate") if payload else None
    if report.when == "call" and report.passed and gate and gate["outcome"] == "UNDECIDED":
        return "passed", "U", ("UNDECIDED", {"yellow": True})
    return None
