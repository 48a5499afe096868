"""Per-topic score tables: scores a team computed elsewhere, and published TREC matrices.

Four layouts, each with a format name:

``trec_eval``
    ``trec_eval -q`` output, lines ``measure topic value``. The ``all`` summary rows are skipped,
    except ``runid all NAME``, which names the system. ``relstring`` rows (trec_eval's relevance
    strings, not numbers) are skipped too; every other row is a measure (``num_ret`` included).
``long``
    CSV or TSV with a header naming the columns ``system``, ``topic``, ``value`` and optionally
    ``measure``, in any order (synonyms in :data:`LONG_COLUMNS`, e.g. PyTerrier's
    ``name,qid,measure,value``).
``wide``
    CSV or TSV with one row per system: first cell the system, header the topic ids (the header's
    first cell is a label such as ``AP`` or ``system``).
``wide-topics``
    CSV or TSV with one row per topic and one column per system. When the header's first cell is a
    topic label (:data:`TOPIC_LABELS`) or empty, the first column holds the topic ids; otherwise
    every column is a system and the topics are numbered ``1..n`` in row order.

``parquet``
    An Apache Parquet file in the ``long`` layout: columns named as a long table's header
    (``system``, ``topic``, ``value``, optionally ``measure``), ids as strings or integers, values as
    numbers. Read with pyarrow (``pip install pyarrow``, the ``parquet`` extra), row by row with the long
    CSV's checks, so both give the same scores and the same errors, rows counted from 1.

``format="auto"`` picks the layout only when the file's shape leaves no doubt (the rules are in
``_detect_format``; a Parquet file by its ``PAR1`` magic bytes); otherwise it asks the user to state it.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_bvtest.errors import InputError, excerpt
from pytest_bvtest.io.textfiles import file_digest, finite_number, numbered_lines, require_regular_file

TABLE_FORMATS = ("trec_eval", "long", "wide", "wide-topics", "parquet")

LONG_COLUMNS: dict[str, tuple[str, ...]] = {
    "system": ("system", "run", "runid", "run_id", "name"),
    "topic": ("topic", "qid", "query_id", "topic_id", "query"),
    "measure": ("measure", "metric"),
    "value": ("value", "score"),
}
TOPIC_LABELS = LONG_COLUMNS["topic"]
SYSTEM_LABELS = LONG_COLUMNS["system"]

#: Topic ids that name a summary of the other topics, not a topic (compared in lower case).
SUMMARY_TOPICS = ("all",)

# trec_eval measures whose per-topic "value" is a string of relevance marks, not a number.
_TEXT_MEASURE_PREFIX = "relstring"

# The first bytes of every Parquet file (and its last four).
_PARQUET_MAGIC = b"PAR1"

_DELIMITERS = {".tsv": "\t", ".csv": ","}

_FORMAT_HINT = f"state the layout with format= one of {', '.join(TABLE_FORMATS)}"

TableKey = tuple[str, str | None]


@dataclass(frozen=True)
class ScoreTable:
    """Per-topic scores read from one file.

    ``scores[(system, measure)][topic]`` is the value; ``measure`` is ``None`` when the file does
    not name its measure. Systems, measures and topics keep file order.
    """

    path: Path
    format: str
    scores: dict[TableKey, Mapping[str, float]]

    def systems(self) -> list[str]:
        """The systems, in file order."""
        return list(dict.fromkeys(system for system, _ in self.scores))

    def measures(self) -> list[str | None]:
        """The measures, in file order (``[None]`` for a table that does not name its measure)."""
        return list(dict.fromkeys(measure for _, measure in self.scores))

    def for_measure(self, measure: object) -> dict[str, Mapping[str, float]]:
        """``system -> topic -> value`` for one measure.

        Parameters
        ----------
        measure:
            A measure name as the table writes it, ``None``, or a
            :class:`~pytest_bvtest.scoring.measures.Measure`, which matches a table measure written as its
            canonical name (``str(measure)``, e.g. ``nDCG@10``) or as its trec_eval label
            (``measure.trec_eval_name``, e.g. ``ndcg_cut_10``).

        A table that does not name its measure answers any request with its values. A table that
        names its measures answers only a request for one of them, and raises :class:`InputError`
        listing them otherwise: a table of ``map`` rows is never served as ``nDCG@10``. A table that
        holds both names of the requested measure answers with each system's values under either;
        a topic whose values under the two names differ is an :class:`InputError`.
        """
        measures = self.measures()
        if measures == [None]:
            chosen = None
        else:
            names = {None} if measure is None else {str(measure), getattr(measure, "trec_eval_name", None)} - {None}
            matching = [name for name in measures if name in names]
            if not matching:
                wanted = "no measure was named" if measure is None else f"none of them is {measure}"
                label = getattr(measure, "trec_eval_name", None)
                also = f" (trec_eval: {label})" if label and label != str(measure) else ""
                raise InputError(
                    f"the table holds the measure{'s' if len(measures) > 1 else ''} "
                    f"{', '.join(str(name) for name in measures)}; {wanted}{also}",
                    path=self.path,
                    hint="name one of the table's measures, or give the table with that measure's values",
                )
            if len(matching) > 1:
                return self._spellings_joined(matching)
            chosen = matching[0]
        return {system: values for (system, table_measure), values in self.scores.items() if table_measure == chosen}

    def _spellings_joined(self, spellings: list[str]) -> dict[str, dict[str, float]]:
        """Each system's values under any of ``spellings``, names of one measure (``ndcg_cut_10`` and ``nDCG@10``);
        a topic whose value differs between two of them is an :class:`InputError`, never one of them silently."""
        joined: dict[str, dict[str, float]] = {}
        spelled: dict[tuple[str, str], str] = {}
        for (system, table_measure), values in self.scores.items():
            if table_measure not in spellings:
                continue
            topics = joined.setdefault(system, {})
            for topic, value in values.items():
                earlier = topics.setdefault(topic, value)
                if earlier != value:
                    raise InputError(
                        f"system {excerpt(system)}, topic {excerpt(topic)}: {spelled[system, topic]} is {earlier!r} "
                        f"and {table_measure} is {value!r}, two names of one measure with different values",
                        path=self.path,
                        hint="keep one name of each measure in the table, or values that agree",
                    )
                spelled.setdefault((system, topic), str(table_measure))
        return joined


def read_score_table(
    path: str | os.PathLike[str],
    *,
    format: str = "auto",
    measure: str | None = None,
    system: str | None = None,
) -> ScoreTable:
    """Read a per-topic score table (``.gz`` decompressed by name; any line ending).

    Parameters
    ----------
    path:
        The table. Blank lines and lines whose first non-blank character is ``#`` are skipped.
    format:
        ``"auto"`` or one of :data:`TABLE_FORMATS` (see the module docstring).
    measure:
        For a table that does not name its measure (``wide``, ``wide-topics``, ``long`` without a
        measure column), the measure its values are; for a table that names its measures, the one
        to keep (it must be present).
    system:
        The system's name in a ``trec_eval`` table; by default its ``runid`` row, else the file
        name without ``.gz`` and its last suffix.

    Returns
    -------
    ScoreTable

    Raises
    ------
    InputError
        Naming file and line for: a value that is not a finite number, a row with the wrong number
        of cells, the same (system, topic, measure) cell twice, a header missing a column, a file
        without scores, a layout ``auto`` cannot tell.
    """
    try:  # by content: a table rewritten within the file system's time resolution is read again
        remembered: tuple | None = (os.path.realpath(path), file_digest(path), format, measure, system)
    except (OSError, InputError):
        remembered = None  # the readers below say what is wrong with the path
    if remembered is not None and remembered in _RECENT_TABLES:
        return _RECENT_TABLES[remembered]
    table = _read_score_table(path, format=format, measure=measure, system=system)
    if remembered is not None:
        if len(_RECENT_TABLES) >= _RECENT_TABLE_COUNT:
            del _RECENT_TABLES[next(iter(_RECENT_TABLES))]
        _RECENT_TABLES[remembered] = table
    return table


# The tables read last, by path, content (SHA-256, a hundredth of a parse) and options: a spec's checks and the
# score matrices parse a table once (a table of 200 systems at 7,000 topics took seconds per parse).
_RECENT_TABLES: dict[tuple, ScoreTable] = {}
_RECENT_TABLE_COUNT = 4


def _read_score_table(
    path: str | os.PathLike[str], *, format: str, measure: str | None, system: str | None
) -> ScoreTable:
    """:func:`read_score_table` without the memory of recent tables."""
    if format == "auto" and _starts_like_parquet(path):
        format = "parquet"
    if format not in ("auto", *TABLE_FORMATS):
        raise InputError(
            f"unknown table format {excerpt(format)}", path=path, hint=f"use auto or one of {', '.join(TABLE_FORMATS)}"
        )
    lines = []
    if format != "parquet":
        lines = [
            (number, line)
            for number, line in numbered_lines(path)
            if line.strip() and not line.lstrip().startswith("#")
        ]
        if not lines:
            raise InputError("no scores: the file is empty or holds only comments", path=path)
    if format == "auto":
        format = _detect_format(path, lines)
    if system is not None and format != "trec_eval":
        raise InputError(
            f"system= names the one system of a trec_eval table; a {format} table names its systems itself",
            path=path,
        )
    if format == "trec_eval":
        cells = _read_trec_eval(path, lines, system)
    elif format == "long":
        cells = _read_long(path, lines, measure)
    elif format == "parquet":
        cells = _read_parquet(path, measure)
    else:
        cells = _read_wide(path, lines, measure, rows_are_topics=format == "wide-topics")
    if measure is not None:
        cells = _keep_measure(path, cells, measure)
    if not cells:
        raise InputError("no per-topic scores in the table", path=path)
    return ScoreTable(path=Path(path), format=format, scores=cells)


def _detect_format(path: str | os.PathLike[str], lines: list[tuple[int, str]]) -> str:
    """The layout of a table's data lines (comments and blank lines removed), or an InputError.

    - ``trec_eval``: every line has 3 blank-separated fields and some line is an ``all`` row.
    - ``long``: the header names a system, a topic and a value column.
    - ``wide-topics``: the header's first cell is a topic label; or every header cell is a
      non-numeric name while every data cell is a number (no topic column; columns are systems).
    - ``wide``: the header's first cell is a system label; or the header's other cells are all
      numbers (topic ids) while some row starts with a name.
    """
    if all(len(line.split()) == 3 for _, line in lines) and any(line.split()[1] == "all" for _, line in lines):
        return "trec_eval"
    delimiter = _delimiter(path, lines[0][1])
    if delimiter is not None:
        header = _cells(lines[0][1], delimiter, path, lines[0][0])
        labels = [cell.lower() for cell in header]
        if all(any(name in labels for name in names) for key, names in LONG_COLUMNS.items() if key != "measure"):
            return "long"
        rows = [_cells(line, delimiter, path, number) for number, line in lines[1:]]
        if rows and len(header) > 1:
            if labels[0] in TOPIC_LABELS:
                return "wide-topics"
            if labels[0] in SYSTEM_LABELS:
                return "wide"
            if all(_is_number(cell) for cell in header[1:]) and not all(_is_number(row[0]) for row in rows if row):
                return "wide"
            if not any(_is_number(cell) or not cell for cell in header) and all(
                _is_number(cell) for row in rows for cell in row
            ):
                return "wide-topics"
    raise InputError(
        "cannot tell the table's layout from its shape",
        path=path,
        line=lines[0][0],
        hint=_FORMAT_HINT,
    )


def _read_trec_eval(
    path: str | os.PathLike[str], lines: list[tuple[int, str]], system: str | None
) -> dict[TableKey, dict[str, float]]:
    runid: str | None = None
    by_measure: dict[str, dict[str, float]] = {}
    first_lines: dict[tuple[str, str], int] = {}
    for number, line in lines:
        fields = line.split()
        if len(fields) != 3:
            raise InputError(
                f"found {len(fields)} fields, expected 3 (measure topic value)",
                path=path,
                line=number,
                hint="a trec_eval -q line is `measure topic value`",
            )
        measure, topic, text = fields
        if topic == "all":
            if measure == "runid":
                if runid is not None and text != runid:
                    raise InputError(
                        f"a second runid {excerpt(text)} (the first was {excerpt(runid)}): the file holds several runs",
                        path=path,
                        line=number,
                        hint="write each run's trec_eval output to its own file",
                    )
                runid = text
            continue
        if measure.startswith(_TEXT_MEASURE_PREFIX):
            continue
        values = by_measure.setdefault(measure, {})
        if topic in values:
            raise InputError(
                f"measure {excerpt(measure)} of topic {excerpt(topic)} appears twice (first on line "
                f"{first_lines[measure, topic]})",
                path=path,
                line=number,
                hint="keep one value per measure and topic",
            )
        values[topic] = _cell(text, path, number)
        first_lines[measure, topic] = number
    if not by_measure:
        raise InputError(
            "no per-topic rows, only `all` summaries",
            path=path,
            hint="run trec_eval with -q to print a value per topic",
        )
    name = system or runid or _file_stem(path)
    return {(name, measure): values for measure, values in by_measure.items()}


def _read_long(
    path: str | os.PathLike[str], lines: list[tuple[int, str]], measure: str | None
) -> dict[TableKey, dict[str, float]]:
    header_line, header_text = lines[0]
    delimiter = _delimiter(path, header_text)
    if delimiter is None:
        raise InputError(
            "the header is not comma- or tab-separated",
            path=path,
            line=header_line,
            hint="a long table starts with a header such as `system,topic,measure,value`",
        )
    header = _cells(header_text, delimiter, path, header_line)
    positions = _long_columns(path, header, header_line)
    return _long_cells(path, _rows(path, lines[1:], delimiter, len(header)), positions, measure, "line")


def _long_columns(path: str | os.PathLike[str], header: list[str], header_line: int | None) -> dict[str, int]:
    """Each role's column (``system``, ``topic``, ``value``, optionally ``measure``) by a long table's header."""
    positions: dict[str, int] = {}
    for index, label in enumerate(cell.lower() for cell in header):
        role = next((key for key, names in LONG_COLUMNS.items() if label in names), None)
        if role is None or role in positions:
            accepted = "; ".join(f"{key}: {', '.join(names)}" for key, names in LONG_COLUMNS.items())
            problem = f"unknown column {excerpt(label)}" if role is None else f"a second {role} column {excerpt(label)}"
            raise InputError(
                f"{problem} in the header",
                path=path,
                line=header_line,
                hint=f"name the columns one each of {accepted} (measure optional; save pandas frames with index=False)",
            )
        positions[role] = index
    missing = [key for key in ("system", "topic", "value") if key not in positions]
    if missing:
        raise InputError(
            f"the header has no {' or '.join(missing)} column",
            path=path,
            line=header_line,
            hint="a long table's header names system, topic, value (and optionally measure)",
        )
    return positions


def _long_cells(
    path: str | os.PathLike[str],
    rows: Iterable[tuple[int, list[str]]],
    positions: dict[str, int],
    measure: str | None,
    unit: str,
) -> dict[TableKey, dict[str, float]]:
    """A long table's scores from its rows of text cells, each numbered as a ``unit`` (a line, a row)."""
    cells: dict[TableKey, dict[str, float]] = {}
    first_rows: dict[tuple[str, str | None, str], int] = {}
    for number, row in rows:
        system = row[positions["system"]]
        topic = row[positions["topic"]]
        row_measure = row[positions["measure"]] if "measure" in positions else measure
        _require_names(path, number, system=system, topic=topic)
        _refuse_summary_topic(path, number, topic)
        key = (system, row_measure, topic)
        if key in first_rows:
            raise InputError(
                f"system {excerpt(system)}, topic {excerpt(topic)}"
                + (f", measure {excerpt(row_measure)}" if "measure" in positions else "")
                + f" appears twice (first on {unit} {first_rows[key]})",
                path=path,
                line=number,
                hint="keep one value per cell",
            )
        first_rows[key] = number
        cells.setdefault((system, row_measure), {})[topic] = _cell(row[positions["value"]], path, number)
    return cells


