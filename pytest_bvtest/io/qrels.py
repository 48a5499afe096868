"""Relevance judgments: ``qid iter docno grade``, the judge files of ``bvtest judge`` filled in, and several
files read as one (the official qrels, then a team's own judgments)."""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_bvtest.errors import InputError, excerpt
from pytest_bvtest.io.textfiles import data_fields, numbered_lines, open_bytes

QRELS_LINE = "qid iter docno grade"
#: The first columns of a judge file (``bvtest judge``'s TSV; its header line names them).
JUDGE_COLUMNS = ("topic", "docno", "grade")
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)
#: trec_eval stores a grade in a C ``long`` read by ``atol`` and pytrec_eval in a C ``int``: a grade
#: outside this range would wrap around silently, so the reader refuses it.
GRADE_RANGE = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class Qrels:
    """Graded judgments, ``judgments[qid][docno] = grade`` (grades may be negative, e.g. spam -2).

    Topics keep the order of their first appearance in the file. ``sha256`` is the digest of the bytes
    they were read from (``None`` for judgments made in memory): what cached scores are keyed by, so
    a file replaced after it was read never files its old scores under the new file's digest.
    """

    judgments: dict[str, dict[str, int]]
    path: Path | None = None
    sha256: str | None = field(default=None, compare=False)
    #: Every file the judgments were read from, in order (``path`` is the first); empty for judgments in memory.
    paths: tuple[Path, ...] = field(default=(), compare=False)

    def evaluated_topics(self) -> list[str]:
        """The topic universe of docs/mathematics.md §1: topics with at least one positive grade, in file order."""
        return list(self._evaluated_topics)

    @cached_property
    def _evaluated_topics(self) -> tuple[str, ...]:
        # found once: an evaluation asks eight times, 6 ms each at 7,000 topics (the judgments are never changed)
        return tuple(qid for qid, docs in self.judgments.items() if max(docs.values(), default=0) > 0)


def _grade(text: str, path: str | os.PathLike[str], number: int) -> int:
    """A grade as trec_eval reads it: a whole number in a C int's range; anything else an error at its line."""
    if not _INTEGER.fullmatch(text):
        raise InputError(
            f"grade {excerpt(text)} is not an integer (plain digits 0-9, as trec_eval reads them)",
            path=path,
            line=number,
            hint="relevance grades are whole numbers such as 0, 1, 2 (negative for spam, e.g. -2)",
        )
    grade = int(text)
    if not GRADE_RANGE[0] <= grade <= GRADE_RANGE[1]:
        raise InputError(
            f"grade {excerpt(text)} is outside the range trec_eval can hold "
            f"({GRADE_RANGE[0]} to {GRADE_RANGE[1]}); it would wrap around",
            path=path,
            line=number,
            hint="relevance grades are small whole numbers such as 0, 1, 2",
        )
    return grade


def _judge(
    judgments: dict[str, dict[str, int]],
    first_lines: dict[tuple[str, str], int],
    qid: str,
    docno: str,
    grade: int,
    path: str | os.PathLike[str],
    number: int,
) -> None:
    """Record one judgment; the same grade twice is harmless, two grades for one pair an error naming both lines."""
    topic = judgments.setdefault(qid, {})
    earlier = topic.get(docno)
    if earlier is None:
        topic[docno] = grade
        first_lines[qid, docno] = number
    elif earlier != grade:
        raise InputError(
            f"document {excerpt(docno)} of topic {excerpt(qid)} is judged {grade} here and {earlier} on line "
            f"{first_lines[qid, docno]}",
            path=path,
            line=number,
            hint="keep one judgment per document and topic",
        )


@dataclass(frozen=True)
class JudgeFile:
    """A judge file of ``bvtest judge`` as read back: the rows with a grade as judgments, and how many rows have a
    grade (``graded``) or are still empty (``ungraded``)."""

    judgments: dict[str, dict[str, int]]
    graded: int
    ungraded: int


def _judge_header(line: str) -> bool:
    return tuple(line.rstrip("\r").split("\t")[: len(JUDGE_COLUMNS)]) == JUDGE_COLUMNS


#: A qrels file the fast reader takes whole: lines of exactly four fields of printable ASCII (what trec_eval's qrels and
#: every tool's are), nothing else.
_PLAIN_LINES = re.compile(rb"(?:[!-~]+[ \t]+[!-~]+[ \t]+[!-~]+[ \t]+[!-~]+[ \t]*\n)+")


