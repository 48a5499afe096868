"""Every reader, path and spec against awkward but real inputs (issue: reliability).

Each reader gets the same tour: a UTF-8 byte-order mark, CRLF line ends, tabs mixed with spaces and
no final newline read exactly as the plain file does; bytes that are not UTF-8, a NUL byte, `1_0` and
full-width digits are errors at their line; a huge bad field is quoted as a short excerpt. Paths that
are not regular files (a FIFO, /dev/zero, /dev/urandom, a folder, a symbolic-link loop) are refused
before anything is read, so nothing hangs.
"""

from __future__ import annotations

import os
import signal
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_bvtest.cli import main
from pytest_bvtest.errors import InputError
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import read_run, read_run_columns
from pytest_bvtest.io.tables import read_score_table
from pytest_bvtest.io.topicfiles import read_topic_texts, read_topic_weights, read_variations
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.spec.reader import MAX_SPEC_VALUES, load_spec
from tests.conftest import shared_path

LONG_FIELD = "x" * 1_000_000
QUOTED_AT_MOST = 300  # characters of message beyond the path: a bad 1 MB field must not become a 1 MB line


@pytest.fixture(autouse=True)
def never_hang() -> Iterator[None]:
    """A reader that blocks on a FIFO or reads /dev/zero forever fails the test instead of hanging it."""

    def fail(signum: int, frame: Any) -> None:
        raise TimeoutError("the reader did not return within 20 s")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Reader:
    """A file format: three lines whose second holds ``{field}`` (a number, except for topic texts)."""

    suffix: str
    lines: tuple[str, str, str]
    good_field: str
    read: Callable[[Path], Any]
    numeric: bool = True

    def write(
        self,
        folder: Path,
        field: str | None = None,
        *,
        bom: bool = False,
        newline: str = "\n",
        final_newline: bool = True,
        mixed_blanks: bool = False,
    ) -> Path:
        lines = [line.replace("{field}", self.good_field if field is None else field) for line in self.lines]
        if mixed_blanks:
            lines = [
                line.replace(" ", " \t ", 1) if "," not in line else line.replace(",", " ,\t", 1) for line in lines
            ]
        text = newline.join(lines) + (newline if final_newline else "")
        path = folder / f"input{self.suffix}"
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogateescape"))
        return path


READERS = {
    "run": Reader(
        ".run", ("1 Q0 d1 1 3.0 r", "1 Q0 d2 2 {field} r", "2 Q0 d3 1 1.0 r"), "2.0", lambda p: read_run(p).scores
    ),
    # the columns of the columnar measures, read by the bytes-level fast path when the file is well formed
    "run columns": Reader(
        ".run",
        ("1 Q0 d1 1 3.0 r", "1 Q0 d2 2 {field} r", "2 Q0 d3 1 1.0 r"),
        "2.0",
        lambda p: read_run_columns(p).scores.tolist(),
    ),
    "qrels": Reader(".qrels", ("1 0 d1 1", "1 0 d2 {field}", "2 0 d3 1"), "0", lambda p: read_qrels(p).judgments),
    "trec_eval table": Reader(
        ".eval",
        ("map 1 0.5", "map 2 {field}", "map all 0.5"),
        "0.25",
        lambda p: read_score_table(p, format="trec_eval").scores,
    ),
    "long table": Reader(
        ".csv",
        ("system,topic,value", "a,1,{field}", "a,2,0.5"),
        "0.25",
        lambda p: read_score_table(p, format="long").scores,
    ),
    "topic weights": Reader(".weights", ("1 0.5", "2 {field}", "3 1"), "0.25", read_topic_weights),
    "query variations": Reader(".variations", ("q1 1 u1 0.5", "q2 1 u2 {field}", "q3 2 u1 1"), "0.25", read_variations),
    "topic texts": Reader(
        ".tsv", ("1\tfirst query", "2\tsecond {field}", "3\tthird"), "query", read_topic_texts, numeric=False
    ),
}
NUMERIC = [name for name, reader in READERS.items() if reader.numeric]


