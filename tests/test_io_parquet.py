"""Per-topic tables in Parquet: the same scores and the same errors as their long CSV twins."""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_path

from pytest_bvtest.errors import InputError
from pytest_bvtest.io import tables
from pytest_bvtest.io.tables import read_score_table
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.scoring.matrix import MatrixBuilder
from pytest_bvtest.spec.measures import parse_measure
from pytest_bvtest.spec.model import ScoreTableFile
from pytest_bvtest.spec.reader import load_spec

pyarrow = pytest.importorskip("pyarrow")
parquet = pytest.importorskip("pyarrow.parquet")


def write_parquet(path: Path, columns: dict[str, list], types: dict[str, object] | None = None) -> Path:
    chosen = types or {}
    schema = pyarrow.schema([(name, chosen.get(name, _default_type(values))) for name, values in columns.items()])
    parquet.write_table(pyarrow.table(columns, schema=schema), path)
    return path


def _default_type(values: list) -> object:
    present = [value for value in values if value is not None]
    return pyarrow.float64() if present and all(isinstance(value, float) for value in present) else pyarrow.string()


def csv_twin(path: Path, columns: dict[str, list]) -> Path:
    """The long CSV a team would write from the same frame: floats as their shortest decimal, nulls as empty cells."""
    rows = zip(*columns.values())

    def text(cell: object) -> str:
        return "" if cell is None else repr(cell) if isinstance(cell, float) else str(cell)

    path.write_text(",".join(columns) + "\n" + "".join(",".join(map(text, row)) + "\n" for row in rows))
    return path


def test_a_parquet_table_gives_the_scores_of_its_csv_twin_on_a_real_trec_matrix(tmp_path: Path) -> None:
    # TREC-8 ad hoc (AH99): per-topic AP of 129 runs on 50 topics, a wide CSV from NewBestSub.
    wide = read_score_table(shared_path("newbestsub_named_matrices", "AH99.csv"), format="wide")
    cells = [(system, topic, value) for (system, _), values in wide.scores.items() for topic, value in values.items()]
    columns = {"system": [s for s, _, _ in cells], "qid": [t for _, t, _ in cells], "score": [v for _, _, v in cells]}
    from_parquet = read_score_table(write_parquet(tmp_path / "ah99.parquet", columns))
    from_csv = read_score_table(csv_twin(tmp_path / "ah99.csv", columns))
    assert from_parquet.format == "parquet" and from_csv.format == "long"
    assert from_parquet.scores == from_csv.scores == wide.scores
    assert len(from_parquet.systems()) == 129 and len(next(iter(from_parquet.scores.values()))) == 50
    # Spark and BigQuery often keep query ids as integers: they read as the same ids
    as_integers = write_parquet(
        tmp_path / "ints.parquet",
        {**columns, "qid": [int(topic) for topic in columns["qid"]]},
        {"qid": pyarrow.int64()},
    )
    assert read_score_table(as_integers).scores == wide.scores


def test_a_spec_gates_a_parquet_table_exactly_as_its_csv_twin(tmp_path: Path) -> None:
    wide = read_score_table(shared_path("newbestsub_named_matrices", "AH99.csv"), format="wide")
    systems = wide.systems()[:6]
    cells = [(system, topic, value) for system in systems for topic, value in wide.scores[(system, None)].items()]
    columns = {
        "run": [s for s, _, _ in cells],
        "topic": [t for _, t, _ in cells],
        "measure": ["AP"] * len(cells),
        "value": [v for _, _, v in cells],
    }
    write_parquet(tmp_path / "scores.parquet", columns)
    csv_twin(tmp_path / "scores.csv", columns)
    values = {}
    for table in ("scores.parquet", "scores.csv"):
        baselines = ", ".join(f"{name}: {{scores: {table}, system: '{name}'}}" for name in systems[:5])
        spec = tmp_path / f"bvtest-{table}.yaml"
        spec.write_text(
            textwrap.dedent(f"""\
            measures: [AP]
            baselines: {{{baselines}}}
            candidate: {{scores: {table}, system: '{systems[5]}', name: candidate}}
            reference: '{systems[0]}'
            gates:
              - {{statistic: mean, max_decrease: 0.01, confidence: 0.95}}
              - {{statistic: bias2_plus_var, max_increase: 5%}}
              - {{statistic: trisk, min: -2}}
            """)
        )
        evaluation = evaluate_spec(load_spec(spec), use_cache=False)
        values[table] = [(gate.passed, gate.value, gate.limit) for gate in evaluation.gates]
        values[table].append(tuple(evaluation.statistic(name) for name in ("mean", "bias2", "var", "zrisk", "gawm")))
    assert values["scores.parquet"] == values["scores.csv"]
    mean = sum(wide.scores[(systems[5], None)].values()) / 50
    assert math.isclose(values["scores.parquet"][-1][0], mean, rel_tol=1e-12)


