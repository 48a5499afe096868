"""read_qrels: TREC qrels, their errors, real judgments."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pytest
import pytrec_eval
from conftest import shared_path

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import Qrels, read_qrels


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def grade_counts(qrels: Qrels) -> dict[int, int]:
    return dict(sorted(Counter(grade for docs in qrels.judgments.values() for grade in docs.values()).items()))


def test_graded_qrels_with_comments_negative_grades_and_hash_docnos(tmp_path):
    path = write(
        tmp_path / "q.txt",
        "# judged by assessor 3\nt2 0 d1 2\n\nt2\t0\td#2\t-2\n  # indented comment\nt1 Q0 x 0\nt2 0 d3 0",
    )
    qrels = read_qrels(path)
    assert qrels == Qrels({"t2": {"d1": 2, "d#2": -2, "d3": 0}, "t1": {"x": 0}}, path=path)
    assert qrels.evaluated_topics() == ["t2"]


def test_gzip(tmp_path):
    with gzip.open(tmp_path / "q.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("1 0 a 1\n1 0 b 0\n")
    assert read_qrels(tmp_path / "q.txt.gz").judgments == {"1": {"a": 1, "b": 0}}


def test_a_repeated_judgment_with_the_same_grade_is_kept_once(tmp_path):
    path = write(tmp_path / "q.txt", "1 0 a 2\n1 0 b 0\n1 0 a 2\n")
    assert read_qrels(path).judgments == {"1": {"a": 2, "b": 0}}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1 0 b", "found 3 columns, expected 4"),
        ("1 0 b 1 extra", "found 5 columns, expected 4"),
        ("1 0 b 1.5", "grade '1.5' is not an integer"),
        ("1 0 b x", "grade 'x' is not an integer"),
        ("1 0 a 0", "document 'a' of topic '1' is judged 0 here and 2 on line 2"),
    ],
)
def test_bad_line_is_reported_with_file_and_line(tmp_path, line, message):
    path = write(tmp_path / "bad.qrels", f"# header\n1 0 a 2\n{line}\n1 0 c 1\n")
    with pytest.raises(InputError) as error:
        read_qrels(path)
    assert f"{path}:3: {message}" in str(error.value)


@pytest.mark.parametrize("text", ["", "# nothing judged yet\n\n"])
def test_a_file_without_judgments_is_an_error(tmp_path, text):
    path = write(tmp_path / "empty.qrels", text)
    with pytest.raises(InputError) as error:
        read_qrels(path)
    assert str(error.value).startswith(f"{path}: no judgments")


@pytest.mark.parametrize(
    ("task", "judgments", "grades"),
    [
        ("doc", 8544, {0: 5186, 1: 2517, 2: 485, 3: 356}),
        ("passage", 4256, {0: 2462, 1: 810, 2: 634, 3: 350}),
    ],
)
def test_dl_hard_qrels(task, judgments, grades):
    qrels = read_qrels(shared_path("dl_hard", "dataset", f"dl_hard-{task}.qrels"))
    assert len(qrels.judgments) == 50
    assert sum(map(len, qrels.judgments.values())) == judgments
    assert grade_counts(qrels) == grades
    assert len(qrels.evaluated_topics()) == 50


def test_trec_web2012_qrels_have_spam_and_navigational_grades():
    qrels = read_qrels(shared_path("trec_web2012_risk_baselines", "qrels.web.151-200.txt"))
    assert list(qrels.judgments)[:2] == ["151", "152"]
    assert len(qrels.judgments) == 50
    assert grade_counts(qrels) == {-2: 858, 0: 11674, 1: 2208, 2: 405, 3: 52, 4: 858}


def test_trec_eval_test_qrels_agree_with_pytrec_eval_and_the_commented_copy():
    folder = shared_path("trec_eval_test")
    plain = read_qrels(folder / "qrels.test")
    with open(folder / "qrels.test") as handle:
        assert plain.judgments == pytrec_eval.parse_qrel(handle)
    assert sum(map(len, plain.judgments.values())) == 3681
    # The commented copy differs only by comment lines and one docno that contains '#'.
    commented = read_qrels(folder / "qrels.test.with-comments")
    assert commented.judgments["301"].pop("CR#93E-1860") == 0
    assert plain.judgments["301"].pop("CR93E-1860") == 0
    assert commented.judgments == plain.judgments


def test_trec_eval_test_graded_and_msmarco_qrels():
    folder = shared_path("trec_eval_test")
    assert grade_counts(read_qrels(folder / "qrels.rel_level")) == {-1: 304, 0: 2818, 1: 462, 2: 14, 3: 77, 4: 6}
    msmarco = read_qrels(folder / "qrels.comment.test")
    # out.comment.test: trec_eval evaluates 31 topics of this file with the run of 301 topics.
    assert len(msmarco.judgments) == 31
    assert msmarco.judgments["2024-127266"]["msmarco_v2.1_doc_00_880019750#4_1633802806"] == 1
