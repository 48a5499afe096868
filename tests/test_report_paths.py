"""Report paths that would destroy an input, each other, or are no file at all are refused before anything runs.

`bvtest check bvtest.yaml --json new.run`, `--markdown bvtest.yaml` and `pytest --bvtest-html qrels.txt` exited 0
having replaced the candidate run, the spec or the qrels; `--bvtest-history qrels.txt` appended a JSON line to the
qrels (issue 22). Every case keeps the inputs byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from pytest_bvtest.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
INTO_INPUT = "the session would write over one of its inputs; write the report to another file (reports usually go to "
INTO_INPUT += "a reports/ folder)"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__", "reports"))
    return project


def digests(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` and its SHA-256 (not the score cache, nor the output pytester captures)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        and not {".bvtest_cache", "__pycache__"}.intersection(path.parts)
        and path.relative_to(folder).parts not in (("stdout",), ("stderr",))
    }


def refusals(project: Path) -> list[tuple[list[str], str]]:
    """(report options, the error) of each path a report may not take, for `bvtest check` (`--json`, ...)."""
    return [
        (["--json", "runs/candidate-pass.run"], f"--json runs/candidate-pass.run is the candidate ({project}/runs/"),
        (["--markdown", "bvtest.yaml"], f"--markdown bvtest.yaml is the spec ({project}/bvtest.yaml): {INTO_INPUT}"),
        (["--html", "eval/qrels.txt"], f"--html eval/qrels.txt is the qrels ({project}/eval/qrels.txt): {INTO_INPUT}"),
        (["--json", "eval/topics.tsv"], f"--json eval/topics.tsv is the topic texts file ({project}/eval/topics.tsv)"),
        (["--json", "runs/bm25-alt.run"], f"--json runs/bm25-alt.run is the baseline 'bm25-alt' ({project}/runs/"),
        (["--json", "linked.txt"], f"--json linked.txt is the qrels ({project}/eval/qrels.txt)"),  # a hard link
        (["--json", ".bvtest_cache/report.json"], "--json .bvtest_cache/report.json is inside the score cache"),
        (
            ["--json", "-"],
            "--json -: reports are written to files, not to standard output; name a file; --json /dev/stdout writes "
            "the report to the terminal",
        ),
        (
            ["--json", "out/"],
            "--json out/: is a folder; a report is a file; name a file in it, e.g. --json out/bvtest.json",
        ),
        (
            ["--json", "report.txt", "--markdown", "./report.txt"],
            "--json and --markdown both write ./report.txt: one would replace the other; give each report its own file",
        ),
    ]


def test_bvtest_check_refuses_each_report_path_before_evaluating(
    example: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(example)
    os.link(example / "eval" / "qrels.txt", example / "linked.txt")
    before = digests(example)
    for options, error in refusals(example):
        assert main(["check", "bvtest.yaml", *options]) == 2, options
        printed = capsys.readouterr()
        assert printed.err.startswith(f"bvtest: error: {error}"), (options, printed.err)
        assert printed.out == ""  # refused before the evaluation: no summary
    assert digests(example) == before  # no input replaced, no file named `-` or `out`
    assert not (example / ".bvtest_cache").exists()  # nothing was evaluated
    # the same reports on their own paths are written
    assert main(["check", "bvtest.yaml", "--json", "reports/r.json", "--markdown", "reports/r.md"]) == 0
    assert (example / "reports" / "r.json").exists() and (example / "reports" / "r.md").exists()


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (["--bvtest-html", "eval/qrels.txt"], "--bvtest-html eval/qrels.txt is the qrels ({project}/eval/qrels.txt)"),
        (["--bvtest-history", "eval/qrels.txt"], "--bvtest-history eval/qrels.txt is the qrels"),
        (["bvtest.yaml", "--bvtest-markdown", "bvtest.yaml"], "--bvtest-markdown bvtest.yaml is the spec"),
        (["--bvtest-json", "-"], "--bvtest-json -: reports are written to files, not to standard output"),
        (["-n", "2", "--bvtest-json", "runs/production.run"], "--bvtest-json runs/production.run is the baseline"),
    ],
    ids=["html-qrels", "history-qrels", "markdown-spec", "dash", "xdist-run"],
)
def test_pytest_refuses_each_report_path_before_any_test_runs(
    pytester: pytest.Pytester, options: list[str], error: str
) -> None:
    project = pytester.path
    shutil.copytree(EXAMPLE, project, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".bvtest_cache", "reports"))
    before = digests(project)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *options, timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: bvtest: {error.format(project=project)}*"])
    assert " passed" not in result.stdout.str()
    assert digests(project) == before