BAD_TABLES = [
    ({"system": ["a", "a"], "topic": ["1", "2"], "value": [0.5, math.nan]}, 2, "value 'nan' is not a finite number"),
    ({"system": ["a", "a"], "topic": ["1", "2"], "value": [0.5, math.inf]}, 2, "value 'inf' is not a finite number"),
    ({"system": ["a", "a"], "topic": ["1", "2"], "value": [0.5, None]}, 2, "value '' is not a number"),
    (
        {"system": ["a", "a", "a"], "topic": ["1", "2", "1"], "value": [0.5, 0.25, 0.5]},
        3,
        "system 'a', topic '1' appears twice (first on {unit} {first})",
    ),
    ({"system": ["a", ""], "topic": ["1", "2"], "value": [0.5, 0.25]}, 2, "the system cell is empty"),
    ({"system": ["a", "a"], "topic": ["1", None], "value": [0.5, 0.25]}, 2, "the topic cell is empty"),
    (
        {"system": ["a", "a"], "topic": ["1", "2"], "measure": ["AP", "AP"], "value": ["0.5", "n/a"]},
        2,
        "value 'n/a' is not a number",
    ),
]


BAD_TABLES += [
    ({"system": ["a", "a"], "topic": ["1", "All"], "value": [0.5, 0.25]}, 2, "the topic 'All' is a summary"),
    (
        {
            "system": ["7", "7", "7"],
            "topic": ["1", "1", "1"],
            "measure": ["P@10", "AP", "P@10"],
            "value": [1.0, 0.0, 0.0],
        },
        3,
        "system '7', topic '1', measure 'P@10' appears twice (first on {unit} {first})",
    ),
]


@pytest.mark.parametrize(("columns", "row", "message"), BAD_TABLES)
def test_a_bad_cell_names_the_file_and_row_as_its_csv_twin_names_the_line(
    tmp_path: Path, columns: dict, row: int, message: str
) -> None:
    with pytest.raises(InputError) as from_parquet:
        read_score_table(write_parquet(tmp_path / "bad.parquet", columns))
    with pytest.raises(InputError) as from_csv:
        read_score_table(csv_twin(tmp_path / "bad.csv", columns))
    # a duplicate's first occurrence is row 1 of the Parquet table, line 2 of the CSV (after its header)
    in_parquet, in_csv = message.format(unit="row", first=1), message.format(unit="line", first=2)
    assert str(from_parquet.value).startswith(f"{tmp_path / 'bad.parquet'}: row {row}: {in_parquet}")
    assert str(from_csv.value).startswith(f"{tmp_path / 'bad.csv'}:{row + 1}: {in_csv}")
    assert from_parquet.value.hint == from_csv.value.hint


def test_negative_scores_are_kept_as_in_csv(tmp_path: Path) -> None:
    # a difference or a log score may be negative: the CSV reader keeps it, and so does Parquet
    columns = {"system": ["a", "a"], "topic": ["1", "2"], "value": [-0.25, -0.0]}
    scores = read_score_table(write_parquet(tmp_path / "negative.parquet", columns)).scores
    from_csv = read_score_table(csv_twin(tmp_path / "negative.csv", columns)).scores
    assert scores == from_csv == {("a", None): {"1": -0.25, "2": -0.0}}