def _plain_judgments(data: bytes) -> dict[str, dict[str, int]] | None:
    """The judgments of a plain qrels file's bytes (:data:`_PLAIN_LINES`, no ``#``, every grade an integer in range,
    each pair judged once), read with a few passes over the whole text instead of one Python step per line; ``None``
    for any other file, which :func:`_read` then reads line by line (and names the line of any error).

    The same judgments, in the same order, as the line-by-line reader (tests/test_io_qrels.py compares them)."""
    if not data.endswith(b"\n"):
        data += b"\n"
    if b"#" in data or not _PLAIN_LINES.fullmatch(data):
        return None
    fields = data.decode("ascii").split()
    qids, docnos, grade_texts = fields[0::4], fields[2::4], fields[3::4]
    grades = {}
    for text in set(grade_texts):
        if not _INTEGER.fullmatch(text) or not GRADE_RANGE[0] <= int(text) <= GRADE_RANGE[1]:
            return None
        grades[text] = int(text)
    judgments: dict[str, dict[str, int]] = {}
    # a topic's lines are usually together: each stretch of them is added in one update
    starts = [0, *(line for line in range(1, len(qids)) if qids[line] != qids[line - 1]), len(qids)]
    for start, stop in zip(starts[:-1], starts[1:]):
        judgments.setdefault(qids[start], {}).update(
            zip(docnos[start:stop], map(grades.__getitem__, grade_texts[start:stop]))
        )
    if sum(map(len, judgments.values())) != len(qids):
        return None  # a pair judged twice: harmless with the same grade, else an error naming both lines
    return judgments


def _read(path: str | os.PathLike[str]) -> tuple[dict[str, dict[str, int]], JudgeFile | None, str]:
    """One file's judgments, read as a judge file when its first data line is a judge file's header (then also its
    counts), else as TREC qrels; without the checks of a whole qrels. Also the SHA-256 of the file's bytes."""
    hasher = hashlib.sha256()
    with open_bytes(path, hasher=hasher) as handle:
        try:
            data = handle.read()
        except (OSError, EOFError, zlib.error):
            data = None  # read line by line below, which says what is wrong and where
    plain = None if data is None else _plain_judgments(data)
    if plain is not None:
        return plain, None, hasher.hexdigest()
    hasher = hashlib.sha256()
    judgments, judge = _read_lines(path, hasher)
    return judgments, judge, hasher.hexdigest()


def _read_lines(path: str | os.PathLike[str], hasher: Any) -> tuple[dict[str, dict[str, int]], JudgeFile | None]:
    """:func:`_read` a line at a time (any file it reads: comments, blank lines, judge files, errors at their line)."""
    judgments: dict[str, dict[str, int]] = {}
    first_lines: dict[tuple[str, str], int] = {}
    judge = None
    graded = ungraded = 0
    grades: dict[str, int] = {}  # each grade's text checked once (a qrels of 200,000 lines holds a handful)
    for number, line in numbered_lines(path, hasher=hasher):
        if judge is not None:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cells = line.rstrip("\r").split("\t")
            if len(cells) < len(JUDGE_COLUMNS) or not cells[0].strip() or not cells[1].strip():
                raise InputError(
                    f"found {len(cells)} tab-separated columns, expected topic, docno and grade first",
                    path=path,
                    line=number,
                    hint="keep the tabs of the file bvtest judge wrote; fill in the grade column only",
                )
            text = cells[2].strip()
            if not text:  # a document not judged yet
                ungraded += 1
                continue
            _judge(judgments, first_lines, cells[0].strip(), cells[1].strip(), _grade(text, path, number), path, number)
            graded += 1
            continue
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if not judgments and _judge_header(line):
            judge = True
            continue
        if len(fields) != 4:
            raise InputError(
                f"found {len(fields)} columns, expected 4 ({QRELS_LINE})",
                path=path,
                line=number,
                hint="separate the columns by blanks; comment lines must start with '#'",
            )
        qid, _, docno, grade_text = fields
        grade = grades.get(grade_text)
        if grade is None:
            grade = grades[grade_text] = _grade(grade_text, path, number)
        topic = judgments.get(qid)
        if topic is not None and docno not in topic:  # the usual line, recorded without a call
            topic[docno] = grade
            first_lines[qid, docno] = number
        else:
            _judge(judgments, first_lines, qid, docno, grade, path, number)
    return judgments, (JudgeFile(judgments, graded, ungraded) if judge else None)


