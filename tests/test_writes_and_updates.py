"""What the tool writes, under faults (issue: reliability; issue "verdicts": updating the reference safely).

Reports, cache entries and updated references are written atomically (a process killed at any moment
leaves each file complete-old or complete-new), never replace a device or a link, name the path that
could not be written, stay inside the project unless the command line allows otherwise, and a
``--bvtest-update`` that is refused or fails fails the session. Reports are byte-identical whatever
the number of xdist workers.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import shared_path

from pytest_bvtest.cli import main
from pytest_bvtest.errors import InputError
from pytest_bvtest.io import textfiles
from pytest_bvtest.io.runs import read_run
from pytest_bvtest.io.textfiles import atomic_write_bytes
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.report.reference_update import update_reference
from pytest_bvtest.scoring.cache import CacheWriteWarning
from pytest_bvtest.spec.reader import load_spec
from tests.test_plugin import BM25, PRODUCTION, QRELS, RISKY, SPEC, STABLE, project, run_text  # noqa: F401

RUNS = {"production": PRODUCTION, "bm25": BM25, "stable": STABLE, "risky": RISKY}


def make_project(folder: Path, spec: str = SPEC, *, production: str = "runs/production.run") -> Path:
    """The pytester project's files in a plain folder (for the command line and the API)."""
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    (folder / "qrels.txt").write_text(QRELS)
    for name, ranks in RUNS.items():
        (folder / "runs" / f"{name}.run").write_text(run_text(name, ranks))
    (folder / "bvtest.yaml").write_text(textwrap.dedent(spec).lstrip().replace("runs/production.run", production))
    return folder / "bvtest.yaml"


def fail_writes_with(monkeypatch: pytest.MonkeyPatch, code: int, where: str | None = None) -> None:
    """Make every atomic write into a path containing ``where`` fail as a full or read-only disk does."""
    real_fsync = os.fsync

    def failing_fsync(descriptor: int) -> None:
        target = os.readlink(f"/proc/self/fd/{descriptor}")
        if where is None or where in target:
            raise OSError(code, os.strerror(code))
        real_fsync(descriptor)

    monkeypatch.setattr(textfiles.os, "fsync", failing_fsync)


# --- --bvtest-update ----------------------------------------------------------------------------------------------


def test_update_is_refused_after_a_failed_gate_unless_forced(project: pytest.Pytester) -> None:  # noqa: F811
    production = project.path / "runs" / "production.run"
    before = production.read_bytes()
    refused = project.runpytest("--bvtest-run", "runs/risky.run", "--bvtest-update")
    assert refused.ret == 1 and production.read_bytes() == before
    refused.stdout.fnmatch_lines(
        [
            "*bvtest: --bvtest-update: *bvtest.yaml: reference not updated: * test(s) failed in this "
            "session; update after they pass, or on purpose with --bvtest-update-force*"
        ]
    )
    forced = project.runpytest("--bvtest-run", "runs/risky.run", "--bvtest-update", "--bvtest-update-force")
    assert forced.ret == 1  # the gates still failed; the update was done as asked
    assert read_run(production).scores == read_run(project.path / "runs" / "risky.run").scores
    forced.stdout.fnmatch_lines(
        ["*reference 'production' updated*", "*note: updated as forced although * gate(s) failed*"]
    )


