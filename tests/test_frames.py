"""Runs and qrels as DataFrames (PyTerrier's and ranx's columns) and ``qrels: irds:<id>``: the same report as files.

A PyTerrier team holds its rankings as a DataFrame (``qid, docno, score, rank``, with ``query`` and ``docid``
beside them) and its qrels as one (``qid, docno, label``); ranx and ir_datasets name the columns ``query_id, doc_id,
score`` and ``relevance``. Read from the example project's files, each must give the report the files give, but for
the entry that names where the candidate or the judgments came from. pandas is optional: nothing imports it unless a
DataFrame is given (tests/test_lazy_imports.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_bvtest.errors import InputError
from pytest_bvtest.judging.pipeline import evaluate_spec, spec_under_test
from pytest_bvtest.report.outputs import evaluation_document
from pytest_bvtest.spec.reader import load_spec

pd = pytest.importorskip("pandas")

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
RUN = EXAMPLE / "runs" / "candidate-risky.run"
QRELS = EXAMPLE / "eval" / "qrels.txt"


def read_frame(path: Path, columns: list[str]) -> pd.DataFrame:
    return pd.read_csv(path, sep=r"\s+", header=None, names=columns, dtype=str)


def pyterrier_run(path: Path) -> pd.DataFrame:
    """The run as PyTerrier holds a retriever's results: qid, docid, docno, score, rank, query."""
    frame = read_frame(path, ["qid", "Q0", "docno", "rank", "score", "name"])
    frame["score"] = frame["score"].astype(float)
    frame["rank"] = frame["rank"].astype(int)
    frame["docid"] = range(len(frame))  # an index's internal number: not the document's id
    frame["query"] = "what the user typed"
    return frame[["qid", "docid", "docno", "score", "rank", "query"]]


def ranx_run(path: Path) -> pd.DataFrame:
    frame = read_frame(path, ["query_id", "Q0", "doc_id", "rank", "score", "name"])
    return frame.assign(score=frame["score"].astype(float))[["query_id", "doc_id", "score"]]


def without_inputs(document: dict, spec_name: str = "bvtest.yaml") -> tuple[dict, list[list[dict]]]:
    """The report without its inputs (and its time, and the candidate as a command line gave it: a DataFrame is given
    as none), and the inputs; the spec ``spec_name`` read as bvtest.yaml."""
    inputs = [evaluation.pop("inputs") for evaluation in document["evaluations"]]
    for evaluation in document["evaluations"]:
        evaluation.pop("candidate_given", None)
    document.pop("timestamp")
    return json.loads(json.dumps(document).replace(spec_name, "bvtest.yaml")), inputs


def report(spec, use_cache: bool = False) -> dict:
    return evaluation_document(evaluate_spec(spec, use_cache=use_cache))


@pytest.mark.parametrize("frame_of", [pyterrier_run, ranx_run])
def test_a_dataframe_candidate_gives_the_report_its_file_gives(frame_of):
    file_report = report(spec_under_test(EXAMPLE / "bvtest.yaml", RUN))
    frame_report = report(spec_under_test(EXAMPLE / "bvtest.yaml", frame_of(RUN)))
    # what Reproduce names: the run's path as given; a DataFrame has none
    assert [each["candidate_given"] for each in file_report["evaluations"]] == [[str(RUN)]] * 2
    assert [each["candidate_given"] for each in frame_report["evaluations"]] == [None] * 2
    from_file, file_inputs = without_inputs(file_report)
    from_frame, frame_inputs = without_inputs(frame_report)
    assert from_frame == from_file
    # the file is listed among the inputs; the DataFrame has no file
    assert [entry for entry in frame_inputs[0] if entry["role"] == "candidate"] == []
    assert [entry["path"] for entry in file_inputs[0] if entry["role"] == "candidate"] == [str(RUN)]
    assert [entry for entry in file_inputs[0] if entry["role"] != "candidate"] == frame_inputs[0]


