"""Runs and qrels held in memory as pandas DataFrames, or as an ir_datasets dataset's qrels.

PyTerrier keeps a ranking as a DataFrame with columns ``qid``, ``docno``, ``score`` and ``rank`` (and ``query``, the
query text, and ``docid``, its index's number); ir_datasets, ir_measures and ranx name them ``query_id``, ``doc_id``,
``score`` and, for qrels, ``relevance``; PyTerrier's qrels call the grade ``label``. Either is read here into the
same :class:`~pytest_bvtest.io.runs.Run` and :class:`~pytest_bvtest.io.qrels.Qrels` a file gives, with the rules of
the file readers: a document twice in one topic, a score that is not a finite number and a grade that is not a whole
number are errors naming the row. The rank column is ignored, as in a run file.

pandas and ir_datasets are optional (extras ``pandas`` and ``irds``) and never imported here: a DataFrame is read
through its own methods, and ir_datasets is imported only when a spec names ``qrels: irds:<id>``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_bvtest.errors import InputError, excerpt, short_list
from pytest_bvtest.io.qrels import Qrels
from pytest_bvtest.io.runs import Run

#: The columns each part may be named by, first match wins (PyTerrier's ``query`` is the query text, its ``docid``
#: an index's internal number: ``qid`` and ``docno`` come first).
TOPIC_COLUMNS = ("qid", "query_id", "topic_id", "topic")
DOCUMENT_COLUMNS = ("docno", "doc_id", "docid")
SCORE_COLUMNS = ("score",)
GRADE_COLUMNS = ("label", "relevance", "rel", "grade", "judgment")
#: The prefix of an ir_datasets qrels source in a spec: ``qrels: irds:msmarco-passage/trec-dl-2019/judged``.
IR_DATASETS_PREFIX = "irds:"


def is_data_frame(value: object) -> bool:
    """Whether ``value`` is a pandas DataFrame, without importing pandas (a session without one never loads it)."""
    return type(value).__module__.split(".")[0] == "pandas" and hasattr(value, "columns")


def _column(frame: Any, names: Sequence[str], what: str, where: str) -> str:
    columns = [str(column) for column in frame.columns]
    found = next((name for name in names if name in columns), None)
    if found is None:
        raise InputError(
            f"the {where} DataFrame has no {what} column (it has {short_list(columns)})",
            hint=f"name it one of {', '.join(names)} (PyTerrier's and ir_datasets' names)",
        )
    return found


def run_from_frame(frame: Any, name: str) -> Run:
    """A run held as a DataFrame (PyTerrier's ``qid, docno, score``; ranx's and ir_datasets' ``query_id, doc_id,
    score``), named ``name``: the :class:`Run` its TREC file would give.

    Raises
    ------
    InputError
        For a missing column, a score that is not a finite number, or a document twice in one topic, naming the row.
    """
    topic = _column(frame, TOPIC_COLUMNS, "topic", "run")
    document = _column(frame, DOCUMENT_COLUMNS, "document", "run")
    score = _column(frame, SCORE_COLUMNS, "score", "run")
    scores: dict[str, dict[str, float]] = {}
    for row, (qid, docno, value) in enumerate(_rows(frame, (topic, document, score))):
        number = _finite(value, row, score)
        ranking = scores.setdefault(qid, {})
        if docno in ranking:
            raise InputError(
                f"row {row}: document {excerpt(docno)} appears twice in topic {excerpt(qid)} of the run DataFrame",
                hint="trec_eval rejects a document ranked twice for one topic; keep one row per (topic, document)",
            )
        ranking[docno] = number
    if not scores:
        raise InputError("the run DataFrame has no rows", hint="give the candidate's ranked documents")
    return Run(name=name, scores=scores)


def qrels_from_frame(frame: Any) -> Qrels:
    """Qrels held as a DataFrame (PyTerrier's ``qid, docno, label``; ir_datasets' and ir_measures' ``query_id,
    doc_id, relevance``): the :class:`Qrels` the file would give, with a digest of its judgments for the cache."""
    topic = _column(frame, TOPIC_COLUMNS, "topic", "qrels")
    document = _column(frame, DOCUMENT_COLUMNS, "document", "qrels")
    grade = _column(frame, GRADE_COLUMNS, "grade", "qrels")
    return _qrels(((qid, docno, value) for qid, docno, value in _rows(frame, (topic, document, grade))), "DataFrame")


def qrels_from_mapping(judgments: Mapping[str, Mapping[str, Any]]) -> Qrels:
    """Qrels given as a dict ``{qid: {docno: grade}}``, refused as a file's would be, with a digest for the cache."""
    return _qrels(
        ((qid, docno, grade) for qid, documents in judgments.items() for docno, grade in documents.items()), "dict"
    )


