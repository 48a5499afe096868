"""The `bvtest` command: per-topic TSV, gates without pytest, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval
import yaml

from pytest_bvtest import blas
from pytest_bvtest.cli import main
from tests.test_judgments import small_project

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def run_cli(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    """``bvtest ARGS`` in the example project; ``columns``: the terminal's width (COLUMNS), else the tests' own."""
    environment = {**os.environ, **({"COLUMNS": str(columns)} if columns else {})}
    return subprocess.run(
        [sys.executable, "-m", "pytest_bvtest.cli", *args],
        capture_output=True,
        text=True,
        cwd=EXAMPLE,
        timeout=120,
        env=environment,
    )


def test_evaluate_prints_per_topic_values_equal_to_pytrec_eval(capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = EXAMPLE / "eval" / "qrels.txt", EXAMPLE / "runs" / "production.run"
    assert main(["evaluate", "--qrels", str(qrels), "-m", "nDCG@10", "-m", "map", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "system\ttopic\tmeasure\tvalue"
    rows = [line.split("\t") for line in lines[1:]]
    assert {row[2] for row in rows} == {"nDCG@10", "AP"}  # trec_eval's `map` is shown back as AP
    with open(qrels) as q, open(run) as r:
        expected = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(q), {"ndcg_cut_10"}).evaluate(
            pytrec_eval.parse_run(r)
        )
    ndcg = {topic: float(value) for system, topic, measure, value in rows if measure == "nDCG@10"}
    assert ndcg.keys() == expected.keys()
    for topic, value in ndcg.items():
        assert value == expected[topic]["ndcg_cut_10"]  # full precision: the exact float


def test_evaluate_mean(capsys: pytest.CaptureFixture[str]) -> None:
    runs = [str(EXAMPLE / "runs" / f"{name}.run") for name in ("production", "candidate-pass")]
    assert main(["evaluate", "--qrels", str(EXAMPLE / "eval" / "qrels.txt"), "-m", "nDCG@10", "--mean", *runs]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "system\tmeasure\tmean"
    means = {line.split("\t")[0]: float(line.split("\t")[2]) for line in lines[1:]}
    assert means["production"] == pytest.approx(0.5597, abs=5e-5)
    assert means["candidate-pass"] == pytest.approx(0.5734, abs=5e-5)


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("mean", [True, False], ids=["mean", "per-topic"])
def test_evaluate_into_a_pipe_the_reader_closed_stops_quietly(unbuffered: bool, mean: bool) -> None:
    """`bvtest evaluate ... | head`: no traceback, no "Exception ignored", no message.

    The pipe's read end is closed before the process starts, so the first write to stdout fails:
    buffered, at the final flush (the output fits the buffer), after the command finished: its own exit
    code 0; unbuffered, at the first line, before it finished: exit 1, never a pass it did not reach."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    if unbuffered:
        environment["PYTHONUNBUFFERED"] = "1"
    arguments = [
        "evaluate",
        "--qrels",
        "eval/qrels.txt",
        "-m",
        "nDCG@10",
        *(["--mean"] if mean else []),
        "runs/production.run",
    ]
    finished = _into_a_closed_pipe(arguments, environment)
    assert (finished.returncode, finished.stderr) == (1 if unbuffered else 0, "")


