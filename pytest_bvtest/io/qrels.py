"""Relevance judgments: ``qid iter docno grade``."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from pytest_bvtest.errors import InputError, excerpt
from pytest_bvtest.io.textfiles import data_fields

QRELS_LINE = "qid iter docno grade"
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

    def evaluated_topics(self) -> list[str]:
        """The topic universe of docs/mathematics.md §1: topics with at least one positive grade, in file order."""
        return [qid for qid, docs in self.judgments.items() if any(grade > 0 for grade in docs.values())]


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read a TREC qrels file (``.gz`` decompressed by name).

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
    judgments: dict[str, dict[str, int]] = {}
    first_lines: dict[tuple[str, str], int] = {}
    hasher = hashlib.sha256()
    for number, fields in data_fields(path, hasher=hasher):
        if len(fields) != 4:
            raise InputError(
                f"found {len(fields)} columns, expected 4 ({QRELS_LINE})",
                path=path,
                line=number,
                hint="separate the columns by blanks; comment lines must start with '#'",
            )
        qid, _, docno, grade_text = fields
        if not _INTEGER.fullmatch(grade_text):
            raise InputError(
                f"grade {excerpt(grade_text)} is not an integer (plain digits 0-9, as trec_eval reads them)",
                path=path,
                line=number,
                hint="relevance grades are whole numbers such as 0, 1, 2 (negative for spam, e.g. -2)",
            )
        grade = int(grade_text)
        if not GRADE_RANGE[0] <= grade <= GRADE_RANGE[1]:
            raise InputError(
                f"grade {excerpt(grade_text)} is outside the range trec_eval can hold "
                f"({GRADE_RANGE[0]} to {GRADE_RANGE[1]}); it would wrap around",
                path=path,
                line=number,
                hint="relevance grades are small whole numbers such as 0, 1, 2",
            )
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
    if not judgments:
        raise InputError(
            "no judgments: the file is empty or holds only comments",
            path=path,
            hint=f"a qrels line is `{QRELS_LINE}`",
        )
    grades = sorted({grade for docs in judgments.values() for grade in docs.values()})
    if grades[-1] <= 0:
        raise InputError(
            f"no topic has a positive grade (the file's grades are {', '.join(map(str, grades))}), so no topic can be "
            "evaluated",
            path=path,
            hint="a relevant document has a grade above 0; check the grade column (the 4th) and the file",
        )
    return Qrels(judgments=judgments, path=Path(path), sha256=hasher.hexdigest())


def check_top_grade(qrels: Qrels, top: int, why: str, hint: str) -> None:
    """Raise :class:`InputError` naming the first judgment (file and line) graded above ``top``."""
    if max(max(docs.values()) for docs in qrels.judgments.values()) <= top:
        return
    qid, docno, grade = next(
        (qid, docno, grade) for qid, docs in qrels.judgments.items() for docno, grade in docs.items() if grade > top
    )
    line = None if qrels.path is None else judgment_line(qrels.path, qid, docno)
    raise InputError(
        f"topic {qid}, document {docno} has grade {grade}, above {top}, {why}", path=qrels.path, line=line, hint=hint
    )


def judgment_line(path: str | os.PathLike[str], qid: str, docno: str) -> int | None:
    """The line of ``path`` that judges ``docno`` for topic ``qid`` (read again, for an error message);
    ``None`` when the file no longer holds it (in-memory qrels named after a file)."""
    try:
        for number, fields in data_fields(path):
            if len(fields) == 4 and fields[0] == qid and fields[2] == docno:
                return number
    except InputError:
        pass
    return None