@pytest.mark.parametrize("variant", ["bom", "crlf", "cr", "no final newline", "mixed blanks"])
@pytest.mark.parametrize("name", list(READERS))
def test_encoding_marks_line_ends_and_blanks_read_as_the_plain_file(tmp_path: Path, name: str, variant: str) -> None:
    reader = READERS[name]
    plain = reader.read(reader.write(tmp_path))
    (tmp_path / "v").mkdir()
    options = {
        "bom": {"bom": True},
        "crlf": {"newline": "\r\n"},
        "cr": {"newline": "\r"},
        "no final newline": {"final_newline": False},
        "mixed blanks": {"mixed_blanks": True},
    }[variant]
    if name == "topic texts" and variant == "mixed blanks":
        options = {}  # the text after the tab is free text: blanks in it are its own
    assert reader.read(reader.write(tmp_path / "v", **options)) == plain


def test_a_bom_does_not_add_a_topic_or_rename_the_first_one(tmp_path: Path) -> None:
    """The original defect: a BOM turned topic 1 into '\\ufeff1', scored 0 as missing."""
    (tmp_path / "qrels.txt").write_bytes(b"\xef\xbb\xbf1 0 d1 1\n2 0 d2 1\n")
    (tmp_path / "run.run").write_bytes(b"\xef\xbb\xbf1 Q0 d1 1 2.0 r\n2 Q0 d2 1 1.0 r\n")
    assert list(read_qrels(tmp_path / "qrels.txt").judgments) == ["1", "2"]
    assert list(read_run(tmp_path / "run.run").scores) == ["1", "2"]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("0\udcff1", "not UTF-8 text"),  # a lone byte 0xff (surrogateescape writes it back as that byte)
        ("0\x001", "a NUL byte in this line"),
        ("\ufeff0", "a byte-order mark inside the file"),  # `cat a.run b.run` of two files saved with one
    ],
)
@pytest.mark.parametrize("name", list(READERS))
def test_non_utf8_bytes_and_nul_are_errors_at_their_line(tmp_path: Path, name: str, bad: str, message: str) -> None:
    reader = READERS[name]
    path = reader.write(tmp_path, bad)
    with pytest.raises(InputError) as error:
        reader.read(path)
    assert str(error.value).startswith(f"{path}:2: {message}")


def test_docnos_differing_by_a_nul_byte_are_not_merged(tmp_path: Path) -> None:
    """C code (trec_eval, pytrec_eval) ends a string at NUL: 'd1\\0a' and 'd1\\0b' would both be 'd1'."""
    path = tmp_path / "nul.run"
    path.write_bytes(b"1 Q0 d1\x00a 1 2.0 r\n1 Q0 d1\x00b 2 1.0 r\n")
    with pytest.raises(InputError, match=r"nul.run:1: a NUL byte in this line"):
        read_run(path)


@pytest.mark.parametrize("field", ["1_0", "\uff11\uff10", "0x10", "1,5"])
@pytest.mark.parametrize("name", NUMERIC)
def test_numbers_are_plain_ascii_decimals_as_trec_eval_reads_them(tmp_path: Path, name: str, field: str) -> None:
    """Python reads `1_0` as 10 and full-width digits as digits; trec_eval's atof reads 1 and 0."""
    reader = READERS[name]
    path = reader.write(tmp_path, field)
    if name == "long table" and field == "1,5":
        pytest.skip("a comma is the long table's delimiter: that row has one cell too many")
    with pytest.raises(InputError) as error:
        reader.read(path)
    assert str(error.value).startswith(f"{path}:2: ")
    assert "not a number" in str(error.value) or "not an integer" in str(error.value)


@pytest.mark.parametrize("name", NUMERIC)
def test_a_huge_bad_field_is_quoted_as_a_short_excerpt(tmp_path: Path, name: str) -> None:
    reader = READERS[name]
    path = reader.write(tmp_path, LONG_FIELD)
    with pytest.raises(InputError) as error:
        reader.read(path)
    text = str(error.value)
    assert text.startswith(f"{path}:2: ")
    assert "(1,000,000 characters)" in text or "field larger than field limit" in text  # csv's own limit
    assert len(text) - len(str(path)) < QUOTED_AT_MOST


