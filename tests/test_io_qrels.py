"""read_qrels: TREC qrels, their errors, real judgments."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from conftest import shared_files, shared_path

from pytest_bvtest.errors import InputError
from pytest_bvtest.io import qrels as qrels_module
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


# --- several qrels files, and judge files read back (docs/judgments.md) ------------------------------------------


JUDGE_FILE = (
    "# bvtest judge bvtest.yaml: 3 unjudged documents\n"
    "topic\tdocno\tgrade\tleverage\tquery\trank new\tgates\n"
    "1\td9\t2\t0.5\ta query\t1\tAP::mean\n"
    "1\td8\t\t0.2\ta query\t2\tAP::mean\n"
    "2\te5\t0\t0.1\tanother\t3\tAP::mean\n"
)


def test_a_judge_file_reads_back_its_graded_rows_and_counts_the_empty_ones(tmp_path):
    from pytest_bvtest.io.qrels import read_judge_file, read_qrels_files

    (tmp_path / "official.txt").write_text("1 0 d1 1\n1 0 d2 0\n2 0 e1 2\n")
    (tmp_path / "judged.tsv").write_text(JUDGE_FILE)
    judge = read_judge_file(tmp_path / "judged.tsv")
    assert (judge.judgments, judge.graded, judge.ungraded) == ({"1": {"d9": 2}, "2": {"e5": 0}}, 2, 1)
    qrels = read_qrels_files([tmp_path / "official.txt", tmp_path / "judged.tsv"])
    assert qrels.judgments == {"1": {"d1": 1, "d2": 0, "d9": 2}, "2": {"e1": 2, "e5": 0}}
    assert qrels.paths == (tmp_path / "official.txt", tmp_path / "judged.tsv")
    assert read_qrels_files([tmp_path / "official.txt"]) == read_qrels(tmp_path / "official.txt")


def test_a_later_qrels_file_adds_judgments_and_may_not_change_one(tmp_path):
    from pytest_bvtest.io.qrels import read_qrels_files

    (tmp_path / "official.txt").write_text("1 0 d1 1\n1 0 d9 0\n2 0 e1 2\n")
    (tmp_path / "again.txt").write_text("1 0 d9 0\n2 0 e2 1\n")  # the same grade again: harmless
    assert read_qrels_files([tmp_path / "official.txt", tmp_path / "again.txt"]).judgments["2"] == {"e1": 2, "e2": 1}
    (tmp_path / "judged.tsv").write_text(JUDGE_FILE)
    with pytest.raises(InputError) as raised:
        read_qrels_files([tmp_path / "official.txt", tmp_path / "judged.tsv"])
    assert str(raised.value) == (
        f"{tmp_path / 'judged.tsv'}:3: document 'd9' of topic '1' is judged 2 here and 0 in "
        f"{tmp_path / 'official.txt'} line 2: a later qrels file adds judgments, it does not change them; remove one "
        "of the two, or edit a copy of official.txt to change its judgment"
    )


@pytest.mark.parametrize(
    ("text", "fragment", "line"),
    [
        ("topic\tdocno\tgrade\n1\td1\tgood\n", "grade 'good' is not an integer", 2),
        ("topic\tdocno\tgrade\n1 d1 2\n", "found 1 tab-separated columns, expected topic, docno and grade first", 2),
        ("topic\tdocno\tgrade\n1\td1\t2\n1\td1\t1\n", "is judged 1 here and 2 on line 2", 3),
    ],
)
def test_a_judge_files_mistakes_name_their_line(tmp_path, text, fragment, line):
    path = tmp_path / "judged.tsv"
    path.write_text(text)
    with pytest.raises(InputError) as raised:
        read_qrels(path)
    assert str(raised.value).startswith(f"{path}:{line}: ") and fragment in str(raised.value)


def test_a_judge_file_without_a_grade_filled_in_adds_nothing_and_alone_is_no_qrels(tmp_path):
    from pytest_bvtest.io.qrels import read_qrels_files

    (tmp_path / "official.txt").write_text("1 0 d1 1\n")
    (tmp_path / "empty.tsv").write_text("topic\tdocno\tgrade\n1\td2\t\n")
    assert read_qrels_files([tmp_path / "official.txt", tmp_path / "empty.tsv"]).judgments == {"1": {"d1": 1}}
    with pytest.raises(InputError, match="no judgments: the file is empty, holds only comments, or no grade is filled"):
        read_qrels(tmp_path / "empty.tsv")


# --- the fast reader of plain qrels (one pass over the whole text) against the line-by-line reader ------------------


def in_order(judgments: dict[str, dict[str, int]]) -> list:
    """Judgments with their order: topics, and documents within a topic, as first read."""
    return [(qid, list(docs.items())) for qid, docs in judgments.items()]


def read_by_lines(path: Path) -> dict[str, dict[str, int]]:
    return qrels_module._read_lines(path, None)[0]


@pytest.mark.parametrize(
    "name",
    [f"anserini_tools_qrels_topics/qrels/{name}" for name in shared_files("anserini_tools_qrels_topics/qrels", "*")]
    + [f"trec_eval_test/{name}" for name in ("qrels.test", "qrels.123", "qrels-302.test", "qrels.rel_level")]
    + ["dl19_passage_qppeval_runs/trecdl1920.qrels"],
)
def test_plain_qrels_read_whole_are_those_read_line_by_line(name):
    path = shared_path(*name.split("/"))
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    plain = qrels_module._plain_judgments(data)
    try:
        by_lines = read_by_lines(path)
    except InputError as error:  # ndeval's per-subtopic qrels judge a document twice, with two grades
        with pytest.raises(InputError) as raised:
            read_qrels(path)
        assert plain is None and str(raised.value) == str(error)
        return
    assert in_order(read_qrels(path).judgments) == in_order(by_lines)
    if plain is None:  # only a file that judges a pair twice (qrels.123) is declined
        lines = sum(1 for line in data.splitlines() if line.strip())
        assert lines > sum(map(len, by_lines.values()))
    else:
        assert in_order(plain) == in_order(by_lines)


@pytest.mark.parametrize("seed", range(20))
def test_randomized_qrels_read_the_same_whole_or_line_by_line(tmp_path, seed):
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(int(rng.integers(1, 400))):
        fields = [f"q{rng.integers(0, 12)}", str(rng.choice(["0", "Q0", "iter"])), f"d{rng.integers(0, 60)}"]
        fields.append(str(rng.choice(["0", "1", "2", "-2", "+1", "3", "007"])))
        separators = [str(rng.choice([" ", "\t", "  ", " \t"])) for _ in range(3)]
        lines.append("".join(field + separator for field, separator in zip(fields, [*separators, ""])))
    lines = list(dict.fromkeys(lines))  # exact repeats aside, a pair judged twice is left to either reader
    text = "\n".join(lines) + str(rng.choice(["", "\n", " \n"]))
    path = write(tmp_path / "q.txt", text)
    try:
        expected = in_order(read_by_lines(path))
    except InputError as error:  # a pair judged twice with two grades: the same error, at the same line
        with pytest.raises(InputError) as raised:
            read_qrels(path)
        assert str(raised.value) == str(error)
        return
    assert in_order(read_qrels(path).judgments) == expected


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("1 0 a 1\n2 0 b 0\n1 0 c 2\n", True),  # a topic in two stretches keeps its first place
        ("1 0 a 1\n1 0 a 1\n", False),  # a pair twice
        ("1 0 a 1\n# comment\n", False),
        ("1 0 a#1 1\n", False),  # any '#': the line reader decides
        ("1 0 a 1\n\n1 0 b 1\n", False),  # a blank line
        ("1 0 a 1\r\n", False),
        (" 1 0 a 1\n", False),
        ("1 0 a 1 x\n", False),
        ("1 0 a 1.0\n", False),
        ("1 0 a 99999999999\n", False),
        ("1 0 é 1\n", False),
        ("", False),
    ],
)
def test_what_the_whole_file_reader_takes_and_leaves_to_the_line_reader(text, read):
    assert (qrels_module._plain_judgments(text.encode("utf-8")) is not None) is read


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("1 0 a 2\n1 0 b\n", 2, "found 3 columns, expected 4"),
        ("1 0 a 2\n1 0 a 0\n", 2, "judged 0 here and 2 on line 1"),
        ("1 0 a 2\n1 0 b x\n", 2, "grade 'x' is not an integer"),
        ("1 0 a 2\n1 0 b 2147483648\n", 2, "outside the range"),
    ],
)
def test_a_plain_looking_file_with_a_mistake_names_its_line(tmp_path, text, line, message):
    path = write(tmp_path / "bad.qrels", text)
    with pytest.raises(InputError) as error:
        read_qrels(path)
    assert error.value.line == line and message in str(error.value)