def _into_a_closed_pipe(arguments: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "pytest_bvtest.cli", *arguments],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=EXAMPLE,
            env=environment,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_a_failed_gate_piped_into_a_closed_reader_is_never_exit_0(unbuffered: bool) -> None:
    """`bvtest check ... | head` under pipefail: a failing candidate must not turn green on a broken pipe."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    if unbuffered:
        environment["PYTHONUNBUFFERED"] = "1"
    finished = _into_a_closed_pipe(
        ["check", "bvtest.yaml", "--no-cache", "--run", "runs/past-release.run"], environment
    )
    assert (finished.returncode, finished.stderr) == (1, "")


def test_check_exit_codes_and_reports(tmp_path: Path) -> None:
    passing = run_cli("check", "bvtest.yaml", "--no-cache", "--json", str(tmp_path / "pass.json"))
    assert passing.returncode == 0, passing.stderr
    assert "bvtest: 5 gates, 0 failed" in passing.stdout
    failing = run_cli(
        "check",
        "bvtest.yaml",
        "--no-cache",
        "--run",
        "runs/past-release.run",
        "--markdown",
        str(tmp_path / "fail.md"),
        columns=80,
    )
    assert failing.returncode == 1
    # last quarter's release: nDCG@10 -0.060 against production, beyond what the five gates together allow
    assert "[FAIL] bvtest.yaml::nDCG@10::mean" in failing.stdout
    # wrapped at the terminal's width as pytest's summary is: only a table's rows keep their length
    lines = failing.stdout.splitlines()
    assert lines[0] == "=" * 32 + " bvtest summary " + "=" * 32
    long = [line for line in lines if len(line) > 80]
    assert long and all(line.startswith(("  ", "> ")) for line in long), long
    assert "    exit codes" not in failing.stdout
    # the commands repeat the one the user ran, with its own options
    assert "Accept it on purpose: bvtest check bvtest.yaml --run runs/past-release.run --update-force" in " ".join(
        line.strip() for line in lines
    )
    assert "`nDCG@10::mean`" in (tmp_path / "fail.md").read_text()
    assert json.loads((tmp_path / "pass.json").read_text())["passed"] is True


@pytest.mark.parametrize("command", ["evaluate", "compare", "check", "report", "judge", "history", "calibrate"])
def test_each_commands_help_says_what_it_is_for_shows_examples_and_its_exit_codes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    help_page = capsys.readouterr().out
    usage, description = help_page.split("\n\n")[:2]
    assert usage.startswith(f"usage: bvtest {command} ") and len(description) > 60
    examples = help_page.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert examples and all(line.startswith(f"  bvtest {command} ") for line in examples)
    assert re.search(r"\nexit codes: 0 .*2 an input or usage error", help_page.replace("\n  ", " "))


def test_report_never_gates() -> None:
    result = run_cli("report", "bvtest.yaml", "--no-cache", "--run", "runs/candidate-risky.run")
    assert result.returncode == 0
    assert "candidate" in result.stdout and "[FAIL]" not in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "missing.yaml"], "missing.yaml: spec file not found"),
        (["evaluate", "--qrels", "eval/qrels.txt", "-m", "nDGC@10", "runs/production.run"], "nDCG@10"),
        (["evaluate", "--qrels", "eval/topics.tsv", "-m", "AP", "runs/production.run"], "eval/topics.tsv:1:"),
        (["check"], "the following arguments are required: SPEC"),
        (["frobnicate"], "invalid choice"),
        (["check", "bvtest.yaml", "--json", "bvtest.yaml/report.json"], "bvtest.yaml"),
    ],
    ids=["missing-spec", "unknown-measure", "malformed-qrels", "usage", "unknown-command", "unwritable-output"],
)
def test_input_and_usage_errors_exit_2_without_traceback(args: list[str], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_evaluate_in_parallel_processes_equals_one_process_and_shares_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [str(path) for path in sorted((EXAMPLE / "runs").glob("*.run"))]
    arguments = ["evaluate", "--qrels", str(EXAMPLE / "eval" / "qrels.txt"), "-m", "nDCG@10", "-m", "AP"]
    assert main([*arguments, "-j", "1", *runs]) == 0
    alone = capsys.readouterr().out
    assert main([*arguments, "-j", "3", "--cache-dir", str(tmp_path / "cache"), *runs]) == 0
    assert capsys.readouterr().out == alone
    entries = sorted((tmp_path / "cache").rglob("*.json"))
    assert len([entry for entry in entries if entry.parent.name != "stat"]) == 2 * len(runs)
    # A second process finds every entry the workers' results were stored under.
    before = [entry.stat().st_mtime_ns for entry in entries if entry.parent.name != "stat"]
    assert main([*arguments, "-j", "3", "--cache-dir", str(tmp_path / "cache"), *runs]) == 0
    assert capsys.readouterr().out == alone
    assert [
        entry.stat().st_mtime_ns
        for entry in sorted((tmp_path / "cache").rglob("*.json"))
        if entry.parent.name != "stat"
    ] == before


def test_evaluate_in_parallel_reports_a_bad_run_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 not-a-number sys\n")
    runs = [str(EXAMPLE / "runs" / "production.run"), str(bad)]
    assert main(["evaluate", "--qrels", str(EXAMPLE / "eval" / "qrels.txt"), "-m", "AP", "-j", "2", *runs]) == 2
    error = capsys.readouterr().err
    assert f"{bad}:2:" in error and "not-a-number" in error and "Traceback" not in error


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_a_positive_whole_number(jobs: str) -> None:
    finished = run_cli("evaluate", "--qrels", "eval/qrels.txt", "-m", "AP", "-j", jobs, "runs/production.run")
    assert finished.returncode == 2 and "-j needs a whole number of processes" in finished.stderr


def test_calibrate_prints_rates_limits_replays_and_a_yaml_snippet_deterministically() -> None:
    first = run_cli("calibrate", "bvtest.yaml", "--no-cache", "--swaps", "2000", "--seed", "3")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert "(seed 3)" in lines[0]
    header = re.split(r"\s{2,}", lines[2])
    assert header[:4] == ["gate", "reference", "rule", "limit"] and header[-2:] == [
        "replay bm25-alt",
        "replay past-release",
    ]
    trisk = next(line for line in lines if line.startswith("nDCG@10::trisk "))
    # a family-wise limit (the default) is more lenient than the gate's own 5% limit: its rate alone is below 5%
    cells = re.split(r"\s{2,}", trisk)
    assert float(cells[3]) < float(cells[6]) and float(cells[4].rstrip("%")) < 5.0 and cells[5] == "2,000"
    assert cells[-2:] == ["OK", "FAIL"]  # bm25-alt passes TRisk; last quarter's release does not
    snippet = yaml.safe_load(first.stdout.split("time\n", 1)[1])
    assert snippet["analysis"]["calibration"] == {"swaps": 2000, "seed": 3}
    assert {"statistic": "trisk", "measure": "nDCG@10", "false_alarm": 0.05} in snippet["gates"]
    assert run_cli("calibrate", "bvtest.yaml", "--no-cache", "--swaps", "2000", "--seed", "3").stdout == first.stdout


def test_calibrate_says_how_often_the_gates_fail_an_equal_change_together_and_keeps_the_family(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = yaml.safe_load((EXAMPLE / "bvtest.yaml").read_text())
    for key in ("qrels", "topics", "candidate"):
        document[key] = str(EXAMPLE / document[key])
    document["baselines"] = {name: str(EXAMPLE / path) for name, path in document["baselines"].items()}
    document["judgments"]["documents"] = str(EXAMPLE / document["judgments"]["documents"])
    spec = tmp_path / "bvtest.yaml"
    together = {}
    for family in (False, True):
        document["analysis"]["calibration"] = {"family": family}
        spec.write_text(yaml.safe_dump(document))
        assert main(["calibrate", str(spec), "--no-cache", "--swaps", "2000"]) == 0
        output = capsys.readouterr().out
        line = next(line for line in output.splitlines() if line.startswith("Together: "))
        assert line.startswith("Together: an equal-quality change fails at least one of these 5 gates ")
        together[family] = float(re.search(r" ([\d.]+)% of the time", line).group(1)) / 100
        trisk = re.split(r"\s{2,}", next(row for row in output.splitlines() if row.startswith("nDCG@10::trisk ")))
        assert (float(trisk[4].rstrip("%")) < 5.0) == family  # the family's per-gate level is below 5%
        assert ("family: true}}, the default, holds" in line) != family
        assert ("the spec allows 5% together" in line) == family
        assert yaml.safe_load(output.split("time\n", 1)[1])["analysis"]["calibration"].get("family", True) == family
    assert together[False] > 0.1 and together[True] <= 0.05


def test_calibrate_without_a_candidate_is_an_input_error(tmp_path: Path) -> None:
    spec = tmp_path / "analysis.yaml"
    spec.write_text(
        f"qrels: {EXAMPLE / 'eval' / 'qrels.txt'}\nmeasures: [AP]\nbaselines: "
        f"{{p: {EXAMPLE / 'runs' / 'production.run'}}}\n"
    )
    result = run_cli("calibrate", str(spec))
    assert result.returncode == 2 and "calibrate needs a candidate and gates" in result.stderr


@pytest.mark.parametrize("preset", [None, "3"])
def test_a_fresh_bvtest_process_runs_the_blas_on_one_thread_unless_told_otherwise(preset: str | None) -> None:
    probe = (
        "import contextlib, os\nfrom pytest_bvtest import cli\nwith contextlib.suppress(SystemExit):\n"
        "    cli.main(['--version'])\nimport numpy\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('MKL_NUM_THREADS'))"
    )
    environment = {key: value for key, value in os.environ.items() if key not in blas.THREAD_VARIABLES}
    if preset is not None:
        environment["OPENBLAS_NUM_THREADS"] = preset
    printed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=environment, check=True)
    assert printed.stdout.split()[-2:] == ([preset, "None"] if preset else ["1", "1"])


def test_the_blas_threads_are_left_alone_once_numpy_has_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in blas.THREAD_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    blas.one_thread_for_this_process()  # numpy is loaded in this process: setting the variable now would change nothing
    assert "OPENBLAS_NUM_THREADS" not in os.environ


def test_calibrate_for_the_production_run_itself_warns_that_its_limits_mean_little() -> None:
    """The example's production run as the candidate: every swap with production is the same, so each limit sits on
    production's own value and "an equal-quality change fails ... 0.00% of the time"; it printed that without a
    word on why."""
    result = run_cli("calibrate", "bvtest.yaml", "--no-cache", "--swaps", "200", "--run", "runs/production.run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    preface = lines.index("The limits below are computed for this candidate, and these words say they may mean little:")
    assert lines[preface + 1] == (
        "note: no change: the candidate's per-topic nDCG@10 and AP scores are production's on all 56 topics, as right "
        "after an update of the reference; if this change should move the ranking, check that CI wrote the new run "
        "where "
        "--bvtest-run points"
    )
    assert preface < lines.index(next(line for line in lines if line.startswith("gate ")))
    # the spec's own candidate differs from production: no such words
    assert "may mean little" not in run_cli("calibrate", "bvtest.yaml", "--no-cache", "--swaps", "200").stdout


def test_check_without_a_candidate_for_the_gates_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bvtest check` of the example spec without its candidate line exited 0 with no gate judged."""
    spec = tmp_path / "bvtest.yaml"
    text = (
        (EXAMPLE / "bvtest.yaml")
        .read_text()
        .replace("eval/", f"{EXAMPLE}/eval/")
        .replace("runs/", f"{EXAMPLE}/runs/")
        .replace("corpus/", f"{EXAMPLE}/corpus/")
    )
    spec.write_text("".join(line for line in text.splitlines(keepends=True) if not line.startswith("candidate:")))
    assert main(["check", str(spec), "--no-cache"]) == 2
    line = spec.read_text().splitlines().index("gates:") + 1
    assert capsys.readouterr().err.startswith(
        f"bvtest: error: {spec}:{line}: gates: the spec has 4 gates but no candidate"
    )
    assert main(["check", str(spec), "--no-cache", "--run", str(EXAMPLE / "runs" / "candidate-pass.run")]) == 0
    assert main(["report", str(spec), "--no-cache"]) == 0  # the analysis needs no candidate