@pytest.mark.parametrize("name", ["run", "qrels", "topic texts"])
def test_a_very_long_valid_line_is_read(tmp_path: Path, name: str) -> None:
    reader = READERS[name]
    long_id = "d" * 1_000_000
    lines = tuple(line.replace("d2", long_id).replace("second", long_id) for line in reader.lines)
    path = Reader(reader.suffix, lines, reader.good_field, reader.read).write(tmp_path)
    text = path.read_text()
    assert long_id in text and long_id in str(reader.read(path))


# --- grades and weights: a documented limit or a correct value, never a wrapped one ------------------------------


@pytest.mark.parametrize("grade", [str(2**31), "-2147483649", "12345678901234567890"])
def test_grades_beyond_what_trec_eval_holds_are_refused_at_their_line(tmp_path: Path, grade: str) -> None:
    path = tmp_path / "q.txt"
    path.write_text(f"1 0 d1 1\n1 0 d2 {grade}\n")
    with pytest.raises(InputError, match=rf"q.txt:2: grade '{grade}' is outside the range trec_eval can hold"):
        read_qrels(path)
    path.write_text(f"1 0 d1 1\n1 0 d2 {2**31 - 1}\n")  # the largest grade that fits is read as it is
    assert read_qrels(path).judgments["1"]["d2"] == 2**31 - 1


