"""Shared test fixtures.

Real data lives in ``../shared/data`` beside the repository (or at ``$BVTEST_SHARED_DATA``). A test reaches it only
through this file: :func:`shared_path` (or the ``shared_data`` fixture) for a file or folder, :func:`shared_files`
to list files for parametrizing, and :func:`example_trec_spec` for the example project's specs that read it. Each
skips the test cleanly when the data is absent, so a fresh clone passes; ``tests/test_fresh_clone.py`` fails on a
test file that reaches the data any other way.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# imported here, before any in-process pytester run: pytester's runs drop the modules they imported, and libyaml's
# extension cannot be imported twice (a second PyYAML composed every scalar with no tag, and tests/test_plugin.py
# failed 21 of its tests when run alone)
import yaml

pytest_plugins = ["pytester"]

REPOSITORY = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BVTEST_SHARED_DATA", REPOSITORY.parent / "shared" / "data"))


def shared_path(*parts: str) -> Path:
    """Path below ``../shared/data``; skips the calling test when it does not exist."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path


def shared_files(folder: str, pattern: str) -> list[str]:
    """The files below ``../shared/data/FOLDER`` matching ``pattern`` (``**`` allowed), as sorted paths relative to
    that folder, for parametrizing a test; none when the data is absent. The test reads each through
    :func:`shared_path`, which skips it then."""
    root = SHARED_DATA / folder
    return sorted(path.relative_to(root).as_posix() for path in root.glob(pattern))


def example_trec_spec(name: str = "bvtest-dl-hard.yaml") -> Path:
    """A spec of ``example_project/trec``, whose paths reach ``../shared/data`` beside the repository itself (not
    ``$BVTEST_SHARED_DATA``), as ``example_project/conftest.py`` reads them; skips the calling test when the files
    it names are absent."""
    spec = REPOSITORY / "example_project" / "trec" / name
    document = yaml.safe_load(spec.read_text(encoding="utf-8"))
    qrels = (spec.parent / document["qrels"]).resolve()
    if not qrels.exists():
        pytest.skip(f"real data not available: {qrels}")
    return spec


def dl_hard_segments(data: Path, target: Path) -> Path:
    """DL-HARD's topic file (``data`` the dataset folder) with a segment column, as docs/recipes/segments.md writes
    it: queries of at most four words ``short`` (13), the others ``long`` (37)."""
    lines = ["topic\tquery\tsegment"]
    for line in (data / "topics.tsv").read_text().splitlines():
        topic, query = line.split("\t", 1)
        lines.append(f"{topic}\t{query}\t{'short' if len(query.split()) <= 4 else 'long'}")
    target.write_text("\n".join(lines) + "\n")
    return target


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """The suite's own terminal keeps the width it started with: each test sets COLUMNS (:func:`_outside_ci`) for the
    reports it reads, and pytest's writer, which reads COLUMNS on every line, padded each line of ``pytest -v`` to
    999 characters."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter._tw.fullwidth = reporter._tw.fullwidth


@pytest.fixture
def shared_data() -> Path:
    """The ``../shared/data`` folder; the test is skipped when it is absent."""
    return shared_path()


@pytest.fixture(autouse=True)
def _outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test as on a developer's machine, also when the suite itself runs in CI.

    pytest prints whole failure messages in its short summary when ``CI`` or ``BUILD_NUMBER`` is set,
    and the plugin writes GitHub annotations and step summaries under GitHub Actions; tests that
    pin terminal output or need those variables set them themselves.
    """
    for variable in ("CI", "BUILD_NUMBER", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(variable, raising=False)
    # the reports wrap their lines at pytest's terminal width (80 without a terminal); tests that read a message
    # read it on one line, and the width test (tests/test_report_width.py) sets the width it checks
    monkeypatch.setenv("COLUMNS", "1000")


def words(verdict):
    """A gate's verdict as the reports show it: its document, words included (``message``, ``sentence``,
    ``guards``, ``warning``, ``headline``), from :mod:`pytest_bvtest.report.wording`."""
    from pytest_bvtest.report.jsonreport import gate_document

    return gate_document(verdict)


def said(guard) -> str:
    """What the reports say of a guard (:func:`pytest_bvtest.report.wording.guard_message`)."""
    from pytest_bvtest.report.jsonreport import guard_document

    return guard_document(guard)["message"]


def randomization_test(candidate, reference, permutations: int = 10000, seed: int = 0):
    """One pair's randomization test: :func:`pytest_bvtest.stats.inference.randomization_tests` of one pair."""
    import numpy as np

    from pytest_bvtest.stats.inference import randomization_tests

    (result,) = randomization_tests(candidate, np.asarray(reference)[np.newaxis], permutations, seed)
    return result


def random_group_bias_variance(scores, c, size: int, repeats: int, seed: int):
    """Bias-variance over random topic groups (docs/mathematics.md §3b), as an evaluation computes it:
    :func:`pytest_bvtest.stats.biasvar.grouped_bias_variance` with a random grouping."""
    import numpy as np

    from pytest_bvtest.spec.model import RandomGrouping
    from pytest_bvtest.stats.biasvar import grouped_bias_variance

    scores = np.asarray(scores, dtype=float)
    target = scores.max(axis=-2)
    return grouped_bias_variance(scores, target, target, c, RandomGrouping(size, repeats, seed))[0]
