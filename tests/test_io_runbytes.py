"""The fast path for well-formed run files (pytest_bvtest.io.runbytes) against the validated reader.

Whatever the fast path accepts must equal what the validated reader returns, bit for bit; whatever
it declines goes to the validated reader, so read_run_columns' result and errors stay read_run's.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest_bvtest.io.runbytes as runbytes
import pytest_bvtest.io.runs as runs_module
from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import RunColumns, read_run, read_run_columns
from pytest_bvtest.scoring.measures import _evaluate_with_pytrec_eval, evaluate_run
from pytest_bvtest.spec.measures import parse_measure


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def validated_columns(path: Path, tag: str | None = None) -> RunColumns:
    """read_run_columns with the fast path switched off."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs_module, "read_well_formed_run", lambda path, tag, hasher=None: None)
        return read_run_columns(path, tag=tag)


def assert_same_columns(fast: RunColumns, validated: RunColumns) -> None:
    assert isinstance(fast.docnos, np.ndarray) and isinstance(validated.docnos, list)
    assert fast.name == validated.name
    assert fast.tags == validated.tags
    assert fast.topics == validated.topics
    assert fast.lengths.tolist() == validated.lengths.tolist()
    assert fast.docno_strings(0, len(validated.docnos)) == validated.docnos
    # bit for bit, so -0.0 and 0.0 differ
    assert fast.scores.view(np.int64).tolist() == validated.scores.view(np.int64).tolist()


def anserini_lines(topics: int, depth: int, seed: int, separator: str = " ") -> list[str]:
    rng = random.Random(seed)
    lines = []
    for topic in range(topics):
        scores = sorted((rng.uniform(-3, 30) for _ in range(depth)), reverse=True)
        for rank, score in enumerate(scores, start=1):
            fields = [str(1000 + 7 * topic), "Q0", f"D{rng.randrange(10**7)}", str(rank), f"{score:.6f}", "Anserini"]
            lines.append(separator.join(fields))
    return lines


# --- regular files take the fast path and equal the validated reader ----------------------------


@pytest.mark.parametrize("separator", [" ", "\t"])
@pytest.mark.parametrize("ending", ["\n", ""])
def test_a_regular_run_takes_the_fast_path(tmp_path, separator, ending):
    lines = anserini_lines(topics=40, depth=100, seed=3, separator=separator)
    path = write_bytes(tmp_path / "bm25.run", ("\n".join(lines) + ending).encode())
    fast = read_run_columns(path)
    assert_same_columns(fast, validated_columns(path))
    assert fast.name == "Anserini" and len(fast.topics) == 40 and fast.scores.size == 4000
    assert fast.path == path


def test_a_gzipped_run_and_a_selected_tag(tmp_path):
    lines = anserini_lines(topics=5, depth=20, seed=4)
    path = tmp_path / "bm25.run.gz"
    with gzip.open(path, "wt", encoding="ascii") as handle:
        handle.write("\n".join(lines) + "\n")
    assert_same_columns(read_run_columns(path, tag="Anserini"), validated_columns(path, "Anserini"))
    assert read_run_columns(path, name="bm25").name == "bm25"


def test_small_blocks_long_lines_and_a_topic_split_over_the_file(tmp_path, monkeypatch):
    # Blocks of 16 bytes: every line is longer than a block, so the buffer grows and lines carry over.
    monkeypatch.setattr(runbytes, "_BLOCK_BYTES", 16)
    long_docno = "clueweb12-" + "x" * 90  # longer than a block and than 64 bytes
    text = f"7 Q0 a 1 3 s\n8 Q0 {long_docno} 1 2.5 s\n7 Q0 b 2 -0 s\n9 Q0 c 1 1e-3 s\n7 Q0 {long_docno} 3 -1 s\n"
    path = write_bytes(tmp_path / "split.run", text.encode())
    fast = read_run_columns(path)
    assert_same_columns(fast, validated_columns(path))
    assert fast.topics == ("7", "8", "9")
    assert fast.docno_strings(0, 3) == ["a", "b", long_docno]
    assert fast.scores[1] == 0 and np.signbit(fast.scores[1])  # "-0" is -0.0, as float() reads it