def test_an_empty_run_path_says_it_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`bvtest check SPEC --run "$RUN"` with RUN unset said 'candidate run not found', naming no file."""
    assert main(["check", str(EXAMPLE / "bvtest.yaml"), "--no-cache", "--run", ""]) == 2
    assert capsys.readouterr().err == (
        'bvtest: error: the candidate run\'s path is empty (an unset variable in `--bvtest-run "$RUN"`?); '
        "give the run file to test with --bvtest-run / --run\n"
    )


def test_evaluate_reads_a_run_through_a_pipe_once_and_refuses_a_device_at_once() -> None:
    """`bvtest evaluate ... <(zcat run.gz)`: a pipe's run with an error was reported as 'a named pipe, not a file'
    (the validated reader opened it a second time); /dev/zero hung in the bytes-level fast path."""
    command = [sys.executable, "-m", "pytest_bvtest.cli", "evaluate", "--mean", "-m", "AP", "--qrels", "eval/qrels.txt"]
    quoted = " ".join(command)
    piped = subprocess.run(
        ["bash", "-c", f"{quoted} <(gzip -c runs/production.run) <(sed '5s/ Q0 / /' runs/candidate-pass.run)"],
        capture_output=True,
        text=True,
        cwd=EXAMPLE,
        timeout=60,
    )
    assert piped.returncode == 2
    assert re.fullmatch(
        r"bvtest: error: /dev/fd/\d+:5: found 5 columns, expected 6 \(qid Q0 docno rank score tag\); separate the "
        r"columns by blanks; comment lines must start with '#'\n",
        piped.stderr,
    )
    fine = subprocess.run(
        ["bash", "-c", f"{quoted} <(gzip -c runs/production.run)"], capture_output=True, text=True, cwd=EXAMPLE
    )
    assert fine.stdout.splitlines()[1].startswith("production\tAP\t0.4865")
    device = run_cli("evaluate", "-m", "AP", "--qrels", "eval/qrels.txt", "/dev/zero")
    assert (device.returncode, device.stderr) == (
        2,
        "bvtest: error: /dev/zero: is a device, not a file; name a regular file\n",
    )


@pytest.mark.parametrize("swaps", ["1000000000", "99"])
def test_calibrate_caps_its_swaps_like_the_specs_repetition_counts(
    swaps: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bvtest calibrate --swaps 1000000000` ran for ever."""
    assert main(["calibrate", str(EXAMPLE / "bvtest.yaml"), "--no-cache", "--swaps", swaps]) == 2
    assert capsys.readouterr().err == (
        f"bvtest: error: --swaps must lie between 100 and 1,000,000, got {int(swaps):,}; more swaps cost time in "
        "proportion and change a limit less than its Monte-Carlo error\n"
    )


