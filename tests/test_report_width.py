"""The terminal output fits pytest's terminal width: the example project's passing, risky, failing and truncated
candidates at 120 columns, every line of pytest's whole output (issue 21: at 120 columns 17 of 74 lines of a failing
run were wider, the longest 371). ``-v`` may be wider: it keeps the system tables and headlines whole."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from example_cases import broken_run, truncated_run

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


@pytest.fixture
def example(pytester: pytest.Pytester) -> pytest.Pytester:
    for part in ("bvtest.yaml", "eval", "runs", "corpus"):
        source = EXAMPLE / part
        if source.is_dir():
            shutil.copytree(source, pytester.path / part)
        else:
            shutil.copy(source, pytester.path / part)
    broken_run(
        EXAMPLE / "runs" / "production.run", EXAMPLE / "eval" / "qrels.txt", pytester.path / "runs" / "broken.run"
    )
    truncated_run(EXAMPLE / "runs" / "candidate-pass.run", pytester.path / "runs" / "truncated.run")
    return pytester


@pytest.mark.parametrize(
    ("run", "outcome", "said"),
    [
        ("runs/candidate-pass.run", {"passed": 5}, "5 gates pass"),
        ("runs/candidate-risky.run", {"passed": 5}, "note: a big improvement over production"),
        ("runs/broken.run", {"failed": 5}, "5 of 5 gates fail, all for the same 5 queries"),
        ("runs/truncated.run", {"passed": 5, "warnings": 5}, "5 gates pass, 5 with a warning (OK*)"),
    ],
    ids=["passing", "risky", "failing", "truncated"],
)
def test_the_example_fits_120_columns(
    example: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, run: str, outcome: dict[str, int], said: str
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    result = example.runpytest("bvtest.yaml", "--bvtest-run", run, "--bvtest-no-cache", "-p", "no:cacheprovider")
    result.assert_outcomes(**outcome)
    assert any(line.startswith(said) for line in result.outlines), result.outlines
    # pytest's own header names the temporary folder (a long path under xdist): not ours to wrap
    ours = [line for line in result.outlines if not line.startswith(("rootdir: ", "platform ", "plugins: "))]
    wide = [line for line in ours if len(line) > 120]
    assert not wide, wide
    # the same at pytest's width without a terminal; pytest prints the spec's own line under a warning as it is
    monkeypatch.setenv("COLUMNS", "80")
    narrow = example.runpytest("bvtest.yaml", "--bvtest-run", run, "--bvtest-no-cache", "-p", "no:cacheprovider")
    # and the place of a warning, the spec's path, which pytest prints before the message (that then starts on
    # the next line)
    spec_lines = {f"    {line}" for line in (example.path / "bvtest.yaml").read_text(encoding="utf-8").splitlines()}
    places = re.compile(rf"  {re.escape(str(example.path / 'bvtest.yaml'))}:\d+: \w+Warning: $")
    wide = [
        line
        for line in narrow.outlines
        if len(line) > 80
        and line not in spec_lines
        and not places.match(line)
        and not line.startswith(("rootdir: ", "platform ", "plugins: "))
    ]
    assert not wide, wide


def test_a_line_is_wrapped_after_what_pytest_prints_before_it() -> None:
    from pytest_bvtest.report.terminal import wrap

    text = "the candidate has no ranking for 3 of 56 topics that other systems rank: 10, 25, 54"
    lines = wrap(text, 60, taken=25).split("\n")
    assert len(lines) > 1 and 25 + len(lines[0]) <= 60 and all(len(line) <= 60 for line in lines[1:])
    assert " ".join(line.strip() for line in lines) == text
    # a place longer than the line (a deep path): the text starts on the next line
    assert wrap(text, 60, taken=70).split("\n")[0] == ""
    # an indented line keeps its indent, and its continuation goes 4 further
    assert wrap("  topics: " + "t1 " * 20, 30).split("\n")[1].startswith("      t")