def test_qrels_without_a_positive_grade_name_the_file_and_its_grades(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("1 0 d1 0\n1 0 d2 -2\n2 0 d3 0\n")
    with pytest.raises(InputError) as error:
        read_qrels(path)
    assert str(error.value).startswith(f"{path}: no topic has a positive grade (the file's grades are -2, 0)")


def project(folder: Path, *, qrels: str, measures: str, extra: str = "") -> Path:
    (folder / "qrels.txt").write_text(qrels)
    (folder / "a.run").write_text("1 Q0 d1 1 2.0 a\n1 Q0 d2 2 1.0 a\n2 Q0 d3 1 1.0 a\n")
    (folder / "b.run").write_text("1 Q0 d2 1 2.0 b\n1 Q0 d1 2 1.0 b\n2 Q0 d3 1 1.0 b\n")
    spec = folder / "bvtest.yaml"
    spec.write_text(f"qrels: qrels.txt\nmeasures: {measures}\nbaselines: {{a: a.run}}\ncandidate: b.run\n{extra}")
    return spec


@pytest.mark.parametrize(
    ("measure", "grade", "limit"), [("ERR@10", 5, 4), ("nDCG@10", 513, 512), ("\"nDCG(dcg='exp-log2')@10\"", 2000, 512)]
)
def test_graded_measures_refuse_grades_above_their_limit_naming_the_line(
    tmp_path: Path, measure: str, grade: int, limit: int
) -> None:
    """A grade of 2000 made exp-log2 nDCG print nan; 1e6 made trec_eval's nDCG allocate per grade level."""
    spec = project(tmp_path, qrels=f"1 0 d1 1\n1 0 d2 {grade}\n2 0 d3 1\n", measures=f"[{measure}]")
    with pytest.raises(InputError) as error:
        evaluate_spec(load_spec(spec), use_cache=False)
    assert str(error.value).startswith(
        f"{tmp_path / 'qrels.txt'}:2: topic 1, document d2 has grade {grade}, above {limit}"
    )


def test_a_relevance_level_no_judgment_reaches_is_refused(tmp_path: Path) -> None:
    """DL-HARD's qrels grade 0..3; `AP(rel=4)` counted no document relevant, every system scored 0 on all 50
    topics, and its gates passed as OK* with a guess at the cause ('is this the run you meant to test?')."""
    qrels = shared_path("dl_hard", "dataset", "dl_hard-doc.qrels")
    runs = shared_path("dl_hard", "dataset", "baselines", "doc")
    spec = tmp_path / "bvtest.yaml"
    text = textwrap.dedent(f"""
        qrels: {qrels}
        measures: [MEASURE]
        baselines: {{bm25: {runs / "bm25.run.gz"}}}
        candidate: {runs / "bm25+rm3.run.gz"}
        reference: bm25
        gates: [{{statistic: mean, max_decrease: 0.01}}]
    """)
    spec.write_text(text.replace("MEASURE", '"AP(rel=4)"'))
    with pytest.raises(InputError) as error:
        evaluate_spec(load_spec(spec), use_cache=False)
    assert str(error.value) == (
        f"{qrels.resolve()}: AP(rel=4) counts a grade of 4 or more as relevant, but no judgment reaches 4 "
        "(the top grade is 3): every system would score 0 on every topic; use a level the qrels hold, e.g. AP(rel=3)"
    )
    spec.write_text(text.replace("MEASURE", '"AP(rel=3)"'))
    assert evaluate_spec(load_spec(spec), use_cache=False).statistic("mean", "bm25") > 0


def test_binary_measures_accept_any_grade_that_fits(tmp_path: Path) -> None:
    spec = project(tmp_path, qrels="1 0 d1 1\n1 0 d2 1000000\n2 0 d3 1\n", measures="[AP]")
    evaluation = evaluate_spec(load_spec(spec), use_cache=False)
    # b ranks d2, d1 (both relevant) on topic 1 and d3 on topic 2: AP 1 everywhere
    assert evaluation.measure("AP").system("candidate").values["mean"] == 1.0


def test_topic_weights_near_the_float_maximum_do_not_overflow_their_sum(tmp_path: Path) -> None:
    """Weights 1e308 summed to inf and zeroed every MVE; scaled first, they equal weights 1 and 1."""
    huge = project(tmp_path, qrels="1 0 d1 1\n2 0 d3 1\n", measures="[AP]", extra="analysis: {mve: {weights: w.tsv}}\n")
    (tmp_path / "w.tsv").write_text("1 1e308\n2 1e308\n")
    plain_folder = tmp_path / "plain"
    plain_folder.mkdir()
    plain = project(
        plain_folder, qrels="1 0 d1 1\n2 0 d3 1\n", measures="[AP]", extra="analysis: {mve: {weights: w.tsv}}\n"
    )
    (plain_folder / "w.tsv").write_text("1 1\n2 1\n")
    values = [
        evaluate_spec(load_spec(spec), use_cache=False).measure("AP").system("candidate").values["mve"]
        for spec in (huge, plain)
    ]
    # candidate b: AP 0.5 on topic 1 (d1 at rank 2), 1 on topic 2; MVE = mean - 2 var = 0.75 - 2 * 0.0625
    assert values[0] == values[1] == pytest.approx(0.625)


@pytest.mark.parametrize(
    ("table", "spec_measure"),
    [
        ("map 1 0.5\nmap 2 0.25\nrunid all b\n", "nDCG@10"),
        ("system,topic,measure,value\nb,1,AP,0.5\nb,2,AP,0.25\n", "nDCG@10"),
    ],
)
def test_a_table_of_one_named_measure_is_never_served_as_another(tmp_path: Path, table: str, spec_measure: str) -> None:
    (tmp_path / "qrels.txt").write_text("1 0 d1 1\n2 0 d3 1\n")
    (tmp_path / "a.run").write_text("1 Q0 d1 1 2.0 a\n2 Q0 d3 1 1.0 a\n")
    (tmp_path / "b.tsv").write_text(table)
    (tmp_path / "bvtest.yaml").write_text(
        f"qrels: qrels.txt\nmeasures: [{spec_measure}]\nbaselines: {{a: a.run}}\ncandidate: "
        f"{{scores: b.tsv, system: b}}\n"
    )
    with pytest.raises(
        InputError, match=rf"b.tsv: the table holds the measure (map|AP); none of them is {spec_measure}"
    ):
        evaluate_spec(load_spec(tmp_path / "bvtest.yaml"), use_cache=False)


def test_a_table_that_names_no_measure_is_not_served_as_several(tmp_path: Path) -> None:
    """Benham's Robust04 table holds AP and names no measure; with `measures: [AP, nDCG@10]` its AP values were
    gated and reported as nDCG@10 too ('mean nDCG@10 0.3229', the AP mean), without a word."""
    table = shared_path("benham_bayesian_risk", "rb04_data.csv")
    spec = tmp_path / "bvtest.yaml"
    text = f"measures: [MEASURES]\nbaselines: {table}\ncandidate: Chal. 1\nreference: Champion\n"
    text += "gates: [{statistic: mean, max_decrease: 0.01}]\n"
    spec.write_text(text.replace("MEASURES", "AP, nDCG@10"))
    with pytest.raises(InputError) as error:
        evaluate_spec(load_spec(spec), use_cache=False)
    assert str(error.value) == (
        f"{table.resolve()}: the table names no measure, yet the spec asks for 2 (AP, nDCG@10): its values would be "
        "reported as each of them; give the spec the one measure the table holds, or a table with a measure "
        "column (system,topic,measure,value) for each"
    )
    spec.write_text(text.replace("MEASURES", "AP"))
    assert evaluate_spec(load_spec(spec), use_cache=False).statistic("mean", "Chal. 1") == pytest.approx(
        0.32285, abs=1e-5
    )


# --- paths --------------------------------------------------------------------------------------------------------


def special_path(tmp_path: Path, kind: str) -> Path:
    if kind == "fifo":
        path = tmp_path / "pipe.run"
        os.mkfifo(path)
        return path
    if kind == "folder":
        path = tmp_path / "folder.run"
        path.mkdir()
        return path
    if kind == "symlink loop":
        (tmp_path / "loop1.run").symlink_to(tmp_path / "loop2.run")
        (tmp_path / "loop2.run").symlink_to(tmp_path / "loop1.run")
        return tmp_path / "loop1.run"
    return Path(kind)


KINDS = {
    "fifo": "is a named pipe (FIFO), not a file",
    "/dev/zero": "is a device, not a file",
    "/dev/urandom": "is a device, not a file",
    "folder": "is a folder, not a file",
    "symlink loop": "is a symbolic link loop, not a file",
}


#: A run is read once from a pipe (`<(zcat run.gz)`); a FIFO nobody writes to gives nothing, and that is the error.
PIPE_GAVE_NOTHING = "the pipe gave nothing to read (no process writes to it, or the command feeding it failed)"


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(READERS))
def test_paths_that_are_not_regular_files_are_refused_before_reading(tmp_path: Path, name: str, kind: str) -> None:
    path = special_path(tmp_path, kind)
    with pytest.raises(InputError) as error:
        READERS[name].read(path)
    expected = PIPE_GAVE_NOTHING if kind == "fifo" and name.startswith("run") else KINDS[kind]
    assert str(error.value).startswith(f"{path}: {expected}")  # how fast: benchmarks/bench_refusals.py


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_spec_or_a_spec_entry_that_is_not_a_regular_file_is_one_line(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = special_path(tmp_path, kind)
    assert main(["check", str(path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"bvtest: error: {path}: the spec {KINDS[kind]}; ") and error.count("\n") == 1
    spec = project(tmp_path, qrels="1 0 d1 1\n2 0 d3 1\n", measures="[AP]")
    spec.write_text(spec.read_text().replace("a: a.run", f"a: {path}"))
    assert main(["check", str(spec)]) == 2
    assert (
        capsys.readouterr().err
        == f"bvtest: error: {spec}:3: baselines.a: {os.path.realpath(path)} {KINDS[kind]}; name the file itself\n"
    )


def test_spaces_and_non_ascii_in_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "my search ü 検索"
    folder.mkdir()
    spec = project(
        folder,
        qrels="1 0 d1 1\n2 0 d3 1\n",
        measures="[AP]",
        extra="reference: a\ngates:\n  - {statistic: mean, max_decrease: 0.5}\n",
    )
    (folder / "b.run").rename(folder / "new run é.run")
    spec.write_text(spec.read_text().replace("candidate: b.run", "candidate: new run é.run"))
    assert main(["check", str(spec), "--json", str(folder / "report ü.json")]) == 0
    assert (folder / "report ü.json").exists()
    assert "1 gate, 0 failed" in capsys.readouterr().out


# --- specs --------------------------------------------------------------------------------------------------------


def spec_error(tmp_path: Path, text: str) -> str:
    (tmp_path / "qrels.txt").write_text("1 0 d1 1\n")
    (tmp_path / "a.run").write_text("1 Q0 d1 1 2.0 a\n")
    path = tmp_path / "bvtest.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    with pytest.raises(InputError) as error:
        load_spec(path)
    message = str(error.value)
    assert message.startswith(f"{path}:")
    return message.removeprefix(f"{path}:")


def test_a_yaml_alias_bomb_is_refused_without_expanding_it(tmp_path: Path) -> None:
    """9^9 = 387 million values if expanded; how fast and in how much memory: benchmarks/bench_refusals.py."""
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    levels += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8)]
    message = spec_error(tmp_path, "\n".join(levels) + "\n")
    assert f"the spec expands to more than {MAX_SPEC_VALUES:,} values" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "qrels: !!python/object/apply:os.system ['echo owned']\n",
            "1: the YAML tag '!!python/object/apply:os.system' is not allowed",
        ),
        (
            "measures: [AP]\nqrels: !!python/name:os.system\n",
            "2: the YAML tag '!!python/name:os.system' is not allowed",
        ),
        ("measures: [AP]\n!!python/name:os.getcwd : 1\n", "2: the YAML tag '!!python/name:os.getcwd' is not allowed"),
        ("measures: !custom [AP]\n", "1: the YAML tag '!custom' is not allowed"),
        ("? [a, b]\n: 1\n", "1: a list where a key belongs"),
        ("measures: [AP]\n? {a: 1}\n: 1\n", "2: a mapping where a key belongs"),
        ("measures: [AP]\nqrels: qrels.txt\nmeasures: [P@10]\n", "3: key 'measures' appears twice (first on line 1)"),
        (
            "measures: [AP]\nanalysis:\n  risk_alpha: 1\n  risk_alpha: 2\n",
            "4: key 'risk_alpha' appears twice (first on line 3)",
        ),
        ("measures: [AP]\nanalysis: {risk_alpha: 1" + "0" * 400 + "}\n", "2: analysis.risk_alpha: '1000000000"),
        (
            "measures: [AP]\nbaselines: {a: a.run}\ncandidate: a.run\ngates:\n  - {statistic: [mean], min: 0}\n",
            "5: gates[0].statistic: unknown statistic ['mean']",
        ),
        (
            "measures: [AP]\nbaselines: {a: a.run}\ncandidate: a.run\ngates:\n  - {statistic: mean, min: 0, "
            "reference: [a]}\n",
            "5: gates[0].reference: ['a'] is not a baseline",
        ),
        ("measures: [AP(rel=0)]\n", "1: measures[0]: measure 'AP(rel=0)': rel must be an integer grade from 1"),
        (
            "measures: [nDCG@99999999999999999999]\n",
            "1: measures[0]: measure 'nDCG@99999999999999999999': the cutoff must be",
        ),
        ("measures: [AP]\nqrels: " + "q" * 5000 + "\n", "2: qrels: expected a file path, got str 'qqqq"),
        ("measures: [" + "m" * 5000 + "]\n", "1: measures[0]: measure 'mmmm"),
        ("measures: [AP]\nanalysis:\n\trisk_alpha: 1\n", "3: invalid YAML"),
        (
            "measures: [AP]\nanalysis:\n  bootstrap: {resamples: 100000000000}\n",
            "3: analysis.bootstrap.resamples: must be at most 100,000, got 100,000,000,000",
        ),
        (
            "measures: [AP]\nanalysis:\n  grouping: {by: random, repeats: 100001}\n",
            "3: analysis.grouping.repeats: must be at most 100,000",
        ),
        (
            "measures: [AP]\nanalysis:\n  simulation: {samples: 100001}\n",
            "3: analysis.simulation.samples: must be at most 100,000",
        ),
    ],
)
def test_spec_mistakes_are_one_line_naming_the_line(tmp_path: Path, text: str, expected: str) -> None:
    message = spec_error(tmp_path, text)
    assert message.startswith(expected)
    assert len(message) < 500


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ("measures: 5\n", "measures", 1),
        ("measures: [AP]\nbaselines: 3\n", "baselines", 2),
        ("measures: [AP]\ngates: {statistic: mean}\n", "gates", 2),
        ("measures: [AP]\nanalysis: [a]\n", "analysis", 2),
        ("measures: [AP]\ncache: 3\n", "cache", 2),
        ("measures: [AP]\nanalysis:\n  risk_alpha: high\n", "analysis.risk_alpha", 3),
        ("measures: [AP]\nanalysis:\n  bootstrap: {resamples: 1.5}\n", "analysis.bootstrap.resamples", 3),
        ("measures: [AP]\nqrels: {file: qrels.txt}\n", "qrels", 2),
        ("measures: [AP]\nbaselines: {a: {run: a.run, tag: [x]}}\n", "baselines.a.tag", 2),
        (
            "measures: [AP]\nbaselines: {a: a.run}\ncandidate: a.run\ngates:\n  - {statistic: mean, min: 0, "
            "confidence: high}\n",
            "gates[0].confidence",
            5,
        ),
    ],
)
def test_a_key_with_a_wrong_type_names_the_key_and_its_line(tmp_path: Path, text: str, key: str, line: int) -> None:
    assert spec_error(tmp_path, text).startswith(f"{line}: {key}: ")


