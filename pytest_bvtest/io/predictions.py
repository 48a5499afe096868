"""Predicted grades and the texts a predictor reads (docs/predictions.md).

- :func:`read_documents`: a ``documents:`` source, docno to text: a TSV (``docno<TAB>text``) or JSON lines
  (``{"docno": ..., "text": ...}``; ``doc_id``/``id`` and ``contents``/``body`` are read too, a ``title`` put first);
- :func:`run_predictor`: a team's predictor, a command run without a shell, reading a TSV of ``topic, query, docno,
  text`` on standard input and writing ``topic<TAB>docno<TAB>grade`` lines;
- :func:`read_predictions` and :func:`predictions_text`: the predictions file, kept apart from the qrels (its three
  columns are no qrels line, so listing it under ``qrels:`` is an error): ``topic<TAB>docno<TAB>predicted``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_bvtest.errors import InputError, excerpt
from pytest_bvtest.io.qrels import _grade
from pytest_bvtest.io.textfiles import numbered_lines

#: The header of a predictions file: what tells it from a qrels or judge file.
PREDICTIONS_COLUMNS = ("topic", "docno", "predicted")
#: The first line of a predictions file bvtest writes (a file starting otherwise is not replaced without --force).
PREDICTIONS_MARK = "# bvtest predictions"
#: The columns of a predictor's standard input.
PREDICTOR_COLUMNS = ("topic", "query", "docno", "text")
#: How long a predictor may run, in seconds, unless told otherwise.
PREDICTOR_TIMEOUT = 3600.0
#: The keys of a JSON-lines document source, in the order they are tried.
DOCNO_KEYS = ("docno", "doc_id", "id", "_id")
TEXT_KEYS = ("text", "contents", "body")


def _cell(text: str | None) -> str:
    """A TSV cell: tabs and line breaks become blanks."""
    return " ".join((text or "").split())


def read_documents(path: str | os.PathLike[str]) -> dict[str, str]:
    """The texts of a ``documents:`` source by docno: JSON lines (a ``.jsonl``/``.json`` name, or a first data line
    starting with ``{``), else a TSV ``docno<TAB>text``. Every error names its line."""
    texts: dict[str, str] = {}
    json_lines: bool | None = None
    suffixes = [suffix.lower() for suffix in Path(path).suffixes]
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        if json_lines is None:
            json_lines = ".jsonl" in suffixes or ".json" in suffixes or line.lstrip().startswith("{")
        docno, text = _json_document(line, path, number) if json_lines else _tsv_document(line, path, number)
        if docno in texts:
            raise InputError(
                f"document {excerpt(docno)} is listed twice",
                path=path,
                line=number,
                hint="keep one text per document",
            )
        texts[docno] = text
    if not texts:
        raise InputError("holds no document", path=path, hint="one document per line: docno<TAB>text, or JSON lines")
    return texts


def _json_document(line: str, path: str | os.PathLike[str], number: int) -> tuple[str, str]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputError(
            f"not a JSON object ({error.msg})", path=path, line=number, hint="one JSON object per line"
        ) from None
    docno = next((record[key] for key in DOCNO_KEYS if isinstance(record, dict) and key in record), None)
    if not isinstance(docno, str | int) or not str(docno).strip():
        raise InputError(
            f"no document id: expected one of the keys {', '.join(DOCNO_KEYS)}",
            path=path,
            line=number,
            hint='write e.g. {"docno": "d1", "text": "..."}',
        )
    text = next((record[key] for key in TEXT_KEYS if key in record), None)
    if not isinstance(text, str):
        raise InputError(
            f"document {excerpt(str(docno))} has no text: expected a string under one of {', '.join(TEXT_KEYS)}",
            path=path,
            line=number,
            hint='write e.g. {"docno": "d1", "text": "..."}',
        )
    title = record.get("title")
    return str(docno).strip(), f"{title}. {text}" if isinstance(title, str) and title.strip() else text


def _tsv_document(line: str, path: str | os.PathLike[str], number: int) -> tuple[str, str]:
    docno, tab, text = line.partition("\t")
    if not tab or not docno.strip():
        raise InputError(
            "expected docno<TAB>text",
            path=path,
            line=number,
            hint="one document per line, its id, a tab, then its text (or name a .jsonl file)",
        )
    return docno.strip(), text


@dataclass(frozen=True)
class PredictorRow:
    """One document a predictor grades: its topic, the topic's query text, its docno and its text (``None`` where
    the spec names no ``documents:`` source, or it lacks the document)."""

    topic: str
    query: str | None
    docno: str
    text: str | None


def predictor_input(rows: Sequence[PredictorRow]) -> str:
    """The predictor's standard input: a header, then one tab-separated row per document (tabs and line breaks in
    the texts become blanks)."""
    lines = ["\t".join(PREDICTOR_COLUMNS)]
    lines += ["\t".join((row.topic, _cell(row.query), row.docno, _cell(row.text))) for row in rows]
    return "\n".join(lines) + "\n"


def run_predictor(
    command: str,
    rows: Sequence[PredictorRow],
    top_grade: int,
    timeout: float = PREDICTOR_TIMEOUT,
    folder: str | os.PathLike[str] | None = None,
) -> dict[tuple[str, str], int]:
    """Run ``command`` (split as a shell would, run without one, in ``folder``: the spec's, so that its paths read as
    the spec's do) on ``rows``; its grades by ``(topic, docno)``.

    The command writes ``topic<TAB>docno<TAB>grade`` per document (blanks may separate them; blank lines, ``#``
    comments and a ``topic docno grade`` header are skipped); it may leave a document out. A grade outside 0 to
    ``top_grade``, a document it was not asked about, a document graded twice, a failure or a timeout are
    :class:`InputError` naming the command and the line of its output."""
    arguments = shlex.split(command)
    if not arguments:
        raise InputError("the predictor command is empty", hint="name a command, e.g. python -m team.judge")
    shown = _cell(command)
    where = f"predictor `{shown if len(shown) <= 120 else shown[:50] + ' ... ' + shown[-60:]}`"
    try:
        finished = subprocess.run(
            arguments,
            input=predictor_input(rows),
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            check=False,
            cwd=folder,
        )
    except FileNotFoundError:
        raise InputError(
            f"{where}: {arguments[0]} is not found",
            hint="name a program on the PATH, or give its path (e.g. python -m team.judge)",
        ) from None
    except PermissionError:
        raise InputError(
            f"{where}: {arguments[0]} cannot be run (permission denied)", hint="make it executable"
        ) from None
    except subprocess.TimeoutExpired:
        raise InputError(
            f"{where} did not finish within {timeout:g} s ({len(rows):,} documents)",
            hint="raise --predict-timeout, or make the predictor faster",
        ) from None
    if finished.returncode != 0:
        said = " | ".join(line for line in finished.stderr.strip().splitlines()[-3:])
        raise InputError(
            f"{where} exited with status {finished.returncode}" + (f": {excerpt(said, 300)}" if said else ""),
            hint="run it by hand on the rows it reads (topic, query, docno, text on standard input) to see why",
        )
    asked = {(row.topic, row.docno) for row in rows}
    numbered = list(enumerate(finished.stdout.splitlines(), start=1))
    return _grades(numbered, None, f"{where}'s output", asked, top_grade)[0]


def _grades(
    lines: Sequence[tuple[int, str]],
    path: str | os.PathLike[str] | None,
    source: str,
    asked: set[tuple[str, str]] | None,
    top_grade: int | None,
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """Grades by ``(topic, docno)`` from numbered ``topic docno grade`` lines (the first may be a header), and the
    line of each; errors name ``path`` and the line, or ``source`` and the line of a command's output."""

    def error(number: int, message: str, hint: str) -> InputError:
        if path is not None:
            return InputError(message, path=path, line=number, hint=hint)
        return InputError(f"{source}, line {number}: {message}", hint=hint)

    grades: dict[tuple[str, str], int] = {}
    lines_of: dict[tuple[str, str], int] = {}
    for number, line in lines:
        fields = [field.strip() for field in (line.split("\t") if "\t" in line else line.split())]
        if not any(fields) or fields[0].startswith("#"):
            continue
        if not grades and tuple(fields[:2]) == PREDICTIONS_COLUMNS[:2]:
            continue  # a header
        if len(fields) != 3 or not fields[0] or not fields[1]:
            raise error(
                number,
                f"expected topic, docno and grade, got {len(fields)} column{'' if len(fields) == 1 else 's'}: "
                f"{excerpt(line)}",
                "write one line per document: topic<TAB>docno<TAB>grade",
            )
        pair = (fields[0], fields[1])
        try:
            grade = _grade(fields[2], source, number)
        except InputError as bad:
            raise error(number, bad.message, "a grade is a whole number from 0 (not relevant) up") from None
        if (top_grade is not None and not 0 <= grade <= top_grade) or grade < 0:
            top = "up" if top_grade is None else f"to {top_grade}"
            raise error(
                number,
                f"grade {grade} is outside the grades 0 {top}",
                f"predict a grade from 0 (not relevant) {top}, as the qrels grade",
            )
        if asked is not None and pair not in asked:
            raise error(
                number,
                f"document {excerpt(pair[1])} of topic {excerpt(pair[0])} was not asked for",
                "grade the documents of standard input only, with their topic and docno as given",
            )
        if pair in grades:
            raise error(
                number,
                f"document {excerpt(pair[1])} of topic {excerpt(pair[0])} is graded again (line {lines_of[pair]})",
                "write one grade per document",
            )
        grades[pair] = grade
        lines_of[pair] = number
    return grades, lines_of


@dataclass(frozen=True)
class PredictionsFile:
    """A predictions file as read: the grades by ``(topic, docno)`` and the line of each."""

    path: Path
    grades: Mapping[tuple[str, str], int]
    lines: Mapping[tuple[str, str], int]


def read_predictions(path: str | os.PathLike[str]) -> PredictionsFile:
    """A predictions file: ``topic<TAB>docno<TAB>predicted`` per line after its header and comments (grades 0 up;
    the evaluation checks them against the qrels' top grade)."""
    grades, lines = _grades(list(numbered_lines(path)), path, str(path), None, None)
    if not grades:
        raise InputError(
            "holds no predicted grade", path=path, hint="write it with `bvtest judge SPEC -o FILE --predict`"
        )
    return PredictionsFile(Path(path), grades, lines)


def predictions_text(grades: Mapping[tuple[str, str], int], command: str, judged: int, unjudged: int) -> str:
    """A predictions file: a comment header saying what it is, then the grades, sorted."""
    header = [
        f"{PREDICTIONS_MARK} by `{_cell(command)}`: {unjudged:,} unjudged documents to weigh and {judged:,} judged "
        "ones that measure how far to trust them (docs/predictions.md)",
        "# Kept apart from the qrels: name it as the spec's `judgments: {predictions: FILE}`, never under `qrels:`",
        "\t".join(PREDICTIONS_COLUMNS),
    ]
    rows = [f"{topic}\t{docno}\t{grade}" for (topic, docno), grade in sorted(grades.items())]
    return "\n".join(header + rows) + "\n"
