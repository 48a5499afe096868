"""Small per-topic side files: topic weights and query variations (docs/mathematics.md §5), query texts.

Both are blank-separated text (TSV or spaces). Lines whose first non-blank character is ``#`` are
comments and blank lines are skipped, as in run and qrels files.
"""

from __future__ import annotations

import os
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


def read_topic_texts(path: str | os.PathLike[str]) -> dict[str, str]:
    """Query texts by topic id, from ``topic<TAB>query text`` lines (the ``topics.tsv`` of MS MARCO,
    DL-HARD and ir_datasets exports), so reports can say what a hurt topic was about.

    Raises
    ------
    InputError
        Naming file and line for: a line without text, a topic listed twice; and for an empty file.
    """
    texts: dict[str, str] = {}
    first_lines: dict[str, int] = {}
    for number, line in numbered_lines(path):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        topic, _, text = line.strip().partition("\t") if "\t" in line else line.strip().partition(" ")
        if not text.strip():
            raise InputError(
                f"topic {excerpt(topic)} has no query text",
                path=path,
                line=number,
                hint=f"a line is `{TOPIC_TEXT_LINE}`",
            )
        if topic in texts:
            raise InputError(
                f"topic {excerpt(topic)} is listed twice (first on line {first_lines[topic]})",
                path=path,
                line=number,
                hint="give each topic one query text",
            )
        texts[topic] = text.strip()
        first_lines[topic] = number
    if not texts:
        raise InputError(
            "no topics: the file is empty or holds only comments", path=path, hint=f"a line is `{TOPIC_TEXT_LINE}`"
        )
    return texts