def test_a_spec_pointing_at_a_system_file_does_not_dump_it(tmp_path: Path) -> None:
    """An untrusted spec naming /etc/passwd (or any file) as qrels gets one line, not the file's content."""
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:" + "s" * 10_000 + ":/root:/bin/bash\nuser:x:1000:1000::/home/user:/bin/sh\n")
    spec = project(tmp_path, qrels="1 0 d1 1\n", measures="[AP]")
    spec.write_text(spec.read_text().replace("qrels: qrels.txt", f"qrels: {secret}"))
    with pytest.raises(InputError) as error:
        evaluate_spec(load_spec(spec), use_cache=False)
    assert str(error.value).startswith(f"{secret}:1: found 1 columns") and "ssssssssss" not in str(error.value)


def test_an_id_quoted_in_an_error_is_a_short_excerpt(tmp_path: Path) -> None:
    path = tmp_path / "twice.run"
    long_id = "d" * 100_000
    path.write_text(f"1 Q0 {long_id} 1 2.0 r\n1 Q0 {long_id} 2 1.0 r\n")
    with pytest.raises(InputError) as error:
        read_run(path)
    text = str(error.value)
    assert text.startswith(f"{path}:2: document 'dddd") and "(100,000 characters) appears twice in topic '1'" in text
    assert len(text) - len(str(path)) < QUOTED_AT_MOST