def qrels_from_ir_datasets(dataset_id: str) -> Qrels:
    """The qrels of the ir_datasets dataset ``dataset_id`` (``msmarco-passage/trec-dl-2019/judged``), as ir_datasets
    loads them: from its local copy, or downloaded by ir_datasets itself when it may.

    Raises
    ------
    InputError
        When ir_datasets is not installed, does not know the id, the dataset has no qrels, or they cannot be loaded.
    """
    try:
        import ir_datasets
    except ImportError:
        raise InputError(
            f"qrels {IR_DATASETS_PREFIX}{dataset_id} needs the ir_datasets package",
            hint="pip install 'pytest-bvtest[irds]', or give a qrels file",
        ) from None
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise InputError(
            f"ir_datasets knows no dataset {excerpt(dataset_id)}",
            hint="check the id at ir-datasets.com (e.g. msmarco-passage/trec-dl-2019/judged)",
        ) from None
    if not dataset.has_qrels():
        raise InputError(f"the ir_datasets dataset {excerpt(dataset_id)} has no qrels", hint="name one that has")
    try:
        triples = [(qrel.query_id, qrel.doc_id, qrel.relevance) for qrel in dataset.qrels_iter()]
    except Exception as error:  # a download refused, a file missing: ir_datasets raises many kinds
        raise InputError(
            f"ir_datasets could not load the qrels of {excerpt(dataset_id)}: {excerpt(str(error))}",
            hint="download them once where the network is reachable (ir_datasets keeps a local copy), "
            "or give a qrels file",
        ) from None
    return _qrels(triples, f"ir_datasets {dataset_id}")


def _rows(frame: Any, columns: Sequence[str]) -> Iterable[tuple[str, str, Any]]:
    """The columns' values row by row, topic and document ids as strings (an integer id is written as in a file)."""
    topic, document, value = (frame[column].tolist() for column in columns)
    return zip(map(str, topic), map(str, document), value)


def _finite(value: Any, row: int, column: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise InputError(
            f"row {row}: {column} {excerpt(str(value))} is not a finite number",
            hint="every retrieved document needs a score; drop the rows without one",
        )
    return number


def _qrels(triples: Iterable[tuple[str, str, Any]], source: str) -> Qrels:
    """Qrels from (topic, document, grade) triples, refused as a qrels file is; ``sha256`` digests the judgments in
    order, so cached scores are keyed by what was judged."""
    judgments: dict[str, dict[str, int]] = {}
    hasher = hashlib.sha256()
    for row, (qid, docno, value) in enumerate(triples):
        qid, docno = str(qid), str(docno)
        grade = value if type(value) is int else None
        if grade is None:
            try:
                grade = int(value) if float(value) == int(value) else None
            except (TypeError, ValueError, OverflowError):
                grade = None
        if grade is None:
            raise InputError(
                f"{source} row {row}: grade {excerpt(str(value))} of document {excerpt(docno)} is not a whole number",
                hint="grades are integers, as trec_eval reads them",
            )
        earlier = judgments.setdefault(qid, {}).get(docno)
        if earlier is not None and earlier != grade:
            raise InputError(
                f"{source} row {row}: document {excerpt(docno)} of topic {excerpt(qid)} is judged {grade} here and "
                f"{earlier} in an earlier row",
                hint="give each (topic, document) one grade",
            )
        judgments[qid][docno] = grade
        hasher.update(f"{qid}\t{docno}\t{grade}\n".encode())
    if not any(grade > 0 for docs in judgments.values() for grade in docs.values()):
        raise InputError(
            f"the qrels of {source} have no grade above 0: no topic can be evaluated",
            hint="give judgments with relevant documents",
        )
    return Qrels(judgments, sha256=hasher.hexdigest())