@pytest.mark.parametrize(
    ("columns", "grade"),
    [(["qid", "iteration", "docno", "label"], "label"), (["query_id", "it", "doc_id", "relevance"], "relevance")],
)
def test_dataframe_qrels_give_the_report_the_qrels_file_gives(tmp_path, columns, grade):
    """PyTerrier's qrels (qid, docno, label) and ir_datasets' (query_id, doc_id, relevance), with a spec that names no
    qrels file: the same report, the qrels listed as a DataFrame with the digest of their judgments."""
    qrels = read_frame(QRELS, columns)
    qrels[grade] = qrels[grade].astype(int)
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__"))
    spec_text = (project / "bvtest.yaml").read_text()
    assert "qrels: eval/qrels.txt\n" in spec_text
    # a comment in place of the key keeps every gate at its line
    (project / "without-qrels.yaml").write_text(spec_text.replace("qrels: eval/qrels.txt\n", "# qrels: given\n"))
    with pytest.raises(InputError, match="run files need relevance judgments"):
        load_spec(project / "without-qrels.yaml")
    from_file, file_inputs = without_inputs(report(load_spec(project / "bvtest.yaml")))
    given = spec_under_test(project / "without-qrels.yaml", qrels=qrels)
    # cached scores are keyed by the judgments' digest: a second evaluation reads them from the cache, unchanged
    from_frame, frame_inputs = without_inputs(report(given, use_cache=True), "without-qrels.yaml")
    again, _ = without_inputs(report(given, use_cache=True), "without-qrels.yaml")
    assert from_frame == from_file == again
    listed = [entry for entry in frame_inputs[0] if entry["role"] == "qrels"]
    assert [entry["path"] for entry in listed] == ["a DataFrame"] and len(listed[0]["sha256"]) == 64
    # the same judgments as a dict, and a spec already loaded given other judgments
    as_dict = {
        qid: dict(zip(group["docno" if "docno" in group else "doc_id"], group[grade]))
        for qid, group in qrels.groupby(columns[0], sort=False)
    }
    from_dict, _ = without_inputs(
        report(spec_under_test(project / "without-qrels.yaml", qrels=as_dict)), "without-qrels.yaml"
    )
    assert from_dict == from_file
    replaced, _ = without_inputs(report(spec_under_test(load_spec(project / "bvtest.yaml"), qrels=qrels)))
    assert replaced == from_file


def test_the_fixture_takes_dataframes():
    from pytest_bvtest.plugin.fixture import BvtestAPI

    api = BvtestAPI(use_cache=False)
    qrels = read_frame(QRELS, ["qid", "iteration", "docno", "label"]).astype({"label": int})
    evaluation = api.evaluate(EXAMPLE / "bvtest.yaml", pyterrier_run(RUN), qrels=qrels, name="risky")
    expected = evaluate_spec(spec_under_test(EXAMPLE / "bvtest.yaml", RUN, name="risky"), use_cache=False)
    assert [verdict.outcome for verdict in evaluation.gates] == [verdict.outcome for verdict in expected.gates]
    assert evaluation.statistic("mean", "risky", "nDCG@10") == expected.statistic("mean", "candidate", "nDCG@10")


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"qid": ["1"], "score": [1.0]}), "no document column"),
        (
            pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "a"], "score": [1.0, 2.0]}),
            "row 1: document 'a' appears twice",
        ),
        (pd.DataFrame({"qid": ["1"], "docno": ["a"], "score": [float("nan")]}), "row 0: score 'nan' is not a finite"),
        (pd.DataFrame({"qid": [], "docno": [], "score": []}), "has no rows"),
    ],
)
def test_a_broken_run_dataframe_is_refused_at_its_row(frame, message):
    with pytest.raises(InputError, match=message):
        spec_under_test(EXAMPLE / "bvtest.yaml", frame)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"qid": ["1"], "docno": ["a"]}), "no grade column"),
        (
            pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [1.5]}),
            "row 0: grade '1.5' of document 'a' is not a whole",
        ),
        (pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "a"], "label": [1, 2]}), "judged 2 here and 1"),
        (pd.DataFrame({"qid": ["1"], "docno": ["a"], "label": [0]}), "no grade above 0"),
    ],
)
def test_broken_qrels_dataframes_are_refused(frame, message):
    with pytest.raises(InputError, match=message):
        spec_under_test(EXAMPLE / "bvtest.yaml", qrels=frame)


def test_qrels_from_ir_datasets(tmp_path):
    """``qrels: irds:<id>``: the qrels of a dataset ir_datasets loads here without a download (one made from the
    example's qrels file, registered as ir_datasets registers its own), the same report as the file; an id
    ir_datasets does not know is one clear error at the spec's line."""
    ir_datasets = pytest.importorskip("ir_datasets")
    dataset_id = "bvtest-test/example-qrels"
    if dataset_id not in ir_datasets.registry:
        ir_datasets.registry.register(dataset_id, ir_datasets.create_dataset(qrels_trec=str(QRELS)))
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".bvtest_cache", "__pycache__"))
    spec_text = (project / "bvtest.yaml").read_text()
    (project / "irds.yaml").write_text(spec_text.replace("qrels: eval/qrels.txt", f"qrels: irds:{dataset_id}"))
    from_file, _ = without_inputs(report(load_spec(project / "bvtest.yaml")))
    from_irds, inputs = without_inputs(report(load_spec(project / "irds.yaml")), "irds.yaml")
    assert from_irds == from_file
    assert [entry["path"] for entry in inputs[0] if entry["role"] == "qrels"] == [f"irds:{dataset_id}"]
    (project / "unknown.yaml").write_text(spec_text.replace("qrels: eval/qrels.txt", "qrels: irds:no-such/dataset"))
    with pytest.raises(InputError, match=r"unknown.yaml:3: qrels: ir_datasets knows no dataset 'no-such/dataset'"):
        load_spec(project / "unknown.yaml")
