"""The history file: a torn last line, records that are not records, and paths that are not files (issue 22).

The history is the one file every session appends to and the HTML report and `bvtest history` read back;
a damaged line must cost that line only, and a path that is not a regular file must neither traceback
nor hang.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_bvtest.cli import main
from pytest_bvtest.errors import InputError
from pytest_bvtest.report.history import append_history, gate_series, read_history

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def record(day: int, value: object) -> dict[str, object]:
    return {
        "timestamp": f"2026-11-2{day}T10:00:00+00:00",
        "spec": "bvtest.yaml",
        "gates": [{"id": "bvtest.yaml::AP::mean", "measure": "AP", "value": value, "limit": 0.4, "outcome": "OK"}],
    }


def test_an_append_after_a_torn_last_line_starts_on_a_line_of_its_own(tmp_path: Path) -> None:
    """A disk that filled up mid-write left a line without its newline; the next record glued onto it and was lost."""
    path = tmp_path / "history.jsonl"
    append_history(path, [record(1, 0.5)])
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(json.dumps(record(2, 0.6))[:40])  # torn: no end, no newline
    append_history(path, [record(3, 0.7)])
    history = read_history(path)
    assert [entry["gates"][0]["value"] for entry in history.records] == [0.5, 0.7]
    assert len(history.skipped) == 1 and history.skipped[0].startswith(f"{path}:2: not a JSON record (")
    append_history(path, [record(4, 0.8)])  # the file ends in a newline: nothing is added before the record
    assert path.read_text(encoding="utf-8").count("\n\n") == 0


def test_a_record_with_a_value_that_is_not_a_number_is_skipped_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bvtest history` raised ValueError on a record whose value was the text 'n/a'."""
    path = tmp_path / "history.jsonl"
    append_history(path, [record(1, 0.5), record(2, "n/a"), record(3, True), record(4, 0.7)])
    out = io.StringIO()
    assert main(["history", str(path)], out=out) == 0
    assert out.getvalue().splitlines()[1].split() == ["bvtest.yaml::AP::mean", "2", "0.7", "0.4", "OK", "OK"]
    assert capsys.readouterr().err == (
        f"bvtest: warning: {path}:2: not a bvtest history record (gate bvtest.yaml::AP::mean: value 'n/a' is not a "
        "number); skipped\n"
        f"bvtest: warning: {path}:3: not a bvtest history record (gate bvtest.yaml::AP::mean: value True is not a "
        "number); skipped\n"
    )
    assert [series.values for series in gate_series(read_history(path).records)] == [(0.5, 0.7)]


def test_the_session_with_a_bad_history_record_writes_its_html_and_passes(pytester: pytest.Pytester) -> None:
    """The end of the session crashed on such a record: no HTML report, exit 1 although every gate passed."""
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".bvtest_cache"))
    history = pytester.path / "history.jsonl"
    append_history(history, [record(1, "n/a")])
    result = pytester.runpytest_subprocess(
        "bvtest.yaml", "--bvtest-history", "history.jsonl", "--bvtest-html", "report.html", "-p", "no:cacheprovider"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*HistoryWarning: bvtest: history.jsonl:1: not a bvtest history record (gate bvtest.yaml::AP::mean: value "
            "'n/a' is not a number); skipped"
        ]
    )
    assert (pytester.path / "report.html").exists()
    assert len(read_history(history).records) == 1  # this session's record, after the skipped line


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_history_path_that_is_not_a_file_is_refused_at_once(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder gave a traceback (IsADirectoryError); a FIFO nobody reads hung the session."""
    path = tmp_path / "history.jsonl"
    if kind == "folder":
        path.mkdir()
        what = "is a folder, not a file"
    else:
        os.mkfifo(path)
        what = "is a named pipe (FIFO), not a file"
    with pytest.raises(InputError) as error:
        append_history(path, [record(1, 0.5)])
    assert str(error.value) == f"{path}: the history file {what}; name a regular file for --bvtest-history"
    assert main(["history", str(path)], out=io.StringIO()) == 2
    assert capsys.readouterr().err == f"bvtest: error: {error.value}\n"  # at once: never opened


def test_pytest_with_a_fifo_for_history_fails_instead_of_hanging(pytester: pytest.Pytester) -> None:
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".bvtest_cache"))
    os.mkfifo(pytester.path / "history.jsonl")
    result = pytester.runpytest_subprocess(
        "bvtest.yaml", "--bvtest-history", "history.jsonl", "-p", "no:cacheprovider", timeout=120
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "*history.jsonl: the history file is a named pipe (FIFO), not a file; "
            "name a regular file for --bvtest-history"
        ]
    )


def test_a_change_of_qrels_starts_a_new_segment_of_the_history(tmp_path: Path) -> None:
    """Dropping 500 judgments moved the example's TRisk inside one unbroken 'OK OK' series (issue 19): the records
    before and after a change of qrels are now separated in `bvtest history`, its charts and the HTML page."""
    from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
    from pytest_bvtest.report.history import history_records
    from pytest_bvtest.report.html import history_chart
    from pytest_bvtest.report.outputs import evaluation_document

    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".bvtest_cache", "trec", "tests"))
    history = tmp_path / "history.jsonl"
    qrels = project / "eval" / "qrels.txt"
    lines = qrels.read_text(encoding="utf-8").splitlines(keepends=True)
    trisk = []
    for kept in (lines, lines, lines[500:]):  # the same qrels twice, then 500 judgments fewer
        qrels.write_text("".join(kept), encoding="utf-8")
        evaluation = evaluate_spec(spec_under_test(project / "bvtest.yaml"), use_cache=False)
        trisk.append(evaluation.gate("nDCG@10", "trisk").value)
        append_history(history, history_records(evaluation_document(evaluation)))
    assert trisk[0] == trisk[1] != trisk[2]
    series = {entry.id: entry for entry in gate_series(read_history(history).records)}
    assert all(entry.judgment_changes == (2,) for entry in series.values())
    out = io.StringIO()
    assert main(["history", str(history)], out=out) == 0
    text = out.getvalue()
    row = next(line for line in text.splitlines() if line.startswith("bvtest.yaml::nDCG@10::trisk"))
    assert row.endswith("OK OK | OK")
    assert "the qrels changed at record 3" in text and "are not comparable" in text
    chart = history_chart(series["bvtest.yaml::nDCG@10::trisk"])
    assert chart.count('class="judgments-changed"') == 1 and chart.count("<polyline") == 1  # 2 + 1 records