def test_a_spec_larger_than_a_spec_needs_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "bvtest.yaml"
    path.write_text("measures: [AP]\n" + "# padding\n" * 120_000)
    with pytest.raises(
        InputError, match=r"bvtest.yaml: the spec is 1,200,015 bytes, more than a spec needs \(1,048,576 at most\)"
    ):
        load_spec(path)


# --- files that are not text: refused in their first block, in bounded memory ------------------------------------
# The real sizes (a 2 GB sparse run, 200 MB of NUL bytes, a 2 GB qrels of NUL bytes) are measured by hand in
# docs/troubleshooting.md; here the same files are small and the limits lowered.


@pytest.mark.parametrize("name", list(READERS))
@pytest.mark.parametrize("compressed", [False, True])
def test_a_file_of_nul_bytes_is_refused_at_its_first_byte(tmp_path: Path, name: str, compressed: bool) -> None:
    """`truncate -s 2G x.run` took 5.2 GB and more than 10 minutes (the fast path carried a line without end), 200 MB
    of NUL bytes 2.3 GB before its error, and a 2 GB NUL qrels ended in a MemoryError traceback."""
    import gzip

    path = tmp_path / f"zeros{READERS[name].suffix}{'.gz' if compressed else ''}"
    path.write_bytes(gzip.compress(bytes(1 << 20)) if compressed else bytes(1 << 20))
    with pytest.raises(InputError) as error:
        READERS[name].read(path)
    assert str(error.value).startswith(f"{path}:1: the file starts with a NUL byte: not a text file"), str(error.value)
    assert "check that the file was written completely" in str(error.value)