def test_evaluate_names_runs_that_share_a_run_tag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Anserini's and Pyserini's runs all carry one tag: two of them are refused with the way to name them, and
    NAME=RUN names each (a path that exists is a path, even with '=' in it)."""
    qrels, production = str(EXAMPLE / "eval" / "qrels.txt"), EXAMPLE / "runs" / "production.run"
    copy = tmp_path / "weight=0.5.run"
    copy.write_text(production.read_text())
    assert main(["evaluate", "--qrels", qrels, "-m", "AP", "--mean", str(production), str(copy)]) == 2
    assert "NAME=RUN in bvtest evaluate" in capsys.readouterr().err
    assert main(["evaluate", "--qrels", qrels, "-m", "AP", "--mean", f"bm25={production}", f"tuned={copy}"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[0] for row in rows] == ["bm25", "tuned"] and rows[0][2] == rows[1][2]
    assert main(["evaluate", "--qrels", qrels, "-m", "AP", "--mean", f"bm25={production}", str(copy)]) == 0
    assert [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()[1:]] == ["bm25", "production"]
    assert main(["evaluate", "--qrels", qrels, "-m", "AP", f"={production}"]) == 2
    assert "NAME=RUN needs a name" in capsys.readouterr().err


def test_judge_writes_the_judge_file_to_stdout_with_dash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`-o -` was refused with advice to write `-o /dev/stdout`, which then failed ("exists and is not a judge
    file"); now it writes the file itself on stdout, byte for byte what `-o FILE` writes, and says so on stderr."""
    spec = small_project(tmp_path)  # two runs on two topics, each with a document the qrels do not judge
    assert main(["judge", str(spec), "-o", "-", "--no-cache"]) == 0
    written = capsys.readouterr()
    assert main(["judge", str(spec), "-o", str(tmp_path / "judgments.tsv"), "--no-cache"]) == 0
    assert written.out == (tmp_path / "judgments.tsv").read_text()
    assert "\nd3\t" not in written.out and "1\td3\t\t" in written.out
    assert written.err.startswith("bvtest: wrote the judge file to standard output: 2 unjudged documents to judge")


def test_judge_refuses_a_spec_of_per_topic_tables_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Tables hold no rankings: judge wrote an empty judge file ("top  of new, prod")."""
    (tmp_path / "scores.csv").write_text("system,topic,value\nnew,1,0.5\nnew,2,0.4\nprod,1,0.6\nprod,2,0.3\n")
    spec = tmp_path / "bvtest.yaml"
    spec.write_text(
        "measures: [AP]\nbaselines: scores.csv\ncandidate: new\nreference: prod\n"
        "gates: [{statistic: mean, max_decrease: 0.05}]\n"
    )
    for output in (str(tmp_path / "judgments.tsv"), "-"):
        assert main(["judge", str(spec), "-o", output, "--no-cache"]) == 2
        said = capsys.readouterr()
        assert said.out == "" and said.err == (
            f"bvtest: error: {spec}: every system of this spec is a per-topic table: there are no rankings, so no "
            "unjudged documents to judge; give the candidate and its reference as run files (`candidate: run.txt`) "
            "to list the documents that decide its gates\n"
        )
    assert not (tmp_path / "judgments.tsv").exists()
