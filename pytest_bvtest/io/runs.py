"""TREC run files: ``qid Q0 docno rank score tag``.

Reading is built for MS MARCO-sized runs (millions of lines). The file is read in small blocks of
whole lines; a block is parsed in bulk with C-level string and list operations (one ``split`` per
block, column slices, ``map(float, ...)``, ``dict.update``) instead of Python code per line. The bulk
path only accepts a block it can prove valid; anything unusual (a comment, a blank line, a wrong
column count, a bad score, a second tag) sends that block through a line-by-line parser, which
either accepts it or raises the :class:`~pytest_bvtest.errors.InputError` naming the exact line.
Both paths apply the same rules, so the result never depends on which one ran.
"""

from __future__ import annotations

import hashlib
import math
import os
import zlib
from array import array
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import compress, groupby
from operator import methodcaller
from pathlib import Path

import numpy as np

from pytest_bvtest.errors import InputError, excerpt, short_list
from pytest_bvtest.io.runbytes import read_well_formed_chunks, read_well_formed_run
from pytest_bvtest.io.textfiles import (
    Hasher,
    finite_number,
    inner_bom_error,
    nul_byte_error,
    numbered_lines,
    open_text,
    read_once,
)

RUN_LINE = "qid Q0 docno rank score tag"

# Blocks this small keep one block's tokens in the CPU cache while they are sliced, converted and
# inserted; on a 7M-line run 16 KiB blocks parse about twice as fast as 1 MiB blocks
# (benchmarks/bench_parse.py).
_BLOCK_CHARS = 1 << 14

# Each newline becomes a token of its own, so a block of well-formed lines splits into exactly
# 7 tokens per line with the marker at every 7th position; the marker is a one-character string,
# which CPython does not allocate per occurrence.
_MARKER = "\x00"
_LINE_END = f" {_MARKER} "
_is_comment_start = methodcaller("startswith", "#")


@dataclass(frozen=True)
class Run:
    """One system's rankings.

    ``scores[qid][docno]`` is the retrieval score. The rank column of the file is not kept: the
    ranking order is always score descending, ties by docno descending (docs/mathematics.md §1).
    Topics keep the order of their first appearance in the file.
    """

    name: str
    scores: dict[str, dict[str, float]]
    path: Path | None = None
    tags: tuple[str, ...] = field(default=())


def read_run(path: str | os.PathLike[str], *, tag: str | None = None, name: str | None = None) -> Run:
    """Read a TREC run file (``.gz`` decompressed by name).

    Parameters
    ----------
    path:
        The run file: lines ``qid Q0 docno rank score tag`` separated by any run of blanks.
        A line whose first non-blank character is ``#`` is a comment (a ``#`` inside a docno, as in
        MS MARCO v2 ids, is data); blank lines are skipped. The rank column must be present but is
        not read: ranking order comes from the scores.
    tag:
        The run tag to keep when the file holds several systems; lines with other tags are
        validated and then left out.
    name:
        The system's name; by default the (selected) run tag.

    Returns
    -------
    Run
        Every topic of the file in order of first appearance; ``tags`` lists every tag present in
        the file, in order of first appearance.

    Raises
    ------
    InputError
        Naming file and line for: a line without exactly 6 columns, a score that is not a finite
        number, a docno repeated within a topic (with the line it first appeared on), several tags
        without ``tag=``, an unknown ``tag``, a file without run lines.
    """
    with read_once(path) as readable:
        reader = _RunReader(readable, tag)
        for first_line, block in _numbered_blocks(readable):
            if not reader.read_block_in_bulk(block):
                reader.read_block_line_by_line(block, first_line)
        return replace(reader.finish(name), path=Path(path))