@pytest.mark.parametrize("ending", [b"\n\n", b"\n\n\n\n", b"\n\n\n"])
def test_empty_lines_that_end_the_file_are_read_by_the_fast_path(tmp_path, monkeypatch, ending):
    text = b"1 Q0 a 1 2 s\n1 Q0 b 2 1 s\n2 Q0 c 1 5 s" + ending
    path = write_bytes(tmp_path / "ending.run", text)
    assert runbytes.read_well_formed_run(path, None) is not None
    assert_same_columns(read_run_columns(path), validated_columns(path))
    # blocks of 8 bytes: the newlines may make a block of their own, which the validated reader then reads
    monkeypatch.setattr(runbytes, "_BLOCK_BYTES", 8)
    columns = read_run_columns(path)
    assert (columns.topics, columns.docno_strings(0, 3), columns.scores.tolist()) == (
        ("1", "2"),
        ["a", "b", "c"],
        [2, 1, 5],
    )


# --- anything unusual is left to the validated reader ------------------------------------------

UNUSUAL = {
    "a comment line": b"# run of 2024\n1 Q0 a 1 2 s\n",
    "a blank line": b"1 Q0 a 1 2 s\n\n1 Q0 b 2 1 s\n",
    "two blanks between columns": b"1 Q0 a 1  2 s\n",
    "a leading blank": b" 1 Q0 a 1 2 s\n",
    "a trailing blank": b"1 Q0 a 1 2 s \n",
    "Windows line endings": b"1 Q0 a 1 2 s\r\n1 Q0 b 2 1 s\r\n",
    "a lone carriage return": b"1 Q0 a 1 2 s\r1 Q0 b 2 1 s\n",
    "a byte-order mark": b"\xef\xbb\xbf1 Q0 a 1 2 s\n",
    "a non-ASCII docno": "1 Q0 d\u00e9j\u00e0 1 2 s\n".encode(),
    "a non-breaking space inside a docno": "1 Q0 a\u00a0b 1 2 s\n".encode(),
    "a unit separator inside a docno": b"1 Q0 a\x1fb 1 2 s\n",
    "a vertical tab": b"1 Q0 a\x0b1 2 s\n",
    "a NUL byte": b"1 Q0 a\x00 1 2 s\n",
    "a DEL byte": b"1 Q0 a\x7f 1 2 s\n",
    "five columns": b"1 Q0 a 1 2\n",
    "seven columns": b"1 Q0 a 1 2 s extra\n",
    "an underscore in a score": b"1 Q0 a 1 1_0 s\n",
    "an infinite score": b"1 Q0 a 1 inf s\n",
    "NaN": b"1 Q0 a 1 nan s\n",
    "an overflowing score": b"1 Q0 a 1 1e999 s\n",
    "a hexadecimal score": b"1 Q0 a 1 0x10 s\n",
    "a full-width digit": "1 Q0 a 1 \uff11 s\n".encode(),
    "two points": b"1 Q0 a 1 1.2.3 s\n",
    "a lone point": b"1 Q0 a 1 . s\n",
    "a sign inside a score": b"1 Q0 a 1 1-2 s\n",
    "a second tag": b"1 Q0 a 1 2 s\n1 Q0 b 2 1 t\n",
    "tags of different lengths": b"1 Q0 a 1 2 s\n1 Q0 b 2 1 st\n",
    "a repeated docno": b"1 Q0 a 1 2 s\n2 Q0 a 1 2 s\n1 Q0 a 3 0 s\n",
    "an empty file": b"",
    "only a newline": b"\n",
    "only empty lines": b"\n\n\n",
    "a line of blanks at the end": b"1 Q0 a 1 2 s\n \n",
}


@pytest.mark.parametrize("name", list(UNUSUAL))
def test_an_unusual_file_goes_to_the_validated_reader(tmp_path, name):
    path = write_bytes(tmp_path / "unusual.run", UNUSUAL[name])
    assert runbytes.read_well_formed_run(path, None) is None
    try:
        expected: object = read_run(path).scores
    except InputError as error:
        expected = str(error)
    try:
        columns = read_run_columns(path)
        got: object = columns.rankings(columns.topics)
    except InputError as error:
        got = str(error)
    assert got == expected