def read_judge_file(path: str | os.PathLike[str]) -> JudgeFile:
    """Read a judge file (``bvtest judge``'s TSV): a header line naming ``topic``, ``docno`` and ``grade`` first,
    tab-separated rows, ``#`` comment lines. A row whose grade is empty is a document not judged yet and is left
    out; a grade is a whole number as in qrels. A pair graded twice with different grades is an error naming both
    lines."""
    _, judge, _ = _read(path)
    if judge is None:
        raise InputError(
            "not a judge file: its first line that is not a comment must be the header topic<TAB>docno<TAB>grade...",
            path=path,
            hint="write judge files with bvtest judge SPEC -o FILE",
        )
    return judge


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read a TREC qrels file (``.gz`` decompressed by name), or a judge file filled in (:func:`read_judge_file`).

    Parameters
    ----------
    path:
        Lines ``qid iter docno grade`` separated by any run of blanks; the iter column is not read.
        Grades are integers and may be negative (spam -2 in the Web tracks). A line whose first
        non-blank character is ``#`` is a comment; blank lines are skipped.

    Returns
    -------
    Qrels
        Topics and, within a topic, documents in order of first appearance. A document judged twice
        in a topic with the same grade is kept once: trec_eval reads such a repeat harmlessly, so it
        is accepted rather than rejected.

    Raises
    ------
    InputError
        Naming file and line for: a line without exactly 4 columns, a grade that is not an integer,
        a document judged twice in a topic with different grades (naming both lines), a file
        without judgments.
    """
    judgments, _, digest = _read(path)
    return _checked(Qrels(judgments=judgments, path=Path(path), sha256=digest, paths=(Path(path),)))


def _checked(qrels: Qrels) -> Qrels:
    """``qrels``, refused when they hold no judgment or no positive grade (no topic could be evaluated)."""
    where = qrels.path if len(qrels.paths) == 1 else None
    files = "" if where is not None else f" ({', '.join(str(path) for path in qrels.paths)})"
    if not qrels.judgments:
        raise InputError(
            f"no judgments{files}: the file is empty, holds only comments, or no grade is filled in",
            path=where,
            hint=f"a qrels line is `{QRELS_LINE}`",
        )
    grades = sorted({grade for docs in qrels.judgments.values() for grade in docs.values()})
    if grades[-1] <= 0:
        raise InputError(
            f"no topic has a positive grade{files} (the {'files' if files else 'file'}'s grades are "
            f"{', '.join(map(str, grades))}), so no topic can be evaluated",
            path=where,
            hint="a relevant document has a grade above 0; check the grade column (the 4th) and the file",
        )
    return qrels


def read_qrels_files(paths: Sequence[str | os.PathLike[str]]) -> Qrels:
    """Several qrels files read as one, in order: the official qrels first, then a team's own judgments (a judge
    file filled in, another qrels file).

    A later file adds judgments; it does not change one: a pair an earlier file judges with another grade is an
    error naming both files and lines (the official qrels are kept as they are; to overrule one of their
    judgments, edit a copy of them). The same grade again is harmless. One file reads as :func:`read_qrels`; for
    several, ``sha256`` is the digest of their digests in order (what cached scores are keyed by)."""
    if len(paths) == 1:
        return read_qrels(paths[0])
    judgments: dict[str, dict[str, int]] = {}
    source: dict[tuple[str, str], Path] = {}
    digests = []
    for path in map(Path, paths):
        read, _, digest = _read(path)
        digests.append(digest)
        for qid, docs in read.items():
            topic = judgments.setdefault(qid, {})
            for docno, grade in docs.items():
                earlier = topic.get(docno)
                if earlier is None:
                    topic[docno] = grade
                    source[qid, docno] = path
                elif earlier != grade:
                    first = source[qid, docno]
                    line = judgment_line(first, qid, docno)
                    raise InputError(
                        f"document {excerpt(docno)} of topic {excerpt(qid)} is judged {grade} here and {earlier} in "
                        f"{first}{'' if line is None else f' line {line}'}: a later qrels file adds judgments, it "
                        "does not change them",
                        path=path,
                        line=judgment_line(path, qid, docno),
                        hint=f"remove one of the two, or edit a copy of {first.name} to change its judgment",
                    )
    return _checked(
        Qrels(judgments=judgments, path=Path(paths[0]), sha256=_combined_digest(digests), paths=tuple(map(Path, paths)))
    )


def _combined_digest(digests: Sequence[str]) -> str:
    """The digest of several qrels files read as one: their own for one file, else the SHA-256 of theirs in order."""
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("\0".join(digests).encode("ascii")).hexdigest()


def check_top_grade(qrels: Qrels, top: int, why: str, hint: str) -> None:
    """Raise :class:`InputError` naming the first judgment (file and line) graded above ``top``."""
    if max(max(docs.values()) for docs in qrels.judgments.values()) <= top:
        return
    qid, docno, grade = next(
        (qid, docno, grade) for qid, docs in qrels.judgments.items() for docno, grade in docs.items() if grade > top
    )
    path, line = qrels.path, None
    for candidate in qrels.paths or ((qrels.path,) if qrels.path is not None else ()):
        line = judgment_line(candidate, qid, docno)
        if line is not None:
            path = candidate
            break
    raise InputError(
        f"topic {qid}, document {docno} has grade {grade}, above {top}, {why}", path=path, line=line, hint=hint
    )


def judgment_line(path: str | os.PathLike[str], qid: str, docno: str) -> int | None:
    """The line of ``path`` (a qrels or a judge file) that judges ``docno`` for topic ``qid`` (read again, for an
    error message); ``None`` when the file no longer holds it (in-memory qrels named after a file)."""
    try:
        for number, line in numbered_lines(path):
            cells = [cell.strip() for cell in line.split("\t")]
            if len(cells) >= 3 and cells[0] == qid and cells[1] == docno and cells[2]:
                return number  # a judge file's row
        for number, fields in data_fields(path):
            if len(fields) == 4 and fields[0] == qid and fields[2] == docno:
                return number
    except InputError:
        pass
    return None