@dataclass(frozen=True)
class RunColumns:
    """One system's rankings as columns, for evaluating every topic at once (:mod:`pytest_bvtest.scoring.columnar`).

    ``docnos`` and ``scores`` hold one entry per retrieved document, topic after topic:
    topic ``topics[j]`` has ``lengths[j]`` entries, in the file's order. Topics keep the order of
    their first appearance in the file, as in :class:`Run`; the rank column is not kept. ``docnos``
    is a :class:`numpy.bytes_` array (ASCII) when the file was read by the fast path
    (:mod:`pytest_bvtest.io.runbytes`), else a list of strings. ``sha256`` is the digest of the bytes
    the columns were read from, when asked for.
    """

    name: str
    topics: tuple[str, ...]
    lengths: np.ndarray
    docnos: list[str] | np.ndarray
    scores: np.ndarray
    path: Path | None = None
    tags: tuple[str, ...] = field(default=())
    sha256: str | None = None

    def topic_starts(self) -> dict[str, tuple[int, int]]:
        """``qid -> (first row, row after the last)`` of each topic."""
        stops = np.cumsum(self.lengths).tolist()
        return {qid: (stop - length, stop) for qid, stop, length in zip(self.topics, stops, self.lengths.tolist())}

    def docno_strings(self, start: int, stop: int) -> list[str]:
        """The docnos of rows ``start`` to ``stop`` as strings."""
        docnos = self.docnos[start:stop]
        return docnos if isinstance(docnos, list) else docnos.astype(str).tolist()

    def rankings(self, topics: Iterable[str]) -> dict[str, dict[str, float]]:
        """``qid -> docno -> score`` of the given topics (as :attr:`Run.scores`), for the measures pytrec_eval
        computes."""
        rows = self.topic_starts()
        scores = self.scores.tolist()
        return {qid: dict(zip(self.docno_strings(*rows[qid]), scores[rows[qid][0] : rows[qid][1]])) for qid in topics}


def read_run_columns(
    path: str | os.PathLike[str], *, tag: str | None = None, name: str | None = None, digest: bool = False
) -> RunColumns:
    """Read a TREC run file into columns; the file's rules and errors are :func:`read_run`'s.

    A regular file (one blank between columns, printable ASCII, one tag) is read by the fast path
    of :mod:`pytest_bvtest.io.runbytes`; any other file, and any file with an error, by the
    validated reader, which names the line of the first error. Both give the same columns. A pipe
    is read once (:func:`~pytest_bvtest.io.textfiles.read_once`). With ``digest``, the columns carry
    the SHA-256 of the bytes they were read from (what a cache entry of their scores is keyed by).

    Returns
    -------
    RunColumns
        The same rankings :func:`read_run` returns, as flat columns grouped by topic; it takes about
        half the memory and none of the per-topic dictionaries.
    """
    with read_once(path) as readable:
        hasher = hashlib.sha256() if digest else None
        well_formed = read_well_formed_run(readable, tag, hasher=hasher)
        if well_formed is not None:
            topics, lengths, docnos, scores, file_tag = well_formed
            columns = RunColumns(name or file_tag, topics, lengths, docnos, scores, tags=(file_tag,))
        else:
            hasher = hashlib.sha256() if digest else None
            columns = _validated_columns(readable, tag, name, hasher)
    return replace(columns, path=Path(path), sha256=None if hasher is None else hasher.hexdigest())


def _validated_columns(
    path: str | os.PathLike[str], tag: str | None, name: str | None, hasher: Hasher | None
) -> RunColumns:
    """:func:`read_run_columns` by the validated reader."""
    reader = _ColumnReader(path, tag)
    try:
        for first_line, block in _numbered_blocks(path, hasher):
            if not reader.read_block_in_bulk(block):
                reader.read_block_line_by_line(block, first_line)
    except InputError:
        # read_run reports a repeated docno where it comes; columns are checked for repeats at the end,
        # so a repeat before this error is the file's first error.
        reader.raise_first_duplicate()
        raise
    return reader.finish_columns(name)


def same_rankings(first: RunColumns, second: RunColumns) -> bool:
    """Whether two runs rank the same documents in the same order on every topic, whatever their tags, file
    names, score spelling (``0.04534298770152816`` or ``...156``) or line order: every measure then scores them
    alike. The order is the one evaluation uses (docs/mathematics.md §1): score descending, ties by docno
    descending."""
    if set(first.topics) != set(second.topics) or not np.array_equal(np.sort(first.lengths), np.sort(second.lengths)):
        return False
    first_rows, second_rows = first.topic_starts(), second.topic_starts()
    return all(_ranked(first, *first_rows[qid]) == _ranked(second, *second_rows[qid]) for qid in first.topics)


def _ranked(run: RunColumns, start: int, stop: int) -> list[str]:
    """The docnos of rows ``start`` to ``stop`` in ranking order (score descending, ties by docno descending)."""
    pairs = sorted(zip(run.scores[start:stop].tolist(), run.docno_strings(start, stop)), reverse=True)
    return [docno for _, docno in pairs]


