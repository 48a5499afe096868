"""The fast path for well-formed run files: tokenized as bytes by numpy, no Python object per line.

Generated runs (Anserini, Pyserini, PyTerrier, most trec_eval inputs) are regular: every line is
``qid Q0 docno rank score tag`` with one space or tab between the columns, printable ASCII, one
tag. For such a file the separators are found with a few vectorised passes over each block of
bytes, the columns are gathered as fixed-width byte strings (:class:`numpy.bytes_`), and the scores
are converted by integer arithmetic on 64-bit words (exactly as ``float()`` reads them), so millions
of lines are read without a Python object per line.

The fast path only accepts a file it can prove well formed by the rules of
:func:`~pytest_bvtest.io.runs.read_run` (empty lines that end the file are skipped, as that reader skips
them). Anything else (a comment, another blank line, a run of blanks,
a carriage return, a non-ASCII byte, a score that is not a plain finite decimal, several tags, a
docno repeated within a topic, an unreadable file) makes :func:`read_well_formed_run` return
``None``, and the caller reads the file with the validated reader, which either accepts it or
raises the error naming the exact line. Both readers return the same columns (tested on every run
of the shared data and on randomized files), so the result never depends on which one ran.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.textfiles import Hasher, open_bytes

# Blocks of about 8 MB keep each block's position arrays small (a few MB) while numpy's per-call
# overhead stays negligible; the block ends at its last newline and the rest carries over.
_BLOCK_BYTES = 1 << 23
_COLUMNS = 6
_SPACE, _TAB, _NEWLINE, _HASH = 0x20, 0x09, 0x0A, 0x23

# Scores of at most 14 digits that fit a 16-byte window are read by integer arithmetic
# (_short_decimals): with the point as a digit they stay below 10**15 < 2**53.
_WINDOW = 16
_SHORT_DIGITS = 14
_KEEP_LAST = np.array(
    [np.concatenate((np.zeros(dropped, np.uint8), np.full(_WINDOW - dropped, 1, np.uint8))) for dropped in range(17)]
).view("<u8")  # row d: a byte 1 at each of the last 16 - d bytes of a 16-byte window
_BYTE_ONES = np.uint64(0x0101010101010101)
_INTEGER_POWERS_OF_TEN = 10 ** np.arange(_WINDOW, dtype=np.int64)
_POWERS_OF_TEN = 10.0 ** np.arange(_WINDOW)

# The bytes a score may consist of: with these only, float() and the validated reader's
# plain-decimal rule accept exactly the same strings (no ``1_0``, ``inf``, ``nan`` or hexadecimal).
_SCORE_BYTE = np.zeros(256, dtype=bool)
_SCORE_BYTE[list(b"0123456789.eE+-")] = True
_SCORE_BYTE[0] = True  # the padding of shorter scores

# Odd 64-bit multipliers of the docno hash and of the topic added to it (from splitmix64).
_WORD_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_TOPIC_MULTIPLIER = np.uint64(0x94D049BB133111EB)


def read_well_formed_run(
    path: str | os.PathLike[str], selected_tag: str | None, *, hasher: Hasher | None = None
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, str] | None:
    """Read a regular run file as columns, or return ``None`` if it is not provably well formed.

    Parameters
    ----------
    path:
        The run file (``.gz`` decompressed by name).
    selected_tag:
        The tag to keep; the fast path accepts a file whose every line has this tag (or, without
        a selection, one tag throughout).
    hasher:
        Fed every byte of the file as stored, when given (its digest is meaningful only when the
        columns are returned: a file declined part-way was not read to its end).

    Returns
    -------
    tuple or None
        ``(topics, lengths, docnos, scores, tag)``: topics in order of first appearance, their
        line counts, the docnos (a :class:`numpy.bytes_` array) and scores grouped by topic in
        file order, and the file's one tag; ``None`` when the validated reader must decide.
    """
    columns = _Columns()
    try:
        with open_bytes(path, hasher=hasher, text=False) as handle:
            for block in _blocks_of_lines(handle):
                if not columns.add(_parse_block(block)):
                    return None
    except (InputError, _NotText, OSError, EOFError, zlib.error):
        return None
    return columns.finish(selected_tag)


class NotInChunks(Exception):
    """A run the chunked reader cannot read a chunk of topics at a time: not well formed, or not grouped by
    topic (a topic's lines in two chunks). The caller reads the whole file instead."""


def read_well_formed_chunks(
    path: str | os.PathLike[str], selected_tag: str | None, lines: int, *, hasher: Hasher | None = None
) -> Iterator[tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, str]]:
    """:func:`read_well_formed_run` a chunk of whole topics at a time, for a run grouped by topic.

    Each chunk holds the topics of at least ``lines`` lines (fewer in the last; more when one topic is
    longer), in the columns :func:`read_well_formed_run` returns, so memory is bounded by the chunk, not
    by the file. A topic whose lines are not together (it appears again in a later chunk), a block that
    is not well formed, another tag or a docno repeated within a topic raise :class:`NotInChunks`,
    possibly after some chunks were yielded: the caller then reads the whole file.
    """
    columns = _Columns()
    done: set[bytes] = set()
    pending = 0
    try:
        with open_bytes(path, hasher=hasher, text=False) as handle:
            for block in _blocks_of_lines(handle):
                parsed = _parse_block(block)
                if not columns.add(parsed):
                    raise NotInChunks
                assert parsed is not None
                pending += parsed.scores.size
                if pending >= lines and len(columns.qids) > 1:
                    chunk, columns = columns.split_last_topic()
                    pending = columns.stretch_lengths[0]
                    yield _finished_chunk(chunk, selected_tag, done)
    except (InputError, _NotText, OSError, EOFError, zlib.error):
        raise NotInChunks from None
    yield _finished_chunk(columns, selected_tag, done)


