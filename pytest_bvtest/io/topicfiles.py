"""Small per-topic side files: topic weights and query variations (docs/mathematics.md §5), the topic file (query
texts, segments, traffic weights).

Both are blank-separated text (TSV or spaces). Lines whose first non-blank character is ``#`` are
comments and blank lines are skipped, as in run and qrels files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from pytest_bvtest.errors import InputError, excerpt
from pytest_bvtest.io.textfiles import data_fields, finite_number, numbered_lines

WEIGHTS_LINE = "topic weight"
TOPIC_TEXT_LINE = "topic<TAB>query text"
VARIATIONS_LINE = "query_id topic_id [user] [popularity]"


@dataclass(frozen=True)
class Variation:
    """One query issued for a topic: by ``user`` (if known), with relative ``popularity`` (if known)."""

    query_id: str
    topic_id: str
    user: str | None = None
    popularity: float | None = None


def read_topic_weights(path: str | os.PathLike[str]) -> dict[str, float]:
    """Read topic importance weights, lines ``topic weight``.

    Parameters
    ----------
    path:
        The weights file. A first line starting with ``topic`` or ``topic_id`` is a header.

    Returns
    -------
    dict[str, float]
        ``topic -> weight`` in file order, as written (docs/mathematics.md §5 normalises them to sum 1
        where they are used).

    Raises
    ------
    InputError
        Naming file and line for: a line without 2 columns, a weight that is not a finite number
        >= 0, a topic listed twice; and for a file without weights or with every weight 0.
    """
    weights: dict[str, float] = {}
    first_lines: dict[str, int] = {}
    for index, (number, fields) in enumerate(data_fields(path)):
        if index == 0 and fields[0].lower() in ("topic", "topic_id"):
            continue
        if len(fields) != 2:
            raise InputError(
                f"found {len(fields)} columns, expected 2 ({WEIGHTS_LINE})",
                path=path,
                line=number,
                hint="write one topic and its weight per line",
            )
        topic, text = fields
        weight = finite_number(text, "weight", path=path, line=number, hint="write the weight as a number such as 0.5")
        if weight < 0:
            raise InputError(
                f"weight {excerpt(text)} is negative", path=path, line=number, hint="topic weights are >= 0"
            )
        if topic in weights:
            raise InputError(
                f"topic {excerpt(topic)} is listed twice (first on line {first_lines[topic]})",
                path=path,
                line=number,
                hint="give each topic one weight",
            )
        weights[topic] = weight
        first_lines[topic] = number
    if not weights:
        raise InputError(
            "no topic weights: the file is empty or holds only comments", path=path, hint=f"a line is `{WEIGHTS_LINE}`"
        )
    if not any(weights.values()):
        raise InputError("every topic weight is 0", path=path, hint="give at least one topic a positive weight")
    return weights


def read_variations(path: str | os.PathLike[str]) -> list[Variation]:
    """Read query variations, lines ``query_id topic_id [user] [popularity]``.

    Parameters
    ----------
    path:
        The variations file. Every line has the same number of columns: 2 (query and topic),
        3 (plus the user who issued the query) or 4 (plus the query's popularity, a finite
        number > 0, relative within its topic). A first line starting with ``query_id`` is a header.

    Returns
    -------
    list[Variation]
        In file order.

    Raises
    ------
    InputError
        Naming file and line for: a column count outside 2-4 or different from the first line's,
        a popularity that is not a finite number > 0, a query id listed twice, a file without
        variations.
    """
    variations: list[Variation] = []
    first_lines: dict[str, int] = {}
    width: tuple[int, int] | None = None
    for number, fields in data_fields(path):
        if width is None:
            if not 2 <= len(fields) <= 4:
                raise InputError(
                    f"found {len(fields)} columns, expected 2 to 4 ({VARIATIONS_LINE})",
                    path=path,
                    line=number,
                    hint="3 columns mean query, topic, user; 4 add the popularity",
                )
            width = (len(fields), number)
            if fields[0].lower() == "query_id":
                continue
        elif len(fields) != width[0]:
            raise InputError(
                f"found {len(fields)} columns, but line {width[1]} has {width[0]}",
                path=path,
                line=number,
                hint=f"use the same columns on every line ({VARIATIONS_LINE})",
            )
        query_id, topic_id = fields[0], fields[1]
        if query_id in first_lines:
            raise InputError(
                f"query {excerpt(query_id)} is listed twice (first on line {first_lines[query_id]})",
                path=path,
                line=number,
                hint="give each query id one topic",
            )
        first_lines[query_id] = number
        popularity = None
        if len(fields) == 4:
            popularity = finite_number(
                fields[3], "popularity", path=path, line=number, hint="write the popularity as a number such as 0.5"
            )
            if popularity <= 0:
                raise InputError(
                    f"popularity {excerpt(fields[3])} is not positive",
                    path=path,
                    line=number,
                    hint="popularity is a relative frequency > 0; leave rare queries out rather than give them 0",
                )
        user = fields[2] if len(fields) >= 3 else None
        variations.append(Variation(query_id=query_id, topic_id=topic_id, user=user, popularity=popularity))
    if not variations:
        raise InputError(
            "no query variations: the file is empty or holds only comments",
            path=path,
            hint=f"a line is `{VARIATIONS_LINE}`",
        )
    return variations


#: The columns a topic file's header may name (docs/spec.md, "topics"), each with the names it may go by.
TOPIC_COLUMNS = {
    "topic": ("topic", "topic_id", "qid", "query_id"),
    "text": ("query", "text"),
    "segment": ("segment",),
    "weight": ("weight",),
}
#: What a segment's name may hold: it becomes part of a test id (``bvtest.yaml::nDCG@10::mean[tail]``) and of
#: what ``pytest -k`` selects.
SEGMENT_NAME = re.compile(r"[A-Za-z0-9_.+-]+")


@dataclass(frozen=True)
class TopicFile:
    """What a topic file says of each topic: its query text, its segment (head, tail, a locale, a vertical) and its
    traffic weight, each by topic id in file order; a mapping is empty when the file has no such column."""

    texts: dict[str, str]
    segments: dict[str, str]
    weights: dict[str, float]

    @property
    def segment_names(self) -> tuple[str, ...]:
        """The segments in the order they first appear."""
        return tuple(dict.fromkeys(self.segments.values()))


def _header(fields: list[str]) -> list[str] | None:
    """The columns a header line names (``topic``, ``text``, ``segment``, ``weight``), or ``None`` for a data line:
    a header names the topic column first and only known columns."""
    names = {alias: column for column, aliases in TOPIC_COLUMNS.items() for alias in aliases}
    columns = [names.get(field.strip().lower()) for field in fields]
    if columns[0] != "topic" or None in columns:
        return None
    return columns  # type: ignore[return-value]


def read_topic_file(path: str | os.PathLike[str]) -> TopicFile:
    """Read a topic file: ``topic<TAB>query text`` lines (the ``topics.tsv`` of MS MARCO, DL-HARD and ir_datasets
    exports), or tab-separated columns under a header line that names them.

    A header's first column is the topic (``topic``, ``topic_id``, ``qid`` or ``query_id``), the others any of
    ``query`` (or ``text``), ``segment`` and ``weight``, in any order: ``topic<TAB>segment<TAB>weight`` needs no
    query text. A segment is a name of letters, digits and ``_ . + -`` (it becomes part of a test id); a weight
    (traffic, importance) a finite number >= 0. Lines whose first non-blank character is ``#`` are comments.

    Raises
    ------
    InputError
        Naming file and line for: a line without query text (no header), a line with another number of columns
        than the header, a header naming a column twice, an empty cell, a segment name a test id cannot carry, a
        weight that is not a finite number >= 0, a topic listed twice; and for a file without topics.
    """
    texts: dict[str, str] = {}
    segments: dict[str, str] = {}
    weights: dict[str, float] = {}
    first_lines: dict[str, int] = {}
    columns: list[str] | None = None
    header_line = 0
    for number, line in numbered_lines(path):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not first_lines and columns is None:
            columns = _header(line.strip().split("\t"))
            if columns is not None:
                repeated = [column for column in columns if columns.count(column) > 1]
                if repeated:
                    raise InputError(
                        f"the header names the {repeated[0]} column twice",
                        path=path,
                        line=number,
                        hint="name each of topic, query, segment, weight once",
                    )
                header_line = number
                continue
        if columns is None:
            topic, text = _topic_and_text(line, path, number)
            cells = {"topic": topic, "text": text}
        else:
            values = [value.strip() for value in line.rstrip("\r\n").split("\t")]
            if len(values) != len(columns):
                raise InputError(
                    f"found {len(values)} tab-separated columns, but the header (line {header_line}) names "
                    f"{len(columns)}: {', '.join(columns)}",
                    path=path,
                    line=number,
                    hint="separate the columns with one tab each, as the header does",
                )
            cells = dict(zip(columns, values))
            empty = next((column for column in columns if not cells[column]), None)
            if empty is not None:
                raise InputError(
                    f"topic {excerpt(cells['topic'] or '(none)')} has an empty {empty} cell",
                    path=path,
                    line=number,
                    hint=f"give every topic its {empty}",
                )
        topic = cells["topic"]
        if topic in first_lines:
            raise InputError(
                f"topic {excerpt(topic)} is listed twice (first on line {first_lines[topic]})",
                path=path,
                line=number,
                hint="give each topic one line",
            )
        first_lines[topic] = number
        if "text" in cells:
            texts[topic] = cells["text"]
        if "segment" in cells:
            if not SEGMENT_NAME.fullmatch(cells["segment"]):
                raise InputError(
                    f"segment {excerpt(cells['segment'])} has a character a test id cannot carry",
                    path=path,
                    line=number,
                    hint="name segments with letters, digits, _ . + - (head, tail, de-DE, news)",
                )
            segments[topic] = cells["segment"]
        if "weight" in cells:
            weight = finite_number(
                cells["weight"], "weight", path=path, line=number, hint="write the weight as a number such as 0.5"
            )
            if weight < 0:
                raise InputError(
                    f"weight {excerpt(cells['weight'])} is negative", path=path, line=number, hint="weights are >= 0"
                )
            weights[topic] = weight
    if not first_lines:
        raise InputError(
            "no topics: the file is empty or holds only comments", path=path, hint=f"a line is `{TOPIC_TEXT_LINE}`"
        )
    return TopicFile(texts, segments, weights)


def _topic_and_text(line: str, path: str | os.PathLike[str], number: int) -> tuple[str, str]:
    """``topic<TAB>query text`` (or the first blank as the separator when the line has no tab)."""
    topic, _, text = line.strip().partition("\t") if "\t" in line else line.strip().partition(" ")
    if not text.strip():
        raise InputError(
            f"topic {excerpt(topic)} has no query text", path=path, line=number, hint=f"a line is `{TOPIC_TEXT_LINE}`"
        )
    return topic, text.strip()


def read_topic_texts(path: str | os.PathLike[str]) -> dict[str, str]:
    """Query texts by topic id (:func:`read_topic_file`), so reports can say what a hurt topic was about."""
    return read_topic_file(path).texts