#: Lines per chunk of a run read a chunk of topics at a time (:func:`read_run_column_chunks`): about 150 MB of
#: columns for MS MARCO-like docnos, and a few seconds of work between two chunks.
CHUNK_LINES = 2_000_000


def read_run_column_chunks(
    path: str | os.PathLike[str],
    *,
    tag: str | None = None,
    name: str | None = None,
    lines: int = CHUNK_LINES,
    hasher: Hasher | None = None,
) -> Iterator[RunColumns]:
    """:func:`read_run_columns` a chunk of whole topics at a time, for a regular run whose lines are grouped by topic.

    Every tool writes runs topic after topic, so memory is bounded by the largest chunk (``lines`` lines, or one
    topic when it is longer), not by the file. Raises :class:`~pytest_bvtest.io.runbytes.NotInChunks`, possibly
    after yielding chunks, when the file is not regular (the fast path of :mod:`pytest_bvtest.io.runbytes`
    declines it) or a topic's lines are not together: the caller then reads it whole with
    :func:`read_run_columns`, which also names the line of any error. ``hasher`` is fed the file's bytes as they
    are read (:func:`~pytest_bvtest.io.textfiles.open_bytes`): after the last chunk its digest is the file's.
    """
    for topics, lengths, docnos, scores, file_tag in read_well_formed_chunks(path, tag, lines, hasher=hasher):
        yield RunColumns(name or file_tag, topics, lengths, docnos, scores, path=Path(path), tags=(file_tag,))