def _finished_chunk(
    columns: _Columns, selected_tag: str | None, done: set[bytes]
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, str]:
    """A chunk's columns; :class:`NotInChunks` when one of its topics was in an earlier chunk (or it declines)."""
    qids = set(columns.qids)
    if not done.isdisjoint(qids):
        raise NotInChunks
    done.update(qids)
    finished = columns.finish(selected_tag)
    if finished is None:
        raise NotInChunks
    return finished


def _blocks_of_lines(handle: BinaryIO) -> Iterator[np.ndarray]:
    """Yield the file as blocks of whole lines, each ending in a newline (a last line without one gets one), but
    for the empty lines that end the file (``read_run`` skips blank lines; a file written with one newline too many
    was read by the validated reader, 2.5 times slower)."""
    last = None
    for block in _raw_blocks_of_lines(handle):
        if last is not None:
            yield last
        last = block
    if last is not None:
        end = last.size
        while end > 1 and last[end - 2] == _NEWLINE:
            end -= 1
        yield last[:end]


# The longest line the fast path carries from one block to the next: a run's lines are far shorter, and a file
# without line breaks (a sparse file) carried a line of gigabytes, copied again for every block.
_LONGEST_LINE = 1 << 20


class _NotText(Exception):
    """A block the fast path declines before parsing it: one that starts with a NUL byte, or a line longer than
    :data:`_LONGEST_LINE` (the validated reader then reads the file, and names the line)."""


def _raw_blocks_of_lines(handle: BinaryIO) -> Iterator[np.ndarray]:
    carried = np.empty(0, dtype=np.uint8)
    while True:
        if carried.size > _LONGEST_LINE:
            raise _NotText
        buffer = np.empty(carried.size + _BLOCK_BYTES, dtype=np.uint8)
        buffer[: carried.size] = carried
        read = handle.readinto(memoryview(buffer)[carried.size :])
        filled = carried.size + read
        if not read:
            break
        if not carried.size and not buffer[0]:  # a file (or a block) of NUL bytes, such as a sparse file
            raise _NotText
        end = _after_last_newline(buffer[:filled])
        # after the last newline; everything while a line longer than a block is still being read
        carried = buffer[end:filled].copy()
        if end:
            yield buffer[:end]
    if carried.size:
        yield np.append(carried, np.uint8(_NEWLINE))


