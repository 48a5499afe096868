"""read_run and read_run_columns.

TREC run files, their errors, the bulk path against the line-by-line path, real runs.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
import pytrec_eval
from conftest import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest_bvtest.io.runs as runs_module
from pytest_bvtest.errors import InputError
from pytest_bvtest.io.runs import Run, read_run, read_run_columns


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def synthetic_run(topics: int, depth: int, seed: int, tag: str = "sys") -> list[str]:
    """Run lines with varied spacing; a fixed seed keeps the file identical on every machine."""
    rng = random.Random(seed)
    lines = []
    for topic in range(topics):
        qid = str(1000 + topic * 7)
        for rank in range(1, depth + 1):
            separator = rng.choice([" ", "\t", "  ", " \t "])
            fields = [qid, "Q0", f"doc{rng.randrange(10**6)}-{rank}", str(rank), f"{rng.uniform(-5, 30):.6f}", tag]
            lines.append(separator.join(fields))
    return lines


# --- happy paths -------------------------------------------------------------------------------


def test_reads_scores_topics_in_file_order_and_ignores_the_rank(tmp_path):
    path = write(
        tmp_path / "a.run",
        "# a comment line\n"
        "q2 Q0 d1 1 3.5 bm25\n"
        "\n"
        "q2\tQ0\td2\tx\t-1e2\tbm25\n"  # tabs; the rank column is not validated
        "   # an indented comment\n"
        "q1   0   d9   7   0.25   bm25\n"
        "q2 Q0 d3 3 0 bm25",  # no newline at the end
    )
    run = read_run(path)
    assert run == Run(
        name="bm25",
        scores={"q2": {"d1": 3.5, "d2": -100.0, "d3": 0.0}, "q1": {"d9": 0.25}},
        path=path,
        tags=("bm25",),
    )
    assert list(run.scores) == ["q2", "q1"]


def test_hash_inside_a_docno_is_data_and_ties_stay_tied(tmp_path):
    path = write(
        tmp_path / "msmarco.run",
        "2024-1 Q0 msmarco_v2.1_doc_50_22#13_30 1 0.7 t\n"
        "2024-1 Q0 msmarco_v2.1_doc_50_22#14_31 2 0.7 t\n"
        "2024-1 Q0 #leading-hash-is-a-docno-here 3 0.5 t\n",
    )
    scores = read_run(path).scores["2024-1"]
    assert scores == {
        "msmarco_v2.1_doc_50_22#13_30": 0.7,
        "msmarco_v2.1_doc_50_22#14_31": 0.7,
        "#leading-hash-is-a-docno-here": 0.5,
    }


def test_gzip_windows_and_old_mac_line_endings(tmp_path):
    text = "1 Q0 a 1 2.0 s\n1 Q0 b 2 1.0 s\n2 Q0 a 1 0.5 s\n"
    expected = {"1": {"a": 2.0, "b": 1.0}, "2": {"a": 0.5}}
    with gzip.open(tmp_path / "r.run.gz", "wt", encoding="utf-8") as handle:
        handle.write(text)
    assert read_run(tmp_path / "r.run.gz").scores == expected
    assert read_run(write(tmp_path / "crlf.run", text.replace("\n", "\r\n"))).scores == expected
    assert read_run(write(tmp_path / "cr.run", text.replace("\n", "\r"))).scores == expected


def test_name_overrides_the_tag(tmp_path):
    run = read_run(write(tmp_path / "r.run", "1 Q0 a 1 1 tagA\n"), name="candidate")
    assert (run.name, run.tags) == ("candidate", ("tagA",))


def test_tag_selects_one_system_of_a_multi_system_file(tmp_path):
    path = write(
        tmp_path / "multi.run",
        "1 Q0 a 1 3 A\n1 Q0 a 1 9 B\n1 Q0 b 2 2 A\n2 Q0 c 1 1 B\n",  # the same docno under two tags is fine
    )
    run_b = read_run(path, tag="B")
    assert (run_b.name, run_b.tags, run_b.scores) == ("B", ("A", "B"), {"1": {"a": 9.0}, "2": {"c": 1.0}})
    assert read_run(path, tag="A").scores == {"1": {"a": 3.0, "b": 2.0}}


def test_a_topic_split_over_the_file_is_merged(tmp_path):
    path = write(tmp_path / "r.run", "1 Q0 a 1 3 s\n2 Q0 a 1 3 s\n1 Q0 b 2 2 s\n")
    assert read_run(path).scores == {"1": {"a": 3.0, "b": 2.0}, "2": {"a": 3.0}}


def test_many_blocks_agree_with_pytrec_eval(tmp_path):
    lines = synthetic_run(topics=40, depth=250, seed=7)
    path = write(tmp_path / "big.run", "\n".join(lines) + "\n")
    with open(path) as handle:
        expected = pytrec_eval.parse_run(handle)
    run = read_run(path)
    assert run.scores == expected
    assert list(run.scores) == list(expected)
    assert sum(map(len, run.scores.values())) == 10_000


# --- errors: each names file and line ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1 Q0 b 2 1.0", "found 5 columns, expected 6"),
        ("1 Q0 b 2 1.0 s extra", "found 7 columns, expected 6"),
        ("1 Q0 b 2 high s", "score 'high' is not a number"),
        ("1 Q0 b 2 nan s", "score 'nan' is not a finite number"),
        ("1 Q0 b 2 -inf s", "score '-inf' is not a finite number"),
        ("1 Q0 b 2 1e999 s", "score '1e999' is not a finite number"),
    ],
)
def test_bad_line_is_reported_with_file_and_line(tmp_path, line, message):
    path = write(tmp_path / "bad.run", f"# header comment\n1 Q0 a 1 2.0 s\n{line}\n1 Q0 c 3 0.5 s\n")
    with pytest.raises(InputError) as error:
        read_run(path)
    assert f"{path}:3: {message}" in str(error.value)


def test_duplicate_docno_names_both_lines(tmp_path):
    path = write(tmp_path / "dup.run", "1 Q0 a 1 2 s\n2 Q0 a 1 2 s\n1 Q0 b 2 1 s\n1 Q0 a 3 0 s\n")
    with pytest.raises(InputError) as error:
        read_run(path)
    assert f"{path}:4: document 'a' appears twice in topic '1' (first on line 1)" in str(error.value)


def test_several_tags_without_a_selection_lists_them(tmp_path):
    path = write(tmp_path / "multi.run", "1 Q0 a 1 2 A\n1 Q0 b 2 1 A\n1 Q0 a 1 2 B\n2 Q0 a 1 2 C\n")
    with pytest.raises(InputError) as error:
        read_run(path)
    assert f"{path}:3: a second run tag 'B'" in str(error.value)
    assert "3 systems ('A', 'B', 'C')" in str(error.value)


@pytest.mark.parametrize("block_chars", [8, 1 << 14])
def test_a_second_tag_is_found_at_a_block_boundary(tmp_path, monkeypatch, block_chars):
    # With 8-character blocks every line is a block of its own, so tag B arrives as a whole block.
    monkeypatch.setattr(runs_module, "_BLOCK_CHARS", block_chars)
    path = write(tmp_path / "multi.run", "1 Q0 a 1 2 A\n1 Q0 b 2 1 A\n1 Q0 c 3 0 B\n")
    with pytest.raises(InputError, match=rf"{path}:3: a second run tag 'B'"):
        read_run(path)
    assert read_run(path, tag="B").scores == {"1": {"c": 0.0}}


def test_unknown_tag_lists_the_tags_present(tmp_path):
    path = write(tmp_path / "multi.run", "1 Q0 a 1 2 A\n1 Q0 a 1 2 B\n")
    with pytest.raises(InputError, match=r"no line has the run tag 'Z'; the file holds 'A', 'B'"):
        read_run(path, tag="Z")


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n   \n"])
def test_a_file_without_run_lines_is_an_error(tmp_path, text):
    path = write(tmp_path / "empty.run", text)
    with pytest.raises(InputError) as error:
        read_run(path)
    assert str(error.value).startswith(f"{path}: no run lines")


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_run(tmp_path / "nope.run")


def test_a_non_utf8_line_is_named(tmp_path):
    path = tmp_path / "latin1.run"
    path.write_bytes(b"".join(b"1 Q0 d%d 1 1 s\n" % index for index in range(3000)) + b"1 Q0 caf\xe9 2 1 s\n")
    with pytest.raises(InputError, match=rf"{path}:3001: not UTF-8"):
        read_run(path)


def test_errors_deep_in_a_large_file_name_the_exact_line(tmp_path):
    lines = synthetic_run(topics=10, depth=900, seed=3)
    broken = list(lines)
    broken[6999] = broken[6999].rsplit(maxsplit=1)[0]  # line 7000 loses its tag
    path = write(tmp_path / "cols.run", "\n".join(broken) + "\n")
    with pytest.raises(InputError, match=rf"{path}:7000: found 5 columns"):
        read_run(path)

    repeated = list(lines)
    repeated[8500] = repeated[8000].replace("\t", " ")  # line 8501 repeats line 8001 (same topic)
    path = write(tmp_path / "dup.run", "\n".join(repeated) + "\n")
    with pytest.raises(InputError, match=rf"{path}:8501: document .* appears twice .* \(first on line 8001\)"):
        read_run(path)

    retagged = list(lines)
    retagged[5000] = retagged[5000].rsplit(maxsplit=1)[0] + " other"
    path = write(tmp_path / "tag.run", "\n".join(retagged) + "\n")
    with pytest.raises(InputError, match=rf"{path}:5001: a second run tag 'other'"):
        read_run(path)


# --- the bulk path and the line-by-line path apply the same rules ------------------------------

# Mostly valid lines, so that a file often reaches its rarer features (a second tag, a repeat,
# a comment) before its first error.
_line = st.tuples(
    st.sampled_from(["1"] * 4 + ["2"] * 4 + ["3", "#x"]),
    st.sampled_from(["d1", "d2", "d3", "d#4", "d5", "d6", "d7"]),
    st.sampled_from(["1.5"] * 3 + ["0", "-2", "1e3", "nan", "x", "1e999"]),
    st.sampled_from(["A"] * 5 + ["B"]),
    st.sampled_from([" ", "\t", "  "]),
    st.sampled_from(["full"] * 12 + ["short", "blank", "comment"]),
)


def _render(line: tuple[str, str, str, str, str, str]) -> str:
    qid, docno, score, tag, separator, shape = line
    fields = [qid, "Q0", docno, "1", score, tag]
    if shape == "short":
        fields = fields[:5]
    elif shape == "blank":
        return " "
    elif shape == "comment":
        return "# " + " ".join(fields)
    return separator.join(fields)


def _outcome(path: Path, tag: str | None) -> object:
    try:
        run = read_run(path, tag=tag)
    except InputError as error:
        return str(error)
    return run.name, run.tags, run.scores, [list(topic) for topic in run.scores.values()]


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(_line, min_size=1, max_size=30),
    block_chars=st.sampled_from([8, 40, 100, 1 << 14]),
    tag=st.sampled_from([None, "A", "B"]),
)
def test_bulk_and_line_by_line_parsing_agree(tmp_path, monkeypatch, lines, block_chars, tag):
    path = write(tmp_path / "h.run", "\n".join(map(_render, lines)) + "\n")
    # The fixture outlives a single example, so each example patches within its own context.
    with monkeypatch.context() as patch:
        patch.setattr(runs_module, "_BLOCK_CHARS", block_chars)
        bulk = _outcome(path, tag)
        patch.setattr(runs_module._RunReader, "read_block_in_bulk", lambda self, block: False)
        line_by_line = _outcome(path, tag)
    assert line_by_line == bulk


def _columns_outcome(path: Path, tag: str | None) -> object:
    """read_run_columns' result in _outcome's shape: its error, or its rankings as per-topic dictionaries."""
    try:
        columns = read_run_columns(path, tag=tag)
    except InputError as error:
        return str(error)
    assert int(columns.lengths.sum()) == len(columns.docnos) == columns.scores.size
    scores = columns.rankings(columns.topics)
    return columns.name, columns.tags, scores, [list(topic) for topic in scores.values()]


@settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(_line, min_size=1, max_size=30),
    block_chars=st.sampled_from([8, 40, 100, 1 << 14]),
    tag=st.sampled_from([None, "A", "B"]),
)
def test_columns_and_dictionaries_agree_on_rankings_and_errors(tmp_path, monkeypatch, lines, block_chars, tag):
    path = write(tmp_path / "h.run", "\n".join(map(_render, lines)) + "\n")
    with monkeypatch.context() as patch:
        patch.setattr(runs_module, "_BLOCK_CHARS", block_chars)
        assert _columns_outcome(path, tag) == _outcome(path, tag)


def test_columns_gather_a_topic_split_over_the_file_in_line_order(tmp_path):
    path = write(tmp_path / "r.run", "1 Q0 a 1 3 s\n2 Q0 a 1 3 s\n1 Q0 b 2 2 s\n3 Q0 c 1 1 s\n1 Q0 c 3 5 s\n")
    columns = read_run_columns(path)
    assert columns.topics == ("1", "2", "3")
    assert columns.lengths.tolist() == [3, 1, 1]
    assert columns.docno_strings(0, 5) == ["a", "b", "c", "a", "c"]
    assert columns.scores.tolist() == [3.0, 2.0, 5.0, 3.0, 1.0]


def test_columns_name_a_repeated_docno_of_a_split_topic_with_both_lines(tmp_path):
    path = write(tmp_path / "dup.run", "1 Q0 a 1 2 s\n2 Q0 a 1 2 s\n1 Q0 b 2 1 s\n1 Q0 a 3 0 s\n")
    with pytest.raises(InputError) as error:
        read_run_columns(path)
    assert f"{path}:4: document 'a' appears twice in topic '1' (first on line 1)" in str(error.value)


# --- real runs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("task", ["doc", "passage"])
def test_every_dl_hard_baseline_run(task):
    folder = shared_path("dl_hard", "dataset", "baselines", task)
    paths = sorted(folder.glob("*.run.gz"))
    assert len(paths) == {"doc": 14, "passage": 6}[task]
    for path in paths:
        run = read_run(path)
        assert len(run.scores) == 50, path
        assert all(len(docs) == 1000 for docs in run.scores.values()), path
        assert len(run.tags) == 1


def test_dl_hard_run_equals_pytrec_eval_parse():
    path = shared_path("dl_hard", "dataset", "baselines", "doc", "bm25.run.gz")
    with gzip.open(path, "rt") as handle:
        expected = pytrec_eval.parse_run(handle)
    run = read_run(path)
    assert run.scores == expected
    assert run.name == "PYSERINI"
    assert run.scores["915593"]["D3403604"] == 19.952801


@pytest.mark.parametrize(
    ("name", "lines"),
    [("rm.results-cata-filtered", 8083), ("ql.results-cata-filtered", 8060), ("rm.results-catb", 50000)],
)
def test_trec_web2012_risk_baselines(name, lines):
    run = read_run(shared_path("trec_web2012_risk_baselines", "runs", f"{name}.txt.gz"))
    assert run.tags == ("indri",)
    assert len(run.scores) == 50
    assert sum(map(len, run.scores.values())) == lines


def test_trec_eval_test_runs():
    folder = shared_path("trec_eval_test")
    standard = read_run(folder / "results.test")
    assert (standard.name, len(standard.scores), sum(map(len, standard.scores.values()))) == ("STANDARD", 3, 1500)
    assert standard.scores["301"]["FR940202-2-00150"] == 2.129133
    # MS MARCO v2.1 docnos with '#': 301 topics x 100 documents; trec_eval's num_ret over the 31
    # topics that have judgments is 3100 (out.comment.test).
    comment = read_run(folder / "results.comment.test.gz")
    assert comment.name == "comment.test"
    assert len(comment.scores) == 301
    assert all(len(docs) == 100 for docs in comment.scores.values())
    assert "msmarco_v2.1_doc_50_2286987788#13_3087841662" in comment.scores["2024-224960"]


def test_a_file_of_many_run_tags_is_named_by_its_first_ten(tmp_path: Path) -> None:
    path = tmp_path / "many.run"
    path.write_text("".join(f"1 Q0 d{i} 1 0.5 tag{i:02d}\n" for i in range(25)))
    with pytest.raises(InputError) as raised:
        read_run(path, tag="missing")
    listed = ", ".join(f"'tag{i:02d}'" for i in range(10))
    assert f"no line has the run tag 'missing'; the file holds {listed} and 15 more" in str(raised.value)