def test_a_gz_reference_stays_gzip_and_the_spec_still_runs(tmp_path: Path) -> None:
    spec = make_project(tmp_path, production="runs/production.run.gz")
    (tmp_path / "runs" / "production.run.gz").write_bytes(
        gzip.compress((tmp_path / "runs" / "production.run").read_bytes())
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    lines = update_reference(evaluation)
    stored = tmp_path / "runs" / "production.run.gz"
    assert gzip.decompress(stored.read_bytes()) == (tmp_path / "runs" / "stable.run").read_bytes()
    assert "updated" in lines[0]
    again = evaluate_spec(load_spec(spec), use_cache=False)
    assert (
        again.measure("AP").system("production").values["mean"]
        == again.measure("AP").system("candidate").values["mean"]
    )


def test_a_reference_inside_a_multi_system_file_replaces_only_its_own_lines(tmp_path: Path) -> None:
    spec = make_project(
        tmp_path, SPEC.replace("production: runs/production.run", "production: {run: runs/all.run, tag: production}")
    )
    runs = tmp_path / "runs"
    (runs / "all.run").write_text(
        "# two systems in one file\n" + (runs / "production.run").read_text() + (runs / "bm25.run").read_text()
    )
    update_reference(evaluate_spec(load_spec(spec), use_cache=False))
    updated = (runs / "all.run").read_text()
    assert updated.startswith("# two systems in one file\n")
    assert read_run(runs / "all.run", tag="bm25").scores == read_run(runs / "bm25.run").scores
    assert read_run(runs / "all.run", tag="production").scores == read_run(runs / "stable.run").scores
    assert evaluate_spec(load_spec(spec), use_cache=False).passed  # the spec still runs: the tag is kept


def test_the_previous_reference_is_kept_in_the_cache_folder_or_left_to_version_control(tmp_path: Path) -> None:
    spec = make_project(tmp_path)
    before = (tmp_path / "runs" / "production.run").read_bytes()
    lines = update_reference(evaluate_spec(load_spec(spec), use_cache=False))
    kept = list((tmp_path / ".bvtest_cache" / "previous").iterdir())
    assert [path.read_bytes() for path in kept] == [before] and f"kept as {kept[0]}" in lines[1]
    assert sorted(path.name for path in (tmp_path / "runs").iterdir()) == [
        "bm25.run",
        "production.run",
        "risky.run",
        "stable.run",
    ]
    without_cache = make_project(tmp_path / "nocache", SPEC + "cache: false\n")
    lines = update_reference(evaluate_spec(load_spec(without_cache), use_cache=False))
    assert (
        "previous reference not kept (no cache folder): restore it from version control (git checkout -- "
        "production.run)" in lines[1]
    )


def test_an_update_that_cannot_be_written_names_the_file_leaves_it_whole_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = make_project(tmp_path)
    reference = tmp_path / "runs" / "production.run"
    before = reference.read_bytes()
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    fail_writes_with(monkeypatch, errno.ENOSPC, where="runs/.production.run.")
    with pytest.raises(InputError) as error:
        update_reference(evaluation)
    assert str(error.value) == f"{reference}: cannot write this file (No space left on device); free some space"
    assert reference.read_bytes() == before
    assert not [path for path in reference.parent.iterdir() if path.name.endswith(".tmp")]


def test_an_update_that_cannot_be_written_fails_the_pytest_session(project: pytest.Pytester) -> None:  # noqa: F811
    outside = project.path.parent / f"{project.path.name}-outside.run"
    outside.write_text(run_text("production", PRODUCTION))
    (project.path / "runs" / "production.run").unlink()
    (project.path / "runs" / "production.run").symlink_to(outside)  # a committed link out of the project
    result = project.runpytest("--bvtest-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            f"*bvtest: --bvtest-update: *bvtest.yaml:4: not updated: the reference run {outside} "
            f"is outside the project {project.path}; *--bvtest-allow-outside-project*"
        ]
    )
    assert outside.read_text() == run_text("production", PRODUCTION)
    allowed = project.runpytest("--bvtest-update", "--bvtest-allow-outside-project")
    assert allowed.ret == 0 and read_run(outside).scores == read_run(project.path / "runs" / "stable.run").scores


def test_update_outside_the_project_through_dot_dot_is_refused(tmp_path: Path) -> None:
    spec = make_project(tmp_path / "repo", production="../shared/production.run")
    (tmp_path / "repo" / ".git").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "production.run").write_text(run_text("production", PRODUCTION))
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    with pytest.raises(
        InputError, match=r"not updated: the reference run .*shared/production.run is outside the project"
    ):
        update_reference(evaluation)
    assert "updated" in update_reference(evaluation, allow_outside=True)[0]