def _after_last_newline(data: np.ndarray) -> int:
    """The position after the last newline of ``data``, 0 without one (lines are short: the tail is searched first)."""
    for start in (max(data.size - (1 << 16), 0), 0):
        newlines = np.flatnonzero(data[start:] == _NEWLINE)
        if newlines.size:
            return start + int(newlines[-1]) + 1
    return 0


@dataclass(frozen=True)
class _Block:
    """The columns of one block of lines."""

    tag: bytes
    qids: list[bytes]  # the topic of each stretch of lines of one topic
    stretch_lengths: list[int]
    docnos: np.ndarray  # one row of bytes per line
    scores: np.ndarray


def _parse_block(data: np.ndarray) -> _Block | None:
    """The columns of a block of whole lines (bytes ending in a newline); None if it is not well formed."""
    if np.count_nonzero(data > 0x7E):
        return None
    separators = np.flatnonzero(data <= _SPACE)
    kinds = data[separators]
    line_count = separators.size // _COLUMNS
    # Exactly six non-empty columns per line: every sixth separator is a newline, the others
    # single spaces or tabs, and no two separators are adjacent.
    if (
        separators.size != _COLUMNS * line_count
        or separators[0] == 0
        or not np.all(kinds[_COLUMNS - 1 :: _COLUMNS] == _NEWLINE)
        or np.count_nonzero(kinds == _SPACE) + np.count_nonzero(kinds == _TAB) != (_COLUMNS - 1) * line_count
        or np.any(np.diff(separators) == 1)
    ):
        return None
    ends = separators.reshape(line_count, _COLUMNS)
    line_starts = np.concatenate(([0], ends[:-1, -1] + 1))
    if np.any(data[line_starts] == _HASH):
        return None  # a comment line
    # Zero bytes after the block as long as its longest line, so every column's window fits.
    padded = np.concatenate((data, np.zeros(int((ends[:, -1] - line_starts).max()) + 1, dtype=np.uint8)))
    tag = _block_tag(padded, ends[:, 4] + 1, ends[:, 5])
    if tag is None:
        return None
    scores = _scores(padded, ends[:, 3] + 1, ends[:, 4])
    if scores is None:
        return None
    qids, stretch_lengths = _stretches(padded, line_starts, ends[:, 0])
    docnos = _gather(padded, ends[:, 1] + 1, ends[:, 2]).view(np.uint8).reshape(line_count, -1)
    return _Block(tag, qids, stretch_lengths, docnos, scores)


