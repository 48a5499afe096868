"""The plugin's options (``--bvtest-*`` and their ini mirrors) and what they select: the specs of the session, the
run each spec judges (``--bvtest-run``), the report paths (refused where they are inputs), the evaluation's
options."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_bvtest.blas import import_on_one_thread
from pytest_bvtest.errors import BvtestError, InputError
from pytest_bvtest.io.textfiles import require_inside

if TYPE_CHECKING:
    from pytest_bvtest.spec.model import Spec

#: The spec files pytest collects under the test paths (``--bvtest-spec`` names others).
SPEC_PATTERNS = ("bvtest*.yaml", "bvtest*.yml")

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


def add_options(parser: pytest.Parser) -> None:
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


#: The options that write files or folders when the session ends.
_OUTPUT_OPTIONS = ("json", "markdown", "html", "history", "plots", "judge")
#: The environment variable naming GitHub Actions' job summary, which the session appends its Markdown to.
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def usage_error(error: BvtestError) -> pytest.UsageError:
    """pytest's usage error (exit 4) for ``error``, its text as a terminal may show it."""
    from pytest_bvtest.report.untrusted import terminal_text

    return pytest.UsageError(terminal_text(f"bvtest: {error}"))


def check_outputs(config: pytest.Config, spec_paths: Sequence[str | os.PathLike[str]]) -> None:
    """Refuse report paths that are ``-``, a folder, each other, or an input of the session: the candidate of
    ``--bvtest-run``, the score cache, and the files of the specs at ``spec_paths`` that can be read (one that
    cannot is its own item's error). Nothing is imported or read when no report is asked for."""
    paths = {f"--bvtest-{name}": option(config, name) for name in _OUTPUT_OPTIONS}
    # GitHub Actions' job summary, appended to: in a workflow that points it at an input, that input would grow
    paths[STEP_SUMMARY] = os.environ.get(STEP_SUMMARY) or None
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


#: The specs named by ``--bvtest-spec`` (ini ``bvtest_spec``), resolved, and every spec pytest collected.
NAMED_SPECS = pytest.StashKey[list]()


COLLECTED_SPECS = pytest.StashKey[list]()


#: Whether the plugin loaded numpy's BLAS on one thread, to be given its threads back before a team's test.
BLAS_STARTED_ON_ONE_THREAD = pytest.StashKey[bool]()


def load_pipeline(config: pytest.Config) -> None:
    """Import the gating core (numpy, scipy, ...): where that loads numpy, its BLAS starts on one thread
    (:func:`~pytest_bvtest.blas.import_on_one_thread`), noted for ``pytest_collection_finish``."""
    if import_on_one_thread("pytest_bvtest.judging.pipeline"):
        config.stash[BLAS_STARTED_ON_ONE_THREAD] = True


def spec_with_session_run(config: pytest.Config, path: str | os.PathLike[str]) -> Spec:
    """The spec at ``path`` with the session's ``--bvtest-run`` as its candidate when the run is for it
    (:func:`session_run_for`): what its gates judge and what ``--bvtest-update`` stores (the fixture's
    :class:`BvtestAPI` follows the same rule)."""
    load_pipeline(config)
    from pytest_bvtest.judging.pipeline import spec_under_test

    return spec_under_test(path, session_run_for(config, path))


def session_run_for(config: pytest.Config, path: str | os.PathLike[str]) -> str | list[str] | None:
    """The session's ``--bvtest-run`` (ini ``bvtest_run``) when it is the candidate of the spec at ``path``,
    else ``None`` (the spec's own candidate).

    A run is scored against one spec's qrels: it is the candidate of the specs named by ``--bvtest-spec`` when
    any are named, else of the one spec pytest collects; :func:`refused_run` refuses it for several."""
    run = option(config, "run")
    named = config.stash[NAMED_SPECS]
    if run is None or (named and str(Path(path).resolve()) not in named):
        return None
    return run


def refused_run(config: pytest.Config) -> InputError | None:
    """Why the session's run judges no spec: pytest collected several and none is named (a scratch spec in
    the tree would judge the pull request's run against its own qrels without a word); else ``None``."""
    run = option(config, "run")
    collected = list(dict.fromkeys(config.stash[COLLECTED_SPECS]))
    if run is None or config.stash[NAMED_SPECS] or len(collected) < 2:
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


def evaluation_options(config: pytest.Config) -> dict[str, Any]:
    """The keyword arguments of :func:`~pytest_bvtest.judging.pipeline.evaluate_spec` that the options set."""
    return {
        "cache_dir": option(config, "cache-dir"),
        "use_cache": not option(config, "no-cache"),
        "allow_outside": config.getoption("bvtest_allow_outside_project"),
        "jobs": jobs(config),
    }


def jobs(config: pytest.Config) -> int:
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