def test_bvtest_check_update(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = make_project(tmp_path)
    reference = tmp_path / "runs" / "production.run"
    before = reference.read_text()
    assert main(["check", str(spec), "--no-cache", "--run", str(tmp_path / "runs" / "risky.run"), "--update"]) == 1
    assert "reference 'production' not updated: " in capsys.readouterr().err and reference.read_text() == before
    assert main(["check", str(spec), "--no-cache", "--update"]) == 0
    assert "reference 'production' updated" in capsys.readouterr().out
    assert reference.read_text() == (tmp_path / "runs" / "stable.run").read_text()


# --- reports --------------------------------------------------------------------------------------------------------


def test_a_device_as_report_path_is_written_to_not_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = make_project(tmp_path)
    assert main(["check", str(spec), "--no-cache", "--json", "/dev/null", "--markdown", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_pipe_nobody_reads_is_an_error_not_a_wait(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = make_project(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    assert main(["check", str(spec), "--no-cache", "--json", str(tmp_path / "pipe")]) == 2
    assert (
        capsys.readouterr().err.splitlines()[0]  # then the spec's warnings (its 6 gates fail most equal changes)
        == f"bvtest: error: {tmp_path / 'pipe'}: cannot write to this pipe: no process is reading it"
    )


def test_a_symlinked_report_path_keeps_its_link(tmp_path: Path) -> None:
    spec = make_project(tmp_path)
    (tmp_path / "reports").mkdir()
    (tmp_path / "report.json").symlink_to(tmp_path / "reports" / "real.json")
    assert main(["check", str(spec), "--no-cache", "--json", str(tmp_path / "report.json")]) == 0
    assert (tmp_path / "report.json").is_symlink()
    assert json.loads((tmp_path / "reports" / "real.json").read_text())["summary"]["gates"] == 6


@pytest.mark.parametrize(
    ("make", "message"),
    [
        # refused before the evaluation (issue 22), as a path ending in `/` is
        (lambda path: path.mkdir(), "--json {report}: is a folder; a report is a file"),
        (lambda path: None, "{report}: cannot write this file (No space left on device); free some space"),
    ],
)
def test_a_report_that_cannot_be_written_names_the_users_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, make, message: str
) -> None:
    spec = make_project(tmp_path)
    report = tmp_path / "out.json"
    make(report)
    fail_writes_with(monkeypatch, errno.ENOSPC, where="out.json")
    assert main(["check", str(spec), "--no-cache", "--json", str(report)]) == 2
    assert capsys.readouterr().err.startswith(f"bvtest: error: {message.format(report=report)}")


def test_ini_report_paths_outside_the_project_are_refused(project: pytest.Pytester) -> None:  # noqa: F811
    project.makeini("[pytest]\nbvtest_json = ../elsewhere.json\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR and not (project.path.parent / "elsewhere.json").exists()
    # refused when pytest starts, with the other report paths' checks, before any gate runs
    result.stderr.fnmatch_lines(["ERROR: bvtest: ini setting bvtest_json = *elsewhere.json* is outside the project*"])
    assert "passed" not in result.stdout.str()
    allowed = project.runpytest("--bvtest-allow-outside-project")
    assert allowed.ret == 0 and (project.path.parent / "elsewhere.json").exists()
    project.makeini("[pytest]\nbvtest_cache_dir = ../elsewhere-cache\n")
    project.makepyfile(test_team="def test_uses_the_fixture(bvtest):\n    pass\n")
    cache_refused = project.runpytest()
    cache_refused.assert_outcomes(failed=6, errors=1)
    assert "Traceback" not in cache_refused.stdout.str() and not (project.path.parent / "elsewhere-cache").exists()
    cache_refused.stdout.fnmatch_lines(
        ["*bvtest: ini setting bvtest_cache_dir = *elsewhere-cache* is outside the project*"]
    )
    (project.path / "test_team.py").unlink()
    project.makeini("[pytest]\nbvtest_plots = /tmp\n")
    refused = project.runpytest()
    assert refused.ret == pytest.ExitCode.USAGE_ERROR and "Traceback" not in refused.stderr.str()
    refused.stderr.fnmatch_lines(["*bvtest: ini setting bvtest_plots = /tmp is outside the project*"])


# --- the cache ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_a_cache_that_cannot_be_written_warns_once_and_the_gate_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    spec = make_project(tmp_path)
    fail_writes_with(monkeypatch, code, where=".bvtest_cache")
    with pytest.warns(CacheWriteWarning) as caught:
        evaluation = evaluate_spec(load_spec(spec))
    caught = [warning for warning in caught if warning.category is CacheWriteWarning]
    assert evaluation.passed and len(caught) == 1
    assert f"{tmp_path / '.bvtest_cache'}" in str(caught[0].message) and os.strerror(code) in str(caught[0].message)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_project_still_runs_the_gate(tmp_path: Path) -> None:
    spec = make_project(tmp_path)
    for path in (tmp_path / "runs", tmp_path):
        path.chmod(0o555)
    try:
        with pytest.warns(CacheWriteWarning):
            assert evaluate_spec(load_spec(spec)).passed
    finally:
        for path in (tmp_path, tmp_path / "runs"):
            path.chmod(0o755)


def test_a_spec_cache_outside_the_project_is_refused_at_its_line(tmp_path: Path) -> None:
    spec = make_project(tmp_path / "repo", SPEC + "cache: ../elsewhere\n")
    with pytest.raises(InputError, match=r"bvtest.yaml:12: cache: the cache folder .*elsewhere is outside the project"):
        evaluate_spec(load_spec(spec))
    assert evaluate_spec(load_spec(spec), allow_outside=True).passed
    assert (tmp_path / "elsewhere").is_dir()


# --- faults ---------------------------------------------------------------------------------------------------------

WRITER = """
import sys
from pytest_bvtest.io.textfiles import atomic_write_bytes
path, size = sys.argv[1], int(sys.argv[2])
print("ready", flush=True)
for index in range(10**9):
    atomic_write_bytes(path, bytes([65 + index % 2]) * size)
"""


def test_killing_a_writer_at_any_moment_leaves_a_complete_old_or_new_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    size = 4 << 20
    atomic_write_bytes(target, b"A" * size)
    generator = random.Random(13)
    for _ in range(8):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(size)], stdout=subprocess.PIPE)
        assert writer.stdout is not None and writer.stdout.readline() == b"ready\n"
        time.sleep(generator.uniform(0.0, 0.3))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        data = target.read_bytes()
        assert data in (b"A" * size, b"B" * size)
    leftovers = [path.name for path in tmp_path.iterdir() if path != target]
    assert all(
        name.startswith(".report.json.") and name.endswith(".tmp") for name in leftovers
    )  # never read as reports


def test_an_interrupted_write_keeps_the_old_file_and_removes_its_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "entry.json"
    target.write_bytes(b"old")

    def interrupted(source: str, destination: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(textfiles.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old" and [path.name for path in tmp_path.iterdir()] == ["entry.json"]


# --- xdist ------------------------------------------------------------------------------------------------------------


def test_reports_are_byte_identical_with_four_workers_on_a_cold_shared_cache(project: pytest.Pytester) -> None:  # noqa: F811
    common = ("--bvtest-run", "runs/risky.run", "-p", "no:cacheprovider")
    serial = project.runpytest_subprocess(
        *common, "--bvtest-json", "serial.json", "--bvtest-markdown", "serial.md", "--bvtest-no-cache"
    )
    reports = {"serial": ((project.path / "serial.json").read_bytes(), (project.path / "serial.md").read_bytes())}
    for attempt in range(2):
        cache = project.path / f"cache-{attempt}"  # cold: four workers fill it at once
        parallel = project.runpytest_subprocess(
            *common,
            "-n",
            "4",
            "--bvtest-cache-dir",
            str(cache),
            "--bvtest-json",
            f"p{attempt}.json",
            "--bvtest-markdown",
            f"p{attempt}.md",
        )
        assert parallel.ret == serial.ret == 1
        assert list(cache.rglob("*.json"))
        reports[f"parallel {attempt}"] = (
            (project.path / f"p{attempt}.json").read_bytes(),
            (project.path / f"p{attempt}.md").read_bytes(),
        )
    # the one thing that differs between sessions is when each ran (the report's timestamp line)
    reports = {
        name: (re.sub(rb'\n  "timestamp": "[^"]*",', b"", report), markdown)
        for name, (report, markdown) in reports.items()
    }
    assert all(b'"timestamp"' not in report for report, _ in reports.values())
    assert reports["parallel 0"] == reports["serial"] and reports["parallel 1"] == reports["serial"]


def test_real_update_refuses_a_candidate_run_that_lacks_topics_unless_forced(tmp_path: Path) -> None:
    """DL-HARD: BM25+ELECTRA without two topics passes (OK*, the candidate_missing guard) against its complete run;
    --bvtest-update stored the truncated run as the reference, making later gates lenient on those topics."""
    full = shared_path("dl_hard", "dataset", "baselines", "doc", "bm25+electra-mp.run.gz")
    with gzip.open(full, "rt") as run:
        text = run.read()
    (tmp_path / "production.run").write_text(text)
    (tmp_path / "cut.run").write_text(
        "".join(line for line in text.splitlines(keepends=True) if line.split()[0] not in ("1056204", "1049519"))
    )
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        f"qrels: {shared_path('dl_hard', 'dataset', 'dl_hard-doc.qrels')}\n"
        "measures: [nDCG@10]\n"
        "baselines: {production: production.run}\n"
        "candidate: cut.run\n"
        "reference: production\n"
        "cache: false\n"
        "gates: [{statistic: mean, max_decrease: 0.05}]\n"
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    assert evaluation.gates[0].outcome == "OK*"
    with pytest.raises(InputError, match=r"not updated: the candidate has no ranking for 2 topic\(s\) that other "):
        update_reference(evaluation, allow_outside=True)
    assert (tmp_path / "production.run").read_text() == text
    lines = update_reference(evaluation, force=True, allow_outside=True)
    assert any(
        line.startswith("bvtest: note: updated as forced although the candidate has no ranking for 2 topic")
        for line in lines
    )
    assert (tmp_path / "production.run").read_text() == (tmp_path / "cut.run").read_text()


def test_real_update_refuses_a_candidate_run_that_scores_zero_everywhere_unless_forced(tmp_path: Path) -> None:
    """DL-HARD's BM25+RM3 run with 'msmarco_doc_'-prefixed ids passes a Var gate (OK*, the candidate_zero guard);
    stored as the reference, every later candidate would beat it on every topic."""
    runs = shared_path("dl_hard", "dataset", "baselines", "doc")
    with gzip.open(runs / "bm25.run.gz", "rt") as run:
        production = run.read()
    (tmp_path / "production.run").write_text(production)
    with gzip.open(runs / "bm25+rm3.run.gz", "rt") as run:
        fields = [line.split() for line in run if line.strip()]
    (tmp_path / "renamed.run").write_text(
        "".join(f"{q} Q0 msmarco_doc_{d} {r} {x} {t}\n" for q, _, d, r, x, t in fields)
    )
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        f"qrels: {shared_path('dl_hard', 'dataset', 'dl_hard-doc.qrels')}\n"
        "measures: [nDCG@10]\n"
        "baselines: {production: production.run}\n"
        "candidate: renamed.run\n"
        "reference: production\n"
        "cache: false\n"
        "gates: [{statistic: var, max_increase: 5%}]\n"
    )
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    # nothing it retrieves is judged: its gate fails, and the update is refused all the same
    assert evaluation.gates[0].outcome == "FAIL" and evaluation.gates[0].value == 0.0
    with pytest.raises(InputError, match=r"not updated: 1 gate\(s\) failed: bvtest.yaml::nDCG@10::var"):
        update_reference(evaluation, allow_outside=True)
    assert (tmp_path / "production.run").read_text() == production
    lines = update_reference(evaluation, force=True, allow_outside=True)
    assert "bvtest: note: updated as forced although the candidate scores 0 on every topic (nDCG@10)" in lines