@pytest.mark.parametrize(
    ("columns", "types", "message"),
    [
        ({"system": ["a"], "topic": ["1"], "value": [0.5], "extra": ["x"]}, {}, "unknown column 'extra' in the header"),
        ({"system": ["a"], "topic": ["1"]}, {}, "the header has no value column"),
        (
            {"system": ["a"], "topic": [1.0], "value": [0.5]},
            {"topic": pyarrow.float64()},
            "the topic column 'topic' holds double values; write the topic column as strings or integers",
        ),
        (
            {"system": ["a"], "topic": ["1"], "value": [True]},
            {"value": pyarrow.bool_()},
            "the value column 'value' holds bool values; write the value column as numbers",
        ),
        ({"system": [], "topic": [], "value": []}, {"value": pyarrow.float64()}, "no per-topic scores in the table"),
    ],
)
def test_bad_columns_name_the_file_and_the_column(tmp_path: Path, columns: dict, types: dict, message: str) -> None:
    path = write_parquet(tmp_path / "bad.parquet", columns, types)
    with pytest.raises(InputError) as error:
        read_score_table(path)
    assert str(error.value).startswith(f"{path}: {message}")


def test_a_file_that_is_not_parquet_is_one_clear_error(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(b"PAR1 this is not a Parquet file")
    with pytest.raises(InputError, match=r"damaged.parquet: cannot read the file as Parquet \(.+\); give a Parquet"):
        read_score_table(damaged)
    text = csv_twin(tmp_path / "scores.csv", {"system": ["a"], "topic": ["1"], "value": [0.5]})
    with pytest.raises(InputError, match=r"scores.csv: cannot read the file as Parquet"):
        read_score_table(text, format="parquet")
    with pytest.raises(InputError, match="missing.parquet: file not found"):
        read_score_table(tmp_path / "missing.parquet", format="parquet")


def test_without_pyarrow_a_parquet_table_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_parquet(tmp_path / "scores.parquet", {"system": ["a"], "topic": ["1"], "value": [0.5]})
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import fails as if pyarrow were absent
    with pytest.raises(InputError) as error:
        read_score_table(path)
    assert str(error.value) == (
        f"{path}: reading a Parquet table needs pyarrow, which is not installed; "
        "pip install pyarrow (the parquet extra of pytest-bvtest), or write the table as CSV"
    )


def test_a_clean_table_is_checked_and_read_by_whole_columns_with_the_rows_values(tmp_path: Path, monkeypatch) -> None:
    # integer ids, a dictionary-encoded measure, rows of two systems interleaved: the columns' path gives what
    # the row-by-row reader (the CSV twin's) gives, in the same order, without reading a row at a time
    rng = np.random.default_rng(5)
    columns = {
        "run": np.repeat(["bm25", "t5"], 6).tolist()[::-1],
        "qid": [3, 1, 2, 3, 1, 2] * 2,
        "metric": (["AP"] * 3 + ["P@10"] * 3) * 2,
        "score": rng.random(12).tolist(),
    }
    types = {"qid": pyarrow.int64(), "metric": pyarrow.dictionary(pyarrow.int32(), pyarrow.string())}
    path = write_parquet(tmp_path / "clean.parquet", columns, types)
    twin = read_score_table(csv_twin(tmp_path / "clean.csv", columns)).scores
    monkeypatch.setattr(tables, "_long_cells", lambda *arguments: pytest.fail("read row by row"))
    scores = read_score_table(path).scores
    assert scores == twin and list(scores) == list(twin) == [
        ("t5", "AP"),
        ("t5", "P@10"),
        ("bm25", "AP"),
        ("bm25", "P@10"),
    ]
    assert [list(values) for values in scores.values()] == [["3", "1", "2"]] * 4


def test_a_table_is_parsed_once_until_its_content_changes(tmp_path: Path, monkeypatch) -> None:
    path = write_parquet(tmp_path / "once.parquet", {"system": ["a"], "topic": ["1"], "value": [0.5]})
    parsed = []
    real = tables._read_score_table
    monkeypatch.setattr(tables, "_read_score_table", lambda *a, **k: parsed.append(a) or real(*a, **k))
    assert read_score_table(path).scores == read_score_table(path).scores == {("a", None): {"1": 0.5}}
    assert len(parsed) == 1
    write_parquet(path, {"system": ["a"], "topic": ["1"], "value": [0.25]})  # same size, perhaps the same mtime
    assert read_score_table(path).scores == {("a", None): {"1": 0.25}} and len(parsed) == 2


def test_a_tables_rows_as_arrays_give_the_matrix_of_its_csv_twin_in_any_row_order(tmp_path: Path) -> None:
    # the fast path keeps each (system, measure)'s scores as arrays (TopicScores, one topics tuple shared by the
    # systems that list every topic in the same order); rows of a system apart, topics in another order, a topic
    # missing (0 and imputed, as from the CSV twin) give the matrix the dictionaries of the CSV reader give
    rng = np.random.default_rng(7)
    topics = [str(topic) for topic in (5, 3, 9, 1)]
    rows = [(system, topic) for system in ("a", "b", "c") for topic in topics]
    rows[4:8] = [("b", "9"), ("b", "5"), ("b", "1"), ("b", "3")]  # b's topics in another order
    rows.append(("a", "7"))  # a's extra topic, apart from its other rows
    del rows[9]  # c lacks topic 3
    columns = {"system": [s for s, _ in rows], "topic": [int(t) for _, t in rows], "value": rng.random(len(rows))}
    columns["value"] = columns["value"].tolist()
    path = write_parquet(tmp_path / "scores.parquet", columns, {"topic": pyarrow.int64()})
    table = read_score_table(path)
    twin = read_score_table(csv_twin(tmp_path / "scores.csv", columns))
    assert table.scores == twin.scores and list(table.scores) == list(twin.scores)
    for key, values in table.scores.items():
        assert isinstance(values, tables.TopicScores) and list(values) == list(twin.scores[key])
        assert [values[topic] for topic in values] == list(twin.scores[key].values())
    assert table.scores[("b", None)].topics == ("9", "5", "1", "3") and table.scores[("c", None)].topics == (
        "5",
        "9",
        "1",
    )
    with pytest.raises(KeyError):
        table.scores[("a", None)]["2"]
    # a table whose systems list every topic in one order shares one tuple of topics: each row is taken whole
    every = {"system": [s for s in "abc" for _ in topics], "topic": topics * 3, "value": rng.random(12).tolist()}
    shared = read_score_table(write_parquet(tmp_path / "shared.parquet", every)).scores
    assert len({id(values.topics) for values in shared.values()}) == 1
    built = [
        MatrixBuilder(None).build([parse_measure("P@5")], [ScoreTableFile(table_path)])
        for table_path in (tmp_path / "shared.parquet", csv_twin(tmp_path / "shared.csv", every))
    ]
    (ours,), (theirs,) = (list(matrices.values()) for matrices in built)
    np.testing.assert_array_equal(ours.scores, theirs.scores)
    assert ours.systems == theirs.systems == ("a", "b", "c") and ours.topics == theirs.topics
    assert not ours.imputed.any()


def test_a_parquet_score_too_large_for_the_statistics_is_refused_at_its_row(tmp_path: Path) -> None:
    """The whole-column fast path sends a table with a cell above 1e100 row by row, which names the row."""
    table = write_parquet(
        tmp_path / "scores.parquet",
        {"system": ["new", "new", "prod", "prod"], "topic": ["1", "2", "1", "2"], "value": [0.5, -1e200, 0.4, 0.3]},
    )
    with pytest.raises(InputError, match=r"scores.parquet: row 2: value: '-1e\+200' is too large a score"):
        read_score_table(table)