class _RunReader:
    """Accumulates one run file's topics block by block (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], selected_tag: str | None) -> None:
        self.path = path
        self.selected_tag = selected_tag
        self.scores: dict[str, dict[str, float]] = {}
        self.tags_seen: dict[str, None] = {}
        self.data_lines = 0

    def read_block_in_bulk(self, block: str) -> bool:
        """Add a block of well-formed lines; return False, having changed nothing, if it is not one."""
        if _MARKER in block or "\ufeff" in block:
            return False
        tokens = block.replace("\n", _LINE_END).split()
        line_count = block.count("\n")
        if len(tokens) != 7 * line_count or tokens[6::7].count(_MARKER) != line_count:
            return False
        qids = tokens[0::7]
        if "#" in block and any(map(_is_comment_start, qids)):
            return False
        score_texts = tokens[4::7]
        # float() also reads `1_0` and full-width digits; such a block goes line by line to its error
        joined = "".join(score_texts)
        if "_" in joined or not joined.isascii():
            return False
        try:
            scores = list(map(float, score_texts))
        except ValueError:
            return False
        # Any NaN or infinity makes the sum non-finite; so can an overflow of huge finite scores,
        # which the line-by-line path then accepts.
        if not math.isfinite(sum(scores)):
            return False
        docnos = tokens[2::7]
        line_tags = tokens[5::7]
        first_tag = line_tags[0]
        if line_tags.count(first_tag) == line_count:
            if self.selected_tag is None:
                if self.tags_seen and first_tag not in self.tags_seen:
                    return False
            elif first_tag != self.selected_tag:
                self.tags_seen.setdefault(first_tag)
                self.data_lines += line_count
                return True
            self.tags_seen.setdefault(first_tag)
        else:
            if self.selected_tag is None:
                return False
            self.tags_seen.update(dict.fromkeys(line_tags))
            kept = [line_tag == self.selected_tag for line_tag in line_tags]
            qids = list(compress(qids, kept))
            docnos = list(compress(docnos, kept))
            scores = list(compress(scores, kept))
        self.data_lines += line_count
        self._add_topics(qids, docnos, scores)
        return True

    def _add_topics(self, qids: list[str], docnos: list[str], scores: list[float]) -> None:
        if not qids:
            return
        if qids.count(qids[0]) == len(qids):
            self._add_to_topic(qids[0], zip(docnos, scores), len(qids))
            return
        start = 0
        for qid, lines in groupby(qids):
            stop = start + len(list(lines))
            self._add_to_topic(qid, zip(docnos[start:stop], scores[start:stop]), stop - start)
            start = stop

    def _add_to_topic(self, qid: str, pairs: Iterable[tuple[str, float]], count: int) -> None:
        topic = self.scores.get(qid)
        if topic is None:
            topic = self.scores[qid] = {}
        before = len(topic)
        topic.update(pairs)
        if len(topic) != before + count:
            raise self._duplicate_error((qid,))

    def read_block_line_by_line(self, block: str, first_line: int) -> None:
        """Add a block line by line, raising the error of the first bad line."""
        for number, line in enumerate(block.split("\n")[:-1], start=first_line):
            if "\x00" in line:
                raise nul_byte_error(self.path, number)
            if "\ufeff" in line:
                raise inner_bom_error(self.path, number)
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) != 6:
                raise InputError(
                    f"found {len(fields)} columns, expected 6 ({RUN_LINE})",
                    path=self.path,
                    line=number,
                    hint="separate the columns by blanks; comment lines must start with '#'",
                )
            qid, _, docno, _, score_text, line_tag = fields
            score = finite_number(
                score_text,
                "score",
                path=self.path,
                line=number,
                hint=f"the fifth column is the retrieval score ({RUN_LINE}); the ranking is read from it",
            )
            self.data_lines += 1
            if line_tag not in self.tags_seen:
                if self.selected_tag is None and self.tags_seen:
                    raise self._several_tags_error(line_tag, number)
                self.tags_seen[line_tag] = None
            if self.selected_tag is not None and line_tag != self.selected_tag:
                continue
            self._add_line(qid, docno, score)

    def _add_line(self, qid: str, docno: str, score: float) -> None:
        topic = self.scores.setdefault(qid, {})
        if docno in topic:
            raise self._duplicate_error((qid,))
        topic[docno] = score

    def finish(self, name: str | None) -> Run:
        run_name, tags = self._checked_name_and_tags(name)
        return Run(name=run_name, scores=self.scores, path=Path(self.path), tags=tags)

    def _checked_name_and_tags(self, name: str | None) -> tuple[str, tuple[str, ...]]:
        """The run's name and every tag of the file, once the whole file is read; raises for a file without run
        lines."""
        if self.data_lines == 0:
            raise InputError(
                "no run lines: the file is empty or holds only comments",
                path=self.path,
                hint=f"a run line is `{RUN_LINE}`",
            )
        tags = tuple(self.tags_seen)
        if self.selected_tag is not None and self.selected_tag not in self.tags_seen:
            raise InputError(
                f"no line has the run tag {excerpt(self.selected_tag)}; the file holds {_listing(tags)}",
                path=self.path,
                hint="choose one of those tags",
            )
        return name or self.selected_tag or tags[0], tags

    def _several_tags_error(self, line_tag: str, number: int) -> InputError:
        tags = _tags_in(self.path)
        return InputError(
            f"a second run tag {excerpt(line_tag)} starts here: the file holds {len(tags)} systems ({_listing(tags)})",
            path=self.path,
            line=number,
            hint=f"select one system by its tag (spec: `{{run: FILE, tag: {tags[0]}}}`; bvtest evaluate: "
            f"--tag {tags[0]}) or split the file by tag",
        )

    def _duplicate_error(self, qids: Collection[str]) -> InputError:
        """Find, by rereading the file, the first line that repeats a docno within one of the topics ``qids``."""
        first_lines: dict[tuple[str, str], int] = {}
        for number, line in numbered_lines(self.path):
            fields = line.split()
            if len(fields) != 6 or fields[0] not in qids:
                continue
            if self.selected_tag is not None and fields[5] != self.selected_tag:
                continue
            qid, docno = fields[0], fields[2]
            if (qid, docno) in first_lines:
                return InputError(
                    f"document {excerpt(docno)} appears twice in topic {excerpt(qid)} "
                    f"(first on line {first_lines[qid, docno]})",
                    path=self.path,
                    line=number,
                    hint="a run ranks each document at most once per topic (as trec_eval requires); remove one line",
                )
            first_lines[qid, docno] = number
        raise AssertionError(f"no repeated docno found in topics {_listing(tuple(qids))} of {self.path}")


class _ColumnReader(_RunReader):
    """A :class:`_RunReader` that appends to columns (and checks for repeated docnos at the end)."""

    def __init__(self, path: str | os.PathLike[str], selected_tag: str | None) -> None:
        super().__init__(path, selected_tag)
        self.docnos: list[str] = []
        self.score_values = array("d")
        # (qid, line count) of each stretch of lines of one topic, in file order
        self.stretches: list[tuple[str, int]] = []

    def _add_topics(self, qids: list[str], docnos: list[str], scores: list[float]) -> None:
        if not qids:
            return
        self.docnos += docnos
        self.score_values.extend(scores)
        if qids.count(qids[0]) == len(qids):
            self._add_stretch(qids[0], len(qids))
            return
        for qid, lines in groupby(qids):
            self._add_stretch(qid, len(list(lines)))

    def _add_line(self, qid: str, docno: str, score: float) -> None:
        self.docnos.append(docno)
        self.score_values.append(score)
        self._add_stretch(qid, 1)

    def _add_stretch(self, qid: str, count: int) -> None:
        if self.stretches and self.stretches[-1][0] == qid:
            self.stretches[-1] = (qid, self.stretches[-1][1] + count)
        else:
            self.stretches.append((qid, count))

    def finish_columns(self, name: str | None) -> RunColumns:
        topics, lengths, docnos, scores = self._gathered()
        self.raise_first_duplicate(topics, lengths, docnos)
        run_name, tags = self._checked_name_and_tags(name)
        return RunColumns(run_name, topics, lengths, docnos, scores, Path(self.path), tags)

    def _gathered(self) -> tuple[tuple[str, ...], np.ndarray, list[str], np.ndarray]:
        """Topics in order of first appearance, their line counts, and the docnos and scores grouped by topic."""
        topic_index = {qid: index for index, qid in enumerate(dict.fromkeys(qid for qid, _ in self.stretches))}
        stretch_topic = np.fromiter(
            (topic_index[qid] for qid, _ in self.stretches), dtype=np.int64, count=len(self.stretches)
        )
        stretch_lines = np.fromiter((count for _, count in self.stretches), dtype=np.int64, count=len(self.stretches))
        docnos, scores = self.docnos, np.frombuffer(self.score_values, dtype=np.float64)
        if np.any(np.diff(stretch_topic) < 0):
            # A topic's lines are spread over the file: gather them, keeping their order.
            order = np.argsort(np.repeat(stretch_topic, stretch_lines), kind="stable")
            docnos, scores = [docnos[row] for row in order.tolist()], scores[order]
        lengths = np.bincount(stretch_topic, weights=stretch_lines, minlength=len(topic_index)).astype(np.int64)
        return tuple(topic_index), lengths, docnos, scores

    def raise_first_duplicate(
        self, topics: Sequence[str] | None = None, lengths: np.ndarray | None = None, docnos: list[str] | None = None
    ) -> None:
        """Raise the error of the file's first repeated docno within a topic, if the lines read so far hold one."""
        if topics is None or lengths is None or docnos is None:
            topics, lengths, docnos, _ = self._gathered()
        stop = 0
        repeated = []
        for qid, length in zip(topics, lengths.tolist()):
            start, stop = stop, stop + length
            if len(set(docnos[start:stop])) != length:
                repeated.append(qid)
        if repeated:
            raise self._duplicate_error(set(repeated))