def test_a_selected_tag_the_file_lacks_goes_to_the_validated_reader(tmp_path):
    path = write_bytes(tmp_path / "one.run", b"1 Q0 a 1 2 s\n")
    assert runbytes.read_well_formed_run(path, "t") is None
    with pytest.raises(InputError, match="no line has the run tag 't'; the file holds 's'"):
        read_run_columns(path, tag="t")


def test_a_missing_file_gets_the_validated_readers_error(tmp_path):
    assert runbytes.read_well_formed_run(tmp_path / "absent.run", None) is None
    with pytest.raises(InputError, match="file not found"):
        read_run_columns(tmp_path / "absent.run")


# --- randomized files: accepted means equal ------------------------------------------------------

_token = st.sampled_from(["1", "2", "10", "#3", "d1", "d2", "d10", "d#4", "a\u00e9", "x" * 70])
_score = st.sampled_from(
    ["1.5", "0", "-0", "-2.25", "+.5", "5.", "1e3", "1E-3", "12.345678", "0.1", "nan", "1_0", "1.2.3", "."]
)
_separator = st.sampled_from([" "] * 6 + ["\t", "  ", " \t"])
_ending = st.sampled_from(["\n"] * 12 + ["\r\n", "\n\n"])


@st.composite
def _run_text(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 25))):
        separator = draw(_separator)
        fields = [
            draw(st.sampled_from(["1", "2", "3", "#c"])),
            "Q0",
            draw(_token),
            "1",
            draw(_score),
            draw(st.sampled_from(["A"] * 6 + ["B"])),
        ]
        lines.append(separator.join(fields) + draw(_ending))
    return "".join(lines)


@settings(
    max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_run_text(), block_bytes=st.sampled_from([16, 64, 1 << 23]), tag=st.sampled_from([None, "A", "B"]))
def test_whatever_the_fast_path_accepts_equals_the_validated_reader(tmp_path, monkeypatch, text, block_bytes, tag):
    path = write_bytes(tmp_path / "h.run", text.encode())
    with monkeypatch.context() as patch:
        patch.setattr(runbytes, "_BLOCK_BYTES", block_bytes)
        fast = runbytes.read_well_formed_run(path, tag)
    if fast is not None:
        topics, lengths, docnos, scores, file_tag = fast
        assert_same_columns(
            RunColumns(tag or file_tag, topics, lengths, docnos, scores, path, (file_tag,)),
            validated_columns(path, tag),
        )


def test_the_randomized_files_do_reach_the_fast_path(tmp_path):
    # The property above is vacuous if nothing is accepted: a plain file in its alphabet is.
    path = write_bytes(tmp_path / "plain.run", b"1 Q0 d1 1 1.5 A\n2 Q0 x 1 -0 A\n1 Q0 d#4 2 +.5 A\n")
    assert runbytes.read_well_formed_run(path, None) is not None


# --- scores: exactly float() ----------------------------------------------------------------------


def test_scores_are_read_exactly_as_float_reads_them(tmp_path):
    rng = np.random.default_rng(20261125)
    values = rng.standard_normal(3000) * 10.0 ** rng.integers(-20, 20, 3000)
    texts = [repr(float(value)) for value in values]  # shortest round-trip, exponents included
    texts += [f"{value:.6f}" for value in values[:500]] + [f"{value:.17g}" for value in values[500:1000]]
    texts += ["0.1000000000000000055511151231257827", "2.2250738585072011e-308", "9007199254740993", "-0.0"]
    texts += ["123456789012345678901234567890.5", "4.9e-324", "1.7976931348623157e308", "+7", "7.", ".7"]
    lines = [f"1 Q0 d{row} {row} {text} s" for row, text in enumerate(texts)]
    path = write_bytes(tmp_path / "scores.run", ("\n".join(lines) + "\n").encode())
    columns = read_run_columns(path)
    assert isinstance(columns.docnos, np.ndarray)
    expected = np.array([float(text) for text in texts])
    assert columns.scores.view(np.int64).tolist() == expected.view(np.int64).tolist()


