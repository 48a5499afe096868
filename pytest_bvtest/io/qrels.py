"""Relevance judgments: ``qid iter docno grade``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.textfiles import data_fields

QRELS_LINE = "qid iter docno grade"


@dataclass(frozen=True)
class Qrels:
    """Graded judgments, ``judgments[qid][docno] = grade`` (grades may be negative, e.g. spam -2).

    Topics keep the order of their first appearance in the file.
    """

    judgments: dict[str, dict[str, int]]
    path: Path | None = None

    def evaluated_topics(self) -> list[str]:
        """The topic universe of MATH.md section 1: topics with at least one positive grade, in file order."""
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
    for number, fields in data_fields(path):
        if len(fields) != 4:
            raise InputError(
                f"found {len(fields)} columns, expected 4 ({QRELS_LINE})",
                path=path,
                line=number,
                hint="separate the columns by blanks; comment lines must start with '#'",
            )
        qid, _, docno, grade_text = fields
        try:
            grade = int(grade_text)
        except ValueError:
            raise InputError(
                f"grade {grade_text!r} is not an integer",
                path=path,
                line=number,
                hint="relevance grades are whole numbers such as 0, 1, 2 (negative for spam, e.g. -2)",
            ) from None
        topic = judgments.setdefault(qid, {})
        earlier = topic.get(docno)
        if earlier is None:
            topic[docno] = grade
            first_lines[qid, docno] = number
        elif earlier != grade:
            raise InputError(
                f"document {docno!r} of topic {qid!r} is judged {grade} here and {earlier} on line "
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
    return Qrels(judgments=judgments, path=Path(path))