def test_a_run_of_nul_bytes_is_refused_before_it_is_hashed_whole(tmp_path: Path) -> None:
    """The score cache hashes a run before reading it: a sparse run is refused in the hash's first block."""
    from pytest_bvtest.io.textfiles import file_digest

    path = tmp_path / "sparse.run"
    with open(path, "wb") as sparse:
        sparse.truncate(1 << 30)  # 1 GiB, no block of it on the disk
    with pytest.raises(InputError, match="the file starts with a NUL byte"):
        file_digest(path)
    gzipped = tmp_path / "run.gz"
    gzipped.write_bytes(b"\x1f\x8b" + bytes(100))  # a NUL after the start is the hash's business, not an error
    assert len(file_digest(gzipped)) == 64


@pytest.mark.parametrize("name", ["run", "qrels", "topic texts", "long table"])
def test_a_nul_byte_deep_in_a_file_is_an_error_at_its_line(tmp_path: Path, name: str) -> None:
    reader = READERS[name]
    path = reader.write(tmp_path)
    path.write_bytes(path.read_bytes() * 3 + b"\x00\x00\n")
    with pytest.raises(InputError) as error:
        reader.read(path)
    assert str(error.value).startswith(f"{path}:10: a NUL byte in this line"), str(error.value)


@pytest.mark.parametrize("name", ["run", "run columns", "qrels", "topic texts", "long table"])
def test_a_line_without_end_is_refused_once_longer_than_a_line_may_be(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file without line breaks was read into memory as one line; the limit (32 MiB) lowered to 1,000 bytes."""
    from pytest_bvtest.io import textfiles

    monkeypatch.setattr(textfiles, "MAX_LINE_BYTES", 1_000)
    reader = READERS[name]
    path = reader.write(tmp_path)
    path.write_bytes(path.read_bytes() + b"x" * 100_000)
    with pytest.raises(InputError) as error:
        reader.read(path)
    assert str(error.value).startswith(f"{path}:4: a line longer than 1,000 bytes (a binary file"), str(error.value)
    path.write_bytes(reader.write(tmp_path).read_bytes() + b"x" * 900 + b"\n")  # 900 bytes: a line
    with pytest.raises(InputError, match=f"{path}:4: (?!a line longer)"):
        reader.read(path)


def test_the_fast_path_declines_a_line_longer_than_it_carries_having_read_a_block_or_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path carried an unfinished line over, block after block (a 2 GB line, 5.2 GB of memory); now it stops
    past 1 MiB (lowered to a block here) and the validated reader names the line."""
    from pytest_bvtest.io import runbytes

    monkeypatch.setattr(runbytes, "_BLOCK_BYTES", 4_096)
    monkeypatch.setattr(runbytes, "_LONGEST_LINE", 4_096)
    read = []
    opened = runbytes.open_bytes

    def counting(*arguments: Any, **keywords: Any) -> Any:
        handle = opened(*arguments, **keywords)
        original = handle.readinto
        handle.readinto = lambda buffer: read.append(original(buffer)) or read[-1]  # type: ignore[method-assign]
        return handle

    monkeypatch.setattr(runbytes, "open_bytes", counting)
    path = tmp_path / "long.run"
    path.write_bytes(b"1 Q0 d1 1 3.0 r\n" + b"x" * 1_000_000)
    assert runbytes.read_well_formed_run(path, None) is None
    assert read and sum(read) <= 3 * 4_096 + 16
    path.write_bytes(bytes(1_000_000))
    assert runbytes.read_well_formed_run(path, None) is None and sum(read) <= 4 * 4_096 + 16