# --- hash collisions never change a result ---------------------------------------------------------


def colliding_keys(docnos: np.ndarray) -> np.ndarray:
    """Every docno gets the same key: the worst case for every check that relies on the keys."""
    return np.zeros(docnos.size, dtype=np.uint64)


def test_colliding_keys_neither_invent_nor_hide_a_repeated_docno(tmp_path, monkeypatch):
    monkeypatch.setattr(runbytes, "docno_keys", colliding_keys)
    lines = anserini_lines(topics=3, depth=50, seed=5)
    distinct = write_bytes(tmp_path / "distinct.run", ("\n".join(lines) + "\n").encode())
    assert_same_columns(read_run_columns(distinct), validated_columns(distinct))
    repeated = write_bytes(tmp_path / "repeated.run", ("\n".join([*lines, lines[60]]) + "\n").encode())
    assert runbytes.read_well_formed_run(repeated, None) is None
    with pytest.raises(InputError, match=r"repeated.run:151: document .* appears twice .* \(first on line 61\)"):
        read_run_columns(repeated)


def test_colliding_keys_do_not_change_the_measures(tmp_path, monkeypatch):
    rng = random.Random(6)
    judgments = {str(1000 + 7 * topic): {} for topic in range(10)}
    lines = anserini_lines(topics=10, depth=60, seed=6)
    for line in lines:
        qid, _, docno, *_ = line.split()
        if rng.random() < 0.2:
            judgments[qid][docno] = rng.choice([0, 1, 2])
    for qid in judgments:
        judgments[qid]["unretrieved"] = 1
    path = write_bytes(tmp_path / "judged.run", ("\n".join(lines) + "\n").encode())
    measures = [parse_measure(name) for name in ("AP", "nDCG@10", "RR", "P(rel=2)@5")]
    qrels = Qrels(judgments)
    run = read_run(path)
    expected = _evaluate_with_pytrec_eval(judgments, run.scores, measures)
    monkeypatch.setattr(runbytes, "docno_keys", colliding_keys)  # the qrels' keys collide: looked up exactly
    got = evaluate_run(qrels, read_run_columns(path), measures)
    for measure in measures:
        assert got[measure] == pytest.approx(expected[measure], abs=1e-12), measure


def test_docno_keys_depend_on_the_docno_only():
    narrow = np.array([b"D1", b"D22", b"clueweb12-0000tw-00-00000"], dtype="S25")
    wide = np.array([b"D1", b"D22", b"clueweb12-0000tw-00-00000"], dtype="S32")
    assert runbytes.docno_keys(narrow).tolist() == runbytes.docno_keys(wide).tolist()
    assert len(set(runbytes.docno_keys(narrow).tolist())) == 3


def test_short_decimals_of_every_shape_are_read_exactly(tmp_path):
    # Every digit count around the 14-digit limit, every place of the point, signs, leading zeros;
    # the scores start right after a short line start, so some windows would reach before the block.
    rng = np.random.default_rng(20261126)
    texts = []
    for _ in range(20000):
        digit_count = int(rng.integers(1, 18))
        digits = "".join(map(str, rng.integers(0, 10, digit_count)))
        point = int(rng.integers(0, digit_count + 2))
        text = digits if point > digit_count else f"{digits[:point]}.{digits[point:]}"
        texts.append(str(rng.choice(["", "", "-", "+"])) + text)
    lines = [f"{row % 7} Q0 d{row} 1 {text} s" for row, text in enumerate(texts)]
    path = write_bytes(tmp_path / "shapes.run", ("\n".join(lines) + "\n").encode())
    columns = validated_columns(path)
    fast = read_run_columns(path)
    assert_same_columns(fast, columns)
    # most of them took the integer path, the rest numpy's conversion
    data = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    separators = np.flatnonzero(data <= 0x20).reshape(-1, 6)
    padded = np.concatenate((data, np.zeros(64, dtype=np.uint8)))
    _, converted = runbytes._short_decimals(padded, separators[:, 3] + 1, separators[:, 4])
    assert 0.6 < converted.mean() < 0.95