def _starts_like_parquet(path: str | os.PathLike[str]) -> bool:
    """Whether the file begins with Parquet's magic bytes (False when it cannot be read: the text reader says why)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(_PARQUET_MAGIC)) == _PARQUET_MAGIC
    except OSError:
        return False


def _read_parquet(path: str | os.PathLike[str], measure: str | None) -> dict[TableKey, Mapping[str, float]]:
    """A Parquet file in the long layout, through the long table's checks; errors name the row (from 1).

    Ids (system, topic, measure) must be strings or integers, values numbers (or decimal strings);
    a null is an empty cell. Each value goes through its shortest decimal text, which reads back as
    the same float, so a Parquet table and its CSV twin give the same scores and the same errors.
    """
    try:
        import pyarrow
        import pyarrow.parquet as parquet
        import pyarrow.types as types
    except ImportError:
        raise InputError(
            "reading a Parquet table needs pyarrow, which is not installed",
            path=path,
            hint="pip install pyarrow (the parquet extra of pytest-bvtest), or write the table as CSV",
        ) from None
    require_regular_file(path)
    try:
        table = parquet.read_table(path)
    except (OSError, pyarrow.ArrowException) as error:  # not a Parquet file, a damaged one, an unreadable one
        raise InputError(
            f"cannot read the file as Parquet ({str(error).splitlines()[0]})",
            path=path,
            hint="give a Parquet file, or state the table's layout with format=",
        ) from None
    header = [str(name) for name in table.column_names]
    positions = _long_columns(path, header, None)
    columns: dict[int, list[str]] = {}
    for role, index in positions.items():
        column = table.column(index)
        kind = column.type.value_type if types.is_dictionary(column.type) else column.type
        numeric = types.is_floating(kind) or types.is_decimal(kind)
        text = types.is_string(kind) or types.is_large_string(kind)
        if not (text or types.is_integer(kind) or (role == "value" and numeric)):
            wanted = "numbers" if role == "value" else "strings or integers"
            raise InputError(
                f"the {role} column {excerpt(header[index])} holds {kind} values",
                path=path,
                hint=f"write the {role} column as {wanted}",
            )
    cells = _parquet_cells(table, positions, measure)
    if cells is not None:
        return cells
    for index in positions.values():
        column = table.column(index)
        columns[index] = ["" if cell is None else _parquet_text(cell) for cell in column.to_pylist()]
    rows = (
        (number, [columns[index][number - 1] for index in range(len(header))])
        for number in range(1, table.num_rows + 1)
    )
    try:
        return _long_cells(path, rows, positions, measure, "row")
    except InputError as error:  # "FILE: row N: ..." instead of a line number a binary file does not have
        message = error.message if error.line is None else f"row {error.line}: {error.message}"
        raise InputError(message, path=path, hint=error.hint) from None


def _plain(column):  # a pyarrow ChunkedArray (pyarrow is imported where it is needed)
    """A Parquet column as one array, dictionary-encoded columns decoded."""
    import pyarrow.types as types

    array = column.combine_chunks()
    return array.dictionary_decode() if types.is_dictionary(array.type) else array


class TopicScores(Mapping[str, float]):
    """One system's per-topic scores as arrays: ``topics`` (names, in file order) and ``array`` (their float64
    values, read-only); a read-only mapping ``topic -> value`` like the dictionaries of the other readers.

    The Parquet reader gives them: a table of 200 systems at 7,000 topics holds 1.4 million values per measure,
    which as dictionaries cost a second and 400 MB; as arrays the score matrix takes each row as it is
    (:meth:`~pytest_bvtest.scoring.matrix.MatrixBuilder.build`), and systems that list the same topics in the
    same order share one ``topics`` tuple.
    """

    __slots__ = ("topics", "array", "_positions")

    def __init__(self, topics: tuple[str, ...], array: np.ndarray) -> None:
        if len(topics) != len(array):
            raise ValueError(f"{len(topics)} topics but {len(array)} values")
        array.flags.writeable = False
        self.topics, self.array = topics, array
        self._positions: dict[str, int] | None = None

    def __getitem__(self, topic: str) -> float:
        if self._positions is None:
            self._positions = {name: position for position, name in enumerate(self.topics)}
        return float(self.array[self._positions[topic]])

    def __iter__(self) -> Iterator[str]:
        return iter(self.topics)

    def __len__(self) -> int:
        return len(self.topics)

    def __repr__(self) -> str:
        return f"TopicScores({dict(zip(self.topics, self.array.tolist()))!r})"


def _parquet_cells(table, positions: dict[str, int], measure: str | None) -> dict[TableKey, Mapping[str, float]] | None:
    """A Parquet table's scores read by whole columns, or ``None`` when some row may break a long table's rules.

    The rules are checked on whole columns: an empty or missing system or topic, a topic ``all``, a missing
    measure, a missing, NaN or infinite value, a (system, topic, measure) that comes twice. ``None`` then sends
    the rows one by one through the CSV reader's checks, which find the first such row and name it. Values that
    are not floats or integers (decimals, strings) are always read row by row, through their text as a CSV cell
    would be. The rows are grouped by (system, measure) in the order of their first row, topics in file order,
    each group's scores a :class:`TopicScores`.
    """
    import pyarrow as arrow
    import pyarrow.compute as compute
    import pyarrow.types as types

    value = _plain(table.column(positions["value"]))
    if not (types.is_floating(value.type) or types.is_integer(value.type)) or value.null_count:
        return None
    if types.is_floating(value.type) and not compute.all(compute.is_finite(value)).as_py():
        return None
    largest = compute.max(compute.abs(value)).as_py() if len(value) else 0
    if largest is not None and largest > MAX_SCORE:
        return None  # the rows one by one name the first such value
    encoded: dict[str, tuple[list, np.ndarray]] = {}
    for role in ("system", "topic", "measure"):
        if role not in positions:
            continue
        column = _plain(table.column(positions[role]))
        if column.null_count:
            return None
        # the distinct ids first, then their text: an integer column's few thousand ids, not its millions of rows
        codes = column.dictionary_encode()
        names = compute.cast(codes.dictionary, arrow.string())
        if role != "measure" and compute.any(compute.equal(compute.utf8_length(names), 0)).as_py():
            return None
        encoded[role] = (names.to_pylist(), codes.indices.to_numpy(zero_copy_only=False).astype(np.int64))
    systems, system_codes = encoded["system"]
    topics, topic_codes = encoded["topic"]
    if any(topic.lower() in SUMMARY_TOPICS for topic in topics) or len(set(topics)) < len(topics):
        return None  # a summary row, or two ids that read as one (an integer and a string column cannot mix)
    measures, measure_codes = encoded.get("measure", ([measure], np.zeros(table.num_rows, dtype=np.int64)))
    groups = len(systems) * len(measures)
    group = system_codes * len(measures) + measure_codes
    cell = group * len(topics) + topic_codes
    if groups * len(topics) <= 4 * table.num_rows + (1 << 20):
        repeated = np.bincount(cell, minlength=groups * len(topics)).max(initial=0) > 1
    else:
        ordered = np.sort(cell)
        repeated = bool(np.any(ordered[1:] == ordered[:-1]))
    if repeated:
        return None  # a cell twice
    values = compute.cast(value, arrow.float64()).to_numpy(zero_copy_only=False)
    # groups in the order of their first row, rows in file order within a group
    changes = np.flatnonzero(np.diff(group)) + 1
    if len(changes) + 1 == len(np.unique(group)):  # each group's rows together (a table written group by group)
        order, bounds = np.arange(table.num_rows), changes
    else:
        first_row = np.full(groups, table.num_rows)
        np.minimum.at(first_row, group, np.arange(table.num_rows))
        order = np.argsort(first_row[group], kind="stable")
        bounds = np.flatnonzero(np.diff(group[order])) + 1
    every_topic = tuple(topics)
    topic_names = np.array(topics, dtype=object)
    cells: dict[TableKey, Mapping[str, float]] = {}
    for rows in np.split(order, bounds) if table.num_rows else []:
        key = int(group[rows[0]])
        codes = topic_codes[rows]
        in_order = len(codes) == len(topics) and bool(np.all(codes == np.arange(len(topics))))
        cells[(systems[key // len(measures)], measures[key % len(measures)])] = TopicScores(
            every_topic if in_order else tuple(topic_names[codes].tolist()), values[rows]
        )
    return cells


def _parquet_text(cell: object) -> str:
    """A Parquet cell as the text a CSV would hold: ``repr`` of a float is its shortest round-tripping decimal."""
    return repr(cell) if isinstance(cell, float) else str(cell)


def _read_wide(
    path: str | os.PathLike[str], lines: list[tuple[int, str]], measure: str | None, *, rows_are_topics: bool
) -> dict[TableKey, dict[str, float]]:
    header_line, header_text = lines[0]
    delimiter = _delimiter(path, header_text) or ","
    header = _cells(header_text, delimiter, path, header_line)
    has_row_labels = not rows_are_topics or header[0].lower() in TOPIC_LABELS or header[0] == ""
    column_names = header[1:] if has_row_labels else header
    kind = "system" if rows_are_topics else "topic"
    seen_columns: dict[str, int] = {}
    for position, name in enumerate(column_names, start=2 if has_row_labels else 1):
        if not name:
            raise InputError(
                f"header cell {position} is empty", path=path, line=header_line, hint=f"name every {kind} column"
            )
        if name in seen_columns:
            raise InputError(
                f"{kind} {excerpt(name)} names header cells {seen_columns[name]} and {position}",
                path=path,
                line=header_line,
                hint=f"give every {kind} column its own name",
            )
        seen_columns[name] = position
        if not rows_are_topics:
            _refuse_summary_topic(path, header_line, name, f"header cell {position}")
    if not column_names:
        raise InputError("the header names no columns", path=path, line=header_line, hint=_FORMAT_HINT)
    matrix: dict[str, dict[str, float]] = {}
    first_lines: dict[str, int] = {}
    for row_index, (number, row) in enumerate(_rows(path, lines[1:], delimiter, len(header)), start=1):
        row_name = row[0] if has_row_labels else str(row_index)
        values = row[1:] if has_row_labels else row
        if not row_name:
            raise InputError(
                "the first cell is empty",
                path=path,
                line=number,
                hint=f"start the row with its {'topic' if rows_are_topics else 'system'} id",
            )
        if row_name in first_lines:
            raise InputError(
                f"{'topic' if rows_are_topics else 'system'} {excerpt(row_name)} has a second row (first on line "
                f"{first_lines[row_name]})",
                path=path,
                line=number,
                hint="keep one row per " + ("topic" if rows_are_topics else "system"),
            )
        first_lines[row_name] = number
        if rows_are_topics:
            _refuse_summary_topic(path, number, row_name)
        matrix[row_name] = {
            name: _cell(text, path, number, f"column {excerpt(name)}") for name, text in zip(column_names, values)
        }
    if rows_are_topics:
        return (
            {(system, measure): {topic: matrix[topic][system] for topic in matrix} for system in column_names}
            if matrix
            else {}
        )
    return {(system, measure): values for system, values in matrix.items()}


def _keep_measure(
    path: str | os.PathLike[str], cells: dict[TableKey, Mapping[str, float]], measure: str
) -> dict[TableKey, Mapping[str, float]]:
    measures = list(dict.fromkeys(table_measure for _, table_measure in cells))
    if measure not in measures:
        raise InputError(
            f"the table has no measure {excerpt(measure)}; it holds {', '.join(str(name) for name in measures)}",
            path=path,
            hint="name one of the table's measures",
        )
    return {key: values for key, values in cells.items() if key[1] == measure}


def _rows(
    path: str | os.PathLike[str], lines: Iterable[tuple[int, str]], delimiter: str, width: int
) -> Iterable[tuple[int, list[str]]]:
    for number, line in lines:
        row = _cells(line, delimiter, path, number)
        if len(row) != width:
            raise InputError(
                f"the row has {len(row)} cells, the header has {width}",
                path=path,
                line=number,
                hint="every row needs one cell per header column (no missing or extra values)",
            )
        yield number, row


def _cells(line: str, delimiter: str, path: str | os.PathLike[str], number: int) -> list[str]:
    try:
        return [cell.strip() for cell in next(csv.reader([line], delimiter=delimiter))]
    except csv.Error as error:  # a cell beyond the csv module's 128 KiB field limit
        raise InputError(
            f"cannot split the line into cells ({error})",
            path=path,
            line=number,
            hint="a table cell holds an id or a number",
        ) from None


def _delimiter(path: str | os.PathLike[str], header: str) -> str | None:
    """The cell separator the header uses: the one its name promises (a tab for ``.tsv``, a comma for ``.csv``,
    ``.gz`` or not), else a tab before a comma (a comma inside a TSV cell, as in a system named ``bm25,rm3``,
    is text)."""
    promised = _DELIMITERS.get(Path(Path(path).name.removesuffix(".gz")).suffix.lower())
    if promised is not None and promised in header:
        return promised
    if "\t" in header:
        return "\t"
    if "," in header:
        return ","
    return None


def _require_names(path: str | os.PathLike[str], number: int, **names: str) -> None:
    for role, name in names.items():
        if not name:
            raise InputError(f"the {role} cell is empty", path=path, line=number, hint=f"name the {role} on every row")


def _refuse_summary_topic(path: str | os.PathLike[str], number: int, topic: str, where: str = "the topic") -> None:
    """A topic ``all`` is a summary of the other topics (trec_eval's ``all`` rows, the ``All`` row and column of
    pandas' ``margins=True``): read as a topic it would enter every statistic as one more topic."""
    if topic.lower() in SUMMARY_TOPICS:
        raise InputError(
            f"{where} {excerpt(topic)} is a summary of the other topics, not a topic (trec_eval writes `all` rows, "
            "pandas' margins=True an `All` row and column)",
            path=path,
            line=number,
            hint="leave the summaries out of the table (margins=False; drop trec_eval's `all` rows)",
        )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _file_stem(path: str | os.PathLike[str]) -> str:
    name = Path(path).name.removesuffix(".gz")
    return Path(name).stem or name


#: The largest magnitude of a per-topic score: the statistics square scores and sum the squares over topics (and
#: resamples), which stays finite far below 1e154. A cell of 1e308 or 1e200 overflowed them ("scores contain NaN or
#: infinite values", naming no table, then numpy's overflow warnings).
MAX_SCORE = 1e100


def _cell(text: str, path: str | os.PathLike[str], number: int, column: str = "value") -> float:
    value = finite_number(
        text,
        "value",
        path=path,
        line=number,
        hint="every cell needs a finite score (write 0 where a system scored nothing)",
    )
    if abs(value) > MAX_SCORE:
        raise InputError(
            f"{column}: {excerpt(text)} is too large a score (at most {MAX_SCORE:g} in magnitude: the statistics "
            "square the scores and sum them)",
            path=path,
            line=number,
            hint="is this column the measure's per-topic scores? rescale the measure if its values are that large",
        )
    return value