def _tags_in(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Every tag of a run file's six-column lines, in order of first appearance."""
    tags: dict[str, None] = {}
    for _, line in numbered_lines(path):
        fields = line.split()
        if len(fields) == 6 and not fields[0].startswith("#"):
            tags.setdefault(fields[5])
    return tuple(tags)


def _listing(names: tuple[str, ...]) -> str:
    """The names quoted and shortened (:func:`excerpt`), the first few of them (:func:`short_list`)."""
    return short_list([excerpt(name) for name in names])


def _numbered_blocks(path: str | os.PathLike[str], hasher: Hasher | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(number of its first line, block)``: whole lines, each block ending in a newline; ``hasher`` is fed
    the file's bytes (:func:`~pytest_bvtest.io.textfiles.open_bytes`).

    Line endings are universal (``\\r\\n`` and a lone ``\\r`` read as ``\\n``), as in
    :func:`~pytest_bvtest.io.textfiles.numbered_lines`, so line numbers agree with it.
    """
    first_line = 1
    partial: list[str] = []
    try:
        with open_text(path, hasher=hasher) as handle:
            while text := handle.read(_BLOCK_CHARS):
                end = text.rfind("\n") + 1
                if end == 0:
                    partial.append(text)
                    continue
                block = "".join(partial) + text[:end] if partial else text[:end]
                partial = [text[end:]]
                yield first_line, block
                first_line += block.count("\n")
    except (UnicodeDecodeError, OSError, EOFError, zlib.error):
        # numbered_lines turns the same failure into an InputError naming file and line.
        for _ in numbered_lines(path):
            pass
        raise
    if any(partial):
        yield first_line, "".join(partial) + "\n"