def _block_tag(padded: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bytes | None:
    """The one tag of every line of the block, None if the lines' tags differ."""
    length = int(ends[0] - starts[0])
    if np.any(ends - starts != length):
        return None
    # Equal lengths: the windows of exactly that length are the tags, no padding to clear.
    tags = _windows(padded, length)[starts]
    return tags[0] if np.all(tags == tags[0]) else None


def _stretches(padded: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[list[bytes], list[int]]:
    """The qid of each stretch of lines of one topic (``starts`` and ``ends`` of the qids) and its line count."""
    # A window one byte longer than the longest qid ends inside the separator after it, so lines
    # of different topics always differ; lines of one topic may differ beyond the separator, and
    # those false boundaries merge when the blocks are joined.
    windows = _windows(padded, int((ends - starts).max()) + 1)[starts]
    boundaries = np.flatnonzero(np.concatenate(([True], windows[1:] != windows[:-1])))
    qids = _gather(padded, starts[boundaries], ends[boundaries]).tolist()
    return qids, np.diff(np.append(boundaries, starts.size)).tolist()


class _Columns:
    """The blocks of a file joined in order; :meth:`add` refuses a block with another tag than the first."""

    def __init__(self) -> None:
        self.qids: list[bytes] = []
        self.stretch_lengths: list[int] = []
        self.docnos: list[np.ndarray] = []
        self.scores: list[np.ndarray] = []
        self.tag: bytes | None = None

    def add(self, block: _Block | None) -> bool:
        if block is None or (self.tag is not None and block.tag != self.tag):
            return False
        self.tag = block.tag
        for qid, length in zip(block.qids, block.stretch_lengths):
            if self.qids and self.qids[-1] == qid:
                self.stretch_lengths[-1] += length
            else:
                self.qids.append(qid)
                self.stretch_lengths.append(length)
        self.docnos.append(block.docnos)
        self.scores.append(block.scores)
        return True

    def split_last_topic(self) -> tuple[_Columns, _Columns]:
        """These columns without the last stretch of lines of one topic, and that stretch alone (which may go
        on in the next block); the blocks are cut where the stretch starts, without a copy."""
        first, last = _Columns(), _Columns()
        first.tag = last.tag = self.tag
        first.qids, first.stretch_lengths = self.qids[:-1], self.stretch_lengths[:-1]
        last.qids, last.stretch_lengths = self.qids[-1:], self.stretch_lengths[-1:]
        first.docnos, first.scores = list(self.docnos), list(self.scores)
        rest = self.stretch_lengths[-1]
        while rest:
            docnos, scores = first.docnos.pop(), first.scores.pop()
            cut = max(scores.size - rest, 0)
            if cut:
                first.docnos.append(docnos[:cut])
                first.scores.append(scores[:cut])
            last.docnos.insert(0, docnos[cut:])
            last.scores.insert(0, scores[cut:])
            rest -= scores.size - cut
        return first, last

    def finish(
        self, selected_tag: str | None
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, str] | None:
        """The gathered columns, or None for an empty file, another tag or a repeated docno."""
        if self.tag is None:
            return None
        tag = self.tag.decode("ascii")
        if selected_tag is not None and tag != selected_tag:
            return None
        qids = [qid.decode("ascii") for qid in self.qids]
        topic_index = {qid: index for index, qid in enumerate(dict.fromkeys(qids))}
        stretch_topic = np.array([topic_index[qid] for qid in qids], dtype=np.int64)
        stretch_lengths = np.array(self.stretch_lengths, dtype=np.int64)
        docnos, scores = _stacked(self.docnos), np.concatenate(self.scores)
        self.docnos, self.scores = [], []
        if np.any(np.diff(stretch_topic) < 0):
            # A topic's lines are spread over the file: gather them, keeping their order.
            order = np.argsort(np.repeat(stretch_topic, stretch_lengths), kind="stable")
            docnos, scores = docnos[order], scores[order]
        lengths = np.bincount(stretch_topic, weights=stretch_lengths, minlength=len(topic_index)).astype(np.int64)
        if _has_repeated_docno(lengths, docnos):
            return None
        return tuple(topic_index), lengths, docnos, scores, tag


def _windows(padded: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes from each position of ``padded`` on, as byte strings (a view, no copy).

    A well-formed block holds no zero byte, so only a window reaching into the padding is shortened.
    """
    return np.ndarray(shape=(padded.size - width + 1,), dtype=f"S{width}", buffer=padded, strides=(1,))


def _gather(padded: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The byte strings ``padded[start:end]`` as one fixed-width :class:`numpy.bytes_` array.

    ``padded`` ends in at least as many zero bytes as the longest string is long, so every window fits.
    """
    lengths = ends - starts
    width = max(int(lengths.max()), 1)
    gathered = _windows(padded, width)[starts].view(np.uint8).reshape(starts.size, width)  # a copy
    gathered *= np.arange(width) < lengths[:, None]
    return gathered.view(f"S{width}").ravel()


def _stacked(blocks: list[np.ndarray]) -> np.ndarray:
    """The rows of bytes of every block as one :class:`numpy.bytes_` array, zero-padded to a multiple of 8 bytes.

    The padding makes each docno whole 64-bit words, which :func:`docno_keys` reads without a copy.
    """
    width = 8 * -(-max(block.shape[1] for block in blocks) // 8)
    stacked = np.zeros((sum(block.shape[0] for block in blocks), width), dtype=np.uint8)
    row = 0
    for block in blocks:
        stacked[row : row + block.shape[0], : block.shape[1]] = block
        row += block.shape[0]
    return stacked.view(f"S{width}").ravel()


def _scores(padded: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """The scores ``padded[start:end]``, None unless every one is a plain finite decimal.

    Plain decimals of at most 14 digits (``12.345678``, ``-0.5``, ``7``: a run's usual scores) are
    converted exactly without Python floats (:func:`_short_decimals`); the others go through numpy's
    conversion, which reads text as ``float()`` does, after a check that they hold only the
    characters of a plain decimal.
    """
    scores, converted = _short_decimals(padded, starts, ends)
    if converted.all():
        return scores
    others = np.flatnonzero(~converted)
    texts = _gather(padded, starts[others], ends[others])
    if not np.all(_SCORE_BYTE[texts.view(np.uint8)]):
        return None
    try:
        scores[others] = texts.astype(np.float64)
    except ValueError:
        return None
    return scores if np.all(np.isfinite(scores[others])) else None


def _short_decimals(padded: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The values of the texts ``padded[start:end]`` that are plain decimals of at most 14 digits, and which those are.

    Each text is read right-aligned in a 16-byte window, as two 64-bit words: the bytes before the
    text (and its sign) are masked, every non-digit byte becomes 0, and the words' eight digits each
    become integers by three multiply-and-mask steps (the SWAR method of Lemire's fast parsers).
    With the point read as a digit 0 that gives an integer below 10**15; taking the point's digit
    out leaves the significand ``m`` and the point's place the number of decimals ``f``. Both
    ``m`` (below 2**53) and ``10**f`` are exact doubles, and IEEE division rounds correctly, so
    ``m / 10**f`` is the double nearest the decimal: what ``float()`` returns for the text.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The values (meaningless where not converted) and a mask of the texts converted.
    """
    lengths = ends - starts
    signs = padded[starts]
    signed = (signs == ord("+")) | (signs == ord("-"))
    fits = (lengths <= _WINDOW) & (ends >= _WINDOW)
    right_aligned = _windows(padded, _WINDOW)[np.where(fits, ends - _WINDOW, 0)]
    right_aligned = right_aligned.view(np.uint8).reshape(starts.size, _WINDOW)  # a copy
    text_bytes = _KEEP_LAST[np.clip(_WINDOW - lengths + signed, 0, _WINDOW)]
    digits = right_aligned - np.uint8(ord("0"))
    digit_flags = (digits < 10).view("<u8") & text_bytes  # a byte 1 at each digit of the text
    point_flags = (right_aligned == ord(".")).view("<u8") & text_bytes
    digit_words = digits.view("<u8")
    digit_words &= digit_flags * np.uint64(0xFF)
    digit_count, point_count = _byte_sum(digit_flags), _byte_sum(point_flags)
    converted = fits & (digit_count + point_count == lengths - signed) & (point_count <= 1)
    converted &= (digit_count >= 1) & (digit_count <= _SHORT_DIGITS)
    with_point = _eight_digits(digit_words[:, 0]) * np.uint64(10**8) + _eight_digits(digit_words[:, 1])
    with_point = with_point.view(np.int64)
    decimals = np.where(point_count == 1, _WINDOW - 1 - _flag_position(point_flags), 0)
    scale = _INTEGER_POWERS_OF_TEN[decimals]
    significand = np.where(point_count == 1, with_point % scale + with_point // (10 * scale) * scale, with_point)
    scores = significand / _POWERS_OF_TEN[decimals]
    np.negative(scores, out=scores, where=signs == ord("-"))
    return scores, converted


def _byte_sum(words: np.ndarray) -> np.ndarray:
    """The sum of the bytes of each row of two 64-bit words (bytes 0 or 1): a multiplication adds them up."""
    return (words[:, 0] * _BYTE_ONES >> np.uint64(56)) + (words[:, 1] * _BYTE_ONES >> np.uint64(56))


def _eight_digits(words: np.ndarray) -> np.ndarray:
    """The integers whose eight decimal digits (0 to 9, the first in the lowest byte) are the bytes of ``words``."""
    words = words * np.uint64(10) + (words >> np.uint64(8))
    words &= np.uint64(0x00FF00FF00FF00FF)
    words = words * np.uint64(100) + (words >> np.uint64(16))
    words &= np.uint64(0x0000FFFF0000FFFF)
    words = words * np.uint64(10000) + (words >> np.uint64(32))
    return words & np.uint64(0xFFFFFFFF)


def _flag_position(flags: np.ndarray) -> np.ndarray:
    """The byte index (0 to 15) of the one byte 1 in each row of two words (0 where there is none)."""
    # frexp of 2**(8k) is 0.5 * 2**(8k + 1), exactly
    low, high = (np.frexp(flags[:, word].astype(np.float64))[1] for word in (0, 1))
    return np.where(high > 0, 8 + (high - 1) // 8, np.maximum(low - 1, 0) // 8)


def docno_keys(docnos: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each docno of a :class:`numpy.bytes_` array, for fast joins and repeat checks.

    Multiplicative hashing of the docno's 8-byte words: the top bits are well spread, so a table
    indexed by them works. Different docnos can share a key (rarely), so every use verifies its
    matches on the docnos themselves.
    """
    words = -(-docnos.dtype.itemsize // 8)
    if docnos.dtype.itemsize != 8 * words:
        docnos = docnos.astype(f"S{8 * words}")
    packed = docnos.view("<u8").reshape(docnos.size, words)
    keys = packed[:, 0] * _WORD_MULTIPLIER
    for word in range(1, words):
        keys ^= keys >> np.uint64(29)
        keys ^= packed[:, word]
        keys *= _WORD_MULTIPLIER
    return keys


def topic_docno_keys(topic: np.ndarray, docnos: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each (topic index, docno) pair (``docnos`` a :class:`numpy.bytes_` array): the docno's
    :func:`docno_keys` plus a multiple of the topic. Different pairs can share a key (rarely): every use verifies its
    matches on the pairs themselves."""
    return docno_keys(docnos) + topic.astype(np.uint64) * _TOPIC_MULTIPLIER


def _has_repeated_docno(lengths: np.ndarray, docnos: np.ndarray) -> bool:
    """Whether a docno appears twice within one topic (rows grouped by topic, ``lengths`` per topic).

    Rows whose (topic, docno key) pairs collide are checked exactly, so a hash collision never counts.
    """
    keys = topic_docno_keys(np.repeat(np.arange(lengths.size), lengths), docnos)
    sorted_keys = np.sort(keys)
    repeated = sorted_keys[1:][sorted_keys[1:] == sorted_keys[:-1]]  # sorted: each distinct value once below
    # (numpy.unique would import numpy.ma, 12 ms of every evaluation's start)
    colliding = repeated[np.concatenate((repeated[:1] == repeated[:1], repeated[1:] != repeated[:-1]))]
    if colliding.size == 0:
        return False
    rows = np.flatnonzero(np.isin(keys, colliding))
    stops = np.cumsum(lengths)
    topics = np.searchsorted(stops, rows, side="right")
    seen: set[tuple[int, bytes]] = set()
    for topic, docno in zip(topics.tolist(), docnos[rows].tolist()):
        if (topic, docno) in seen:
            return True
        seen.add((topic, docno))
    return False
